#include "framework/http/server/chunked_encoder.hpp"

namespace goro::http::detail {

ChunkSizeLine chunk_size_line(std::uint64_t n) noexcept {
  constexpr std::string_view kHex = "0123456789abcdef";
  ChunkSizeLine line{};
  char digits[16];
  std::size_t count = 0;
  do {
    digits[count++] = kHex[n & 0xf];
    n >>= 4;
  } while (n != 0);
  std::size_t i = 0;
  while (count > 0)
    line.bytes[i++] = digits[--count];
  line.bytes[i++] = '\r';
  line.bytes[i++] = '\n';
  line.size = static_cast<std::uint8_t>(i);
  return line;
}

void append_chunk(std::string& out, std::string_view data) {
  if (data.empty()) return;
  out.append(chunk_size_line(data.size()).view());
  out.append(data);
  out.append(kChunkEnd);
}

void append_last_chunk(std::string& out, const HeaderList* trailers) {
  out.append("0\r\n");
  if (trailers != nullptr) {
    for (std::size_t i = 0; i < trailers->size(); ++i) {
      HeaderField f = (*trailers)[i];
      out.append(f.name);
      out.append(": ");
      out.append(f.value);
      out.append("\r\n");
    }
  }
  out.append("\r\n");
}

}  // namespace goro::http::detail
