// Futex-based one-shot notifications for parking OS threads (Go's note).
//
// A Note is either clear (0) or signalled (1). sleep() blocks the calling
// thread until it is signalled, then clears it for the next round; wake()
// signals it. Exactly one thread sleeps on a Note (its owner M).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <ctime>

namespace goro::detail {

inline long futex(std::atomic<std::uint32_t>* addr, int op, std::uint32_t val,
                  const struct timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), op, val, ts, nullptr, 0);
}

class Note {
 public:
  // Blocks until wake() (or the timeout, if ns >= 0). Returns true if woken.
  bool sleep(std::int64_t ns = -1) {
    timespec ts{};
    timespec* tsp = nullptr;
    if (ns >= 0) {
      ts.tv_sec = ns / 1000000000;
      ts.tv_nsec = ns % 1000000000;
      tsp = &ts;
    }
    // acquire pairs with wake()'s release exchange: whatever the waker wrote
    // before signalling (m->nextp, ...) is visible after we observe 1.
    while (key_.load(std::memory_order_acquire) == 0) {
      int saved = errno;
      long r = futex(&key_, FUTEX_WAIT_PRIVATE, 0, tsp);
      errno = saved;
      if (r != 0 && tsp != nullptr && key_.load(std::memory_order_acquire) == 0) {
        // ETIMEDOUT (or EINTR with a timeout: the caller re-evaluates).
        return false;
      }
    }
    key_.store(0, std::memory_order_relaxed);
    return true;
  }
  void wake() {
    if (key_.exchange(1, std::memory_order_release) == 0) {
      futex(&key_, FUTEX_WAKE_PRIVATE, 1, nullptr);
    }
  }

 private:
  std::atomic<std::uint32_t> key_{0};
};

}  // namespace goro::detail
