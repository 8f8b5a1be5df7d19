// Fault injection (goro/detail/fault.hpp): per site, a count of failures
// still armed and the errno they carry.
#include "goro/detail/fault.hpp"

#include <atomic>
#include <cerrno>

namespace goro::detail {

namespace {

struct Armed {
  std::atomic<int> left{0};  // failures still to hand out
  std::atomic<int> err{0};
  std::atomic<std::uint64_t> taken{0};
};

Armed g_sites[static_cast<int>(FaultSite::kCount)];

}  // namespace

std::atomic<bool> g_faults_armed{false};

void arm_fault(FaultSite site, int times, int err) noexcept {
  // Before the count, released: a site whose thread sees the count sees
  // the flag. A site that runs beside the arming may miss both, as it
  // could miss the count alone before.
  g_faults_armed.store(true, std::memory_order_release);
  Armed& a = g_sites[static_cast<int>(site)];
  a.err.store(err, std::memory_order_relaxed);
  a.left.store(times, std::memory_order_release);
}

bool take_fault_armed(FaultSite site) noexcept {
  Armed& a = g_sites[static_cast<int>(site)];
  int left = a.left.load(std::memory_order_relaxed);
  while (left > 0) {
    if (a.left.compare_exchange_weak(left, left - 1, std::memory_order_acquire)) {
      a.taken.fetch_add(1, std::memory_order_relaxed);
      errno = a.err.load(std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

std::uint64_t faults_taken(FaultSite site) noexcept {
  return g_sites[static_cast<int>(site)].taken.load(std::memory_order_relaxed);
}

}  // namespace goro::detail
