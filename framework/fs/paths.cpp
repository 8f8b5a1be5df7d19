// Operations on paths: stat, lstat, remove, rename, mkdir, list_dir; and the
// struct stat / dirent conversions (info.hpp).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "framework/fs/info.hpp"
#include "framework/fs/syscall.hpp"
#include "goro/fs.hpp"

namespace goro::fs {

using detail::blocking_syscall;

const char* file_type_string(FileType t) noexcept {
  switch (t) {
    case FileType::kRegular:
      return "regular";
    case FileType::kDirectory:
      return "directory";
    case FileType::kSymlink:
      return "symlink";
    case FileType::kFifo:
      return "fifo";
    case FileType::kSocket:
      return "socket";
    case FileType::kBlockDevice:
      return "block device";
    case FileType::kCharDevice:
      return "char device";
    case FileType::kUnknown:
      break;
  }
  return "unknown";
}

namespace detail {

FileType file_type_from_mode(mode_t mode) noexcept {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return FileType::kRegular;
    case S_IFDIR:
      return FileType::kDirectory;
    case S_IFLNK:
      return FileType::kSymlink;
    case S_IFIFO:
      return FileType::kFifo;
    case S_IFSOCK:
      return FileType::kSocket;
    case S_IFBLK:
      return FileType::kBlockDevice;
    case S_IFCHR:
      return FileType::kCharDevice;
    default:
      return FileType::kUnknown;
  }
}

FileInfo file_info_from_stat(const struct stat& st) noexcept {
  FileInfo info;
  info.size = static_cast<std::uint64_t>(st.st_size);
  info.mtime = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
  info.mode = st.st_mode;
  info.type = file_type_from_mode(st.st_mode);
  info.inode = static_cast<std::uint64_t>(st.st_ino);
  info.device = static_cast<std::uint64_t>(st.st_dev);
  info.nlink = static_cast<std::uint64_t>(st.st_nlink);
  return info;
}

}  // namespace detail

namespace {

FileType file_type_from_dirent(unsigned char d_type) {
  switch (d_type) {
    case DT_REG:
      return FileType::kRegular;
    case DT_DIR:
      return FileType::kDirectory;
    case DT_LNK:
      return FileType::kSymlink;
    case DT_FIFO:
      return FileType::kFifo;
    case DT_SOCK:
      return FileType::kSocket;
    case DT_BLK:
      return FileType::kBlockDevice;
    case DT_CHR:
      return FileType::kCharDevice;
    default:
      return FileType::kUnknown;
  }
}

Result<FileInfo> stat_with(const char* what, const Path& path, int flags) {
  struct stat st;
  const char* p = path.c_str();
  auto r = blocking_syscall(what, [&] { return ::fstatat(AT_FDCWD, p, &st, flags); });
  if (!r.ok()) return r.error_code();
  return detail::file_info_from_stat(st);
}

Result<void> void_result(const detail::SysResult& r) {
  if (!r.ok()) return r.error_code();
  return {};
}

}  // namespace

Result<FileInfo> stat(const Path& path) {
  return stat_with("fs::stat", path, 0);
}

Result<FileInfo> lstat(const Path& path) {
  return stat_with("fs::lstat", path, AT_SYMLINK_NOFOLLOW);
}

Result<void> remove(const Path& path) {
  const char* p = path.c_str();
  auto unlinked = blocking_syscall("fs::unlink", [&] { return ::unlink(p); });
  if (unlinked.ok()) return {};
  auto removed = blocking_syscall("fs::rmdir", [&] { return ::rmdir(p); });
  if (removed.ok()) return {};
  // Both failed; which error is real? (Go's os.Remove.) Linux's unlink of a
  // directory says EISDIR and rmdir of a file says ENOTDIR, so rmdir's error
  // is the one to report unless it is ENOTDIR (then `path` is not a
  // directory, or has a non-directory in its prefix, and unlink's error
  // describes it).
  return removed.error != ENOTDIR ? removed.error_code() : unlinked.error_code();
}

Result<void> rename(const Path& from, const Path& to) {
  const char* f = from.c_str();
  const char* t = to.c_str();
  return void_result(blocking_syscall("fs::rename", [&] { return ::rename(f, t); }));
}

Result<void> mkdir(const Path& path, mode_t mode) {
  const char* p = path.c_str();
  return void_result(blocking_syscall("fs::mkdir", [&] { return ::mkdir(p, mode); }));
}

Result<std::vector<DirEntry>> list_dir(const Path& path) {
  auto dir = File::open(path, O_RDONLY | O_DIRECTORY);
  if (!dir) return dir.error();
  const int fd = dir->native_handle();
  // getdents64 directly rather than readdir(3): each batch is one syscall we
  // can hand off, and there is no DIR* buffer to manage.
  constexpr std::size_t kBufSize = 32 * 1024;
  auto buf = std::make_unique<char[]>(kBufSize);
  std::vector<DirEntry> entries;
  for (;;) {
    auto r =
        blocking_syscall("fs::getdents", [&] { return ::getdents64(fd, buf.get(), kBufSize); });
    if (!r.ok()) return r.error_code();
    if (r.value == 0) break;
    for (long pos = 0; pos < r.value;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf.get() + pos);
      pos += d->d_reclen;
      const char* name = d->d_name;
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
      DirEntry e{name, file_type_from_dirent(d->d_type)};
      if (d->d_type == DT_UNKNOWN) {
        struct stat st;
        auto s = blocking_syscall("fs::lstat",
                                  [&] { return ::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW); });
        if (!s.ok()) {
          if (s.error == ENOENT) continue;  // removed since getdents saw it
          return s.error_code();
        }
        e.type = detail::file_type_from_mode(st.st_mode);
      }
      entries.push_back(std::move(e));
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  if (auto c = dir->close(); !c) return c.error();
  return entries;
}

}  // namespace goro::fs
