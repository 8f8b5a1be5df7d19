// tls::dial: net::dial, then a client handshake under the same timeout.
#include "framework/net/resolve.hpp"
#include "framework/tls/tls_impl.hpp"

namespace goro::tls {

Result<Conn> dial(std::string_view network, std::string_view address,
                  std::shared_ptr<const Context> ctx, std::chrono::nanoseconds timeout) {
  std::string host, port;
  if (network != "unix") {
    if (auto r = net::split_host_port(address, host, port); !r) return r.error();
  }
  const auto deadline = net::Clock::now() + timeout;
  Result<net::Conn> raw = net::dial(network, address, timeout);
  if (!raw) return raw.error();
  Conn c = Conn::client(std::move(*raw), std::move(ctx), host);
  if (timeout.count() > 0) (void)c.set_deadline(deadline);
  if (auto r = c.handshake(); !r) return r.error();
  if (timeout.count() > 0) (void)c.set_deadline(net::Clock::time_point{});
  return c;
}

}  // namespace goro::tls
