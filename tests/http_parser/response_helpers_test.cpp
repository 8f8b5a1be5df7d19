// The pure pieces a response writer needs: Date, reason phrases, canonical
// header names, chunked framing (checked by parsing it back).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "framework/http/parser/header_key.hpp"
#include "framework/http/parser/http_date.hpp"
#include "framework/http/parser/parser.hpp"
#include "framework/http/parser/status_text.hpp"
#include "framework/http/server/chunked_encoder.hpp"

namespace goro::http::detail {
namespace {

using std::chrono::sys_days;
using namespace std::chrono_literals;

std::chrono::system_clock::time_point at(std::chrono::year_month_day day,
                                         std::chrono::seconds since_midnight) {
  return sys_days{day} + since_midnight;
}

TEST(HttpDate, MatchesRfcExample) {
  using std::chrono::November;
  auto t = at(std::chrono::year{1994} / November / 6, 8h + 49min + 37s);
  EXPECT_EQ(format_http_date(t).view(), "Sun, 06 Nov 1994 08:49:37 GMT");
}

TEST(HttpDate, TruncatesSubsecondsAndPadsFields) {
  using std::chrono::January;
  auto t = at(std::chrono::year{2006} / January / 2, 15h + 4min + 5s) + 999ms;
  EXPECT_EQ(format_http_date(t).view(), "Mon, 02 Jan 2006 15:04:05 GMT");
}

TEST(HttpDate, EpochAndLeapDay) {
  EXPECT_EQ(format_http_date(std::chrono::system_clock::time_point{}).view(),
            "Thu, 01 Jan 1970 00:00:00 GMT");
  using std::chrono::February;
  auto t = at(std::chrono::year{2024} / February / 29, 23h + 59min + 59s);
  EXPECT_EQ(format_http_date(t).view(), "Thu, 29 Feb 2024 23:59:59 GMT");
}

TEST(HttpDate, AlwaysTwentyNineBytes) {
  EXPECT_EQ(format_http_date(std::chrono::system_clock::now()).view().size(), kHttpDateSize);
}

TEST(StatusText, GoSpellings) {
  EXPECT_EQ(status_text(200), "OK");
  EXPECT_EQ(status_text(100), "Continue");
  EXPECT_EQ(status_text(400), "Bad Request");
  EXPECT_EQ(status_text(404), "Not Found");
  EXPECT_EQ(status_text(405), "Method Not Allowed");
  EXPECT_EQ(status_text(413), "Request Entity Too Large");
  EXPECT_EQ(status_text(414), "Request URI Too Long");
  EXPECT_EQ(status_text(417), "Expectation Failed");
  EXPECT_EQ(status_text(431), "Request Header Fields Too Large");
  EXPECT_EQ(status_text(500), "Internal Server Error");
  EXPECT_EQ(status_text(501), "Not Implemented");
  EXPECT_EQ(status_text(505), "HTTP Version Not Supported");
  EXPECT_EQ(status_text(599), "");
  EXPECT_EQ(status_text(-1), "");
}

TEST(StatusText, EveryParserStatusHasAPhrase) {
  for (int code : {400, 413, 414, 431, 501, 505}) {
    EXPECT_FALSE(status_text(code).empty()) << code;
  }
}

TEST(CanonicalHeaderKey, MatchesGo) {
  EXPECT_EQ(canonical_header_key("content-type"), "Content-Type");
  EXPECT_EQ(canonical_header_key("CONTENT-LENGTH"), "Content-Length");
  EXPECT_EQ(canonical_header_key("x-forwarded-for"), "X-Forwarded-For");
  EXPECT_EQ(canonical_header_key("etag"), "Etag");
  EXPECT_EQ(canonical_header_key("www-authenticate"), "Www-Authenticate");
  EXPECT_EQ(canonical_header_key("a--b"), "A--B");
  EXPECT_EQ(canonical_header_key("x_y-z"), "X_y-Z");
  EXPECT_EQ(canonical_header_key("1abc-2def"), "1abc-2def");
}

TEST(CanonicalHeaderKey, NonTokensAreReturnedUnchanged) {
  EXPECT_EQ(canonical_header_key("content type"), "content type");
  EXPECT_EQ(canonical_header_key("bad:name"), "bad:name");
  EXPECT_EQ(canonical_header_key(""), "");
  std::string s = "x y";
  EXPECT_FALSE(canonicalize_header_key(s));
  EXPECT_EQ(s, "x y");
}

TEST(ChunkedEncoder, SizeLinesAreLowercaseHex) {
  EXPECT_EQ(chunk_size_line(1).view(), "1\r\n");
  EXPECT_EQ(chunk_size_line(255).view(), "ff\r\n");
  EXPECT_EQ(chunk_size_line(4096).view(), "1000\r\n");
  EXPECT_EQ(chunk_size_line(UINT64_MAX).view(), "ffffffffffffffff\r\n");
}

TEST(ChunkedEncoder, EncodedBodyParsesBackIdentically) {
  std::string wire = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string pieces[] = {"hello", "", " ", std::string(300, 'z')};
  std::string expected;
  for (const std::string& p : pieces) {
    append_chunk(wire, p);
    expected += p;
  }
  HeaderList trailers;
  trailers.add("X-Sum", "42");
  append_last_chunk(wire, &trailers);

  RequestParser parser;
  std::string_view rest = wire;
  std::string body;
  ParseResult r;
  do {
    r = parser.parse(rest);
    if (r.event == ParseEvent::kBody) body.append(r.body);
    rest.remove_prefix(r.consumed);
  } while (r.event != ParseEvent::kMessageEnd && r.event != ParseEvent::kError);
  ASSERT_EQ(r.event, ParseEvent::kMessageEnd) << parser.error().reason;
  EXPECT_EQ(body, expected);
  EXPECT_EQ(parser.trailers().get("x-sum").value(), "42");
  EXPECT_TRUE(rest.empty());
}

TEST(ChunkedEncoder, LastChunkWithoutTrailers) {
  std::string out;
  append_last_chunk(out);
  EXPECT_EQ(out, kLastChunk);
}

}  // namespace
}  // namespace goro::http::detail
