// Thread-local access to the current M, clocks, randomness and debug knobs.
//
// Why current_m() is an out-of-line call: a goroutine can park on one OS
// thread and resume on another. Within one function the compiler may compute
// the address of a thread_local once (on x86-64, %fs:0 + offset) and reuse it
// after a call that, unknown to the compiler, switched threads; the goroutine
// would then read the old thread's M. Every runtime accessor therefore reads
// the thread_local inside a function the optimiser can neither inline nor
// analyse (GCC's noipa; clang's noinline + an opaque asm barrier), so each
// call computes the address afresh on whatever thread runs it.
#include <cxxabi.h>
#include <execinfo.h>
#include <fmt/core.h>
#include <time.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "scheduler/debug.hpp"
#include "scheduler/sched.hpp"

#if defined(__clang__)
#define GORO_OPAQUE __attribute__((noinline))
#else
#define GORO_OPAQUE __attribute__((noipa))
#endif

// initial-exec: goro is linked into executables (static library); the TLS
// access is then one %fs-relative load instead of a __tls_get_addr call.
// `used`: the context switch's inline asm names them in a string, which
// link-time optimization does not see (docs/DESIGN.md "Link-time
// optimization": it dropped them and the link failed).
#if defined(GORO_INLINE_CURRENT_M)
extern "C" {
__attribute__((tls_model("initial-exec"), used)) thread_local goro::detail::M* goro_tls_current_m =
    nullptr;
}
#endif
#if defined(__x86_64__)
extern "C" {
__attribute__((tls_model("initial-exec"), used)) thread_local goro::detail::G* goro_tls_current_g =
    nullptr;
}
#endif

namespace goro::detail {
namespace {
#if !defined(GORO_INLINE_CURRENT_M)
__attribute__((tls_model("initial-exec"))) thread_local M* goro_tls_current_m = nullptr;
#endif
thread_local std::uint64_t t_rand = 0;
}  // namespace

#if !defined(GORO_INLINE_CURRENT_M)
GORO_OPAQUE M* current_m() noexcept {
  M* m = goro_tls_current_m;
  asm volatile("" : "+r"(m));
  return m;
}
#endif

GORO_OPAQUE void set_current_m(M* m) noexcept {
  goro_tls_current_m = m;
}

// errno and the C++ exception-handling globals migrate with the goroutine.
// Both are reached through functions glibc and libstdc++ declare `const`
// (__errno_location, __cxa_get_globals), so code around a switch must not
// call them inline: the compiler would reuse the pre-switch thread's address.
// Each M looks both addresses up once, on its own thread (bind_thread_state),
// and the switch code goes through the M it re-reads after every switch.
GORO_OPAQUE void bind_thread_state(M* m) noexcept {
  m->errno_slot = &errno;
  m->eh_slot = abi::__cxa_get_globals();
}

GORO_OPAQUE std::uint32_t fastrand() noexcept {
  // wyrand: one multiply; good enough for select and steal order.
  std::uint64_t& s = t_rand;
  if (s == 0) s = static_cast<std::uint64_t>(nanotime()) | 1;
  s += 0xa0761d6478bd642full;
  __uint128_t r = static_cast<__uint128_t>(s) * (s ^ 0xe7037ed1a0b428dbull);
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(r >> 64) ^
                                    static_cast<std::uint64_t>(r));
}

std::int64_t coarse_now() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::int64_t coarse_slack() noexcept {
  static const std::int64_t slack = [] {
    timespec res{};
    clock_getres(CLOCK_MONOTONIC_COARSE, &res);
    return 3 * (static_cast<std::int64_t>(res.tv_sec) * 1000000000 + res.tv_nsec);
  }();
  return slack;
}

std::int64_t nanotime() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string debug_option(const char* name) {
  // Read at start-up and by tests between runs, never beside a setenv.
  const char* env = std::getenv("GORO_DEBUG");  // NOLINT(concurrency-mt-unsafe)
  if (env == nullptr) return {};
  std::string s(env);
  const std::string key = std::string(name) + "=";
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    if (item.compare(0, key.size(), key) == 0) return item.substr(key.size());
    pos = end + 1;
  }
  return {};
}

long debug_option_long(const char* name, long fallback) {
  std::string v = debug_option(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0') {
    std::fprintf(stderr, "goro: GORO_DEBUG: %s=%s is not a number; ignored\n", name, v.c_str());
    return fallback;
  }
  return n;
}

void fatal(const char* msg) noexcept {
  std::fprintf(stderr, "goro: fatal error: %s\n", msg);
  std::fflush(stderr);
  void* frames[32];
  int n = backtrace(frames, 32);
  backtrace_symbols_fd(frames, n, 2);
  std::abort();
}

const char* wait_reason_string(WaitReason r) noexcept {
  switch (r) {
    case WaitReason::kNone:
      return "";
    case WaitReason::kChanReceive:
      return "chan receive";
    case WaitReason::kChanSend:
      return "chan send";
    case WaitReason::kChanReceiveNilChan:
      return "chan receive (nil chan)";
    case WaitReason::kSelect:
      return "select";
    case WaitReason::kSelectNoCases:
      return "select (no cases)";
    case WaitReason::kMutex:
      return "mutex";
    case WaitReason::kRWMutexRead:
      return "rwmutex rlock";
    case WaitReason::kRWMutexWrite:
      return "rwmutex lock";
    case WaitReason::kWaitGroup:
      return "waitgroup wait";
    case WaitReason::kCond:
      return "cond wait";
    case WaitReason::kSemaphore:
      return "semaphore acquire";
    case WaitReason::kOnce:
      return "once";
    case WaitReason::kSleep:
      return "sleep";
    case WaitReason::kIOWait:
      return "io wait";
    case WaitReason::kSyscall:
      return "syscall";
    case WaitReason::kContext:
      return "context done";
    case WaitReason::kForever:
      return "forever";
  }
  return "?";
}

const char* gstatus_string(GStatus s) noexcept {
  switch (s) {
    case GStatus::kIdle:
      return "idle";
    case GStatus::kRunnable:
      return "runnable";
    case GStatus::kRunning:
      return "running";
    case GStatus::kSyscall:
      return "syscall";
    case GStatus::kWaiting:
      return "waiting";
    case GStatus::kDead:
      return "dead";
  }
  return "?";
}

}  // namespace goro::detail
