// libFuzzer target for Range header parsing
// (framework/http/handlers/byte_range.hpp, parse_byte_range).
//
// Input layout: bytes 0-7 are the resource size (little-endian, so the
// fuzzer's integer comparisons can steer it to the edges); the rest is the
// Range header value.
//
// Oracles, beyond ASan/UBSan:
//   - a partial answer is a non-empty range inside the resource: length > 0
//     and first + length <= size, computed without overflow (so size > 0);
//   - only a non-empty resource can be unsatisfiable: for size 0 every
//     header reads as the whole;
//   - the answer depends only on the arguments (a second call agrees) and
//     not on spaces or tabs around the value, which the grammar allows.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "framework/http/handlers/byte_range.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using goro::http::detail::ByteRange;
using goro::http::detail::parse_byte_range;

bool same(const ByteRange& a, const ByteRange& b) {
  return a.kind == b.kind && a.first == b.first && a.length == b.length;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  std::uint64_t resource = 0;
  for (int i = 7; i >= 0; --i)
    resource = resource << 8 | data[i];
  const std::string_view header = goro::fuzz::as_text(data + 8, size - 8);

  const ByteRange r = parse_byte_range(header, resource);
  switch (r.kind) {
    case ByteRange::Kind::kPartial:
      FUZZ_CHECK(resource > 0 && r.length > 0);
      FUZZ_CHECK(r.first < resource && r.length <= resource - r.first);
      break;
    case ByteRange::Kind::kUnsatisfiable:
    case ByteRange::Kind::kWhole:
      break;
  }
  if (resource == 0) FUZZ_CHECK(r.kind == ByteRange::Kind::kWhole);

  FUZZ_CHECK(same(parse_byte_range(header, resource), r));
  const std::string padded = " \t" + std::string(header) + "\t ";
  FUZZ_CHECK(same(parse_byte_range(padded, resource), r));
  return 0;
}
