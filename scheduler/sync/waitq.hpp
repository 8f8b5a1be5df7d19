// Wait-queue operations on goro::detail::WaitQueue (declared in chan.hpp).
// All of them run under the lock that guards the queue.
#pragma once

#include "goro/chan.hpp"

namespace goro::detail {

// What a select's waiters share (lives in the select's frame). `done` goes
// 0 -> 1 exactly once, by the channel operation, close or timer that
// completes the select; that party then writes `winner` and readies the G.
struct SelectSync {
  std::atomic<std::uint32_t> done{0};
  std::uint32_t winner = 0;  // case index, or kSelectTimerWon
  G* g = nullptr;            // the selecting goroutine
};
inline constexpr std::uint32_t kSelectTimerWon = 0xffffffffu;

inline void waitq_push_back(WaitQueue& q, Waiter* w) {
  w->next = nullptr;
  w->prev = q.last;
  if (q.last != nullptr) {
    q.last->next = w;
  } else {
    q.first = w;
  }
  q.last = w;
}

inline void waitq_push_front(WaitQueue& q, Waiter* w) {
  w->prev = nullptr;
  w->next = q.first;
  if (q.first != nullptr) {
    q.first->prev = w;
  } else {
    q.last = w;
  }
  q.first = w;
}

// Unlinks w if it is still queued in q (Go's dequeueSudoG): a select's waiter
// may have been popped already by a channel that lost the race for it.
inline void waitq_remove(WaitQueue& q, Waiter* w) {
  if (w->prev == nullptr && q.first != w) return;  // not in q
  if (w->prev != nullptr) {
    w->prev->next = w->next;
  } else {
    q.first = w->next;
  }
  if (w->next != nullptr) {
    w->next->prev = w->prev;
  } else {
    q.last = w->prev;
  }
  w->next = w->prev = nullptr;
}

inline Waiter* waitq_pop_raw(WaitQueue& q) {
  Waiter* w = q.first;
  if (w == nullptr) return nullptr;
  q.first = w->next;
  if (q.first != nullptr) {
    q.first->prev = nullptr;
  } else {
    q.last = nullptr;
  }
  w->next = w->prev = nullptr;
  return w;
}

// Pops the first waiter that can still be completed (Go's waitq.dequeue): a
// select waiter whose select another case already won is dropped; one whose
// select we win here is marked with its case as the winner.
inline Waiter* waitq_dequeue(WaitQueue& q) {
  for (;;) {
    Waiter* w = waitq_pop_raw(q);
    if (w == nullptr) return nullptr;
    if (w->sel == nullptr) return w;
    std::uint32_t expected = 0;
    // acq_rel: pairs with the other contenders for this select (other
    // channels, the timer) so exactly one of them proceeds.
    if (w->sel->done.compare_exchange_strong(expected, 1, std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
      w->sel->winner = w->index;
      return w;
    }
  }
}

}  // namespace goro::detail
