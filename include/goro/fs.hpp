// <goro/fs.hpp>: file I/O that never stalls a P (docs/DESIGN.md "Files").
//
// Example:
//   auto f = goro::fs::File::open("/var/www/index.html");
//   if (!f) return 1;                               // f.error(): no_such_file_or_directory ...
//   auto info = f->stat();
//   if (!info) return 1;
//   auto ln = goro::net::listen("tcp", "127.0.0.1:0");
//   if (!ln) return 1;
//   auto conn = ln->accept();
//   if (!conn) return 1;
//   (void)goro::fs::sendfile(*conn, *f, 0, info->size);  // a static file server's core
//
//   auto cfg = goro::fs::read_file("app.toml", 1 << 20);          // at most 1 MiB
//   if (cfg) (void)goro::fs::write_file("app.toml.bak", *cfg, 0644);  // atomic replace
//
// ## Why files do not go through the netpoller
// epoll answers "would this fd block?", and for a regular file or a block
// device the kernel's answer is always "no": they are reported ready for
// reading and writing at all times (epoll_ctl even refuses to register them,
// EPERM), yet a read of a page that is not in the page cache sleeps in the
// kernel until the disk delivers it, and fsync sleeps until the device has
// acknowledged the writes. O_NONBLOCK is ignored for them. There is no
// readiness to wait for, so the only way to keep a P's other goroutines
// running is to let the *thread* block and move the P elsewhere: the syscall
// handoff (<goro/detail/syscall.hpp>;
// docs/DESIGN.md "Syscall handoff and goro::blocking"). (io_uring would make file
// reads truly asynchronous; it is not used because it is disabled in many
// container runtimes' seccomp profiles and adds a second completion path.)
//
// ## Which calls hand off the P
// Every goro::fs call that enters the kernel on a file or a path runs that
// syscall inside a SyscallScope ("fs::read", "fs::fsync" ... in sysmon's
// reports): open, read, pread, write, pwrite, fsync, fdatasync, fstat/stat/
// lstat, ftruncate, close, rename, unlink/rmdir, mkdir, the directory reads
// of list_dir, and the file side of sendfile. lseek (File::seek) does not: it
// only moves an offset in memory. EINTR is retried for every call except
// close (Linux releases the descriptor even when close reports EINTR).
// Errors are values (goro::Result), each the failing syscall's errno in
// std::system_category(), except where a function documents otherwise.
//
// ## What a handoff costs
// Entering and leaving the syscall state costs a few stores and one CAS: a
// read served from the page cache (a microsecond or two) pays nothing more,
// and its P is never taken. Only a call that is still inside the kernel when
// sysmon next looks (20 µs to 10 ms later, depending on how idle sysmon is)
// and while other goroutines are waiting has its P handed to another thread:
// a futex wake, or a thread creation if none is idle (each blocked call holds
// a thread, up to Options::max_threads). When the call returns, the thread
// takes back its P if it is still free; otherwise it takes an idle P, or
// queues the goroutine on the global run queue and parks, which costs the
// goroutine a trip through the scheduler. So many small reads are cheap, and
// slow ones (cold disk, NFS, a FIFO with no writer, fsync) cost a thread but
// never the P.
//
// ## Use from outside a goroutine
// The functions work from plain threads and before goro::run as well: there
// is no P to hand off, so they are ordinary blocking calls.
//
// ## Concurrency
// A File is move-only and owns its descriptor. Several goroutines may use one
// File at once for pread/pwrite/stat (the kernel orders them); read, write
// and seek share the file offset as in POSIX. Closing a File (or destroying
// it) while another goroutine is inside a call on it is a programming error.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "goro/result.hpp"

namespace goro::net {
class Conn;
}

namespace goro::fs {

using Path = std::filesystem::path;

enum class FileType : std::uint8_t {
  kUnknown,
  kRegular,
  kDirectory,
  kSymlink,
  kFifo,
  kSocket,
  kBlockDevice,
  kCharDevice,
};
// "regular", "directory", ...
const char* file_type_string(FileType t) noexcept;

// What stat(2) reports, in C++ types.
struct FileInfo {
  std::uint64_t size = 0;
  std::chrono::system_clock::time_point mtime;  // nanosecond resolution where the fs has it
  mode_t mode = 0;                              // st_mode: type bits and permissions
  FileType type = FileType::kUnknown;
  std::uint64_t inode = 0;
  std::uint64_t device = 0;
  std::uint64_t nlink = 0;

  bool is_dir() const { return type == FileType::kDirectory; }
  bool is_regular() const { return type == FileType::kRegular; }
  bool is_symlink() const { return type == FileType::kSymlink; }
  // Permission bits (including setuid, setgid, sticky).
  mode_t perm() const { return mode & 07777; }
};

// An open file. Move-only; the destructor closes it (ignoring close's error:
// call close() to see it, which matters after writes on network filesystems).
class File {
 public:
  File() = default;
  // Adopts an open descriptor (which the File will close).
  explicit File(int fd) : fd_(fd) {}
  File(File&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  // open(2) with O_CLOEXEC always added; flags as open(2) (O_RDONLY,
  // O_WRONLY | O_CREAT | O_TRUNC, ...); mode applies when a file is created
  // (and is masked by the umask). Opening a FIFO blocks, handed off, until
  // the other end is opened.
  static Result<File> open(const Path& path, int flags = O_RDONLY, mode_t mode = 0666);
  // Go's os.Create: O_RDWR | O_CREAT | O_TRUNC.
  static Result<File> create(const Path& path, mode_t mode = 0666);
  // Opens `path` relative to the directory `dir` without ever leaving it (Go
  // 1.24's os.Root): an absolute path, a ".." that climbs above `dir`, or a
  // symlink at any step whose target lies outside `dir` fails with
  // std::errc::cross_device_link (EXDEV); symlinks that stay inside are
  // followed. /proc "magic links" are refused (ELOOP). `dir` may be opened
  // with O_PATH. Uses openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
  // (Linux 5.6+), where the kernel checks every step atomically. Where
  // openat2 is missing (ENOSYS, or EPERM from a seccomp filter) it falls back
  // to realpath(3) of `dir`'s own path (from /proc/self/fd) joined with
  // `path`, a prefix check, and an open with O_NOFOLLOW: the same refusals,
  // but a directory renamed or swapped for a symlink between the check and
  // the open can defeat it (a race an attacker needs write access inside
  // `dir` to run).
  static Result<File> open_beneath(const File& dir, const Path& path, int flags = O_RDONLY,
                                   mode_t mode = 0666);

  bool is_open() const { return fd_ >= 0; }
  // The descriptor; owned by the File.
  int native_handle() const { return fd_; }

  // One read(2) at the file offset: up to buf.size() bytes; 0 at end of file
  // (or for an empty buf).
  Result<std::size_t> read(std::span<std::byte> buf);
  Result<std::size_t> read(std::span<char> buf);
  // One pread(2) at `offset`; the file offset is unchanged.
  Result<std::size_t> pread(std::span<std::byte> buf, std::uint64_t offset);
  Result<std::size_t> pread(std::span<char> buf, std::uint64_t offset);
  // Reads exactly buf.size() bytes from `offset`, or fails; goro::errc::eof
  // if the file ends first.
  Result<void> pread_full(std::span<std::byte> buf, std::uint64_t offset);

  // Writes all of buf at the file offset (looping over short writes) and
  // returns buf.size(), or fails; on failure an unknown prefix was written.
  Result<std::size_t> write(std::span<const std::byte> buf);
  Result<std::size_t> write(std::string_view s);
  // Writes all of buf at `offset` (the file offset is unchanged), same
  // contract as write(). Note: with O_APPEND, Linux appends pwrite's data.
  Result<std::size_t> pwrite(std::span<const std::byte> buf, std::uint64_t offset);
  Result<std::size_t> pwrite(std::string_view s, std::uint64_t offset);

  // lseek(2); returns the new offset. Not handed off (no I/O).
  Result<std::uint64_t> seek(std::int64_t offset, int whence = SEEK_SET);
  Result<void> truncate(std::uint64_t size);
  Result<void> fsync();
  Result<void> fdatasync();
  Result<FileInfo> stat();

  // Closes the descriptor. A second close (or close of a default File)
  // returns goro::errc::closed.
  Result<void> close();

 private:
  int fd_ = -1;
};

// Reads a whole file. Fails with std::errc::file_too_large (EFBIG) as soon as
// the file turns out to hold more than max_size bytes (it is never read
// past max_size + 1 bytes, so a huge or endless file like /dev/zero costs at
// most that). Works for files whose size stat does not know (/proc, pipes).
inline constexpr std::size_t kDefaultMaxReadSize = std::size_t{64} << 20;  // 64 MiB
Result<std::string> read_file(const Path& path, std::size_t max_size = kDefaultMaxReadSize);
// read_file of `path` resolved beneath the directory `dir` with the rules of
// File::open_beneath: an absolute path, a ".." above `dir` or a symlink that
// leaves it fails with std::errc::cross_device_link. For serving or loading
// files named by a request:
//   auto root = goro::fs::File::open("/srv/templates", O_RDONLY | O_DIRECTORY);
//   if (!root) return;
//   auto page = goro::fs::read_file_beneath(*root, "pages/index.html", 1 << 20);
Result<std::string> read_file_beneath(const File& dir, const Path& path,
                                      std::size_t max_size = kDefaultMaxReadSize);

// Replaces `path` atomically with `data`: a reader opening `path` sees either
// the old content or all of the new, never a mix or a prefix, and after a
// crash the file is one or the other. Protocol: write a temporary file
// ".<name>.tmp-<random>" in the same directory (rename is only atomic within a
// filesystem), fsync it, rename it over `path`, fsync the directory (so the
// rename itself is durable). The new file gets `mode` (not masked by the
// umask: the caller asked for it); an existing file's owner, permissions and
// hard links are not preserved (it is a new inode). On any failure before
// the rename the temporary file is removed and `path` is untouched; if only
// the final directory fsync fails, the new content is in place (but the
// rename may not survive a crash) and that error is returned.
Result<void> write_file(const Path& path, std::string_view data, mode_t mode = 0644);

struct DirEntry {
  std::string name;  // the entry's name within the directory (no "." or "..")
  FileType type = FileType::kUnknown;
};
// The entries of a directory, sorted by name (as Go's os.ReadDir). Types come
// from getdents(2) and are completed with an lstat where the filesystem does
// not report them (a symlink is reported as kSymlink, not followed). An entry
// that vanishes between the two is left out.
Result<std::vector<DirEntry>> list_dir(const Path& path);

Result<FileInfo> stat(const Path& path);   // follows symlinks
Result<FileInfo> lstat(const Path& path);  // does not
// Removes a file or an empty directory (Go's os.Remove).
Result<void> remove(const Path& path);
// rename(2): atomically replaces `to` if it exists (within one filesystem).
Result<void> rename(const Path& from, const Path& to);
// mkdir(2); std::errc::file_exists if it exists.
Result<void> mkdir(const Path& path, mode_t mode = 0777);

// Sends `count` bytes of `file` starting at `offset` to `conn` with
// sendfile(2): the data goes from the page cache to the socket without a
// copy through user space. The file side of each call is handed off (a page
// cache miss reads the disk); when the socket buffer is full the goroutine
// parks on the netpoller for writability, like Conn::write, and the
// connection's write deadline applies. The file offset is not used or moved.
// Returns count, or fails: goro::errc::eof if the file ends before
// offset + count (it shrank), the socket's errors as Conn::write. On failure
// an unknown prefix was sent. count 0 sends nothing and succeeds.
Result<std::size_t> sendfile(net::Conn& conn, File& file, std::uint64_t offset, std::size_t count);

}  // namespace goro::fs
