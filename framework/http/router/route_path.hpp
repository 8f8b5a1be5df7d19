// Request-path and host helpers for the router: the lexical rules Go's
// ServeMux applies before it looks a request up (path cleaning, per-segment
// unescaping, stripping the port from Host). Internal to goro::http; the
// router's tests reach them through this header.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace goro::http::detail {

// Reports whether `path` is already what clean_path would return: it starts
// with '/', has no empty segment ("//") and no "." or ".." segment. This is
// the per-request fast path; it never allocates.
bool is_clean_path(std::string_view path) noexcept;

// Go's cleanPath: a leading '/' is added if missing, then path.Clean's
// lexical rules (collapse "//", drop ".", resolve ".." without climbing above
// the root), and a trailing '/' that the input had is kept. "" becomes "/".
std::string clean_path(std::string_view path);

// Percent-decodes `in` into `out` as url.PathUnescape does ('+' stays '+').
// `out` must have room for in.size() bytes; decoded text is never longer.
// Returns the decoded length, or kInvalidEscape if `in` holds a '%' not
// followed by two hex digits: callers then use `in` verbatim, as Go does.
inline constexpr std::size_t kInvalidEscape = static_cast<std::size_t>(-1);
std::size_t path_unescape(std::string_view in, char* out) noexcept;

// Go's stripHostPort: "example.com:8080" -> "example.com", "[::1]:80" ->
// "::1"; anything that is not a valid host:port is returned unchanged.
std::string_view strip_host_port(std::string_view host) noexcept;

// RFC 9110 token (the grammar of a method name).
bool is_http_token(std::string_view s) noexcept;

}  // namespace goro::http::detail
