// G allocation and recycling, and goroutine stacks: what goro::go costs.
// new_g/start_g (goro::go), abandon_g, the per-P free lists of dead Gs, the
// per-P stack caches and stack credits (stack.hpp), late stack binding. The
// runtime's lifecycle (init, M creation, teardown) is proc.cpp.
//
// ## G recycling
// A dead G goes on its P's free list (up to 64; beyond that half move to a
// global list), so a spawn usually costs no malloc and no lock. Gs are never
// freed before teardown: sched.allg lists every G ever made, for dumps and
// for teardown.
//
// ## Late stack binding
// A goroutine whose callable fits in G::task_buf (64 bytes: a few pointers, a
// Conn, a shared_ptr) gets no stack at spawn; mark_running binds one just
// before its first switch-in (bind_stack), from its P's stack cache, else the
// pool. A dead goroutine's stack goes back to the cache of the P it died on.
// Two things follow. Goroutines queued but not started cost a G each, not a
// stack each: a burst of a million spawns does not fault in a million stack
// pages. And a goroutine that starts right after another one ended on the
// same P runs on that one's stack, whose top lines are still in this core's
// cache, instead of on a stack last touched by the core that spawned it.
// (Go binds the stack at spawn: its spawn+complete and skynet costs are
// dominated by faulting and moving stacks between cores.) The spawn still
// fails at the call site when stack memory runs out: it takes a stack credit
// (stack.hpp "Stack credits"), which guarantees that binding cannot fail.
// Larger callables are built at the top of a stack bound at spawn, as are
// goroutines with a non-default stack size (their own mapping).
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"
#include "scheduler/switch.hpp"

#if defined(GORO_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace goro::detail {
namespace {

// The default stack reservation (stack.hpp "Size").
constexpr std::size_t kDefaultStack = 512 * 1024;
// Stack credits move between a P and the pool in batches of kCreditBatch; a
// P keeps at most kCreditMax.
constexpr std::int64_t kCreditBatch = 64;
constexpr std::int64_t kCreditMax = 2 * kCreditBatch;
// A P refills an empty stack cache with up to this many at once.
constexpr std::int64_t kStackBatch = 8;
// Goroutine ids are handed to Ps in batches of this many (Go's _GoidCacheBatch).
constexpr std::uint64_t kGoidBatch = 16;

StackPool* g_stacks = nullptr;

// Dead Gs beyond the per-P caches (sched.lock).
std::vector<G*> g_free_global;

std::size_t resolve_stack_size(std::size_t requested) {
  if (requested != 0) return requested;
  // Read once, by goro::run before any thread of the runtime exists.
  if (const char* env = std::getenv("GORO_STACK_SIZE")) {  // NOLINT(concurrency-mt-unsafe)
    char* end = nullptr;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0' && v >= 16 * 1024) return static_cast<std::size_t>(v);
    std::fprintf(stderr, "goro: GORO_STACK_SIZE=%s is not a size >= 16384 bytes; using %zu\n", env,
                 kDefaultStack);
  }
  return kDefaultStack;
}

// Gs are carved from slabs of 64 (never freed before teardown): 256 bytes
// each with no per-allocation header, which the parked-goroutine RSS budget
// (4.5 KiB with the stack page) notices. allg_lock.
constexpr int kGSlab = 64;
std::vector<std::unique_ptr<G[]>> g_slabs;
int g_slab_left = 0;

G* gfree_get(P* p) {
  if (p != nullptr) {
    const int n = p->ngfree.load(std::memory_order_relaxed);
    if (n > 0) {
      p->ngfree.store(n - 1, std::memory_order_relaxed);
      return p->gfree[n - 1];
    }
  }
  std::lock_guard<SchedMutex> lock(sched.lock);
  std::vector<G*>& q = g_free_global;
  if (q.empty()) return nullptr;
  G* g = q.back();
  q.pop_back();
  if (p != nullptr) {
    // Refill the local cache with up to 32 (Go's gfget): pointers only.
    const int k = static_cast<int>(std::min<std::size_t>(q.size(), P::kGFreeMax / 2));
    std::memcpy(p->gfree, q.data() + (q.size() - static_cast<std::size_t>(k)), sizeof(G*) * k);
    q.resize(q.size() - static_cast<std::size_t>(k));
    p->ngfree.store(k, std::memory_order_relaxed);
  }
  return g;
}

// # Trimmed when they cool
// A goroutine that went deep must not leave its stack committed for long
// (stack.hpp "Size"), but probing every exiting goroutine's stack
// (trim_deep: a 4 KiB read) was 611 of the ~1,500 instructions a goroutine's
// exit and the next one's start cost, paid on every release of an idle
// connection (framework/http "Released when drained") and every spawn. A
// stack that is bound again right away needs no trim: the next goroutine
// uses what the last one committed. So the P's cache probes a stack only
// when it cools: when it sinks below the kHotStacks most recently freed
// ones, or leaves the cache (P::stack_cache's invariant). What a P may keep
// committed beyond 64 KiB a stack is then its kHotStacks stacks, which the
// next goroutines to start there run on.

// A cached stack cools: probed once if a goroutine ran on it since.
void cool_stack(Stack& s) {
  if (s.used) StackPool::trim_deep(s);
  s.used = false;
}

// Keeps P::nstack_cache <= P::stack_credits (stack.hpp "Stack credits").
void trim_stack_cache(P* p) {
  while (p->nstack_cache > p->stack_credits) {
    Stack& s = p->stack_cache[--p->nstack_cache];
    cool_stack(s);  // maybe a hot one
    stack_pool().release(s);
  }
}

// Takes a stack credit for a goroutine spawned on p; false (errno set) when
// the pool cannot map the arenas to back it.
bool take_credit(P* p) {
  if (p == nullptr) return stack_pool().grant_credits(1);
  if (p->stack_credits == 0) {
    if (!stack_pool().grant_credits(kCreditBatch)) return false;
    p->stack_credits = kCreditBatch;
  }
  --p->stack_credits;
  trim_stack_cache(p);
  return true;
}

// Gives `g`, a credit holder on p, a default-size stack: the most recently
// freed one in p's cache, else one from the pool, which the credit
// guarantees. Copied into the G from the cache's slot itself: a Stack
// returned by value was spilled and read back across its halves, a failed
// store forward that waited for every store before it, a cold G's among
// them (most of bind_stack's time at 1,000 connections).
void attach_credited_stack(P* p, G* g) {
  if (p == nullptr) {
    Stack s;
    if (!stack_pool().allocate(sched.default_stack, &s)) {
      fatal("sched: no stack for a goroutine holding a stack credit (pool accounting broken)");
    }
    attach_stack(g, s);
    return;
  }
  if (p->nstack_cache == 0) {
    // Refill in a batch (one pool lock for several binds): the caller's
    // credit backs the first, the P's unspent credits the rest.
    const int want = static_cast<int>(std::min<std::int64_t>(kStackBatch, p->stack_credits + 1));
    p->nstack_cache = stack_pool().allocate_batch(p->stack_cache, want);
    if (p->nstack_cache == 0) {
      fatal("sched: no stack for a goroutine holding a stack credit (pool accounting broken)");
    }
  }
  attach_stack(g, p->stack_cache[--p->nstack_cache]);
}

}  // namespace

void galloc_init(std::size_t stack_size) {
  sched.default_stack = resolve_stack_size(stack_size);
  g_stacks = new StackPool(sched.default_stack);
}

void galloc_free_all() {
  g_slabs.clear();
  g_slab_left = 0;
  delete g_stacks;
  g_stacks = nullptr;
  g_free_global = std::vector<G*>{};
}

// A new G, registered in sched.allg.
G* alloc_g() {
  std::lock_guard<std::mutex> lock(sched.allg_lock);
  if (g_slab_left == 0) {
    g_slabs.push_back(std::make_unique<G[]>(kGSlab));
    g_slab_left = kGSlab;
  }
  G* g = &g_slabs.back()[kGSlab - g_slab_left--];
#if defined(GORO_TSAN)
  g->ctx.tsan_fiber = __tsan_create_fiber(0);
#endif
  g->alllink = sched.allg;
  sched.allg = g;
  return g;
}

void attach_stack(G* g, const Stack& s) {
  g->stack = s;
  g->ctx.stack_bottom = s.lo;
  g->ctx.stack_size = s.size;
}

StackPool& stack_pool() {
  return *g_stacks;
}

void gfree_spill_locked(P* p) {
  const int n = p->ngfree.load(std::memory_order_relaxed);
  g_free_global.insert(g_free_global.end(), p->gfree, p->gfree + n);
  p->ngfree.store(0, std::memory_order_relaxed);
}

void bind_stack(P* p, G* g) {
  attach_credited_stack(p, g);
  g->ctx.sp = ctx_make(g->stack.hi(), &g_main);
}

// # Idle Ps' hot stacks
// A P keeps its kHotStacks stacks as deep as their last goroutines left
// them, for the next goroutines it runs; a P that goes idle runs none, and
// the pool's scavenger never sees its cache, so a server idle after a burst
// of deep handlers kept up to 4 x 448 KiB per P committed for good. sysmon
// (from Ps idle for a second: kIdleStackAge in sysmon.cpp) and
// free_os_memory() (from every idle P) take those a goroutine ran on since
// their last probe out of the idle Ps' caches, under sched.lock: an idle P
// has no owner, and taking one off the idle list takes that lock, so the
// cache is the lock's for that moment (the owner's last writes came before
// its pidleput_locked, the next owner's reads come after its
// pidleget_locked). They are in the pool's in_transit_ count before the
// lock goes (the P keeps the credits they backed, and a credit holder that
// finds the pool short waits for them); the syscalls (a probe, a madvise)
// come after it, then the pool takes them. A call takes at most kBatch
// (16 Ps' worth, on its own stack: sysmon calls it on most idle passes, and
// nothing may be allocated under the lock); what is left is pending.
IdleStackTrim trim_idle_hot_stacks(std::int64_t min_idle) {
  constexpr int kBatch = 16 * P::kHotStacks;
  IdleStackTrim r;
  Stack taken[kBatch];
  int n = 0;
  const std::int64_t now = coarse_now();
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    for (P* p = sched.pidle; p != nullptr; p = p->link) {
      const std::uint64_t mark = std::uint64_t{p->schedtick.load(std::memory_order_relaxed)} + 1;
      if (p->idle_mark != mark) {
        p->idle_mark = mark;
        p->idle_since = now;
      }
      // Only the hot ones may be deep (P::stack_cache's invariant); the
      // others keep their order, and so do those over the batch.
      const int top = p->nstack_cache;
      int kept = std::max(0, top - P::kHotStacks);
      const bool old_enough = now - p->idle_since >= min_idle;
      for (int i = kept; i < top; ++i) {
        Stack& s = p->stack_cache[i];
        if (s.used && old_enough && n < kBatch) {
          taken[n++] = s;
        } else {
          r.pending = r.pending || s.used;
          p->stack_cache[kept++] = s;
        }
      }
      p->nstack_cache = kept;
    }
    if (n > 0) stack_pool().begin_transit(static_cast<std::size_t>(n));
  }
  for (int i = 0; i < n; ++i)
    cool_stack(taken[i]);
  if (n > 0) stack_pool().end_transit(taken, n);
  r.taken = n;
  return r;
}

void stack_cache_flush(P* p) {
  if (p->stack_credits > 0) stack_pool().return_credits(p->stack_credits);
  p->stack_credits = 0;
  trim_stack_cache(p);  // with no credits left, every cached stack goes back
}

void gfree_put(P* p, G* g) {
  [[maybe_unused]] void* const last_sp = g->ctx.sp;  // where its frames end (ASan below)
  g->task = nullptr;
  g->task_storage = nullptr;
  set_wake_hints(g, nullptr, nullptr, nullptr);  // not the next goroutine's
  g->wait_reason.store(WaitReason::kNone, std::memory_order_relaxed);
  g->status.store(GStatus::kIdle, std::memory_order_relaxed);
  // Fresh thread state for the next goroutine on this G. (A preempt flag
  // sysmon sets on a G that just died costs its next incarnation one yield.)
  g->preempt.store(false, std::memory_order_relaxed);
  g->ctx.asan_fake_stack = nullptr;
  g->ctx.sp = nullptr;
  if (g->stack_credit) {
    g->stack_credit = false;
    if (p != nullptr) {
      ++p->stack_credits;
    } else {
      stack_pool().return_credits(1);
    }
  }
  if (g->stack.lo != nullptr) {
#if defined(GORO_ASAN)
    // The dead goroutine's last frames never returned (exit switches away), so
    // their redzones are still poisoned; the next goroutine on this stack must
    // start clean. Only those frames: every deeper frame unpoisoned its
    // redzones when it returned (and a throw unpoisons what it unwinds), so
    // the shadow below the saved sp is already clear. The slack covers the
    // red zone under sp. Clearing the whole 512 KiB stack instead wrote (and
    // committed) 64 KiB of shadow per goroutine: 100,000 goroutines took a
    // minute under ASan. Invariant: a stack bound to no live goroutine has
    // all of its shadow clear (StackPool::release relies on it).
    {
      constexpr std::size_t kSlack = 4096;
      char* from = g->stack.lo;
      auto* sp = static_cast<char*>(last_sp);
      if (sp != nullptr && sp > g->stack.lo + kSlack && sp <= g->stack.hi()) from = sp - kSlack;
      __asan_unpoison_memory_region(from, static_cast<std::size_t>(g->stack.hi() - from));
    }
#endif
    // Default-size stacks go to this P's cache (LIFO: the next goroutine to
    // start here runs on it while it is still in this core's cache); the
    // cache is bounded by its size and by the P's credits. The rest, and
    // odd-sized stacks (their own mapping), go back to the pool. A goroutine
    // that went deep leaves no more committed than 64 KiB a stack once the
    // stack cools ("Trimmed when they cool"); an own mapping is unmapped.
    if (p != nullptr && g->stack.pooled && p->nstack_cache < p->stack_credits) {
      if (p->nstack_cache == P::kStackCache) {
        // Full: the coldest half (trimmed: below the hot ones) goes back to
        // the pool in one batch.
        constexpr int kHalf = P::kStackCache / 2;
        static_assert(kHalf <= P::kStackCache - P::kHotStacks);
        stack_pool().release_batch(p->stack_cache, kHalf);
        std::memmove(p->stack_cache, p->stack_cache + kHalf, sizeof(Stack) * kHalf);
        p->nstack_cache = kHalf;
      }
      Stack& pushed = p->stack_cache[p->nstack_cache++];
      pushed = g->stack;
      pushed.used = true;
      // The stack that sinks below the hot ones now: probed once, unless it
      // came from the pool (or was probed before) and no goroutine ran on it
      // since.
      if (p->nstack_cache > P::kHotStacks)
        cool_stack(p->stack_cache[p->nstack_cache - 1 - P::kHotStacks]);
    } else {
      if (g->stack.pooled) StackPool::trim_deep(g->stack);
      g->stack.used = false;
      stack_pool().release(g->stack);
    }
    attach_stack(g, Stack{});
  }
  if (p == nullptr) {
    std::lock_guard<SchedMutex> lock(sched.lock);
    g_free_global.push_back(g);
    return;
  }
  if (p->stack_credits > kCreditMax) {
    stack_pool().return_credits(kCreditBatch);
    p->stack_credits -= kCreditBatch;
    trim_stack_cache(p);
  }
  // LIFO: the G freed last (its struct still in cache) is the next one
  // reused. When full, the 32 coldest go to the global cache.
  int n = p->ngfree.load(std::memory_order_relaxed);
  if (n == P::kGFreeMax) {
    constexpr int kHalf = P::kGFreeMax / 2;
    {
      std::lock_guard<SchedMutex> lock(sched.lock);
      g_free_global.insert(g_free_global.end(), p->gfree, p->gfree + kHalf);
    }
    std::memmove(p->gfree, p->gfree + kHalf, sizeof(G*) * kHalf);
    n = kHalf;
  }
  p->gfree[n] = g;
  p->ngfree.store(n + 1, std::memory_order_relaxed);
}

G* new_g(std::size_t stack_size, std::size_t fn_size, std::size_t fn_align, void** storage,
         const std::source_location& where) {
  M* m = current_m();
  if (m == nullptr || m->curg == nullptr) {
    throw std::logic_error("goro::go called outside a goroutine (use goro::run first)");
  }
  GORO_CHECK(m->thread_locks == 0,
             "sched: goro::go called holding a thread mutex (goro/detail/thread_lock.hpp)");
  m = runtime_enter();
  struct Leave {
    ~Leave() { runtime_leave(); }
  } leave;
  maybe_preempt(m->curg);
  m = current_m();
  P* p = m->p;
  const std::size_t want = stack_size == 0 ? sched.default_stack : stack_size;
  const bool pooled = want == sched.default_stack;
  G* g = gfree_get(p);
  if (g == nullptr) {
    g = alloc_g();
  }
  if (pooled) {
    if (!take_credit(p)) {
      int err = errno;
      gfree_put(p, g);
      throw std::system_error(err, std::generic_category(),
                              fmt::format("goro::go: cannot map a {}-byte goroutine stack", want));
    }
    g->stack_credit = true;
  }
  // Per-P batches of ids (Go's goidcache): no shared counter per spawn.
  if (p != nullptr) {
    if (p->goid_next == p->goid_end) {
      p->goid_next = sched.next_goid.fetch_add(kGoidBatch, std::memory_order_relaxed);
      p->goid_end = p->goid_next + kGoidBatch;
    }
    g->id.store(p->goid_next++, std::memory_order_relaxed);
  } else {
    g->id.store(sched.next_goid.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
  }
  g->spawned_at.store(where, std::memory_order_relaxed);
  // preempt and the ASan fake stack were reset by gfree_put, on the core the
  // G died on (see G's layout).
  if (pooled && fn_size <= G::kInlineTask && fn_align <= G::kInlineTaskAlign) {
    // Late binding: mark_running gives it a stack when it first runs.
    *storage = g->task_buf;
    g->task_storage = g->task_buf;
    return g;
  }
  if (pooled) {
    attach_credited_stack(p, g);
  } else {
    Stack s;
    if (!stack_pool().allocate(want, &s)) {
      int err = errno;
      gfree_put(p, g);
      throw std::system_error(err, std::generic_category(),
                              fmt::format("goro::go: cannot map a {}-byte goroutine stack", want));
    }
    attach_stack(g, s);
  }
  // The callable lives at the top of the stack, above the first frame.
  char* top = g->stack.hi();
  char* at = align_down(top - fn_size, std::max<std::size_t>(fn_align, 16));
  if (fn_size > g->stack.size / 4) {
    // Too large for the stack: heap it (rare; a lambda capturing an array).
    GORO_CHECK(fn_align <= kHeapTaskAlign, "sched: over-aligned goroutine callable");
    void* heap = ::operator new (fn_size, std::align_val_t{kHeapTaskAlign});
    *storage = heap;
    g->task_storage = heap;
    g->ctx.sp = ctx_make(top, &g_main);
    return g;
  }
  *storage = at;
  g->task_storage = at;
  g->ctx.sp = ctx_make(at, &g_main);
  return g;
}

void start_g_parked(G* g, const TaskVTable* vt, WaitReason why) noexcept {
  g->task = vt;
  M* m = runtime_enter();
  P* p = m->p;
  // Counted as spawned now, as start_g: it is a goroutine from here on.
  p->spawned.store(p->spawned.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  g->wait_reason.store(why, std::memory_order_relaxed);
  g->park_time.store(sched.sysmon_clock.load(std::memory_order_relaxed), std::memory_order_relaxed);
  // release: whoever readies it (another thread) sees the body and the id.
  g->status.store(GStatus::kWaiting, std::memory_order_release);
  runtime_leave();
}

void abandon_g(G* g) noexcept {
  M* m = runtime_enter();
  gfree_put(m->p, g);
  runtime_leave();
}

void start_g(G* g, const TaskVTable* vt) noexcept {
  g->task = vt;
  M* m = runtime_enter();
  P* p = m->p;
  p->spawned.store(p->spawned.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  g->status.store(GStatus::kRunnable, std::memory_order_release);  // dumps read id after it
  runq_put(p, g, true);
  wakep();
  runtime_leave();
}

}  // namespace goro::detail
