// Goroutine stacks. Design (docs/DESIGN.md "Stacks and their guards"):
//
// A stack is a run of pages with a guard page below it, so an overflow faults
// instead of silently corrupting a neighbour (the fault is reported as
// "goroutine N: stack overflow", signals.cpp "Fatal faults"). Stacks of the
// default size are carved from large MAP_NORESERVE arenas (one kernel mapping
// for hundreds of stacks) and are committed lazily: a parked goroutine that
// never went deep costs one or two pages of RSS.
//
// ## Size: reserve deep, commit shallow, trim what went deep
// goro cannot grow a stack by copying it as Go does (C++ frames hold pointers
// into themselves), so a stack's size is fixed when it is made and an
// overflow is fatal. Address space is cheap and untouched pages cost nothing,
// so the default reserves 512 KiB per stack (Options::stack_size,
// GORO_STACK_SIZE, SpawnOptions::stack_size change it): twice the 256 KiB a
// handler with a few large buffers on its stack may use, with the runtime's
// and the server's frames above it. The costs that remain: 100,000 goroutines
// reserve 50 GiB of address space (fine in 47 bits of it, not under a tight
// RLIMIT_AS: lower the size there), and each 2 MiB of arena that holds a
// stack's top page needs a page-table page, 1 KiB per goroutine at 512 KiB
// (128 bytes at 64 KiB) outside the RSS.
// A goroutine that went deep must not leave its stack committed for long:
// when a stack cools (it sinks below the four most recently freed in its
// P's cache, or leaves the cache: galloc.cpp "Trimmed when they cool"),
// trim_deep() reads the page just below the top kKeepCommitted (64 KiB)
// and, if anything ever wrote it, DONTNEEDs everything below. Reading them costs a zero-page fault
// once per slot until it goes deep; the madvise (a syscall and a TLB shootdown) is paid only by
// goroutines that used more than 64 KiB, which are rare by construction.
//
// The guard comes in three strengths, chosen per stack:
//   1. kGuardInstall: madvise(MADV_GUARD_INSTALL) (Linux 6.13+) marks the page
//      in the page tables without splitting the mapping: free in map count.
//   2. kGuardMprotect: mprotect(PROT_NONE) splits the arena's mapping (+2 VMAs
//      per stack). vm.max_map_count (65530 by default) bounds this, so these
//      are rationed by a budget computed from the limit and current usage.
//   3. kCanaryOnly: no guard page; a canary word at the bottom is checked at
//      every switch away from the goroutine, and an overwrite aborts with a
//      clear message. Used only when the budget is spent; counted in stats and
//      logged once.
// GORO_DEBUG=stackguard=mprotect|canary forces a weaker strength (tests).
//
// Freed default-size stacks go back to the pool still committed. sysmon calls
// scavenge() twice a second: stacks beyond the first kWarmCache that stayed
// unused for a whole period are MADV_DONTNEED'd so their memory returns to
// the kernel while the slot and its guard stay in place. Not on release
// itself: each madvise is a syscall plus a TLB shootdown IPI to every other
// CPU running the process, and a burst of goroutine exits (skynet's inner
// nodes) spent a fifth of its time there, on the goroutines' critical path.
//
// ## Stack credits: failing at the spawn site although stacks bind late
// A goroutine gets its default-size stack when it first runs, not when it is
// spawned (galloc.cpp "Late stack binding"), so a million queued goroutines
// cost a million G structs, not a million stacks, and a goroutine that starts
// right after another one ended runs on that one's still-cached stack. Yet
// running out of stack memory must be an error at goro::go, not a crash
// later on some M. So spawn takes a *credit*, a promise of one arena slot,
// and the pool never promises more slots than its arenas hold:
//
//   credits_out_ <= capacity_        (slots in all arenas; pool mutex)
//
// Credits are handed to Ps in batches (P::stack_credits, owner only) so a
// spawn touches no shared state. Each default-size stack outside the pool is
// backed by a credit: a bound goroutine's own, or, for a stack in a P's
// cache, one of that P's unspent credits (P::stack_cache size <= its
// stack_credits, kept by galloc.cpp). Hence the slots outside the pool never
// exceed credits_out_, and a goroutine that holds a credit but no stack
// always finds one, in its P's cache or in the pool: binding cannot fail.
// grant_credits maps the arenas this needs up front, which is where mmap
// failure (address space, map count) surfaces, at the spawn site.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

// Linux 6.13's guard-page madvise, for headers that predate it (the kernel
// answers EINVAL where it is missing; callers fall back to mprotect).
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

namespace goro::detail {

enum class GuardKind : std::uint8_t { kNone, kGuardInstall, kGuardMprotect, kCanaryOnly };

struct Stack {
  char* lo = nullptr;    // lowest usable byte (just above the guard page)
  std::size_t size = 0;  // usable bytes; the stack grows down from lo + size
  GuardKind guard = GuardKind::kNone;
  bool pooled = false;  // carved from an arena (default size) vs. its own mapping
  // In a P's cache: a goroutine ran on it since trim_deep last probed it
  // (galloc.cpp "Trimmed when they cool"). False everywhere else.
  bool used = false;
  char* hi() const { return lo + size; }
};

inline constexpr std::uint64_t kStackCanary = 0x676f726f5f535441ull;  // "goro_STA"

struct StackPoolStats {
  std::uint64_t live = 0;
  std::uint64_t guard_install = 0;
  std::uint64_t guard_mprotect = 0;
  std::uint64_t canary_only = 0;
  std::int64_t mprotect_budget_left = -1;
};

class StackPool {
 public:
  explicit StackPool(std::size_t default_size);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  // Returns false (errno set) when no memory or mapping can be had. A
  // default-size allocation by a credit holder always succeeds.
  bool allocate(std::size_t size, Stack* out);
  // Default-size stacks for a P's cache: at least one (the caller holds a
  // credit for it; see "Stack credits"), up to max from the free lists and
  // never-used slots of mapped arenas. Returns how many were stored.
  int allocate_batch(Stack* out, int max);
  void release_batch(const Stack* s, int n);
  // sysmon: DONTNEED free stacks that stayed unused for a period (see above).
  void scavenge();
  // Every free stack's pages back to the kernel now (goro::free_os_memory).
  void release_free();
  // Promises n default-size slots (maps arenas as needed); false with errno
  // set when the arenas cannot be mapped.
  bool grant_credits(std::int64_t n);
  void return_credits(std::int64_t n);
  void release(const Stack& s);
  // Stacks a caller took out of a P's cache to probe without any lock
  // (trim_idle_hot_stacks): counted in in_transit_ from begin_transit(n),
  // called before the P can be owned again, to end_transit, which releases
  // them; so a credit holder that finds the pool short meanwhile waits for
  // them rather than map an arena no credit accounts for.
  void begin_transit(std::size_t n);
  void end_transit(const Stack* stacks, int n);
  std::size_t default_size() const { return default_size_; }
  StackPoolStats stats();

  // Whether a canary-only stack's canary was overwritten (an overflow).
  static bool canary_smashed(const Stack& s) {
    return s.guard == GuardKind::kCanaryOnly &&
           *reinterpret_cast<const std::uint64_t*>(s.lo) != kStackCanary;
  }
  // Returns the pages below the top kKeepCommitted of s to the kernel if a
  // goroutine went that deep (see "Size"). For a stack no goroutine runs on.
  static void trim_deep(const Stack& s);
  static constexpr std::size_t kKeepCommitted = 64 * 1024;
  // How much below the kept part trim_deep reads to tell a deep stack.
  static constexpr std::size_t kPageProbe = 4096;

 private:
  bool carve_slot(Stack* out);
  bool map_arena();
  bool take_free_locked(Stack* out);
  void release_locked(const Stack& s);
  bool map_own(std::size_t size, Stack* out);
  GuardKind guard_page(char* page);
  void count(GuardKind g, int delta);

  const std::size_t default_size_;
  const std::size_t page_;
  const std::size_t slots_per_arena_;
  std::mutex mu_;
  // Everything below is guarded by mu_.
  struct Arena {
    char* base;
    std::size_t bytes;
  };
  std::vector<Arena> arenas_;
  // Never-used slots: [bump_, bump_end_), then every arena from next_arena_
  // on (grant_credits may map arenas ahead of carving).
  std::size_t next_arena_ = 0;
  char* bump_ = nullptr;
  char* bump_end_ = nullptr;
  std::int64_t capacity_ = 0;     // slots in all arenas
  std::int64_t credits_out_ = 0;  // slots promised (see "Stack credits")
  std::vector<Stack> warm_;       // freed, still committed (LIFO: back is hottest)
  std::vector<Stack> cold_;       // freed, DONTNEED'd
  // The smallest warm_.size() since the last scavenge: warm_[0, low water)
  // went unused for the whole period.
  std::size_t warm_low_water_ = 0;
  // The end of scavenge() and release_free(): `idle` (counted in
  // in_transit_) DONTNEEDed without the lock, then into cold_ under it.
  void retire_to_cold(const std::vector<Stack>& idle);
  // Stacks between warm_ and cold_ while scavenge() or release_free()
  // madvises them without the lock, or between a P's cache and the pool
  // (begin_transit): each adds its count, then takes it back; allocate
  // waits for them rather than map an arena the credits do not account for.
  std::size_t in_transit_ = 0;
  bool guard_install_works_ = true;
  std::int64_t mprotect_budget_ = 0;
  bool canary_logged_ = false;
  int forced_ = 0;  // GORO_DEBUG stackguard override: 0 none, 1 mprotect, 2 canary
  StackPoolStats stats_;
};

}  // namespace goro::detail
