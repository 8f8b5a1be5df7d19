// Internal scheduler state: M, P and the global Sched (docs/DESIGN.md "G, M and P"). The
// essay on how they interact is at the top of sched.cpp.
//
// State is split by who may touch it:
// - M fields are owned by the thread running the M, except where noted.
// - P fields are owned by the M holding the P (p->m), except the run queue's
//   thief side, the timer heap (own lock) and the atomics noted.
// - Sched fields marked "(lock)" are guarded by sched.lock; the atomics are
//   read without it by the fast paths, with the orders argued at each use.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "goro/detail/check.hpp"
#include "scheduler/futex.hpp"
#include "scheduler/g.hpp"
#include "scheduler/poller.hpp"
#include "scheduler/runq.hpp"
#include "scheduler/timers.hpp"

namespace goro::detail {
struct M;
}  // namespace goro::detail

#if defined(__x86_64__)
#define GORO_INLINE_CURRENT_M 1
// The M running on this thread (current.cpp). C linkage so that the inline
// asm in current_m() can name it.
extern "C" {
extern __attribute__((tls_model("initial-exec"))) thread_local goro::detail::M* goro_tls_current_m;
}
#endif

namespace goro::detail {

struct P;

// Work to do right after a context switch, on the stack switched to (see
// sched.cpp "Switching directly between goroutines").
// An M's signal stack (signals.cpp "Signal stacks"): the mapping, guard page
// included, or nullptr when the thread kept a signal stack it already had.
struct SignalStack {
  void* mapping = nullptr;
  std::size_t bytes = 0;
};

enum class AfterSwitch : std::uint8_t {
  kNone,
  kRunqPut,    // the previous G yielded: put it at the tail of this P's queue
  kGlobalPut,  // the previous G was preempted: put it on the global queue
  kCommit,     // the previous G parked: run its commit, resume it if that fails
  kFree,       // the previous G exited: recycle it
};

struct M {
  // Set before the thread starts; atomic (relaxed) because scheddetail reads
  // it from sysmon through a P's relaxed m pointer, which orders nothing.
  std::atomic<std::uint64_t> id{0};
  Context g0;  // the thread's own stack, where the scheduler loop runs
  // The G running on this M, or nullptr on g0. Changed only through
  // set_curg, on this M's own thread, which keeps the thread-local mirror
  // that running_g() reads equal to it.
  G* curg = nullptr;
  P* p = nullptr;  // the P held, or nullptr
  // Handed over by startm before wake(); read by the M after Note::sleep
  // returns (the Note's release/acquire orders it).
  P* nextp = nullptr;
  bool spinning = false;  // counted in sched.nmspinning
  Note park;
  M* schedlink = nullptr;  // idle M list (lock)
  std::thread thread;      // empty for M0 (the thread that called goro::run)
  // After-switch action (see AfterSwitch), set before switching, run by the
  // code that resumes on this M.
  AfterSwitch after = AfterSwitch::kNone;
  G* after_g = nullptr;  // meaningful only while after != kNone
  ParkCommit after_commit = nullptr;
  void* after_arg = nullptr;
  Context* switch_from = nullptr;  // ASan builds only: the context switched away from
  std::atomic<bool> exited{false};
  int tid = 0;  // gettid(), for sysmon's preemption signal
  // Runtime frames active on this thread (Go's m.locks). The hog protocol
  // (syscall.cpp essay) may take the P away only while it is 0: the thread is
  // then in goroutine code, which never touches m->p. Written by this thread
  // only; read by its own signal handler (atomic: async-signal-safe).
  std::atomic<int> locks{0};
  // Runtime-internal locks (sync lock words) held by this thread; the hog
  // protocol also requires 0. Per thread, not per context: a lock taken by a
  // goroutine is released on the same thread (directly or by its park commit).
  std::atomic<int> nopreempt{0};
  // Thread mutexes held by the goroutine running here
  // (goro/detail/thread_lock.hpp), counted in checked builds only. Written by
  // this thread only. Must be 0 at every switch away and every spawn: a
  // goroutine never leaves its M holding one, so the count belongs to the
  // thread as well as to the goroutine.
  int thread_locks = 0;
  // The P this M gave up in a blocking call or had taken by the hog protocol;
  // reacquired at the next runtime entry (exit_syscall).
  P* oldp = nullptr;
  // This thread's errno and __cxa_eh_globals (bind_thread_state).
  int* errno_slot = nullptr;
  void* eh_slot = nullptr;
  // Fast-path switches since the last clock check (sched.cpp fast_next).
  std::uint32_t switches = 0;
  // Installed by the thread itself when it starts, freed when it exits.
  SignalStack sigstack;
};

enum class PStatus : std::uint32_t { kIdle = 0, kRunning = 1, kSyscall = 2, kDead = 4 };

struct P {
  int id = 0;
  std::atomic<PStatus> status{PStatus::kIdle};
  // Owner M, written under ownership transfer. Atomic (relaxed) only because
  // scheddetail reads it from sysmon while Ms trade Ps; owners order their
  // hand-offs with sched.lock and the status/running_g fences, not this.
  std::atomic<M*> m{nullptr};
  RunQueue runq;
  // Incremented on every non-inherited schedule; read by sysmon (hence
  // atomic, relaxed: a stale read only delays a preemption flag by a tick).
  std::atomic<std::uint32_t> schedtick{0};
  // The G running on this P (nullptr on g0); written by the owner, read by
  // sysmon to flag preemption. Release store / acquire load: sysmon touches
  // the G it finds (G::preempt), so the G's construction must be visible.
  std::atomic<G*> running_g{nullptr};
  TimerHeap timers;
  // Dead Gs (without stacks), for reuse by spawns on this P: a LIFO stack of
  // pointers, gfree[ngfree - 1] freed last. Owner only (ngfree is atomic for
  // sysmon's scheddetail line, relaxed). An array, not a GQueue: refilling it
  // from the global cache must not walk Gs last touched by another core.
  static constexpr int kGFreeMax = 64;
  std::atomic<int> ngfree{0};
  G* gfree[kGFreeMax];
  // Free default-size stacks, LIFO so the one freed last (still in this
  // core's cache) is bound next, and the P's unspent stack credits (stack.hpp
  // "Stack credits"). Owner only. Invariant: nstack_cache <= stack_credits
  // (every cached stack is backed by one of the P's credits).
  // Invariant: every cached stack but the kHotStacks most recent ones was
  // trimmed (StackPool::trim_deep) since its goroutine exited; so is every
  // stack that leaves the cache (galloc.cpp "Trimmed when they cool").
  static constexpr int kStackCache = 16;
  static constexpr int kHotStacks = 4;
  int nstack_cache = 0;
  std::int64_t stack_credits = 0;
  Stack stack_cache[kStackCache];
  // Goroutine ids [goid_next, goid_end) reserved for spawns here (owner only).
  std::uint64_t goid_next = 0;
  std::uint64_t goid_end = 0;
  // Goroutine accounting, owner-written (relaxed store of own value + 1);
  // num_goroutines() sums spawned - exited over all Ps.
  std::atomic<std::int64_t> spawned{0};
  std::atomic<std::int64_t> exited{0};
  P* link = nullptr;  // idle P list (lock)
  // Set (under sched.lock) when a shrink removes this running P; its owner
  // retires it at its next scheduling point (procresize.cpp). A grow clears
  // it, also under sched.lock. Invariant: under sched.lock, set implies
  // id >= gomaxprocs. A read without the lock is a hint only: the owner
  // retires the P only if the flag is still set under the lock
  // (retire_owned_p; issue 16 item 1).
  std::atomic<bool> retire_requested{false};
  // Set with retire_requested and at shutdown: the direct-switch fast path
  // must go through g0 (one flag to test instead of several).
  std::atomic<bool> leave_fast_path{false};
  // Goroutine parks on this P (owner-written; stats only).
  std::atomic<std::uint64_t> parks{0};
  // Bumped by the owner at each blocking call and at each hog release, so
  // sysmon can tell one long syscall from many short ones.
  std::atomic<std::uint32_t> syscalltick{0};
  // The owner M's thread id (0 when none), for the preemption signal.
  std::atomic<int> owner_tid{0};
  // trim_idle_hot_stacks (galloc.cpp "Idle Ps' hot stacks"): schedtick + 1
  // when it last found this P idle (0 before), and since when (coarse_now)
  // it has found it idle at that tick. Under sched.lock.
  std::uint64_t idle_mark = 0;
  std::int64_t idle_since = 0;
  // sysmon's private bookkeeping (sysmon thread only).
  std::uint32_t sysmon_tick = 0;
  std::int64_t sysmon_when = 0;
  std::uint32_t sysmon_syscalltick = 0;
  std::int64_t sysmon_syscallwhen = 0;
};

// Every P ever created, live or retired, indexed by id (maxprocs resizes:
// procresize.cpp). A slot is published once (release) and never cleared
// before teardown, and the count only grows, so any thread may iterate
// without a lock and see a prefix of fully constructed Ps. Writers hold
// sched.lock.
void lock_word_slow(std::atomic<std::uint32_t>& w) noexcept;  // sync/lock.cpp

// sched.lock: the word lock of sync/lock.hpp without its hog-protocol
// bookkeeping (sched.lock is taken on g0 and by threads without a P). Its
// critical sections are short, so it spins a few microseconds before it
// sleeps on the futex; std::mutex went to the kernel at once under
// contention, which was a quarter of the spawn benchmark's time (two Ms
// meeting at the global run queue and the dead-G cache).
class SchedMutex {
 public:
  void lock() noexcept {
    std::uint32_t free = 0;
    if (__builtin_expect(w_.compare_exchange_strong(free, 1, std::memory_order_acquire,
                                                    std::memory_order_relaxed),
                         1)) {
      return;
    }
    lock_word_slow(w_);
  }
  void unlock() noexcept {
    if (__builtin_expect(w_.exchange(0, std::memory_order_release) == 2, 0)) {
      futex(&w_, FUTEX_WAKE_PRIVATE, 1, nullptr);
    }
  }

 private:
  std::atomic<std::uint32_t> w_{0};  // 0 free, 1 held, 2 held and maybe sleepers
};

class AllP {
 public:
  static constexpr int kMax = 1024;
  int size() const { return n_.load(std::memory_order_acquire); }
  bool empty() const { return size() == 0; }
  P* operator[](int i) const { return slots_[i].load(std::memory_order_acquire); }
  void push(P* p) {
    int n = n_.load(std::memory_order_relaxed);
    slots_[n].store(p, std::memory_order_release);
    n_.store(n + 1, std::memory_order_release);
  }
  struct iterator {
    const AllP* all;
    int i;
    P* operator*() const { return (*all)[i]; }
    iterator& operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const iterator& o) const { return i != o.i; }
  };
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }

 private:
  std::atomic<P*> slots_[kMax] = {};
  std::atomic<int> n_{0};
};

struct Sched {
  SchedMutex lock;
  GFifo runq;          // global run queue (lock)
  P* pidle = nullptr;  // idle P stack (lock)
  std::atomic<int> npidle{0};
  M* midle = nullptr;  // idle M stack (lock)
  int nmidle = 0;      // (lock)
  // Ms whose goroutine lost its P to the hog protocol and which wait, with
  // the goroutine still on them, for a P to be donated (syscall.cpp). (lock)
  M* pwait = nullptr;
  // Lock-free peeks at the global queue's length (runq.size()) and at the
  // number of Ms on pwait, packed in one word: a goroutine switch must watch
  // both (sched.cpp fast_next) and reads them with one load, which is zero
  // when neither needs it. Length in the low 32 bits, the count in the high.
  // Written only with the lock held (plain load + store: the lock orders the
  // writers), read anywhere with relaxed loads, as the two separate
  // counters were; a reader now sees a consistent pair.
  std::atomic<std::uint64_t> gate{0};
  static std::int64_t gate_runq_size(std::uint64_t w) { return static_cast<std::uint32_t>(w); }
  static int gate_npwait(std::uint64_t w) { return static_cast<int>(w >> 32); }
  std::int64_t runq_size() const { return gate_runq_size(gate.load(std::memory_order_relaxed)); }
  int npwait() const { return gate_npwait(gate.load(std::memory_order_relaxed)); }
  void publish_runq_size_locked() { store_gate_locked(runq.size(), npwait()); }
  void add_npwait_locked(int delta) { store_gate_locked(runq_size(), npwait() + delta); }
  void clear_npwait_locked() { store_gate_locked(runq_size(), 0); }
  void store_gate_locked(std::int64_t runq_size, int npwait) {
    GORO_CHECK(runq_size >= 0 && runq_size <= 0xffffffff,
               "sched: global run queue beyond 2^32 goroutines");
    GORO_CHECK(npwait >= 0, "sched: npwait below zero");
    gate.store(static_cast<std::uint64_t>(runq_size) | (static_cast<std::uint64_t>(npwait) << 32),
               std::memory_order_relaxed);
  }
  std::atomic<int> nmspinning{0};
  std::atomic<int> needspinning{0};
  std::atomic<int> gomaxprocs{0};
  AllP allp;  // every P; the first gomaxprocs are live
  // maxprocs was set explicitly (Options, GOMAXPROCS, set_maxprocs): sysmon
  // does not follow the CPU limit.
  std::atomic<bool> maxprocs_explicit{false};
  // Where gomaxprocs came from (goro::MaxprocsSource), for stats() and logs;
  // written with it by init, set_maxprocs, reset_maxprocs and sysmon.
  std::atomic<int> maxprocs_source{0};
  // The cgroup memory limit in bytes (0: none): read at init, re-read by
  // sysmon once a second (config/maxprocs MemoryLimitReader).
  std::atomic<std::uint64_t> memory_limit{0};
  // Where that limit is (the cgroup directory) and its version, for the
  // working-set reads of memory_usage(); guarded by memory_limit_mu (a
  // plain mutex: held for a string copy, never across a park).
  std::mutex memory_limit_mu;
  std::string memory_limit_dir;          // (memory_limit_mu)
  int memory_limit_version = 0;          // (memory_limit_mu)
  std::vector<std::unique_ptr<M>> allm;  // (lock)
  std::atomic<int> mcount{0};
  int max_threads = 10000;
  std::atomic<bool> thread_limit_reported{false};
  // Poll token (Go's sched.lastpoll): 0 while an M is blocked in poll, else
  // the time of the last poll. poll_until: when that blocked poll will wake.
  std::atomic<std::int64_t> lastpoll{1};
  std::atomic<std::int64_t> poll_until{0};
  // Earliest deadline among timers a retiring P moved to P0 (kNever: none).
  // Set (fetch-min) under sched.lock by the retirement; whoever retired a P
  // calls flush_moved_timers() after unlocking, which consumes it and wakes
  // the poller or an M (a retirement may leave every M asleep with P0's new
  // timers unwatched: issue 7's live-resize hang).
  std::atomic<std::int64_t> moved_timers_when{kNever};
  // coarse_now() as of sysmon's last iteration (stale by at most its sleep:
  // 10 ms while any P runs). For timestamps that only dumps read (a park's
  // time, printed in minutes): two clock reads per channel round trip were
  // 5% of a ping-pong.
  std::atomic<std::int64_t> sysmon_clock{0};
  std::atomic<bool> polling_net{false};  // one non-blocking poller at a time
  Poller* poller = nullptr;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> next_goid{1};
  // All Gs ever allocated, for dumps and teardown (allg_lock).
  std::mutex allg_lock;
  G* allg = nullptr;
  std::size_t default_stack = 0;
  // Counters (relaxed; statistics only).
  std::atomic<std::uint64_t> steals{0}, stolen{0}, global_takes{0}, m_parks{0}, preempt_requests{0},
      netpoll_wakes{0};
  // Handoffs by cause: a P whose M is in a blocking call, or one taken from a
  // goroutine flagged as a hog. Separate counters, not a total and a subset,
  // so that a reader of both never sees one cause's count borrowed from the
  // other's increment.
  std::atomic<std::uint64_t> syscall_handoffs{0}, hog_handoffs{0};
};

extern Sched sched;
// Calls into the runtime from threads outside it that are still in flight
// (ready() from a foreign thread); teardown waits for it to reach 0. Lives
// outside Sched because teardown rebuilds Sched.
extern std::atomic<int> foreign_calls;

// The StoreLoad barrier of the spinning protocol (findrunnable.cpp essay).
// ThreadSanitizer does not model std::atomic_thread_fence (GCC rejects it
// under -fsanitize=thread), so sanitizer builds use a seq_cst read-modify-
// write on one shared word instead: every caller's RMW is totally ordered
// with every other's, which gives the same guarantee for this protocol and is
// something TSan understands.
#if defined(GORO_TSAN)
inline std::atomic<int> storeload_word{0};
inline void storeload_fence() {
  storeload_word.fetch_add(0, std::memory_order_seq_cst);
}
#else
inline void storeload_fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
#endif

// coarse_now(): goro/detail/park.hpp.

// The M running on this thread. Immune to the compiler caching the TLS
// address across a stack switch: see current.cpp. On x86-64 it is two
// inline instructions (the initial-exec sequence) in a volatile asm with a
// memory clobber, which the compiler may neither merge with another read
// nor move across a call, and so across a switch; elsewhere an opaque call.
#if defined(GORO_INLINE_CURRENT_M)
inline M* current_m() noexcept {
  M* m;
  asm volatile(
      "movq goro_tls_current_m@gottpoff(%%rip), %0\n\t"
      "movq %%fs:(%0), %0"
      : "=r"(m)
      :
      : "memory");
  return m;
}
#else
M* current_m() noexcept;
#endif
void set_current_m(M* m) noexcept;

// Sets m->curg and, on x86-64, its mirror goro_tls_current_g (park.hpp
// running_g()). Runs on m's own thread only: every change of curg does.
// The store is in asm for the reason current_m()'s load is.
inline void set_curg(M* m, G* g) noexcept {
  GORO_CHECK(current_m() == m, "sched: curg set off its M's thread");
  m->curg = g;
#if defined(__x86_64__)
  asm volatile(
      "movq goro_tls_current_g@gottpoff(%%rip), %%rax\n\t"
      "movq %0, %%fs:(%%rax)"
      :
      : "r"(g)
      : "rax", "memory");
#endif
}
// Binds m to this thread's errno and exception-handling globals (see
// current.cpp); called once on each M's own thread.
void bind_thread_state(M* m) noexcept;
// The thread state that migrates with a goroutine: errno, the C++
// exception-handling globals (__cxa_eh_globals: the caught-exception stack a
// `throw;` needs, and std::uncaught_exceptions()) and the runtime-entry count
// M::locks, which belongs to the execution context (proc.hpp runtime_enter).
//
// The code that switches a goroutine away keeps it in a local: that frame
// sits on the goroutine's own stack, which lives exactly as long as the
// suspension, so the state needs no home in the G. It was in G fields; the
// values then went TLS -> G -> TLS through memory on every switch, and
// those store-to-load chains (with M::locks, an atomic the compiler cannot
// keep in a register, reloaded after each store) carried from one yield to
// the next: a fifth of a goroutine yield.
//
// Invariant (clean exception globals): a thread's exception globals are
// zero except while a goroutine that is inside a catch block or unwinding
// runs on it. Every switch away from such a goroutine saves them and zeroes
// the thread's copy (save_thread_state); the code that runs between a switch
// and the next landing (g0, land(), the poller) leaves them as it found them,
// since a try/catch that completes restores them; a new M's thread starts at
// zero, goro::run zeroes M0's for its duration (proc.cpp run_main) and
// g_main zeroes them for every new goroutine. So a goroutine whose globals
// were zero when it switched away may land without restoring them:
// goro::yield's fast path relies on this and moves only errno (sched.cpp).
struct ThreadState {
  int err;
  int locks;
  void* eh[2];
};
// Whether the exception globals at `eh` (a thread's, or a saved copy) are
// all zero: no caught exception, no unwind in progress.
inline bool eh_clean(const void* eh) noexcept {
  std::uintptr_t w[2];
  std::memcpy(w, eh, sizeof w);
  return (w[0] | w[1]) == 0;
}
inline bool eh_globals_clean(const M* m) noexcept {
  return eh_clean(m->eh_slot);
}
inline ThreadState save_thread_state(M* m) noexcept {
  ThreadState s;
  s.err = *m->errno_slot;
  s.locks = m->locks.load(std::memory_order_relaxed);
  std::memcpy(s.eh, m->eh_slot, sizeof s.eh);
  if (__builtin_expect(!eh_clean(s.eh), 0)) {
    std::memset(m->eh_slot, 0, sizeof s.eh);  // clean exception globals (above)
  }
  return s;
}
// After the switch, on the M the goroutine resumed on. locks first: the hog
// protocol's handler must see this goroutine's count before its own code
// runs. (goro::yield stores its count later, after land(): the M already
// holds a count >= 1 then, see sched.cpp switch_away_inl.)
inline void restore_locks(M* m, const ThreadState& s) noexcept {
  m->locks.store(s.locks, std::memory_order_relaxed);
}
// After land(), which runs runtime code that may set errno. The slots are
// those of the thread now running (bind_thread_state).
inline void restore_thread_state(int* errno_slot, void* eh_slot, const ThreadState& s) noexcept {
  std::memcpy(eh_slot, s.eh, sizeof s.eh);
  *errno_slot = s.err;
}
inline void restore_thread_state(M* m, const ThreadState& s) noexcept {
  restore_thread_state(m->errno_slot, m->eh_slot, s);
}
// A goroutine's first run: errno 0, no exception being handled.
inline void reset_thread_state(M* m) noexcept {
  std::memset(m->eh_slot, 0, sizeof(ThreadState::eh));
  *m->errno_slot = 0;
}

// Ready a batch of Gs (poller output) onto run queues, waking idle Ps.
void inject_glist(GQueue& q);
// Runs expired timers of p; returns the next timer's when (or INT64_MAX).
std::int64_t run_timers(P* p, std::int64_t now);
void wakep();
// Gives the poller a nudge if it sleeps past `when` (Go's wakeNetPoller).
void wake_netpoller(std::int64_t when);

}  // namespace goro::detail
