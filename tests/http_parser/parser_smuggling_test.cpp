// Every bad-input shape from docs/DESIGN.md "What goro adds to llhttp", each with
// the exact status goro answers. Each case is also fed at every split point:
// the verdict must not depend on how TCP cut the bytes.
#include <gtest/gtest.h>

#include <string>

#include "parser_driver.hpp"

namespace goro::http::detail::testing {
namespace {

struct BadCase {
  const char* name;
  std::string wire;
  int status;
  const char* reason = nullptr;  // checked when set (Go's wording)
};

const std::string kPost = "POST / HTTP/1.1\r\nHost: h\r\n";
const std::string kChunked = kPost + "Transfer-Encoding: chunked\r\n\r\n";
const std::string kNul(1, '\0');

class ParserRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ParserRejects, WithExactStatus) {
  const BadCase& c = GetParam();
  Transcript t = drive_whole(c.wire);
  EXPECT_EQ(t.error_status, c.status) << "reason: " << t.error_reason;
  if (c.reason != nullptr) {
    EXPECT_EQ(t.error_reason, c.reason);
  }
  for (std::size_t cut = 1; cut < c.wire.size(); ++cut) {
    Transcript split = drive(c.wire, {cut});
    ASSERT_EQ(split.error_status, c.status) << "cut at " << cut << ": " << split.error_reason;
  }
  EXPECT_EQ(drive_bytewise(c.wire).error_status, c.status);
}

std::string case_name(const ::testing::TestParamInfo<BadCase>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(
    ContentLengthAndTransferEncoding, ParserRejects,
    ::testing::Values(
        BadCase{"TeThenCl",
                kPost + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400},
        BadCase{"ClThenTe",
                kPost + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        BadCase{"DuplicateIdenticalCl",
                kPost + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400},
        BadCase{"DuplicateDifferingCl",
                kPost + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400},
        BadCase{"ClList", kPost + "Content-Length: 5, 5\r\n\r\nhello", 400},
        BadCase{"ClPlusSign", kPost + "Content-Length: +5\r\n\r\nhello", 400},
        BadCase{"ClNegative", kPost + "Content-Length: -1\r\n\r\n", 400},
        BadCase{"ClHex", kPost + "Content-Length: 0x5\r\n\r\nhello", 400},
        BadCase{"ClInnerSpace", kPost + "Content-Length: 1 2\r\n\r\nhello world.", 400},
        BadCase{"ClEmpty", kPost + "Content-Length: \r\n\r\n", 400},
        BadCase{"ClOverflow", kPost + "Content-Length: 99999999999999999999999\r\n\r\n", 400},
        BadCase{"TeGzip", kPost + "Transfer-Encoding: gzip\r\n\r\nhello", 501,
                "unsupported transfer encoding"},
        BadCase{"TeIdentity", kPost + "Transfer-Encoding: identity\r\n\r\n", 501,
                "unsupported transfer encoding"},
        BadCase{"TeGzipThenChunked", kPost + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                501, "unsupported transfer encoding"},
        BadCase{"TeChunkedThenGzip", kPost + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
                501},
        BadCase{"TeChunkedTwiceInList", kPost + "Transfer-Encoding: chunked, chunked\r\n\r\n", 501},
        BadCase{"TeTwoLines",
                kPost + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                501, "too many transfer encodings"},
        BadCase{"TeEmpty", kPost + "Transfer-Encoding: \r\n\r\n", 501},
        BadCase{"TeNotAToken", kPost + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", 501},
        BadCase{"TeGzipWithCl", kPost + "Content-Length: 5\r\nTransfer-Encoding: gzip\r\n\r\nhello",
                501},
        BadCase{"TeOnHttp10", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                400}),
    case_name);

INSTANTIATE_TEST_SUITE_P(
    LineEndingsAndFolding, ParserRejects,
    ::testing::Values(
        BadCase{"ObsFoldSpace", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400},
        BadCase{"ObsFoldTab", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\tb\r\n\r\n", 400},
        BadCase{"ObsFoldSmugglesTe",
                kPost + "Transfer-Encoding: gzip\r\n ,chunked\r\n\r\n0\r\n\r\n", 400},
        BadCase{"SpaceLedFirstHeader", "GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400},
        BadCase{"BareLfEverywhere", "GET / HTTP/1.1\nHost: h\n\n", 400},
        BadCase{"BareLfAfterRequestLine", "GET / HTTP/1.1\nHost: h\r\n\r\n", 400},
        BadCase{"BareLfAfterHeader", "GET / HTTP/1.1\r\nHost: h\nX: y\r\n\r\n", 400},
        BadCase{"BareLfEndsHead", "GET / HTTP/1.1\r\nHost: h\r\n\n", 400},
        BadCase{"BareCrInRequestLine", "GET / HTTP/1.1\rX\r\nHost: h\r\n\r\n", 400},
        BadCase{"BareCrInHeader", "GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", 400},
        BadCase{"BareCrEndsHead", "GET / HTTP/1.1\r\nHost: h\r\n\rX", 400},
        BadCase{"BareCrBeforeRequest", "\rGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400}),
    case_name);

INSTANTIATE_TEST_SUITE_P(
    HeaderBytes, ParserRejects,
    ::testing::Values(
        BadCase{"NulInValue", "GET / HTTP/1.1\r\nHost: h\r\nX: a" + kNul + "b\r\n\r\n", 400},
        BadCase{"CtlInValue",
                "GET / HTTP/1.1\r\nHost: h\r\nX: a\x01"
                "b\r\n\r\n",
                400},
        BadCase{"DelInValue",
                "GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f"
                "b\r\n\r\n",
                400},
        BadCase{"NulInName", "GET / HTTP/1.1\r\nHost: h\r\nX" + kNul + "Y: b\r\n\r\n", 400},
        BadCase{"SeparatorInName", "GET / HTTP/1.1\r\nHost: h\r\nX(y): b\r\n\r\n", 400},
        BadCase{"HighByteInName", "GET / HTTP/1.1\r\nHost: h\r\nX\xe9: b\r\n\r\n", 400},
        BadCase{"SpaceBeforeColon", "GET / HTTP/1.1\r\nHost: h\r\nX : b\r\n\r\n", 400},
        BadCase{"EmptyName", "GET / HTTP/1.1\r\nHost: h\r\n: b\r\n\r\n", 400,
                "invalid header name"},
        BadCase{"NoColon", "GET / HTTP/1.1\r\nHost: h\r\nXyz\r\n\r\n", 400}),
    case_name);

INSTANTIATE_TEST_SUITE_P(
    Host, ParserRejects,
    ::testing::Values(BadCase{"MissingOnHttp11", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", 400,
                              "missing required Host header"},
                      BadCase{"MissingWithAbsoluteForm", "GET http://h/ HTTP/1.1\r\n\r\n", 400,
                              "missing required Host header"},
                      BadCase{"SecondIdentical", "GET / HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n",
                              400, "too many Host headers"},
                      BadCase{"SecondDiffering", "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n",
                              400, "too many Host headers"},
                      BadCase{"SpaceInside", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400,
                              "malformed Host header"},
                      BadCase{"SlashInside", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400,
                              "malformed Host header"}),
    case_name);

INSTANTIATE_TEST_SUITE_P(
    RequestLineAndTargets, ParserRejects,
    ::testing::Values(
        BadCase{"Http09Explicit", "GET / HTTP/0.9\r\nHost: h\r\n\r\n", 505,
                "unsupported protocol version"},
        BadCase{"Http09Simple", "GET /\r\nHost: h\r\n\r\n", 400, "malformed HTTP request"},
        BadCase{"Http20", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
        BadCase{"Http2Preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
        BadCase{"Http12", "GET / HTTP/1.2\r\nHost: h\r\n\r\n", 505},
        BadCase{"Http30", "GET / HTTP/3.0\r\nHost: h\r\n\r\n", 505},
        BadCase{"VersionTrailingJunk", "GET / HTTP/1.1x\r\nHost: h\r\n\r\n", 400,
                "malformed HTTP version"},
        BadCase{"VersionTwoDigits", "GET / HTTP/11.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"VersionLowercase", "GET / http/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"DoubleSpace", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"TrailingSpace", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400},
        BadCase{"UnknownMethod", "FOO / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"ControlByteInTarget",
                "GET /a\x01"
                "b HTTP/1.1\r\nHost: h\r\n\r\n",
                400},
        BadCase{"AsteriskWithGet", "GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400,
                "invalid request target"},
        BadCase{"AuthorityFormWithGet", "GET h:80 HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"AbsoluteFormOtherScheme", "GET ftp://h/x HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"AbsoluteFormUserinfo", "GET http://u@h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"AbsoluteFormEmptyAuthority", "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"ConnectOriginForm", "CONNECT /x HTTP/1.1\r\nHost: h:1\r\n\r\n", 400},
        BadCase{"ConnectNoPort", "CONNECT h HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"ConnectAsterisk", "CONNECT * HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"ConnectWithBody", "CONNECT h:443 HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", 400,
                "CONNECT request with a body"}),
    case_name);

INSTANTIATE_TEST_SUITE_P(
    ChunkedFraming, ParserRejects,
    ::testing::Values(
        BadCase{"SizeHexPrefix", kChunked + "0x5\r\nhello\r\n0\r\n\r\n", 400},
        BadCase{"SizeNegative", kChunked + "-5\r\nhello\r\n0\r\n\r\n", 400},
        BadCase{"SizeTrailingSpace", kChunked + "5 \r\nhello\r\n0\r\n\r\n", 400},
        BadCase{"SizeEmpty", kChunked + "\r\nhello\r\n0\r\n\r\n", 400},
        BadCase{"SizeOverflow", kChunked + "fffffffffffffffff\r\nhello\r\n0\r\n\r\n", 400},
        BadCase{"SizeBareLf", kChunked + "5\nhello\r\n0\r\n\r\n", 400},
        BadCase{"SizeBareCr", kChunked + "5\rhello\r\n0\r\n\r\n", 400},
        BadCase{"DataTooLong", kChunked + "5\r\nhelloXX\r\n0\r\n\r\n", 400},
        BadCase{"DataBareLf", kChunked + "5\r\nhello\n0\r\n\r\n", 400},
        BadCase{"LastChunkBareLf", kChunked + "5\r\nhello\r\n0\n\r\n", 400},
        BadCase{"ExtensionControlByte", kChunked + "5;a=\x01\r\nhello\r\n0\r\n\r\n", 400},
        BadCase{"TrailerBareLf", kChunked + "0\r\nX: 1\r\n\n", 400},
        BadCase{"TrailersEndBareLf", kChunked + "0\r\n\n", 400},
        BadCase{"TrailerObsFold", kChunked + "0\r\nX: 1\r\n 2\r\n\r\n", 400},
        BadCase{"TrailerEmptyName", kChunked + "0\r\n: v\r\n\r\n", 400, "invalid trailer name"},
        BadCase{"TrailerNulInValue", kChunked + "0\r\nX: a" + kNul + "\r\n\r\n", 400},
        // Fields that frame or route a message are refused as trailers.
        BadCase{"TrailerContentLength", kChunked + "1\r\na\r\n0\r\nContent-Length: 5\r\n\r\n", 400,
                "header field not allowed in trailers"},
        BadCase{"TrailerTransferEncoding", kChunked + "0\r\nTransfer-Encoding: chunked\r\n\r\n",
                400, "header field not allowed in trailers"},
        BadCase{"TrailerHost", kChunked + "0\r\nX-Ok: 1\r\nhOsT: evil\r\n\r\n", 400,
                "header field not allowed in trailers"},
        BadCase{"TrailerTrailer", kChunked + "0\r\nTrailer: X\r\n\r\n", 400},
        // llhttp would apply these to the connection (a later pipelined
        // request refused while the head said keep-alive).
        BadCase{"TrailerConnection",
                kChunked + "0\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400,
                "header field not allowed in trailers"},
        BadCase{"TrailerUpgrade", kChunked + "0\r\nUpgrade: websocket\r\n\r\n", 400,
                "header field not allowed in trailers"}),
    case_name);

}  // namespace
}  // namespace goro::http::detail::testing
