// Resolver: the rule of maxprocs.hpp, in order — GOMAXPROCS, affinity (or
// GORO_DEBUG ncpu), cgroup limit.
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/maxprocs/cgroup.hpp"
#include "config/maxprocs/maxprocs.hpp"

namespace goro::gomaxprocs {
namespace {

// sched_getaffinity fails with EINVAL when the mask is smaller than the
// kernel's; grow it up to 64Ki CPUs, the bound Go's 8 KiB buffer gives.
constexpr int kMaxAffinityCpus = 64 * 1024;
// A bigger GOMAXPROCS is a typo, not a machine: refuse rather than create
// millions of Ps.
constexpr long kMaxProcsFromEnv = 1 << 20;

// A positive decimal integer without sign, spaces or suffix, or nullopt.
std::optional<long> parse_positive(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v <= 0) return std::nullopt;
  return v;
}

int affinity_count() {
  for (int cpus = 1024; cpus <= kMaxAffinityCpus; cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (set == nullptr) return 1;
    std::size_t bytes = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(bytes, set);
    int rc = sched_getaffinity(0, bytes, set);
    int n = rc == 0 ? CPU_COUNT_S(bytes, set) : 0;
    CPU_FREE(set);
    if (rc == 0) return n > 0 ? n : 1;
    if (errno != EINVAL) return 1;
  }
  return 1;
}

struct DebugKnobs {
  std::optional<long> ncpu;
  bool ignore_cgroups = false;  // containermaxprocs=0
  bool verbose = false;         // maxprocsdebug=1
  std::vector<std::string> warnings;
};

DebugKnobs parse_goro_debug(std::string_view text) {
  DebugKnobs knobs;
  while (!text.empty()) {
    std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
    std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    // Other keys (schedtrace, ...) belong to the runtime.
    if (key == "ncpu") {
      knobs.ncpu = parse_positive(value);
      if (!knobs.ncpu || *knobs.ncpu > kMaxProcsFromEnv) {
        knobs.ncpu.reset();
        knobs.warnings.push_back(
            fmt::format("GORO_DEBUG ncpu={:?} is not a positive integer: ignored", value));
      }
    } else if (key == "containermaxprocs") {
      knobs.ignore_cgroups = value == "0";
    } else if (key == "maxprocsdebug") {
      knobs.verbose = value == "1";
    }
  }
  return knobs;
}

}  // namespace

std::string Resolution::explain() const {
  if (from_env) return fmt::format("maxprocs={} (GOMAXPROCS from the environment)", procs);
  std::string cpus =
      fmt::format("affinity {}{}", affinity, affinity_overridden ? " from GORO_DEBUG ncpu" : "");
  if (cgroup_limit < 0) return fmt::format("maxprocs={} ({}, no cgroup cpu limit)", procs, cpus);
  return fmt::format("maxprocs={} ({}, cgroup v{} limit {:.2f} at {})", procs, cpus, cgroup_version,
                     cgroup_limit, cgroup_path);
}

Resolver::Resolver(std::string root, EnvLookup env)
    : root_(std::move(root)),
      // NOLINTNEXTLINE(concurrency-mt-unsafe): read-only; goro never calls setenv
      env_(env ? std::move(env) : EnvLookup([](const char* n) { return std::getenv(n); })),
      cgroup_(std::make_unique<detail::CgroupReader>(root_)) {}

Resolver::~Resolver() = default;
Resolver::Resolver(Resolver&&) noexcept = default;
Resolver& Resolver::operator=(Resolver&&) noexcept = default;

void Resolver::set_log_sink(LogSink sink) {
  sink_ = std::move(sink);
}

void Resolver::log(std::string_view line) {
  if (sink_) {
    sink_(line);
  } else {
    std::fprintf(stderr, "goro: %.*s\n", static_cast<int>(line.size()), line.data());
  }
}

void Resolver::warn_once(std::string line) {
  // sysmon calls us every second: repeat a warning only when it changes.
  if (line == last_warning_) return;
  log(line);
  last_warning_ = std::move(line);
}

Resolution Resolver::resolve() noexcept {
  try {
    return resolve_or_throw();
  } catch (...) {
    // Only allocation can fail here. Keep the last answer: a transient
    // failure must not resize the runtime.
    return last_;
  }
}

Resolution Resolver::resolve_or_throw() {
  Resolution r;
  const char* debug_env = env_("GORO_DEBUG");
  DebugKnobs knobs = parse_goro_debug(debug_env ? debug_env : "");
  debug_ = knobs.verbose;
  std::vector<std::string> problems = std::move(knobs.warnings);

  const char* gomaxprocs = env_("GOMAXPROCS");
  if (gomaxprocs != nullptr && *gomaxprocs != '\0') {
    auto n = parse_positive(gomaxprocs);
    if (n && *n <= kMaxProcsFromEnv) {
      r.procs = static_cast<int>(*n);
      r.from_env = true;
    } else {
      problems.push_back(fmt::format("GOMAXPROCS={:?} is not a positive integer: ignored",
                                     std::string_view(gomaxprocs)));
    }
  }
  if (problems.empty()) {
    last_warning_.clear();  // a problem that comes back is worth a new line
  } else {
    warn_once(fmt::format("{}", fmt::join(problems, "; ")));
  }

  r.affinity = knobs.ncpu ? static_cast<int>(*knobs.ncpu) : affinity_count();
  r.affinity_overridden = knobs.ncpu.has_value();
  if (r.from_env) {
    // Explicit: like Go, the cgroup files are not read at all.
    last_ = r;
    return r;
  }
  r.procs = r.affinity;
  if (!knobs.ignore_cgroups) {
    std::vector<std::string> lines;
    auto debug = [&](std::string_view line) { lines.emplace_back(line); };
    detail::CgroupLimit limit = cgroup_->read(debug);
    if (limit.quota) {
      r.cgroup_limit = limit.quota->cpus();
      r.cgroup_version = static_cast<int>(limit.version);
      r.cgroup_path = limit.directory;
      // The floor of 2 is Go's (proposal #73193; its rationale is not written
      // down). A fractional quota still lets two threads run in a period, and
      // two Ps keep a hogging goroutine from holding up every other one.
      std::int64_t cap = std::max<std::int64_t>(2, limit.quota->ceil_cpus());
      if (cap < r.procs) r.procs = static_cast<int>(cap);
    }
    if (debug_ && lines != last_debug_lines_) {
      for (const std::string& line : lines)
        log(line);
    }
    last_debug_lines_ = std::move(lines);
  }
  if (debug_ && !(r == last_)) log(r.explain());
  last_ = r;
  return r;
}

Resolution resolve_default() noexcept {
  return Resolver().resolve();
}

MemoryLimitReader::MemoryLimitReader(std::string root)
    : cgroup_(std::make_unique<detail::CgroupReader>(std::move(root), "memory")) {}
MemoryLimitReader::~MemoryLimitReader() = default;
MemoryLimitReader::MemoryLimitReader(MemoryLimitReader&&) noexcept = default;
MemoryLimitReader& MemoryLimitReader::operator=(MemoryLimitReader&&) noexcept = default;

std::uint64_t MemoryLimitReader::read() noexcept {
  // The files probed (some missing by design) must not change the caller's
  // errno: goro::run calls this on the program's own thread.
  const int saved_errno = errno;
  std::uint64_t bytes = 0;
  try {
    detail::MemoryLimit limit = cgroup_->read_memory([](std::string_view) {});
    directory_ = limit.directory;
    version_ = limit.bytes ? static_cast<int>(limit.version) : 0;
    bytes = limit.bytes.value_or(0);
  } catch (...) {
    bytes = 0;  // allocation failed: "no limit", as for any unreadable file
  }
  errno = saved_errno;
  return bytes;
}

std::uint64_t MemoryLimitReader::working_set(const std::string& directory, int version) noexcept {
  if (directory.empty() || (version != 1 && version != 2)) return 0;
  const int saved_errno = errno;
  std::uint64_t result = 0;
  try {
    std::string text;
    const bool v2 = version == 2;
    if (detail::read_bounded(directory + (v2 ? "/memory.current" : "/memory.usage_in_bytes"), 128,
                             text)) {
      const std::uint64_t usage = std::strtoull(text.c_str(), nullptr, 10);
      std::uint64_t inactive = 0;
      // memory.stat is a few dozen "key value" lines; v1's hierarchical
      // total is total_inactive_file, v2's counters are hierarchical.
      const std::string_view key = v2 ? "inactive_file " : "total_inactive_file ";
      if (detail::read_bounded(directory + "/memory.stat", 64 * 1024, text)) {
        for (std::size_t at = 0; at < text.size();) {
          if (text.compare(at, key.size(), key) == 0) {
            inactive = std::strtoull(text.c_str() + at + key.size(), nullptr, 10);
            break;
          }
          const std::size_t nl = text.find('\n', at);
          if (nl == std::string::npos) break;
          at = nl + 1;
        }
      }
      result = usage > inactive ? usage - inactive : 0;
    }
  } catch (...) {
    result = 0;
  }
  errno = saved_errno;
  return result;
}

}  // namespace goro::gomaxprocs
