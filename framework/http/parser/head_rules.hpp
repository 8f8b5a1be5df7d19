// The request-head rules goro enforces on top of llhttp, in Go net/http's words
// and with its status codes (docs/DESIGN.md "What goro adds to llhttp").
//
// Three moments: check_field_name() and check_field() run as each header line
// completes, so an early
// verdict (an unsupported Transfer-Encoding) wins over llhttp's later framing
// errors the way Go's order of checks does; finish_head() runs once the
// header section has ended and derives what the connection loop acts on —
// host, framing, keep-alive, expectation, upgrade.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "framework/http/parser/header_list.hpp"
#include "framework/http/parser/request_head.hpp"
#include "framework/http/parser/request_line.hpp"

namespace goro::http::detail {

// The header names the rules act on, told apart once per line.
enum class FieldKind : std::uint8_t {
  kOther,
  kHost,
  kTransferEncoding,
  kConnection,
  kExpect,
  kUpgrade
};

// What check_field_name() and check_field() keep across the lines of one
// head, so that finish_head() needs no second pass over the header list.
// The views point where the fields' values do (the parser's head section).
struct FieldTally {
  std::size_t host_lines = 0;
  std::size_t transfer_encoding_lines = 0;
  FieldKind current = FieldKind::kOther;    // the line whose name just completed
  std::string_view host;                    // the Host line's value
  bool connection_close = false;            // a Connection line lists "close"
  bool connection_keep_alive = false;       // a Connection line lists "keep-alive"
  std::optional<std::string_view> expect;   // the first Expect line's value
  std::optional<std::string_view> upgrade;  // the first Upgrade line's value
};

// What llhttp decided about framing and upgrade (its flags at headers-complete).
struct LlhttpVerdict {
  bool chunked = false;
  bool has_content_length = false;
  std::uint64_t content_length = 0;
  bool upgrade = false;
  // llhttp_should_keep_alive(): false when llhttp, after this message, will
  // refuse any further byte ("Data after `Connection: close`"). Its reading
  // of Connection differs from goro's in corners (it takes
  // Proxy-Connection as Connection; a tab before a comma ends its token
  // match), so goro closes whenever llhttp would.
  bool keep_alive = true;
};

// `head` has its request line filled in (host holds the target's authority,
// if it has one). check_field_name() runs when a field name is complete,
// before llhttp parses the value (whose framing checks would otherwise speak
// first); check_field() runs on the complete field (the same name: it reads
// tally.current). Each returns the refusal.
//
// Both are inline: they run on every field line, from the parser's fast path
// and llhttp's callbacks, and as two calls into another file (with the
// caller's registers saved and restored around each) they cost wrk's
// one-field head some 50 instructions.
namespace head_rules {

inline constexpr ParseError kInvalidHeaderName{400, "invalid header name"};
inline constexpr ParseError kTooManyHosts{400, "too many Host headers"};
inline constexpr ParseError kMalformedHost{400, "malformed Host header"};
// Go's unsupportedTEError texts; the offending value is never echoed (XSS).
inline constexpr ParseError kTooManyTE{501, "too many transfer encodings"};
inline constexpr ParseError kUnsupportedTE{501, "unsupported transfer encoding"};
inline constexpr ParseError kTransferEncodingHttp10{400,
                                                    "Transfer-Encoding in an HTTP/1.0 request"};

// One length switch and at most one comparison per line.
inline FieldKind classify(std::string_view name) noexcept {
  switch (name.size()) {
    case 4:
      return equal_fold(name, "Host") ? FieldKind::kHost : FieldKind::kOther;
    case 6:
      return equal_fold(name, "Expect") ? FieldKind::kExpect : FieldKind::kOther;
    case 7:
      return equal_fold(name, "Upgrade") ? FieldKind::kUpgrade : FieldKind::kOther;
    case 10:
      return equal_fold(name, "Connection") ? FieldKind::kConnection : FieldKind::kOther;
    case 17:
      return equal_fold(name, "Transfer-Encoding") ? FieldKind::kTransferEncoding
                                                   : FieldKind::kOther;
    default:
      return FieldKind::kOther;
  }
}

}  // namespace head_rules

inline std::optional<ParseError> check_field_name(const RequestHead& head, std::string_view name,
                                                  FieldTally& tally) {
  // llhttp 8.1 accepts ": value"; a field name is a non-empty token.
  if (name.empty()) return head_rules::kInvalidHeaderName;
  tally.current = head_rules::classify(name);
  if (tally.current == FieldKind::kHost) {
    // Go refuses a second Host line even when identical (request.go).
    if (++tally.host_lines > 1) return head_rules::kTooManyHosts;
  } else if (tally.current == FieldKind::kTransferEncoding) {
    // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
    // framing (Go ignores the header instead, which a front proxy may not).
    if (!head.is_http11()) return head_rules::kTransferEncodingHttp10;
    if (++tally.transfer_encoding_lines > 1) return head_rules::kTooManyTE;
  }
  return std::nullopt;
}

inline std::optional<ParseError> check_field(const RequestHead&, HeaderField field,
                                             FieldTally& tally) {
  switch (tally.current) {
    case FieldKind::kHost:
      if (!is_valid_host(field.value)) return head_rules::kMalformedHost;
      tally.host = field.value;
      break;
    case FieldKind::kTransferEncoding:
      // Go accepts exactly one Transfer-Encoding line whose value is
      // "chunked"; llhttp accepts "gzip, chunked" and an empty value.
      if (!equal_fold(field.value, "chunked")) return head_rules::kUnsupportedTE;
      break;
    case FieldKind::kConnection:
      tally.connection_close = tally.connection_close || list_has_token(field.value, "close");
      tally.connection_keep_alive =
          tally.connection_keep_alive || list_has_token(field.value, "keep-alive");
      break;
    case FieldKind::kExpect:
      if (!tally.expect) tally.expect = field.value;
      break;
    case FieldKind::kUpgrade:
      if (!tally.upgrade) tally.upgrade = field.value;
      break;
    case FieldKind::kOther:
      break;
  }
  tally.current = FieldKind::kOther;
  return std::nullopt;
}

// Completes `head` from its headers and llhttp's verdict, or refuses it.
std::optional<ParseError> finish_head(RequestHead& head, const FieldTally& tally,
                                      const LlhttpVerdict& verdict, const HttpLimits& limits);

}  // namespace goro::http::detail
