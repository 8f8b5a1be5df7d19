// <goro/net.hpp>: TCP and Unix-domain sockets in blocking style (docs/DESIGN.md "Network I/O").
//
// Example (an echo server):
//   auto ln = goro::net::listen("tcp", "127.0.0.1:0");
//   if (!ln) return 1;                     // ln.error(): address_in_use ...
//   for (;;) {
//     auto c = ln->accept();
//     if (!c) break;                       // errc::closed after ln->close()
//     goro::go([conn = std::move(*c)]() mutable {
//       char buf[4096];
//       while (auto n = conn.read(std::span<char>(buf))) {
//         if (*n == 0 || !conn.write(std::string_view(buf, *n))) break;
//       }
//     });
//   }
//
// Every call that would block parks the calling goroutine on the runtime's
// netpoller, never the thread; calls must come from goroutines of the
// goro::run that created the socket.
//
// Errors are values (goro::Result, <goro/result.hpp>): the syscall's errno
// (std::errc::connection_reset when the peer resets, std::errc::broken_pipe
// when writing after the peer closed), goro::errc::timeout when a deadline
// passes, goro::errc::closed after close().
//
// End of stream: read() returns 0 bytes, as POSIX read(2) (a zero-length
// buffer also returns 0 at once). read_full() returns goro::errc::eof if the
// stream ends before the buffer is full.
//
// Concurrency: one goroutine may read while another writes, and any goroutine
// may close() or set deadlines; two goroutines reading (or two writing) the
// same Conn at once is a programming error that aborts ("netpoll: double
// wait"). A Conn must outlive the goroutines using it; destroying it closes it.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "goro/result.hpp"

namespace goro::detail {
struct NetConnAccess;  // framework/net/netfd.hpp: goro's own layers reach a Conn's NetFd
}

namespace goro::net {

class NetFd;  // framework/net/netfd.hpp

// A socket address (IPv4, IPv6 or Unix path). Empty when default-constructed.
class Addr {
 public:
  Addr() = default;
  Addr(const sockaddr* sa, socklen_t len);
  bool empty() const { return len_ == 0; }
  int family() const { return ss_.ss_family; }
  // "127.0.0.1:8080", "[::1]:8080", or the Unix path.
  std::string to_string() const;
  // The port of an IP address; 0 for Unix addresses.
  int port() const;
  const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&ss_); }
  socklen_t size() const { return len_; }

 private:
  sockaddr_storage ss_{};
  socklen_t len_ = 0;
};

using Clock = std::chrono::steady_clock;

// A stream connection.
class Conn {
 public:
  Conn();
  explicit Conn(std::unique_ptr<NetFd> fd);
  Conn(Conn&&) noexcept;
  Conn& operator=(Conn&&) noexcept;
  ~Conn();  // closes

  bool valid() const { return fd_ != nullptr; }

  // Reads up to buf.size() bytes; waits until at least one is available.
  // 0 means end of stream.
  Result<std::size_t> read(std::span<std::byte> buf);
  Result<std::size_t> read(std::span<char> buf);
  // Reads exactly buf.size() bytes, or fails (errc::eof if the stream ended).
  Result<void> read_full(std::span<std::byte> buf);
  Result<void> read_full(std::span<char> buf);
  // Writes all of buf (waiting for buffer space as needed) and returns its
  // size, or fails; on failure an unknown prefix may have been sent.
  Result<std::size_t> write(std::span<const std::byte> buf);
  Result<std::size_t> write(std::string_view s);
  // Gathering write of every buffer, same contract as write().
  Result<std::size_t> writev(std::span<const iovec> bufs);

  // Closes the connection; wakes goroutines blocked in it with errc::closed.
  // A second close returns errc::closed.
  Result<void> close();
  // Half-close: shuts down the sending side (the peer reads end of stream).
  Result<void> close_write();

  // Deadlines, as Go's SetDeadline: an absolute time after which blocked and
  // future calls fail with errc::timeout (until the deadline is moved). A time
  // in the past expires at once; Clock::time_point{} clears. The duration
  // forms are relative to now. Moving a deadline affects a blocked call.
  Result<void> set_deadline(Clock::time_point t);
  Result<void> set_read_deadline(Clock::time_point t);
  Result<void> set_write_deadline(Clock::time_point t);
  Result<void> set_deadline(std::chrono::nanoseconds from_now);
  Result<void> set_read_deadline(std::chrono::nanoseconds from_now);
  Result<void> set_write_deadline(std::chrono::nanoseconds from_now);

  Addr local_addr() const;
  Addr remote_addr() const;
  // The OS descriptor, for setsockopt; do not read, write or close it.
  int native_handle() const;

 private:
  friend struct goro::detail::NetConnAccess;
  std::unique_ptr<NetFd> fd_;
};

struct ListenOptions {
  int backlog = 0;          // 0: the kernel's maximum (net.core.somaxconn)
  bool reuse_port = false;  // SO_REUSEPORT: several listeners share the port
};

class Listener {
 public:
  Listener();
  Listener(std::unique_ptr<NetFd> fd, bool tcp, std::string unlink_path);
  Listener(Listener&&) noexcept;
  Listener& operator=(Listener&&) noexcept;
  ~Listener();  // closes

  // Waits for the next connection. Accepted TCP connections have
  // TCP_NODELAY set. When the process runs out of descriptors (EMFILE,
  // ENFILE) accept backs off (5 ms doubling to 1 s, as Go's http server),
  // logs once per episode on stderr, and keeps trying: it returns only a
  // connection, errc::closed, or an unexpected error.
  Result<Conn> accept();
  // Stops listening and wakes a blocked accept with errc::closed. A Unix
  // socket file created by listen() is removed. Callable from any thread.
  Result<void> close();
  Addr addr() const;
  int native_handle() const;

 private:
  std::unique_ptr<NetFd> fd_;
  bool tcp_ = false;
  std::string unlink_path_;
};

// network: "tcp" (IPv4 and IPv6), "tcp4", "tcp6" or "unix".
// address: "host:port", "[v6addr]:port", ":port" (every interface) or, for
// "unix", a path. Port 0 picks a free port (see Listener::addr()). Host names
// are resolved (see dial).
Result<Listener> listen(std::string_view network, std::string_view address,
                        ListenOptions opts = {});

// Connects to `address` ("host:port"; "unix": a path). Host names are
// resolved with getaddrinfo; when they yield both IPv6 and IPv4 addresses the
// first family is tried first and the other starts 300 ms later if no
// connection was made yet (RFC 8305 "happy eyeballs", simplified as Go's
// dialParallel); within a family the addresses are tried in order, each with a
// share of the remaining time. timeout 0: no limit beyond the kernel's.
Result<Conn> dial(std::string_view network, std::string_view address,
                  std::chrono::nanoseconds timeout = std::chrono::nanoseconds{0});

}  // namespace goro::net
