#include "framework/http/parser/head_rules.hpp"

#include "framework/http/parser/header_list.hpp"
#include "framework/http/parser/request_line.hpp"

namespace goro::http::detail {

namespace {

constexpr ParseError kMissingHost{400, "missing required Host header"};
constexpr ParseError kConnectWithBody{400, "CONNECT request with a body"};
constexpr ParseError kBodyTooLarge{413, "request body too large"};

}  // namespace

namespace {

void derive_connection(RequestHead& head, const FieldTally& tally) {
  if (head.is_http11()) {
    head.keep_alive = !tally.connection_close;
  } else {
    head.keep_alive = tally.connection_keep_alive && !tally.connection_close;
  }
  if (tally.expect) {
    head.expect_value = *tally.expect;
    head.expect =
        equal_fold(*tally.expect, "100-continue") ? Expectation::kContinue : Expectation::kOther;
  }
  if (tally.upgrade) head.upgrade_protocol = *tally.upgrade;
}

}  // namespace

std::optional<ParseError> finish_head(RequestHead& head, const FieldTally& tally,
                                      const LlhttpVerdict& verdict, const HttpLimits& limits) {
  const bool is_connect = head.method == "CONNECT";
  if (tally.host_lines == 0 && head.is_http11() && !is_connect) return kMissingHost;
  // RFC 9112 §3.2.2: an absolute- or authority-form target's authority (set
  // from the request line) overrides the Host header.
  if (head.host.empty() && tally.host_lines > 0) head.host = tally.host;

  if (verdict.chunked) {
    head.framing = BodyFraming::kChunked;
  } else if (verdict.has_content_length) {
    head.framing = BodyFraming::kContentLength;
    head.content_length = verdict.content_length;
    if (verdict.content_length > limits.max_body_bytes) return kBodyTooLarge;
  }
  // llhttp reads no body for CONNECT whatever the headers say; a declared one
  // would be parsed as the next request.
  if (is_connect && head.has_body()) return kConnectWithBody;

  derive_connection(head, tally);
  // A connection goro kept open that llhttp had closed would refuse the
  // next request with a 400 after answering this one "keep-alive", and a
  // head the fast path takes (parser.cpp) would skip that refusal.
  if (!verdict.keep_alive) head.keep_alive = false;
  head.upgrade = verdict.upgrade;
  return std::nullopt;
}

}  // namespace goro::http::detail
