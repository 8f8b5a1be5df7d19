// goro::detail park/ready: the doorway through which goro's own layers (sync,
// netpoll, net, http) block a goroutine and wake it. Internal, but installed
// because the public templates (Chan<T>, select) are built on it.
//
// Protocol (Go's gopark/goready): a goroutine that must wait publishes itself
// somewhere (a channel's wait queue, a poll descriptor) and calls park(). The
// runtime switches away from its stack first and only then runs `commit`, on
// the next goroutine's or the scheduler's stack; `commit` typically releases
// the lock that guards the wait queue. So whoever finds the goroutine in the
// wait queue and calls ready() can never resume it while it is still running
// on its own stack. If `commit` returns false the park is cancelled and the
// goroutine is made runnable again at once.
#pragma once

#include <cstdint>

namespace goro::detail {
struct G;
}  // namespace goro::detail

#if defined(__x86_64__)
// The G running on this thread (nullptr on a scheduler stack or a thread
// that is not an M): current_g()'s value, mirrored by the scheduler at
// every change of M::curg (sched.hpp set_curg). Read through running_g().
extern "C" {
extern __attribute__((tls_model("initial-exec"))) thread_local goro::detail::G* goro_tls_current_g;
}
#endif

namespace goro::detail {

// Why a goroutine is parked; shown in goroutine dumps and deadlock reports.
enum class WaitReason : std::uint8_t {
  kNone,
  kChanReceive,
  kChanSend,
  kChanReceiveNilChan,
  kSelect,
  kSelectNoCases,
  kMutex,
  kRWMutexRead,
  kRWMutexWrite,
  kWaitGroup,
  kCond,
  kSemaphore,
  kOnce,
  kSleep,
  kIOWait,
  kSyscall,
  kContext,
  kForever,
};
const char* wait_reason_string(WaitReason r) noexcept;

// The running goroutine, or nullptr on a thread that is not running one.
G* current_g() noexcept;

// current_g() inline, for checks on a hot path (the HTTP layer's ownership
// checks: eleven a request). On x86-64 two instructions in a volatile asm
// with a memory clobber, as sched.hpp's current_m(): the compiler may not
// keep the thread's TLS address across a call, and so across a switch to
// another M. Elsewhere the call.
inline G* running_g() noexcept {
#if defined(__x86_64__)
  G* g;
  asm volatile(
      "movq goro_tls_current_g@gottpoff(%%rip), %0\n\t"
      "movq %%fs:(%0), %0"
      : "=r"(g)
      :
      : "memory");
  return g;
#else
  return current_g();
#endif
}
std::uint64_t goroutine_id(const G* g) noexcept;

using ParkCommit = bool (*)(G* g, void* arg);

// Parks the current goroutine (see the protocol above). Returns when some
// other party calls ready(g), or at once if commit returns false.
void park(WaitReason reason, ParkCommit commit, void* arg);

// Makes a parked goroutine runnable. Callable from any goroutine, from a timer
// or poller callback, and from threads outside the runtime (the G then goes to
// the global queue). A G must be readied exactly once per park.
void ready(G* g) noexcept;

// Monotonic nanoseconds (CLOCK_MONOTONIC).
std::int64_t nanotime() noexcept;

// CLOCK_MONOTONIC_COARSE: the same clock as nanotime() at the kernel's tick
// (4 ms here), never ahead of it, for a quarter of the cost (~7 ns against
// ~24 here): timestamps that tolerate a tick.
std::int64_t coarse_now() noexcept;

// How far coarse_now() may be behind nanotime(): three of its ticks (its
// resolution; one for the tick itself, two for a timekeeping update that
// comes late: in a VM whose host runs the vCPU late, two ticks were seen
// exceeded by a quarter of a millisecond, Clock.CoarseIsNeverMoreThanItsSlackBehind
// 8.25 ms against 8 on 2026-11-28). A deadline after coarse_now() + coarse_slack() has not
// passed, so a caller that compares many deadlines with the clock reads
// the precise one only when one of them is that close.
std::int64_t coarse_slack() noexcept;

// A cheap per-thread random number (wyrand), for select and stealing.
std::uint32_t fastrand() noexcept;
inline std::uint32_t fastrandn(std::uint32_t n) noexcept {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(fastrand()) * n) >> 32);
}

}  // namespace goro::detail
