// Slow path of the word lock (lock.hpp).
#include "scheduler/sync/lock.hpp"

#include <cerrno>

namespace goro::detail {

void lock_word_slow(std::atomic<std::uint32_t>& w) noexcept {
  // Spin a little: the holder is usually on another CPU and about to let go
  // (critical sections are tens of nanoseconds). One PAUSE between looks
  // (~40-140 cycles depending on the CPU), 128 looks: a few microseconds.
  for (int i = 0; i < 128; ++i) {
    cpu_relax();
    std::uint32_t free = 0;
    if (w.load(std::memory_order_relaxed) == 0 &&
        w.compare_exchange_weak(free, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      return;
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
