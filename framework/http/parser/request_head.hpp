// The vocabulary the request parser reports in: limits it enforces, the head of
// a request (request line, headers and the decisions derived from them), and
// the error a bad request ends in (the status code to answer with and why).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "framework/http/parser/header_list.hpp"

namespace goro::http::detail {

// Limits, with Go net/http's and nginx's defaults where they have one
// (docs/DESIGN.md "Deadlines and limits").
struct HttpLimits {
  // Request line bytes (method, target, version; CRLF excluded). Past it: 414.
  // nginx's default; RFC 9112 §3 asks for at least 8000 octets.
  std::size_t max_request_line = std::size_t{8} * 1024;
  // Head bytes: request line plus every header line, CRLFs included, and any
  // blank lines before the request. Past it: 431. Go's DefaultMaxHeaderBytes.
  // The same bound applies to a chunked body's trailer section.
  std::size_t max_header_bytes = 1 << 20;
  // Body bytes after de-chunking. A larger Content-Length is refused at the
  // head (413); a chunked body is refused when its running total would pass
  // the limit. Go has no default here; 10 MiB matches its ParseForm cap.
  std::uint64_t max_body_bytes = std::uint64_t{10} * 1024 * 1024;
  // Chunk-extension bytes on one chunk-size line. Extensions carry nothing goro
  // uses, so a long run of them is only load (Go 1.22 bounds them likewise).
  std::size_t max_chunk_extension_bytes = 4096;
};

// Why a request was refused: the status to answer with (then close) and a short
// reason, which Go appends to the status text for 400s ("400 Bad Request:
// missing required Host header"). `reason` is a static string.
struct ParseError {
  int status = 0;
  std::string_view reason;
};

// How the request body is delimited (RFC 9112 §6.3). A request with neither
// header has no body: requests are never read to EOF.
enum class BodyFraming : std::uint8_t { kNone, kContentLength, kChunked };

// What an Expect header asked for. kContinue is "100-continue" (any case);
// kOther is anything else, which the server answers 417.
enum class Expectation : std::uint8_t { kNone, kContinue, kOther };

// RFC 9112 §3.2: the four shapes of a request target.
enum class TargetForm : std::uint8_t {
  kOrigin,     // "/path?query"
  kAbsolute,   // "http://host/path" (proxies' form; a server must accept it)
  kAuthority,  // "host:port", CONNECT only
  kAsterisk,   // "*", OPTIONS only
};

// Every member of a request head but its header list: the parser clears
// them for each message in a few stores, while the list keeps its buffers
// (RequestHead{} assigned whole, with the list moved out and back, cost a
// keep-alive request about a hundred instructions more).
struct RequestHeadFacts {
  std::string_view method;  // "GET"; one of llhttp's known methods
  std::string_view target;  // as sent (not decoded)
  TargetForm target_form = TargetForm::kOrigin;
  int version_major = 1;
  int version_minor = 1;
  // The authority the request is for: the absolute-form or authority-form
  // target's authority, else the Host header (RFC 9112 §3.2.2, §7.2).
  std::string_view host;

  BodyFraming framing = BodyFraming::kNone;
  std::uint64_t content_length = 0;  // meaningful for kContentLength
  // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "Connection:
  // keep-alive". The response side may still decide to close.
  bool keep_alive = true;
  Expectation expect = Expectation::kNone;
  std::string_view expect_value;  // the raw Expect value, for logs and 417
  // "Connection: upgrade" plus an Upgrade header, or CONNECT. The parser keeps
  // reading HTTP after such a request unless the caller takes the connection.
  bool upgrade = false;
  std::string_view upgrade_protocol;  // the Upgrade header, if any

  bool is_http11() const noexcept { return version_major == 1 && version_minor == 1; }
  bool has_body() const noexcept {
    return framing == BodyFraming::kChunked ||
           (framing == BodyFraming::kContentLength && content_length > 0);
  }
  // Go's rule (net/http): answer "100 Continue" before the first body read only for
  // HTTP/1.1 requests that expect it and carry a body.
  bool should_send_continue() const noexcept {
    return expect == Expectation::kContinue && is_http11() && has_body();
  }
};

struct RequestHead : RequestHeadFacts {
  HeaderList headers;
};

}  // namespace goro::http::detail
