// listen() and Listener::accept, with the descriptor-exhaustion back-off.
//
// ## Accept under EMFILE / ENFILE
// When the process (or system) is out of descriptors the pending connection
// stays in the backlog, so the listening socket stays readable and a naive
// loop would spin on accept4 at 100% CPU. accept() instead sleeps 5 ms,
// doubling up to 1 s (Go's net/http Server.Serve), retrying until a
// descriptor frees up; one line goes to stderr when an episode starts and one
// when it ends, not one per retry. ENOBUFS and ENOMEM are treated the same
// way (transient kernel memory pressure). close() during a back-off is seen
// at the next retry, at most 1 s later.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/core.h>
#include <algorithm>
#include <chrono>

#include "framework/net/netfd.hpp"
#include "framework/net/resolve.hpp"
#include "goro/runtime.hpp"

namespace goro::net {

namespace {

constexpr auto kFirstBackoff = std::chrono::milliseconds(5);
constexpr auto kMaxBackoff = std::chrono::seconds(1);
// listen(2) clamps to net.core.somaxconn; ask for the most.
constexpr int kDefaultBacklog = 65535;

std::error_code sys_error(int e) {
  return {e, std::system_category()};
}

bool is_resource_exhaustion(const std::error_code& ec) {
  if (ec.category() != std::system_category()) return false;
  const int e = ec.value();
  return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Result<int> bound_socket(Network net, const Addr& addr, const ListenOptions& opts) {
  const int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error(errno);
  int one = 1;
  if (addr.family() != AF_UNIX) {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (opts.reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
      const int e = errno;
      ::close(fd);
      return sys_error(e);
    }
  }
  if (addr.family() == AF_INET6) {
    int v6only = net == Network::kTcp6 ? 1 : 0;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  const int backlog = opts.backlog > 0 ? opts.backlog : kDefaultBacklog;
  if (::bind(fd, addr.sockaddr_ptr(), addr.size()) != 0 || ::listen(fd, backlog) != 0) {
    const int e = errno;
    ::close(fd);
    return sys_error(e);
  }
  return fd;
}

}  // namespace

Result<Listener> listen(std::string_view network, std::string_view address, ListenOptions opts) {
  auto net = parse_network(network);
  if (!net) return net.error();
  std::vector<Addr> addrs;
  if (*net == Network::kUnix) {
    auto a = unix_addr(address);
    if (!a) return a.error();
    addrs.push_back(*a);
  } else {
    std::string host, port;
    if (auto r = split_host_port(address, host, port); !r) return r.error();
    auto resolved = resolve(*net, host, port, /*passive=*/true);
    if (!resolved) return resolved.error();
    addrs = std::move(*resolved);
  }
  std::error_code first_error;
  for (const Addr& a : addrs) {
    auto fd = bound_socket(*net, a, opts);
    if (!fd) {
      if (!first_error) first_error = fd.error();
      continue;
    }
    auto nfd = NetFd::open(*fd);
    if (!nfd) return nfd.error();
    return Listener(std::move(*nfd), *net != Network::kUnix,
                    *net == Network::kUnix ? std::string(address) : std::string());
  }
  return first_error;
}

Listener::Listener() = default;
Listener::Listener(std::unique_ptr<NetFd> fd, bool tcp, std::string unlink_path)
    : fd_(std::move(fd)), tcp_(tcp), unlink_path_(std::move(unlink_path)) {}
Listener::Listener(Listener&&) noexcept = default;
Listener& Listener::operator=(Listener&&) noexcept = default;
Listener::~Listener() {
  (void)close();
}

Result<Conn> Listener::accept() {
  if (!fd_) return errc::closed;
  std::chrono::milliseconds backoff{0};
  for (;;) {
    Addr peer;
    auto c = fd_->accept(&peer);
    if (!c) {
      if (!is_resource_exhaustion(c.error())) return c.error();
      if (backoff.count() == 0) {
        fmt::print(stderr, "goro/net: accept on {}: {}; backing off (up to 1s between retries)\n",
                   addr().to_string(), c.error().message());
        backoff = kFirstBackoff;
      } else {
        backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
      }
      goro::sleep_for(backoff);
      continue;
    }
    if (backoff.count() != 0) {
      fmt::print(stderr, "goro/net: accept on {}: recovered\n", addr().to_string());
      backoff = std::chrono::milliseconds{0};
    }
    if (tcp_) set_nodelay(*c);
    auto nfd = NetFd::open(*c);
    if (!nfd) continue;  // could not register (closed by open); the peer sees a reset
    (*nfd)->set_peer(peer);
    return Conn(std::move(*nfd));
  }
}

Result<void> Listener::close() {
  if (!fd_) return errc::closed;
  auto r = fd_->close();
  if (r && !unlink_path_.empty()) ::unlink(unlink_path_.c_str());
  return r;
}

Addr Listener::addr() const {
  if (!fd_) return {};
  sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getsockname(fd_->sysfd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  return Addr(reinterpret_cast<sockaddr*>(&ss), len);
}

int Listener::native_handle() const {
  return fd_ ? fd_->sysfd() : -1;
}

}  // namespace goro::net
