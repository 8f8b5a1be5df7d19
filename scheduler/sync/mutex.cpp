// goro::Mutex (Go's sync/mutex.go, the algorithm and its two modes).
//
// state_ packs: kLocked (held), kWoken (a waiter has been woken or a spinner
// is about to take the lock: unlock need not wake anyone), kStarving, and
// above kWaiterShift the number of parked waiters.
//
// Normal mode: waiters queue FIFO on the semaphore, but a woken waiter does
// not own the mutex; it competes with goroutines arriving right now, which
// have the CPU and usually win. Good throughput, occasional unfairness.
// A waiter that loses and has waited > 1 ms (kStarvationNs) sets kStarving.
// Starvation mode: unlock hands the mutex straight to the waiter at the head
// of the queue (Sema::release with handoff); arrivals do not even try, they
// queue at the tail. The new owner leaves starvation mode when it is the
// last waiter or waited < 1 ms.
//
// Spinning (Go's sync_runtime_canSpin): an arrival spins a few rounds of
// PAUSEs instead of parking only when it can pay off: fewer than 4 rounds so
// far, more than one CPU, another P busy running (maybe the holder), and
// nothing queued on our own P that we would be delaying.
#include <stdexcept>
#include <thread>

#include "goro/sync.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"
#include "scheduler/sync/lock.hpp"

namespace goro {
namespace {

constexpr std::int64_t kStarvationNs = 1'000'000;  // Go's starvationThresholdNs
constexpr int kActiveSpin = 4;                     // Go's active_spin
constexpr int kActiveSpinCount = 30;               // Go's active_spin_cnt (PAUSEs per round)

bool can_spin(int iter) {
  using namespace detail;
  static const unsigned ncpu = std::thread::hardware_concurrency();
  if (iter >= kActiveSpin || ncpu <= 1) return false;
  if (sched.gomaxprocs.load(std::memory_order_relaxed) <=
      sched.npidle.load(std::memory_order_relaxed) +
          sched.nmspinning.load(std::memory_order_relaxed) + 1) {
    return false;
  }
  M* m = current_m();
  if (m == nullptr) return false;
  // One read of m->p: sysmon's hog handoff may clear it asynchronously (Ps
  // are never freed, so a stale pointer is still safe to read).
  P* p = m->p;
  return p != nullptr && p->runq.empty();
}

void do_spin() {
  for (int i = 0; i < kActiveSpinCount; ++i)
    detail::cpu_relax();
}

}  // namespace

bool Mutex::try_lock() noexcept {
  std::int32_t old = state_.load(std::memory_order_relaxed);
  if ((old & (kLocked | kStarving)) != 0) return false;
  return state_.compare_exchange_strong(old, old | kLocked, std::memory_order_acquire,
                                        std::memory_order_relaxed);
}

void Mutex::lock_slow() {
  std::int64_t wait_start = 0;
  bool starving = false;
  bool awoke = false;
  int iter = 0;
  std::int32_t old = state_.load(std::memory_order_relaxed);
  for (;;) {
    // Spin while locked in normal mode, if it may pay off. Setting kWoken
    // tells unlock not to wake a parked waiter: we are about to take it.
    if ((old & (kLocked | kStarving)) == kLocked && can_spin(iter)) {
      if (!awoke && (old & kWoken) == 0 && (old >> kWaiterShift) != 0 &&
          state_.compare_exchange_strong(old, old | kWoken, std::memory_order_relaxed)) {
        awoke = true;
      }
      do_spin();
      ++iter;
      old = state_.load(std::memory_order_relaxed);
      continue;
    }
    std::int32_t next = old;
    // Do not grab a starving mutex: it belongs to the queue's head.
    if ((old & kStarving) == 0) next |= kLocked;
    if ((old & (kLocked | kStarving)) != 0) next += 1 << kWaiterShift;
    // Switch to starvation mode, only if still locked (else unlock finds no
    // waiter to hand off to, which the starving unlock path expects).
    if (starving && (old & kLocked) != 0) next |= kStarving;
    if (awoke) {
      GORO_CHECK((next & kWoken) != 0, "sync: inconsistent mutex state");
      next &= ~kWoken;
    }
    // acquire: if this takes the lock, it pairs with unlock's release.
    if (state_.compare_exchange_weak(old, next, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
      if ((old & (kLocked | kStarving)) == 0) return;  // took it
      // Waited before: queue at the front (LIFO), we keep our seniority.
      const bool lifo = wait_start != 0;
      if (wait_start == 0) wait_start = detail::nanotime();
      sema_.acquire(detail::WaitReason::kMutex, lifo);
      starving = starving || detail::nanotime() - wait_start > kStarvationNs;
      old = state_.load(std::memory_order_relaxed);
      if ((old & kStarving) != 0) {
        // Handed off: the mutex is ours, but the state still says unlocked
        // with us counted as a waiter. Fix both in one add.
        if ((old & (kLocked | kWoken)) != 0 || (old >> kWaiterShift) == 0) {
          detail::fatal("sync: inconsistent mutex state (starvation hand-off)");
        }
        std::int32_t delta = kLocked - (1 << kWaiterShift);
        if (!starving || (old >> kWaiterShift) == 1) delta -= kStarving;
        // acquire pairs with the releasing unlock's release fetch_sub.
        state_.fetch_add(delta, std::memory_order_acquire);
        return;
      }
      awoke = true;
      iter = 0;
    }
    // (a failed compare_exchange reloaded `old`)
  }
}

void Mutex::unlock_slow(std::int32_t now) {
  if (((now + kLocked) & kLocked) == 0) {
    throw std::logic_error("goro::Mutex::unlock of an unlocked mutex");
  }
  if ((now & kStarving) != 0) {
    // Hand the mutex to the head waiter and yield to it. kLocked stays
    // clear; the waiter sets it (see lock_slow), and arrivals keep off
    // because kStarving is set.
    sema_.release(true);
    return;
  }
  std::int32_t old = now;
  for (;;) {
    // Nobody to wake, or someone already woken / spinning, or the lock was
    // taken again (its owner will wake someone): done.
    if ((old >> kWaiterShift) == 0 || (old & (kLocked | kWoken | kStarving)) != 0) return;
    std::int32_t next = (old - (1 << kWaiterShift)) | kWoken;
    if (state_.compare_exchange_weak(old, next, std::memory_order_relaxed)) {
      sema_.release(false);
      return;
    }
  }
}

// --- RWMutex (Go's sync/rwmutex.go) -----------------------------------------
// reader_count_ counts active readers; a writer subtracts kMaxReaders to
// announce itself (new readers see a negative count and park on reader_sem_)
// and waits on writer_sem_ for the readers that were already in
// (reader_wait_). The last of those wakes it. Unlock adds kMaxReaders back
// and wakes the readers that queued meanwhile.

void RWMutex::rlock() {
  // acq_rel: acquire pairs with a writer's unlock (release add).
  if (reader_count_.fetch_add(1, std::memory_order_acq_rel) + 1 < 0) {
    reader_sem_.acquire(detail::WaitReason::kRWMutexRead);  // a writer is pending
  }
}

void RWMutex::runlock() {
  std::int32_t r = reader_count_.fetch_sub(1, std::memory_order_acq_rel) - 1;
  if (r < 0) {
    if (r + 1 == 0 || r + 1 == -kMaxReaders) {
      throw std::logic_error("goro::RWMutex::runlock of an unlocked RWMutex");
    }
    // A writer is pending; the last departing reader wakes it.
    if (reader_wait_.fetch_sub(1, std::memory_order_acq_rel) - 1 == 0) writer_sem_.release();
  }
}

void RWMutex::lock() {
  w_.lock();  // excludes other writers
  // The readers active when we announced ourselves (fetch_sub's old value).
  const std::int32_t r = reader_count_.fetch_sub(kMaxReaders, std::memory_order_acq_rel);
  if (r != 0 && reader_wait_.fetch_add(r, std::memory_order_acq_rel) + r != 0) {
    writer_sem_.acquire(detail::WaitReason::kRWMutexWrite);
  }
}

void RWMutex::unlock() {
  const std::int32_t r =
      reader_count_.fetch_add(kMaxReaders, std::memory_order_acq_rel) + kMaxReaders;
  if (r >= kMaxReaders) throw std::logic_error("goro::RWMutex::unlock of an unlocked RWMutex");
  for (std::int32_t i = 0; i < r; ++i)
    reader_sem_.release();
  w_.unlock();
}

}  // namespace goro
