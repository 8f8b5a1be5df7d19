// Conn: the public face of a connected NetFd.
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "framework/net/netfd.hpp"
#include "goro/detail/park.hpp"

namespace goro::net {

namespace {

constexpr int kRead = 1;
constexpr int kWrite = 2;

std::int64_t from_now(std::chrono::nanoseconds d) {
  const std::int64_t now = detail::nanotime();
  if (d.count() <= 0) return now > 1 ? now - 1 : 1;
  const std::int64_t when = now + d.count();
  return when > now ? when : INT64_MAX;
}

}  // namespace

Conn::Conn() = default;
Conn::Conn(std::unique_ptr<NetFd> fd) : fd_(std::move(fd)) {}
Conn::Conn(Conn&&) noexcept = default;
Conn& Conn::operator=(Conn&&) noexcept = default;
Conn::~Conn() = default;

Result<std::size_t> Conn::read(std::span<std::byte> buf) {
  if (!fd_) return errc::closed;
  return fd_->read(buf.data(), buf.size());
}

Result<std::size_t> Conn::read(std::span<char> buf) {
  return read(std::as_writable_bytes(buf));
}

Result<void> Conn::read_full(std::span<std::byte> buf) {
  std::size_t done = 0;
  while (done < buf.size()) {
    auto n = read(buf.subspan(done));
    if (!n) return n.error();
    if (*n == 0) return errc::eof;
    done += *n;
  }
  return {};
}

Result<void> Conn::read_full(std::span<char> buf) {
  return read_full(std::as_writable_bytes(buf));
}

Result<std::size_t> Conn::write(std::span<const std::byte> buf) {
  if (!fd_) return errc::closed;
  return fd_->write_all(buf.data(), buf.size());
}

Result<std::size_t> Conn::write(std::string_view s) {
  return write(std::as_bytes(std::span<const char>(s.data(), s.size())));
}

Result<std::size_t> Conn::writev(std::span<const iovec> bufs) {
  if (!fd_) return errc::closed;
  return fd_->writev_all(bufs.data(), bufs.size());
}

Result<void> Conn::close() {
  if (!fd_) return errc::closed;
  return fd_->close();
}

Result<void> Conn::close_write() {
  if (!fd_) return errc::closed;
  return fd_->shutdown(SHUT_WR);
}

Result<void> Conn::set_deadline(Clock::time_point t) {
  if (!fd_) return errc::closed;
  return fd_->set_deadline(NetFd::deadline_at(t), kRead | kWrite);
}
Result<void> Conn::set_read_deadline(Clock::time_point t) {
  if (!fd_) return errc::closed;
  return fd_->set_deadline(NetFd::deadline_at(t), kRead);
}
Result<void> Conn::set_write_deadline(Clock::time_point t) {
  if (!fd_) return errc::closed;
  return fd_->set_deadline(NetFd::deadline_at(t), kWrite);
}
Result<void> Conn::set_deadline(std::chrono::nanoseconds d) {
  if (!fd_) return errc::closed;
  return fd_->set_deadline(from_now(d), kRead | kWrite);
}
Result<void> Conn::set_read_deadline(std::chrono::nanoseconds d) {
  if (!fd_) return errc::closed;
  return fd_->set_deadline(from_now(d), kRead);
}
Result<void> Conn::set_write_deadline(std::chrono::nanoseconds d) {
  if (!fd_) return errc::closed;
  return fd_->set_deadline(from_now(d), kWrite);
}

Addr Conn::local_addr() const {
  if (!fd_) return {};
  sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getsockname(fd_->sysfd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  return Addr(reinterpret_cast<sockaddr*>(&ss), len);
}

Addr Conn::remote_addr() const {
  if (!fd_) return {};
  if (!fd_->peer().empty()) return fd_->peer();  // accept's or dial's: no syscall
  sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getpeername(fd_->sysfd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  return Addr(reinterpret_cast<sockaddr*>(&ss), len);
}

int Conn::native_handle() const {
  return fd_ ? fd_->sysfd() : -1;
}

}  // namespace goro::net
