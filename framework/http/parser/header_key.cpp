#include "framework/http/parser/header_key.hpp"

#include "framework/http/parser/byte_class.hpp"

#include <array>

namespace goro::http::detail {

namespace {

// RFC 9110 tchar.
constexpr std::array<bool, 256> kTokenByte = alnum_plus("!#$%&'*+-.^_`|~");

}  // namespace

bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char c : s) {
    if (!kTokenByte[static_cast<unsigned char>(c)]) return false;
  }
  return true;
}

bool canonicalize_header_key(std::string& name) noexcept {
  if (!is_token(name)) return false;
  bool upper = true;
  for (char& c : name) {
    if (upper && c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    } else if (!upper && c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
    upper = c == '-';
  }
  return true;
}

bool canonical_header_key_into(std::string_view name, std::string& out) {
  if (name.empty()) return false;
  out.resize(name.size());
  bool upper = true;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (!kTokenByte[static_cast<unsigned char>(c)]) return false;
    if (upper && c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    } else if (!upper && c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
    out[i] = c;
    upper = c == '-';
  }
  return true;
}

std::string canonical_header_key(std::string_view name) {
  std::string key(name);
  canonicalize_header_key(key);
  return key;
}

}  // namespace goro::http::detail
