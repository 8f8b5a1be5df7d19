// The request line, split and judged before llhttp sees it.
//
// llhttp 8.1 checks the method against its table, the target's bytes and the
// version digits, but it accepts shapes Go refuses or that RFC 9112 forbids:
// "GET  / HTTP/1.1" (two spaces), "GET /" (an HTTP/0.9 simple request, which
// llhttp then parses headers for), HTTP/0.9 and HTTP/2.0 request lines, "GET *",
// and CONNECT with an origin-form path. This file decides those, with Go's
// status codes: a malformed line is 400, a well-formed version other than 1.0
// or 1.1 is 505 (Go accepts 1.2+ as 1.1; goro does not claim to speak them).
#pragma once

#include <optional>
#include <string_view>

#include "framework/http/parser/request_head.hpp"

namespace goro::http::detail {

struct RequestLine {
  std::string_view method;
  std::string_view target;
  TargetForm form = TargetForm::kOrigin;
  std::string_view authority;  // absolute- and authority-form only
  int version_major = 1;
  int version_minor = 1;
};

// Splits `line` (without CRLF) into method SP target SP version and checks the
// version and the target's form against the method. Byte-level validity of the
// method and target is llhttp's job and is not repeated here.
std::optional<ParseError> parse_request_line(std::string_view line, RequestLine& out);

// Go's httpguts.ValidHostHeader: the bytes a Host header (or an authority) may
// hold. It is deliberately loose about structure, strict about bytes.
bool is_valid_host(std::string_view host) noexcept;

}  // namespace goro::http::detail
