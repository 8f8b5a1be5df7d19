// Slow path of the word lock (lock.hpp).
#include "scheduler/sync/lock.hpp"

#include <sched.h>

#include <cerrno>

namespace goro::detail {

void lock_word_slow(std::atomic<std::uint32_t>& w) noexcept {
  // Spin a little: the holder is usually on another CPU and about to let go
  // (critical sections are tens of nanoseconds). As Go's lock_futex: look
  // until the word is free and grab it; while it is held, back off with 30
  // PAUSEs between looks, four times, then yield the CPU once. Looking after
  // every single PAUSE (as this did before) kept pulling the line away from
  // the holder: two cores on one buffered channel ran at ~60% of Go's rate.
  for (int round = 0; round < 5; ++round) {
    std::uint32_t v = w.load(std::memory_order_relaxed);
    while (v == 0) {
      if (w.compare_exchange_weak(v, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
        return;
      }
    }
    if (round < 4) {
      for (int i = 0; i < 30; ++i)
        cpu_relax();
    } else {
      sched_yield();
    }
  }
  // Sleep. Marking the word 2 makes the holder's release wake one sleeper; a
  // woken thread takes the lock as 2 again, since others may still sleep.
  // errno is the goroutine's (runtime.hpp): a futex EAGAIN must not leak.
  const int saved = errno;
  while (w.exchange(2, std::memory_order_acquire) != 0) {
    futex(&w, FUTEX_WAIT_PRIVATE, 2, nullptr);
  }
  errno = saved;
}

}  // namespace goro::detail
