// Per-P timer heaps (Go's runtime/time.go; docs/DESIGN.md "Timers").
//
// Each P owns a 4-ary min-heap of pending Timers keyed by `when`, guarded by
// its own mutex because other Ms touch it too: a thief runs a busy P's
// expired timers (so timers on a P hogged by a long-running goroutine still
// fire, Go #38860), and timer_stop may come from any M.
//
// Deletion is eager (timer_stop removes the entry by its stored index) rather
// than Go's lazy zombies: goro's timers live inside the objects that use them
// (a sleeping goroutine's frame, a poll descriptor, a select), so the heap
// must never point at a Timer after timer_stop returns. A deadline reset is a
// remove plus an insert, O(log n) under the P's lock; measured cheap enough
// for a reset per request (see loadtest/micro).
//
// `next_when` mirrors heap[0].when (INT64_MAX when empty) so the scheduler's
// fast path can test "is anything due?" with one relaxed load. It is written
// only under `mu`; a stale read delays a check by one schedule at most, and
// find_runnable always re-checks under the lock before an M sleeps.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#include "goro/detail/timer.hpp"

namespace goro::detail {

inline constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

struct TimerHeap {
  struct Entry {
    std::int64_t when;
    Timer* t;
  };
  std::mutex mu;
  std::vector<Entry> items;  // 4-ary heap (mu)
  std::atomic<std::int64_t> next_when{kNever};

  // All under mu:
  void push_locked(Timer* t);
  void remove_locked(std::int32_t i);
  void publish_locked() {
    next_when.store(items.empty() ? kNever : items[0].when, std::memory_order_relaxed);
  }
  // Runs every timer due at `now`, dropping mu around each callback. Returns
  // the next when. Takes and releases mu itself.
  std::int64_t run(std::int64_t now);
  // Moves every timer into `to` (P destruction). Takes both locks.
  // Moves every timer to `to`; returns the earliest deadline moved (kNever).
  std::int64_t move_all_to(TimerHeap& to);

 private:
  void sift_up(std::int32_t i);
  void sift_down(std::int32_t i);
  void place(std::int32_t i, const Entry& e) {
    items[i] = e;
    e.t->index = i;
  }
};

}  // namespace goro::detail
