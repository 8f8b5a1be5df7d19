// The value syntaxes of goro::config: durations, sizes, addresses, booleans.
//
// Durations follow Go's time.ParseDuration (the syntax operators already
// type into Go services): a sequence of decimal numbers, each with an optional
// fraction and a unit (ns, us, µs, ms, s, m, h). Sizes are hand-parsed rather
// than through CLI11's AsSizeValue, whose "KB" means 1000 or 1024 depending on
// a flag: here KB/MB/GB/TB are SI (powers of 1000) and KiB/MiB/GiB/TiB are
// IEC (powers of 1024), always.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "goro/config.hpp"

namespace goro::config {
namespace {

using i128 = __int128;
constexpr i128 kMaxNanos = std::numeric_limits<std::int64_t>::max();

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<std::int64_t> duration_unit_nanos(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xc2\xb5s" || unit == "\xce\xbcs") return 1000;  // µ, μ
  if (unit == "ms") return 1000 * 1000;
  if (unit == "s") return 1000 * 1000 * 1000;
  if (unit == "m") return 60LL * 1000 * 1000 * 1000;
  if (unit == "h") return 3600LL * 1000 * 1000 * 1000;
  return std::nullopt;
}

}  // namespace

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view s) {
  if (s == "0") return std::chrono::nanoseconds(0);
  if (s.empty()) return std::nullopt;
  i128 total = 0;
  while (!s.empty()) {
    // The number: digits, optionally '.' and more digits; at least one digit.
    i128 whole = 0;
    std::size_t i = 0;
    for (; i < s.size() && is_digit(s[i]); ++i) {
      whole = whole * 10 + (s[i] - '0');
      if (whole > kMaxNanos) return std::nullopt;
    }
    bool has_whole = i > 0;
    i128 frac = 0, scale = 1;
    if (i < s.size() && s[i] == '.') {
      ++i;
      std::size_t start = i;
      for (; i < s.size() && is_digit(s[i]); ++i) {
        // Digits past nanosecond-of-an-hour precision cannot matter.
        if (scale < i128(1000000000000000000LL)) {
          frac = frac * 10 + (s[i] - '0');
          scale *= 10;
        }
      }
      if (i == start && !has_whole) return std::nullopt;
    } else if (!has_whole) {
      return std::nullopt;
    }
    // The unit: everything up to the next digit or '.'.
    std::size_t u = i;
    while (u < s.size() && !is_digit(s[u]) && s[u] != '.')
      ++u;
    auto unit = duration_unit_nanos(s.substr(i, u - i));
    if (!unit) return std::nullopt;
    total += whole * *unit + frac * *unit / scale;
    if (total > kMaxNanos) return std::nullopt;
    s.remove_prefix(u);
  }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(total));
}

std::string format_duration(std::chrono::nanoseconds d) {
  std::int64_t ns = d.count();
  if (ns == 0) return "0s";
  struct Unit {
    std::int64_t nanos;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{3600LL * 1000000000, "h"},
                                    {60LL * 1000000000, "m"},
                                    {1000000000, "s"},
                                    {1000000, "ms"},
                                    {1000, "us"},
                                    {1, "ns"}};
  for (const Unit& u : kUnits) {
    if (ns % u.nanos == 0) return fmt::format("{}{}", ns / u.nanos, u.name);
  }
  return fmt::format("{}ns", ns);  // unreachable: every count divides by 1
}

std::optional<Size> parse_size(std::string_view s) {
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc{} || end == s.data()) return std::nullopt;
  std::string_view unit = s.substr(static_cast<std::size_t>(end - s.data()));
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  struct Unit {
    const char* name;
    std::uint64_t factor;
  };
  static constexpr Unit kUnits[] = {
      {"", 1},
      {"b", 1},
      {"kb", 1000ULL},
      {"mb", 1000ULL * 1000},
      {"gb", 1000ULL * 1000 * 1000},
      {"tb", 1000ULL * 1000 * 1000 * 1000},
      {"kib", 1ULL << 10},
      {"mib", 1ULL << 20},
      {"gib", 1ULL << 30},
      {"tib", 1ULL << 40},
  };
  std::string want = lower(unit);
  for (const Unit& u : kUnits) {
    if (want != u.name) continue;
    if (n > std::numeric_limits<std::uint64_t>::max() / u.factor) return std::nullopt;
    return Size{n * u.factor};
  }
  return std::nullopt;
}

std::string format_size(Size s) {
  static constexpr std::pair<std::uint64_t, const char*> kUnits[] = {
      {1ULL << 40, "TiB"}, {1000ULL * 1000 * 1000 * 1000, "TB"},
      {1ULL << 30, "GiB"}, {1000ULL * 1000 * 1000, "GB"},
      {1ULL << 20, "MiB"}, {1000ULL * 1000, "MB"},
      {1ULL << 10, "KiB"}, {1000ULL, "KB"}};
  if (s.bytes == 0) return "0";
  for (auto [factor, name] : kUnits) {
    if (s.bytes % factor == 0) return fmt::format("{}{}", s.bytes / factor, name);
  }
  return fmt::format("{}", s.bytes);
}

std::optional<Address> parse_address(std::string_view s) {
  auto parse_port = [](std::string_view p) -> std::optional<std::uint16_t> {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (p.empty() || ec != std::errc{} || end != p.data() + p.size() || v > 65535) {
      return std::nullopt;
    }
    return static_cast<std::uint16_t>(v);
  };
  if (!s.empty() && std::all_of(s.begin(), s.end(), is_digit)) {
    auto port = parse_port(s);
    if (!port) return std::nullopt;
    return Address{"", *port};
  }
  std::string_view host;
  std::string_view rest;
  if (!s.empty() && s.front() == '[') {
    std::size_t close = s.find(']');
    if (close == std::string_view::npos || close == 1) return std::nullopt;
    host = s.substr(1, close - 1);
    rest = s.substr(close + 1);
    if (rest.empty() || rest.front() != ':') return std::nullopt;
    rest.remove_prefix(1);
  } else {
    std::size_t colon = s.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    host = s.substr(0, colon);
    rest = s.substr(colon + 1);
    // An unbracketed IPv6 literal ("::1:80") is ambiguous: refuse it.
    if (host.find(':') != std::string_view::npos) return std::nullopt;
  }
  if (std::any_of(host.begin(), host.end(), [](char c) { return c == ' ' || c == '/'; })) {
    return std::nullopt;
  }
  auto port = parse_port(rest);
  if (!port) return std::nullopt;
  return Address{std::string(host), *port};
}

std::string Address::str() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::optional<bool> parse_bool(std::string_view s) {
  std::string v = lower(s);
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  return std::nullopt;
}

std::string_view to_string(Source s) {
  switch (s) {
    case Source::kDefault:
      return "default";
    case Source::kFile:
      return "file";
    case Source::kEnv:
      return "env";
    case Source::kFlag:
      return "flag";
  }
  return "?";
}

}  // namespace goro::config
