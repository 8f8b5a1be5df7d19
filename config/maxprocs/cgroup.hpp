// Finding and reading the CPU and memory limits of the process's cgroups.
//
// # Discovery
//
// /proc/self/cgroup lists one line per hierarchy, "ID:controllers:path".
// A cgroup v1 line whose controller list contains the controller (`cpu` or
// `memory`) wins; otherwise the v2 line ("0::path") is used. On a hybrid host
// (v1 controllers plus a v2 mount for systemd) the controller is bound to
// v1, so v1 must win — as in Go.
//
// /proc/self/mountinfo tells where that hierarchy is mounted: fstype `cgroup`
// with the controller among the super options (v1) or fstype `cgroup2` (v2). Field 4,
// the mount's root, is the cgroup the mount point shows; it is not "/" when a
// container bind-mounts only its own cgroup, or when the mount was made in
// another cgroup namespace. The directory of our cgroup is then
//   mount point + (path with the mount root stripped as a leading component).
// Mount points are octal-escaped ("\040" is a space). When several mounts of
// the hierarchy exist, the one with the longest root that contains our path
// wins; a path outside every mount's root (a process moved out of its
// namespace, "/../x") cannot be read and means "no limit".
//
// # The walk (our departure from Go, golang/go#81180)
//
// Starting at the process's directory, each ancestor up to and including the
// mount point is read; the smallest quota/period is the limit. A directory
// without the files (the v2 root has no cpu.max) has no limit of its own.
//
// # Values
//
//   v2  cpu.max                 "max 100000" (none) or "350000 100000"
//   v1  cpu.cfs_quota_us        "-1" (none) or "350000"
//       cpu.cfs_period_us       "100000"
//   v2  memory.max              "max" (none) or bytes
//   v1  memory.limit_in_bytes   bytes; "no limit" is the page counter's
//                               maximum (0x7ffffffffffff000 on 64-bit), so
//                               anything from 2^62 up means none
//
// A malformed value is logged and treated as "no limit at that level". The
// memory limit is the hard one (the OOM killer's); memory.high and soft
// limits only throttle or reclaim and are not read.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace goro::gomaxprocs::detail {

enum class CgroupVersion { kNone = 0, kV1 = 1, kV2 = 2 };

// The process's cgroup for one controller according to /proc/self/cgroup.
struct Membership {
  CgroupVersion version = CgroupVersion::kNone;
  std::string path;  // as listed, relative to the cgroup namespace root
  friend bool operator==(const Membership&, const Membership&) = default;
};

// The chosen mount of that hierarchy according to /proc/self/mountinfo.
struct Mount {
  std::string mount_point;  // unescaped
  std::string root;         // unescaped; the cgroup shown at mount_point
};

// A level's limit as a fraction, so ceil and comparisons stay exact.
struct Quota {
  std::int64_t quota_us = 0;
  std::int64_t period_us = 0;
  double cpus() const { return static_cast<double>(quota_us) / static_cast<double>(period_us); }
  // True when this quota allows strictly fewer CPUs than `other`.
  bool tighter_than(const Quota& other) const;
  // ceil(quota / period), computed in integers.
  std::int64_t ceil_cpus() const;
};

enum class LevelStatus { kLimited, kUnlimited, kMissing, kMalformed };
struct LevelLimit {
  LevelStatus status = LevelStatus::kMissing;
  Quota quota;  // meaningful when kLimited
};

// `controller` is the v1 controller's name: "cpu" or "memory".
std::optional<Membership> parse_proc_cgroup(std::string_view text,
                                            std::string_view controller = "cpu");
std::optional<Mount> find_mount(std::string_view mountinfo, const Membership& m,
                                std::string_view controller = "cpu");
std::string unescape_mount_field(std::string_view field);
// Directories from the process's cgroup up to the mount point, leaf first; empty
// when `m.path` lies outside `mount.root`.
std::vector<std::string> cgroup_directories(const Mount& mount, std::string_view path);
LevelLimit parse_cpu_max(std::string_view text);
LevelLimit parse_cfs(std::string_view quota_text, std::string_view period_text);

// A memory limit file's value: bytes, or nullopt for "no limit" (v2 "max",
// v1 >= 2^62); kMalformed is reported as `malformed`.
struct MemoryLevel {
  LevelStatus status = LevelStatus::kMissing;
  std::uint64_t bytes = 0;  // meaningful when kLimited
};
MemoryLevel parse_memory_max(std::string_view text);             // v2 memory.max
MemoryLevel parse_memory_limit_in_bytes(std::string_view text);  // v1

// Reads `path` into `out`, at most `limit` bytes. False on any error or when
// the file is larger than `limit` (never a partial answer).
bool read_bounded(const std::string& path, std::size_t limit, std::string& out);

// The tightest limit found by one read.
struct CgroupLimit {
  CgroupVersion version = CgroupVersion::kNone;
  std::optional<Quota> quota;  // nullopt: no limit anywhere
  std::string directory;       // where `quota` was found
};

// The tightest memory limit found by one read.
struct MemoryLimit {
  CgroupVersion version = CgroupVersion::kNone;
  std::optional<std::uint64_t> bytes;  // nullopt: no limit anywhere
  std::string directory;               // where `bytes` was found
};

// Discovery cached across calls, values re-read every call. One reader per
// controller: on v1 the cpu and memory hierarchies are mounted apart.
class CgroupReader {
 public:
  using Log = std::function<void(std::string_view)>;
  explicit CgroupReader(std::string root, std::string controller = "cpu")
      : root_(std::move(root)), controller_(std::move(controller)) {}

  // `debug` receives discovery and problem lines (the caller filters them).
  // read() is for a "cpu" reader, read_memory() for a "memory" one.
  CgroupLimit read(const Log& debug);
  MemoryLimit read_memory(const Log& debug);

 private:
  // Re-reads the membership and re-discovers when it changed; the version
  // and the directories to read (leaf first), or nullopt when there are none.
  std::optional<CgroupVersion> locate(const Log& debug);
  bool discover(const Membership& m, const Log& debug);
  std::string under_root(std::string_view path) const;

  std::string root_;
  std::string controller_;
  std::optional<Membership> membership_;  // what `dirs_` was discovered for
  std::vector<std::string> dirs_;         // leaf first, filesystem paths under root_
};

}  // namespace goro::gomaxprocs::detail
