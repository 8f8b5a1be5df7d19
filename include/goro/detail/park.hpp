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

// A cheap per-thread random number (wyrand), for select and stealing.
std::uint32_t fastrand() noexcept;
inline std::uint32_t fastrandn(std::uint32_t n) noexcept {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(fastrand()) * n) >> 32);
}

}  // namespace goro::detail
