// sendfile(2) from a File to a net::Conn: the socket side parks on the
// netpoller (NetFd::write_op), the file side is handed off; see fs.hpp.
#include <sys/sendfile.h>

#include <algorithm>
#include <cerrno>

#include "framework/fs/syscall.hpp"
#include "framework/net/netfd.hpp"
#include "goro/fs.hpp"
#include "goro/net.hpp"

namespace goro::fs {

namespace {

// Linux moves at most this much per sendfile call.
constexpr std::size_t kMaxChunk = 0x7ffff000;

struct SendfileCall {
  int file_fd;
  off_t offset;  // advanced by the kernel
  std::size_t count;
};

// One sendfile(2): a NetFd::WriteOp. The socket is non-blocking, so the call
// returns EAGAIN rather than wait for buffer space (write_op then parks); but
// reading the file may wait for the disk, hence the handoff. errno is read
// inside the scope (see syscall.hpp) and set again for write_op.
long sendfile_once(int sock_fd, void* arg) {
  auto* c = static_cast<SendfileCall*>(arg);
  long r;
  int err = 0;
  {
    goro::detail::SyscallScope scope("fs::sendfile");
    r = static_cast<long>(::sendfile(sock_fd, c->file_fd, &c->offset, c->count));
    if (r < 0) err = errno;
  }
  if (r < 0) errno = err;
  return r;
}

}  // namespace

Result<std::size_t> sendfile(net::Conn& conn, File& file, std::uint64_t offset, std::size_t count) {
  net::NetFd* sock = goro::detail::NetConnAccess::netfd(conn);
  if (sock == nullptr || !file.is_open()) return errc::closed;
  SendfileCall call{file.native_handle(), static_cast<off_t>(offset), 0};
  std::size_t done = 0;
  while (done < count) {
    call.count = std::min(count - done, kMaxChunk);
    auto n = sock->write_op(&sendfile_once, &call);
    if (!n) return n.error();
    if (*n == 0) return errc::eof;  // the file ended before offset + count
    done += *n;
  }
  return count;
}

}  // namespace goro::fs
