#include "framework/http/parser/head_rules.hpp"

#include "framework/http/parser/header_list.hpp"
#include "framework/http/parser/request_line.hpp"

namespace goro::http::detail {

namespace {

constexpr ParseError kInvalidHeaderName{400, "invalid header name"};
constexpr ParseError kTooManyHosts{400, "too many Host headers"};
constexpr ParseError kMissingHost{400, "missing required Host header"};
constexpr ParseError kMalformedHost{400, "malformed Host header"};
// Go's unsupportedTEError texts; the offending value is never echoed (XSS).
constexpr ParseError kTooManyTE{501, "too many transfer encodings"};
constexpr ParseError kUnsupportedTE{501, "unsupported transfer encoding"};
constexpr ParseError kTransferEncodingHttp10{400, "Transfer-Encoding in an HTTP/1.0 request"};
constexpr ParseError kConnectWithBody{400, "CONNECT request with a body"};
constexpr ParseError kBodyTooLarge{413, "request body too large"};

// One length switch and at most one comparison per line.
FieldKind classify(std::string_view name) noexcept {
  switch (name.size()) {
    case 4:
      return equal_fold(name, "Host") ? FieldKind::kHost : FieldKind::kOther;
    case 6:
      return equal_fold(name, "Expect") ? FieldKind::kExpect : FieldKind::kOther;
    case 7:
      return equal_fold(name, "Upgrade") ? FieldKind::kUpgrade : FieldKind::kOther;
    case 10:
      return equal_fold(name, "Connection") ? FieldKind::kConnection : FieldKind::kOther;
    case 17:
      return equal_fold(name, "Transfer-Encoding") ? FieldKind::kTransferEncoding
                                                   : FieldKind::kOther;
    default:
      return FieldKind::kOther;
  }
}

}  // namespace

std::optional<ParseError> check_field_name(const RequestHead& head, std::string_view name,
                                           FieldTally& tally) {
  // llhttp 8.1 accepts ": value"; a field name is a non-empty token.
  if (name.empty()) return kInvalidHeaderName;
  tally.current = classify(name);
  if (tally.current == FieldKind::kHost) {
    // Go refuses a second Host line even when identical (request.go).
    if (++tally.host_lines > 1) return kTooManyHosts;
  } else if (tally.current == FieldKind::kTransferEncoding) {
    // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
    // framing (Go ignores the header instead, which a front proxy may not).
    if (!head.is_http11()) return kTransferEncodingHttp10;
    if (++tally.transfer_encoding_lines > 1) return kTooManyTE;
  }
  return std::nullopt;
}

std::optional<ParseError> check_field(const RequestHead&, HeaderField field, FieldTally& tally) {
  switch (tally.current) {
    case FieldKind::kHost:
      if (!is_valid_host(field.value)) return kMalformedHost;
      tally.host = field.value;
      break;
    case FieldKind::kTransferEncoding:
      // Go accepts exactly one Transfer-Encoding line whose value is
      // "chunked"; llhttp accepts "gzip, chunked" and an empty value.
      if (!equal_fold(field.value, "chunked")) return kUnsupportedTE;
      break;
    case FieldKind::kConnection:
      tally.connection_close = tally.connection_close || list_has_token(field.value, "close");
      tally.connection_keep_alive =
          tally.connection_keep_alive || list_has_token(field.value, "keep-alive");
      break;
    case FieldKind::kExpect:
      if (!tally.expect) tally.expect = field.value;
      break;
    case FieldKind::kUpgrade:
      if (!tally.upgrade) tally.upgrade = field.value;
      break;
    case FieldKind::kOther:
      break;
  }
  tally.current = FieldKind::kOther;
  return std::nullopt;
}

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
