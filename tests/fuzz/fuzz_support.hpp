// What every fuzz target in tests/fuzz/ shares: the way an oracle reports a
// broken promise, and the way an input is cut into the pieces a target feeds
// to the code under test.
//
// FUZZ_CHECK prints the failed condition with its file and line before it
// aborts, so a reproduced crash says which oracle broke without a debugger;
// libFuzzer's deadly-signal handler then saves the input and prints the stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#define FUZZ_CHECK(cond)                                        \
  do {                                                          \
    if (!(cond)) ::goro::fuzz::fail(#cond, __FILE__, __LINE__); \
  } while (0)

namespace goro::fuzz {

[[noreturn]] inline void fail(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "fuzz: oracle failed: %s (%s:%d)\n", condition, file, line);
  std::abort();
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Cuts `input` at every `separator` into at most `max_pieces` pieces; the
// last piece keeps any further separators. An input without a separator is
// one piece; an empty input is one empty piece.
inline std::vector<std::string_view> split_input(std::string_view input, char separator,
                                                 std::size_t max_pieces) {
  std::vector<std::string_view> pieces;
  while (pieces.size() + 1 < max_pieces) {
    const std::size_t at = input.find(separator);
    if (at == std::string_view::npos) break;
    pieces.push_back(input.substr(0, at));
    input.remove_prefix(at + 1);
  }
  pieces.push_back(input);
  return pieces;
}

}  // namespace goro::fuzz
