// SectionScanner: a head given whole (which takes the sixteen-bytes-at-a-time
// path when the head is complete and clean) must be judged exactly as the
// same bytes given one at a time (which never does: after the first byte the
// scanner is no longer at a head's start). Random heads built from the bytes
// that matter (CR, LF, SP, HTAB, ':' and letters) at every length around the
// block size, plus the limits.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "framework/http/parser/section_scanner.hpp"

namespace goro::http::detail {
namespace {

struct Outcome {
  bool complete = false;
  std::size_t consumed = 0;
  int status = 0;
  std::string section;
  std::size_t request_line = 0;

  bool operator==(const Outcome&) const = default;
};

Outcome whole(std::string_view text, const HttpLimits& limits) {
  // An exact-size copy: a read past the input's end is then past the
  // allocation, where ASan sees it (a std::string's spare capacity and
  // terminating NUL would hide it).
  const auto bytes = std::make_unique<char[]>(text.size());
  std::memcpy(bytes.get(), text.data(), text.size());
  const std::string_view input(bytes.get(), text.size());
  SectionScanner s;
  s.reset(SectionScanner::Kind::kRequestHead, limits);
  Outcome o;
  const SectionScanner::Step step = s.scan(input, o.section);
  o.complete = step.complete;
  o.consumed = step.consumed;
  o.status = step.error.status;
  if (o.complete) o.request_line = s.request_line_size();
  return o;
}

Outcome bytewise(std::string_view input, const HttpLimits& limits) {
  SectionScanner s;
  s.reset(SectionScanner::Kind::kRequestHead, limits);
  Outcome o;
  for (std::size_t i = 0; i < input.size(); ++i) {
    const SectionScanner::Step step = s.scan(input.substr(i, 1), o.section);
    o.consumed += step.consumed;
    if (step.error.status != 0 || step.complete) {
      o.complete = step.complete;
      o.status = step.error.status;
      if (o.complete) o.request_line = s.request_line_size();
      break;
    }
  }
  return o;
}

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  return os << "complete " << o.complete << " consumed " << o.consumed << " status " << o.status
            << " request line " << o.request_line << " section "
            << testing::PrintToString(o.section);
}

// A head-shaped string: mostly well-formed lines, sometimes broken in the
// ways the scanner refuses, sometimes followed by the next message's bytes.
std::string random_head(std::mt19937& rng) {
  auto one_in = [&rng](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng) == 0; };
  auto len = [&rng](int max) { return std::uniform_int_distribution<int>(0, max)(rng); };
  const char noise[] = {'\r', '\n', ' ', '\t', ':', 'a', 'Z', '/'};
  auto text = [&](int max) {
    std::string t;
    for (int i = len(max); i > 0; --i)
      t += one_in(12) ? noise[len(7)] : static_cast<char>('a' + len(25));
    return t;
  };
  std::string h;
  if (one_in(20)) h += one_in(2) ? "\r\n" : "\n";  // a leading blank line
  h += "GET /" + text(40) + " HTTP/1.1";
  h += one_in(30) ? "\n" : "\r\n";
  for (int lines = len(4); lines > 0; --lines) {
    if (one_in(25)) h += one_in(2) ? " " : "\t";  // obs-fold
    h += text(8) + ": " + text(30);
    h += one_in(30) ? (one_in(2) ? "\n" : "\r") : "\r\n";
  }
  if (!one_in(15)) h += one_in(30) ? "\n" : "\r\n";  // the blank line (sometimes missing)
  if (one_in(3)) h += "GET /next HTTP/1.1\r\n\r\n";  // a pipelined successor
  return h;
}

TEST(SectionScanner, WholeHeadsAreJudgedAsByteAtATime) {
  HttpLimits limits;
  int complete = 0, refused = 0, partial = 0;
  for (unsigned seed = 1; seed <= 20000; ++seed) {
    std::mt19937 rng(seed);
    const std::string h = random_head(rng);
    // Tight limits now and then, so both sides of each limit are tried.
    limits.max_request_line = seed % 7 == 0 ? 20 + seed % 30 : 8 * 1024;
    limits.max_header_bytes = seed % 5 == 0 ? 30 + seed % 60 : 1 << 20;
    const Outcome a = whole(h, limits);
    const Outcome b = bytewise(h, limits);
    ASSERT_EQ(a, b) << "seed " << seed << " input " << testing::PrintToString(h);
    complete += a.complete;
    refused += a.status != 0;
    partial += !a.complete && a.status == 0;
  }
  // Each outcome must be common, or the comparison proves little.
  EXPECT_GT(complete, 4000);
  EXPECT_GT(refused, 3000);
  EXPECT_GT(partial, 200);
}

TEST(SectionScanner, HeadsAroundTheBlockSize) {
  HttpLimits limits;
  for (std::size_t target = 1; target <= 80; ++target) {
    for (const char* rest : {"", "x", "\r\n\r\n", "GET / HTTP/1.1\r\n\r\n"}) {
      const std::string h =
          "GET /" + std::string(target, 'p') + " HTTP/1.1\r\nHost: h\r\n\r\n" + rest;
      const Outcome a = whole(h, limits);
      EXPECT_TRUE(a.complete) << h;
      EXPECT_EQ(a, bytewise(h, limits)) << h;
      EXPECT_EQ(a.request_line, target + 14);
      // Cut anywhere before its end: not complete, no error.
      for (std::size_t cut = 1; cut < a.consumed; cut += 7) {
        const Outcome c = whole(std::string_view(h).substr(0, cut), limits);
        EXPECT_FALSE(c.complete);
        EXPECT_EQ(c.status, 0);
      }
    }
  }
}

// The limits at their edges: a head of n bytes with a request line of k is
// taken at max_header_bytes n and max_request_line k, refused one below,
// whichever path judges it.
TEST(SectionScanner, LimitsAtTheirEdges) {
  for (std::size_t target = 1; target <= 40; target += 3) {
    const std::string h = "GET /" + std::string(target, 't') + " HTTP/1.1\r\nHost: h\r\n\r\n";
    const std::size_t k = target + 14;
    for (std::size_t header_bytes : {h.size() - 1, h.size(), h.size() + 1}) {
      for (std::size_t line : {k - 1, k, k + 1}) {
        HttpLimits limits;
        limits.max_header_bytes = header_bytes;
        limits.max_request_line = line;
        const Outcome a = whole(h, limits);
        EXPECT_EQ(a, bytewise(h, limits)) << h << " " << header_bytes << " " << line;
        EXPECT_EQ(a.complete, header_bytes >= h.size() && line >= k) << h;
      }
    }
  }
  for (std::size_t tiny = 0; tiny < 5; ++tiny) {  // limits below a head's size
    HttpLimits limits;
    limits.max_header_bytes = tiny;
    limits.max_request_line = tiny;
    EXPECT_EQ(whole("GET / HTTP/1.1\r\n\r\n", limits), bytewise("GET / HTTP/1.1\r\n\r\n", limits));
    EXPECT_EQ(whole("A\r\n\r\n", limits), bytewise("A\r\n\r\n", limits));
  }
}

}  // namespace
}  // namespace goro::http::detail
