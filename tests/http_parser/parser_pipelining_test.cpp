// Pipelining: several requests in one buffer come out one at a time, in order,
// with no byte lost or shared between them, however the reads are cut.
#include <gtest/gtest.h>

#include <string>

#include "parser_driver.hpp"

namespace goro::http::detail::testing {
namespace {

const std::string kThreeRequests =
    "GET /first HTTP/1.1\r\nHost: h\r\n\r\n"
    "POST /second HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n\r\npayload"
    "PUT /third HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    "3\r\nabc\r\n2\r\nde\r\n0\r\nX-T: t\r\n\r\n";

TEST(ParserPipelining, ThreeRequestsInOneBufferComeOutInOrder) {
  Transcript t = drive_whole(kThreeRequests);
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  ASSERT_EQ(t.messages.size(), 3u);
  EXPECT_EQ(t.messages[0].target, "/first");
  EXPECT_EQ(t.messages[0].body, "");
  EXPECT_EQ(t.messages[1].target, "/second");
  EXPECT_EQ(t.messages[1].body, "payload");
  EXPECT_EQ(t.messages[2].target, "/third");
  EXPECT_EQ(t.messages[2].body, "abcde");
  Fields trailers{{"X-T", "t"}};
  EXPECT_EQ(t.messages[2].trailers, trailers);
  for (const Message& m : t.messages)
    EXPECT_TRUE(m.ended);
  EXPECT_TRUE(t.unread.empty());
}

TEST(ParserPipelining, SameTranscriptAtEverySplit) {
  Transcript whole = drive_whole(kThreeRequests);
  ASSERT_EQ(whole.error_status, 0) << whole.error_reason;
  for (std::size_t cut = 1; cut < kThreeRequests.size(); ++cut) {
    EXPECT_EQ(drive(kThreeRequests, {cut}), whole) << "cut at " << cut;
  }
  EXPECT_EQ(drive_bytewise(kThreeRequests), whole);
}

TEST(ParserPipelining, SameTranscriptAtEveryPairOfSplits) {
  Transcript whole = drive_whole(kThreeRequests);
  // Every (i, j) pair of cut points, stepping j to keep the run short.
  for (std::size_t i = 1; i < kThreeRequests.size(); ++i) {
    for (std::size_t j = i + 1; j < kThreeRequests.size(); j += 7) {
      ASSERT_EQ(drive(kThreeRequests, {i, j}), whole) << "cuts at " << i << ", " << j;
    }
  }
}

TEST(ParserPipelining, HeadIsReportedBeforeNextRequestIsTouched) {
  RequestParser p;
  ParseResult first = p.parse(kThreeRequests);
  ASSERT_EQ(first.event, ParseEvent::kHead);
  EXPECT_EQ(p.head().target, "/first");
  // The caller may run a handler now; the next request's bytes are untouched.
  std::string_view rest = std::string_view(kThreeRequests).substr(first.consumed);
  EXPECT_TRUE(rest.starts_with("POST /second"));
  ParseResult end = p.parse(rest);
  EXPECT_EQ(end.event, ParseEvent::kMessageEnd);
  EXPECT_EQ(end.consumed, 0u);
  ParseResult second = p.parse(rest);
  ASSERT_EQ(second.event, ParseEvent::kHead);
  EXPECT_EQ(p.head().target, "/second");
}

TEST(ParserPipelining, ErrorInSecondRequestKeepsFirstIntact) {
  std::string wire =
      "GET /ok HTTP/1.1\r\nHost: h\r\n\r\n"
      "GET /bad HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n";
  Transcript t = drive_whole(wire);
  ASSERT_EQ(t.messages.size(), 1u);
  EXPECT_TRUE(t.messages[0].ended);
  EXPECT_EQ(t.error_status, 400);
  EXPECT_EQ(t.error_reason, "too many Host headers");
}

TEST(ParserPipelining, Http10KeepAliveAllowsASecondRequest) {
  Transcript t = drive_whole(
      "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
      "GET /b HTTP/1.0\r\n\r\nGET /never HTTP/1.0\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  ASSERT_EQ(t.messages.size(), 2u);
  EXPECT_EQ(t.messages[1].target, "/b");
  EXPECT_FALSE(t.messages[1].keep_alive);
  EXPECT_EQ(t.unread, "GET /never HTTP/1.0\r\n\r\n");
}

}  // namespace
}  // namespace goro::http::detail::testing
