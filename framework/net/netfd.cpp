// NetFd: see netfd.hpp for the design.
#include "framework/net/netfd.hpp"

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <thread>
#include <utility>
#include <vector>

#include "goro/detail/check.hpp"
#include "goro/detail/fault.hpp"
#include "goro/detail/park.hpp"
#include "goro/runtime.hpp"
#include "netpoll/netpoll.hpp"

namespace goro::net {
namespace {

// The socket calls on the data path go through syscall(2) rather than
// glibc's read/send wrappers: those are pthread cancellation points and
// bracket every call with enable/disable of asynchronous cancellation
// (~1.3% of an echo server's CPU in perf). goro never cancels threads.
// Reads are recvfrom(2), not read(2): every NetFd is a socket (listener.cpp,
// dial.cpp), and the socket call skips the VFS layer read(2) goes through
// (vfs_read, sock_read_iter), as the writes skip it with sendto(2). nginx
// reads with recv(2) too.
ssize_t sys_read(int fd, void* buf, std::size_t n) {
  return ::syscall(SYS_recvfrom, fd, buf, n, 0, nullptr, nullptr);
}
ssize_t sys_send(int fd, const void* buf, std::size_t n) {
  return ::syscall(SYS_sendto, fd, buf, n, MSG_NOSIGNAL, nullptr, 0);
}
ssize_t sys_sendmsg(int fd, const msghdr* msg) {
  return ::syscall(SYS_sendmsg, fd, msg, MSG_NOSIGNAL);
}

}  // namespace

using detail::PollMode;

namespace {

std::error_code sys_error(int e) {
  return {e, std::system_category()};
}

}  // namespace

Result<std::unique_ptr<NetFd>> NetFd::open(int fd) {
  std::error_code ec;
  detail::PollDesc* pd = detail::poll_open(fd, ec);
  if (pd == nullptr) {
    ::close(fd);
    return ec;
  }
  return std::unique_ptr<NetFd>(new NetFd(fd, pd));
}

NetFd::~NetFd() {
  (void)close();
  // Until the last reference is gone and destroy() has run (see "Lifetime"):
  // at once unless another goroutine's close() or operation is still inside.
  // Off a goroutine (a Conn destroyed after goro::run returned, say, while
  // a goroutine abandoned at its end still holds a reference) the wait is
  // bounded: nothing will ever run that goroutine again.
  const bool on_goroutine = detail::current_g() != nullptr;
  for (int spins = 0; !(state_.load(std::memory_order_acquire) & kDestroyed); ++spins) {
    if (!on_goroutine && spins == 100000) break;
    goro::yield();              // in a goroutine: let the others on this P run
    std::this_thread::yield();  // and the closer's thread get the core
  }
}

bool NetFd::acquire() {
  // relaxed: the reference only keeps the fd number alive; the closed check
  // is advisory (an operation racing with close() is woken by the eviction).
  // Never touch the count once closed: after close() dropped the last
  // reference and destroy() recycled the poll descriptor, an increment and
  // release() here would see (kClosed | kOneRef) and destroy it a second time
  // (the descriptor then sits twice in the free cache and two fds share it:
  // "netpoll: double wait").
  std::uint64_t s = state_.load(std::memory_order_relaxed);
  do {
    if (s & kClosed) return false;
  } while (!state_.compare_exchange_weak(s, s + kOneRef, std::memory_order_relaxed));
  return true;
}

void NetFd::release() {
  std::uint64_t s = state_.fetch_sub(kOneRef, std::memory_order_acq_rel);
  if (s == (kClosed | kOneRef)) destroy();
}

void NetFd::destroy() {
  detail::poll_close(pd_);
  ::close(fd_);
  // The last touch of *this: the destructor may free it from here on.
  state_.store(kClosed | kDestroyed, std::memory_order_release);
}

void NetFd::hand_to_poller(detail::G* g, void* pd) {
  if (detail::take_fault(detail::FaultSite::kParkWindow)) {
    std::this_thread::sleep_for(std::chrono::microseconds(errno));  // a test's pause
  }
  if (detail::take_fault(detail::FaultSite::kStaleEdge)) {
    detail::poll_note_edge(static_cast<detail::PollDesc*>(pd), PollMode::kRead);
  }
  detail::poll_wait_spawned(static_cast<detail::PollDesc*>(pd), PollMode::kRead, g);
}

void NetFd::set_read_warm(const void* warm) noexcept {
  detail::poll_set_read_warm(static_cast<detail::PollDesc*>(pd_), this, warm);
}

Result<void> NetFd::close() {
  std::uint64_t s = state_.fetch_or(kClosed, std::memory_order_acq_rel);
  if (s & kClosed) return errc::closed;
  detail::poll_evict(pd_);
  if (detail::take_fault(detail::FaultSite::kCloseWindow)) {
    std::this_thread::sleep_for(std::chrono::microseconds(errno));  // a test's pause
  }
  release();  // the owner's reference
  return {};
}

Result<std::size_t> NetFd::read(void* buf, std::size_t n) {
  return read_impl(buf, n, true, false);
}

Result<std::size_t> NetFd::read_if_ready(void* buf, std::size_t n) {
  return read_impl(buf, n, false, false);
}

void NetFd::check_held([[maybe_unused]] const Ref& held) const {
  GORO_CHECK(held.ok() && held.f_ == this, "net: a held operation without its own Ref on the fd");
}

Result<std::size_t> NetFd::read(void* buf, std::size_t n, const Ref& held) {
  check_held(held);
  return read_impl(buf, n, true, true);
}

Result<std::size_t> NetFd::read_if_ready(void* buf, std::size_t n, const Ref& held) {
  check_held(held);
  return read_impl(buf, n, false, true);
}

Result<std::size_t> NetFd::write_all(const void* buf, std::size_t n, const Ref& held) {
  check_held(held);
  return write_all_impl(buf, n, true);
}

void NetFd::await_readable(const Ref& held) {
  check_held(held);
  await_readable_impl(true);
}

Result<std::size_t> NetFd::read_impl(void* buf, std::size_t n, bool may_park, bool held) {
  const Ref ref = held ? Ref(Ref::Borrowed{}) : Ref(this);
  if (!ref.ok()) return errc::closed;
  if (n == 0) return std::size_t{0};
  // After await_readable's successful wait this read is the one that
  // follows a wait: straight to the syscall, as below (the edge is
  // consumed; a deadline passing in between must not strand the bytes).
  bool waited = std::exchange(read_waited_, false);
  // Deadlines and close win over available data, as in Go.
  if (!waited) {
    if (auto st = detail::poll_check(pd_, PollMode::kRead)) return st.code();
  }
  for (;;) {
    if (waited) {
      waited = false;
    } else if (read_drained_ && may_park) {
      if (auto st = detail::poll_wait(pd_, PollMode::kRead)) return st.code();
      read_drained_ = false;
    } else {
      detail::poll_prepare(pd_, PollMode::kRead);
    }
    const ssize_t r = sys_read(fd_, buf, n);
    if (r >= 0) {
      // A short read drained the receive queue (see "The read fast path"),
      // unless the peer has shut down: then the next read returns 0 at once.
      if (r > 0 && static_cast<std::size_t>(r) < n && !detail::poll_hangup_seen(pd_)) {
        read_drained_ = true;
      }
      return static_cast<std::size_t>(r);
    }
    if (errno == EAGAIN) {
      read_drained_ = true;
      if (!may_park) return std::make_error_code(std::errc::resource_unavailable_try_again);
    } else if (errno != EINTR) {
      return sys_error(errno);
    }
  }
}

void NetFd::await_readable() {
  await_readable_impl(false);
}

void NetFd::await_readable_impl(bool held) {
  const Ref ref = held ? Ref(Ref::Borrowed{}) : Ref(this);
  if (!ref.ok() || !read_drained_) return;
  if (detail::poll_check(pd_, PollMode::kRead)) return;
  if (!detail::poll_wait(pd_, PollMode::kRead)) {
    read_drained_ = false;
    read_waited_ = true;
  }
}

Result<std::size_t> NetFd::write_all(const void* buf, std::size_t n) {
  return write_all_impl(buf, n, false);
}

Result<std::size_t> NetFd::write_all_impl(const void* buf, std::size_t n, bool held) {
  const Ref ref = held ? Ref(Ref::Borrowed{}) : Ref(this);
  if (!ref.ok()) return errc::closed;
  if (auto st = detail::poll_check(pd_, PollMode::kWrite)) return st.code();
  const auto* p = static_cast<const std::byte*>(buf);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = sys_send(fd_, p + done, n - done);
    if (w >= 0) {
      done += static_cast<std::size_t>(w);
    } else if (errno == EAGAIN) {
      if (auto st = detail::poll_wait(pd_, PollMode::kWrite)) return st.code();
    } else if (errno != EINTR) {
      return sys_error(errno);
    }
  }
  return n;
}

Result<std::size_t> NetFd::writev_all(const iovec* iov, std::size_t count) {
  Ref ref(this);
  if (!ref.ok()) return errc::closed;
  if (auto st = detail::poll_check(pd_, PollMode::kWrite)) return st.code();
  std::vector<iovec> v(iov, iov + count);  // advanced in place on partial writes
  std::size_t total = 0;
  std::size_t first = 0;
  for (const iovec& b : v)
    total += b.iov_len;
  while (first < v.size()) {
    if (v[first].iov_len == 0) {
      ++first;
      continue;
    }
    msghdr msg{};
    msg.msg_iov = &v[first];
    msg.msg_iovlen = std::min<std::size_t>(v.size() - first, IOV_MAX);
    const ssize_t w = sys_sendmsg(fd_, &msg);
    if (w < 0) {
      if (errno == EAGAIN) {
        if (auto st = detail::poll_wait(pd_, PollMode::kWrite)) return st.code();
      } else if (errno != EINTR) {
        return sys_error(errno);
      }
      continue;
    }
    auto left = static_cast<std::size_t>(w);
    while (left > 0) {
      const std::size_t take = std::min(left, v[first].iov_len);
      v[first].iov_base = static_cast<char*>(v[first].iov_base) + take;
      v[first].iov_len -= take;
      left -= take;
      if (v[first].iov_len == 0) ++first;
    }
  }
  return total;
}

Result<std::size_t> NetFd::write_op(WriteOp op, void* arg) {
  Ref ref(this);
  if (!ref.ok()) return errc::closed;
  if (auto st = detail::poll_check(pd_, PollMode::kWrite)) return st.code();
  for (;;) {
    const long w = op(fd_, arg);
    if (w >= 0) return static_cast<std::size_t>(w);
    if (errno == EAGAIN) {
      if (auto st = detail::poll_wait(pd_, PollMode::kWrite)) return st.code();
    } else if (errno != EINTR) {
      return sys_error(errno);
    }
  }
}

Result<int> NetFd::accept(Addr* peer) {
  Ref ref(this);
  if (!ref.ok()) return errc::closed;
  if (auto st = detail::poll_check(pd_, PollMode::kRead)) return st.code();
  for (;;) {
    if (accept_drained_) {
      if (auto st = detail::poll_wait(pd_, PollMode::kRead)) return st.code();
      accept_drained_ = false;
    } else {
      detail::poll_prepare(pd_, PollMode::kRead);
    }
    sockaddr_storage ss;
    socklen_t len = sizeof ss;
    const int c =
        goro::detail::take_fault(goro::detail::FaultSite::kAccept)
            ? -1
            : ::accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c >= 0) {
      if (peer != nullptr) *peer = Addr(reinterpret_cast<sockaddr*>(&ss), len);
      return c;
    }
    if (errno == EAGAIN) {
      accept_drained_ = true;
    } else if (errno != EINTR && errno != ECONNABORTED) {
      return sys_error(errno);
    }
  }
}

Result<void> NetFd::connect(const sockaddr* sa, socklen_t len, std::int64_t deadline) {
  Ref ref(this);
  if (!ref.ok()) return errc::closed;
  detail::poll_prepare(pd_, PollMode::kWrite);  // registration reported "writable"
  if (::connect(fd_, sa, len) == 0) return {};
  if (errno != EINPROGRESS && errno != EINTR && errno != EALREADY) return sys_error(errno);
  if (deadline != 0) detail::poll_set_deadline(pd_, deadline, PollMode::kWrite);
  std::error_code result;
  for (;;) {
    if (auto st = detail::poll_wait(pd_, PollMode::kWrite)) {
      result = st.error_code();
      break;
    }
    int err = 0;
    socklen_t errlen = sizeof err;
    if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &errlen) != 0) err = errno;
    if (err == EINPROGRESS || err == EALREADY || err == EINTR) continue;
    if (err == 0 || err == EISCONN) {
      // The poller may wake us spuriously (Go #14548): connected only if
      // the socket has a peer.
      sockaddr_storage peer;
      socklen_t plen = sizeof peer;
      if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&peer), &plen) == 0) break;
      continue;
    }
    result = sys_error(err);
    break;
  }
  if (deadline != 0) detail::poll_set_deadline(pd_, 0, PollMode::kWrite);
  return result;
}

Result<void> NetFd::shutdown(int how) {
  Ref ref(this);
  if (!ref.ok()) return errc::closed;
  if (::shutdown(fd_, how) != 0) return sys_error(errno);
  return {};
}

std::error_code NetFd::check(int mode) {
  return detail::poll_check(pd_, static_cast<PollMode>(mode)).error_code();
}

std::error_code NetFd::wait(int mode) {
  return detail::poll_wait(pd_, static_cast<PollMode>(mode)).error_code();
}

void NetFd::prepare_read() {
  detail::poll_prepare(pd_, PollMode::kRead);
}

bool NetFd::hangup_seen() {
  return detail::poll_hangup_seen(pd_);
}

Result<void> NetFd::set_deadline(std::int64_t when, int mode) {
  // The deadline it has already (a keep-alive connection's next request on
  // the HTTP server's grid): nothing to do, so no reference either
  // (netpoll's "Setting a deadline again"). After close() the slow path
  // reports errc::closed as before.
  if ((state_.load(std::memory_order_relaxed) & kClosed) == 0 &&
      detail::poll_deadline_unchanged(pd_, when, static_cast<PollMode>(mode)))
    return {};
  return set_deadline_slow(when, mode);
}

Result<void> NetFd::set_deadline(std::int64_t when, int mode, const Ref& held) {
  check_held(held);
  // After close() errc::closed, as set_deadline's Ref would fail; `held`
  // keeps the poll descriptor this NetFd's until it goes.
  if ((state_.load(std::memory_order_relaxed) & kClosed) != 0) return errc::closed;
  if (!detail::poll_deadline_unchanged(pd_, when, static_cast<PollMode>(mode)))
    detail::poll_set_deadline(pd_, when, static_cast<PollMode>(mode));
  return {};
}

Result<void> NetFd::set_deadline_slow(std::int64_t when, int mode) {
  Ref ref(this);
  if (!ref.ok()) return errc::closed;
  detail::poll_set_deadline(pd_, when, static_cast<PollMode>(mode));
  return {};
}

}  // namespace goro::net
