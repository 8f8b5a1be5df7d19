// select (Go's runtime/select.go selectgo): the algorithm behind goro::select.
//
// 1. Shuffle the live cases into a random poll order (Fisher-Yates with
//    fastrandn; Go's "pollorder"), so among several ready cases each is
//    chosen with equal probability and no channel starves another.
// 2. Sort the live cases by channel address into the lock order, and lock
//    every distinct channel in that order. Two selects locking overlapping
//    sets of channels in a global order cannot deadlock each other.
// 3. Poll each case in poll order; the first one that can proceed without
//    blocking completes (a parked peer is handed the value and readied, or
//    the buffer is used, or the channel is closed) and the select returns it.
// 4. Nothing ready: with a default case, unlock and return it; with a
//    deadline already passed, unlock and return the timeout.
// 5. Otherwise enqueue one Waiter per case (all pointing at one SelectSync
//    in this frame), arm the timer if there is a deadline, and park. The
//    commit arms the timer and only then unlocks the channels, both after we
//    are off our stack: nobody can complete the select before it is parked,
//    and nobody can see it complete before the timer is armed (so the
//    timer_stop below never misses a pending timer).
// 6. Woken by the first channel or timer to win SelectSync::done: lock all
//    channels again and unlink our waiters from every other queue (a waiter
//    may already have been popped and dropped by a channel that lost the
//    race; waitq_remove copes), unlock, stop the timer. No waiter of ours is
//    left in any queue when select returns, and no timer either.
//
// The commit must not touch this frame after it releases the last channel
// lock: the woken goroutine may already be returning (Go's selunlock says
// the same). Unlocking in reverse lock order makes lockorder[0], the lock the
// goroutine needs first, the last one released.
#include "goro/select.hpp"

#include "goro/detail/timer.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"
#include "scheduler/sync/chan_internal.hpp"
#include "scheduler/sync/waitq.hpp"

namespace goro::detail {
namespace {

void sellock(SelectCase* cases, const std::uint16_t* lockorder, std::size_t n) {
  ChanCore* prev = nullptr;
  for (std::size_t k = 0; k < n; ++k) {
    ChanCore* c = cases[lockorder[k]].chan;
    if (c != prev) chan_lock(c);
    prev = c;
  }
}

void selunlock(SelectCase* cases, const std::uint16_t* lockorder, std::size_t n) {
  for (std::size_t k = n; k-- > 0;) {
    ChanCore* c = cases[lockorder[k]].chan;
    // A channel appearing twice is unlocked once, at its first occurrence.
    if (k > 0 && cases[lockorder[k - 1]].chan == c) continue;
    chan_unlock(c);  // after the k == 0 unlock, the frame may be gone
  }
}

struct ParkArgs {
  SelectCase* cases;
  const std::uint16_t* lockorder;
  std::size_t n;
  Timer* timer;  // nullptr: no deadline
};

bool select_commit(G*, void* arg) {
  auto* a = static_cast<ParkArgs*>(arg);
  if (a->timer != nullptr) timer_start(a->timer);
  selunlock(a->cases, a->lockorder, a->n);
  return true;
}

void select_timer_fired(void* arg, std::uint64_t) {
  auto* sync = static_cast<SelectSync*>(arg);
  std::uint32_t expected = 0;
  if (sync->done.compare_exchange_strong(expected, 1, std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
    sync->winner = kSelectTimerWon;
    ready(sync->g);
  }
}

// Step 3 for one case; true if it completed (with the channel locks held).
bool poll_case(SelectCase& sc, G** to_ready) {
  ChanCore* c = sc.chan;
  if (sc.kind == CaseKind::kSend) {
    if (c->closed) {
      sc.waiter.success = false;
      return true;
    }
    if (Waiter* w = waitq_dequeue(c->recvq)) {
      chan_send_to_waiter(c, w, sc.elem);
      *to_ready = w->g;
    } else if (c->count < c->cap) {
      chan_buffer_put(c, sc.elem);
    } else {
      return false;
    }
    sc.waiter.success = true;
    return true;
  }
  if (Waiter* w = waitq_dequeue(c->sendq)) {
    chan_recv_from_waiter(c, w, sc.elem);
    *to_ready = w->g;
  } else if (c->count > 0) {
    chan_buffer_take(c, sc.elem);
  } else if (c->closed) {
    sc.waiter.success = false;
    return true;
  } else {
    return false;
  }
  sc.waiter.success = true;
  return true;
}

std::size_t select_no_channels(bool has_default, std::int64_t deadline) {
  if (has_default) return kSelectDefault;
  if (deadline == kNoDeadline) {
    park(
        WaitReason::kSelectNoCases, [](G*, void*) { return true; }, nullptr);
    fatal("select: a goroutine blocked in an empty select was woken");
  }
  goro::sleep_until(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline)));
  return kSelectTimeout;
}

}  // namespace

std::size_t select_impl(SelectCase* cases, std::uint16_t* scratch, std::size_t n, bool has_default,
                        std::int64_t deadline) {
  std::uint16_t* pollorder = scratch;
  std::uint16_t* lockorder = scratch + n;
  std::size_t live = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (cases[i].chan == nullptr) continue;  // nil channel, default or timer case
    std::uint32_t j = fastrandn(static_cast<std::uint32_t>(live + 1));
    pollorder[live] = pollorder[j];
    pollorder[j] = static_cast<std::uint16_t>(i);
    ++live;
  }
  if (live == 0) return select_no_channels(has_default, deadline);
  // Insertion sort by channel address: selects have a handful of cases.
  for (std::size_t k = 0; k < live; ++k) {
    std::uint16_t v = pollorder[k];
    std::size_t at = k;
    for (; at > 0 && cases[lockorder[at - 1]].chan > cases[v].chan; --at)
      lockorder[at] = lockorder[at - 1];
    lockorder[at] = v;
  }
  G* self = current_g();
  if (self != nullptr) maybe_preempt(self);

  sellock(cases, lockorder, live);
  for (std::size_t k = 0; k < live; ++k) {
    const std::uint16_t i = pollorder[k];
    G* to_ready = nullptr;
    if (poll_case(cases[i], &to_ready)) {
      selunlock(cases, lockorder, live);
      if (to_ready != nullptr) ready(to_ready);
      return i;
    }
  }
  if (has_default) {
    selunlock(cases, lockorder, live);
    return kSelectDefault;
  }
  if (deadline != kNoDeadline && deadline <= nanotime()) {
    selunlock(cases, lockorder, live);
    return kSelectTimeout;
  }
  GORO_CHECK(self != nullptr, "select: blocking select outside a goroutine");

  SelectSync sync;
  sync.g = self;
  for (std::size_t k = 0; k < live; ++k) {
    SelectCase& sc = cases[lockorder[k]];
    Waiter& w = sc.waiter;
    w.g = self;
    w.elem = sc.elem;
    w.sel = &sync;
    w.index = lockorder[k];
    w.success = false;
    waitq_push_back(sc.kind == CaseKind::kSend ? sc.chan->sendq : sc.chan->recvq, &w);
  }
  Timer timer;
  ParkArgs args{cases, lockorder, live, nullptr};
  if (deadline != kNoDeadline) {
    timer.when = deadline;
    timer.fn = &select_timer_fired;
    timer.arg = &sync;
    args.timer = &timer;
  }
  park(WaitReason::kSelect, &select_commit, &args);

  sellock(cases, lockorder, live);
  const std::uint32_t winner = sync.winner;
  for (std::size_t k = 0; k < live; ++k) {
    SelectCase& sc = cases[lockorder[k]];
    if (lockorder[k] == winner) continue;  // the winner dequeued it
    waitq_remove(sc.kind == CaseKind::kSend ? sc.chan->sendq : sc.chan->recvq, &sc.waiter);
  }
  selunlock(cases, lockorder, live);
  if (args.timer != nullptr) timer_stop(&timer);  // waits out a losing callback
  return winner == kSelectTimerWon ? kSelectTimeout : winner;
}

}  // namespace goro::detail
