// Chunked transfer coding for responses (RFC 9112 §7.1): the framing around
// each chunk, kept separate from the bytes so a writer can gather
// [size line, data, CRLF] into one writev without copying the data.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "framework/http/parser/header_list.hpp"

namespace goro::http::detail {

// "\r\n" after each chunk's data.
inline constexpr std::string_view kChunkEnd = "\r\n";
// The last chunk and the end of an empty trailer section.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

// A chunk-size line: lower-case hex size, no extensions, CRLF.
struct ChunkSizeLine {
  std::array<char, 16 + 2> bytes;  // 16 hex digits cover any 64-bit size
  std::uint8_t size;
  std::string_view view() const noexcept { return {bytes.data(), size}; }
};

// The size line for a chunk of `n` bytes. n must be > 0: a zero size is the
// last chunk, written with append_last_chunk().
ChunkSizeLine chunk_size_line(std::uint64_t n) noexcept;

// Appends one whole chunk holding `data` to `out`; nothing for empty data (an
// empty chunk would end the body).
void append_chunk(std::string& out, std::string_view data);

// Appends the last chunk, then `trailers` (if any) and the final CRLF.
// Trailer names and values are written as given; the caller vets them.
void append_last_chunk(std::string& out, const HeaderList* trailers = nullptr);

}  // namespace goro::http::detail
