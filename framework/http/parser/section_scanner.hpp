// SectionScanner: the byte-level gate in front of llhttp for a request head and
// for a chunked body's trailer section.
//
// # Why a second pass over head bytes
// llhttp 8.1 lets through line shapes that request smuggling is built from
// (docs/DESIGN.md "What goro adds to llhttp"): a bare LF ending the head, obs-fold
// continuation lines, and it applies no size policy at all. The scanner walks
// the section once, before llhttp sees any of it, and enforces:
//   - every line ends in CRLF: a CR not followed by LF, or an LF not preceded
//     by CR, is a 400 (Go accepts bare LF; RFC 9112 §2.2 lets a server refuse);
//   - no line after the first starts with SP or HTAB (obs-fold, and the
//     "space after start line" shape): 400, as llhttp >= 9.2.1 does;
//   - the request line is at most HttpLimits::max_request_line bytes (414) and
//     the whole section at most max_header_bytes (431), decided as soon as the
//     count passes the limit, so a slow or endless head never buffers more;
//   - blank lines before a request line are skipped (RFC 9112 §2.2), counted
//     against the head limit.
// It copies the section into a caller buffer, so llhttp later parses the whole
// head in one call: its verdict then never depends on how TCP split the bytes,
// and field views point into memory the parser owns.
//
// A head the request parser's fast path takes whole at the start of its
// input never reaches the scanner (one it refuses or leaves to llhttp
// does, from its start): the fast path's byte classes hold no CR
// or LF and its lines start with a token byte, so it checks these rules as
// it goes (parser.cpp "The head fast path").
//
// # Rejected alternative
// Feeding llhttp straight from the socket buffer and checking line endings in
// the header callbacks: the callbacks never see the CR/LF bytes, and a span can
// be split at any byte, so a fold or a bare LF after the last header is only
// visible by reconstructing positions across calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "framework/http/parser/request_head.hpp"

namespace goro::http::detail {

class SectionScanner {
 public:
  enum class Kind : std::uint8_t { kRequestHead, kTrailers };

  struct Step {
    std::size_t consumed = 0;  // bytes of the input taken (copied or skipped)
    bool complete = false;     // the section's final CRLF was taken
    ParseError error;          // error.status != 0: the section is refused
  };

  // Starts a new section. The limits object must outlive the scanner's use.
  // Inline: the parser starts one for every message.
  void reset(Kind kind, const HttpLimits& limits) noexcept {
    limits_ = &limits;
    kind_ = kind;
    state_ = kind == Kind::kRequestHead ? State::kLeading : State::kLineStart;
    total_bytes_ = 0;
    request_line_size_ = 0;
    byte_limit_ = limits.max_header_bytes;
  }

  // Scans `input`, appending the section bytes it takes to `section` (leading
  // blank lines are consumed but not copied). Stops after the section's final
  // LF, at the first error, or at the end of the input.
  Step scan(std::string_view input, std::string& section);

  // No byte of the current section has been taken yet.
  bool at_start() const noexcept { return state_ == State::kLeading && total_bytes_ == 0; }
  // Length of the request line without its CRLF, once complete: the section
  // buffer starts with it.
  std::size_t request_line_size() const noexcept { return request_line_size_; }

 private:
  std::size_t whole_head(std::string_view input, std::size_t& request_line) const noexcept;
  bool took_whole_head(std::string_view input, std::string& section, Step& step);
  std::size_t skip_line(std::string_view input, std::size_t i, std::size_t budget) noexcept;
  bool leading(char c) noexcept;
  enum class State : std::uint8_t {
    kLeading,        // before the request line: blank lines are skipped
    kLeadingCR,      // a CR of a leading blank line
    kRequestLine,    // inside the request line
    kRequestLineCR,  // CR ending the request line; LF must follow
    kLineStart,      // first byte of a header line, or of the final CRLF
    kFieldLine,      // inside a header (or trailer) line
    kFieldLineCR,    // CR ending a field line
    kFinalCR,        // CR of the empty line ending the section
  };

  State state_ = State::kLeading;
  Kind kind_ = Kind::kRequestHead;
  const HttpLimits* limits_ = nullptr;
  std::size_t total_bytes_ = 0;
  std::size_t request_line_size_ = 0;
  std::size_t byte_limit_ = 0;
};

}  // namespace goro::http::detail
