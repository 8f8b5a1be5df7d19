// Address parsing and name resolution for goro::net. Internal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "goro/net.hpp"
#include "goro/result.hpp"

namespace goro::net {

enum class Network { kTcp, kTcp4, kTcp6, kUnix };

Result<Network> parse_network(std::string_view network);

// Splits "host:port", "[v6]:port" or ":port".
Result<void> split_host_port(std::string_view address, std::string& host, std::string& port);

// Resolves host and port for `net` (kTcp: both families, in the resolver's
// order). An empty host means every interface when `passive` (listen), the
// loopback interface otherwise (dial), as Go. Numeric hosts and ports never
// leave the calling goroutine; names are looked up with getaddrinfo inside goro::blocking.
Result<std::vector<Addr>> resolve(Network net, const std::string& host, const std::string& port,
                                  bool passive);

// A Unix-domain address for `path` (errc::no_address if too long).
Result<Addr> unix_addr(std::string_view path);

}  // namespace goro::net
