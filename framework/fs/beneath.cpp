// File::open_beneath: opening a path that cannot leave a directory
// (include/goro/fs.hpp has the contract).
//
// # openat2 first
// openat2(2) with RESOLVE_BENEATH makes the kernel refuse, during the path
// walk itself, every step that would leave the starting directory: "..", an
// absolute path, or a symlink whose target does; nothing can race it. It
// answers EXDEV. RESOLVE_NO_MAGICLINKS adds the /proc/<pid>/fd links, which
// would otherwise jump anywhere (ELOOP).
//
// # The fallback
// Kernels before 5.6 answer ENOSYS (learned once, then openat2 is not tried
// again); some seccomp profiles answer EPERM (tried each time: EPERM can also
// be a real refusal, so this call falls back without concluding anything).
// The fallback resolves the path in user space: realpath(3) of the
// directory's own path (/proc/self/fd/N) and of the joined path, a prefix
// check, then open(2) of the resolved path with O_NOFOLLOW, so at least the
// last component cannot have become a symlink meanwhile. Between the check
// and the open an intermediate directory can still be renamed or replaced by
// a symlink; closing that needs the kernel's help, which is what openat2 is.
#include "framework/fs/beneath.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "framework/fs/syscall.hpp"
#include "goro/fs.hpp"

namespace goro::fs {

using detail::blocking_syscall;
using detail::sys_error;

namespace {

// Set once openat2 answered ENOSYS: the kernel has no such call.
std::atomic<bool> g_no_openat2{false};
std::atomic<bool> g_force_fallback{false};

bool is_beneath(const std::string& resolved, const std::string& root) {
  if (root == "/") return true;
  return resolved == root ||
         (resolved.size() > root.size() && resolved.compare(0, root.size(), root) == 0 &&
          resolved[root.size()] == '/');
}

// realpath(3) through the handoff: it lstat()s and readlink()s every step.
Result<std::string> real_path(const std::string& path) {
  char out[PATH_MAX];
  auto r = blocking_syscall("fs::realpath",
                            [&] { return ::realpath(path.c_str(), out) != nullptr ? 0 : -1; });
  if (!r.ok()) return r.error_code();
  return std::string(out);
}

Result<File> open_resolved(const std::string& path, int flags, mode_t mode) {
  auto r = blocking_syscall(
      "fs::open", [&] { return ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode); });
  if (!r.ok()) return r.error_code();
  return File(static_cast<int>(r.value));
}

Result<File> open_beneath_fallback(int dirfd, const Path& path, int flags, mode_t mode) {
  if (path.is_absolute()) return sys_error(EXDEV);
  char link[32];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
  auto root = real_path(link);
  if (!root) return root.error();
  const std::string joined = *root + "/" + path.string();
  auto resolved = real_path(joined);
  if (resolved) {
    if (!is_beneath(*resolved, *root)) return sys_error(EXDEV);
    return open_resolved(*resolved, flags, mode);
  }
  // A file to be created does not exist yet: resolve its directory instead.
  const Path name = path.filename();
  if (resolved.error() != std::errc::no_such_file_or_directory || (flags & O_CREAT) == 0 ||
      name.empty() || name == "." || name == "..") {
    return resolved.error();
  }
  auto parent = real_path(Path(joined).parent_path().string());
  if (!parent) return parent.error();
  if (!is_beneath(*parent, *root)) return sys_error(EXDEV);
  return open_resolved(*parent + "/" + name.string(), flags, mode);
}

}  // namespace

namespace detail {
void force_open_beneath_fallback(bool on) noexcept {
  g_force_fallback.store(on);
}
}  // namespace detail

Result<File> File::open_beneath(const File& dir, const Path& path, int flags, mode_t mode) {
  if (!dir.is_open()) return errc::closed;
  if (!g_no_openat2.load(std::memory_order_relaxed) && !g_force_fallback.load()) {
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
    // openat2 insists on mode 0 unless a file may be created.
    how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    const char* p = path.c_str();
    auto r = blocking_syscall("fs::openat2", [&] {
      return ::syscall(SYS_openat2, dir.native_handle(), p, &how, sizeof how);
    });
    if (r.ok()) return File(static_cast<int>(r.value));
    if (r.error == ENOSYS) {
      g_no_openat2.store(true, std::memory_order_relaxed);
    } else if (r.error != EPERM) {
      return r.error_code();
    }
  }
  return open_beneath_fallback(dir.native_handle(), path, flags, mode);
}

}  // namespace goro::fs
