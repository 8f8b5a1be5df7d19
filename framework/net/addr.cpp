// Addr, network names and host:port parsing.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <fmt/core.h>
#include <cstring>

#include "framework/net/resolve.hpp"

namespace goro::net {

Addr::Addr(const sockaddr* sa, socklen_t len) {
  len_ = std::min<socklen_t>(len, sizeof ss_);
  std::memcpy(&ss_, sa, len_);
}

std::string Addr::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  switch (ss_.ss_family) {
    case AF_INET: {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&ss_);
      inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
      return fmt::format("{}:{}", buf, ntohs(in->sin_port));
    }
    case AF_INET6: {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss_);
      inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
      return fmt::format("[{}]:{}", buf, ntohs(in6->sin6_port));
    }
    case AF_UNIX: {
      const auto* un = reinterpret_cast<const sockaddr_un*>(&ss_);
      const std::size_t max =
          len_ > offsetof(sockaddr_un, sun_path) ? len_ - offsetof(sockaddr_un, sun_path) : 0;
      return std::string(un->sun_path, strnlen(un->sun_path, max));
    }
    default:
      return {};
  }
}

int Addr::port() const {
  if (ss_.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss_)->sin_port);
  if (ss_.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss_)->sin6_port);
  }
  return 0;
}

Result<Network> parse_network(std::string_view network) {
  if (network == "tcp") return Network::kTcp;
  if (network == "tcp4") return Network::kTcp4;
  if (network == "tcp6") return Network::kTcp6;
  if (network == "unix") return Network::kUnix;
  return std::make_error_code(std::errc::address_family_not_supported);
}

Result<void> split_host_port(std::string_view address, std::string& host, std::string& port) {
  const auto bad = std::make_error_code(std::errc::invalid_argument);
  if (!address.empty() && address.front() == '[') {
    const auto close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() ||
        address[close + 1] != ':') {
      return bad;
    }
    host.assign(address.data() + 1, close - 1);
    port.assign(address.data() + close + 2, address.size() - close - 2);
  } else {
    const auto colon = address.rfind(':');
    if (colon == std::string_view::npos) return bad;
    host.assign(address.data(), colon);
    if (host.find(':') != std::string::npos) return bad;  // IPv6 needs brackets
    port.assign(address.data() + colon + 1, address.size() - colon - 1);
  }
  if (port.empty()) return bad;
  return {};
}

Result<Addr> unix_addr(std::string_view path) {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof un.sun_path) return errc::no_address;
  std::memcpy(un.sun_path, path.data(), path.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return Addr(reinterpret_cast<const sockaddr*>(&un), len);
}

}  // namespace goro::net
