// Poll descriptors: waiting for readiness, deadlines and eviction (Go's
// runtime/netpoll.go; docs/DESIGN.md "The netpoller"). The backend-neutral half
// of netpoll; epoll_poller.cpp is the Linux backend.
//
// ## The nouns
// A PollDesc per registered fd, with one wait slot per direction (rg, wg).
// A slot holds kSlotNil (nothing), kSlotReady (an edge arrived that nobody
// has consumed), kSlotWait (a goroutine is on its way to parking) or the
// parked G itself. Edge-triggered registration means the kernel reports each
// change once; the slot is the memory of that edge until a reader consumes it.
//
// ## Waiting (Go's netpollblock / netpollblockcommit / netpollunblock)
// The waiter CASes nil -> wait (or consumes ready -> nil and returns at once),
// then parks; the park *commit* runs after the goroutine is off its stack and
// CASes wait -> G. Only then can an unblocker see the G and ready it, so it is
// never resumed while still running (detail/park.hpp). If an unblocker got
// there first (wait -> ready or wait -> nil) the commit's CAS fails and the
// park is cancelled. After waking, the waiter swaps the slot back to nil: it
// read `ready` if I/O woke it, `nil` if a deadline or eviction did.
// The unblockers (poller, deadline timer, eviction) never block and never
// run the G themselves: the poller hands Gs to the scheduler in a batch, the
// others call ready().
// Lost-wakeup argument: the waiter stores `wait` then reads `info`; eviction
// and deadlines store `info` then read the slot. All four are seq_cst, so at
// least one side sees the other's store: either the waiter sees the error and
// does not park, or the unblocker sees `wait`/G and wakes it.
//
// ## Deadlines (Go's pollSetDeadline / netpolldeadlineimpl)
// Each direction has an intrusive Timer. A timer's callback carries the seq it
// was armed with; resetting, evicting or reusing the descriptor bumps rseq /
// wseq under `lock`, so a callback already in flight finds a stale seq and
// does nothing. The callback sets rd/wd = -1 (expired), republishes `info`
// and unblocks the waiter with no I/O. Unlike Go's runtime timers, goro's
// timer_stop waits for a running callback to return, and the callback takes
// `lock`; so `lock` is never held across timer_stop/timer_start. A second
// mutex, timer_lock, serialises the timer operations themselves.
//
// ## Moving a deadline later (the lazy extension)
// An HTTP connection moves two deadlines a request, each later than the
// last (the idle timeout at rest, the write timeout at the head; on its
// grid, often to the value it has: "Setting a deadline again"): two timer
// resets, four mutexes and two heap operations, a tenth of a keep-alive
// request's instructions. So a deadline moved to a time at or after the
// moment its armed timer fires is only recorded: with no lock, rd is CASed
// from its positive value to the new one, and the timer stays as it is
// (rfire, published once the timer is armed, says when it fires). When the
// timer fires, its callback finds rd still in the future: it does not
// expire it, it marks the direction r_rearm and wakes the waiter, which
// arms the timer for rd and waits again (poll_wait; once per timeout period
// at most). Nobody waiting: the next wait re-arms, and poll_check counts
// the deadline as expired if it has passed meanwhile. The races: the
// extension's CAS and the callback's CAS to -1 decide who wins; the
// extension re-reads rfire after its CAS and takes the slow path if the
// timer fired or was reset meanwhile (the slow path clears rfire before it
// touches rd); a waiter reads r_rearm after publishing itself, the callback
// sets it before reading the slot (the Dekker pattern above). Moving a
// deadline earlier than the armed timer, clearing one, or one already past
// takes the slow path.
//
// Rejected: Go's combined read+write timer when rd == wd. It saves a heap
// entry for Go's SetDeadline, but costs a third code path; two timers are
// cheap with eager deletion.
//
// ## Setting a deadline again
// The HTTP server puts a connection's idle and write deadlines on a grid
// (framework/http/server/conn.cpp "Deadlines on a grid"), so a keep-alive
// connection's next request often sets the very deadline it has. That is a
// no-op the caller can see without a reference on the descriptor, a CAS or a
// lock (poll_deadline_unchanged): rfire is read first and again last, as by
// the extension, so rd was `when` at an instant its timer was armed at or
// before it, which is the state setting `when` leaves. A timer that fired
// or was reset in between clears rfire first (a callback or the slow path),
// and the second read sends the caller to poll_set_deadline.
//
// ## Warming a batch
// Under load the poller readies up to a batch of goroutines from one
// epoll_wait, each for a connection that rested while hundreds of others
// were served, so each one's state is out of the cache: the descriptor,
// the G, and what its first instructions touch (framework/http's registry
// entry and NetFd). Read in turn, every one of those lines is a stall of
// its own. The poller instead requests them early, for the whole batch:
// a first pass prefetches every event's descriptor; the second, as it
// readies each read waiter, prefetches its G's lines and the two
// addresses its reader named (poll_set_read_warm: a released HTTP
// connection names its NetFd and its registry entry), so the misses
// overlap and the goroutines find their lines in the cache when they run.
// The batch's later goroutines run long after these requests, and the
// kernel's work for the ones before them may have evicted the lines again:
// the poller also names them in the G (G::wake_hint), and the run queue
// requests them again one G ahead (scheduler/g.hpp prefetch_queued).
// Hints only: a prefetch reads nothing the program sees, and a stale
// address (a reader that named nothing since, a closed connection) costs a
// wasted fetch. Measured at 1,000 connections (docs/DESIGN.md "Warming a
// batch").
//
// ## The cache (Go's pollCache)
// Descriptors come from blocks of kBlockDescs and return to a free list; they
// are never freed, so an event or timer holding a stale pointer always reads
// a PollDesc and can check its incarnation (fdseq, rseq, wseq).
#include "netpoll/poll_desc.hpp"

#include <vector>

#include "goro/detail/park.hpp"
#include "goro/result.hpp"
#include "netpoll/netpoll.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/g.hpp"
#include "scheduler/runq.hpp"

namespace goro::detail {

// The goro::run the timer heaps belong to; bumped by netpoll_create.
extern std::atomic<std::uint64_t> g_netpoll_epoch;

namespace {

// Goroutines parked in a slot (Go's netpollWaiters). Incremented by the park
// commit before it publishes the G (so the count never dips below the truth),
// decremented by whoever takes a G out of a slot.
std::atomic<std::int64_t> g_waiters{0};

constexpr int kBlockDescs = 64;
constexpr int kTagShift = 48;
constexpr std::uint64_t kPtrMask = (std::uint64_t{1} << kTagShift) - 1;

struct PollCache {
  std::mutex mu;
  PollDesc* free = nullptr;       // (mu)
  std::vector<PollDesc*> blocks;  // (mu) kept so the blocks stay reachable
};

PollCache& cache() {
  // Leaked on purpose: descriptors must outlive every static destructor.
  static PollCache* c = new PollCache;
  return *c;
}

std::atomic<std::uintptr_t>& slot_of(PollDesc* pd, PollMode mode) {
  return mode == PollMode::kRead ? pd->rg : pd->wg;
}

// Go's netpollunblock. Returns the parked G, if any, for the caller to ready.
G* unblock(PollDesc* pd, PollMode mode, bool ioready) {
  auto& slot = slot_of(pd, mode);
  std::uintptr_t old = slot.load();
  for (;;) {
    if (old == kSlotReady) return nullptr;
    if (old == kSlotNil && !ioready) return nullptr;
    const std::uintptr_t next = ioready ? kSlotReady : kSlotNil;
    if (slot.compare_exchange_weak(old, next)) {
      if (old == kSlotNil || old == kSlotWait) return nullptr;
      return reinterpret_cast<G*>(old);  // NOLINT(performance-no-int-to-ptr): the slot holds a G*
    }
  }
}

void ready_waiter(G* g) {
  if (g == nullptr) return;
  g_waiters.fetch_sub(1);
  ready(g);
}

bool commit_wait(G* g, void* arg) {
  auto* slot = static_cast<std::atomic<std::uintptr_t>*>(arg);
  g_waiters.fetch_add(1);
  std::uintptr_t expected = kSlotWait;
  if (slot->compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(g))) return true;
  g_waiters.fetch_sub(1);  // an unblocker came first: do not park
  return false;
}

std::atomic<std::int64_t>& deadline_of(PollDesc* pd, PollMode mode) {
  return mode == PollMode::kRead ? pd->rd : pd->wd;
}
std::atomic<std::int64_t>& fire_of(PollDesc* pd, PollMode mode) {
  return mode == PollMode::kRead ? pd->rfire : pd->wfire;
}
std::atomic<bool>& rearm_of(PollDesc* pd, PollMode mode) {
  return mode == PollMode::kRead ? pd->r_rearm : pd->w_rearm;
}

// Go's netpollblock: true if an I/O edge was consumed.
bool block(PollDesc* pd, PollMode mode) {
  auto& slot = slot_of(pd, mode);
  std::uintptr_t old = slot.load();
  for (;;) {
    if (old == kSlotReady) {
      if (slot.compare_exchange_weak(old, kSlotNil)) return true;
    } else if (old == kSlotNil) {
      if (slot.compare_exchange_weak(old, kSlotWait)) break;
    } else {
      fatal("netpoll: double wait (two goroutines waiting on one fd in one direction)");
    }
  }
  // Re-check after publishing `wait`: the Dekker half of the essay. A
  // deadline to re-arm ("Moving a deadline later") does not park either.
  if (!poll_check(pd, mode) && !rearm_of(pd, mode).load())
    park(WaitReason::kIOWait, commit_wait, &slot);
  old = slot.exchange(kSlotNil);
  GORO_CHECK(old <= kSlotWait, "netpoll: corrupted wait slot");
  return old == kSlotReady;
}

void deadline_fired(PollDesc* pd, std::uint64_t seq, PollMode mode) {
  G* g = nullptr;
  {
    std::lock_guard<std::mutex> lock(pd->lock);
    const bool read = mode == PollMode::kRead;
    std::uint64_t& dseq = read ? pd->rseq : pd->wseq;
    if (seq != dseq) return;  // reset, evicted or reused since armed
    ++dseq;                   // this arming is spent
    fire_of(pd, mode).store(0);
    std::atomic<std::int64_t>& d = deadline_of(pd, mode);
    std::int64_t cur = d.load();
    for (;;) {
      if (cur <= 0) return;  // cleared or expired under the lock: nothing armed it
      if (cur > nanotime()) {
        // Moved later without the timer (the lazy extension): re-armed by
        // the waiter this wakes, or by the next wait.
        rearm_of(pd, mode).store(true);
        g = unblock(pd, mode, false);
        break;
      }
      if (d.compare_exchange_weak(cur, -1)) {
        pd->publish_info_locked();
        g = unblock(pd, mode, false);
        break;
      }
    }
  }
  ready_waiter(g);
}

void read_deadline_fired(void* arg, std::uint64_t seq) {
  deadline_fired(static_cast<PollDesc*>(arg), seq, PollMode::kRead);
}
void write_deadline_fired(void* arg, std::uint64_t seq) {
  deadline_fired(static_cast<PollDesc*>(arg), seq, PollMode::kWrite);
}

// timer_lock held. Timers armed by an earlier goro::run point into heaps that
// no longer exist: forget them rather than stop them.
void forget_stale_timers(PollDesc* pd) {
  const std::uint64_t epoch = g_netpoll_epoch.load(std::memory_order_relaxed);
  if (pd->timer_epoch == epoch) return;
  for (Timer* t : {&pd->rt, &pd->wt}) {
    t->heap.store(nullptr, std::memory_order_relaxed);
    t->running.store(false, std::memory_order_relaxed);
    t->index = -1;
  }
  pd->rt_armed = pd->wt_armed = false;
  pd->rfire.store(0);
  pd->wfire.store(0);
  pd->timer_epoch = epoch;
}

// timer_lock held, `lock` not held. Stops `t` (its callback, if running, sees
// a stale seq) and re-arms it for `when` > 0.
void rearm(PollDesc* pd, Timer* t, bool* armed, std::int64_t when, std::uint64_t seq) {
  if (*armed) timer_stop(t);
  *armed = false;
  if (when <= 0) return;
  t->when = when;
  t->seq = seq;
  t->arg = pd;
  timer_start(t);
  *armed = true;
}

}  // namespace

std::uint32_t PollDesc::publish_info_locked() noexcept {
  std::uint32_t bits = 0;
  if (closing) bits |= kInfoClosing;
  if (rd.load() < 0) bits |= kInfoReadExpired;
  if (wd.load() < 0) bits |= kInfoWriteExpired;
  info.store(bits);
  return bits;
}

std::uint64_t poll_tag(const PollDesc* pd, std::uint32_t seq) noexcept {
  return reinterpret_cast<std::uintptr_t>(pd) | (std::uint64_t{seq & 0xffffu} << kTagShift);
}

PollDesc* poll_cache_alloc() {
  PollCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.free == nullptr) {
    auto* block = new PollDesc[kBlockDescs];
    c.blocks.push_back(block);
    for (int i = 0; i < kBlockDescs; ++i) {
      GORO_CHECK((reinterpret_cast<std::uintptr_t>(&block[i]) & ~kPtrMask) == 0,
                 "netpoll: descriptor address does not fit the event tag");
      block[i].rt.fn = read_deadline_fired;
      block[i].wt.fn = write_deadline_fired;
      block[i].free_link = c.free;
      c.free = &block[i];
    }
  }
  PollDesc* pd = c.free;
  c.free = pd->free_link;
  pd->free_link = nullptr;
  return pd;
}

// ## A new goro::run
// Sockets belong to the run that opened them (netpoll.cpp), but one kept
// open into a later run keeps its deadlines, and the fast paths that trust
// rfire / wfire ("Moving a deadline later", "Setting a deadline again")
// would take a timer armed in the earlier run's heap, gone with it, for an
// armed one: setting the same deadline again, or waiting under one set
// before, would then wait past it, for ever on a socket the new poller
// never reports. So each new run, before its first goroutine, clears every
// descriptor's rfire / wfire (the fast paths then take the slow one, which
// forgets the stale timers) and marks a pending deadline for re-arming, as
// if its timer had fired early: the next wait arms it in the new heap, and
// poll_check counts it expired once it has passed. Nothing else runs then
// (netpoll_create is called before any M starts); the locks are taken
// anyway, as for any write of these fields.
void poll_cache_new_run() {
  PollCache& c = cache();
  std::lock_guard<std::mutex> cl(c.mu);
  for (PollDesc* block : c.blocks) {
    for (int i = 0; i < kBlockDescs; ++i) {
      PollDesc* pd = &block[i];
      std::lock_guard<std::mutex> lock(pd->lock);
      pd->rfire.store(0);
      pd->wfire.store(0);
      if (pd->closing) continue;
      if (pd->rd.load() > 0) pd->r_rearm.store(true);
      if (pd->wd.load() > 0) pd->w_rearm.store(true);
    }
  }
}

void poll_cache_free(PollDesc* pd) {
  {
    // A new incarnation: in-flight events for the old fd are now stale.
    std::lock_guard<std::mutex> lock(pd->lock);
    pd->fdseq.fetch_add(1);
    pd->fd = -1;
  }
  PollCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  pd->free_link = c.free;
  c.free = pd;
}

// Readies `pd` for a fresh fd; returns the event tag to register.
std::uint64_t poll_desc_init(PollDesc* pd, int fd) {
  std::lock_guard<std::mutex> lock(pd->lock);
  GORO_CHECK(pd->rg.load() <= kSlotWait && pd->wg.load() <= kSlotWait,
             "netpoll: goroutine blocked on a free descriptor");
  pd->fd = fd;
  pd->closing = false;
  pd->rd.store(0);
  pd->wd.store(0);
  pd->rfire.store(0);
  pd->wfire.store(0);
  pd->r_rearm.store(false);
  pd->w_rearm.store(false);
  ++pd->rseq;
  ++pd->wseq;
  pd->rg.store(kSlotNil);
  pd->wg.store(kSlotNil);
  pd->hangup.store(false);
  poll_set_read_warm(pd, nullptr, nullptr);
  const std::uint32_t seq = pd->fdseq.fetch_add(1) + 1;
  pd->publish_info_locked();
  return poll_tag(pd, seq);
}

PollStatus poll_check(PollDesc* pd, PollMode mode) {
  const std::uint32_t info = pd->info.load();
  if (info & kInfoClosing) return errc::closed;
  if (mode == PollMode::kRead && (info & kInfoReadExpired)) return errc::timeout;
  if (mode == PollMode::kWrite && (info & kInfoWriteExpired)) return errc::timeout;
  // A deadline moved later whose timer has fired: expired once it passes
  // (until the next wait arms a timer for it).
  if (rearm_of(pd, mode).load()) {
    const std::int64_t d = deadline_of(pd, mode).load();
    if (d != 0 && d <= nanotime()) return errc::timeout;
  }
  return {};
}

namespace {

// Arms a timer for a deadline that was moved later after its timer had
// fired (r_rearm / w_rearm; "Moving a deadline later"). On a goroutine,
// like poll_set_deadline.
void rearm_moved_deadline(PollDesc* pd, PollMode mode) {
  G* g = nullptr;
  {
    std::lock_guard<std::mutex> tl(pd->timer_lock);
    forget_stale_timers(pd);
    std::int64_t d = 0;
    std::uint64_t seq = 0;
    {
      std::lock_guard<std::mutex> lock(pd->lock);
      if (!rearm_of(pd, mode).load() || pd->closing) return;
      rearm_of(pd, mode).store(false);
      fire_of(pd, mode).store(0);
      d = deadline_of(pd, mode).load();
      std::uint64_t& dseq = mode == PollMode::kRead ? pd->rseq : pd->wseq;
      ++dseq;
      seq = dseq;
      if (d > 0 && d <= nanotime()) {  // passed meanwhile: expire it now
        deadline_of(pd, mode).store(-1);
        pd->publish_info_locked();
        g = unblock(pd, mode, false);
        d = 0;
      }
    }
    Timer* t = mode == PollMode::kRead ? &pd->rt : &pd->wt;
    bool* armed = mode == PollMode::kRead ? &pd->rt_armed : &pd->wt_armed;
    rearm(pd, t, armed, d, seq);
    if (d > 0) {
      std::lock_guard<std::mutex> lock(pd->lock);
      if ((mode == PollMode::kRead ? pd->rseq : pd->wseq) == seq) fire_of(pd, mode).store(d);
    }
  }
  ready_waiter(g);
}

}  // namespace

PollStatus poll_wait(PollDesc* pd, PollMode mode) {
  if (auto st = poll_check(pd, mode)) return st;
  if (rearm_of(pd, mode).load()) rearm_moved_deadline(pd, mode);
  while (!block(pd, mode)) {
    if (auto st = poll_check(pd, mode)) return st;
    // A deadline fired and was reset before we ran, or fired before a
    // deadline moved later: not an error; arm that one and wait again.
    if (rearm_of(pd, mode).load()) rearm_moved_deadline(pd, mode);
  }
  return {};
}

void poll_wait_spawned(PollDesc* pd, PollMode mode, G* g) {
  // Go has no counterpart: a goroutine that has never run (late stack
  // binding: no stack yet) is parked in the slot on behalf of the caller, as
  // if it had called poll_wait itself. It has no stack to get off, so it is
  // published at once (no kSlotWait / commit step); from then on any
  // unblocker may ready it, and this function no longer touches it except
  // through a winning CAS. An edge already recorded is left in the slot for
  // the goroutine's own first wait to consume (it reads after a wait, like a
  // woken waiter); a deadline or eviction is reported by its first check.
  if (rearm_of(pd, mode).load()) rearm_moved_deadline(pd, mode);
  auto& slot = slot_of(pd, mode);
  const auto gword = reinterpret_cast<std::uintptr_t>(g);
  std::uintptr_t old = slot.load();
  for (;;) {
    if (old == kSlotReady) {
      ready(g);  // readable already: run it now, the edge stays for it
      return;
    }
    if (old != kSlotNil) {
      fatal("netpoll: double wait (two goroutines waiting on one fd in one direction)");
    }
    g_waiters.fetch_add(1);  // before the G is visible, as commit_wait
    if (slot.compare_exchange_weak(old, gword)) break;
    g_waiters.fetch_sub(1);
  }
  // The Dekker half of "Waiting": eviction and deadlines store `info`, then
  // read the slot; we stored the G, now read `info`. If it says the wait
  // would fail (or a deadline wants re-arming), take the G back and run it
  // unless an unblocker took it first.
  if (poll_check(pd, mode) || rearm_of(pd, mode).load()) {
    std::uintptr_t expected = gword;
    if (slot.compare_exchange_strong(expected, kSlotNil)) ready_waiter(g);
  }
}

void poll_prepare(PollDesc* pd, PollMode mode) {
  auto& slot = slot_of(pd, mode);
  // relaxed: only this goroutine turns `ready` into anything but `ready`
  // while it is not waiting, so a stale read just skips a CAS that would fail.
  std::uintptr_t old = slot.load(std::memory_order_relaxed);
  if (old == kSlotReady) slot.compare_exchange_strong(old, kSlotNil);
}

bool poll_hangup_seen(PollDesc* pd) {
  return pd->hangup.load();
}

namespace {

// The lazy extension ("Moving a deadline later"): true if `when` was
// recorded for the one direction `mode` without touching the timer.
bool extend_deadline(PollDesc* pd, std::int64_t when, PollMode mode) {
  if (when <= 0 || (mode != PollMode::kRead && mode != PollMode::kWrite)) return false;
  std::atomic<std::int64_t>& fire = fire_of(pd, mode);
  const std::int64_t f = fire.load();
  if (f == 0 || when < f) return false;  // no armed timer, or it would fire too late
  std::int64_t cur = deadline_of(pd, mode).load();
  if (cur <= 0 || !deadline_of(pd, mode).compare_exchange_strong(cur, when)) return false;
  // Still armed for f (<= when): its callback will see the new deadline. If
  // the timer fired or was reset since f was read, the slow path makes sure.
  return fire.load() == f;
}

}  // namespace

bool poll_deadline_unchanged(PollDesc* pd, std::int64_t when, PollMode mode) {
  if (when <= 0 || (mode != PollMode::kRead && mode != PollMode::kWrite)) return false;
  std::atomic<std::int64_t>& fire = fire_of(pd, mode);
  const std::int64_t f = fire.load();
  if (f == 0 || when < f) return false;
  return deadline_of(pd, mode).load() == when && fire.load() == f;
}

void poll_set_deadline(PollDesc* pd, std::int64_t when, PollMode mode) {
  if (extend_deadline(pd, when, mode)) return;
  const bool set_r = (static_cast<int>(mode) & static_cast<int>(PollMode::kRead)) != 0;
  const bool set_w = (static_cast<int>(mode) & static_cast<int>(PollMode::kWrite)) != 0;
  G* rg = nullptr;
  G* wg = nullptr;
  {
    std::lock_guard<std::mutex> tl(pd->timer_lock);
    forget_stale_timers(pd);
    std::int64_t rd = 0, wd = 0;
    std::uint64_t rseq = 0, wseq = 0;
    {
      std::lock_guard<std::mutex> lock(pd->lock);
      if (pd->closing) return;
      const std::int64_t d = (when != 0 && when <= nanotime()) ? -1 : when;
      // Cleared before the deadline changes: an extension racing with this
      // sees it and comes here too (it re-reads rfire after its CAS).
      if (set_r) {
        pd->rfire.store(0);
        pd->r_rearm.store(false);
        pd->rd.store(d);
        rseq = ++pd->rseq;
        rd = d;
      }
      if (set_w) {
        pd->wfire.store(0);
        pd->w_rearm.store(false);
        pd->wd.store(d);
        wseq = ++pd->wseq;
        wd = d;
      }
      pd->publish_info_locked();
      if (set_r && d < 0) rg = unblock(pd, PollMode::kRead, false);
      if (set_w && d < 0) wg = unblock(pd, PollMode::kWrite, false);
    }
    if (set_r) rearm(pd, &pd->rt, &pd->rt_armed, rd, rseq);
    if (set_w) rearm(pd, &pd->wt, &pd->wt_armed, wd, wseq);
    if (rd > 0 || wd > 0) {
      // Published only if no callback or reset spent the arming meanwhile.
      std::lock_guard<std::mutex> lock(pd->lock);
      if (rd > 0 && pd->rseq == rseq) pd->rfire.store(rd);
      if (wd > 0 && pd->wseq == wseq) pd->wfire.store(wd);
    }
  }
  ready_waiter(rg);
  ready_waiter(wg);
}

void poll_evict(PollDesc* pd) {
  G* rg = nullptr;
  G* wg = nullptr;
  {
    std::lock_guard<std::mutex> tl(pd->timer_lock);
    forget_stale_timers(pd);
    {
      std::lock_guard<std::mutex> lock(pd->lock);
      if (pd->closing) return;
      pd->closing = true;
      ++pd->rseq;
      ++pd->wseq;
      pd->rfire.store(0);
      pd->wfire.store(0);
      pd->r_rearm.store(false);
      pd->w_rearm.store(false);
      pd->publish_info_locked();
      rg = unblock(pd, PollMode::kRead, false);
      wg = unblock(pd, PollMode::kWrite, false);
    }
    rearm(pd, &pd->rt, &pd->rt_armed, 0, 0);
    rearm(pd, &pd->wt, &pd->wt_armed, 0, 0);
  }
  ready_waiter(rg);
  ready_waiter(wg);
}

void poll_note_edge(PollDesc* pd, PollMode mode) {
  ready_waiter(unblock(pd, mode, true));
}

namespace {

// "Warming a batch": the lines a readied reader touches first.
void warm_reader(PollDesc* pd, G* g) {
  prefetch_for_resume(g);
  const void* a = pd->read_warm[0].load(std::memory_order_relaxed);
  const void* b = pd->read_warm[1].load(std::memory_order_relaxed);
  prefetch32(a);
  prefetch32(b);
  // For the run queue's request, one G ahead (scheduler/g.hpp
  // prefetch_queued): poll_check reads the descriptor's first line again.
  set_wake_hints(g, pd, a, b);
}

}  // namespace

void poll_set_read_warm(PollDesc* pd, const void* a, const void* b) noexcept {
  pd->read_warm[0].store(a, std::memory_order_relaxed);
  pd->read_warm[1].store(b, std::memory_order_relaxed);
}

void poll_prefetch_tag(std::uint64_t tag) noexcept {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the epoll tag is the PollDesc's address
  const auto* pd = reinterpret_cast<const PollDesc*>(static_cast<std::uintptr_t>(tag & kPtrMask));
  __builtin_prefetch(pd, 1);  // the event's line: fdseq, hangup, rg (CASed)
  __builtin_prefetch(&pd->read_warm);
}

int poll_ready_from_event(std::uint64_t tag, bool readable, bool writable, bool hangup,
                          GQueue& out) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the epoll tag is the PollDesc's address
  auto* pd = reinterpret_cast<PollDesc*>(static_cast<std::uintptr_t>(tag & kPtrMask));
  // acquire pairs with nothing in particular: a stale tag is dropped, and a
  // tag that matches an incarnation being closed right now at worst readies
  // its waiter spuriously, which retries its syscall (Go accepts the same).
  if ((pd->fdseq.load(std::memory_order_acquire) & 0xffffu) != (tag >> kTagShift)) return 0;
  // seq_cst store before the slot CAS below: see PollDesc::hangup.
  if (hangup && !pd->hangup.load(std::memory_order_relaxed)) pd->hangup.store(true);
  int n = 0;
  if (readable) {
    if (G* g = unblock(pd, PollMode::kRead, true)) {
      warm_reader(pd, g);
      out.push_back(g);
      ++n;
    }
  }
  if (writable) {
    if (G* g = unblock(pd, PollMode::kWrite, true)) {
      out.push_back(g);
      ++n;
    }
  }
  return n;
}

bool poll_has_waiters() noexcept {
  return g_waiters.load(std::memory_order_relaxed) > 0;
}

void poll_waiters_sub(std::int64_t n) noexcept {
  if (n != 0) g_waiters.fetch_sub(n);
}

}  // namespace goro::detail
