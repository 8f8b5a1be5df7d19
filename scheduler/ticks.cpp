// The duration clock (goro/detail/ticks.hpp).
#include "goro/detail/ticks.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <mutex>
#include <string_view>

#include "goro/detail/park.hpp"

namespace goro::detail {

std::atomic<int> g_ticks_source{0};

namespace {

// Where the rate is measured from: a reading of both clocks at once.
struct Pair {
  std::int64_t tsc = 0;
  std::int64_t ns = 0;
};

Pair g_origin;
std::once_flag g_decided;

#if defined(__x86_64__)
// Both clocks within half a microsecond of each other (the reads take
// ~25 ns each; an interrupt or a preemption between them puts microseconds
// or milliseconds there: then read again, or after 1,000 tries take the
// narrowest pair seen).
Pair read_pair() noexcept {
  Pair best;
  std::int64_t width = INT64_MAX;
  for (int i = 0; i < 1000; ++i) {
    const std::int64_t a = nanotime();
    const auto t = static_cast<std::int64_t>(__builtin_ia32_rdtsc());
    const std::int64_t b = nanotime();
    if (b - a < width) {
      width = b - a;
      best = Pair{t, a + (b - a) / 2};
    }
    if (width < 500) break;
  }
  return best;
}

// The clocksource's name ("tsc", "kvm-clock", ...), or "" unreadable.
std::string_view clocksource(char (&buf)[32]) noexcept {
  const int fd = ::open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                        O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  std::string_view name(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' '))
    name.remove_suffix(1);
  return name;
}

// The CPU's promise that its counter runs at one rate in every power state
// (CPUID 0x80000007 EDX bit 8, Linux's "nonstop_tsc"; under a hypervisor,
// the hypervisor's promise).
bool invariant_tsc() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000, &a, &b, &c, &d) == 0 || a < 0x80000007) return false;
  if (__get_cpuid(0x80000007, &a, &b, &c, &d) == 0) return false;
  return (d & (1u << 8)) != 0;
}

// Whether CLOCK_MONOTONIC is read in user space (the vDSO) rather than by
// a system call: the fastest of 32 back-to-back pairs of libc reads
// against the fastest of 8 pairs of clock_gettime system calls. A vDSO
// read takes 15-45 ns; a system call, from ~70 ns in a hardware-virtualised
// guest without mitigations to ~1 us on the PVM instances here, and libc
// makes one when the vDSO cannot serve the clock. So the libc read must be
// under half the system call's. One preempted pair does not move either
// fastest; a doubt answers false, which is the safe side.
bool clock_read_in_user_space() noexcept {
  std::int64_t libc = INT64_MAX;
  for (int i = 0; i < 32; ++i) {
    const std::int64_t a = nanotime();
    const std::int64_t b = nanotime();
    libc = std::min(libc, b - a);
  }
  std::int64_t sys = INT64_MAX;
  for (int i = 0; i < 8; ++i) {
    timespec ta{}, tb{};
    if (::syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ta) != 0) return false;
    if (::syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &tb) != 0) return false;
    sys = std::min(sys, (tb.tv_sec - ta.tv_sec) * 1'000'000'000 + (tb.tv_nsec - ta.tv_nsec));
  }
  return 2 * libc < sys;
}

bool counter_trusted() noexcept {
  char buf[32] = {};
  const std::string_view name = clocksource(buf);
  // The reads and the CPUID only where they decide something.
  if (name != "kvm-clock") return ticks_on_tsc(name, false, false);
  return ticks_on_tsc(name, invariant_tsc(), clock_read_in_user_space());
}
#endif

void decide() noexcept {
#if defined(__x86_64__)
  if (counter_trusted()) {
    g_origin = read_pair();
    g_ticks_source.store(1, std::memory_order_release);
    return;
  }
#endif
  g_ticks_source.store(2, std::memory_order_release);
}

// Decided at start-up (the rate's measurement starts then, so it has long
// run a millisecond by the first conversion), or at the first reading
// before that (another translation unit's static initialiser).
[[maybe_unused]] const bool g_decided_at_start = [] {
  std::call_once(g_decided, decide);
  return true;
}();

// Nanoseconds per tick; 0 until measured (by the first conversion).
std::atomic<double> g_ns_per_tick{0};

[[gnu::noinline]] double measure_ns_per_tick() noexcept {
  static const double rate = [] {
    std::call_once(g_decided, decide);
    if (g_ticks_source.load(std::memory_order_acquire) != 1) return 1.0;
#if defined(__x86_64__)
    Pair now = read_pair();
    // At least 10 ms from the origin (the process's start, so the first
    // conversion seldom waits): the pairs' own error, a quarter of a
    // microsecond each, is then a part in 20,000 at most.
    while (now.ns - g_origin.ns < 10'000'000)
      now = read_pair();
    if (now.tsc > g_origin.tsc)
      return static_cast<double>(now.ns - g_origin.ns) /
             static_cast<double>(now.tsc - g_origin.tsc);
#endif
    return 1.0;
  }();
  g_ns_per_tick.store(rate, std::memory_order_relaxed);
  return rate;
}

}  // namespace

// The kernel keeps CLOCK_MONOTONIC with the TSC only when it trusts it:
// constant rate, running in every power state, synchronised across CPUs
// (it switches away, to "hpet" or the hypervisor's clock, when its
// watchdog finds otherwise). Under KVM the clocksource is "kvm-clock",
// the hypervisor's scaling of the same counter, and the guest reads it in
// user space only while the host marks it stable (PVCLOCK_TSC_STABLE_BIT:
// every vCPU's counter runs at one rate from one offset); else every read
// is a system call. So a kvm-clock guest whose CPU reports an invariant
// counter and whose clock reads stay in user space at start-up gets the
// counter too. That is the host's word, as of start-up, not the guest's
// own checks (such guests often boot with tsc=unstable): if the host later
// clears the bit, or the guest is paused or moved to a host whose counter
// runs at another rate, latencies measured across that are wrong. The
// counter times latency only, never a deadline (ticks.hpp).
bool ticks_on_tsc(std::string_view name, bool invariant, bool vdso) noexcept {
  if (name == "tsc") return true;
  return name == "kvm-clock" && invariant && vdso;
}

std::int64_t ticks_slow() noexcept {
  std::call_once(g_decided, decide);
#if defined(__x86_64__)
  if (g_ticks_source.load(std::memory_order_acquire) == 1)
    return static_cast<std::int64_t>(__builtin_ia32_rdtsc());
#endif
  return nanotime();
}

std::int64_t ticks_to_ns(std::int64_t d) noexcept {
  if (d <= 0) return 0;
  double rate = g_ns_per_tick.load(std::memory_order_relaxed);
  if (rate == 0) rate = measure_ns_per_tick();
  return static_cast<std::int64_t>(static_cast<double>(d) * rate);
}

}  // namespace goro::detail
