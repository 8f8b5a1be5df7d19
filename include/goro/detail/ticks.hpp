// goro::detail::ticks(): a clock for short durations (request latency),
// cheaper than CLOCK_MONOTONIC.
//
// A keep-alive request reads a clock twice for its latency (when its head
// was whole, when its handler returned). Through the vDSO that is ~24 ns a
// read in a loop here and ~40 inside a request (the vDSO orders its TSC read
// after every instruction before it), about 1% of what the whole request
// costs the server. ticks() reads the CPU's time-stamp counter directly
// (~10 ns) where the kernel itself keeps CLOCK_MONOTONIC with it (the
// clocksource is "tsc": the kernel found the counter invariant and the same
// on every CPU; or "kvm-clock" on a stable, invariant counter, as on the
// PVM instances here, where a vDSO read costs ~30 ns in a loop and the
// bare counter ~11), and is nanotime() elsewhere. Only differences between two
// readings mean anything; ticks_to_ns() converts one, at the counter's rate
// as measured against CLOCK_MONOTONIC once per process (over 10 ms or more
// from start-up, to a part in 20,000). Deadlines and
// anything compared with nanotime() use nanotime() or coarse_now().
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace goro::detail {

// 0: not decided yet, 1: the time-stamp counter, 2: nanotime(). Decided
// once (scheduler/ticks.cpp) before any reading is handed out, never
// changed after: two readings are always from the same source.
extern std::atomic<int> g_ticks_source;

std::int64_t ticks_slow() noexcept;

// The rule that picks the source, apart from the machine it reads
// (scheduler/ticks.cpp): the current clocksource's `name`, the CPU's
// `invariant`-counter flag (CPUID 0x80000007 EDX bit 8), and whether
// CLOCK_MONOTONIC is read in user space (`vdso`) rather than by a system
// call.
bool ticks_on_tsc(std::string_view name, bool invariant, bool vdso) noexcept;

inline std::int64_t ticks() noexcept {
#if defined(__x86_64__)
  if (g_ticks_source.load(std::memory_order_relaxed) == 1)
    return static_cast<std::int64_t>(__builtin_ia32_rdtsc());
#endif
  return ticks_slow();
}

// Nanoseconds in `d` ticks (a difference of two ticks() readings; one
// taken on another CPU may come out slightly negative: 0 then).
std::int64_t ticks_to_ns(std::int64_t d) noexcept;

}  // namespace goro::detail
