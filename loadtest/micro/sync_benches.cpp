// Sync benchmarks: pingpong, bufchan, mutex, select2, and the channel
// versions of skynet and parkmem, built on goro::Chan, goro::select,
// goro::Mutex and goro::WaitGroup (docs/DESIGN.md "The public contract"). Each mirrors the Go
// function of the same name in loadtest/peers/gomicro (sync.go, sched.go);
// change both together.
#include <goro/goro.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>

#include "bench.hpp"

namespace goro_micro {
namespace {

// --- pingpong -------------------------------------------------------------------
// Two goroutines bounce a value over two unbuffered channels; ns per round
// trip (one send and one receive each way).
Result bench_pingpong(int n) {
  goro::Chan<int> ping(0);
  goro::Chan<int> pong(0);
  goro::WaitGroup done;
  done.add(1);
  goro::go([&] {
    while (std::optional<int> v = ping.recv())
      pong.send(*v + 1);
    done.done();
  });
  const std::int64_t start = now_ns();
  int v = 0;
  for (int i = 0; i < n; ++i) {
    ping.send(v);
    v = *pong.recv();
  }
  const std::int64_t elapsed = now_ns() - start;
  ping.close();
  done.wait();
  Result r{ns_per_op(elapsed, n), "ns/op", {}};
  r.add("elapsed_ms", "{:.3f}", to_ms(elapsed));
  return r;
}

// --- bufchan --------------------------------------------------------------------
// One producer sends n ints into a channel of capacity 1024, one consumer
// receives them; items through the channel per second.
Result bench_bufchan(int n) {
  goro::Chan<int> ch(1024);
  goro::Chan<std::int64_t> done(0);
  goro::go([&] {
    std::int64_t sum = 0;
    while (std::optional<int> v = ch.recv())
      sum += *v;
    done.send(sum);
  });
  const std::int64_t start = now_ns();
  for (int i = 0; i < n; ++i)
    ch.send(i);
  ch.close();
  const std::int64_t sum = done.recv().value();
  const std::int64_t elapsed = now_ns() - start;
  if (sum != static_cast<std::int64_t>(n) * (n - 1) / 2) {
    throw std::runtime_error("bufchan lost an item");
  }
  Result r{n / (static_cast<double>(elapsed) / 1e9), "ops/s", {}};
  r.add("ns_per_op", "{:.2f}", ns_per_op(elapsed, n));
  return r;
}

// --- mutex ----------------------------------------------------------------------
// 8 goroutines each take a goro::Mutex n/8 times around an increment;
// lock/unlock pairs per second.
Result bench_mutex(int n) {
  constexpr int kWorkers = 8;
  const int per = n / kWorkers;
  // The mutex and its counter side by side in one 16-byte block, which is
  // where Go puts them: both escape to the heap and, pointer-free and under
  // 16 bytes, come from its tiny allocator (a Go program printing &mu and
  // &counter in this shape shows them 8 bytes apart). On the same cache line
  // a lock handoff moves one line; as separate locals on the goroutine's
  // stack they sat on different lines and goro ran ~20% slower for it.
  struct alignas(16) Guarded {
    goro::Mutex mu;
    std::int64_t counter = 0;  // guarded by mu
  } g;
  static_assert(sizeof(Guarded) == 16);
  goro::Mutex& mu = g.mu;
  std::int64_t& counter = g.counter;
  goro::WaitGroup wg;
  wg.add(kWorkers);
  const std::int64_t start = now_ns();
  for (int w = 0; w < kWorkers; ++w) {
    // `per` by value, as Go's closure captures it (never reassigned): by
    // reference, every iteration re-read it from main's frame, on the same
    // cache line as the contended mutex, and the goro side ran ~30% slower.
    goro::go([&mu, &counter, &wg, per] {
      for (int i = 0; i < per; ++i) {
        mu.lock();
        ++counter;
        mu.unlock();
      }
      wg.done();
    });
  }
  wg.wait();
  const std::int64_t elapsed = now_ns() - start;
  const std::int64_t ops = static_cast<std::int64_t>(per) * kWorkers;
  if (counter != ops) throw std::runtime_error("mutex lost an increment");
  Result r{ops / (static_cast<double>(elapsed) / 1e9), "ops/s", {}};
  r.add("ns_per_op", "{:.2f}", ns_per_op(elapsed, ops));
  return r;
}

// --- skynet (channel version, Go's shape) -------------------------------------------
// Each inner node spawns ten children and receives their sums from an
// unbuffered channel it owns; each leaf sends its number.
void skynet(goro::Chan<std::int64_t>* out, std::int64_t num, std::int64_t size) {
  if (size == 1) {
    out->send(num);
    return;
  }
  goro::Chan<std::int64_t> rc(0);
  const std::int64_t child = size / 10;
  for (std::int64_t i = 0; i < 10; ++i) {
    goro::go([&rc, num, child, i] { skynet(&rc, num + i * child, child); });
  }
  std::int64_t sum = 0;
  for (int i = 0; i < 10; ++i)
    sum += rc.recv().value();
  out->send(sum);
}

Result bench_skynet(int n) {
  if (!is_power_of_10(n)) throw std::invalid_argument("skynet needs --n a power of 10");
  goro::Chan<std::int64_t> c(0);
  const std::int64_t start = now_ns();
  goro::go([&c, n] { skynet(&c, 0, n); });
  const std::int64_t sum = c.recv().value();
  const std::int64_t elapsed = now_ns() - start;
  const std::int64_t want = static_cast<std::int64_t>(n) * (n - 1) / 2;
  if (sum != want) throw std::runtime_error(fmt::format("skynet sum {}, want {}", sum, want));
  Result r{to_ms(elapsed), "ms", {}};
  r.add("goroutines", "{}", skynet_goroutines(n));
  r.add("sum", "{}", sum);
  return r;
}

// --- parkmem (channel version, Go's shape) -----------------------------------------
// n goroutines signal that they started, then block in a channel receive;
// RSS bytes per parked goroutine. Closing the channel afterwards releases
// them, as Go's version does, so none is left parked on a dead channel.
Result bench_parkmem(int n) {
  goro::Chan<int> block(0);
  goro::WaitGroup started;
  started.add(n);
  goro::WaitGroup exited;
  exited.add(n);
  const std::int64_t before = rss_bytes();
  for (int i = 0; i < n; ++i) {
    goro::go([&] {
      started.done();
      (void)block.recv();
      exited.done();
    });
  }
  started.wait();
  const std::int64_t after = rss_bytes();
  block.close();
  exited.wait();
  Result r{static_cast<double>(after - before) / n, "B/goroutine", {}};
  r.add("rss_before_kib", "{}", before / 1024);
  r.add("rss_after_kib", "{}", after / 1024);
  return r;
}

// --- select2 ----------------------------------------------------------------------
// A two-case receive select where both channels are closed, so both cases are
// always ready: every select takes the full path (lock both channels, pick one
// at random) without parking; ns per select.
Result bench_select2(int n) {
  goro::Chan<int> a(0);
  goro::Chan<int> b(0);
  a.close();
  b.close();
  std::int64_t first = 0;
  const std::int64_t start = now_ns();
  for (int i = 0; i < n; ++i) {
    if (goro::select(goro::recv(a), goro::recv(b)) == 0) ++first;
  }
  const std::int64_t elapsed = now_ns() - start;
  Result r{ns_per_op(elapsed, n), "ns/op", {}};
  r.add("first_case_share", "{:.3f}", static_cast<double>(first) / n);
  return r;
}

constexpr Bench kSyncBenches[] = {
    {"pingpong", "chan", 500'000, bench_pingpong}, {"bufchan", "chan", 5'000'000, bench_bufchan},
    {"skynet", "chan", 1'000'000, bench_skynet},   {"parkmem", "chan", 100'000, bench_parkmem},
    {"mutex", "mutex", 2'000'000, bench_mutex},    {"select2", "select", 2'000'000, bench_select2},
};

}  // namespace

std::span<const Bench> sync_benches() {
  return kSyncBenches;
}

}  // namespace goro_micro
