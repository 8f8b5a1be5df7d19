// Finding and reading the CPU limit of the process's cgroups.
//
// # Discovery
//
// /proc/self/cgroup lists one line per hierarchy, "ID:controllers:path".
// A cgroup v1 line whose controller list contains `cpu` wins; otherwise the
// v2 line ("0::path") is used. On a hybrid host (v1 controllers plus a v2
// mount for systemd) the cpu controller is bound to v1, so v1 must win — as
// in Go.
//
// /proc/self/mountinfo tells where that hierarchy is mounted: fstype `cgroup`
// with `cpu` among the super options (v1) or fstype `cgroup2` (v2). Field 4,
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
//
// A malformed value is logged and treated as "no limit at that level".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace goro::gomaxprocs::detail {

enum class CgroupVersion { kNone = 0, kV1 = 1, kV2 = 2 };

// The process's CPU cgroup according to /proc/self/cgroup.
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

std::optional<Membership> parse_proc_cgroup(std::string_view text);
std::optional<Mount> find_mount(std::string_view mountinfo, const Membership& m);
std::string unescape_mount_field(std::string_view field);
// Directories from the process's cgroup up to the mount point, leaf first; empty
// when `m.path` lies outside `mount.root`.
std::vector<std::string> cgroup_directories(const Mount& mount, std::string_view path);
LevelLimit parse_cpu_max(std::string_view text);
LevelLimit parse_cfs(std::string_view quota_text, std::string_view period_text);

// Reads `path` into `out`, at most `limit` bytes. False on any error or when
// the file is larger than `limit` (never a partial answer).
bool read_bounded(const std::string& path, std::size_t limit, std::string& out);

// The tightest limit found by one read.
struct CgroupLimit {
  CgroupVersion version = CgroupVersion::kNone;
  std::optional<Quota> quota;  // nullopt: no limit anywhere
  std::string directory;       // where `quota` was found
};

// Discovery cached across calls, values re-read every call.
class CgroupReader {
 public:
  using Log = std::function<void(std::string_view)>;
  explicit CgroupReader(std::string root) : root_(std::move(root)) {}

  // `debug` receives discovery and problem lines (the caller filters them).
  CgroupLimit read(const Log& debug);

 private:
  bool discover(const Membership& m, const Log& debug);
  std::string under_root(std::string_view path) const;

  std::string root_;
  std::optional<Membership> membership_;  // what `dirs_` was discovered for
  std::vector<std::string> dirs_;         // leaf first, filesystem paths under root_
};

}  // namespace goro::gomaxprocs::detail
