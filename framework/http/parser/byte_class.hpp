// Byte-class tables for the HTTP grammar's character sets (tokens, hosts).
#pragma once

#include <array>
#include <string_view>

namespace goro::http::detail {

// A 256-entry table: true for ASCII letters, digits and the bytes in `extra`.
constexpr std::array<bool, 256> alnum_plus(std::string_view extra) {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c)
    t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c)
    t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c)
    t[c] = true;
  for (char c : extra)
    t[static_cast<unsigned char>(c)] = true;
  return t;
}

// RFC 9110 tchar: the bytes of a token (field names, methods, list tokens).
inline constexpr std::array<bool, 256> kTokenByte = alnum_plus("!#$%&'*+-.^_`|~");

}  // namespace goro::http::detail
