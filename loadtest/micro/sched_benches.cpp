// Scheduler benchmarks: yield, spawn, fanout, getppid, and the scheduler-only
// variants of parkmem (parked in sleep_for) and skynet (joined by atomics).
// Each mirrors the Go function of the same name in
// loadtest/peers/gomicro/sched.go; change both together.
//
// Everything here needs only <goro/runtime.hpp> and join.hpp, so it builds
// as soon as the runtime does. The variants that differ in shape from Go say
// so in their `variant` and are replaced by sync_benches.cpp's when that is
// built.
#include <unistd.h>

#include <goro/runtime.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#if __has_include(<goro/goro.hpp>)
#include <goro/goro.hpp>  // goro::blocking, once it exists
#endif

#include "bench.hpp"
#include "join.hpp"

namespace goro_micro {
namespace {

// --- yield ------------------------------------------------------------------
// Two goroutines alternate goro::yield() n/2 times each; ns per yield,
// counting both goroutines' yields. Run on 1 P so every yield switches.
Result bench_yield(int n) {
  const int per = n / 2;
  Join join(2);
  const std::int64_t start = now_ns();
  for (int k = 0; k < 2; ++k) {
    goro::go([&join, per] {
      for (int i = 0; i < per; ++i)
        goro::yield();
      join.done();
    });
  }
  const std::int64_t elapsed = join.wait() - start;
  Result r{ns_per_op(elapsed, 2LL * per), "ns/op", {}};
  r.add("elapsed_ms", "{:.3f}", to_ms(elapsed));
  r.add("join", "{}", Join::kKind);
  return r;
}

// --- spawn ------------------------------------------------------------------
// Spawn n goroutines that only signal completion; ns per goroutine from the
// first spawn to the last completion.
Result bench_spawn(int n) {
  Join join(n);
  const std::int64_t start = now_ns();
  for (int i = 0; i < n; ++i) {
    goro::go([&join] { join.done(); });
  }
  const std::int64_t elapsed = join.wait() - start;
  Result r{ns_per_op(elapsed, n), "ns/op", {}};
  r.add("elapsed_ms", "{:.3f}", to_ms(elapsed));
  r.add("join", "{}", Join::kKind);
  return r;
}

// --- fanout -----------------------------------------------------------------
// n uneven tasks (fanout_work), one goroutine each, joined; total ms. The
// runner divides the 1-P time by the 2-P time for the speedup.
Result bench_fanout(int n) {
  std::vector<std::uint64_t> results(static_cast<std::size_t>(n));
  Join join(n);
  const std::int64_t start = now_ns();
  for (int i = 0; i < n; ++i) {
    goro::go([&join, &results, i] {
      results[static_cast<std::size_t>(i)] = fanout_work(i);
      join.done();
    });
  }
  const std::int64_t elapsed = join.wait() - start;
  std::uint64_t check = 0;
  for (std::uint64_t v : results)
    check ^= v;
  Result r{to_ms(elapsed), "ms", {}};
  r.add("checksum", "{:016x}", check);
  r.add("join", "{}", Join::kKind);
  return r;
}

// --- parkmem (sleep variant) --------------------------------------------------
// n goroutines signal that they started, then park in a sleep far longer than
// the run; RSS bytes per parked goroutine. Go parks in a channel receive; the
// sync variant does too. A sleeping goroutine also holds a timer, so this
// variant may read a little higher than the channel one. The goroutines are
// still parked when main returns; goro::run abandons them, as Go's exit does.
Result bench_parkmem_sleep(int n) {
  Join started(n);
  const std::int64_t before = rss_bytes();
  for (int i = 0; i < n; ++i) {
    goro::go([&started] {
      started.done();
      goro::sleep_for(std::chrono::hours(24));
    });
  }
  started.wait();
  const std::int64_t after = rss_bytes();
  Result r{static_cast<double>(after - before) / n, "B/goroutine", {}};
  r.add("rss_before_kib", "{}", before / 1024);
  r.add("rss_after_kib", "{}", after / 1024);
  r.add("join", "{}", Join::kKind);
  return r;
}

// --- skynet (TEMPORARY atomic-tree variant) ------------------------------------
// Until goro::Chan exists the tree is joined the other way round: instead of a
// parent parked on a channel receiving its ten children's sums, each child
// adds its sum into its parent's slot and the child that completes a node
// carries the node's sum on up. Parents therefore exit right after spawning,
// so fewer goroutines are live at once than in Go's skynet: the spawn and
// completion count (1,111,111) matches, the channel traffic and parking do
// not. The result prints variant=atomic-tree; do not quote it against Go.
// Replaced by sync_benches.cpp's channel version once that is built.
struct SkynetNode {
  std::atomic<int> pending{10};
  std::atomic<std::int64_t> sum{0};
};

struct SkynetTree {
  // Internal nodes of a complete 10-ary tree in breadth-first order: node k's
  // children are 10k+1 .. 10k+10, its parent (k-1)/10; leaves are not stored.
  std::unique_ptr<SkynetNode[]> nodes;
  std::atomic<std::int64_t> total{0};
  Join root_done{1};
};

void skynet_complete(SkynetTree* t, std::int64_t k, std::int64_t value) {
  while (k != 0) {
    SkynetNode& parent = t->nodes[static_cast<std::size_t>((k - 1) / 10)];
    parent.sum.fetch_add(value, std::memory_order_relaxed);
    // acq_rel: each child's release publishes its sum add; the last child's
    // acquire makes all ten visible before it reads the node's sum.
    if (parent.pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    value = parent.sum.load(std::memory_order_relaxed);
    k = (k - 1) / 10;
  }
  t->total.store(value, std::memory_order_relaxed);
  t->root_done.done();  // publishes `total` (release inside)
}

void skynet_atomic(SkynetTree* t, std::int64_t k, std::int64_t num, std::int64_t size) {
  if (size == 1) {
    skynet_complete(t, k, num);
    return;
  }
  const std::int64_t child = size / 10;
  for (std::int64_t i = 0; i < 10; ++i) {
    goro::go([t, k, num, child, i] { skynet_atomic(t, 10 * k + 1 + i, num + i * child, child); });
  }
}

Result bench_skynet_atomic(int n) {
  if (!is_power_of_10(n)) throw std::invalid_argument("skynet needs --n a power of 10");
  SkynetTree t;
  t.nodes = std::make_unique<SkynetNode[]>(static_cast<std::size_t>((n - 1) / 9 + 1));
  const std::int64_t start = now_ns();
  goro::go([&t, n] { skynet_atomic(&t, 0, 0, n); });
  const std::int64_t elapsed = t.root_done.wait() - start;
  const std::int64_t sum = t.total.load(std::memory_order_relaxed);
  const std::int64_t want = static_cast<std::int64_t>(n) * (n - 1) / 2;
  if (sum != want) throw std::runtime_error(fmt::format("skynet sum {}, want {}", sum, want));
  Result r{to_ms(elapsed), "ms", {}};
  r.add("goroutines", "{}", skynet_goroutines(n));
  r.add("sum", "{}", sum);
  r.add("join", "{}", Join::kKind);
  return r;
}

// --- getppid ------------------------------------------------------------------
// getppid(2) through goro::blocking (the syscall handoff's fast path: the P
// stays attached unless sysmon finds the call slow) vs Go's syscall.Getppid.
// Also reports the bare syscall as raw_ns for scale. goro::blocking is part
// of the contract (DESIGN.md §4) but may not exist yet; the concept below
// detects it without naming it at namespace scope, so this file builds
// either way and the benchmark reports "not built" until it lands.
namespace probe {
using namespace goro;  // finds goro::blocking if declared; else ADL finds nothing

template <class F>
concept has_blocking = requires(F f) {
  blocking(f);
};

struct GetppidFn {
  pid_t operator()() const { return ::getppid(); }
};

// Chosen when goro::blocking exists; the call is dependent on F, so it is
// looked up only when this template is instantiated.
template <class F>
requires has_blocking<F> Result getppid_bench(int n, F fn, std::int64_t raw_ns) {
  std::int64_t acc = 0;
  const std::int64_t start = now_ns();
  for (int i = 0; i < n; ++i)
    acc += blocking(fn);
  const std::int64_t elapsed = now_ns() - start;
  Result r{ns_per_op(elapsed, n), "ns/op", {}};
  r.add("raw_ns", "{:.2f}", ns_per_op(raw_ns, n));
  r.add("acc", "{}", acc % 7);
  return r;
}

template <class F>
Result getppid_bench(int n, F, std::int64_t raw_ns) {
  throw NotBuilt{fmt::format("goro::blocking not declared yet (bare getppid: {:.2f} ns/op)",
                             ns_per_op(raw_ns, n))};
}
}  // namespace probe

Result bench_getppid(int n) {
  std::int64_t acc = 0;
  const std::int64_t start = now_ns();
  for (int i = 0; i < n; ++i)
    acc += ::getppid();
  const std::int64_t raw = now_ns() - start;
  if (acc == -1) return {};  // keeps the loop; getppid never returns -1
  return probe::getppid_bench(n, probe::GetppidFn{}, raw);
}

constexpr Bench kSchedBenches[] = {
    {"yield", "sched", 2'000'000, bench_yield},
    {"spawn", "sched", 1'000'000, bench_spawn},
    {"skynet", "atomic-tree", 1'000'000, bench_skynet_atomic},
    {"fanout", "sched", 10'000, bench_fanout},
    {"parkmem", "sleep", 100'000, bench_parkmem_sleep},
    {"getppid", "blocking", 2'000'000, bench_getppid},
};

}  // namespace

std::span<const Bench> sched_benches() {
  return kSchedBenches;
}

}  // namespace goro_micro
