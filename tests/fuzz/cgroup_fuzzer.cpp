// libFuzzer target for the cgroup file parsers (config/maxprocs/cgroup.hpp):
// the pure functions behind GOMAXPROCS and the memory limit, fed what the
// kernel's files could hold.
//
// Input layout: byte 0 picks the controller (bit 0: "memory", else "cpu");
// the rest is cut at NUL bytes into up to eight pieces, in this order:
//   0 /proc/self/cgroup   1 /proc/self/mountinfo   2 cpu.max
//   3 cpu.cfs_quota_us    4 cpu.cfs_period_us      5 memory.max
//   6 memory.limit_in_bytes                        7 a mountinfo field
// Missing pieces are empty. NUL never occurs in these files, so it costs the
// fuzzer nothing to use it as the separator.
//
// Oracles, beyond ASan/UBSan (and libstdc++'s assertions, on in this build):
//   - a membership found in /proc/self/cgroup is v1 or v2, with a path that
//     starts with '/';
//   - a mount found for it has a root that contains that path, so
//     cgroup_directories() lists at least the mount point;
//   - cgroup_directories() lists the mount point last and, leaf first, each
//     directory one component below the next: all of them under the mount
//     point;
//   - a limited CPU level has quota > 0 and period > 0, and ceil_cpus() is
//     the least integer n >= 1 with n * period >= quota; tighter_than() is a
//     strict order on the levels found;
//   - a limited memory level is below 2^62 (v1: anything above means "no
//     limit") or fits in int64 (v2); zero is a limit, not an error;
//   - unescape_mount_field() never lengthens its input.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/maxprocs/cgroup.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

namespace cg = goro::gomaxprocs::detail;

constexpr std::size_t kPieces = 8;

void check_directories(const cg::Mount& mount, std::string_view path,
                       const std::vector<std::string>& dirs) {
  if (dirs.empty()) return;
  std::string base = mount.mount_point;
  while (base.size() > 1 && base.back() == '/')
    base.pop_back();
  FUZZ_CHECK(dirs.back() == base);
  for (std::size_t i = 0; i + 1 < dirs.size(); ++i) {
    const std::string& child = dirs[i];
    const std::string& parent = dirs[i + 1];
    const std::size_t sep = parent.empty() || parent.back() == '/' ? 0 : 1;
    FUZZ_CHECK(child.size() > parent.size() + sep);
    FUZZ_CHECK(child.starts_with(parent));
    FUZZ_CHECK(sep == 0 || child[parent.size()] == '/');
    const std::string_view component = std::string_view(child).substr(parent.size() + sep);
    FUZZ_CHECK(component.find('/') == std::string_view::npos);
    FUZZ_CHECK(component != "." && component != "..");
  }
  // Every component below the mount point comes from the process's path.
  for (std::size_t i = 0; i + 1 < dirs.size(); ++i)
    FUZZ_CHECK(path.find(dirs[i].substr(dirs[i + 1].size())) != std::string_view::npos);
}

// A mount find_mount chose contains the process's cgroup, so there is at
// least the mount point to read.
void check_mount(const cg::Mount& mount, std::string_view path) {
  const std::vector<std::string> dirs = cg::cgroup_directories(mount, path);
  // A mount point that names no directory gives none (read as no limit).
  if (mount.mount_point.empty()) {
    FUZZ_CHECK(dirs.empty());
    return;
  }
  FUZZ_CHECK(!dirs.empty());
  check_directories(mount, path, dirs);
}

void check_cpu_level(const cg::LevelLimit& level) {
  if (level.status != cg::LevelStatus::kLimited) return;
  const cg::Quota& q = level.quota;
  FUZZ_CHECK(q.quota_us > 0 && q.period_us > 0);
  const std::int64_t n = q.ceil_cpus();
  FUZZ_CHECK(n >= 1);
  const __int128 quota = q.quota_us, period = q.period_us;
  FUZZ_CHECK(n * period >= quota && (n - 1) * period < quota);
  FUZZ_CHECK(!q.tighter_than(q));
}

void check_memory_level(const cg::MemoryLevel& level, std::uint64_t bound) {
  if (level.status == cg::LevelStatus::kLimited) FUZZ_CHECK(level.bytes < bound);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view controller = (data[0] & 1) != 0 ? "memory" : "cpu";
  std::vector<std::string_view> piece =
      goro::fuzz::split_input(goro::fuzz::as_text(data + 1, size - 1), '\0', kPieces);
  piece.resize(kPieces);

  if (const auto m = cg::parse_proc_cgroup(piece[0], controller)) {
    FUZZ_CHECK(m->version == cg::CgroupVersion::kV1 || m->version == cg::CgroupVersion::kV2);
    FUZZ_CHECK(m->path.starts_with('/'));
    const auto mount = cg::find_mount(piece[1], *m, controller);
    // An empty mount point field once reached back() on "" in
    // cgroup_directories (tests/fuzz/corpus/cgroup/regress_empty_mount_point).
    if (mount) check_mount(*mount, m->path);
  }

  const cg::LevelLimit v2 = cg::parse_cpu_max(piece[2]);
  const cg::LevelLimit v1 = cg::parse_cfs(piece[3], piece[4]);
  check_cpu_level(v2);
  check_cpu_level(v1);
  if (v1.status == cg::LevelStatus::kLimited && v2.status == cg::LevelStatus::kLimited) {
    FUZZ_CHECK(!(v1.quota.tighter_than(v2.quota) && v2.quota.tighter_than(v1.quota)));
  }
  check_memory_level(cg::parse_memory_max(piece[5]), std::uint64_t{1} << 63);
  check_memory_level(cg::parse_memory_limit_in_bytes(piece[6]), std::uint64_t{1} << 62);

  FUZZ_CHECK(cg::unescape_mount_field(piece[7]).size() <= piece[7].size());
  return 0;
}
