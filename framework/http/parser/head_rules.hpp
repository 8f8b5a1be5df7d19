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

#include "framework/http/parser/request_head.hpp"

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
std::optional<ParseError> check_field_name(const RequestHead& head, std::string_view name,
                                           FieldTally& tally);
std::optional<ParseError> check_field(const RequestHead& head, HeaderField field,
                                      FieldTally& tally);

// Completes `head` from its headers and llhttp's verdict, or refuses it.
std::optional<ParseError> finish_head(RequestHead& head, const FieldTally& tally,
                                      const LlhttpVerdict& verdict, const HttpLimits& limits);

}  // namespace goro::http::detail
