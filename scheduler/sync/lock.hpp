// The lock behind goro's sync primitives (Go's runtime mutex, lock_futex.go).
//
// A channel, a semaphore or a context guards its wait queues with one 32-bit
// word: 0 free, 1 held, 2 held and somebody may sleep in the kernel. The
// critical sections are a few dozen instructions and never park a goroutine
// while the lock is held (park's commit releases it once the goroutine is off
// its stack), so the lock spins first: on a multi-core machine the holder
// almost always lets go within the spin. Only if it does not (the holder's
// thread was descheduled, which happens when Ps outnumber cores) does the
// thread sleep on the futex, so a preempted holder cannot make others burn
// their time slice. This blocks the *thread*, briefly, which is the point:
// the lock is what a goroutine's park itself relies on.
//
// Rejected: a plain spinlock (when Ps outnumber cores, as in the TSan CI
// runs, waiters burn whole time slices while the holder's thread is off the
// CPU), and std::mutex (40 bytes, and a park commit unlocks it on a different
// goroutine's stack than the one that locked it, which pthread mutex
// ownership checks in the sanitizers treat as misuse).
#pragma once

#include <linux/futex.h>

#include <atomic>
#include <cstdint>

#include "scheduler/futex.hpp"
#include "scheduler/sched.hpp"

namespace goro::detail {

inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void lock_word_slow(std::atomic<std::uint32_t>& w) noexcept;

// Around every lock word the hog protocol must leave the thread's P alone:
// the holder may ready or park goroutines and must never wait for a P while
// other threads wait for the lock (scheduler/syscall.cpp "Hogs").
// nopreempt_acquire first makes sure the thread has a P (before the lock is
// taken), then counts the hold on the thread; the release may run in a park
// commit, which is always on the same thread.
// Inline: they run twice per channel operation, and an out-of-line call
// each cost ~4 ns per ping-pong round trip (issue 4).
M* nopreempt_reacquire(M* m) noexcept;  // slow path: the hog protocol took the P
inline void nopreempt_acquire() noexcept {
  M* m = current_m();
  if (m == nullptr) return;
  m->nopreempt.store(m->nopreempt.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (__builtin_expect(m->p == nullptr, 0) && m->curg != nullptr) nopreempt_reacquire(m);
}
inline void nopreempt_release() noexcept {
  M* m = current_m();
  if (m == nullptr) return;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  m->nopreempt.store(m->nopreempt.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
}

// acquire on success pairs with lock_word_release's release exchange.
inline void lock_word_acquire(std::atomic<std::uint32_t>& w) noexcept {
  nopreempt_acquire();
  std::uint32_t free = 0;
  if (__builtin_expect(
          w.compare_exchange_strong(free, 1, std::memory_order_acquire, std::memory_order_relaxed),
          1)) {
    return;
  }
  lock_word_slow(w);
}

inline void lock_word_release(std::atomic<std::uint32_t>& w) noexcept {
  if (__builtin_expect(w.exchange(0, std::memory_order_release) == 2, 0)) {
    futex(&w, FUTEX_WAKE_PRIVATE, 1, nullptr);
  }
  nopreempt_release();
}

// RAII for the above.
class WordLock {
 public:
  explicit WordLock(std::atomic<std::uint32_t>& w) : w_(w) { lock_word_acquire(w_); }
  ~WordLock() { lock_word_release(w_); }
  WordLock(const WordLock&) = delete;
  WordLock& operator=(const WordLock&) = delete;

 private:
  std::atomic<std::uint32_t>& w_;
};

}  // namespace goro::detail
