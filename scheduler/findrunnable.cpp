// Finding work, spinning, and parking Ms (Go's findRunnable, stealWork,
// wakep/startm/stopm in Go's runtime/proc.go; docs/DESIGN.md "Finding work").
//
// ## find_runnable: the order of sources
//   1. the P's expired timers (they ready Gs onto this P)
//   2. every 61st schedtick: one G from the global queue (fairness)
//   3. the local run queue: runnext, then the ring
//   4. the global queue, a batch of min(len/maxprocs + 1, 128)
//   5. the poller, non-blocking (one M at a time, and only if nobody blocks in it)
//   6. stealing, if this M may spin: 4 passes over all Ps in a random order
//      (a random start and a stride coprime with the P count visit each P once
//      per pass); the last pass also runs other Ps' expired timers and may take
//      a running P's runnext after a 3 µs grace
//   7. give up the P: recheck the global queue under sched.lock; if the M was
//      spinning, drop spinning and recheck every queue (below)
//   8. block in the poller until the earliest timer (one M holds the poll
//      token), or sleep on the M's futex until startm hands it a P.
//
// ## Spinning and the lost wake-up
// An M is "spinning" while it looks for work without having found any. At
// most half of the busy Ps have a spinner (2*nmspinning < maxprocs - npidle),
// so idle Ms do not all burn CPU. Whoever makes work runnable calls wakep(),
// which starts one spinner only if nobody spins and a P is idle.
// The race: a spinner finds nothing and is about to sleep while a submitter
// publishes work and sees nmspinning != 0 (so starts nobody). Both sides
// therefore follow Go's protocol with a StoreLoad barrier in the middle:
//   submitter: publish work; seq_cst fence; load nmspinning   (wakep)
//   spinner:   nmspinning -= 1 (seq_cst);  seq_cst fence; recheck all queues
// With both fences, at least one side sees the other's store: either the
// submitter sees nmspinning == 0 after the decrement and starts a spinner, or
// the spinner's recheck sees the work. (Release/acquire is not enough: it does
// not order a store before a later load.) The last spinner to find work hands
// the role on (reset_spinning calls wakep), so a burst of work fans out.
// needspinning covers "found work but no idle P": the flag tells an M about
// to give up its P to spin instead (Go #45867). It is set only under
// sched.lock, in the same critical section that found the idle list empty
// (pidleget_spinning_locked), and the M giving up its P reads it under the
// lock before it puts the P on that list: either the setter finds the P, or
// the M sees the flag. wakep once decided "no idle P" from an unlocked read
// of npidle and set the flag outside the lock, and an M could idle its P in
// between: an idle P, queued work and no spinner (issue 16 item 4). An M
// that has already given up its P reads the flag again in stopm, under the
// lock, before it sleeps: when newm cannot create a thread for queued work,
// such an M is the only one left to take it (startm_failed).
// tests/scheduler/model_test.cpp checks this handshake, every interleaving.
#include <algorithm>
#include <numeric>
#include <vector>

#include "scheduler/checkdead.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"

namespace goro::detail {
namespace {

// Steal order (Go's randomOrder): a random start and a stride coprime with
// the P count visit every P exactly once per pass. The count changes with
// live resizes, so instead of Go's per-count table of coprimes the stride is
// a prime larger than AllP::kMax, reduced modulo the count: a prime p > n
// shares no factor with n, so p % n is coprime with n and never 0.
constexpr std::uint32_t kStridePrimes[] = {1031, 1033, 1039, 1049, 1051, 1061, 1063, 1069,
                                           1087, 1091, 1093, 1097, 1103, 1109, 1117, 1123};

// A poll's timeout longer than this may be measured from the coarse clock
// (poll_blocking): a tick or two late is under 1% of it.
constexpr std::int64_t kCoarseDelay = 1'000'000'000;

void become_spinning(M* m) {
  m->spinning = true;
  sched.nmspinning.fetch_add(1, std::memory_order_seq_cst);
  sched.needspinning.store(0, std::memory_order_relaxed);
}

// Global queue get, sched.lock held (Go's globrunqget): the first G to run,
// and up to n-1 more moved onto p's local queue.
G* global_get_locked(P* p, std::int64_t max) {
  std::int64_t size = sched.runq.size();
  if (size == 0) return nullptr;
  std::int64_t n = std::min<std::int64_t>(size, size / sched.gomaxprocs.load() + 1);
  n = std::min<std::int64_t>(n, RunQueue::kSize / 2);
  if (max > 0) n = std::min(n, max);
  G* g = sched.runq.pop_front();
  // Pointers only: the Gs are not touched here (see GFifo).
  G* batch[RunQueue::kSize / 2] = {};
  std::uint32_t nb = 0;
  for (std::int64_t i = 1; i < n; ++i)
    batch[nb++] = sched.runq.pop_front();
  const std::uint32_t placed = p->runq.put_array(batch, nb);
  // put_array only fails to place Gs if the ring is nearly full; give them back.
  for (std::uint32_t i = nb; i > placed; --i)
    sched.runq.push_front(batch[i - 1]);
  sched.publish_runq_size_locked();
  sched.global_takes.fetch_add(1, std::memory_order_relaxed);
  return g;
}

G* global_get(P* p, std::int64_t max) {
  if (sched.runq_size() == 0) return nullptr;
  std::lock_guard<SchedMutex> lock(sched.lock);
  return global_get_locked(p, max);
}

// A G the poller made ready, if any, without blocking (step 5).
G* poll_nonblocking() {
  Poller* poller = sched.poller;
  if (poller == nullptr || !poller->has_waiters()) return nullptr;
  if (sched.lastpoll.load(std::memory_order_relaxed) == 0) return nullptr;  // someone blocks in it
  if (sched.polling_net.exchange(true, std::memory_order_acquire)) return nullptr;
  GQueue q;
  poller->poll(0, q);
  sched.polling_net.store(false, std::memory_order_release);
  G* g = q.pop_front();
  if (g != nullptr) {
    sched.netpoll_wakes.fetch_add(static_cast<std::uint64_t>(q.size) + 1,
                                  std::memory_order_relaxed);
    g->status.store(GStatus::kRunnable, std::memory_order_relaxed);
    inject_glist(q);
  }
  return g;
}

// Step 6. Returns a stolen G, or nullptr; *ran_timers when a victim's timers
// ran (they may have readied Gs onto our queue); *timer_when is the earliest
// pending timer seen.
G* steal_work(M* m, bool* ran_timers, std::int64_t* timer_when) {
  P* self = m->p;
  const auto n = static_cast<std::uint32_t>(sched.allp.size());
  std::int64_t now = nanotime();
  for (int pass = 0; pass < 4; ++pass) {
    const bool last = pass == 3;
    std::uint32_t r = fastrand();
    std::uint32_t pos = r % n;
    std::uint32_t inc = kStridePrimes[(r / n) % std::size(kStridePrimes)] % n;
    for (std::uint32_t i = 0; i < n; ++i, pos = (pos + inc) % n) {
      if (sched.stopping.load(std::memory_order_relaxed)) return nullptr;
      P* victim = sched.allp[static_cast<int>(pos)];  // pos < n <= AllP::kMax
      if (victim == self) continue;
      if (last) {
        std::int64_t due = victim->timers.next_when.load(std::memory_order_relaxed);
        if (due <= now) {
          due = victim->timers.run(now);
          *ran_timers = true;
          bool inherit;
          if (G* g = self->runq.get(&inherit)) return g;
        }
        *timer_when = std::min(*timer_when, due);
      }
      PStatus st = victim->status.load(std::memory_order_relaxed);
      if (st == PStatus::kIdle || st == PStatus::kDead) continue;  // empty queues
      if (G* g = self->runq.steal_from(victim->runq, last, st == PStatus::kRunning)) {
        sched.steals.fetch_add(1, std::memory_order_relaxed);
        sched.stolen.fetch_add(self->runq.size() + 1, std::memory_order_relaxed);
        return g;
      }
    }
  }
  return nullptr;
}

// After dropping the P: is any P's queue non-empty? (Go's checkRunqsNoP)
bool any_runq_nonempty() {
  for (P* p : sched.allp) {
    if (!p->runq.empty()) return true;
  }
  return false;
}

std::int64_t earliest_timer() {
  std::int64_t when = kNever;
  for (P* p : sched.allp)
    when = std::min(when, p->timers.next_when.load(std::memory_order_relaxed));
  return when;
}

void run_all_timers(std::int64_t now) {
  for (P* p : sched.allp) {
    if (p->timers.next_when.load(std::memory_order_relaxed) <= now) p->timers.run(now);
  }
}

// Park the M until startm hands it a P (or shutdown). Go's stopm.
void stopm(M* m) {
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    if (sched.stopping.load(std::memory_order_relaxed)) return;
    if (sched.needspinning.load(std::memory_order_relaxed) == 1 && sched.pidle != nullptr) {
      // Work was found that nobody could take since this M gave up its P
      // (startm_failed: no thread could be created for it): spin instead of
      // sleeping, or the work waits behind a running goroutine while a P and
      // this M sit idle (the essay).
      acquirep(m, pidleget_locked());
      become_spinning(m);
      return;
    }
    m->schedlink = sched.midle;
    sched.midle = m;
    ++sched.nmidle;
    // "all goroutines are asleep": here, not before taking the lock, so the
    // last M to go idle sees every other M idle (checkdead.cpp).
    check_dead_locked();
  }
  sched.m_parks.fetch_add(1, std::memory_order_relaxed);
  m->park.sleep();
  if (m->nextp != nullptr) {
    acquirep(m, m->nextp);
    m->nextp = nullptr;
  }
}

// Blocks in the poller until I/O or `until` (step 8). Returns a G to run, or
// nullptr; on return m may or may not hold a P.
G* poll_blocking(M* m, std::int64_t until, bool was_spinning) {
  Poller* poller = sched.poller;
  sched.poll_until.store(until == kNever ? 0 : until, std::memory_order_relaxed);
  // The clock (coarse_slack): a timeout of more than kCoarseDelay may run
  // from the coarse clock, so it ends up to a tick late (Linux's own timer
  // wheel is later than that for timers this far away); a timer the poll
  // may have waited for, or any other that may be due after it, needs the
  // precise one. A timer that was not in `until` (added during the poll to
  // another P) and fell between the two clocks runs on the next pass of
  // find_runnable, whose poll_until then holds it. The poll token's time
  // (lastpoll) is for sysmon's 10 ms backstop, where a tick is nothing.
  std::int64_t now = coarse_now();
  std::int64_t delay = -1;
  if (until != kNever) {
    if (until - now <= kCoarseDelay) now = nanotime();
    delay = std::max<std::int64_t>(0, until - now);
  }
  GQueue q;
  poller->poll(delay, q);
  // A timer the precise clock found due (delay 0) runs below whatever the
  // coarse clock says: were that clock ever further behind than its slack,
  // find_runnable would skip the timer and this poll would not wait, a
  // spin until the coarse clock caught up.
  const bool due_before = delay == 0;
  now = coarse_now();
  if (due_before || until <= now + coarse_slack()) now = nanotime();
  sched.poll_until.store(0, std::memory_order_relaxed);
  sched.lastpoll.store(now, std::memory_order_release);
  P* p;
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    p = pidleget_locked();
  }
  for (G* g = q.head; g != nullptr; g = g->schedlink) {
    g->status.store(GStatus::kRunnable, std::memory_order_relaxed);
  }
  sched.netpoll_wakes.fetch_add(static_cast<std::uint64_t>(q.size), std::memory_order_relaxed);
  if (p == nullptr) {
    inject_glist(q);
    return nullptr;
  }
  acquirep(m, p);
  run_all_timers(now);
  if (G* g = q.pop_front()) {
    inject_glist(q);
    return g;
  }
  if (was_spinning) become_spinning(m);
  return nullptr;
}

// Steps 7-8: give up the P, recheck, block. Returns a G (with a P held) or
// nullptr to restart find_runnable (with or without... always with a P, or
// stopping).
G* release_and_block(M* m, std::int64_t poll_until) {
  P* p = m->p;
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    if (sched.stopping.load(std::memory_order_relaxed)) return nullptr;
    if (G* g = global_get_locked(p, 0)) return g;
    if (!m->spinning && sched.needspinning.load(std::memory_order_relaxed) == 1) {
      become_spinning(m);
      return nullptr;
    }
    m->p = nullptr;
    p->m.store(nullptr, std::memory_order_relaxed);
    pidleput_locked(p);
  }
  const bool was_spinning = m->spinning;
  if (was_spinning) {
    // The decrement-then-recheck half of the protocol (see the essay).
    m->spinning = false;
    sched.nmspinning.fetch_sub(1, std::memory_order_seq_cst);
    storeload_fence();
    bool work = sched.runq_size() > 0 || any_runq_nonempty();
    if (work) {
      std::lock_guard<SchedMutex> lock(sched.lock);
      if (P* p2 = pidleget_spinning_locked()) {
        acquirep(m, p2);
        become_spinning(m);
        return nullptr;
      }
    }
  }
  // Timers moved by a retirement are covered by earliest_timer() below, read
  // after this exchange: this M polls for them or wakes whoever polls.
  if (sched.moved_timers_when.load(std::memory_order_relaxed) != kNever)
    sched.moved_timers_when.exchange(kNever);
  poll_until = std::min(poll_until, earliest_timer());
  Poller* poller = sched.poller;
  bool want_poll = poller != nullptr && (poller->has_waiters() || poll_until != kNever);
  if (want_poll && sched.lastpoll.exchange(0, std::memory_order_acq_rel) != 0) {
    return poll_blocking(m, poll_until, was_spinning);
  }
  if (poll_until != kNever && poller != nullptr) {
    // Another M holds the poll token; make sure it wakes for our timer.
    std::int64_t pu = sched.poll_until.load(std::memory_order_relaxed);
    if (pu == 0 || pu > poll_until) poller->wake();
  }
  stopm(m);
  return nullptr;
}

}  // namespace

G* find_runnable(M* m, bool* inherit) {
  for (;;) {
    *inherit = false;
    if (sched.stopping.load(std::memory_order_relaxed)) return nullptr;
    P* p = m->p;
    if (p == nullptr) {  // our P was retired or donated to an M in pwait
      if (m->spinning) {
        // A spinner that lost its P stops spinning here, or nmspinning leaks
        // and wakep() never starts an M again. Decrement, then recheck: work
        // and timers published while we counted as a spinner got no wakep
        // (the essay's protocol), and unlike release_and_block this M will
        // not poll for the timers itself (issue 7's live-resize hang: a
        // retirement moved timers to idle P0 and every M went to sleep).
        m->spinning = false;
        sched.nmspinning.fetch_sub(1, std::memory_order_seq_cst);
        storeload_fence();
        if (sched.runq_size() > 0 || any_runq_nonempty() || earliest_timer() != kNever) {
          wakep();
        }
      }
      stopm(m);
      continue;
    }
    if (p->retire_requested.load(std::memory_order_acquire)) {
      // A live shrink removed this P, unless a grow has cancelled that since:
      // retire_owned_p decides under sched.lock.
      retire_owned_p(m);
      continue;  // without a P: stop spinning, then stopm; with one: go on
    }
    if (sched.npwait() > 0) {
      // An M with a goroutine on it waits for a P (syscall.cpp reacquire_p).
      std::lock_guard<SchedMutex> lock(sched.lock);
      if (M* w = sched.pwait) {
        sched.pwait = w->schedlink;
        sched.add_npwait_locked(-1);
        m->p = nullptr;
        p->m.store(nullptr, std::memory_order_relaxed);
        p->running_g.store(nullptr, std::memory_order_relaxed);
        w->nextp = p;
        w->park.wake();
        continue;  // without a P: stopm
      }
    }
    // The precise clock only for a timer that may be due (coarse_slack): a
    // loaded server passes here about once a request, and its timers (the
    // connections' deadlines) are seconds away.
    std::int64_t poll_until = kNever;
    if (const std::int64_t next = p->timers.next_when.load(std::memory_order_relaxed);
        next <= coarse_now() + coarse_slack()) {
      const std::int64_t now = nanotime();
      if (next <= now) poll_until = p->timers.run(now);
    }
    if (p->schedtick.load(std::memory_order_relaxed) % 61 == 0) {
      if (G* g = global_get(p, 1)) return g;
    }
    if (G* g = p->runq.get(inherit)) return g;
    if (G* g = global_get(p, 0)) return g;
    if (G* g = poll_nonblocking()) return g;
    const int busy = sched.gomaxprocs.load() - sched.npidle.load();
    if (m->spinning || 2 * sched.nmspinning.load() < busy) {
      if (!m->spinning) become_spinning(m);
      bool ran_timers = false;
      if (G* g = steal_work(m, &ran_timers, &poll_until)) return g;
      if (ran_timers) continue;
    }
    if (G* g = release_and_block(m, poll_until)) return g;
  }
}

void reset_spinning(M* m) {
  m->spinning = false;
  sched.nmspinning.fetch_sub(1, std::memory_order_seq_cst);
  // The last spinner found work: hand the role on, so more work fans out.
  wakep();
}

// runq_put's slow path, out of line: the Spill is a 1 KiB frame.
void runq_put_general(P* p, G* g, bool next) {
  RunQueue::Spill spill;
  if (p->runq.put_general(g, next, &spill)) global_put_spill(spill);
}

void global_put_spill(const RunQueue::Spill& spill) {
  std::lock_guard<SchedMutex> lock(sched.lock);
  for (std::uint32_t i = 0; i < spill.n; ++i)
    sched.runq.push_back(spill.g[i]);
  sched.publish_runq_size_locked();
}

void global_put(G* g) {
  std::lock_guard<SchedMutex> lock(sched.lock);
  sched.runq.push_back(g);
  sched.publish_runq_size_locked();
}

void global_put_batch(GQueue& q) {
  std::lock_guard<SchedMutex> lock(sched.lock);
  sched.runq.append(q);
  sched.publish_runq_size_locked();
}

void acquirep(M* m, P* p) {
  GORO_CHECK(p->m.load(std::memory_order_relaxed) == nullptr,
             "sched: acquirep of a P owned by another M");
  m->p = p;
  p->m.store(m, std::memory_order_relaxed);
  p->owner_tid.store(m->tid, std::memory_order_relaxed);
  p->status.store(PStatus::kRunning, std::memory_order_release);
}

P* pidleget_locked() {
  P* p = sched.pidle;
  if (p == nullptr) return nullptr;
  sched.pidle = p->link;
  p->link = nullptr;
  sched.npidle.fetch_sub(1, std::memory_order_relaxed);
  wake_sysmon_locked();
  return p;
}

P* pidleget_spinning_locked() {
  P* p = pidleget_locked();
  if (p == nullptr) sched.needspinning.store(1, std::memory_order_relaxed);  // see the essay
  return p;
}

void pidleput_locked(P* p) {
  GORO_CHECK(p->runq.empty(), "sched: idle P with a non-empty run queue");
  if (p_is_doomed(p)) {  // a shrink is pending for it: retire instead
    retire_idle_locked(p);
    return;
  }
  if (M* w = sched.pwait) {  // an M holding a goroutine waits for a P: donate it
    sched.pwait = w->schedlink;
    sched.add_npwait_locked(-1);
    p->running_g.store(nullptr, std::memory_order_relaxed);
    w->nextp = p;
    w->park.wake();
    return;
  }
  p->status.store(PStatus::kIdle, std::memory_order_relaxed);
  p->running_g.store(nullptr, std::memory_order_relaxed);
  p->link = sched.pidle;
  sched.pidle = p;
  sched.npidle.fetch_add(1, std::memory_order_relaxed);
}

void startm(P* p, bool spinning) {
  M* m = nullptr;
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    if (p == nullptr) {
      p = pidleget_locked();
      if (p == nullptr) return;
    }
    m = sched.midle;
    if (m != nullptr) {
      sched.midle = m->schedlink;
      --sched.nmidle;
    }
  }
  if (m == nullptr) {
    newm(p, spinning);
    return;
  }
  m->spinning = spinning;
  m->nextp = p;
  m->park.wake();
}

void wakep() {
  // StoreLoad: the caller has just published work; see the essay.
  storeload_fence();
  // One spinner at a time. Our count makes concurrent wakeps return at once;
  // their work is covered by the spinner we start, or by needspinning when
  // there is no idle P. Whether there is one is decided under sched.lock
  // (see the essay), never from npidle alone (Go's wakep/pidlegetSpinning).
  if (sched.nmspinning.load(std::memory_order_relaxed) != 0) return;
  // Already asked: an earlier wakep found no idle P and set needspinning, and
  // the M that takes the flag becomes a spinner. A spinner that finds nothing
  // rechecks every queue after its seq_cst decrement (the essay); our work,
  // published before the fence above, is in that recheck's view (had the
  // decrement preceded our fence, our load would see the flag already
  // cleared). So while every P is busy a wakep costs two loads, not a CAS and
  // sched.lock (spawn at 2 Ps: 370 ns with them, 175 ns before the lock).
  if (sched.needspinning.load(std::memory_order_relaxed) == 1) return;
  int zero = 0;
  if (!sched.nmspinning.compare_exchange_strong(zero, 1)) return;
  P* p;
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    p = pidleget_spinning_locked();
    if (p == nullptr) {
      sched.nmspinning.fetch_sub(1);
      return;
    }
  }
  startm(p, true);
}

void startm_failed(P* p, bool spinning) {
  // We own p transiently (nobody else may pop its queue); an idle P must have
  // an empty queue, so its goroutines go to the global queue.
  GQueue queued;
  p->runq.drain_to(queued);
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    if (!queued.empty()) {
      sched.runq.append(queued);
      sched.publish_runq_size_locked();
    }
    pidleput_locked(p);
  }
  flush_moved_timers();  // pidleput_locked may have retired p
  if (spinning) {
    // The M we were to start counted as a spinner, so wakeps since then
    // started nobody: drop the count as a spinner does (the essay), then
    // recheck the queues.
    sched.nmspinning.fetch_sub(1, std::memory_order_seq_cst);
    storeload_fence();
  }
  if (sched.runq_size() == 0 && !any_runq_nonempty()) return;
  // Work is queued and we could not start a thread for it. An M may have
  // gone idle meanwhile: start it. Otherwise the next M to give up its P
  // spins instead (needspinning, under the lock as the essay requires).
  M* m = nullptr;
  P* idle = nullptr;
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    if (sched.midle != nullptr) idle = pidleget_locked();
    if (idle == nullptr) {
      sched.needspinning.store(1, std::memory_order_relaxed);
      return;
    }
    m = sched.midle;
    sched.midle = m->schedlink;
    --sched.nmidle;
    sched.nmspinning.fetch_add(1, std::memory_order_seq_cst);
  }
  m->spinning = true;
  m->nextp = idle;
  m->park.wake();
}

void inject_glist(GQueue& q) {
  if (q.empty()) return;
  for (G* g = q.head; g != nullptr; g = g->schedlink) {
    g->status.store(GStatus::kRunnable, std::memory_order_relaxed);
  }
  M* m = current_m();
  if (m == nullptr || m->p == nullptr) {
    std::int64_t n = q.size;
    global_put_batch(q);
    for (std::int64_t i = 0; i < n && sched.npidle.load(std::memory_order_relaxed) > 0; ++i) {
      startm(nullptr, false);
    }
    return;
  }
  // One G per idle P goes global, and those Ps get an M; the rest stay local.
  std::int64_t idle = std::min<std::int64_t>(sched.npidle.load(std::memory_order_relaxed), q.size);
  if (idle > 0) {
    GQueue global;
    for (std::int64_t i = 0; i < idle; ++i)
      global.push_back(q.pop_front());
    global_put_batch(global);
    for (std::int64_t i = 0; i < idle; ++i)
      startm(nullptr, false);
  }
  m->p->runq.put_batch(q);
  if (!q.empty()) global_put_batch(q);
  wakep();
}

void wake_netpoller(std::int64_t when) {
  if (sched.lastpoll.load(std::memory_order_acquire) == 0) {
    std::int64_t pu = sched.poll_until.load(std::memory_order_relaxed);
    if (pu == 0 || pu > when) sched.poller->wake();
  } else {
    wakep();
  }
}

void stop_the_world_wake_all() {
  std::vector<M*> idle;
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    sched.stopping.store(true, std::memory_order_seq_cst);
    for (P* p : sched.allp)
      p->leave_fast_path.store(true, std::memory_order_relaxed);
    for (M* m = sched.midle; m != nullptr; m = m->schedlink)
      idle.push_back(m);
    sched.midle = nullptr;
    sched.nmidle = 0;
    // Ms waiting for a donated P wake with nextp == nullptr.
    for (M* m = sched.pwait; m != nullptr; m = m->schedlink)
      idle.push_back(m);
    sched.pwait = nullptr;
    sched.clear_npwait_locked();
  }
  for (M* m : idle)
    m->park.wake();
  if (sched.poller != nullptr) sched.poller->wake();
  wake_sysmon();
}

}  // namespace goro::detail
