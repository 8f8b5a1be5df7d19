// Well-formed requests: what the head reports, body framing, trailers,
// Expect, keep-alive rules for 1.0 and 1.1, upgrades.
#include <gtest/gtest.h>

#include <string>

#include "parser_driver.hpp"

namespace goro::http::detail::testing {
namespace {

TEST(ParserHead, ReportsRequestLineAndHeadersInOrder) {
  Transcript t = drive_whole(
      "GET /a/b?c=d HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n"
      "X-Multi: 1\r\nx-multi: 2\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  ASSERT_EQ(t.messages.size(), 1u);
  const Message& m = t.messages[0];
  EXPECT_EQ(m.method, "GET");
  EXPECT_EQ(m.target, "/a/b?c=d");
  EXPECT_EQ(m.target_form, TargetForm::kOrigin);
  EXPECT_EQ(m.version_major, 1);
  EXPECT_EQ(m.version_minor, 1);
  EXPECT_EQ(m.host, "example.com");
  Fields expected{{"Host", "example.com"}, {"Accept", "*/*"}, {"X-Multi", "1"}, {"x-multi", "2"}};
  EXPECT_EQ(m.headers, expected);
  EXPECT_EQ(m.framing, BodyFraming::kNone);
  EXPECT_TRUE(m.keep_alive);
  EXPECT_TRUE(m.ended);
  EXPECT_TRUE(t.unread.empty());
}

TEST(ParserHead, HeaderListIsCaseInsensitiveAndMultiValued) {
  RequestParser p;
  std::string wire =
      "GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2\r\nCONNECTION: Keep-Alive\r\n\r\n";
  ParseResult r = p.parse(wire);
  ASSERT_EQ(r.event, ParseEvent::kHead);
  const HeaderList& h = p.head().headers;
  EXPECT_EQ(h.count("x-A"), 2u);
  EXPECT_EQ(h.get("X-a").value_or("<absent>"), "1");
  EXPECT_TRUE(h.has_token("connection", "keep-alive"));
  EXPECT_FALSE(h.get("Missing").has_value());
}

TEST(ParserHead, TrimsOptionalWhitespaceAroundValues) {
  Transcript t = drive_whole("GET / HTTP/1.1\r\nHost:\t h \t\r\nX-Empty:\r\nX-Sp:   \r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  Fields expected{{"Host", "h"}, {"X-Empty", ""}, {"X-Sp", ""}};
  EXPECT_EQ(t.messages[0].headers, expected);
}

TEST(ParserHead, AcceptsObsTextAndTabInValues) {
  Transcript t = drive_whole("GET / HTTP/1.1\r\nHost: h\r\nX-V: caf\xc3\xa9\tx\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_EQ(t.messages[0].headers[1].second, "caf\xc3\xa9\tx");
}

TEST(ParserHead, SkipsBlankLinesBeforeRequestLine) {
  Transcript t = drive_whole("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  ASSERT_EQ(t.messages.size(), 1u);
  EXPECT_EQ(t.messages[0].target, "/");
}

TEST(ParserBody, ContentLengthBodyIsDeliveredExactly) {
  Transcript t =
      drive_whole("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  ASSERT_EQ(t.messages.size(), 1u);
  EXPECT_EQ(t.messages[0].framing, BodyFraming::kContentLength);
  EXPECT_EQ(t.messages[0].content_length, 11u);
  EXPECT_EQ(t.messages[0].body, "hello world");
  EXPECT_TRUE(t.messages[0].ended);
}

// RFC 9110 §5.6.3: OWS (space or horizontal tab) around a field value,
// Content-Length's included.
TEST(ParserBody, ContentLengthAcceptsTabsAsWhitespace) {
  for (const char* cl :
       {"Content-Length:\t5\r\n", "Content-Length: \t5\r\n", "Content-Length: 5 \r\n",
        "Content-Length: 5\t\r\n", "Content-Length:5\t \r\n"}) {
    Transcript t = drive_whole(std::string("POST / HTTP/1.1\r\nHost: h\r\n") + cl + "\r\nhello");
    ASSERT_EQ(t.error_status, 0) << cl << t.error_reason;
    ASSERT_EQ(t.messages.size(), 1u);
    EXPECT_EQ(t.messages[0].content_length, 5u);
    EXPECT_EQ(t.messages[0].body, "hello");
  }
}

TEST(ParserBody, ContentLengthZeroHasNoBody) {
  Transcript t = drive_whole("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_EQ(t.messages[0].framing, BodyFraming::kContentLength);
  EXPECT_TRUE(t.messages[0].body.empty());
  EXPECT_TRUE(t.messages[0].ended);
}

TEST(ParserBody, BodyPiecesAreViewsOfTheInput) {
  RequestParser p;
  std::string wire = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc";
  ParseResult head = p.parse(wire);
  ASSERT_EQ(head.event, ParseEvent::kHead);
  std::string_view rest = std::string_view(wire).substr(head.consumed);
  ParseResult body = p.parse(rest);
  ASSERT_EQ(body.event, ParseEvent::kBody);
  EXPECT_EQ(body.body.data(), rest.data());
  EXPECT_EQ(body.body, "abc");
  EXPECT_EQ(body.consumed, 3u);
  ParseResult end = p.parse(rest.substr(body.consumed));
  EXPECT_EQ(end.event, ParseEvent::kMessageEnd);
  EXPECT_EQ(end.consumed, 0u);
  EXPECT_TRUE(p.is_idle());
}

TEST(ParserBody, BodylessRequestEndsWithoutMoreInput) {
  RequestParser p;
  std::string wire = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
  ParseResult head = p.parse(wire);
  ASSERT_EQ(head.event, ParseEvent::kHead);
  EXPECT_EQ(head.consumed, wire.size());
  EXPECT_FALSE(p.is_idle());
  ParseResult end = p.parse({});
  EXPECT_EQ(end.event, ParseEvent::kMessageEnd);
  EXPECT_TRUE(p.is_idle());
}

const char kChunkedWithTrailers[] =
    "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    "5\r\nhello\r\n"
    "1;name=value\r\n \r\n"
    "A;quoted=\"a b\"\r\n0123456789\r\n"
    "0\r\nX-Checksum: abc\r\nX-Other:  2 \r\n\r\n";

TEST(ParserChunked, DechunksBodyAndReportsTrailers) {
  Transcript t = drive_whole(kChunkedWithTrailers);
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  ASSERT_EQ(t.messages.size(), 1u);
  const Message& m = t.messages[0];
  EXPECT_EQ(m.framing, BodyFraming::kChunked);
  EXPECT_EQ(m.body, "hello 0123456789");
  Fields trailers{{"X-Checksum", "abc"}, {"X-Other", "2"}};
  EXPECT_EQ(m.trailers, trailers);
  EXPECT_TRUE(m.ended);
  EXPECT_TRUE(t.unread.empty());
}

// The head's views stay valid through the body and the trailers, up to the
// next message: a handler (and the access log after it) reads the method
// after draining a chunked body. The trailer section once reused the head's
// buffer, and the method read "\r\n\0T" afterwards.
TEST(ParserChunked, HeadStaysReadableAfterBodyAndTrailers) {
  for (const char* trailer : {"", "X-Checksum: abc\r\n"}) {
    SCOPED_TRACE(trailer);
    RequestParser p;
    const std::string wire = std::string(
                                 "POST /upload?x=1 HTTP/1.1\r\nHost: example.com\r\n"
                                 "Transfer-Encoding: chunked\r\nX-Tag: kept\r\n\r\n"
                                 "5\r\nhello\r\n0\r\n") +
                             trailer + "\r\n";
    std::string_view in = wire;
    bool ended = false;
    while (!in.empty() && !ended) {
      ParseResult r = p.parse(in);
      ASSERT_NE(r.event, ParseEvent::kError);
      in.remove_prefix(r.consumed);
      ended = r.event == ParseEvent::kMessageEnd;
    }
    ASSERT_TRUE(ended);
    const RequestHead& h = p.head();
    EXPECT_EQ(h.method, "POST");
    EXPECT_EQ(h.target, "/upload?x=1");
    EXPECT_EQ(h.host, "example.com");
    EXPECT_EQ(h.headers.get("X-Tag").value_or(""), "kept");
  }
}

TEST(ParserChunked, TransferEncodingValueIsCaseInsensitive) {
  Transcript t = drive_whole(
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: CHUNKED\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_EQ(t.messages[0].body, "abc");
}

TEST(ParserChunked, SameTranscriptAtEverySplit) {
  std::string wire = kChunkedWithTrailers;
  Transcript whole = drive_whole(wire);
  ASSERT_EQ(whole.error_status, 0) << whole.error_reason;
  for (std::size_t cut = 1; cut < wire.size(); ++cut) {
    EXPECT_EQ(drive(wire, {cut}), whole) << "cut at " << cut;
  }
  Transcript bytewise = drive_bytewise(wire);
  EXPECT_EQ(bytewise, whole);
  // One body event per byte of data when fed a byte at a time.
  EXPECT_EQ(bytewise.body_events, whole.messages[0].body.size());
}

TEST(ParserExpect, HundredContinueOnHttp11WithBody) {
  Transcript t = drive_whole(
      "PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_EQ(t.messages[0].expect, Expectation::kContinue);
  EXPECT_TRUE(t.messages[0].should_send_continue);
}

TEST(ParserExpect, HundredContinueIsCaseInsensitive) {
  Transcript t = drive_whole(
      "PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nTransfer-Encoding: chunked\r\n\r\n"
      "0\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_EQ(t.messages[0].expect, Expectation::kContinue);
  EXPECT_TRUE(t.messages[0].should_send_continue);
}

TEST(ParserExpect, NoContinueWithoutBodyOrOnHttp10) {
  Transcript no_body =
      drive_whole("PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(no_body.error_status, 0) << no_body.error_reason;
  EXPECT_EQ(no_body.messages[0].expect, Expectation::kContinue);
  EXPECT_FALSE(no_body.messages[0].should_send_continue);

  Transcript http10 =
      drive_whole("PUT / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok");
  ASSERT_EQ(http10.error_status, 0) << http10.error_reason;
  EXPECT_FALSE(http10.messages[0].should_send_continue);
}

TEST(ParserExpect, UnknownExpectationIsReportedForA417) {
  RequestParser p;
  ParseResult r = p.parse("GET / HTTP/1.1\r\nHost: h\r\nExpect: something-else\r\n\r\n");
  ASSERT_EQ(r.event, ParseEvent::kHead);
  EXPECT_EQ(p.head().expect, Expectation::kOther);
  EXPECT_EQ(p.head().expect_value, "something-else");
}

struct KeepAliveCase {
  const char* name;
  const char* wire;
  bool keep_alive;
};

class ParserKeepAlive : public ::testing::TestWithParam<KeepAliveCase> {};

TEST_P(ParserKeepAlive, FollowsGoRules) {
  Transcript t = drive_whole(GetParam().wire);
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  ASSERT_EQ(t.messages.size(), 1u);
  EXPECT_EQ(t.messages[0].keep_alive, GetParam().keep_alive);
}

INSTANTIATE_TEST_SUITE_P(
    Rules, ParserKeepAlive,
    ::testing::Values(
        KeepAliveCase{"Http11Default", "GET / HTTP/1.1\r\nHost: h\r\n\r\n", true},
        KeepAliveCase{"Http11Close", "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
                      false},
        KeepAliveCase{"Http11CloseInList",
                      "GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Close\r\n\r\n", false},
        KeepAliveCase{"Http10Default", "GET / HTTP/1.0\r\n\r\n", false},
        KeepAliveCase{"Http10KeepAlive", "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true},
        KeepAliveCase{"Http10KeepAliveAndClose",
                      "GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
                      false},
        // llhttp reads these as "close"; goro closes whenever llhttp would
        // (LlhttpVerdict::keep_alive), else it answered keep-alive and then
        // refused the next request with 400.
        KeepAliveCase{"ProxyConnectionCloseAsLlhttp",
                      "GET / HTTP/1.1\r\nHost: h\r\nProxy-Connection: close\r\n\r\n", false},
        KeepAliveCase{"Http10TabBeforeCommaAsLlhttp",
                      "GET / HTTP/1.0\r\nConnection: keep-alive\t,x\r\n\r\n", false}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ParserKeepAliveStop, NothingIsReadAfterConnectionClose) {
  RequestParser p;
  std::string wire =
      "GET /1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n";
  ParseResult head = p.parse(wire);
  ASSERT_EQ(head.event, ParseEvent::kHead);
  std::string_view rest = std::string_view(wire).substr(head.consumed);
  ParseResult end = p.parse(rest);
  ASSERT_EQ(end.event, ParseEvent::kMessageEnd);
  EXPECT_FALSE(p.head().keep_alive);
  EXPECT_FALSE(p.is_idle());
  ParseResult after = p.parse(rest);
  EXPECT_EQ(after.event, ParseEvent::kError);
  EXPECT_EQ(after.consumed, 0u);
  EXPECT_EQ(p.error().status, 400);
}

TEST(ParserUpgrade, WebSocketUpgradeIsReportedAndLeftoverKept) {
  std::string wire =
      "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
      "\x81\x05hello";
  DriveOptions switching;
  switching.stop_at_upgrade = true;
  Transcript t = drive_whole(wire, switching);
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  ASSERT_EQ(t.messages.size(), 1u);
  EXPECT_TRUE(t.messages[0].upgrade);
  EXPECT_EQ(t.messages[0].upgrade_protocol, "websocket");
  EXPECT_EQ(t.unread, "\x81\x05hello");
  for (std::size_t cut = 1; cut < wire.size(); ++cut) {
    EXPECT_EQ(drive(wire, {cut}, switching), t) << "cut at " << cut;
  }
}

TEST(ParserUpgrade, UpgradeWithBodyDeliversBodyThenContinues) {
  std::string wire =
      "POST /up HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: x\r\n"
      "Content-Length: 3\r\n\r\nabcGET /next HTTP/1.1\r\nHost: h\r\n\r\n";
  Transcript t = drive_whole(wire);
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  ASSERT_EQ(t.messages.size(), 2u);
  EXPECT_TRUE(t.messages[0].upgrade);
  EXPECT_EQ(t.messages[0].body, "abc");
  EXPECT_EQ(t.messages[1].target, "/next");
  for (std::size_t cut = 1; cut < wire.size(); ++cut) {
    EXPECT_EQ(drive(wire, {cut}), t) << "cut at " << cut;
  }
}

TEST(ParserUpgrade, UpgradeHeaderWithoutConnectionTokenIsNotAnUpgrade) {
  Transcript t = drive_whole("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_FALSE(t.messages[0].upgrade);
  EXPECT_EQ(t.messages[0].upgrade_protocol, "h2c");
}

TEST(ParserUpgrade, IgnoredUpgradeKeepsParsingHttp) {
  Transcript t = drive_whole(
      "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"
      "GET /next HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  ASSERT_EQ(t.messages.size(), 2u);
  EXPECT_TRUE(t.messages[0].upgrade);
  EXPECT_EQ(t.messages[1].target, "/next");
  EXPECT_FALSE(t.messages[1].upgrade);
}

TEST(ParserTargets, AbsoluteFormTakesHostFromTarget) {
  Transcript t = drive_whole("GET http://Example.com:8080/p?q HTTP/1.1\r\nHost: other\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_EQ(t.messages[0].target_form, TargetForm::kAbsolute);
  EXPECT_EQ(t.messages[0].host, "Example.com:8080");
}

TEST(ParserTargets, OptionsAsterisk) {
  Transcript t = drive_whole("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_EQ(t.messages[0].target_form, TargetForm::kAsterisk);
  EXPECT_EQ(t.messages[0].target, "*");
}

TEST(ParserTargets, ConnectAuthorityFormIsAnUpgrade) {
  DriveOptions switching;
  switching.stop_at_upgrade = true;
  Transcript t = drive_whole("CONNECT example.com:443 HTTP/1.1\r\n\r\nTUNNEL", switching);
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_EQ(t.messages[0].target_form, TargetForm::kAuthority);
  EXPECT_EQ(t.messages[0].host, "example.com:443");
  EXPECT_TRUE(t.messages[0].upgrade);
  EXPECT_EQ(t.unread, "TUNNEL");
}

TEST(ParserHttp10, NoHostRequired) {
  Transcript t = drive_whole("GET / HTTP/1.0\r\n\r\n");
  ASSERT_EQ(t.error_status, 0) << t.error_reason;
  EXPECT_EQ(t.messages[0].version_minor, 0);
  EXPECT_TRUE(t.messages[0].host.empty());
}

TEST(ParserReset, ReusableForANewConnectionAfterAnError) {
  RequestParser p;
  EXPECT_EQ(p.parse("BAD\n").event, ParseEvent::kError);
  EXPECT_EQ(p.parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n").event, ParseEvent::kError);
  p.reset();
  EXPECT_TRUE(p.is_idle());
  ParseResult r = p.parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(r.event, ParseEvent::kHead);
  EXPECT_EQ(p.head().target, "/");
}

}  // namespace
}  // namespace goro::http::detail::testing
