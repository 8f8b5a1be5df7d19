// parse_byte_range: the grammar of RFC 9110 §14.1.1 for one range-spec, with
// optional whitespace around it.
#include "framework/http/handlers/byte_range.hpp"

#include "framework/http/parser/header_list.hpp"

namespace goro::http::detail {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// 1 to 19 digits (fits in int64, so no overflow check beyond the width).
bool parse_digits(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return true;
}

}  // namespace

ByteRange parse_byte_range(std::string_view header, std::uint64_t size) noexcept {
  using Kind = ByteRange::Kind;
  header = trim(header);
  constexpr std::string_view kUnit = "bytes=";
  if (header.size() < kUnit.size() || !equal_fold(header.substr(0, kUnit.size()), kUnit)) return {};
  std::string_view spec = trim(header.substr(kUnit.size()));
  if (spec.find(',') != std::string_view::npos) return {};  // several ranges: the whole
  const std::size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return {};
  const std::string_view first_text = trim(spec.substr(0, dash));
  const std::string_view last_text = trim(spec.substr(dash + 1));

  std::uint64_t first = 0, last = 0;
  ByteRange r;
  if (first_text.empty()) {  // suffix: the last N bytes
    std::uint64_t n = 0;
    if (!parse_digits(last_text, n)) return {};
    if (size == 0) return {};
    if (n == 0) return {Kind::kUnsatisfiable, 0, 0};
    if (n > size) n = size;
    r = {Kind::kPartial, size - n, n};
  } else {
    if (!parse_digits(first_text, first)) return {};
    if (last_text.empty()) {
      last = UINT64_MAX;
    } else if (!parse_digits(last_text, last) || last < first) {
      return {};  // "5-3" is not a valid range-spec: ignore the header
    }
    if (size == 0) return {};
    if (first >= size) return {Kind::kUnsatisfiable, 0, 0};
    if (last >= size) last = size - 1;
    r = {Kind::kPartial, first, last - first + 1};
  }
  return r;
}

}  // namespace goro::http::detail
