// PollDesc: the per-fd record the poller and the I/O layer share (Go's
// pollDesc). See poll_desc.cpp for the protocol essay.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "goro/detail/timer.hpp"

namespace goro::detail {

struct G;

// A wait slot (Go's pd.rg / pd.wg) holds one of these or a parked G*.
inline constexpr std::uintptr_t kSlotNil = 0;    // nothing happened, nobody waits
inline constexpr std::uintptr_t kSlotReady = 1;  // an edge arrived, nobody consumed it
inline constexpr std::uintptr_t kSlotWait = 2;   // a G is about to park (not yet off its stack)

// Bits of PollDesc::info, the lock-free summary of the lock-guarded state
// (Go's atomicInfo): a waiter reads it after publishing itself in a slot.
inline constexpr std::uint32_t kInfoClosing = 1u << 0;
inline constexpr std::uint32_t kInfoReadExpired = 1u << 1;
inline constexpr std::uint32_t kInfoWriteExpired = 1u << 2;

// Layout: a keep-alive request touches only the first cache line (the
// readiness event: fdseq, hangup, rg; the read's check: info, r_rearm; a
// deadline set again to its value: rd, rfire), so a connection resting
// among a thousand others costs its next request one miss here, not three
// (callgrind's cache simulation, 1,000 connections, an L2-sized last
// level: 2.1 misses a request in this struct before). The poller also reads
// read_warm, in the second line, for each read waiter it readies; it
// requests both lines together in its first pass over a batch ("Warming a
// batch" in poll_desc.cpp), so the two arrive as one wait.
struct alignas(64) PollDesc {
  // Type-stable: PollDescs come from blocks that are never freed (see "The
  // cache" in poll_desc.cpp), so a stale pointer from an in-flight event or
  // timer always points at a PollDesc, and `fdseq` / `rseq` / `wseq` tell
  // whether it is still the same incarnation.

  // Wait slots: kSlotNil / kSlotReady / kSlotWait / G*. Written by CAS from
  // the waiter, the poller, deadline timers and eviction; seq_cst throughout
  // because each writer then reads `info` (or each reader of `info` then
  // writes the slot): a Dekker pattern, see "Waiting" in poll_desc.cpp.
  std::atomic<std::uintptr_t> rg{kSlotNil};
  std::atomic<std::uintptr_t> wg{kSlotNil};
  // The deadlines: 0 none, -1 expired, else nanotime(). Written under
  // `lock`, except that the lazy extension ("Moving a deadline later") CASes
  // a positive value to a later one without it; the timer callback, under
  // `lock`, CASes it to -1, so exactly one of the two wins.
  std::atomic<std::int64_t> rd{0};
  std::atomic<std::int64_t> wd{0};
  // When the armed deadline timer of each direction fires, if it may carry a
  // lazy extension; 0 otherwise. Invariant: rfire != 0 implies rt is armed
  // for rfire with seq == rseq, and 0 < rfire <= rd. Set under `lock` once
  // the timer is armed; cleared under `lock` before rd or the timer change
  // and by the callback. Read without the lock by the extension.
  std::atomic<std::int64_t> rfire{0};
  std::atomic<std::int64_t> wfire{0};
  // Incarnation tag, bumped at open and at close; its low 16 bits ride in the
  // epoll cookie so events for a previous fd are dropped (Go #59545). Written
  // under `lock`; read by the poller without it.
  std::atomic<std::uint32_t> fdseq{0};
  // Summary of closing / rd / wd (kInfo* bits); written under `lock`.
  std::atomic<std::uint32_t> info{0};
  // The poller saw EPOLLRDHUP/HUP/ERR for this incarnation: the peer shut
  // down or the connection failed, so a short read no longer means the next
  // read would block (the end of stream or the error is still to be read).
  // Set by the poller before it marks the slot ready (so whoever consumes that
  // edge sees it); cleared by poll_desc_init.
  std::atomic<bool> hangup{false};
  // A timer fired before a deadline that had been moved later: rd holds the
  // deadline, no timer is armed for it and it has not expired. The next
  // wait re-arms it (the callback woke the waiter for that, if there was
  // one), and poll_check treats it as expired once it has passed. Written
  // under `lock`; read without it (seq_cst: the waiter reads it after
  // publishing itself in the slot, the callback sets it before reading the
  // slot).
  std::atomic<bool> r_rearm{false};
  std::atomic<bool> w_rearm{false};

  // Free-list link; under the cache lock, only while the descriptor is free.
  PollDesc* free_link = nullptr;
  // Set by poll_open before registration; read-only while open.
  int fd = -1;
  // What the read waiter touches first when readiness wakes it, up to 32
  // bytes at each (poll_set_read_warm; "Warming a batch" in poll_desc.cpp).
  // Written by the descriptor's reader, read by the poller after its CAS on
  // rg won the G; relaxed atomics because a stale or null value costs only a
  // useless prefetch. Cleared by poll_desc_init.
  std::atomic<const void*> read_warm[2] = {nullptr, nullptr};

  // Guards `closing` and the sequence numbers below, and the writes of the
  // deadlines, `fdseq`, `info` and the rearm flags above; never held while
  // parking or calling into the timer heap (deadline callbacks take it; see
  // "Deadlines").
  std::mutex lock;
  bool closing = false;
  std::uint64_t rseq = 0;  // bumped whenever rt's pending callback goes stale
  std::uint64_t wseq = 0;

  // Serialises timer operations (set_deadline, eviction) so the Timer records
  // are only rewritten while stopped. Taken before `lock`, never inside it.
  std::mutex timer_lock;
  Timer rt;                       // read deadline timer (timer_lock)
  Timer wt;                       // write deadline timer (timer_lock)
  std::uint64_t timer_epoch = 0;  // the goro::run that armed rt/wt (timer_lock)
  bool rt_armed = false;          // (timer_lock)
  bool wt_armed = false;          // (timer_lock)

  std::uint32_t publish_info_locked() noexcept;
};

// The cookie carried in the poller's event: pointer plus 16 bits of fdseq.
std::uint64_t poll_tag(const PollDesc* pd, std::uint32_t seq) noexcept;

// The cache (poll_desc.cpp "The cache").
PollDesc* poll_cache_alloc();
void poll_cache_free(PollDesc* pd);
// A new goro::run begins: timers armed by the last one are gone
// (poll_desc.cpp "A new goro::run"). Before the run's first goroutine.
void poll_cache_new_run();
// Readies a descriptor from the cache for `fd`; returns its event tag.
std::uint64_t poll_desc_init(PollDesc* pd, int fd);

}  // namespace goro::detail
