// libFuzzer target for chunked request bodies (framework/http/parser/parser.hpp):
// chunk sizes, chunk extensions, chunk data and the trailer section.
//
// Input layout: byte 0 picks the stride the wire is cut at (1 to 256 bytes),
// byte 1 the limits (http_oracles.hpp options_for). The rest follows a fixed,
// valid chunked head, so no execution is spent finding a request line:
//   POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n<fuzz bytes>
// Bytes after the last chunk and its trailers are the next pipelined request.
//
// Oracles, beyond ASan/UBSan: the transcript cut into one-byte reads equals
// the one cut at the chosen stride (chunk-size lines, extensions and CRLFs
// split anywhere must decode the same); the transcript oracles of
// http_oracles.hpp, among them that a body never passes max_body_bytes; the
// fixed head is always reported as written, whatever follows it; no message
// carries a trailer the parser must refuse (Content-Length, Host, ...).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "framework/http/parser/header_list.hpp"
#include "tests/fuzz/http_oracles.hpp"

namespace {

namespace testing = goro::http::detail::testing;
using goro::http::detail::BodyFraming;
using goro::http::detail::equal_fold;

constexpr std::string_view kHead =
    "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";

// Fields that frame or route a message must not arrive as trailers (RFC 9110
// §6.5.1): a recipient that merged them into the head would let a body
// re-frame or re-route its own message. The parser refuses these five with a
// 400 (parser.cpp, forbidden_trailer), so no ended message may carry one.
bool is_forbidden_trailer(std::string_view name) {
  for (std::string_view f : {"content-length", "transfer-encoding", "host", "trailer", "te"}) {
    if (equal_fold(name, f)) return true;
  }
  return false;
}

void check_first_message(const testing::Transcript& t) {
  FUZZ_CHECK(!t.messages.empty());
  const testing::Message& m = t.messages.front();
  FUZZ_CHECK(m.method == "POST" && m.target == "/" && m.host == "x");
  FUZZ_CHECK(m.framing == BodyFraming::kChunked);
}

void check_trailers(const testing::Transcript& t) {
  for (const testing::Message& m : t.messages) {
    for (const auto& [name, value] : m.trailers)
      FUZZ_CHECK(!is_forbidden_trailer(name));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t stride = 1 + std::size_t{data[0]};
  const testing::DriveOptions options = goro::fuzz::options_for(data[1]);
  std::string wire(kHead);
  wire.append(goro::fuzz::as_text(data + 2, size - 2));

  const testing::Transcript bytewise = testing::drive_bytewise(wire, options);
  FUZZ_CHECK(bytewise.error_status != -1);
  goro::fuzz::check_transcript(bytewise, options);
  check_first_message(bytewise);
  check_trailers(bytewise);

  const testing::Transcript strided =
      testing::drive(wire, goro::fuzz::cuts_every(stride, wire.size()), options);
  FUZZ_CHECK(strided == bytewise);
  return 0;
}
