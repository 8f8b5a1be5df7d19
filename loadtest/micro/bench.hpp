// goro-microbench internals: the result record every benchmark returns, the
// registry main.cpp dispatches on, and the helpers both benchmark files share.
//
// A benchmark is a plain function `Result fn(int n)` that runs *inside*
// goro::run (on the main goroutine) and times itself with steady_clock. Its
// shape mirrors the Go function of the same name in loadtest/peers/gomicro; the
// two must change together (docs/benchmarks.md lists what each measures).
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace goro_micro {

// One benchmark's outcome: the headline figure `value` in `unit` (the runner
// compares these) plus detail keys printed after it, in order.
struct Result {
  double value = 0;
  std::string unit;
  std::vector<std::pair<std::string, std::string>> extra;

  template <class... Args>
  void add(std::string key, fmt::format_string<Args...> f, Args&&... args) {
    extra.emplace_back(std::move(key), fmt::format(f, std::forward<Args>(args)...));
  }
};

struct Bench {
  const char* name;
  const char* variant;  // which implementation; printed as variant=...
  int default_n;        // equal to gomicro's default for the same name
  Result (*run)(int n);
};

// Benchmarks on the scheduler alone plus a WaitGroup join (sched_benches.cpp)
// and on channels, select and Mutex (sync_benches.cpp). Where both define a
// name, main picks sync_benches' entry (the same shape as the Go peer) unless
// --variant asks for the other.
std::span<const Bench> sched_benches();
std::span<const Bench> sync_benches();

// Every benchmark name gomicro knows, so the CLI can tell "not built" from
// "no such benchmark".
inline constexpr const char* kAllBenchNames[] = {
    "yield",    "spawn",   "skynet", "fanout",  "parkmem",
    "pingpong", "bufchan", "mutex",  "select2", "getppid",
};

// Thrown by a benchmark that is registered but cannot run in this build
// (e.g. getppid before goro::blocking exists); main prints status=not_built.
struct NotBuilt {
  std::string reason;
};

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline double ns_per_op(std::int64_t ns, std::int64_t ops) {
  return static_cast<double>(ns) / static_cast<double>(ops);
}
inline double to_ms(std::int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

// Resident set size from /proc/self/statm, in bytes.
std::int64_t rss_bytes();

// Task i's CPU work in the fanout benchmark, bit-for-bit the same as
// gomicro's fanoutWork (the checksums of both sides must match):
// ((i*7919)%100)^2 * kFanoutScale rounds of a dependent multiply-xorshift
// chain. The quadratic skews task sizes so that a 2-P run only scales if idle
// Ps steal; the scale puts 10,000 tasks at roughly 200-400 ms on one core.
inline constexpr std::uint64_t kFanoutScale = 6;
inline std::uint64_t fanout_work(int i) {
  const auto r = static_cast<std::uint64_t>((i * 7919) % 100);
  const std::uint64_t rounds = r * r * kFanoutScale;
  std::uint64_t x = static_cast<std::uint64_t>(i) + 0x9e3779b97f4a7c15ULL;
  for (std::uint64_t k = 0; k < rounds; ++k) {
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
    x += k;
  }
  return x;
}

bool is_power_of_10(std::int64_t n);
// Goroutines in a skynet tree with n leaves: n + n/10 + ... + 1.
std::int64_t skynet_goroutines(std::int64_t n);

}  // namespace goro_micro
