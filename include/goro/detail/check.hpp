// Invariant checks, for the runtime and the framework alike.
//
// GORO_CHECK(cond, "sched: message") aborts with the constant, prefixed
// message when an invariant does not hold. It is compiled in debug builds
// (!NDEBUG) and in sanitizer builds; release builds trust the proofs.
#pragma once

namespace goro::detail {

// Prints "goro: fatal error: ", msg and a backtrace to stderr, then aborts.
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
