#include "framework/http/parser/head_rules.hpp"

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

}  // namespace

std::optional<ParseError> check_field_name(const RequestHead& head, std::string_view name,
                                           FieldTally& tally) {
  // llhttp 8.1 accepts ": value"; a field name is a non-empty token.
  if (name.empty()) return kInvalidHeaderName;
  if (equal_fold(name, "Host")) {
    // Go refuses a second Host line even when identical (request.go).
    if (++tally.host_lines > 1) return kTooManyHosts;
  } else if (equal_fold(name, "Transfer-Encoding")) {
    // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
    // framing (Go ignores the header instead, which a front proxy may not).
    if (!head.is_http11()) return kTransferEncodingHttp10;
    if (++tally.transfer_encoding_lines > 1) return kTooManyTE;
  }
  return std::nullopt;
}

std::optional<ParseError> check_field(const RequestHead&, HeaderField field) {
  if (equal_fold(field.name, "Host")) {
    if (!is_valid_host(field.value)) return kMalformedHost;
  } else if (equal_fold(field.name, "Transfer-Encoding")) {
    // Go accepts exactly one Transfer-Encoding line whose value is "chunked";
    // llhttp accepts "gzip, chunked" and an empty value.
    if (!equal_fold(field.value, "chunked")) return kUnsupportedTE;
  }
  return std::nullopt;
}

namespace {

void derive_connection(RequestHead& head) {
  const HeaderList& h = head.headers;
  if (head.is_http11()) {
    head.keep_alive = !h.has_token("Connection", "close");
  } else {
    head.keep_alive =
        h.has_token("Connection", "keep-alive") && !h.has_token("Connection", "close");
  }
  if (auto expect = h.get("Expect")) {
    head.expect_value = *expect;
    head.expect =
        equal_fold(*expect, "100-continue") ? Expectation::kContinue : Expectation::kOther;
  }
  if (auto upgrade = h.get("Upgrade")) head.upgrade_protocol = *upgrade;
}

}  // namespace

std::optional<ParseError> finish_head(RequestHead& head, const FieldTally& tally,
                                      const LlhttpVerdict& verdict, const HttpLimits& limits) {
  const bool is_connect = head.method == "CONNECT";
  if (tally.host_lines == 0 && head.is_http11() && !is_connect) return kMissingHost;
  // RFC 9112 §3.2.2: an absolute- or authority-form target's authority (set
  // from the request line) overrides the Host header.
  if (head.host.empty() && tally.host_lines > 0) head.host = *head.headers.get("Host");

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

  derive_connection(head);
  head.upgrade = verdict.upgrade;
  return std::nullopt;
}

}  // namespace goro::http::detail
