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

// Counts check_field() keeps across the lines of one head.
struct FieldTally {
  std::size_t host_lines = 0;
  std::size_t transfer_encoding_lines = 0;
};

// What llhttp decided about framing and upgrade (its flags at headers-complete).
struct LlhttpVerdict {
  bool chunked = false;
  bool has_content_length = false;
  std::uint64_t content_length = 0;
  bool upgrade = false;
};

// `head` has its request line filled in (host holds the target's authority,
// if it has one). check_field_name() runs when a field name is complete,
// before llhttp parses the value (whose framing checks would otherwise speak
// first); check_field() runs on the complete field. Each returns the refusal.
std::optional<ParseError> check_field_name(const RequestHead& head, std::string_view name,
                                           FieldTally& tally);
std::optional<ParseError> check_field(const RequestHead& head, HeaderField field);

// Completes `head` from its headers and llhttp's verdict, or refuses it.
std::optional<ParseError> finish_head(RequestHead& head, const FieldTally& tally,
                                      const LlhttpVerdict& verdict, const HttpLimits& limits);

}  // namespace goro::http::detail
