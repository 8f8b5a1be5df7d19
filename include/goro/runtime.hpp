// goro runtime: the public contract of the G/M/P scheduler.
//
// A goroutine is a function with its own stack, run by the runtime on one of
// `maxprocs()` processors (Ps). Blocking goro operations (channel, mutex,
// sleep, socket I/O) park the goroutine, never the thread. See HACKING.md and
// docs/DESIGN.md "The scheduler" for the model; scheduler/sched.cpp opens with the essay.
//
// Thread-local state: a goroutine may resume on a different OS thread after
// any goro call that can park or yield. `errno` and the C++ exception-handling
// globals (std::current_exception inside a catch block) migrate with the
// goroutine. Everything else thread-local does not: your own thread_locals,
// OpenSSL's error queue (read ERR_get_error before any goro call), locale.
// One compiler caveat no runtime can remove: inside a single function the
// optimiser may compute a thread_local's address once (errno's too: glibc
// declares __errno_location const) and reuse it after a goro call that moved
// the goroutine. Read errno right after the call that set it, and do not keep
// pointers or references to thread_locals across goro calls.
//
// Floating-point environment: the control state (rounding mode, flush-to-
// zero and denormals-are-zero, exception masks: MXCSR and the x87 control
// word on x86-64, FPCR on AArch64) belongs to the goroutine. It survives
// every switch, wherever the goroutine resumes, and no other goroutine sees
// it; a new goroutine starts from the default (round to nearest, all
// exceptions masked), not from its spawner's. The sticky exception flags
// (fetestexcept) are not part of the guarantee: the ABI treats them as
// caller-saved, and goro carries over those of MXCSR but not the x87 ones.
//
// Panics: an exception escaping a goroutine's function prints the goroutine's
// id, where it was spawned and the exception's what(), then exits the process
// with status 2, as an unrecovered Go panic does.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <source_location>
#include <string_view>
#include <type_traits>
#include <utility>

#include "goro/detail/spawn.hpp"
#include "goro/detail/syscall.hpp"

namespace goro {

// Options for goro::run. Zero means "the default".
struct Options {
  // Number of Ps. 0: resolve like Go 1.25 (GOMAXPROCS env, CPU affinity, cgroup
  // CPU limit); see config/maxprocs. A positive value is explicit and disables
  // live updates.
  int maxprocs = 0;
  // Default goroutine stack size in bytes (rounded up to pages). 0: 512 KiB,
  // or GORO_STACK_SIZE from the environment. This is address space: a stack
  // commits only the pages its frames touch (a parked goroutine ~4.3 KiB),
  // and one that went deeper than 64 KiB gives the rest back when it is
  // reused. Running past the end is fatal: "goroutine N: stack overflow (S
  // KiB), spawned at FILE:LINE" on stderr, exit status 2 (goro cannot grow a
  // stack as Go does). Lower it only under a tight RLIMIT_AS.
  std::size_t stack_size = 0;
  // Upper bound on OS threads the runtime may create (Go's SetMaxThreads).
  int max_threads = 10000;
};

// Per-spawn options.
struct SpawnOptions {
  // 0: the runtime's default (Options::stack_size). Another size gets a
  // mapping of its own, made and unmapped per goroutine (an mmap and a
  // munmap per spawn): for the odd goroutine that needs a deep stack, not
  // for every connection of a server.
  std::size_t stack_size = 0;
};

// Starts the runtime, runs `main_fn` as the first goroutine, and returns after
// it returns: its int result, or 0 for a void function. Goroutines still
// parked when main returns are abandoned (their stacks are released without
// unwinding, as a Go program's are at exit). One runtime per process at a time;
// calling run from inside a goroutine is an error (std::logic_error).
template <class F>
int run(F&& main_fn, Options opts = {}) {
  std::function<int()> body;
  if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
    body = [f = std::forward<F>(main_fn)]() mutable {
      f();
      return 0;
    };
  } else {
    body = [f = std::forward<F>(main_fn)]() mutable { return static_cast<int>(f()); };
  }
  return detail::run_main(std::move(body), opts.maxprocs, opts.stack_size, opts.max_threads);
}

// Spawns a goroutine running `fn` (moved in). Must be called from a goroutine.
// Throws goro::SpawnError (a std::system_error) when no stack can be had.
template <class F>
void go(F&& fn, std::source_location where = std::source_location::current()) {
  detail::spawn(std::forward<F>(fn), 0, where);
}
template <class F>
void go(SpawnOptions opts, F&& fn, std::source_location where = std::source_location::current()) {
  detail::spawn(std::forward<F>(fn), opts.stack_size, where);
}

// Runs blocking code (a database client, a compression library, a blocking
// syscall) on the calling goroutine's thread while its P is handed to another
// thread if the call takes longer than a sysmon tick, so the goroutine's
// neighbours keep running (Go's entersyscall/exitsyscall). Returns fn's
// result, or rethrows its exception in the goroutine. fn must not call into
// goro (channels, spawns, goro I/O): that is a fatal error.
//
// Signals and EINTR: a goroutine that runs 10 ms without a scheduling point
// gets SIGURG (its P moves to another thread: the hog protocol). The handler
// is SA_RESTART, but some calls are never restarted (signal(7)): poll,
// epoll_wait, select, nanosleep/usleep, sem_timedwait, io_getevents. Made
// directly from a goroutine they can return EINTR (or sleep short); inside
// blocking() they are not signalled, so put such calls here. SIGTERM,
// SIGINT, SIGHUP and SIGQUIT never interrupt fn: the runtime takes them on a
// thread of its own.
// Threads: a call that lasts hands its P on, and each hogging goroutine
// keeps its thread while its P moves, so the process can run more threads
// than maxprocs(): one per concurrent blocking call or hog, plus maxprocs,
// up to Options::max_threads.
template <class F>
auto blocking(F&& fn) -> decltype(fn()) {
  std::exception_ptr error;
  if constexpr (std::is_void_v<decltype(fn())>) {
    detail::enter_syscall("goro::blocking");
    try {
      std::forward<F>(fn)();
    } catch (...) {
      error = std::current_exception();
    }
    detail::exit_syscall();
    if (error) std::rethrow_exception(error);
  } else {
    std::optional<decltype(fn())> result;
    detail::enter_syscall("goro::blocking");
    try {
      result.emplace(std::forward<F>(fn)());
    } catch (...) {
      error = std::current_exception();
    }
    detail::exit_syscall();
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  }
}

// Lets other goroutines run; the caller goes to the back of its P's queue.
void yield();

// Parks the calling goroutine for at least `d`.
void sleep_for(std::chrono::nanoseconds d);
void sleep_until(std::chrono::steady_clock::time_point t);

// The current number of Ps.
int maxprocs();

// Sets the number of Ps now, live (Ps are added, or retired at their next
// scheduling point), and stops following the CPU limit, like Go's
// runtime.GOMAXPROCS(n). n <= 0 changes nothing. Returns the previous count.
int set_maxprocs(int n);
// Returns to the automatic count (GOMAXPROCS env, affinity, cgroup limit,
// re-read by sysmon at most once a second), like Go's SetDefaultGOMAXPROCS.
void reset_maxprocs();

// Live goroutines (spawned and not yet finished), including the main one.
std::size_t num_goroutines();
// Where maxprocs() came from: the CPU affinity count (or GORO_DEBUG=ncpu),
// the cgroup CPU quota that lowered it, GOMAXPROCS in the environment, or an
// explicit Options::maxprocs / set_maxprocs.
enum class MaxprocsSource { kAffinity, kCgroup, kEnv, kExplicit };
// "affinity", "cgroup", "env", "explicit".
std::string_view to_string(MaxprocsSource s);
// The process's memory now. limit_bytes: the cgroup memory limit, the
// smallest hard limit over the process's cgroup ancestry (v1 or v2), 0 when
// none; read at start and re-read by sysmon once a second. cgroup_bytes:
// what the kernel weighs against that limit, the working set of the cgroup
// that sets it (usage minus inactive page cache: anonymous and kernel
// memory, page tables, socket buffers on v2), 0 without a limit. rss_bytes:
// the resident set size from /proc/self/statm. Both are sampled at most once
// per 10 ms (calls in between share the last reading), so calling this per
// request costs a few atomic loads. All 0 when no runtime is running.
// Gives memory the process no longer uses back to the kernel now, as Go's
// debug.FreeOSMemory: the pages of every free goroutine stack (the stack
// cache otherwise keeps up to 1,024 committed; an idle P's most recent
// stacks go back to it first) and malloc's free heap
// (malloc_trim). Costs a madvise per cached stack: call it under memory
// pressure (middleware::memory_guard does, once a second while shedding),
// not per request. Blocks its thread; from a goroutine, wrap it in
// goro::blocking.
void free_os_memory();
struct MemoryUsage {
  std::uint64_t limit_bytes = 0;
  std::uint64_t cgroup_bytes = 0;
  std::uint64_t rss_bytes = 0;
};
MemoryUsage memory_usage();

// A snapshot of the runtime's counters (monotonic since goro::run started
// unless noted "now").
struct RuntimeStats {
  std::uint64_t goroutines = 0;  // now
  std::uint64_t threads = 0;     // Ms created so far that have not exited (now)
  std::uint64_t maxprocs = 0;    // now
  MaxprocsSource maxprocs_source = MaxprocsSource::kAffinity;  // now
  std::uint64_t memory_limit_bytes = 0;                        // now: memory_usage().limit_bytes
  std::uint64_t memory_cgroup_bytes = 0;                       // now: memory_usage().cgroup_bytes
  std::uint64_t rss_bytes = 0;                                 // now: memory_usage().rss_bytes
  std::uint64_t idle_procs = 0;                                // now
  std::uint64_t spinning_threads = 0;                          // now
  std::uint64_t idle_threads = 0;                              // now
  std::uint64_t global_runq = 0;                               // now
  std::uint64_t spawns = 0;
  std::uint64_t steals = 0;  // successful steal operations
  std::uint64_t stolen_goroutines = 0;
  std::uint64_t global_takes = 0;      // batches taken from the global queue
  std::uint64_t parks = 0;             // goroutine parks
  std::uint64_t m_parks = 0;           // M futex sleeps
  std::uint64_t preempt_requests = 0;  // goroutines flagged by sysmon for running > 10 ms
  std::uint64_t netpoll_wakes = 0;     // goroutines readied by the poller
  std::uint64_t handoffs = 0;          // Ps handed to another M: the two below
  std::uint64_t syscall_handoffs = 0;  // ... whose M was in a blocking call
  std::uint64_t hog_handoffs = 0;      // ... taken from a goroutine flagged as a hog
  // Stacks: how many are guarded by the page-table guard (MADV_GUARD_INSTALL),
  // by an mprotect'd guard page (costs 2 of vm.max_map_count each), or only by
  // a canary checked at every switch (the map-count budget ran out).
  std::uint64_t stacks_live = 0;
  std::uint64_t stacks_guard_install = 0;
  std::uint64_t stacks_guard_mprotect = 0;
  std::uint64_t stacks_canary_only = 0;
  std::int64_t map_count_budget_left = 0;  // mprotect guards still affordable; -1 if not needed
};
RuntimeStats stats();

}  // namespace goro
