// Goroutine semaphores (Go's runtime/sema.go semacquire1 / semrelease1).
//
// ## The table
// A Sema is only its count. Waiters park in one of 251 buckets (Go's
// semTabSize, a prime) chosen by the Sema's address; each bucket has a lock,
// a queue of waiters (Waiter::elem holds the Sema they wait on) and `nwait`,
// the number of goroutines committed to wait on any Sema of the bucket. The
// reason (Go's): release increments the count and from then on touches only
// the bucket, never the object, unless it finds a waiter for it (who keeps
// the object alive by still needing it). An acquirer that takes the count
// the moment it appears may return and destroy the object while the
// releaser is still finishing.
//
// ## The lost wake-up
// Between an acquirer that saw count == 0 and a releaser that saw nwait == 0,
// both sides use seq_cst (a StoreLoad pair, as in Go):
//   acquirer: nwait += 1; then load count (try_acquire)   [under the bucket lock]
//   releaser: count += 1; then load nwait
// so either the acquirer sees the new count, or the releaser sees the
// waiter and takes the lock to wake it.
//
// ## Handoff
// A woken waiter does not own a unit of the count unless the releaser handed
// it one (Go's ticket): it tries to take one and queues again if a running
// goroutine took it first. Handoff is how a starving Mutex passes ownership
// straight to its oldest waiter; the releaser then yields so the waiter (now
// in runnext) runs at once.
#include <cstdint>

#include "goro/sync.hpp"
#include "scheduler/checkdead.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/sched.hpp"
#include "scheduler/sync/lock.hpp"
#include "scheduler/sync/waitq.hpp"

namespace goro::detail {
namespace {

struct alignas(64) SemaBucket {
  std::atomic<std::uint32_t> lock_word{0};
  std::atomic<std::uint32_t> nwait{0};
  WaitQueue q;  // (lock_word)
};

constexpr std::size_t kSemaBuckets = 251;
SemaBucket g_buckets[kSemaBuckets];

SemaBucket& bucket_for(const void* sema) {
  return g_buckets[(reinterpret_cast<std::uintptr_t>(sema) >> 3) % kSemaBuckets];
}

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
  w.elem = this;
  SemaBucket& b = bucket_for(this);
  for (;;) {
    lock_word_acquire(b.lock_word);
    b.nwait.fetch_add(1, std::memory_order_seq_cst);
    if (try_acquire()) {
      b.nwait.fetch_sub(1, std::memory_order_relaxed);
      lock_word_release(b.lock_word);
      return;
    }
    w.success = false;
    if (lifo) {
      waitq_push_front(b.q, &w);
    } else {
      waitq_push_back(b.q, &w);
    }
    park(reason, &unlock_word_commit, &b.lock_word);
    if (w.success || try_acquire()) return;
  }
}

void Sema::release(bool handoff) {
  if (current_m() == nullptr) note_foreign_sync();
  SemaBucket& b = bucket_for(this);
  count_.fetch_add(1, std::memory_order_seq_cst);
  // From here on, *this may be gone unless a waiter for it is found below.
  if (b.nwait.load(std::memory_order_seq_cst) == 0) return;
  Waiter* w = nullptr;
  {
    WordLock lock(b.lock_word);
    if (b.nwait.load(std::memory_order_relaxed) == 0) return;  // someone else woke it
    for (Waiter* it = b.q.first; it != nullptr; it = it->next) {
      if (it->elem == this) {
        w = it;
        break;
      }
    }
    if (w == nullptr) return;  // the bucket's waiters wait on other Semas
    waitq_remove(b.q, w);
    b.nwait.fetch_sub(1, std::memory_order_relaxed);
  }
  // The waiter stays parked until ready(): its frame, and this Sema it still
  // needs, are alive until then.
  const bool direct = handoff && try_acquire();
  w->success = direct;
  ready(w->g);
  if (direct) goro::yield();  // let the new owner run now (it is in runnext)
}

}  // namespace goro::detail
