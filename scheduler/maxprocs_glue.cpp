// How the runtime sizes its Ps when Options::maxprocs is 0: config/maxprocs
// (GOMAXPROCS env, CPU affinity, the tightest cgroup CPU limit over the
// ancestry). The resolver is kept for sysmon's once-a-second re-check.
#include "config/maxprocs/maxprocs.hpp"
#include "scheduler/proc.hpp"

namespace goro::detail {

int resolve_initial_maxprocs() { return goro::maxprocs::resolve_default().procs; }

}  // namespace goro::detail
