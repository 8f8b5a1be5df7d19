// What the two request-parser targets (http_request_fuzzer.cpp,
// chunked_body_fuzzer.cpp) share: the limits an input asks for, the oracles
// every transcript the parser driver records must satisfy whatever the wire
// held, and the cuts that split a wire image into reads of one size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tests/fuzz/fuzz_support.hpp"
#include "tests/http_parser/parser_driver.hpp"

namespace goro::fuzz {

// Byte 1 of both targets' inputs. Bit 0 asks for small limits, so 413, 414,
// 431 and the chunk-extension bound are reachable in a few hundred bytes.
inline http::detail::testing::DriveOptions options_for(std::uint8_t flags) {
  http::detail::testing::DriveOptions options;
  if ((flags & 1) != 0) {
    options.limits.max_request_line = 64;
    options.limits.max_header_bytes = 256;
    options.limits.max_body_bytes = 32;
    options.limits.max_chunk_extension_bytes = 16;
  }
  return options;
}

// Every refusal uses one of the statuses parser.hpp documents; every message
// has a request line of a supported version; a body never passes the limit;
// a finished Content-Length body has exactly the declared length; only a
// chunked body has trailers.
inline void check_transcript(const http::detail::testing::Transcript& t,
                             const http::detail::testing::DriveOptions& options) {
  using http::detail::BodyFraming;
  const int s = t.error_status;
  FUZZ_CHECK(s == 0 || s == 400 || s == 413 || s == 414 || s == 431 || s == 501 || s == 505);
  for (const auto& m : t.messages) {
    FUZZ_CHECK(!m.method.empty() && !m.target.empty());
    FUZZ_CHECK(m.version_major == 1 && (m.version_minor == 0 || m.version_minor == 1));
    FUZZ_CHECK(m.body.size() <= options.limits.max_body_bytes);
    if (m.framing == BodyFraming::kNone) FUZZ_CHECK(m.body.empty());
    if (m.ended && m.framing == BodyFraming::kContentLength) {
      FUZZ_CHECK(m.body.size() == m.content_length);
    }
    if (m.framing != BodyFraming::kChunked) FUZZ_CHECK(m.trailers.empty());
  }
}

// Offsets that cut a wire of `size` bytes into reads of `stride` bytes.
inline std::vector<std::size_t> cuts_every(std::size_t stride, std::size_t size) {
  std::vector<std::size_t> cuts;
  for (std::size_t at = stride; at < size; at += stride)
    cuts.push_back(at);
  return cuts;
}

}  // namespace goro::fuzz
