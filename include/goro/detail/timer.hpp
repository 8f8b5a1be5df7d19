// goro::detail timers: per-P 4-ary heaps of intrusive Timer records, as Go's
// runtime/time.go. Internal, installed for the public time and sync templates.
//
// Contract:
// - The owner sets `when`, `fn`, `arg` (and optionally `seq`) and calls
//   timer_start(); the timer joins the current P's heap.
// - `fn(arg, seq)` runs once at or after `when`, on some M of the runtime,
//   with no goro locks held; it must not park (it may call ready()).
// - timer_stop() removes a pending timer and returns true; if the timer has
//   fired it returns false, after waiting for a callback still running on
//   another M to return, so the caller may free the Timer afterwards. Never
//   call timer_stop on a timer from inside its own callback.
// - timer_reset() is stop + start with a new `when`.
// A Timer must not be destroyed while it is pending.
#pragma once

#include <atomic>
#include <cstdint>

namespace goro::detail {

struct TimerHeap;

struct Timer {
  std::int64_t when = 0;
  void (*fn)(void* arg, std::uint64_t seq) = nullptr;
  void* arg = nullptr;
  std::uint64_t seq = 0;
  // A detached timer is never stopped; its callback may end the Timer's
  // lifetime (e.g. it readies a goroutine whose frame holds the Timer), so
  // the runtime does not touch it once the callback has started.
  bool detached = false;

  // Runtime-private. `heap` is the heap holding the timer (nullptr: not
  // pending); written only under that heap's lock. `running` is set while the
  // callback runs (release on clear, paired with timer_stop's acquire load).
  std::atomic<TimerHeap*> heap{nullptr};
  std::atomic<bool> running{false};
  std::int32_t index = -1;  // position in heap->items, under the heap's lock
};

void timer_start(Timer* t);
bool timer_stop(Timer* t);
void timer_reset(Timer* t, std::int64_t when);

}  // namespace goro::detail
