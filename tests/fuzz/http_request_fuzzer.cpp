// libFuzzer target for the request parser (framework/http/parser/parser.hpp):
// request heads and message framing.
//
// Input layout: byte 0 picks how the wire is cut into reads (a stride of 1 to
// 64 bytes), byte 1 picks the limits (http_oracles.hpp options_for); the rest
// is the wire image.
//
// Oracles, beyond ASan/UBSan: the transcript (heads, bodies, trailers, error
// status) must not depend on how the wire is cut; the transcript oracles of
// http_oracles.hpp (documented statuses, body lengths and limits); parse()
// never claims more bytes than it was offered (the driver's budget catches a
// stall); the head fast path and llhttp alone (parser.hpp HeadPath) give the
// same transcript.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/http_oracles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace testing = goro::http::detail::testing;
  if (size < 2) return 0;
  const std::size_t stride = 1 + data[0] % 64;
  const testing::DriveOptions options = goro::fuzz::options_for(data[1]);
  const std::string_view wire = goro::fuzz::as_text(data + 2, size - 2);

  const testing::Transcript whole = testing::drive_whole(wire, options);
  FUZZ_CHECK(whole.error_status != -1);
  goro::fuzz::check_transcript(whole, options);

  testing::DriveOptions llhttp_only = options;
  llhttp_only.head_path = goro::http::detail::HeadPath::kLlhttpOnly;
  FUZZ_CHECK(testing::drive_whole(wire, llhttp_only) == whole);

  const testing::Transcript split =
      testing::drive(wire, goro::fuzz::cuts_every(stride, wire.size()), options);
  FUZZ_CHECK(split == whole);
  return 0;
}
