// Goroutine stacks: see stack.hpp for the design.
#include "scheduler/stack.hpp"

#include <fmt/core.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "goro/detail/fault.hpp"
#include "scheduler/debug.hpp"

namespace goro::detail {
namespace {

// Arenas of about 256 MiB of address space: 508 stacks of 512 KiB, 3855 of
// 64 KiB. 100,000 goroutines then take a few hundred mappings at most, and a
// process under an RLIMIT_AS of a few hundred MiB can still map one.
constexpr std::size_t kArenaBytes = std::size_t{256} << 20;
// Free stacks kept committed for fast reuse; beyond this, scavenge()
// DONTNEEDs the ones that stayed unused for a period. 256 (a few KiB each,
// ~1-2 MiB): 1,024 kept ~8 MiB resident, 1.7 KiB per connection of 5,000
// idle ones once their goroutines were released (framework/http "Released
// while idle"); a burst reuses stacks within the period either way.
constexpr std::size_t kWarmCache = 256;
// Mappings left alone for the rest of the process (malloc arenas, libraries,
// thread stacks, sockets' mappings) when rationing mprotect guards.
constexpr std::int64_t kMapCountReserve = 8192;

std::int64_t read_long(const char* path, std::int64_t fallback) {
  std::ifstream in(path);
  std::int64_t v = 0;
  return (in >> v) ? v : fallback;
}

std::int64_t current_map_count() {
  std::ifstream in("/proc/self/maps");
  std::int64_t n = 0;
  std::string line;
  while (std::getline(in, line))
    ++n;
  return n;
}

}  // namespace

StackPool::StackPool(std::size_t default_size)
    : default_size_(default_size),
      page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))),
      slots_per_arena_(std::max<std::size_t>(16, kArenaBytes / (default_size + page_))) {
  const std::string guard = debug_option("stackguard");
  if (guard == "mprotect") forced_ = 1;
  if (guard == "canary") forced_ = 2;
  if (forced_ != 0) guard_install_works_ = false;
  // Each mprotect'd guard in the middle of an arena splits one mapping into
  // three: two more map entries per stack.
  std::int64_t limit = read_long("/proc/sys/vm/max_map_count", 65530);
  mprotect_budget_ =
      std::max<std::int64_t>(0, (limit - current_map_count() - kMapCountReserve) / 2);
  if (forced_ == 2) mprotect_budget_ = 0;
  stats_.mprotect_budget_left = mprotect_budget_;
}

StackPool::~StackPool() {
  for (const Arena& a : arenas_)
    munmap(a.base, a.bytes);
}

void StackPool::count(GuardKind g, int delta) {
  stats_.live += delta;
  switch (g) {
    case GuardKind::kGuardInstall:
      stats_.guard_install += delta;
      break;
    case GuardKind::kGuardMprotect:
      stats_.guard_mprotect += delta;
      break;
    case GuardKind::kCanaryOnly:
      stats_.canary_only += delta;
      break;
    case GuardKind::kNone:
      break;
  }
}

GuardKind StackPool::guard_page(char* page) {
  if (guard_install_works_) {
    if (madvise(page, page_, MADV_GUARD_INSTALL) == 0) return GuardKind::kGuardInstall;
    guard_install_works_ = false;  // EINVAL on kernels before 6.13: stop trying
  }
  if (mprotect_budget_ > 0 && mprotect(page, page_, PROT_NONE) == 0) {
    --mprotect_budget_;
    stats_.mprotect_budget_left = mprotect_budget_;
    return GuardKind::kGuardMprotect;
  }
  if (!canary_logged_) {
    canary_logged_ = true;
    std::fprintf(stderr,
                 "goro: stack guard pages unavailable (vm.max_map_count budget spent); further "
                 "goroutine stacks are protected by a canary only\n");
  }
  return GuardKind::kCanaryOnly;
}

bool StackPool::map_arena() {
  if (take_fault(FaultSite::kStackMap)) return false;
  const std::size_t bytes = (default_size_ + page_) * slots_per_arena_;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  arenas_.push_back({static_cast<char*>(p), bytes});
  capacity_ += static_cast<std::int64_t>(slots_per_arena_);
  return true;
}

bool StackPool::carve_slot(Stack* out) {
  const std::size_t slot = default_size_ + page_;
  if (bump_ == bump_end_) {
    if (next_arena_ == arenas_.size() && !map_arena()) return false;
    const Arena& a = arenas_[next_arena_++];
    bump_ = a.base;
    bump_end_ = a.base + a.bytes;
  }
  char* guard = bump_;
  bump_ += slot;
  out->lo = guard + page_;
  out->size = default_size_;
  out->pooled = true;
  out->used = false;  // `out` may be a P's cache slot that held a used stack
  out->guard = guard_page(guard);
  return true;
}

bool StackPool::grant_credits(std::int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  while (credits_out_ + n > capacity_) {
    if (!map_arena()) {
      errno = ENOMEM;
      return false;
    }
  }
  credits_out_ += n;
  return true;
}

void StackPool::return_credits(std::int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  credits_out_ -= n;
}

bool StackPool::map_own(std::size_t size, Stack* out) {
  if (take_fault(FaultSite::kStackMap)) return false;
  const std::size_t bytes = size + page_;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) return false;
  out->lo = static_cast<char*>(p) + page_;
  out->size = size;
  out->pooled = false;
  // A guard at the very start of its own mapping splits nothing extra with
  // mprotect (1 mapping becomes 2), but still spends map count; use the same
  // rationing.
  out->guard = guard_page(static_cast<char*>(p));
  return true;
}

bool StackPool::take_free_locked(Stack* out) {
  if (!warm_.empty()) {
    *out = warm_.back();
    warm_.pop_back();
    warm_low_water_ = std::min(warm_low_water_, warm_.size());
    return true;
  }
  if (!cold_.empty()) {
    *out = cold_.back();
    cold_.pop_back();
    return true;
  }
  return false;
}

bool StackPool::allocate(std::size_t size, Stack* out) {
  size = (size + page_ - 1) & ~(page_ - 1);
  std::unique_lock<std::mutex> lock(mu_);
  bool ok = false;
  if (size == default_size_) {
    ok = take_free_locked(out);
    while (!ok && bump_ == bump_end_ && next_arena_ == arenas_.size() && in_transit_ > 0) {
      // Every free slot is being scavenged: wait for them (microseconds).
      lock.unlock();
      sched_yield();
      lock.lock();
      ok = take_free_locked(out);
    }
    if (!ok) ok = carve_slot(out);
  } else {
    ok = map_own(size, out);
  }
  if (!ok) {
    errno = ENOMEM;
    return false;
  }
  count(out->guard, 1);
  if (out->guard == GuardKind::kCanaryOnly) {
    *reinterpret_cast<std::uint64_t*>(out->lo) = kStackCanary;
  }
  return true;
}

int StackPool::allocate_batch(Stack* out, int max) {
  if (!allocate(default_size_, &out[0])) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  int n = 1;
  while (n < max) {
    // Extras only from what is already mapped: an arena is mapped only for
    // credits (grant_credits), never to fill a cache.
    if (!take_free_locked(&out[n])) {
      if (bump_ == bump_end_ || !carve_slot(&out[n])) break;
    }
    count(out[n].guard, 1);
    if (out[n].guard == GuardKind::kCanaryOnly) {
      *reinterpret_cast<std::uint64_t*>(out[n].lo) = kStackCanary;
    }
    ++n;
  }
  return n;
}

void StackPool::release_locked(const Stack& s) {
  count(s.guard, -1);
  if (!s.pooled) {
    if (s.guard == GuardKind::kGuardMprotect) ++mprotect_budget_;
    stats_.mprotect_budget_left = mprotect_budget_;
    munmap(s.lo - page_, s.size + page_);
    return;
  }
  warm_.push_back(s);
}

// Under ASan the stack's shadow is already clear: gfree_put cleared what its
// last goroutine left poisoned, and teardown clears an abandoned one's.
void StackPool::release(const Stack& s) {
  std::lock_guard<std::mutex> lock(mu_);
  release_locked(s);
}

void StackPool::begin_transit(std::size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  in_transit_ += n;
}

void StackPool::end_transit(const Stack* stacks, int n) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < n; ++i)
    release_locked(stacks[i]);
  in_transit_ -= static_cast<std::size_t>(n);
}

void StackPool::release_batch(const Stack* s, int n) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < n; ++i)
    release_locked(s[i]);
}

void StackPool::scavenge() {
  std::vector<Stack> idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::size_t low = std::min(warm_low_water_, warm_.size());
    if (low > kWarmCache) {
      // The coldest (bottom) ones: unused since the last scavenge.
      const std::size_t n = low - kWarmCache;
      idle.assign(warm_.begin(), warm_.begin() + static_cast<std::ptrdiff_t>(n));
      warm_.erase(warm_.begin(), warm_.begin() + static_cast<std::ptrdiff_t>(n));
      in_transit_ += n;
    }
    warm_low_water_ = warm_.size();
  }
  retire_to_cold(idle);
}

void StackPool::release_free() {
  std::vector<Stack> idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle.swap(warm_);
    in_transit_ += idle.size();
    warm_low_water_ = 0;
  }
  retire_to_cold(idle);
}

void StackPool::retire_to_cold(const std::vector<Stack>& idle) {
  if (idle.empty()) return;
  for (const Stack& s : idle)
    madvise(s.lo, s.size, MADV_DONTNEED);
  std::lock_guard<std::mutex> lock(mu_);
  for (const Stack& s : idle)
    cold_.push_back(s);
  in_transit_ -= idle.size();
}

StackPoolStats StackPool::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void StackPool::trim_deep(const Stack& s) {
  if (s.size <= kKeepCommitted) return;
  // The page just below the kept part: a goroutine that went deeper wrote
  // there (frames, or a large local buffer it filled), so some word of it is
  // non-zero; a stack that never went there reads the zero page (one shared
  // physical page: cache-hot, and the scan stops at the first non-zero word
  // of a deep one). Eight words were not enough: a 1 KiB frame or a buffer
  // written every 512 bytes left them zero (the debug build's layout showed
  // it). A stack that went deep through one large untouched buffer can still
  // be missed; that only leaves memory committed until the scavenger.
  //
  // An OR over blocks of 64 words into eight independent accumulators,
  // which the compiler turns into vector loads: a word at a time (through a
  // volatile pointer, which forbids that) was 3,600 instructions and about
  // a quarter of a microsecond per goroutine exit (spawn on one P: 400 ns
  // then, 172 now; docs/benchmarks.md).
  char* const keep = s.hi() - kKeepCommitted;  // page aligned: hi() and the constant are
  const auto* probe = reinterpret_cast<const std::uint64_t*>(keep - kPageProbe);
  constexpr std::size_t kWords = kPageProbe / sizeof(std::uint64_t);
  constexpr std::size_t kBlock = 64;
  constexpr std::size_t kLanes = 8;
  static_assert(kWords % kBlock == 0 && kBlock % kLanes == 0);
  bool deep = false;
  for (std::size_t b = 0; b < kWords && !deep; b += kBlock) {
    std::uint64_t lane[kLanes] = {};
    for (std::size_t i = b; i < b + kBlock; i += kLanes) {
      for (std::size_t j = 0; j < kLanes; ++j)
        lane[j] |= probe[i + j];
    }
    std::uint64_t any = 0;
    for (const std::uint64_t l : lane)
      any |= l;
    deep = any != 0;
  }
  if (!deep) return;
  madvise(s.lo, static_cast<std::size_t>(keep - s.lo), MADV_DONTNEED);
  if (s.guard == GuardKind::kCanaryOnly) *reinterpret_cast<std::uint64_t*>(s.lo) = kStackCanary;
}

}  // namespace goro::detail
