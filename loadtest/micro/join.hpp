// Join: "wait until n goroutines have called done()", the one piece of
// synchronisation the scheduler-only benchmarks (yield, spawn, fanout,
// parkmem's start barrier) need.
//
// With goro::WaitGroup (GORO_MICRO_HAVE_WAITGROUP, see CMakeLists.txt) it is a goro::WaitGroup,
// exactly as the Go peer uses sync.WaitGroup, and wait() returns the clock
// after the waiter wakes -- the same instant Go's benchmarks read.
//
// TEMPORARY FALLBACK, until goro::WaitGroup lands (delete the #else branch
// then): an atomic counter whose last done() stamps the clock, and a waiter
// that polls it with goro::sleep_for, backing off from 20 us to 1 ms.
// wait() returns the stamp, not the time the poller noticed, so the poll
// period does not enter the measurement; the only cost it adds is the
// poller's own wake-ups (at most one a millisecond once backed off).
// Results produced with it print join=poll-fallback.
#pragma once

#include <goro/runtime.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "bench.hpp"

#ifdef GORO_MICRO_HAVE_WAITGROUP
#include <goro/goro.hpp>
#endif

namespace goro_micro {

#ifdef GORO_MICRO_HAVE_WAITGROUP

class Join {
 public:
  explicit Join(std::int64_t n) { wg_.add(static_cast<int>(n)); }
  void done() { wg_.done(); }
  // Returns steady-clock ns at which the waiter resumed.
  std::int64_t wait() {
    wg_.wait();
    return now_ns();
  }
  static constexpr const char* kKind = "waitgroup";

 private:
  goro::WaitGroup wg_;
};

#else  // TEMPORARY FALLBACK: see the header comment.

class Join {
 public:
  explicit Join(std::int64_t n) : left_(n) {}
  void done() {
    // acq_rel: the last decrement must see every earlier done()'s writes
    // (acquire) so the waiter, pairing with the release store of `finished_`,
    // sees them too.
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      end_ns_.store(now_ns(), std::memory_order_relaxed);
      finished_.store(true, std::memory_order_release);  // pairs with wait()'s acquire
    }
  }
  // Returns steady-clock ns of the last done().
  std::int64_t wait() {
    std::chrono::microseconds step{20};
    while (!finished_.load(std::memory_order_acquire)) {
      goro::sleep_for(step);
      step = std::min<std::chrono::microseconds>(step * 2, std::chrono::milliseconds{1});
    }
    return end_ns_.load(std::memory_order_relaxed);
  }
  static constexpr const char* kKind = "poll-fallback";

 private:
  std::atomic<std::int64_t> left_;
  std::atomic<std::int64_t> end_ns_{0};
  std::atomic<bool> finished_{false};
};

#endif

}  // namespace goro_micro
