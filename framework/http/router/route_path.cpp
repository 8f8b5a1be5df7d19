// Path cleaning, unescaping and host stripping for the router; the contract
// is in route_path.hpp. Each function mirrors the Go function named in its
// comment so the router's redirects and matches agree with ServeMux.
#include "framework/http/router/route_path.hpp"

#include <cstring>

namespace goro::http::detail {

namespace {

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool is_clean_path(std::string_view path) noexcept {
  if (path.empty() || path[0] != '/') return false;
  std::size_t start = 1;  // first byte of the current segment
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    const bool last = end == std::string_view::npos;
    if (last) end = path.size();
    const std::string_view seg = path.substr(start, end - start);
    // An empty final segment is a trailing slash, which cleaning keeps.
    if (seg.empty() && !last) return false;
    if (seg == "." || seg == "..") return false;
    if (last) break;
    start = end + 1;
  }
  return true;
}

// path.Clean for a rooted path, plus cleanPath's trailing-slash rule. The
// output is built in place of a copy: `out` only ever shrinks relative to the
// bytes read, so one reservation suffices.
std::string clean_path(std::string_view path) {
  if (path.empty()) return "/";
  std::string out;
  out.reserve(path.size() + 2);
  out.push_back('/');
  const std::size_t n = path.size();
  std::size_t r = path[0] == '/' ? 1 : 0;
  while (r < n) {
    if (path[r] == '/') {
      ++r;  // empty segment
    } else if (path[r] == '.' && (r + 1 == n || path[r + 1] == '/')) {
      ++r;  // "." segment
    } else if (path[r] == '.' && path[r + 1] == '.' && (r + 2 == n || path[r + 2] == '/')) {
      r += 2;  // ".." removes the previous segment; at the root it is dropped
      if (out.size() > 1) {
        std::size_t w = out.size() - 1;
        while (w > 1 && out[w] != '/')
          --w;
        out.resize(w);
      }
    } else {
      if (out.size() > 1) out.push_back('/');
      while (r < n && path[r] != '/')
        out.push_back(path[r++]);
    }
  }
  if (path.back() == '/' && out.size() > 1) out.push_back('/');
  return out;
}

std::size_t path_unescape(std::string_view in, char* out) noexcept {
  std::size_t w = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out[w++] = in[i];
      continue;
    }
    if (i + 2 >= in.size()) return kInvalidEscape;
    const int hi = hex_value(in[i + 1]);
    const int lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return kInvalidEscape;
    out[w++] = static_cast<char>(hi << 4 | lo);
    i += 2;
  }
  return w;
}

// net.SplitHostPort's acceptance rules, returning the host on success.
std::string_view strip_host_port(std::string_view host) noexcept {
  const std::size_t colon = host.rfind(':');
  if (colon == std::string_view::npos) return host;
  if (host[0] == '[') {
    const std::size_t close = host.find(']');
    // The ']' must sit right before the port's ':', and no further brackets.
    if (close == std::string_view::npos || close + 1 != colon) return host;
    if (host.find('[', 1) != std::string_view::npos) return host;
    if (host.find(']', close + 1) != std::string_view::npos) return host;
    return host.substr(1, close - 1);
  }
  const std::string_view name = host.substr(0, colon);
  if (name.find(':') != std::string_view::npos) return host;  // bare IPv6: too many colons
  if (name.find_first_of("[]") != std::string_view::npos) return host;
  return name;
}

bool is_http_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char c : s) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (alnum) continue;
    if (c == '\0' || std::strchr("!#$%&'*+-.^_`|~", c) == nullptr) return false;
  }
  return true;
}

}  // namespace goro::http::detail
