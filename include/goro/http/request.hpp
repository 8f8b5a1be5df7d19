// goro::http::Request: one HTTP request as a handler sees it.
//
// A Request is valid only for the duration of the handler call it was passed
// to; every string_view it returns views the connection's buffers and dies
// with it (copy what you keep). It is owned by the connection goroutine and
// must not be used from another goroutine. Both rules are checked: a Request
// (or its body()) used after its handler returned, or from any goroutine but
// the handler's, reads as empty ("" for every string, 0, no headers) and its
// body reads fail with http::errc::handler_returned; it never reads the next
// request's state or freed memory (the object a leaked reference points to
// is never freed, and is checked before anything behind it is touched).
//
// Body: body().read(buf) returns de-chunked body bytes, 0 at the end of the
// body, or an error:
//   - http::errc::body_too_large: the body passed ServerOptions::max_body_bytes
//     (a declared Content-Length over the limit never reaches a handler: the
//     server answers 413 itself). If the handler then writes nothing, the
//     server answers 413 for it; either way the connection closes.
//   - http::errc::bad_request: the chunked framing was malformed (400 likewise).
//   - goro::errc::timeout and socket errors from the connection.
// "Expect: 100-continue" is answered by the first body read, never before
// (Go's rule): a handler that rejects a request without reading its body
// costs the client no upload.
//
// Context: context() is cancelled when the client closes or resets its
// connection while the handler runs, or when the server's graceful-shutdown
// deadline passes, and in any case once the handler has returned. The close
// is watched for from the first context() call, once the request body has
// been read to its end (at once for a request without a body), as Go's
// background read: a handler that never asks for its context pays nothing.
// Bytes of a pipelined next request do not cancel it (they are kept for that
// request); a client that half-closes (shuts down its sending side) counts as
// gone, as in Go.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "goro/context.hpp"
#include "goro/result.hpp"
#include "goro/tls.hpp"

namespace goro::http {

// Conditions of the HTTP layer (category "goro.http").
enum class errc {
  body_too_large = 1,  // the request body passed the server's limit (413)
  bad_request,         // malformed body framing (400)
  content_length,      // the handler wrote more than its declared Content-Length
  header_written,      // the response header was already sent
  invalid_json,        // read_json: the body is not JSON (400)
  aborted,             // ResponseWriter::abort() cut the response short
  handler_returned,    // used after its handler returned, or off its goroutine
};
const std::error_category& http_category() noexcept;
inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), http_category()};
}

}  // namespace goro::http

template <>
struct std::is_error_code_enum<goro::http::errc> : std::true_type {};

namespace goro::http {

namespace detail {
struct Exchange;
struct ExchangeAccess;
struct HandlerSlot;
}  // namespace detail
struct MatchResult;  // the router's (opaque here)

// The request body as a reader.
class BodyReader {
 public:
  // Up to buf.size() body bytes; 0 at the end of the body.
  Result<std::size_t> read(std::span<char> buf);
  Result<std::size_t> read(std::span<std::byte> buf);
  // The whole (rest of the) body; bounded by the server's body limit.
  Result<std::string> read_all();
  // Declared Content-Length, if the request has one (nullopt when chunked).
  std::optional<std::uint64_t> content_length() const;

 private:
  friend struct detail::ExchangeAccess;
  friend struct detail::HandlerSlot;
  friend class Request;
  explicit BodyReader(detail::Exchange* x) : x_(x) {}
  // x_ when the caller is the goroutine running this request's handler
  // (owner_), else null; x_ as is when owner_ is null (the server's own use).
  detail::Exchange* live() const noexcept;
  detail::Exchange* x_;
  const std::atomic<const void*>* owner_ = nullptr;
};

class Request {
 public:
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  std::string_view method() const;     // "GET"
  std::string_view target() const;     // the request target as sent: "/a%20b?x=1"
  std::string_view path() const;       // the escaped path, no query: "/a%20b"
  std::string_view raw_query() const;  // "x=1" (no '?'); "" if none
  // The first value of query parameter `name`, decoded ('+' is a space);
  // "" when absent. query_values gives them all, has_query tells absent.
  std::string query(std::string_view name) const;
  std::vector<std::string> query_values(std::string_view name) const;
  bool has_query(std::string_view name) const;
  std::string_view host() const;  // the Host header (or absolute-form authority)
  int proto_major() const;
  int proto_minor() const;
  std::string_view proto() const;  // "HTTP/1.1"

  // Headers: names case-insensitive; repeated lines are separate values.
  std::string_view header(std::string_view name) const;  // first value or ""
  bool has_header(std::string_view name) const;
  std::vector<std::string_view> header_values(std::string_view name) const;
  std::size_t header_count() const;  // lines
  std::pair<std::string_view, std::string_view> header_at(std::size_t i) const;

  // The wildcard `name` of the route pattern that matched ("" if none).
  // Under nested Routers (a Router registered as another's handler) the
  // innermost match is seen while its handler runs; the outer Router's
  // values and pattern are back once the inner Router returns.
  std::string_view path_value(std::string_view name) const;
  // The pattern that matched, as registered ("" before routing).
  std::string_view pattern() const;

  BodyReader& body();
  std::string remote_addr() const;  // "127.0.0.1:53412"
  // The connection's TLS state (Go's Request.TLS): version, cipher, ALPN,
  // SNI, resumption, the client's certificate; null for plain HTTP.
  const tls::ConnectionState* tls() const;
  const Context& context();
  // Moves the deadline for reading this request's body (Go's
  // ResponseController.SetReadDeadline): by default the head's first byte +
  // ServerOptions::read_timeout. A handler that accepts a large upload moves
  // it later (or clears it with a default-constructed time_point); a body
  // read still fails after read_header_timeout without a byte arriving.
  void set_read_deadline(std::chrono::steady_clock::time_point t);

  // A request id, set by middleware::request_id ("" otherwise).
  std::string_view id() const;
  void set_id(std::string id);

 private:
  friend struct detail::ExchangeAccess;
  friend struct detail::HandlerSlot;
  explicit Request(detail::Exchange* x) : x_(x), body_(x) {}
  detail::Exchange* live() const noexcept;  // as BodyReader::live
  detail::Exchange* x_;
  const std::atomic<const void*>* owner_ = nullptr;
  BodyReader body_;
  // The innermost Router's match while its handler runs; the outermost
  // Router's stays set after it returns (for middleware around it).
  const MatchResult* route_ = nullptr;
};

}  // namespace goro::http
