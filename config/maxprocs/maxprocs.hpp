// goro::maxprocs: how many Ps the runtime should run (Go 1.25's GOMAXPROCS
// default, with the cgroup ancestry honoured).
//
// # The rule
//
//   1. GOMAXPROCS in the environment, a positive decimal integer, wins. The
//      answer is then explicit (`from_env`): the runtime never updates it live.
//      Any other non-empty value is ignored with a warning (Go ignores it
//      silently; a typo in a deployment manifest deserves a line in the log).
//   2. Otherwise procs = the CPU affinity count (popcount of
//      sched_getaffinity), or N from `GORO_DEBUG=ncpu=N` (tests, benchmarks).
//   3. Lowered to max(2, ceil(limit)) where limit is the smallest quota/period
//      of the process's CPU cgroup and each of its ancestors up to the root of
//      the cgroup mount. The floor of 2 applies to the cgroup limit only: an
//      affinity count of 1 still yields 1 (Go: proc.go, cgroup_linux.go).
//
// Go 1.25 reads only the leaf cgroup (golang/go#81180), so a tighter limit
// on a parent (a Kubernetes pod's slice, a systemd slice above a service) is
// missed. We walk the ancestry: the process can never get more CPU time than
// its tightest ancestor allows, whatever the leaf says. The discovery and the
// walk are described in config/maxprocs/cgroup.hpp.
//
// # GORO_DEBUG knobs read here (comma-separated, e.g. "schedtrace=1000,ncpu=16")
//
//   ncpu=N             pretend the affinity mask has N CPUs (N > 0)
//   containermaxprocs=0  ignore cgroup limits (Go's GODEBUG of the same name)
//   maxprocsdebug=1    log discovery, problems and changed answers to the
//                      Resolver's log sink (stderr by default)
//
// Without maxprocsdebug=1 the resolver logs only warnings (a bad GOMAXPROCS
// or GORO_DEBUG value), once per distinct warning. Problems with cgroup files
// (missing, malformed, unreadable) are never fatal: they mean "no limit".
//
// # Cost
//
// The runtime's sysmon calls resolve() at most once a second. Each call reads
// the environment, calls sched_getaffinity, re-reads /proc/self/cgroup (a few
// hundred bytes; this notices a process moved to another cgroup, which Go does
// not) and re-reads the limit files of the cached directories. mountinfo,
// which can be large on busy hosts, is parsed again only when the membership
// changes or the cached leaf directory vanishes. Every read is bounded; nothing
// throws out of resolve().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace goro::gomaxprocs {

// The answer and the evidence behind it.
struct Resolution {
  int procs = 1;                     // the answer, >= 1
  bool from_env = false;             // GOMAXPROCS decided it: the runtime must not update live
  int affinity = 1;                  // CPUs seen: sched_getaffinity popcount or GORO_DEBUG ncpu
  bool affinity_overridden = false;  // affinity came from GORO_DEBUG=ncpu=N
  double cgroup_limit = -1;          // smallest quota/period over the ancestry; -1 = no limit
  int cgroup_version = 0;            // 1 or 2 when a limit was found, else 0
  std::string cgroup_path;           // directory holding the tightest limit ("" if none)

  // One line for logs, e.g.
  //   "maxprocs=4 (affinity 16, cgroup v1 limit 3.50 at /sys/fs/cgroup/cpu/x)".
  std::string explain() const;

  friend bool operator==(const Resolution&, const Resolution&) = default;
};

namespace detail {
class CgroupReader;
}

// Resolves the process's maxprocs. Not thread-safe: one owner (sysmon) calls
// resolve(); construct a second Resolver for another thread.
class Resolver {
 public:
  using EnvLookup = std::function<const char*(const char*)>;
  using LogSink = std::function<void(std::string_view line)>;

  // root: the filesystem root under which /proc/self/cgroup, /proc/self/mountinfo
  // and the cgroup files are read ("/" in production, a fixture tree in tests).
  // env: environment lookup (nullptr: std::getenv).
  explicit Resolver(std::string root = "/", EnvLookup env = nullptr);
  ~Resolver();
  Resolver(Resolver&&) noexcept;
  Resolver& operator=(Resolver&&) noexcept;

  // Where warnings and debug lines go (nullptr: stderr, prefixed "goro: ").
  void set_log_sink(LogSink sink);

  // Never throws. See the rule above.
  Resolution resolve() noexcept;

 private:
  Resolution resolve_or_throw();
  void log(std::string_view line);
  void warn_once(std::string line);

  std::string root_;
  EnvLookup env_;
  LogSink sink_;
  std::unique_ptr<detail::CgroupReader> cgroup_;
  std::string last_warning_;
  std::vector<std::string> last_debug_lines_;  // what maxprocsdebug printed last call
  Resolution last_;
  bool debug_ = false;
};

// Convenience for the runtime's startup: Resolver{}.resolve().
Resolution resolve_default() noexcept;

// The process's memory limit: the smallest hard limit (v2 memory.max, v1
// memory.limit_in_bytes) over its memory cgroup and every ancestor, found as
// the CPU limit is (cgroup.hpp). Not thread-safe, like Resolver: the runtime's
// sysmon owns one and re-reads it once a second, so a limit raised or lowered
// live (a Kubernetes in-place resize) is followed. Problems with the files
// mean "no limit", never an error.
class MemoryLimitReader {
 public:
  explicit MemoryLimitReader(std::string root = "/");
  ~MemoryLimitReader();
  MemoryLimitReader(MemoryLimitReader&&) noexcept;
  MemoryLimitReader& operator=(MemoryLimitReader&&) noexcept;

  // Bytes, or 0 when no level of the ancestry sets a limit. Never throws.
  std::uint64_t read() noexcept;
  // Where the last read() found its limit ("" if none), and that
  // hierarchy's version (1 or 2; 0 if none): where usage() reads.
  const std::string& directory() const { return directory_; }
  int version() const { return version_; }

  // What the kernel weighs against the limit at `directory` (v1 or v2):
  // the cgroup's usage minus its inactive file pages (Kubernetes' "working
  // set"): anonymous memory, kernel memory and page tables count, page cache
  // the kernel can drop does not. 0 when unreadable. Thread-safe (reads only
  // its arguments).
  static std::uint64_t working_set(const std::string& directory, int version) noexcept;

 private:
  std::unique_ptr<detail::CgroupReader> cgroup_;
  std::string directory_;
  int version_ = 0;
};

}  // namespace goro::gomaxprocs
