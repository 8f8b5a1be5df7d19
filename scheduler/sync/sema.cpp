// Goroutine semaphores (Go's runtime/sema.go semacquire1 / semrelease1).
//
// The count is an atomic so the uncontended paths never take the lock. The
// lock guards the queue of parked waiters and `nwait`, the number of
// goroutines that have committed to wait. The lost wake-up race is between
// an acquirer that saw count == 0 and a releaser that saw nwait == 0; both
// sides use seq_cst (a StoreLoad pair, as in Go):
//   acquirer: nwait += 1; then load count (try_acquire)   [under the lock]
//   releaser: count += 1; then load nwait
// so either the acquirer sees the new count, or the releaser sees the
// waiter and takes the lock to wake it.
//
// A woken waiter does not own a unit of the count unless the releaser handed
// it one (`handoff`, Go's ticket): it tries to take one and queues again if a
// running goroutine took it first. Handoff is how a starving Mutex passes
// ownership straight to its oldest waiter; the releaser then yields so the
// waiter (now in runnext) runs at once.
#include "goro/sync.hpp"
#include "scheduler/checkdead.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/sched.hpp"
#include "scheduler/sync/lock.hpp"
#include "scheduler/sync/waitq.hpp"

namespace goro::detail {
namespace {

bool unlock_word_commit(G*, void* arg) {
  lock_word_release(*static_cast<std::atomic<std::uint32_t>*>(arg));
  return true;
}

}  // namespace

bool Sema::try_acquire() noexcept {
  std::uint32_t v = count_.load(std::memory_order_seq_cst);
  while (v > 0) {
    if (count_.compare_exchange_weak(v, v - 1, std::memory_order_seq_cst)) return true;
  }
  return false;
}

void Sema::acquire(WaitReason reason, bool lifo) {
  if (try_acquire()) return;
  Waiter w;
  w.g = current_g();
  GORO_CHECK(w.g != nullptr, "sema: blocking acquire outside a goroutine");
  for (;;) {
    lock_word_acquire(lock_word_);
    nwait_.fetch_add(1, std::memory_order_seq_cst);
    if (try_acquire()) {
      nwait_.fetch_sub(1, std::memory_order_relaxed);
      lock_word_release(lock_word_);
      return;
    }
    w.success = false;
    if (lifo) {
      waitq_push_front(q_, &w);
    } else {
      waitq_push_back(q_, &w);
    }
    park(reason, &unlock_word_commit, &lock_word_);
    if (w.success || try_acquire()) return;
  }
}

void Sema::release(bool handoff) {
  if (current_m() == nullptr) note_foreign_sync();
  count_.fetch_add(1, std::memory_order_seq_cst);
  if (nwait_.load(std::memory_order_seq_cst) == 0) return;
  Waiter* w;
  {
    WordLock lock(lock_word_);
    if (nwait_.load(std::memory_order_relaxed) == 0) return;  // someone else woke it
    w = waitq_pop_raw(q_);
    if (w == nullptr) return;
    nwait_.fetch_sub(1, std::memory_order_relaxed);
  }
  // The waiter stays parked until ready(): its frame is ours until then.
  const bool direct = handoff && try_acquire();
  w->success = direct;
  ready(w->g);
  if (direct) goro::yield();  // let the new owner run now (it is in runnext)
}

}  // namespace goro::detail
