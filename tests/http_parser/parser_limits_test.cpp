// Limits: 414 for the request line, 431 for the head (and trailers), 413 for
// the body under both framings, the chunk-extension cap. Each limit is tested
// at its exact edge, from HttpLimits' own values.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "parser_driver.hpp"

namespace goro::http::detail::testing {
namespace {

// "GET /aaa... HTTP/1.1" of exactly `size` bytes (CRLF excluded).
std::string request_line_of(std::size_t size) {
  const std::string fixed = "GET / HTTP/1.1";
  std::string line = "GET /" + std::string(size - fixed.size(), 'a') + " HTTP/1.1";
  return line;
}

TEST(ParserLimits, RequestLineAtLimitIsAccepted) {
  const std::size_t limit = HttpLimits{}.max_request_line;
  std::string wire = request_line_of(limit) + "\r\nHost: h\r\n\r\n";
  Transcript t = drive_whole(wire);
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_EQ(t.messages[0].target.size() + std::string("GET  HTTP/1.1").size(), limit);
}

TEST(ParserLimits, RequestLineOverLimitIs414) {
  const std::size_t limit = HttpLimits{}.max_request_line;
  std::string wire = request_line_of(limit + 1) + "\r\nHost: h\r\n\r\n";
  EXPECT_EQ(status_of(wire), 414);
  EXPECT_EQ(drive_bytewise(wire).error_status, 414);
}

TEST(ParserLimits, RequestLineIs414BeforeItEnds) {
  // The verdict comes as soon as the limit is passed, not at the CRLF.
  const std::size_t limit = HttpLimits{}.max_request_line;
  std::string partial = "GET /" + std::string(limit, 'a');
  Transcript t = drive_whole(partial);
  EXPECT_EQ(t.error_status, 414);
}

TEST(ParserLimits, ConfigurableRequestLineLimit) {
  DriveOptions small;
  small.limits.max_request_line = 32;
  EXPECT_EQ(status_of(request_line_of(32) + "\r\nHost: h\r\n\r\n", small), 0);
  EXPECT_EQ(status_of(request_line_of(33) + "\r\nHost: h\r\n\r\n", small), 414);
}

// A head of exactly `size` bytes, padded with one X-Pad header.
std::string head_of(std::size_t size) {
  std::string head = "GET / HTTP/1.1\r\nHost: h\r\nX-Pad: ";
  const std::size_t tail = 4;  // "\r\n\r\n"
  head.append(size - head.size() - tail, 'p');
  head.append("\r\n\r\n");
  return head;
}

TEST(ParserLimits, HeadAtLimitIsAcceptedAndOneMoreByteIs431) {
  DriveOptions small;
  small.limits.max_header_bytes = 256;
  EXPECT_EQ(status_of(head_of(256), small), 0);
  EXPECT_EQ(status_of(head_of(257), small), 431);
  EXPECT_EQ(drive_bytewise(head_of(257), small).error_status, 431);
}

TEST(ParserLimits, DefaultHeadLimitIs431) {
  const std::size_t limit = HttpLimits{}.max_header_bytes;
  EXPECT_EQ(status_of(head_of(limit)), 0);
  EXPECT_EQ(status_of(head_of(limit + 1)), 431);
}

TEST(ParserLimits, ManySmallHeadersCountTowardTheHeadLimit) {
  DriveOptions small;
  small.limits.max_header_bytes = 1024;
  std::string wire = "GET / HTTP/1.1\r\nHost: h\r\n";
  while (wire.size() <= small.limits.max_header_bytes)
    wire += "X-A: b\r\n";
  wire += "\r\n";
  EXPECT_EQ(status_of(wire, small), 431);
}

TEST(ParserLimits, LeadingBlankLinesCountTowardTheHeadLimit) {
  DriveOptions small;
  small.limits.max_header_bytes = 64;
  std::string wire(small.limits.max_header_bytes + 2, '\n');
  EXPECT_EQ(status_of(wire, small), 431);
}

TEST(ParserLimits, TrailersOverTheHeadLimitAre431) {
  DriveOptions small;
  small.limits.max_header_bytes = 256;
  std::string wire = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: " +
                     std::string(small.limits.max_header_bytes, 't') + "\r\n\r\n";
  EXPECT_EQ(status_of(wire, small), 431);
}

std::string post_with_length(std::uint64_t n) {
  return "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(n) + "\r\n\r\n";
}

TEST(ParserLimits, ContentLengthAtLimitIsAcceptedAndOverIs413) {
  const std::uint64_t limit = HttpLimits{}.max_body_bytes;
  RequestParser ok;
  EXPECT_EQ(ok.parse(post_with_length(limit)).event, ParseEvent::kHead);
  EXPECT_EQ(ok.head().content_length, limit);
  EXPECT_EQ(status_of(post_with_length(limit + 1)), 413);
}

TEST(ParserLimits, ConfigurableBodyLimitForContentLength) {
  DriveOptions small;
  small.limits.max_body_bytes = 4;
  EXPECT_EQ(status_of(post_with_length(4) + "abcd", small), 0);
  EXPECT_EQ(status_of(post_with_length(5) + "abcde", small), 413);
}

std::string chunked_body(const std::vector<std::size_t>& sizes) {
  std::string wire = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (std::size_t n : sizes) {
    char line[32];
    std::snprintf(line, sizeof line, "%zx\r\n", n);
    wire += line + std::string(n, 'c') + "\r\n";
  }
  return wire + "0\r\n\r\n";
}

TEST(ParserLimits, ChunkedRunningTotalAtLimitIsAccepted) {
  DriveOptions small;
  small.limits.max_body_bytes = 10;
  Transcript t = drive_whole(chunked_body({4, 6}), small);
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_EQ(t.messages[0].body.size(), small.limits.max_body_bytes);
}

TEST(ParserLimits, ChunkedRunningTotalOverLimitIs413BeforeTheChunkIsDelivered) {
  DriveOptions small;
  small.limits.max_body_bytes = 10;
  Transcript t = drive_whole(chunked_body({4, 6, 1}), small);
  EXPECT_EQ(t.error_status, 413);
  ASSERT_EQ(t.messages.size(), 1u);
  EXPECT_EQ(t.messages[0].body.size(), small.limits.max_body_bytes);
  EXPECT_FALSE(t.messages[0].ended);
}

TEST(ParserLimits, HugeChunkSizeIs413NotAnOverflow) {
  Transcript t = drive_whole(
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "ffffffffffffffff\r\nxx");
  EXPECT_EQ(t.error_status, 413);
}

TEST(ParserLimits, LongChunkExtensionsAre400) {
  DriveOptions small;
  small.limits.max_chunk_extension_bytes = 16;
  std::string head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(status_of(head + "1;abcdefgh=ijklmnop\r\nx\r\n0\r\n\r\n", small), 0);
  EXPECT_EQ(status_of(head + "1;abcdefgh=ijklmnopq\r\nx\r\n0\r\n\r\n", small), 400);
}

}  // namespace
}  // namespace goro::http::detail::testing

namespace {

// Runs `wire` through `p` to its message end; false on error.
bool parse_message(goro::http::detail::RequestParser& p, std::string_view wire) {
  using goro::http::detail::ParseEvent;
  while (!wire.empty()) {
    auto r = p.parse(wire);
    if (r.event == ParseEvent::kError) return false;
    wire.remove_prefix(r.consumed);
    if (r.event == ParseEvent::kMessageEnd) return true;
  }
  return p.parse({}).event == ParseEvent::kMessageEnd;
}

}  // namespace

// A connection that carried a huge head gives its buffers back when idle
// (issue 17), and the parser goes on parsing correctly afterwards (ASan
// sees any use of the freed head). A call mid-message changes nothing.
TEST(ParserLimits, ReleaseBuffersAfterAHugeHeadKeepsParsing) {
  goro::http::detail::RequestParser p;
  const std::string big =
      "GET /big HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(900 << 10, 'b') + "\r\n\r\n";
  ASSERT_TRUE(parse_message(p, big));
  EXPECT_EQ(p.head().headers.get("X-Big").value_or("").size(), std::size_t{900} << 10);
  p.release_buffers(4096);
  ASSERT_TRUE(parse_message(p, "GET /next HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n"));
  EXPECT_EQ(p.head().target, "/next");
  EXPECT_EQ(p.head().headers.get("X-A").value_or(""), "1");
  // Mid-message: the head being parsed survives.
  std::string_view half = "GET /half HTTP/1.1\r\nHost: h\r\n";
  auto r = p.parse(half);
  EXPECT_EQ(r.event, goro::http::detail::ParseEvent::kNeedMore);
  p.release_buffers(0);
  half.remove_prefix(r.consumed);
  ASSERT_TRUE(parse_message(p, std::string(half) + "X-B: 2\r\n\r\n"));
  EXPECT_EQ(p.head().target, "/half");
  EXPECT_EQ(p.head().headers.get("X-B").value_or(""), "2");
}
