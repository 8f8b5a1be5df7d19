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
//   ncpu=N            the CPU count the maxprocs resolver sees (config/maxprocs)
//   containermaxprocs=0   ignore cgroup CPU limits (config/maxprocs)
//   maxprocsdebug=1   log how maxprocs was resolved (config/maxprocs)
//
// GORO_CHECK(cond, "sched: message") aborts with the constant, prefixed
// message when an invariant does not hold. It is compiled in debug builds
// (!NDEBUG) and in sanitizer builds; release builds trust the proofs.
#pragma once

#include <string>

namespace goro::detail {

// The value of `name` in GORO_DEBUG, or "" when absent.
std::string debug_option(const char* name);
long debug_option_long(const char* name, long fallback);

[[noreturn]] void fatal(const char* msg) noexcept;

}  // namespace goro::detail

#if !defined(NDEBUG) || defined(GORO_ASAN) || defined(GORO_TSAN)
#define GORO_CHECKS_ENABLED 1
#define GORO_CHECK(cond, msg)                    \
  do {                                           \
    if (__builtin_expect(!(cond), 0)) {          \
      ::goro::detail::fatal(msg " [" #cond "]"); \
    }                                            \
  } while (0)
#else
#define GORO_CHECKS_ENABLED 0
#define GORO_CHECK(cond, msg) \
  do {                        \
  } while (0)
#endif
