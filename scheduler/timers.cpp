// Timer heaps: see timers.hpp for the design.
#include "scheduler/timers.hpp"

#include <thread>

#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"
#include "scheduler/sched.hpp"

namespace goro::detail {

// 4-ary heap: parent of i is (i-1)/4, children 4i+1..4i+4. Shallower than a
// binary heap, and the four children share a cache line (Go measured it).
void TimerHeap::sift_up(std::int32_t i) {
  Entry e = items[i];
  while (i > 0) {
    std::int32_t parent = (i - 1) / 4;
    if (items[parent].when <= e.when) break;
    place(i, items[parent]);
    i = parent;
  }
  place(i, e);
}

void TimerHeap::sift_down(std::int32_t i) {
  const auto n = static_cast<std::int32_t>(items.size());
  Entry e = items[i];
  for (;;) {
    std::int32_t c = 4 * i + 1;
    if (c >= n) break;
    std::int32_t best = c;
    for (std::int32_t k = c + 1; k < c + 4 && k < n; ++k) {
      if (items[k].when < items[best].when) best = k;
    }
    if (e.when <= items[best].when) break;
    place(i, items[best]);
    i = best;
  }
  place(i, e);
}

void TimerHeap::push_locked(Timer* t) {
  items.push_back({t->when, t});
  t->index = static_cast<std::int32_t>(items.size() - 1);
  // release pairs with timer_stop's acquire load of t->heap.
  t->heap.store(this, std::memory_order_release);
  sift_up(t->index);
  publish_locked();
}

void TimerHeap::remove_locked(std::int32_t i) {
  GORO_CHECK(i >= 0 && i < static_cast<std::int32_t>(items.size()), "timers: bad heap index");
  Timer* t = items[i].t;
  t->index = -1;
  t->heap.store(nullptr, std::memory_order_release);
  Entry last = items.back();
  items.pop_back();
  if (i < static_cast<std::int32_t>(items.size())) {
    place(i, last);
    sift_down(i);
    sift_up(last.t->index);
  }
  publish_locked();
}

std::int64_t TimerHeap::run(std::int64_t now) {
  std::unique_lock<std::mutex> lock(mu);
  while (!items.empty() && items[0].when <= now) {
    Timer* t = items[0].t;
    // Order matters for timer_stop: `running` is set before `heap` is
    // cleared, both under mu, so a stopper that sees heap == nullptr also
    // sees running == true until the callback has returned.
    const bool detached = t->detached;
    if (!detached) t->running.store(true, std::memory_order_relaxed);
    remove_locked(0);
    auto fn = t->fn;
    void* arg = t->arg;
    const std::uint64_t seq = t->seq;
    lock.unlock();
    fn(arg, seq);
    // A detached timer's callback may have ended the Timer's lifetime (a
    // sleeping goroutine's frame): do not touch it again.
    if (!detached) {
      // release pairs with timer_stop's acquire spin: after it, the callback
      // no longer touches the Timer or its arg.
      t->running.store(false, std::memory_order_release);
    }
    lock.lock();
  }
  return items.empty() ? kNever : items[0].when;
}

std::int64_t TimerHeap::move_all_to(TimerHeap& to) {
  std::scoped_lock both(mu, to.mu);
  const std::int64_t earliest = items.empty() ? kNever : items[0].when;
  for (const Entry& e : items)
    to.push_locked(e.t);
  items.clear();
  publish_locked();
  return earliest;
}

namespace {

// The caller holds a runtime_enter (or is not on an M).
TimerHeap* local_heap() {
  M* m = current_m();
  P* p = m != nullptr ? m->p : nullptr;
  return p != nullptr ? &p->timers : &sched.allp[0]->timers;
}

}  // namespace

void timer_start(Timer* t) {
  GORO_CHECK(t->heap.load(std::memory_order_relaxed) == nullptr,
             "timers: start of a pending timer");
  GORO_CHECK(t->fn != nullptr, "timers: no callback");
  runtime_enter();
  TimerHeap* h = local_heap();
  // Read everything needed before unlocking: once the heap lock is released
  // the timer may fire on another M and its owner may end its lifetime.
  const std::int64_t when = t->when;
  bool earliest;
  {
    std::lock_guard<std::mutex> lock(h->mu);
    h->push_locked(t);
    earliest = h->items[0].t == t;
  }
  if (earliest) wake_netpoller(when);
  runtime_leave();
}

bool timer_stop(Timer* t) {
  GORO_CHECK(!t->detached, "timers: timer_stop of a detached timer");
  for (;;) {
    TimerHeap* h = t->heap.load(std::memory_order_acquire);
    if (h == nullptr) {
      // Not pending: fired (maybe still running on another M) or never started.
      while (t->running.load(std::memory_order_acquire)) {
        std::this_thread::yield();
      }
      return false;
    }
    std::lock_guard<std::mutex> lock(h->mu);
    if (t->heap.load(std::memory_order_relaxed) != h) continue;  // fired or moved meanwhile
    h->remove_locked(t->index);
    return true;
  }
}

void timer_reset(Timer* t, std::int64_t when) {
  timer_stop(t);
  t->when = when;
  timer_start(t);
}

}  // namespace goro::detail
