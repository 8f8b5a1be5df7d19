// G, the goroutine: a stack, a saved context and a state (docs/DESIGN.md "G, M and P").
#pragma once

#include <atomic>
#include <cstdint>
#include <source_location>

#include "goro/detail/park.hpp"
#include "goro/detail/spawn.hpp"
#include "scheduler/stack.hpp"

namespace goro::detail {

struct M;

enum class GStatus : std::uint32_t {
  kIdle = 0,      // allocated, not yet started, or on a free list
  kRunnable = 1,  // in a run queue
  kRunning = 2,   // on an M
  kSyscall = 3,   // in a blocking call on its M, its P handed off or about to be
  kWaiting = 4,   // parked (wait_reason says why)
  kDead = 6,      // finished, its G and stack not yet recycled
};
const char* gstatus_string(GStatus s) noexcept;

// A saved execution context and what the sanitizers need to know about it.
struct Context {
  void* sp = nullptr;                  // saved stack pointer while suspended
  const void* stack_bottom = nullptr;  // ASan: lowest address of the stack
  std::size_t stack_size = 0;          // ASan
  void* asan_fake_stack = nullptr;     // ASan: fake-stack handle saved at switch-out
  void* tsan_fiber = nullptr;          // TSan fiber of this context
};

// Layout: a spawn on one core writes only the first two cache lines (the
// callable, then the spawn fields); what the runner writes (context, stack,
// thread state) is in the lines after them, and a dead G's leftovers are
// reset by gfree_put on the core it died on, where those lines already are.
// A spawner reusing a G freed on another core thus pulls two lines, not five.
struct alignas(64) G {
  // --- line 0: the body, when it fits (see task below)
  static constexpr std::size_t kInlineTask = 64;
  static constexpr std::size_t kInlineTaskAlign = 16;
  alignas(kInlineTaskAlign) unsigned char task_buf[kInlineTask];
  // --- line 1: written at spawn
  // The body: constructed in task_buf when it fits (the G has no stack until
  // it first runs: galloc.cpp "Late stack binding"), else at the top of the
  // stack, bound at spawn, else on the heap (see spawn.hpp).
  const TaskVTable* task = nullptr;
  void* task_storage = nullptr;
  // Written at spawn; atomic (relaxed) because the SIGQUIT dump, sysmon and
  // scheddetail read them while the G may be dying and being reused by a
  // spawn on another M (a reader may then see the new goroutine's values,
  // never torn ones). A relaxed access is a plain mov on x86-64 and AArch64.
  std::atomic<std::uint64_t> id{0};
  std::atomic<std::source_location> spawned_at{};
  // Written by the M that owns the G's current transition (spawn, park,
  // ready, execute); read racily by dumps and sysmon, hence atomic.
  std::atomic<GStatus> status{GStatus::kIdle};
  // Atomic (relaxed) because the SIGQUIT dump and scheddetail read them while
  // goroutines run.
  std::atomic<WaitReason> wait_reason{WaitReason::kNone};
  // The G holds a stack credit (stack.hpp "Stack credits"): from its spawn
  // until its default-size stack is freed. Owner-written.
  bool stack_credit = false;
  // Set by sysmon when the G has run for more than 10 ms; honoured at the
  // next runtime entry (cooperative preemption); cleared when the G parks,
  // yields or is scheduled.
  std::atomic<bool> preempt{false};
  // Intrusive link for GQueue (global queue, batches, free lists). Owned by
  // whoever holds the queue the G is in.
  G* schedlink = nullptr;
  // --- from the end of line 1 on (byte 112): written by the runner
  Context ctx;
  Stack stack;
  // (The thread state that migrates with the G — errno, exception globals,
  // M::locks — is kept by the switching frame on the G's stack: sched.hpp
  // ThreadState.)
  std::atomic<std::int64_t> park_time{0};  // when it parked (dumps; relaxed)
  // The blocking call it is in (kSyscall) and when it entered it, for sysmon's
  // handoff report. Owner-written before the P is released; read by sysmon
  // after its CAS on P::status. The CAS orders the read after the write of the
  // call sysmon retook, but not before the next one: once the CAS wins, the
  // owner can return, take another P and enter its next call while sysmon is
  // still reading. Hence atomics (relaxed); a report may mix two calls.
  std::atomic<const char*> syscall_what{nullptr};
  std::atomic<std::int64_t> syscall_since{0};
  // When the slice began that sysmon last flagged as a hog (its P's
  // sysmon_when then), for the hog report: the P the signal then detaches
  // may be another one, with a schedule time of its own. Written and read
  // by sysmon only.
  std::int64_t hog_since = 0;
  G* alllink = nullptr;  // all Gs ever allocated (sched.allg), for dumps and teardown
  // --- line 3, from byte 216: what the G's resumption reads first, named by
  // whoever readied it (the netpoller: the PollDesc and the two addresses
  // its waiter named, netpoll "Warming a batch"), for the run queue to
  // request while the G before it runs (prefetch_queued). Hints: never
  // dereferenced, so a stale one (its memory freed, reused) costs a wasted
  // fetch and nothing else; relaxed; cleared when the G is freed.
  std::atomic<const void*> wake_hint[3] = {};
};

// Prefetches, for writing, the lines of `g` that making it runnable and
// resuming it touch first: the callable (line 0), the status and the run
// queue's link (line 1), the context and stack a resume binds and writes
// (the end of line 1 and line 2). A hint, for the netpoller's batches (netpoll "Warming a batch"):
// it reads nothing.
inline void prefetch_for_resume(const G* g) {
  const auto* b = reinterpret_cast<const char*>(g);
  __builtin_prefetch(b, 1);
  __builtin_prefetch(b + 64, 1);
  __builtin_prefetch(b + 128, 1);
}

// Up to 32 bytes at `p`: the line it starts in and, when they cross into
// the next, that one too; nothing for null. For writing (a woken reader's
// first touches are reference counts and state words). A hint: reads
// nothing.
inline void prefetch32(const void* p) {
  if (p == nullptr) return;
  const auto* b = static_cast<const char*>(p);
  __builtin_prefetch(b, 1);
  __builtin_prefetch(b + 31, 1);
}

// Names what `g`'s resumption reads first (see G::wake_hint).
inline void set_wake_hints(G* g, const void* a, const void* b, const void* c) {
  g->wake_hint[0].store(a, std::memory_order_relaxed);
  g->wake_hint[1].store(b, std::memory_order_relaxed);
  g->wake_hint[2].store(c, std::memory_order_relaxed);
}

// The run queue's request, as it hands out a G, for the two queued behind
// it: `next` runs after the one handed out, `after` after that. `next`'s
// own lines and the addresses its hints name (read from its line 3, which
// the request before this one fetched: `after` then), and `after`'s line 3
// for the next time. The G handed out runs for a request's worth of
// syscalls meanwhile, long enough for these to arrive and short enough for
// them to stay (netpoll "Warming a batch"; the netpoller's own requests at
// readiness come too early for the later Gs of a batch and too late for the
// first). Reads only hints and slots; a G a thief takes meanwhile costs
// wasted fetches.
inline void prefetch_queued(const G* next, const G* after) {
  prefetch_for_resume(next);
  for (const auto& h : next->wake_hint)
    prefetch32(h.load(std::memory_order_relaxed));
  if (after != nullptr) __builtin_prefetch(&after->wake_hint);
}

}  // namespace goro::detail
