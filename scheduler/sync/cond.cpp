// goro::Cond's wait list (Go's runtime notifyList, sema.go).
//
// A waiter takes a ticket (add(), atomic, before unlocking the user's lock),
// unlocks, then parks on that ticket. notify_one wakes the holder of the
// oldest unnotified ticket; notify_all every ticket handed out so far. The
// ticket is what makes the unlock-then-park window safe: a signal that comes
// between them advances `notify_` past the ticket, and wait() then returns at
// once instead of parking for a signal that already happened.
#include "goro/sync.hpp"
#include "scheduler/checkdead.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/sched.hpp"
#include "scheduler/sync/lock.hpp"
#include "scheduler/sync/waitq.hpp"

namespace goro::detail {
namespace {

bool ticket_before(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(a - b) < 0;  // wrap-around safe
}

bool unlock_word_commit(G*, void* arg) {
  lock_word_release(*static_cast<std::atomic<std::uint32_t>*>(arg));
  return true;
}

}  // namespace

void NotifyList::wait(std::uint32_t ticket) {
  lock_word_acquire(lock_word_);
  if (ticket_before(ticket, notify_)) {
    lock_word_release(lock_word_);
    return;
  }
  Waiter w;
  w.g = current_g();
  GORO_CHECK(w.g != nullptr, "cond: wait outside a goroutine");
  w.index = ticket;
  waitq_push_back(q_, &w);
  park(WaitReason::kCond, &unlock_word_commit, &lock_word_);
}

void NotifyList::notify_one() {
  if (current_m() == nullptr) note_foreign_sync();
  Waiter* found = nullptr;
  {
    WordLock lock(lock_word_);
    const std::uint32_t t = notify_;
    if (t == wait_.load(std::memory_order_acquire)) return;  // nobody waits
    notify_ = t + 1;
    for (Waiter* w = q_.first; w != nullptr; w = w->next) {
      if (w->index == t) {
        waitq_remove(q_, w);
        found = w;
        break;
      }
    }
    // Not found: the ticket's holder has not parked yet and will see notify_.
  }
  if (found != nullptr) ready(found->g);
}

void NotifyList::notify_all() {
  if (current_m() == nullptr) note_foreign_sync();
  Waiter* list;
  {
    WordLock lock(lock_word_);
    if (notify_ == wait_.load(std::memory_order_acquire)) return;
    notify_ = wait_.load(std::memory_order_acquire);
    list = q_.first;
    q_.first = q_.last = nullptr;
  }
  while (list != nullptr) {
    Waiter* w = list;
    list = w->next;  // read before ready()
    ready(w->g);
  }
}

}  // namespace goro::detail
