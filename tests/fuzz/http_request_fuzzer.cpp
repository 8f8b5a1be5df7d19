// libFuzzer target for the request parser (framework/http/parser/parser.hpp).
//
// Input layout: byte 0 picks how the wire is cut into reads (a stride of 1 to
// 64 bytes), byte 1 picks the limits (bit 0: small limits, so 413/414/431 are
// reachable in a few hundred bytes); the rest is the wire image.
//
// Oracles, beyond ASan/UBSan: the transcript (heads, bodies, trailers, error
// status) must not depend on how the wire is cut; every refusal uses one of
// the statuses the parser documents; a finished Content-Length body has
// exactly the declared length; a body never passes the limit; parse() never
// claims more bytes than it was offered (the driver's budget catches a stall).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tests/http_parser/parser_driver.hpp"

namespace {

using goro::http::detail::BodyFraming;
using goro::http::detail::testing::DriveOptions;
using goro::http::detail::testing::Transcript;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void check_transcript(const Transcript& t, const DriveOptions& options) {
  const int s = t.error_status;
  check(s == 0 || s == 400 || s == 413 || s == 414 || s == 431 || s == 501 || s == 505);
  for (const auto& m : t.messages) {
    check(!m.method.empty() && !m.target.empty());
    check(m.version_major == 1 && (m.version_minor == 0 || m.version_minor == 1));
    check(m.body.size() <= options.limits.max_body_bytes);
    if (m.framing == BodyFraming::kNone) check(m.body.empty());
    if (m.ended && m.framing == BodyFraming::kContentLength) {
      check(m.body.size() == m.content_length);
    }
    if (m.framing != BodyFraming::kChunked) check(m.trailers.empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t stride = 1 + data[0] % 64;
  DriveOptions options;
  if ((data[1] & 1) != 0) {
    options.limits.max_request_line = 64;
    options.limits.max_header_bytes = 256;
    options.limits.max_body_bytes = 32;
    options.limits.max_chunk_extension_bytes = 16;
  }
  std::string_view wire(reinterpret_cast<const char*>(data + 2), size - 2);

  Transcript whole = goro::http::detail::testing::drive_whole(wire, options);
  check(whole.error_status != -1);
  check_transcript(whole, options);

  std::vector<std::size_t> cuts;
  for (std::size_t at = stride; at < wire.size(); at += stride)
    cuts.push_back(at);
  Transcript split = goro::http::detail::testing::drive(wire, cuts, options);
  check(split == whole);
  return 0;
}
