// The HTTP date a response's Date header carries: RFC 9110 §5.6.7
// IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT" — always UTC, always 29 bytes,
// English names regardless of locale (Go's TimeFormat). Parsing also takes
// the two obsolete forms RFC 9110 says a recipient must accept (Go's
// http.ParseTime does the same).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
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

// Parses an HTTP date in any of RFC 9110's three forms:
//   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
//   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT" (two-digit years: 70-99 are
//                19xx, 00-69 20xx, as Go's time package reads them)
//   asctime      "Sun Nov  6 08:49:37 1994"
// The weekday is checked for shape, not against the date (RFC 9110 lets a
// recipient ignore it). nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> parse_http_date(
    std::string_view text) noexcept;

}  // namespace goro::http::detail
