// Name resolution. getaddrinfo blocks its thread (files, DNS): it runs
// inside goro::blocking, so if it lasts, sysmon hands this M's P to another
// thread and other goroutines keep running (the syscall handoff, as Go's
// cgo resolver). It replaced a pool of dedicated resolver threads that
// predated the handoff.
//
// Numeric hosts and ports (the common case for servers) are parsed inline.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "framework/net/resolve.hpp"
#include "goro/runtime.hpp"

namespace goro::net {
namespace {

struct Lookup {
  int rc = 0;
  int sys_errno = 0;  // errno when rc == EAI_SYSTEM
  std::vector<Addr> out;
};

Lookup run_lookup(const std::string& host, const std::string& port, int family, bool passive) {
  Lookup r;
  addrinfo hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : AI_ADDRCONFIG;
  addrinfo* res = nullptr;
  r.rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
  if (r.rc != 0) {
    r.sys_errno = errno;
    return r;
  }
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6) {
      r.out.emplace_back(ai->ai_addr, ai->ai_addrlen);
    }
  }
  freeaddrinfo(res);
  return r;
}

int family_of(Network net) {
  if (net == Network::kTcp4) return AF_INET;
  if (net == Network::kTcp6) return AF_INET6;
  return AF_UNSPEC;
}

bool parse_port(const std::string& port, std::uint16_t* out) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (ec != std::errc{} || end != port.data() + port.size() || v > 65535) return false;
  *out = static_cast<std::uint16_t>(v);
  return true;
}

Addr make_v4(const in_addr& a, std::uint16_t port) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr = a;
  in.sin_port = htons(port);
  return Addr(reinterpret_cast<const sockaddr*>(&in), sizeof in);
}

Addr make_v6(const in6_addr& a, std::uint16_t port) {
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_addr = a;
  in6.sin6_port = htons(port);
  return Addr(reinterpret_cast<const sockaddr*>(&in6), sizeof in6);
}

// Numeric and empty hosts; false when a lookup is needed.
bool resolve_inline(Network net, const std::string& host, std::uint16_t port, bool passive,
                    std::vector<Addr>& out) {
  const int family = family_of(net);
  if (host.empty()) {
    if (passive) {
      if (family == AF_INET) {
        out.push_back(make_v4(in_addr{htonl(INADDR_ANY)}, port));
      } else {
        out.push_back(make_v6(in6addr_any, port));  // dual-stack for "tcp"
        if (family == AF_UNSPEC) out.push_back(make_v4(in_addr{htonl(INADDR_ANY)}, port));
      }
    } else {
      if (family != AF_INET6) out.push_back(make_v4(in_addr{htonl(INADDR_LOOPBACK)}, port));
      if (family != AF_INET) out.push_back(make_v6(in6addr_loopback, port));
    }
    return true;
  }
  in_addr a4;
  in6_addr a6;
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) {
    if (family != AF_INET6) out.push_back(make_v4(a4, port));
    return true;
  }
  if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) {
    if (family != AF_INET) out.push_back(make_v6(a6, port));
    return true;
  }
  return false;
}

}  // namespace

Result<std::vector<Addr>> resolve(Network net, const std::string& host, const std::string& port,
                                  bool passive) {
  std::vector<Addr> out;
  std::uint16_t numeric_port;
  if (parse_port(port, &numeric_port) && resolve_inline(net, host, numeric_port, passive, out)) {
    if (out.empty()) return errc::no_address;
    return out;
  }
  const int family = family_of(net);
  Lookup r = goro::blocking([&] { return run_lookup(host, port, family, passive); });
  if (r.rc != 0) {
    if (r.rc == EAI_SYSTEM) return std::error_code(r.sys_errno, std::system_category());
    return errc::no_address;
  }
  if (r.out.empty()) return errc::no_address;
  return std::move(r.out);
}

}  // namespace goro::net
