// Range requests (RFC 9110 §14): what a "Range: bytes=..." header asks of a
// resource of a known size. Pure; the file server decides what to answer.
#pragma once

#include <cstdint>
#include <string_view>

namespace goro::http::detail {

struct ByteRange {
  enum class Kind : std::uint8_t {
    kWhole,          // no usable Range: answer 200 with everything
    kPartial,        // one satisfiable range: 206 with [first, first + length)
    kUnsatisfiable,  // 416 with "Content-Range: bytes */size"
  };
  Kind kind = Kind::kWhole;
  std::uint64_t first = 0;
  std::uint64_t length = 0;
};

// Reads the Range header value against a resource of `size` bytes:
//   "bytes=0-99", "bytes=100-" (to the end), "bytes=-500" (the last 500);
//   a last byte past the end is clipped; a suffix longer than the resource
//   means all of it (still 206).
// kUnsatisfiable: the one range starts at or past the end, or is the empty
// suffix "-0" — except for an empty resource, where every range reads as
// kWhole (Go's rule: clients that add Range to every request get the empty
// 200 rather than an error).
// kWhole: no header, a unit other than "bytes", a malformed value (RFC 9110
// lets a server ignore it), or more than one range: goro does not build
// multipart/byteranges responses and sends the whole resource instead, which
// RFC 9110 §14.2 allows.
ByteRange parse_byte_range(std::string_view header, std::uint64_t size) noexcept;

}  // namespace goro::http::detail
