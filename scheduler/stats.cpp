// goro::stats(): a snapshot of the runtime's counters; memory_usage().
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <mutex>
#include <string>

#include "config/maxprocs/maxprocs.hpp"
#include "goro/runtime.hpp"
#include "scheduler/proc.hpp"

namespace goro {

namespace {

// The resident set size from /proc/self/statm ("size resident shared ..."
// in pages); 0 when it cannot be read.
std::uint64_t read_rss() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  ssize_t n = -1;
  do {
    n = ::read(fd, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return 0;
  const char* p = buf;
  const char* end = buf + n;
  while (p < end && *p != ' ')  // skip size
    ++p;
  std::uint64_t pages = 0;
  if (p == end || std::from_chars(p + 1, end, pages).ec != std::errc{}) return 0;
  static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return pages * page;
}

// The last RSS reading and when it was taken (coarse_now: memory_guard asks
// on every request, a precise read costs ~24 ns here and a coarse one ~7,
// and a tick's error is nothing against 10 ms). Readers share it for
// kRssMaxAge; the caller that wins the CAS on rss_time re-reads. Relaxed
// is enough: each value is a self-contained sample, and a reader that sees
// the new time with the old size merely reports a reading ≤ 10 ms older.
// The same for the limiting cgroup's working set.
constexpr std::int64_t kRssMaxAge = 10'000'000;
std::atomic<std::uint64_t> rss_cached{0};
std::atomic<std::uint64_t> working_set_cached{0};
std::atomic<std::int64_t> rss_time{0};

void sample_memory() {
  const std::int64_t now = detail::coarse_now();
  std::int64_t last = rss_time.load(std::memory_order_relaxed);
  if (last != 0 && now - last < kRssMaxAge) return;
  if (!rss_time.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  rss_cached.store(read_rss(), std::memory_order_relaxed);
  std::string dir;
  int version = 0;
  {
    std::lock_guard<std::mutex> lock(detail::sched.memory_limit_mu);
    dir = detail::sched.memory_limit_dir;
    version = detail::sched.memory_limit_version;
  }
  working_set_cached.store(goro::gomaxprocs::MemoryLimitReader::working_set(dir, version),
                           std::memory_order_relaxed);
}

}  // namespace

std::string_view to_string(MaxprocsSource s) {
  switch (s) {
    case MaxprocsSource::kAffinity:
      return "affinity";
    case MaxprocsSource::kCgroup:
      return "cgroup";
    case MaxprocsSource::kEnv:
      return "env";
    case MaxprocsSource::kExplicit:
      return "explicit";
  }
  return "unknown";
}

void free_os_memory() {
  if (!detail::sched.allp.empty()) {
    detail::trim_idle_hot_stacks(0);
    detail::stack_pool().release_free();
  }
  ::malloc_trim(0);
}

MemoryUsage memory_usage() {
  MemoryUsage u;
  if (detail::sched.allp.empty()) return u;  // no runtime running
  u.limit_bytes = detail::sched.memory_limit.load(std::memory_order_relaxed);
  sample_memory();
  u.rss_bytes = rss_cached.load(std::memory_order_relaxed);
  u.cgroup_bytes = u.limit_bytes == 0 ? 0 : working_set_cached.load(std::memory_order_relaxed);
  return u;
}

RuntimeStats stats() {
  using namespace detail;
  RuntimeStats s;
  s.goroutines = num_goroutines();
  s.maxprocs = static_cast<std::uint64_t>(sched.gomaxprocs.load());
  s.maxprocs_source = static_cast<MaxprocsSource>(sched.maxprocs_source.load());
  s.idle_procs = static_cast<std::uint64_t>(sched.npidle.load());
  s.spinning_threads = static_cast<std::uint64_t>(sched.nmspinning.load());
  s.global_runq = static_cast<std::uint64_t>(sched.runq_size());
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    s.idle_threads = static_cast<std::uint64_t>(sched.nmidle);
    std::uint64_t live = 1;  // M0
    for (auto& m : sched.allm)
      live += m->exited.load() ? 0 : 1;
    s.threads = live;
  }
  std::uint64_t spawns = 0;
  for (P* p : sched.allp)
    spawns += static_cast<std::uint64_t>(p->spawned.load());
  s.spawns = spawns;
  s.steals = sched.steals.load();
  s.stolen_goroutines = sched.stolen.load();
  s.global_takes = sched.global_takes.load();
  std::uint64_t parks = 0;
  for (P* p : sched.allp)
    parks += p->parks.load(std::memory_order_relaxed);
  s.parks = parks;
  s.m_parks = sched.m_parks.load();
  s.preempt_requests = sched.preempt_requests.load();
  s.netpoll_wakes = sched.netpoll_wakes.load();
  s.syscall_handoffs = sched.syscall_handoffs.load();
  s.hog_handoffs = sched.hog_handoffs.load();
  s.handoffs = s.syscall_handoffs + s.hog_handoffs;
  if (sched.allp.empty()) return s;  // no runtime running
  MemoryUsage mem = memory_usage();
  s.memory_limit_bytes = mem.limit_bytes;
  s.memory_cgroup_bytes = mem.cgroup_bytes;
  s.rss_bytes = mem.rss_bytes;
  StackPoolStats st = stack_pool().stats();
  s.stacks_live = st.live;
  s.stacks_guard_install = st.guard_install;
  s.stacks_guard_mprotect = st.guard_mprotect;
  s.stacks_canary_only = st.canary_only;
  s.map_count_budget_left = st.mprotect_budget_left;
  return s;
}

}  // namespace goro
