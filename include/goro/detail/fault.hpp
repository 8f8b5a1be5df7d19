// goro::detail fault injection: the runtime's resource boundaries made to
// fail on demand, so tests can check what a service does when the machine
// says no (no memory for a goroutine stack, no more threads, no descriptor
// for an accepted connection) under the sanitizers, where exhausting the
// real resource is not possible (ASan and TSan reserve terabytes of address
// space) or not repeatable. Internal; for tests only.
//
//   goro::detail::arm_fault(goro::detail::FaultSite::kAccept, 3, ENFILE);
//   // the next three accept4 calls fail with ENFILE, then all is normal
//
// Each site costs one inlined relaxed load while nothing is armed, and the
// sites are off the per-request path but for one: a stack mapping, a thread
// start, an accept, a close, and a connection's release while idle (two
// loads per release, which with release_when_drained is one per request).
#pragma once

#include <atomic>
#include <cstdint>

namespace goro::detail {

enum class FaultSite : std::uint8_t {
  kStackMap,      // mmap of a goroutine stack (an own-size stack or a pool arena)
  kThreadCreate,  // starting an M's OS thread
  kAccept,        // accept4 on a listener
  // Not a failure but a pause: NetFd::close() between waking the operations
  // parked on the descriptor and dropping the owner's reference, where the
  // woken owner may already delete the Conn. A taken fault sleeps the
  // closer's thread for `err` microseconds, so a test can hold that window
  // open (tests/net/stress_test.cpp).
  kCloseWindow,
  // The same kind of pause in NetFd::go_when_readable, before the parked
  // goroutine is published in the read wait slot, where a close() from
  // another goroutine must not recycle the poll descriptor under it
  // (tests/http_server/idle_release_test.cpp).
  kParkWindow,
  // Not a failure either: NetFd::go_when_readable records a read edge just
  // before it parks the goroutine, as the netpoller does when it reports,
  // late, bytes a read took already, so the goroutine is woken with nothing
  // to read (tests/http_server/idle_release_test.cpp; `err` is unused).
  kStaleEdge,
  kCount,
};

// The next `times` calls at `site` fail with errno `err`; times 0 disarms.
void arm_fault(FaultSite site, int times, int err) noexcept;
// How many armed failures at `site` were taken since the process started.
std::uint64_t faults_taken(FaultSite site) noexcept;

// Set by the first arm_fault and never cleared: until a test arms a fault,
// a site is an inlined load and branch.
extern std::atomic<bool> g_faults_armed;
bool take_fault_armed(FaultSite site) noexcept;

// At a site: false when nothing is armed; true, with errno set, when this
// call takes one of the armed failures.
inline bool take_fault(FaultSite site) noexcept {
  if (!g_faults_armed.load(std::memory_order_relaxed)) [[likely]]
    return false;
  return take_fault_armed(site);
}

}  // namespace goro::detail
