// goro::detail::ThreadLockGuard: a lock guard for a thread mutex (std::mutex)
// that the runtime knows about.
//
// The rule: a goroutine must not switch away while it holds a thread mutex.
// Another goroutine resumed on the same M could then try the same mutex and
// deadlock the thread (std::mutex is not re-entrant, and its owner is the
// thread, not the goroutine), and one resumed elsewhere would unlock a mutex
// its thread does not own. Every runtime entry that can switch (park, yield,
// sleep, socket I/O that would block, goro::go, which may take a preemption
// point) therefore happens outside such a section.
//
// std::lock_guard cannot tell the runtime it is held; this guard can. In
// checked builds (debug, ASan, TSan: GORO_CHECK) the runtime counts the
// thread mutexes held on each M and aborts with "sched: goroutine switched
// away holding a thread mutex" at the offending switch or spawn, so the bug
// shows in the test suite instead of as a rare production deadlock. Release
// builds keep only the two calls (the count is not kept).
#pragma once

namespace goro::detail {

// +1 after locking, -1 before unlocking (no-ops in release builds and off
// the runtime's threads).
void thread_lock_count(int delta) noexcept;

template <class Mutex>
class ThreadLockGuard {
 public:
  explicit ThreadLockGuard(Mutex& mu) : mu_(mu) {
    mu_.lock();
    thread_lock_count(1);
  }
  ~ThreadLockGuard() {
    thread_lock_count(-1);
    mu_.unlock();
  }
  ThreadLockGuard(const ThreadLockGuard&) = delete;
  ThreadLockGuard& operator=(const ThreadLockGuard&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace goro::detail
