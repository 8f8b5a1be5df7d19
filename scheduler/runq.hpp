// The per-P local run queue: Go's runq/runnext (runtime/proc.go; docs/DESIGN.md "Run queues").
//
// A 256-slot ring of G pointers with free-running 32-bit head and tail
// counters. The owning P pushes at the tail and pops at the head; thieves on
// other Ms take half the ring from the head with one CAS. `runnext` is a
// one-slot fast lane for the goroutine just readied by the running one (a
// channel partner, a new spawn): it runs next, sharing the time slice.
//
// Invariants:
// - Only the owner writes `tail_` (plain store-release; others load-acquire).
// - `head_` moves forward only, by CAS, by the owner or a thief.
// - Only the owner stores a non-null G into `runnext_`; anyone may CAS it
//   to null (Go: "while other P's may atomically CAS this to zero, only the
//   owner P can CAS it to a valid G").
// - Slots are std::atomic<G*> with relaxed access: a thief reads slots
//   [h, h+n) before its CAS on head; the owner may concurrently refill a slot
//   that the thief's CAS will then fail to claim, so the read may be stale
//   but must not be a data race. The acquire load of tail_ (pairs with the
//   owner's release store) makes the G's contents visible to the thief, and
//   the CAS on head_ decides who owns each slot.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "scheduler/debug.hpp"
#include "scheduler/g.hpp"

namespace goro::detail {

struct G;

// An intrusive FIFO of Gs linked through G::schedlink (global queue, batches).
struct GQueue {
  G* head = nullptr;
  G* tail = nullptr;
  std::int64_t size = 0;
  bool empty() const { return head == nullptr; }
  void push_back(G* g);
  void push_front(G* g);
  void append(GQueue& other);
  G* pop_front();
  // Keeps the first n Gs and returns the rest as a queue.
  GQueue split_after(std::int64_t n);
};

// A FIFO of G pointers in a growable array ring: the global run queue. Unlike
// GQueue it never touches the Gs it holds, so moving a batch from one P to
// another through it costs no cache misses on G structs last written by
// another core (a GQueue pop chases schedlink through each G in turn: with
// Gs spawned on one core and run on another that was a quarter of the spawn
// benchmark). Not thread-safe: the owner (sched.lock) serialises.
class GFifo {
 public:
  std::int64_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  void push_back(G* g) {
    if (n_ == static_cast<std::int64_t>(buf_.size())) grow();
    buf_[(head_ + static_cast<std::size_t>(n_)) & (buf_.size() - 1)] = g;
    ++n_;
  }
  void push_front(G* g) {
    if (n_ == static_cast<std::int64_t>(buf_.size())) grow();
    head_ = (head_ - 1) & (buf_.size() - 1);
    buf_[head_] = g;
    ++n_;
  }
  G* pop_front() {
    if (n_ == 0) return nullptr;
    G* g = buf_[head_];
    head_ = (head_ + 1) & (buf_.size() - 1);
    --n_;
    return g;
  }
  void append(GQueue& q);  // empties q (walks it: its Gs are touched once)

 private:
  void grow();
  std::vector<G*> buf_;  // capacity: 0 or a power of two
  std::size_t head_ = 0;
  std::int64_t n_ = 0;
};

class RunQueue {
 public:
  static constexpr std::uint32_t kSize = 256;
  static_assert((kSize & (kSize - 1)) == 0, "free-running counters wrap: a power of two");
  // What a put on a full ring moves out (Go's runqputslow): half the ring
  // plus the G being put, oldest first, for the global queue.
  struct Spill {
    std::uint32_t n = 0;
    G* g[kSize / 2 + 1];
  };

  // Owner only. Puts g in runnext (next=true; the displaced G goes to the
  // tail) or at the tail. On a full ring, moves half of it plus g to `spill`
  // (Go's runqputslow: 129 Gs) and returns true; the caller must hand the
  // spill to the global queue.
  bool put(G* g, bool next, Spill* spill) {
    return !try_put(g, next) && put_general(g, next, spill);
  }
  // Owner only. put()'s inline fast path, which needs no Spill (a 1 KiB
  // frame, once reserved on every yield): fills an empty runnext, or the tail
  // when the ring has room. Returns false, having done nothing, otherwise.
  bool try_put(G* g, bool next) {
    // When runnext is empty no thief can touch it (thieves only CAS a
    // non-null value they read), so a plain release store fills it; a locked
    // exchange here was 10% of a channel ping-pong, where runnext is always
    // empty. Otherwise put_general exchanges.
    if (next) {
      if (runnext_.load(std::memory_order_relaxed) != nullptr) return false;
      runnext_.store(g, std::memory_order_release);
      return true;
    }
    // The tail, when there is room (a yield): as in put_general.
    std::uint32_t h = head_.load(std::memory_order_acquire);
    std::uint32_t t = tail_.load(std::memory_order_relaxed);
    if (__builtin_expect(t - h >= kSize, 0)) return false;
    slot(t).store(g, std::memory_order_relaxed);
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }
  // Owner only. The rest of put() (runnext occupied, or the ring full).
  bool put_general(G* g, bool next, Spill* spill);
  // Owner only. runnext first, then the head of the ring. *inherit is set when
  // the G came from runnext (it shares the current time slice). Inline: it
  // runs on every switch.
  G* get(bool* inherit) {
    // runnext first. A failed CAS means a thief took it; do not retry (only the
    // owner sets it non-null, so it cannot have become non-null again).
    G* next = runnext_.load(std::memory_order_relaxed);
    if (next != nullptr &&
        runnext_.compare_exchange_strong(next, nullptr, std::memory_order_acq_rel)) {
      *inherit = true;
      return next;
    }
    *inherit = false;
    for (;;) {
      std::uint32_t h = head_.load(std::memory_order_acquire);
      std::uint32_t t = tail_.load(std::memory_order_relaxed);
      if (h == t) return nullptr;
      G* g = slot(h).load(std::memory_order_relaxed);
      if (head_.compare_exchange_weak(h, h + 1, std::memory_order_release,
                                      std::memory_order_relaxed)) {
        // Start loading the G that runs after this one: Gs queued behind a
        // burst of spawns are cold by the time they run, and the first touch
        // of a cold G was most of a switch (skynet); and what it reads first
        // (prefetch_queued). A hint only: a thief may take it first.
        if (h + 1 != t) {
          prefetch_queued(slot(h + 1).load(std::memory_order_relaxed),
                          h + 2 != t ? slot(h + 2).load(std::memory_order_relaxed) : nullptr);
        }
        // A claimed slot holds what the owner's put stored there, never null;
        // telling the compiler saves the caller's null test on every switch.
        GORO_CHECK(g != nullptr, "runq: a claimed slot held no goroutine");
        if (g == nullptr) __builtin_unreachable();
        return g;
      }
    }
  }

  // Owner only. Puts as many of q's Gs as fit at the tail; the rest stay in q.
  void put_batch(GQueue& q);
  // Owner only. Puts gs[0..n) at the tail as far as they fit; returns how many.
  std::uint32_t put_array(G* const* gs, std::uint32_t n);
  // Thief: moves the larger half of victim's ring into this (empty) ring and
  // returns one G to run now, or nullptr. Takes victim's runnext only when
  // steal_runnext and the ring is empty (after a 3 µs grace if victim_running).
  G* steal_from(RunQueue& victim, bool steal_runnext, bool victim_running);
  // Owner only: empties the queue into q (P destruction, shutdown).
  void drain_to(GQueue& q);

  // Any thread; a racy snapshot (may be stale by the time it returns).
  bool empty() const;
  std::uint32_t size() const;

 private:
  std::uint32_t grab(RunQueue& victim, std::uint32_t dst_tail, bool steal_runnext,
                     bool victim_running);
  bool put_slow(G* g, std::uint32_t h, std::uint32_t t, Spill* spill);

  // Slot i of the ring (i is a free-running counter). Indexing through a
  // pointer lets GCC fold the array's offset into the address (with
  // slots_[i % kSize] it added it to the index, one more instruction on
  // every put and get).
  std::atomic<G*>& slot(std::uint32_t i) {
    std::atomic<G*>* s = &slots_[0];
    return s[std::size_t{i & (kSize - 1)}];
  }

  alignas(64) std::atomic<std::uint32_t> head_{0};
  alignas(64) std::atomic<std::uint32_t> tail_{0};
  std::atomic<G*> runnext_{nullptr};
  std::atomic<G*> slots_[kSize] = {};
};

}  // namespace goro::detail
