// read_file and read_file_beneath (with a size limit) and write_file (atomic replace); see fs.hpp.
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <chrono>

#include "framework/fs/syscall.hpp"
#include "goro/fs.hpp"

namespace goro::fs {

using detail::blocking_syscall;

namespace {

constexpr std::size_t kFirstChunk = 4096;

std::error_code too_large() {
  return std::make_error_code(std::errc::file_too_large);
}

}  // namespace

namespace {

// Reads the rest of `f` and closes it (read_file, read_file_beneath).
Result<std::string> read_whole(Result<File> f, std::size_t max_size) {
  if (!f) return f.error();
  // The size is a hint only: the file may grow or shrink while we read, and
  // /proc files and pipes report 0. So read until end of file, and never
  // hold more than max_size + 1 bytes: the extra byte is how we notice a
  // file over the limit without reading all of it.
  std::size_t cap = kFirstChunk;
  if (auto info = f->stat(); info && info->is_regular()) {
    if (info->size > max_size) return too_large();
    cap = static_cast<std::size_t>(info->size) + 1;  // + 1: see end of file in the same read
  }
  const std::size_t limit = max_size == SIZE_MAX ? max_size : max_size + 1;
  cap = std::min(cap, limit);
  std::string data;
  data.resize(cap);
  std::size_t len = 0;
  for (;;) {
    if (len == data.size()) {
      if (len >= limit) return too_large();
      data.resize(std::min(std::max(data.size() * 2, kFirstChunk), limit));
    }
    auto n = f->read(std::span<char>(data.data() + len, data.size() - len));
    if (!n) return n.error();
    if (*n == 0) break;
    len += *n;
  }
  if (len > max_size) return too_large();
  data.resize(len);
  if (auto c = f->close(); !c) return c.error();
  return data;
}

}  // namespace

Result<std::string> read_file(const Path& path, std::size_t max_size) {
  return read_whole(File::open(path), max_size);
}

Result<std::string> read_file_beneath(const File& dir, const Path& path, std::size_t max_size) {
  return read_whole(File::open_beneath(dir, path), max_size);
}

namespace {

// ".<name>.tmp-<pid>-<counter>-<time>": unique enough that O_EXCL collisions
// (another process, a leftover from a crash) are rare; open retries on one.
std::string temp_name(const std::string& name) {
  static std::atomic<std::uint64_t> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return fmt::format(".{}.tmp-{}-{}-{:x}", name, ::getpid(),
                     counter.fetch_add(1, std::memory_order_relaxed),
                     static_cast<std::uint64_t>(now) & 0xffffff);
}

// Makes the directory entry changes in `dir` (our rename) durable. Some
// filesystems cannot fsync a directory and say EINVAL; there is nothing
// better to do there, so that is not an error.
Result<void> sync_dir(const Path& dir) {
  auto d = File::open(dir, O_RDONLY | O_DIRECTORY);
  if (!d) return d.error();
  auto s = d->fsync();
  if (!s && s.error() != std::errc::invalid_argument) return s.error();
  return d->close();
}

// The part of write_file that writes the temporary file; `tmp` is removed by
// the caller on failure.
Result<void> fill_temp(File& f, std::string_view data, mode_t mode) {
  // The umask has masked the open's mode; the caller asked for `mode`.
  const int fd = f.native_handle();
  auto ch = blocking_syscall("fs::fchmod", [&] { return ::fchmod(fd, mode); });
  if (!ch.ok()) return ch.error_code();
  if (auto w = f.write(data); !w) return w.error();
  if (auto s = f.fsync(); !s) return s.error();
  return f.close();
}

}  // namespace

Result<void> write_file(const Path& path, std::string_view data, mode_t mode) {
  const std::string name = path.filename().string();
  if (name.empty() || name == "." || name == "..") {
    return std::make_error_code(std::errc::is_a_directory);
  }
  const Path dir = path.has_parent_path() ? path.parent_path() : Path(".");
  Path tmp;
  Result<File> f = errc::closed;
  for (int attempt = 0; attempt < 100; ++attempt) {
    tmp = dir / temp_name(name);
    f = File::open(tmp, O_WRONLY | O_CREAT | O_EXCL, mode & 0777);
    if (f || f.error() != std::errc::file_exists) break;
  }
  if (!f) return f.error();
  auto filled = fill_temp(*f, data, mode);
  if (filled) filled = fs::rename(tmp, path);
  if (!filled) {
    (void)f->close();
    (void)fs::remove(tmp);
    return filled.error();
  }
  // The new content is in place; this makes the rename survive a crash.
  return sync_dir(dir);
}

}  // namespace goro::fs
