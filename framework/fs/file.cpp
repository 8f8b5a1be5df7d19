// File: one descriptor, every syscall on it through blocking_syscall.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "framework/fs/info.hpp"
#include "framework/fs/syscall.hpp"
#include "goro/fs.hpp"

namespace goro::fs {

using detail::blocking_syscall;

namespace {

// Linux transfers at most this much per read/write call (MAX_RW_COUNT);
// asking for more is harmless but we loop anyway, so ask for what it gives.
constexpr std::size_t kMaxIo = 0x7ffff000;

}  // namespace

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    (void)close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

File::~File() {
  (void)close();
}

Result<File> File::open(const Path& path, int flags, mode_t mode) {
  const char* p = path.c_str();
  auto r = blocking_syscall("fs::open", [&] { return ::open(p, flags | O_CLOEXEC, mode); });
  if (!r.ok()) return r.error_code();
  return File(static_cast<int>(r.value));
}

Result<File> File::create(const Path& path, mode_t mode) {
  return open(path, O_RDWR | O_CREAT | O_TRUNC, mode);
}

Result<std::size_t> File::read(std::span<std::byte> buf) {
  if (fd_ < 0) return errc::closed;
  if (buf.empty()) return std::size_t{0};
  const std::size_t n = std::min(buf.size(), kMaxIo);
  auto r = blocking_syscall("fs::read", [&] { return ::read(fd_, buf.data(), n); });
  if (!r.ok()) return r.error_code();
  return static_cast<std::size_t>(r.value);
}

Result<std::size_t> File::read(std::span<char> buf) {
  return read(std::as_writable_bytes(buf));
}

Result<std::size_t> File::pread(std::span<std::byte> buf, std::uint64_t offset) {
  if (fd_ < 0) return errc::closed;
  if (buf.empty()) return std::size_t{0};
  const std::size_t n = std::min(buf.size(), kMaxIo);
  auto r = blocking_syscall(
      "fs::pread", [&] { return ::pread(fd_, buf.data(), n, static_cast<off_t>(offset)); });
  if (!r.ok()) return r.error_code();
  return static_cast<std::size_t>(r.value);
}

Result<std::size_t> File::pread(std::span<char> buf, std::uint64_t offset) {
  return pread(std::as_writable_bytes(buf), offset);
}

Result<void> File::pread_full(std::span<std::byte> buf, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < buf.size()) {
    auto n = pread(buf.subspan(done), offset + done);
    if (!n) return n.error();
    if (*n == 0) return errc::eof;
    done += *n;
  }
  return {};
}

Result<std::size_t> File::write(std::span<const std::byte> buf) {
  if (fd_ < 0) return errc::closed;
  std::size_t done = 0;
  while (done < buf.size()) {
    const std::size_t n = std::min(buf.size() - done, kMaxIo);
    auto r = blocking_syscall("fs::write", [&] { return ::write(fd_, buf.data() + done, n); });
    if (!r.ok()) return r.error_code();
    // write(2) of a non-empty buffer to a file never returns 0 except on
    // odd devices; treat it as "no space" rather than spin.
    if (r.value == 0) return detail::sys_error(ENOSPC);
    done += static_cast<std::size_t>(r.value);
  }
  return buf.size();
}

Result<std::size_t> File::write(std::string_view s) {
  return write(std::as_bytes(std::span<const char>(s.data(), s.size())));
}

Result<std::size_t> File::pwrite(std::span<const std::byte> buf, std::uint64_t offset) {
  if (fd_ < 0) return errc::closed;
  std::size_t done = 0;
  while (done < buf.size()) {
    const std::size_t n = std::min(buf.size() - done, kMaxIo);
    auto r = blocking_syscall("fs::pwrite", [&] {
      return ::pwrite(fd_, buf.data() + done, n, static_cast<off_t>(offset + done));
    });
    if (!r.ok()) return r.error_code();
    if (r.value == 0) return detail::sys_error(ENOSPC);
    done += static_cast<std::size_t>(r.value);
  }
  return buf.size();
}

Result<std::size_t> File::pwrite(std::string_view s, std::uint64_t offset) {
  return pwrite(std::as_bytes(std::span<const char>(s.data(), s.size())), offset);
}

Result<std::uint64_t> File::seek(std::int64_t offset, int whence) {
  if (fd_ < 0) return errc::closed;
  // No handoff: lseek only moves the offset kept in the open file description.
  const off_t r = ::lseek(fd_, static_cast<off_t>(offset), whence);
  if (r < 0) return detail::sys_error(errno);
  return static_cast<std::uint64_t>(r);
}

Result<void> File::truncate(std::uint64_t size) {
  if (fd_ < 0) return errc::closed;
  auto r =
      blocking_syscall("fs::ftruncate", [&] { return ::ftruncate(fd_, static_cast<off_t>(size)); });
  if (!r.ok()) return r.error_code();
  return {};
}

Result<void> File::fsync() {
  if (fd_ < 0) return errc::closed;
  auto r = blocking_syscall("fs::fsync", [&] { return ::fsync(fd_); });
  if (!r.ok()) return r.error_code();
  return {};
}

Result<void> File::fdatasync() {
  if (fd_ < 0) return errc::closed;
  auto r = blocking_syscall("fs::fdatasync", [&] { return ::fdatasync(fd_); });
  if (!r.ok()) return r.error_code();
  return {};
}

Result<FileInfo> File::stat() {
  if (fd_ < 0) return errc::closed;
  struct stat st;
  auto r = blocking_syscall("fs::fstat", [&] { return ::fstat(fd_, &st); });
  if (!r.ok()) return r.error_code();
  return detail::file_info_from_stat(st);
}

Result<void> File::close() {
  if (fd_ < 0) return errc::closed;
  const int fd = fd_;
  fd_ = -1;
  // Not retried on EINTR: Linux has released the descriptor whatever close
  // reports, and a retry could close a descriptor another thread just got.
  detail::SysResult r{0, 0};
  {
    goro::detail::SyscallScope scope("fs::close");
    r.value = ::close(fd);
    if (r.value < 0) r.error = errno;
  }
  if (!r.ok() && r.error != EINTR) return r.error_code();
  return {};
}

}  // namespace goro::fs
