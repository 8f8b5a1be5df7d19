// Changing the number of Ps while the runtime runs (issue 7: live GOMAXPROCS).
//
// Go resizes under stop-the-world (procresize). goro avoids the stop: Ps are
// never freed, only retired and revived, and the first `gomaxprocs` slots of
// sched.allp are the live ones.
//
// Growing (under sched.lock): Ps [old, n) are created or revived, pushed on
// the idle list, and idle Ms are started for them if work is queued.
//
// Shrinking (under sched.lock): gomaxprocs drops to n at once, so no spinner
// counts the doomed Ps as busy and pidleget never hands them out again.
//   - an idle doomed P leaves the idle list and is retired on the spot;
//   - a running doomed P gets retire_requested; its owner M notices at its
//     next scheduling point (the fast path steps aside, find_runnable checks
//     first thing) and retires it there: its run queue goes to the global
//     queue, its timers to P0 (never retired), its dead-G cache to the global
//     cache, its status to kDead, and the M goes idle;
//   - an M releasing a doomed P (pidleput_locked) retires it instead.
// A grow cancels pending requests under sched.lock, so an owner that saw a
// request without the lock retires only if it still stands under the lock
// (retire_owned_p): otherwise a shrink followed at once by a grow could kill
// a P that is live again, capacity lost for good (issue 16 item 1).
// The retired P's timers join P0's heap, whose watcher (an M polling with
// P0's old deadline, or none: every M may be asleep) does not know about
// them: the retirer calls flush_moved_timers() once it drops sched.lock,
// Go's wakeNetPoller after moveTimers.
// A P is therefore retired only by whoever owns it or by the resizer holding
// sched.lock while the P sits idle, never under a running goroutine's feet.
// Retired Ps keep their counters (num_goroutines sums every P ever made).
#include <algorithm>

#include "config/maxprocs/maxprocs.hpp"
#include "goro/runtime.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"

namespace goro::detail {
namespace {

std::mutex g_resize_mu;  // one resize at a time (sysmon vs set_maxprocs)

// Moves a retiring P's queued work to where live Ps find it. sched.lock held
// (it writes the global queue and Sched::gate); the P's own run queue is
// drained by its owner (or it is empty, when idle).
void retire_locked(P* p) {
  GORO_CHECK(p->id != 0, "procresize: P0 is never retired");
  const std::int64_t when = p->timers.move_all_to(sched.allp[0]->timers);
  if (when != kNever) {
    std::int64_t cur = sched.moved_timers_when.load(std::memory_order_relaxed);
    while (when < cur && !sched.moved_timers_when.compare_exchange_weak(cur, when)) {
    }
  }
  GQueue q;
  p->runq.drain_to(q);
  if (!q.empty()) {
    sched.runq.append(q);
    sched.publish_runq_size_locked();
  }
  gfree_spill_locked(p);
  stack_cache_flush(p);
  p->retire_requested.store(false, std::memory_order_relaxed);
  p->leave_fast_path.store(false, std::memory_order_relaxed);
  p->running_g.store(nullptr, std::memory_order_relaxed);
  p->m.store(nullptr, std::memory_order_relaxed);
  p->status.store(PStatus::kDead, std::memory_order_release);
}

// Removes target from the idle list; false if it is not there (an idle P
// in transit: taken by pidleget for startm, or by sysmon for handoffp, and
// not yet acquired by its new M).
bool unlink_idle_locked(P* target) {
  for (P** link = &sched.pidle; *link != nullptr; link = &(*link)->link) {
    if (*link == target) {
      *link = target->link;
      target->link = nullptr;
      sched.npidle.fetch_sub(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

}  // namespace

bool p_is_doomed(const P* p) {
  return p->id >= sched.gomaxprocs.load(std::memory_order_relaxed);
}

bool retire_owned_p(M* m) {
  P* p = m->p;
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    // The caller saw the request without the lock; a grow may have cancelled
    // it since (P::retire_requested). Only the value under the lock counts.
    if (!p->retire_requested.load(std::memory_order_relaxed)) return false;
    GORO_CHECK(p_is_doomed(p), "procresize: retirement requested for a P below maxprocs");
    m->p = nullptr;
    retire_locked(p);
  }
  flush_moved_timers();
  if (sched.runq_size() > 0) wakep();  // its run queue went global
  return true;
}

void flush_moved_timers() {
  if (sched.moved_timers_when.load(std::memory_order_relaxed) == kNever) return;
  const std::int64_t when = sched.moved_timers_when.exchange(kNever);
  if (when != kNever) wake_netpoller(when);
}

void retire_idle_locked(P* p) {
  retire_locked(p);
}

int resize_procs(int n) {
  n = std::clamp(n, 1, AllP::kMax);
  std::lock_guard<std::mutex> serial(g_resize_mu);
  int old;
  int started = 0;
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    old = sched.gomaxprocs.load();
    if (n == old) return old;
    if (n > old) {
      sched.gomaxprocs.store(n);  // first: pidleput_locked retires Ps beyond it
      for (int i = old; i < n; ++i) {
        P* p;
        if (i < sched.allp.size()) {
          p = sched.allp[i];
          if (p->status.load() != PStatus::kDead) {
            // Still running, not yet retired: cancel the retirement.
            p->retire_requested.store(false, std::memory_order_relaxed);
            p->leave_fast_path.store(false, std::memory_order_relaxed);
            continue;
          }
        } else {
          p = new P;
          p->id = i;
          sched.allp.push(p);
        }
        p->retire_requested.store(false, std::memory_order_relaxed);
        pidleput_locked(p);
        ++started;
      }
    } else {
      sched.gomaxprocs.store(n);
      for (int i = n; i < old; ++i) {
        P* p = sched.allp[i];
        if (p->status.load() == PStatus::kDead) continue;
        switch (p->status.load()) {
          case PStatus::kIdle:
            if (unlink_idle_locked(p)) {
              retire_locked(p);
              break;
            }
            // In transit to an M: that M retires it at its first schedule.
            [[fallthrough]];
          default:
            p->retire_requested.store(true, std::memory_order_release);
            p->leave_fast_path.store(true, std::memory_order_release);
        }
      }
    }
  }
  flush_moved_timers();
  // New Ps: put them to work if anything is queued.
  for (int i = 0; i < started && sched.runq_size() > 0; ++i) {
    startm(nullptr, false);
  }
  wakep();
  return old;
}

// sysmon, at most once a second: follow the CPU limit unless explicit.
void sysmon_update_maxprocs() {
  if (sched.maxprocs_explicit.load(std::memory_order_relaxed)) return;
  static thread_local goro::gomaxprocs::Resolver resolver;
  goro::gomaxprocs::Resolution r = resolver.resolve();
  if (r.from_env) return;
  sched.maxprocs_source.store(maxprocs_source_of(r), std::memory_order_relaxed);
  if (r.procs != sched.gomaxprocs.load(std::memory_order_relaxed)) resize_procs(r.procs);
}

void publish_memory_limit(goro::gomaxprocs::MemoryLimitReader& reader) {
  const std::uint64_t limit = reader.read();
  {
    std::lock_guard<std::mutex> lock(sched.memory_limit_mu);
    if (sched.memory_limit_dir != reader.directory()) sched.memory_limit_dir = reader.directory();
    sched.memory_limit_version = reader.version();
  }
  sched.memory_limit.store(limit, std::memory_order_relaxed);
}

void sysmon_update_memory_limit() {
  static thread_local goro::gomaxprocs::MemoryLimitReader reader;
  publish_memory_limit(reader);
}

int maxprocs_source_of(const goro::gomaxprocs::Resolution& r) {
  if (r.from_env) return static_cast<int>(MaxprocsSource::kEnv);
  // The cgroup decided when its cap is below the CPUs seen.
  if (r.cgroup_limit >= 0 && r.procs < r.affinity) return static_cast<int>(MaxprocsSource::kCgroup);
  return static_cast<int>(MaxprocsSource::kAffinity);
}

}  // namespace goro::detail

namespace goro {

int set_maxprocs(int n) {
  using namespace detail;
  if (sched.allp.empty()) throw std::logic_error("goro::set_maxprocs: no runtime is running");
  if (n <= 0) return maxprocs();
  sched.maxprocs_explicit.store(true);
  sched.maxprocs_source.store(static_cast<int>(MaxprocsSource::kExplicit));
  return resize_procs(n);
}

void reset_maxprocs() {
  using namespace detail;
  if (sched.allp.empty()) throw std::logic_error("goro::reset_maxprocs: no runtime is running");
  goro::gomaxprocs::Resolution r = goro::gomaxprocs::resolve_default();
  sched.maxprocs_explicit.store(r.from_env);
  sched.maxprocs_source.store(maxprocs_source_of(r));
  resize_procs(r.procs);
}

}  // namespace goro
