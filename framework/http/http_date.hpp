// The HTTP date a response's Date header carries: RFC 9110 §5.6.7
// IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT" — always UTC, always 29 bytes,
// English names regardless of locale (Go's TimeFormat).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <string_view>

namespace goro::http::detail {

inline constexpr std::size_t kHttpDateSize = 29;

struct HttpDate {
  std::array<char, kHttpDateSize> bytes;
  std::string_view view() const noexcept { return {bytes.data(), bytes.size()}; }
};

// Formats `t` truncated to the second. Years outside 0000-9999 are written
// modulo 10000 (a server clock there has bigger problems).
HttpDate format_http_date(std::chrono::system_clock::time_point t) noexcept;

}  // namespace goro::http::detail
