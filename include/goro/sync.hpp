// goro sync: Mutex, RWMutex, WaitGroup, Cond, Once, Semaphore (Go's sync).
//
// Every blocking call parks the goroutine, never the thread, and must be made
// from a goroutine. Misuse that Go reports with a fatal error or a panic is a
// std::logic_error here (an exception escaping a goroutine ends the process
// with status 2, like Go's panic): unlocking an unlocked Mutex, a negative
// WaitGroup counter. None of these types is copyable or movable.
//
// Mechanism: scheduler/sync/{sema,mutex,rwmutex,waitgroup,cond}.cpp, Go's
// sync package on top of a per-object semaphore (Go's runtime sema.go).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>

#include "goro/chan.hpp"
#include "goro/detail/park.hpp"
#include "goro/runtime.hpp"

namespace goro::detail {

// A goroutine semaphore (Go's runtime semaphore, sema.go). acquire parks
// until the count is positive and takes one; release adds one and wakes a
// waiter. As in Go, the object holds only the count: the parked waiters live
// in a process-wide table hashed by the Sema's address (sema.cpp), so that
// release never touches the object after the increment that may let an
// acquirer return and destroy it (a WaitGroup on the stack, a Mutex freed by
// its last user).
class Sema {
 public:
  explicit Sema(std::uint32_t count = 0) : count_(count) {}
  Sema(const Sema&) = delete;
  Sema& operator=(const Sema&) = delete;

  bool try_acquire() noexcept;
  // lifo: queue at the front (a Mutex waiter that already waited once).
  void acquire(WaitReason reason, bool lifo = false);
  // handoff: give the count directly to the woken waiter and yield to it
  // (a Mutex in starvation mode).
  void release(bool handoff = false);

 private:
  std::atomic<std::uint32_t> count_;
};

// Go's notifyList: the ticket-based wait list behind Cond.
class NotifyList {
 public:
  std::uint32_t add() noexcept { return wait_.fetch_add(1, std::memory_order_acq_rel); }
  void wait(std::uint32_t ticket);
  void notify_one();
  void notify_all();

 private:
  std::atomic<std::uint32_t> wait_{0};  // next ticket to hand out
  std::uint32_t notify_ = 0;            // next ticket to notify (lock)
  std::atomic<std::uint32_t> lock_word_{0};
  WaitQueue q_;  // waiters, by ticket (lock)
};

}  // namespace goro::detail

namespace goro {

// A mutual-exclusion lock for goroutines (Go's sync.Mutex); BasicLockable and
// Lockable, so std::lock_guard / std::unique_lock / std::scoped_lock work.
// Not recursive; it may be unlocked by a different goroutine than locked it.
// A contended lock spins briefly when another P is running the holder, then
// parks. Fairness (Go's): normally a woken waiter competes with newly arriving
// goroutines (which usually win: they are already on a CPU); a waiter that has
// waited more than 1 ms switches the mutex to starvation mode, where unlock
// hands ownership directly to the oldest waiter, until the queue drains or
// the owner waited less than 1 ms.
class Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() {
    std::int32_t unlocked = 0;
    // acquire pairs with unlock's release: the critical sections are ordered.
    if (__builtin_expect(state_.compare_exchange_weak(unlocked, kLocked, std::memory_order_acquire,
                                                      std::memory_order_relaxed),
                         1)) {
      return;
    }
    lock_slow();
  }
  bool try_lock() noexcept;
  // Throws std::logic_error on an unlocked Mutex.
  void unlock() {
    std::int32_t now = state_.fetch_sub(kLocked, std::memory_order_release) - kLocked;
    if (__builtin_expect(now != 0, 0)) unlock_slow(now);
  }

 private:
  friend class RWMutex;
  static constexpr std::int32_t kLocked = 1;
  static constexpr std::int32_t kWoken = 2;
  static constexpr std::int32_t kStarving = 4;
  static constexpr int kWaiterShift = 3;

  void lock_slow();
  void unlock_slow(std::int32_t now);

  // locked | woken | starving bits, waiter count above kWaiterShift.
  std::atomic<std::int32_t> state_{0};
  detail::Sema sema_;
};

// A reader/writer lock (Go's sync.RWMutex): any number of readers or one
// writer. A blocked writer keeps new readers out, so writers do not starve.
// lock()/unlock() for writers, rlock()/runlock() (alias lock_shared /
// unlock_shared, so std::shared_lock works) for readers.
class RWMutex {
 public:
  RWMutex() = default;
  RWMutex(const RWMutex&) = delete;
  RWMutex& operator=(const RWMutex&) = delete;

  void lock();
  void unlock();
  void rlock();
  void runlock();
  void lock_shared() { rlock(); }
  void unlock_shared() { runlock(); }

 private:
  static constexpr std::int32_t kMaxReaders = 1 << 30;
  Mutex w_;  // held by the writer (pending or active)
  detail::Sema writer_sem_;
  detail::Sema reader_sem_;
  std::atomic<std::int32_t> reader_count_{0};  // negative while a writer is pending
  std::atomic<std::int32_t> reader_wait_{0};   // readers the pending writer waits for
};

// Waits for a collection of goroutines to finish (Go's sync.WaitGroup).
// add(n) before starting the work, done() when each piece finishes, wait()
// parks until the counter is zero. A negative counter throws
// std::logic_error, as does add() racing with a wait() that is returning.
//
// A WaitGroup has a cache line to itself (alignas(64), 64 bytes). The usual
// place for one is the spawning goroutine's frame, next to the locals and
// return addresses that the spawn loop writes all the time, while every
// finished goroutine does done() on it from another core: sharing the line
// made each done() and each spawn wait for the other (Go's escapes to the
// heap, so it never does). The measurement is in docs/benchmarks.md, "Spawn
// on 2 Ps: the WaitGroup's cache line".
class alignas(64) WaitGroup {
 public:
  WaitGroup() = default;
  WaitGroup(const WaitGroup&) = delete;
  WaitGroup& operator=(const WaitGroup&) = delete;

  void add(std::int32_t delta);
  void done() { add(-1); }
  void wait();
  // Go 1.25's WaitGroup.Go: add(1), then run fn in a new goroutine that calls
  // done() when fn returns.
  template <class F>
  void go(F&& fn) {
    add(1);
    goro::go([this, f = std::forward<F>(fn)]() mutable {
      f();
      done();
    });
  }

 private:
  // counter in the high 32 bits, number of waiters in the low 32.
  std::atomic<std::uint64_t> state_{0};
  detail::Sema sema_;
};
static_assert(sizeof(WaitGroup) == 64, "WaitGroup: one cache line, no more");

// A condition variable for goroutines (Go's sync.Cond / std::condition_variable_any).
// wait(lock) atomically unlocks `lock` (any BasicLockable, e.g. goro::Mutex or
// std::unique_lock<goro::Mutex>), parks until signal()/broadcast(), and locks
// it again before returning. As always with condition variables, wait in a
// loop (or use the predicate overload): a wake-up does not mean the
// condition holds. A signal with nobody waiting is lost.
class Cond {
 public:
  Cond() = default;
  Cond(const Cond&) = delete;
  Cond& operator=(const Cond&) = delete;

  template <class Lock>
  void wait(Lock& lock) {
    const std::uint32_t ticket = list_.add();
    lock.unlock();
    list_.wait(ticket);
    lock.lock();
  }
  template <class Lock, class Pred>
  void wait(Lock& lock, Pred pred) {
    while (!pred())
      wait(lock);
  }
  void signal() { list_.notify_one(); }
  void broadcast() { list_.notify_all(); }

 private:
  detail::NotifyList list_;
};

// Runs a function once (Go's sync.Once, std::call_once's semantics for
// exceptions): the first call() runs fn; concurrent callers park until it
// returns; later calls return at once. If fn throws, the exception propagates
// and the Once is not done: the next call() tries again.
class Once {
 public:
  Once() = default;
  Once(const Once&) = delete;
  Once& operator=(const Once&) = delete;

  template <class F>
  void call(F&& fn) {
    // acquire pairs with the release store below: fn's effects are visible.
    if (__builtin_expect(done_.load(std::memory_order_acquire), 1)) return;
    std::lock_guard<Mutex> guard(m_);
    if (done_.load(std::memory_order_relaxed)) return;
    std::forward<F>(fn)();
    done_.store(true, std::memory_order_release);
  }
  bool is_done() const noexcept { return done_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> done_{false};
  Mutex m_;
};

// A counting semaphore for goroutines. acquire() parks while the count is
// zero; release(n) adds n and wakes up to n waiters, in FIFO order.
class Semaphore {
 public:
  explicit Semaphore(std::uint32_t initial) : sema_(initial) {}
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  void acquire() { sema_.acquire(detail::WaitReason::kSemaphore); }
  bool try_acquire() noexcept { return sema_.try_acquire(); }
  void release(std::uint32_t n = 1) {
    for (std::uint32_t i = 0; i < n; ++i)
      sema_.release();
  }

 private:
  detail::Sema sema_;
};

}  // namespace goro
