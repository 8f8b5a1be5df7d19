// How the runtime picks its initial P count when Options::maxprocs is 0.
// Temporary: GOMAXPROCS env, else the affinity count; config/maxprocs (the
// cgroup-aware resolver) replaces this as soon as it lands.
#include <sched.h>

#include <cstdlib>

#include "scheduler/proc.hpp"

namespace goro::detail {

int resolve_initial_maxprocs() {
  if (const char* env = std::getenv("GOMAXPROCS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0) return static_cast<int>(n);
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return 1;
}

}  // namespace goro::detail
