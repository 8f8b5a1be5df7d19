#include "framework/http/parser/request_line.hpp"

#include "framework/http/parser/byte_class.hpp"

#include <array>

#include "framework/http/parser/header_list.hpp"

namespace goro::http::detail {

namespace {

constexpr ParseError kMalformedLine{400, "malformed HTTP request"};
constexpr ParseError kMalformedVersion{400, "malformed HTTP version"};
constexpr ParseError kUnsupportedVersion{505, "unsupported protocol version"};
constexpr ParseError kBadTarget{400, "invalid request target"};

constexpr bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}
constexpr bool is_alpha(char c) noexcept {
  return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

// "HTTP/" DIGIT "." DIGIT (RFC 9112 §2.3). Anything else is malformed.
std::optional<ParseError> parse_version(std::string_view v, RequestLine& out) {
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || !is_digit(v[5]) || v[6] != '.' ||
      !is_digit(v[7])) {
    return kMalformedVersion;
  }
  out.version_major = v[5] - '0';
  out.version_minor = v[7] - '0';
  if (out.version_major != 1 || out.version_minor > 1) return kUnsupportedVersion;
  return std::nullopt;
}

// authority-form: host ":" port with a non-empty host and a decimal port
// (RFC 9112 §3.2.3). An IPv6 literal keeps its brackets.
bool is_authority_form(std::string_view t) noexcept {
  std::size_t colon = t.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == t.size()) return false;
  std::string_view port = t.substr(colon + 1);
  if (port.size() > 5) return false;
  for (char c : port) {
    if (!is_digit(c)) return false;
  }
  std::string_view host = t.substr(0, colon);
  return host.find_first_of("/?#@") == std::string_view::npos && is_valid_host(host);
}

// absolute-form for the two schemes a server answers: "http://" or
// "https://" (any case), then a non-empty authority without userinfo
// (RFC 9110 §4.2.4 forbids it in http(s) URIs).
std::optional<std::string_view> absolute_form_authority(std::string_view t) noexcept {
  std::size_t sep = t.find("://");
  if (sep == std::string_view::npos) return std::nullopt;
  std::string_view scheme = t.substr(0, sep);
  if (!equal_fold(scheme, "http") && !equal_fold(scheme, "https")) return std::nullopt;
  std::string_view rest = t.substr(sep + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.empty() || authority.find('@') != std::string_view::npos ||
      !is_valid_host(authority)) {
    return std::nullopt;
  }
  return authority;
}

std::optional<ParseError> classify_target(RequestLine& out) {
  std::string_view t = out.target;
  const bool is_connect = out.method == "CONNECT";
  if (is_connect) {
    // Go also routes "CONNECT /path" (net/rpc's tunnel); RFC 9112 §3.2.3 allows
    // only authority-form, and a proxy-less server has no use for the rest.
    if (!is_authority_form(t)) return kBadTarget;
    out.form = TargetForm::kAuthority;
    out.authority = t;
    return std::nullopt;
  }
  if (t == "*") {
    if (out.method != "OPTIONS") return kBadTarget;
    out.form = TargetForm::kAsterisk;
    return std::nullopt;
  }
  if (t.front() == '/') {
    out.form = TargetForm::kOrigin;
    return std::nullopt;
  }
  if (is_alpha(t.front())) {
    if (auto authority = absolute_form_authority(t)) {
      out.form = TargetForm::kAbsolute;
      out.authority = *authority;
      return std::nullopt;
    }
  }
  return kBadTarget;
}

}  // namespace

std::optional<ParseError> parse_request_line(std::string_view line, RequestLine& out) {
  // Exactly two single spaces: Go's strings.Cut twice, then a version check
  // that fails on any leftover space.
  std::size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return kMalformedLine;
  std::size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return kMalformedLine;
  out.method = line.substr(0, sp1);
  out.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (out.method.empty() || out.target.empty()) return kMalformedLine;
  if (auto err = parse_version(line.substr(sp2 + 1), out)) return err;
  return classify_target(out);
}

bool is_valid_host(std::string_view host) noexcept {
  // Go's httpguts.ValidHostHeader byte set.
  static constexpr std::array<unsigned char, 256> kValid = [] {
    const std::array<bool, 256> valid = alnum_plus("!$%&'()*+,-.:;=[]_~");
    std::array<unsigned char, 256> bytes{};
    for (std::size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = valid[i] ? 1 : 0;
    return bytes;
  }();
  // Four bytes a step, without a branch per byte: a host is short and
  // nearly always valid, so there is nothing to stop early for (~110 of a
  // keep-alive request's instructions byte by byte, ~40 so).
  const auto* p = reinterpret_cast<const unsigned char*>(host.data());
  const unsigned char* const end = p + host.size();
  unsigned ok = 1;
  for (; end - p >= 4; p += 4)
    ok &= kValid[p[0]] & kValid[p[1]] & kValid[p[2]] & kValid[p[3]];
  switch (end - p) {  // the last 0-3 (a loop here, GCC vectorizes for 16 and more)
    case 3:
      ok &= kValid[p[2]];
      [[fallthrough]];
    case 2:
      ok &= kValid[p[1]];
      [[fallthrough]];
    case 1:
      ok &= kValid[p[0]];
      break;
    default:
      break;
  }
  return ok != 0;
}

}  // namespace goro::http::detail
