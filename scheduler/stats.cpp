// goro::stats(): a snapshot of the runtime's counters.
#include "goro/runtime.hpp"
#include "scheduler/proc.hpp"

namespace goro {

RuntimeStats stats() {
  using namespace detail;
  RuntimeStats s;
  s.goroutines = num_goroutines();
  s.maxprocs = static_cast<std::uint64_t>(sched.gomaxprocs.load());
  s.idle_procs = static_cast<std::uint64_t>(sched.npidle.load());
  s.spinning_threads = static_cast<std::uint64_t>(sched.nmspinning.load());
  s.global_runq = static_cast<std::uint64_t>(sched.runq_size());
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    s.idle_threads = static_cast<std::uint64_t>(sched.nmidle);
    std::uint64_t live = 1;  // M0
    for (auto& m : sched.allm)
      live += m->exited.load() ? 0 : 1;
    s.threads = live;
  }
  std::uint64_t spawns = 0;
  for (P* p : sched.allp)
    spawns += static_cast<std::uint64_t>(p->spawned.load());
  s.spawns = spawns;
  s.steals = sched.steals.load();
  s.stolen_goroutines = sched.stolen.load();
  s.global_takes = sched.global_takes.load();
  std::uint64_t parks = 0;
  for (P* p : sched.allp)
    parks += p->parks.load(std::memory_order_relaxed);
  s.parks = parks;
  s.m_parks = sched.m_parks.load();
  s.preempt_requests = sched.preempt_requests.load();
  s.netpoll_wakes = sched.netpoll_wakes.load();
  s.handoffs = sched.handoffs.load();
  if (sched.allp.empty()) return s;  // no runtime running
  StackPoolStats st = stack_pool().stats();
  s.stacks_live = st.live;
  s.stacks_guard_install = st.guard_install;
  s.stacks_guard_mprotect = st.guard_mprotect;
  s.stacks_canary_only = st.canary_only;
  s.map_count_budget_left = st.mprotect_budget_left;
  return s;
}

}  // namespace goro
