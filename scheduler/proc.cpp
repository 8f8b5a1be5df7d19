// Runtime lifecycle: goro::run, M creation, teardown, and the public
// queries (maxprocs, num_goroutines). Goroutine creation and recycling and
// their stacks are galloc.cpp.
//
// ## Lifetime of a runtime
// goro::run turns the calling thread into M0, creates the Ps, the poller and
// sysmon, queues main_fn as the first goroutine and enters the scheduling
// loop. When main_fn returns, the runtime stops like a Go program exits:
// `stopping` is set, every idle M and the poller are woken, and each M leaves
// its loop at its next scheduling point. M0 then joins the other threads and
// frees every G and stack, including those of goroutines still parked (they
// are abandoned without unwinding, as in Go). A goroutine that never reaches a
// scheduling point keeps its M, and goro::run waits for it.
#include <fmt/core.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "config/maxprocs/maxprocs.hpp"
#include "goro/detail/fault.hpp"
#include "goro/runtime.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"
#include "scheduler/switch.hpp"

#if defined(GORO_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#endif

namespace goro::detail {
namespace {

std::atomic<bool> g_running{false};

void m_start(M* m) {
  block_process_signals();  // "The signal thread" (signals.cpp)
  set_current_m(m);
  m->tid = static_cast<int>(gettid());
  bind_thread_state(m);
  signal_stack_install(m);
#if defined(GORO_TSAN)
  m->g0.tsan_fiber = __tsan_get_current_fiber();
#endif
  acquirep(m, m->nextp);
  m->nextp = nullptr;
  schedule_loop(m);
  signal_stack_release(m);
  m->exited.store(true, std::memory_order_release);
  set_current_m(nullptr);
}

}  // namespace

void newm(P* p, bool spinning) {
  if (sched.mcount.load() >= sched.max_threads) {
    // Reported once per episode (until an M is created again), not per try.
    if (!sched.thread_limit_reported.exchange(true)) {
      std::fprintf(stderr,
                   "goro: thread limit reached (Options::max_threads = %d): goroutines wait for "
                   "a thread to come back from a blocking call\n",
                   sched.max_threads);
    }
  } else {
    auto m = std::make_unique<M>();
    M* raw = m.get();
    raw->nextp = p;
    raw->spinning = spinning;
    // Registered and started under sched.lock, and never once stopping is
    // set: teardown snapshots allm under the same lock after setting
    // stopping, so it joins every thread that was ever started (an M running
    // a goroutine at shutdown can still reach here through ready -> wakep).
    std::lock_guard<SchedMutex> lock(sched.lock);
    if (!sched.stopping.load(std::memory_order_relaxed)) {
      raw->id.store(sched.allm.size() + 1, std::memory_order_relaxed);  // M0 is 0
      sched.allm.push_back(std::move(m));
      try {
        if (take_fault(FaultSite::kThreadCreate))
          throw std::system_error(errno, std::generic_category(), "injected fault");
        raw->thread = std::thread([raw] { m_start(raw); });
        sched.mcount.fetch_add(1);
        return;
      } catch (const std::system_error& e) {
        std::fprintf(stderr, "goro: cannot create an OS thread: %s; an idle P stays idle\n",
                     e.what());
        raw->exited.store(true);
      }
    }
  }
  startm_failed(p, spinning);  // findrunnable.cpp: give the P back, recheck
}

namespace {

struct MainResult {
  std::function<int()> body;
  int result = 0;
};

void init_runtime(int maxprocs, std::size_t stack_size, int max_threads) {
  galloc_init(stack_size);
  sched.max_threads = max_threads > 0 ? max_threads : 10000;
  if (maxprocs <= 0) {
    goro::gomaxprocs::Resolution r = goro::gomaxprocs::resolve_default();
    maxprocs = r.procs;
    sched.maxprocs_explicit.store(r.from_env);
    sched.maxprocs_source.store(maxprocs_source_of(r));
  } else {
    sched.maxprocs_explicit.store(true);
    sched.maxprocs_source.store(static_cast<int>(MaxprocsSource::kExplicit));
  }
  {
    goro::gomaxprocs::MemoryLimitReader reader;
    publish_memory_limit(reader);
  }
  maxprocs = std::min(maxprocs, AllP::kMax);
  sched.gomaxprocs.store(maxprocs);
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    for (int i = 0; i < maxprocs; ++i) {
      P* p = new P;
      p->id = i;
      sched.allp.push(p);
    }
    for (int i = maxprocs - 1; i >= 1; --i)
      pidleput_locked(sched.allp[i]);
  }
  sched.poller = netpoll_create();
  sched.lastpoll.store(nanotime());
}

#if defined(GORO_ASAN)
// A goroutine still parked when main_fn returns is abandoned, as a Go
// program's are at exit; its stack is unmapped below. What only that stack
// referenced (an open connection's state, say) is not a leak the program
// made, so LeakSanitizer is told to treat it as reachable: every word of the
// used part of the stack that points into a heap object marks that object
// (and what it references) ignored. Words that are not heap pointers are
// skipped by LSan.
void lsan_ignore_abandoned(G* g) {
  const GStatus st = g->status.load(std::memory_order_relaxed);
  if (st == GStatus::kIdle || st == GStatus::kDead) return;
  if (g->task_storage == g->task_buf) {
    // Spawned, never run: the callable is in the G (late stack binding).
    for (std::size_t at = 0; at + sizeof(void*) <= sizeof g->task_buf; at += sizeof(void*)) {
      void* word;
      std::memcpy(&word, g->task_buf + at, sizeof word);
      __lsan_ignore_object(word);
    }
  } else if (g->task_storage != nullptr) {
    __lsan_ignore_object(g->task_storage);
  }
  if (g->stack.lo == nullptr) return;
  auto* from = static_cast<char*>(g->ctx.sp);
  if (from < g->stack.lo || from >= g->stack.hi()) return;  // running (not switched out)
  __asan_unpoison_memory_region(from, static_cast<std::size_t>(g->stack.hi() - from));
  for (char* at = from; at + sizeof(void*) <= g->stack.hi(); at += sizeof(void*)) {
    void* word;
    std::memcpy(&word, at, sizeof word);
    __lsan_ignore_object(word);
  }
}
#endif

void teardown(M* m0) {
  sysmon_stop();
  uninstall_preempt_signal();
  uninstall_fault_handlers();
  std::vector<M*> ms;
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    for (auto& m : sched.allm)
      ms.push_back(m.get());
  }
  for (M* m : ms) {
    if (m->thread.joinable()) m->thread.join();
  }
  // A foreign thread's ready() may still be inside wakep() (sched.cpp).
  while (foreign_calls.load(std::memory_order_acquire) != 0)
    std::this_thread::yield();
  signal_thread_stop();
  netpoll_destroy(sched.poller);
  sched.poller = nullptr;
  for (G* g = sched.allg; g != nullptr;) {
    G* next = g->alllink;
#if defined(GORO_ASAN)
    lsan_ignore_abandoned(g);
    // Its frames never returned: clear the whole stack's shadow (once per
    // goroutine still alive at the end of a run) before the pool reuses it.
    if (g->stack.lo != nullptr) __asan_unpoison_memory_region(g->stack.lo, g->stack.size);
#endif
    if (g->stack.lo != nullptr) stack_pool().release(g->stack);
#if defined(GORO_TSAN)
    __tsan_destroy_fiber(g->ctx.tsan_fiber);
#endif
    g = next;
  }
  for (P* p : sched.allp)
    delete p;
  galloc_free_all();
  signal_stack_release(m0);  // the caller's thread gets its own signal stack back (none)
  delete m0;
  set_current_m(nullptr);
  // A fresh scheduler for the next goro::run in this process.
  sched.~Sched();
  new (&sched) Sched();
}

}  // namespace

int run_main(std::function<int()> body, int maxprocs, std::size_t stack_size, int max_threads) {
  if (current_m() != nullptr) throw std::logic_error("goro::run called from inside a goroutine");
  if (g_running.exchange(true)) {
    throw std::logic_error("goro::run: another runtime is already running in this process");
  }
  init_runtime(maxprocs, stack_size, max_threads);
  M* m0 = new M;
  set_current_m(m0);
  m0->tid = static_cast<int>(gettid());
  bind_thread_state(m0);
  // The caller's errno and exception globals (goro::run may be called inside
  // a catch block): kept for its return, and the globals zeroed meanwhile
  // (sched.hpp "clean exception globals"). The slots outlive m0, which
  // teardown frees.
  int* const errno_slot = m0->errno_slot;
  void* const eh_slot = m0->eh_slot;
  const ThreadState caller_state = save_thread_state(m0);
#if defined(GORO_TSAN)
  m0->g0.tsan_fiber = __tsan_get_current_fiber();
#endif
  acquirep(m0, sched.allp[0]);
  sched.mcount.store(1);
  signal_stack_install(m0);
  install_fault_handlers();
  install_preempt_signal();
  signal_thread_start();  // before sysmon and the Ms: they inherit its mask
  sysmon_start();

  MainResult main{std::move(body)};
  // The main goroutine: spawned by hand since there is no current G yet.
  set_curg(m0, nullptr);
  {
    G* g = alloc_g();
    Stack s;
    if (!stack_pool().grant_credits(1) || !stack_pool().allocate(sched.default_stack, &s))
      fatal("cannot map the main goroutine's stack");
    g->stack_credit = true;
    attach_stack(g, s);
    g->id.store(sched.next_goid.fetch_add(1), std::memory_order_relaxed);
    g->spawned_at.store(std::source_location::current(), std::memory_order_relaxed);
    struct MainTask {
      MainResult* r;
      void operator()() const {
        r->result = r->body();
        stop_the_world_wake_all();
      }
    };
    void* at = align_down(s.hi() - sizeof(MainTask), 16);
    new (at) MainTask{&main};
    g->task_storage = at;
    g->task = &TaskOps<MainTask>::vtable;
    g->ctx.sp = ctx_make(at, &g_main);
    sched.allp[0]->spawned.store(1);
    g->status.store(GStatus::kRunnable);
    runq_put(sched.allp[0], g, false);
  }
  schedule_loop(m0);
  teardown(m0);
  g_running.store(false);
  restore_thread_state(errno_slot, eh_slot, caller_state);  // m0 is gone
  return main.result;
}

}  // namespace goro::detail

namespace goro {

int maxprocs() {
  return detail::sched.gomaxprocs.load(std::memory_order_relaxed);
}

std::size_t num_goroutines() {
  using namespace detail;
  // Exits are summed before spawns, so the count can only err high, never
  // low: every exit we see (acquire, pairing with exit_current's release)
  // happened after its goroutine's spawn, whose increment is then visible to
  // the later reads of the spawn counters. Summing both per P instead could
  // miss a goroutine spawned on one P and exited on another between the reads.
  std::int64_t exited = 0;
  for (P* p : sched.allp)
    exited += p->exited.load(std::memory_order_acquire);
  std::int64_t spawned = 0;
  for (P* p : sched.allp)
    spawned += p->spawned.load(std::memory_order_acquire);
  std::int64_t n = spawned - exited;
  return n < 0 ? 0 : static_cast<std::size_t>(n);
}

}  // namespace goro
