// The mechanism behind cgroup.hpp: parsing /proc/self/cgroup and mountinfo,
// walking the ancestry and reading limit files. Every function here is total:
// bad input yields nullopt, an empty list or kMalformed, never an exception
// from our own code (std::string may still throw bad_alloc; Resolver catches).
#include "config/maxprocs/cgroup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include <fmt/format.h>

namespace goro::gomaxprocs::detail {
namespace {

// /proc/self/cgroup is a line per hierarchy (a dozen on v1 hosts); a path is
// at most PATH_MAX. 64 KiB is ample and bounds the work.
constexpr std::size_t kProcCgroupLimit = 64 * 1024;
// mountinfo grows with the host's mounts (thousands on a Kubernetes node with
// many volumes, ~150 bytes each). 4 MiB covers ~25k mounts; beyond that we
// prefer "no limit" to an unbounded read in sysmon.
constexpr std::size_t kMountinfoLimit = 4 * 1024 * 1024;
// Limit files hold one or two integers.
constexpr std::size_t kValueLimit = 128;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// Calls fn(line) for each line of `text` (without the newline).
template <class F>
void for_each_line(std::string_view text, F&& fn) {
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    fn(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// Splits on `sep`, keeping empty fields.
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    std::size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

bool has_token(std::string_view list, std::string_view token) {
  for (std::string_view t : split(list, ',')) {
    if (t == token) return true;
  }
  return false;
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The components of `path` below `root`, or nullopt when `path` is not `root`
// or a descendant of it, or climbs with "..".
std::optional<std::vector<std::string_view>> components_below(std::string_view root,
                                                              std::string_view path) {
  if (path.empty() || path.front() != '/') return std::nullopt;
  std::vector<std::string_view> want;
  for (std::string_view c : split(root, '/')) {
    if (!c.empty()) want.push_back(c);
  }
  std::vector<std::string_view> rest;
  std::size_t matched = 0;
  for (std::string_view c : split(path, '/')) {
    if (c.empty()) continue;
    if (c == "." || c == "..") return std::nullopt;
    if (matched < want.size()) {
      if (c != want[matched]) return std::nullopt;
      ++matched;
    } else {
      rest.push_back(c);
    }
  }
  if (matched != want.size()) return std::nullopt;
  return rest;
}

bool directory_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

const char* version_name(CgroupVersion v) {
  return v == CgroupVersion::kV1 ? "v1" : "v2";
}

}  // namespace

bool Quota::tighter_than(const Quota& other) const {
  // quota/period < other.quota/other.period, cross-multiplied. Both periods
  // are positive (parse_* guarantee it); 128 bits cannot overflow.
  return static_cast<__int128>(quota_us) * other.period_us <
         static_cast<__int128>(other.quota_us) * period_us;
}

std::int64_t Quota::ceil_cpus() const {
  return static_cast<std::int64_t>((static_cast<__int128>(quota_us) + period_us - 1) / period_us);
}

std::optional<Membership> parse_proc_cgroup(std::string_view text, std::string_view controller) {
  std::optional<Membership> v2;
  std::optional<Membership> v1;
  for_each_line(text, [&](std::string_view line) {
    if (v1) return;
    // "ID:controllers:path"; the path itself may contain ':'.
    std::size_t first = line.find(':');
    if (first == std::string_view::npos) return;
    std::size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) return;
    std::string_view id = line.substr(0, first);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string_view path = line.substr(second + 1);
    if (path.empty() || path.front() != '/') return;
    if (id == "0" && controllers.empty()) {
      v2 = Membership{CgroupVersion::kV2, std::string(path)};
    } else if (has_token(controllers, controller)) {
      v1 = Membership{CgroupVersion::kV1, std::string(path)};
    }
  });
  return v1 ? v1 : v2;
}

std::string unescape_mount_field(std::string_view field) {
  // The kernel escapes space, tab, newline and backslash as \ooo (show_path()
  // with " \t\n\\"). Anything else after a backslash is kept verbatim.
  std::string out;
  out.reserve(field.size());
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      auto is_oct = [](char c) { return c >= '0' && c <= '7'; };
      if (is_oct(field[i + 1]) && is_oct(field[i + 2]) && is_oct(field[i + 3])) {
        int v = (field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0');
        if (v <= 0xff) {
          out.push_back(static_cast<char>(v));
          i += 3;
          continue;
        }
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

std::optional<Mount> find_mount(std::string_view mountinfo, const Membership& m,
                                std::string_view controller) {
  std::optional<Mount> best;
  for_each_line(mountinfo, [&](std::string_view line) {
    // "id parent maj:min root mountpoint options [optional...] - fstype source superopts"
    std::vector<std::string_view> f = split(line, ' ');
    std::size_t dash = 6;
    while (dash < f.size() && f[dash] != "-")
      ++dash;
    if (dash + 3 >= f.size()) return;  // no separator, or fewer than 3 fields after it
    std::string_view fstype = f[dash + 1];
    std::string_view superopts = f[dash + 3];
    bool match = m.version == CgroupVersion::kV1
                     ? fstype == "cgroup" && has_token(superopts, controller)
                     : fstype == "cgroup2";
    if (!match) return;
    Mount candidate{unescape_mount_field(f[4]), unescape_mount_field(f[3])};
    if (!components_below(candidate.root, m.path)) return;
    if (!best || candidate.root.size() > best->root.size()) best = std::move(candidate);
  });
  return best;
}

std::vector<std::string> cgroup_directories(const Mount& mount, std::string_view path) {
  auto below = components_below(mount.root, path);
  // An empty mount point (a malformed mountinfo line) names no directory;
  // found by tests/fuzz/cgroup_fuzzer.cpp.
  if (!below || mount.mount_point.empty()) return {};
  std::string base = mount.mount_point;
  while (base.size() > 1 && base.back() == '/')
    base.pop_back();
  std::vector<std::string> dirs;
  std::string dir = base;
  dirs.push_back(dir);
  for (std::string_view c : *below) {
    if (dir.back() != '/') dir.push_back('/');
    dir.append(c);
    dirs.push_back(dir);
  }
  return {dirs.rbegin(), dirs.rend()};
}

LevelLimit parse_cpu_max(std::string_view text) {
  std::vector<std::string_view> f = split(trim(text), ' ');
  if (f.size() != 2) return {LevelStatus::kMalformed, {}};
  auto period = parse_int(f[1]);
  if (!period || *period <= 0) return {LevelStatus::kMalformed, {}};
  if (f[0] == "max") return {LevelStatus::kUnlimited, {}};
  auto quota = parse_int(f[0]);
  if (!quota || *quota <= 0) return {LevelStatus::kMalformed, {}};
  return {LevelStatus::kLimited, {*quota, *period}};
}

LevelLimit parse_cfs(std::string_view quota_text, std::string_view period_text) {
  auto quota = parse_int(trim(quota_text));
  if (!quota || *quota == 0) return {LevelStatus::kMalformed, {}};
  if (*quota < 0) return {LevelStatus::kUnlimited, {}};  // -1: no limit (v1 ABI)
  auto period = parse_int(trim(period_text));
  if (!period || *period <= 0) return {LevelStatus::kMalformed, {}};
  return {LevelStatus::kLimited, {*quota, *period}};
}

MemoryLevel parse_memory_max(std::string_view text) {
  std::string_view t = trim(text);
  if (t == "max") return {LevelStatus::kUnlimited, 0};
  auto v = parse_int(t);
  if (!v || *v < 0) return {LevelStatus::kMalformed, 0};
  return {LevelStatus::kLimited, static_cast<std::uint64_t>(*v)};
}

MemoryLevel parse_memory_limit_in_bytes(std::string_view text) {
  auto v = parse_int(trim(text));
  if (!v || *v < 0) return {LevelStatus::kMalformed, 0};
  if (*v >= (std::int64_t{1} << 62)) return {LevelStatus::kUnlimited, 0};
  return {LevelStatus::kLimited, static_cast<std::uint64_t>(*v)};
}

bool read_bounded(const std::string& path, std::size_t limit, std::string& out) {
  out.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  bool ok = true;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || out.size() + static_cast<std::size_t>(n) > limit) {
      ok = false;
      break;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return ok;
}

std::string CgroupReader::under_root(std::string_view path) const {
  if (root_.empty() || root_ == "/") return std::string(path);
  std::string out = root_;
  while (!out.empty() && out.back() == '/')
    out.pop_back();
  out.append(path);
  return out;
}

bool CgroupReader::discover(const Membership& m, const Log& debug) {
  membership_ = m;
  dirs_.clear();
  std::string mountinfo;
  if (!read_bounded(under_root("/proc/self/mountinfo"), kMountinfoLimit, mountinfo)) {
    debug("maxprocs: cannot read /proc/self/mountinfo (missing or over 4 MiB): no cgroup limit");
    return false;
  }
  auto mount = find_mount(mountinfo, m, controller_);
  if (!mount) {
    debug(fmt::format("maxprocs: no cgroup {} {} mount contains {}: no cgroup limit",
                      version_name(m.version), controller_, m.path));
    return false;
  }
  Mount physical{under_root(mount->mount_point), mount->root};
  dirs_ = cgroup_directories(physical, m.path);
  debug(fmt::format("maxprocs: cgroup {} {} at {} (mount root {}), {} level(s)",
                    version_name(m.version), m.path, physical.mount_point, mount->root,
                    dirs_.size()));
  return !dirs_.empty();
}

std::optional<CgroupVersion> CgroupReader::locate(const Log& debug) {
  std::string text;
  if (!read_bounded(under_root("/proc/self/cgroup"), kProcCgroupLimit, text)) {
    debug("maxprocs: cannot read /proc/self/cgroup: no cgroup limit");
    membership_.reset();
    dirs_.clear();
    return std::nullopt;
  }
  auto m = parse_proc_cgroup(text, controller_);
  if (!m) {
    debug(fmt::format("maxprocs: no {} cgroup in /proc/self/cgroup: no cgroup limit", controller_));
    membership_.reset();
    dirs_.clear();
    return std::nullopt;
  }
  // Re-discover when we moved, or when our directory vanished (the cgroup was
  // removed or renamed under us). A failed discovery is cached for the same
  // membership, so a host without the controller's mount does not re-parse
  // mountinfo.
  bool moved = membership_ != m;
  bool vanished = !moved && !dirs_.empty() && !directory_exists(dirs_.front());
  if (moved || vanished) {
    if (vanished) debug(fmt::format("maxprocs: {} vanished, re-discovering", dirs_.front()));
    if (!discover(*m, debug)) return std::nullopt;
  }
  if (dirs_.empty()) return std::nullopt;
  return m->version;
}

CgroupLimit CgroupReader::read(const Log& debug) {
  std::optional<CgroupVersion> version = locate(debug);
  if (!version) return {};
  CgroupLimit result;
  result.version = *version;
  std::string value, period;
  for (const std::string& dir : dirs_) {
    LevelLimit level;
    if (*version == CgroupVersion::kV2) {
      if (!read_bounded(dir + "/cpu.max", kValueLimit, value)) continue;
      level = parse_cpu_max(value);
    } else {
      if (!read_bounded(dir + "/cpu.cfs_quota_us", kValueLimit, value)) continue;
      if (!read_bounded(dir + "/cpu.cfs_period_us", kValueLimit, period)) period.clear();
      level = parse_cfs(value, period);
    }
    if (level.status == LevelStatus::kMalformed) {
      debug(fmt::format("maxprocs: malformed cpu limit in {}: ignored", dir));
      continue;
    }
    if (level.status != LevelStatus::kLimited) continue;
    if (!result.quota || level.quota.tighter_than(*result.quota)) {
      result.quota = level.quota;
      result.directory = dir;
    }
  }
  return result;
}

MemoryLimit CgroupReader::read_memory(const Log& debug) {
  std::optional<CgroupVersion> version = locate(debug);
  if (!version) return {};
  MemoryLimit result;
  result.version = *version;
  std::string value;
  for (const std::string& dir : dirs_) {
    const bool v2 = *version == CgroupVersion::kV2;
    if (!read_bounded(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"), kValueLimit, value)) {
      continue;  // the v2 root has no memory.max
    }
    MemoryLevel level = v2 ? parse_memory_max(value) : parse_memory_limit_in_bytes(value);
    if (level.status == LevelStatus::kMalformed) {
      debug(fmt::format("maxprocs: malformed memory limit in {}: ignored", dir));
      continue;
    }
    if (level.status != LevelStatus::kLimited) continue;
    if (!result.bytes || level.bytes < *result.bytes) {
      result.bytes = level.bytes;
      result.directory = dir;
    }
  }
  return result;
}

}  // namespace goro::gomaxprocs::detail
