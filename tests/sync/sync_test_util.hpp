// Helpers shared by the sync tests.
#pragma once

#include <goro/goro.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>

namespace goro_test {

// Ps for a test runtime: GORO_TEST_PROCS, else 4 (above the core count on
// the CI machines, so Ms really preempt each other).
inline int test_procs() {
  if (const char* env = std::getenv("GORO_TEST_PROCS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return 4;
}

// goro::run, then waits (up to 10 s) for the other goroutines to finish:
// goro::run abandons goroutines still alive when main returns, and what
// their closures hold (channel handles) would show up as leaks under ASan.
template <class F>
int run(F&& f, int procs = 0) {
  return goro::run(
      [&f] {
        f();
        for (int i = 0; i < 100000 && goro::num_goroutines() > 1; ++i)
          goro::sleep_for(std::chrono::microseconds(100));
      },
      goro::Options{.maxprocs = procs > 0 ? procs : test_procs()});
}

// Counts live instances, to check every value is destroyed exactly once.
struct Counted {
  static inline std::atomic<long> live{0};
  static inline std::atomic<long> constructed{0};
  int v = 0;
  explicit Counted(int x) : v(x) {
    ++live;
    ++constructed;
  }
  Counted(const Counted& o) : v(o.v) {
    ++live;
    ++constructed;
  }
  Counted(Counted&& o) noexcept : v(o.v) {
    o.v = -1;
    ++live;
    ++constructed;
  }
  Counted& operator=(const Counted&) = default;
  ~Counted() { --live; }
};

}  // namespace goro_test
