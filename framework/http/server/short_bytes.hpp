// Copies and compares of the short strings a response head is made of
// (field names and values, digits, a server name), inlined: a libc memcpy
// or memcmp call costs about as many instructions before its first byte as
// the work itself, and a head makes a dozen of them. Two overlapping moves
// of a fixed size cover every length of a range; inlined, a constant length
// folds to the moves alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace goro::http::detail {

// memcpy(dst, src, n), without a call for n <= 32.
[[gnu::always_inline]] inline void copy_short(char* dst, const char* src, std::size_t n) {
  if (n >= 16) {
    if (n > 32) {
      std::memcpy(dst, src, n);
      return;
    }
    std::memcpy(dst, src, 16);
    std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else if (n > 0) {
    dst[0] = src[0];
    dst[n / 2] = src[n / 2];
    dst[n - 1] = src[n - 1];
  }
}

// The first and last sizeof(W) of n equal-length bytes at a and b equal
// (sizeof(W) <= n <= 2 * sizeof(W): the two words cover all n, overlapping).
template <class W>
[[gnu::always_inline]] inline bool same_ends(const char* a, const char* b, std::size_t n) noexcept {
  W x[2];
  W y[2];
  std::memcpy(&x[0], a, sizeof(W));
  std::memcpy(&x[1], a + n - sizeof(W), sizeof(W));
  std::memcpy(&y[0], b, sizeof(W));
  std::memcpy(&y[1], b + n - sizeof(W), sizeof(W));
  return x[0] == y[0] && x[1] == y[1];
}

// a == b, without a call for up to 16 bytes.
[[gnu::always_inline]] inline bool same_bytes(std::string_view a, std::string_view b) noexcept {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  if (n > 16) return std::memcmp(a.data(), b.data(), n) == 0;
  if (n >= 8) return same_ends<std::uint64_t>(a.data(), b.data(), n);
  if (n >= 4) return same_ends<std::uint32_t>(a.data(), b.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace goro::http::detail
