#include "framework/http/parser/header_key.hpp"

#include "framework/http/parser/byte_class.hpp"

#include <array>

namespace goro::http::detail {

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

namespace {

// A token byte as it is written first in a word (upper case) and after it
// (lower case); 0 for a byte that is not a token byte. A word starts the
// name and follows each '-'.
struct KeyCase {
  std::array<char, 256> first{};
  std::array<char, 256> rest{};
};

constexpr KeyCase make_key_case() {
  KeyCase k;
  for (int c = 0; c < 256; ++c) {
    if (!kTokenByte[c]) continue;
    const bool lower = c >= 'a' && c <= 'z';
    const bool upper = c >= 'A' && c <= 'Z';
    k.first[c] = static_cast<char>(lower ? c - 'a' + 'A' : c);
    k.rest[c] = static_cast<char>(upper ? c - 'A' + 'a' : c);
  }
  return k;
}

constexpr KeyCase kKeyCase = make_key_case();

}  // namespace

// A table lookup per byte (Header::set canonicalises every name a handler
// sets: with a branch per case it was ~270 instructions for "Content-Type").
bool canonical_header_key_into(std::string_view name, std::string& out) {
  if (name.empty()) return false;
  out.resize(name.size());
  char* o = out.data();
  const std::array<char, 256>* table = &kKeyCase.first;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = (*table)[static_cast<unsigned char>(name[i])];
    if (c == 0) return false;
    o[i] = c;
    table = c == '-' ? &kKeyCase.first : &kKeyCase.rest;
  }
  return true;
}

std::string canonical_header_key(std::string_view name) {
  std::string key(name);
  canonicalize_header_key(key);
  return key;
}

}  // namespace goro::http::detail
