// Channels (Go's runtime/chan.go): the algorithm behind goro::Chan<T>.
//
// ## The state
// A ChanCore (chan.hpp) is Go's hchan: a ring buffer of `cap` slots, a queue
// of parked receivers and one of parked senders, a closed flag, all under one
// lock word. At most one of the queues is non-empty at a time except
// transiently inside a select; a receiver parks only when the buffer is empty
// and no sender waits, a sender only when the buffer is full and no receiver
// waits.
//
// ## Direct hand-off
// A sender that finds a parked receiver moves its value straight into the
// receiver's result slot, marks it successful and readies it; a receiver
// that finds a parked sender takes the sender's value (unbuffered) or the
// head of the full buffer, refilling the tail with the sender's value
// (buffered: keeps FIFO order). Either way the woken goroutine finds its
// operation complete and does not touch the channel again, and ready() puts
// it in runnext so it runs next on this P: an unbuffered ping-pong is one
// switch per message.
//
// ## Parking
// A goroutine that must wait puts a Waiter (Go's sudog) in its own frame,
// links it into the queue and parks with a commit that releases the channel
// lock. park() runs the commit only after the goroutine has left its stack
// (detail/park.hpp), so whoever dequeues the Waiter next cannot ready the
// goroutine while it is still running. The party that dequeues a Waiter owns
// it until it calls ready(); it reads everything it needs first.
//
// ## Close
// close() marks the channel, dequeues every waiter under the lock, and
// readies them after unlocking: receivers find their result empty, senders
// find `success == false` (their value untouched; send returns false).
// Buffered values stay receivable after close.
//
// ## Select waiters
// A Waiter with `sel` set belongs to a select parked on several channels at
// once; waitq_dequeue (waitq.hpp) lets exactly one channel (or the timer) win
// it. See select.cpp.
#include <stdexcept>

#include "goro/chan.hpp"
#include "scheduler/checkdead.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"
#include "scheduler/sync/chan_internal.hpp"
#include "scheduler/sync/lock.hpp"
#include "scheduler/sync/waitq.hpp"

namespace goro::detail {
namespace {

bool unlock_commit(G*, void* arg) {
  chan_unlock(static_cast<ChanCore*>(arg));
  return true;
}

[[noreturn]] void block_forever(WaitReason reason) {
  park(
      reason, [](G*, void*) { return true; }, nullptr);
  fatal("chan: a goroutine blocked on a nil channel was woken");
}

ChanResult park_on(ChanCore* c, WaitQueue& q, void* elem, WaitReason reason) {
  Waiter w;
  w.g = current_g();
  GORO_CHECK(w.g != nullptr, "chan: blocking channel operation outside a goroutine");
  w.elem = elem;
  waitq_push_back(q, &w);
  park(reason, &unlock_commit, c);
  // The party that dequeued us wrote w before ready(); the run-queue hand-off
  // that resumed us orders those writes before this read.
  return w.success ? ChanResult::kOk : ChanResult::kClosed;
}

// Every channel operation: a cooperative preemption point on a goroutine;
// from a thread outside the runtime, a note for the deadlock detector.
inline void entry_checks(bool block) {
  M* m = current_m();
  if (m == nullptr) {
    note_foreign_sync();
  } else if (block && m->curg != nullptr) {
    maybe_preempt(m->curg);
  }
}

}  // namespace

void chan_send_to_waiter(ChanCore* c, Waiter* w, void* src) noexcept {
  c->ops->to_result(w->elem, src);
  w->success = true;
}

void chan_recv_from_waiter(ChanCore* c, Waiter* w, void* dst) noexcept {
  if (c->cap == 0) {
    c->ops->to_result(dst, w->elem);
  } else {
    // The buffer is full (a sender waits): take its head, and put the
    // sender's value in the slot just freed, which becomes the tail.
    unsigned char* slot = chan_slot(c, c->recvx);
    c->ops->to_result(dst, slot);
    c->ops->destroy(slot);
    c->ops->to_slot(slot, w->elem);
    c->recvx = c->recvx + 1 == c->cap ? 0 : c->recvx + 1;
    c->sendx = c->recvx;
  }
  w->success = true;
}

void chan_buffer_put(ChanCore* c, void* src) noexcept {
  c->ops->to_slot(chan_slot(c, c->sendx), src);
  c->sendx = c->sendx + 1 == c->cap ? 0 : c->sendx + 1;
  ++c->count;
}

void chan_buffer_take(ChanCore* c, void* dst) noexcept {
  unsigned char* slot = chan_slot(c, c->recvx);
  c->ops->to_result(dst, slot);
  c->ops->destroy(slot);
  c->recvx = c->recvx + 1 == c->cap ? 0 : c->recvx + 1;
  --c->count;
}

ChanResult chan_send(ChanCore* c, void* src, bool block) {
  if (c == nullptr) {
    if (!block) return ChanResult::kWouldBlock;
    block_forever(WaitReason::kForever);
  }
  entry_checks(block);
  chan_lock(c);
  if (c->closed) {
    chan_unlock(c);
    return ChanResult::kClosed;
  }
  if (Waiter* w = waitq_dequeue(c->recvq)) {
    chan_send_to_waiter(c, w, src);
    G* g = w->g;
    chan_unlock(c);
    ready(g);
    return ChanResult::kOk;
  }
  if (c->count < c->cap) {
    chan_buffer_put(c, src);
    chan_unlock(c);
    return ChanResult::kOk;
  }
  if (!block) {
    chan_unlock(c);
    return ChanResult::kWouldBlock;
  }
  return park_on(c, c->sendq, src, WaitReason::kChanSend);
}

ChanResult chan_recv(ChanCore* c, void* dst, bool block) {
  if (c == nullptr) {
    if (!block) return ChanResult::kWouldBlock;
    block_forever(WaitReason::kChanReceiveNilChan);
  }
  entry_checks(block);
  chan_lock(c);
  if (Waiter* w = waitq_dequeue(c->sendq)) {
    chan_recv_from_waiter(c, w, dst);
    G* g = w->g;
    chan_unlock(c);
    ready(g);
    return ChanResult::kOk;
  }
  if (c->count > 0) {
    chan_buffer_take(c, dst);
    chan_unlock(c);
    return ChanResult::kOk;
  }
  if (c->closed) {
    chan_unlock(c);
    return ChanResult::kClosed;
  }
  if (!block) {
    chan_unlock(c);
    return ChanResult::kWouldBlock;
  }
  return park_on(c, c->recvq, dst, WaitReason::kChanReceive);
}

void chan_close(ChanCore* c) {
  if (c == nullptr) throw std::logic_error("goro::Chan::close: close of nil channel");
  entry_checks(false);
  chan_lock(c);
  if (c->closed) {
    chan_unlock(c);
    throw std::logic_error("goro::Chan::close: close of closed channel");
  }
  c->closed = true;
  // Collect every waiter (linked through `next`, which is ours once it is
  // dequeued), then ready them with the lock released.
  Waiter* wake = nullptr;
  while (Waiter* w = waitq_dequeue(c->recvq)) {
    w->success = false;
    w->next = wake;
    wake = w;
  }
  while (Waiter* w = waitq_dequeue(c->sendq)) {
    w->success = false;
    w->next = wake;
    wake = w;
  }
  chan_unlock(c);
  while (wake != nullptr) {
    Waiter* w = wake;
    wake = w->next;  // read before ready(): after it, w may be gone
    ready(w->g);
  }
}

std::size_t chan_len(ChanCore* c) {
  WordLock lock(c->lock_word);
  return c->count;
}

bool chan_is_closed(ChanCore* c) {
  WordLock lock(c->lock_word);
  return c->closed;
}

}  // namespace goro::detail
