// Debug knobs and invariant checks.
//
// GORO_DEBUG is a comma-separated list of name=value settings, read once at
// startup, e.g. GORO_DEBUG=schedtrace=1000,scheddetail=1. Known names:
//   schedtrace=MS     print one scheduler line every MS milliseconds (sysmon)
//   scheddetail=1     with schedtrace: one more line per P, M and G
//   stackguard=mprotect|canary   force a weaker stack guard (tests)
//   asyncpreemptoff=1 never signal a goroutine that hogs its P (syscall.cpp);
//                     cooperative preemption at runtime entries remains.
//                     Default 0, except in TSan builds (see sysmon.cpp)
//   forcepreemptus=N  a goroutine running N µs without a scheduling point
//                     is a hog (default 10000, Go's forcePreemptNS; stress)
//   ncpu=N            the CPU count the maxprocs resolver sees (config/maxprocs)
//   containermaxprocs=0   ignore cgroup CPU limits (config/maxprocs)
//   maxprocsdebug=1   log how maxprocs was resolved (config/maxprocs)
//
// GORO_CHECK and goro::detail::fatal live in <goro/detail/check.hpp>, which
// the framework may include too.
#pragma once

#include <string>

#include "goro/detail/check.hpp"

namespace goro::detail {

// The value of `name` in GORO_DEBUG, or "" when absent.
std::string debug_option(const char* name);
long debug_option_long(const char* name, long fallback);

}  // namespace goro::detail
