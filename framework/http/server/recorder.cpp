// goro::http::test (goro/http/test.hpp): the connection loop's per-request
// steps (parse, serve_one, reset) run on an Exchange with no connection, its
// output recorded, then read back as a client would.
#include "goro/http/test.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "framework/http/parser/header_key.hpp"
#include "framework/http/server/exchange.hpp"

namespace goro::http::test {

namespace {

std::string serialize(const RequestSpec& r) {
  std::string out = fmt::format("{} {} HTTP/1.1\r\n", r.method, r.target);
  if (!r.header.has("Host")) fmt::format_to(std::back_inserter(out), "Host: {}\r\n", r.host);
  for (const Header::Field& f : r.header)
    fmt::format_to(std::back_inserter(out), "{}: {}\r\n", f.name, f.value);
  if (!r.body.empty() && !r.header.has("Content-Length") && !r.header.has("Transfer-Encoding"))
    fmt::format_to(std::back_inserter(out), "Content-Length: {}\r\n", r.body.size());
  out.append("\r\n");
  out.append(r.body);
  return out;
}

// Splits off one line ending in CRLF; false if there is none.
bool take_line(std::string_view& in, std::string_view& line) {
  const std::size_t end = in.find("\r\n");
  if (end == std::string_view::npos) return false;
  line = in.substr(0, end);
  in.remove_prefix(end + 2);
  return true;
}

// Reads one response head off `in`: the status and the fields.
bool take_head(std::string_view& in, RecordedResponse& r) {
  std::string_view line;
  // "HTTP/1.1 200 OK"
  if (!take_line(in, line) || line.size() < 12) return false;
  int status = 0;
  if (std::from_chars(line.data() + 9, line.data() + 12, status).ec != std::errc{}) return false;
  r.status = status;
  r.header.clear();
  while (take_line(in, line)) {
    if (line.empty()) return true;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return false;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ')
      value.remove_prefix(1);
    r.header.add(line.substr(0, colon), value);
  }
  return false;
}

// Removes chunked coding; the input is what the server's encoder wrote.
std::string dechunk(std::string_view in) {
  std::string body;
  std::string_view line;
  while (take_line(in, line)) {
    std::size_t size = 0;
    const std::string_view digits = line.substr(0, line.find(';'));
    if (std::from_chars(digits.data(), digits.data() + digits.size(), size, 16).ec != std::errc{})
      break;
    if (size == 0) break;  // the last chunk (the server sends no trailers)
    body.append(in.substr(0, size));
    in.remove_prefix(std::min(in.size(), size + 2));
  }
  return body;
}

RecordedResponse parse_response(std::string wire, bool closes) {
  RecordedResponse r;
  std::string_view in = wire;
  // Informational responses (100 Continue) come first; the final one counts.
  do {
    if (!take_head(in, r)) {
      r.status = 0;
      break;
    }
  } while (r.status >= 100 && r.status < 200);
  if (r.status != 0) {
    r.body = detail::equal_fold(r.header.get("Transfer-Encoding"), "chunked") ? dechunk(in)
                                                                              : std::string(in);
  }
  r.close = closes;
  r.wire = std::move(wire);
  return r;
}

// `held_back` reaches the server only when it reads past `bytes`.
std::vector<RecordedResponse> serve_bytes(const Handler& handler, std::string_view bytes,
                                          std::string_view held_back, const ServerOptions& options,
                                          bool first_only) {
  detail::ServerState s;
  s.opts = options;
  s.handler = handler;
  s.limits.max_header_bytes = s.opts.max_header_bytes;
  s.limits.max_request_line = s.opts.max_request_line;
  s.limits.max_body_bytes = s.opts.max_body_bytes;

  std::vector<RecordedResponse> responses;
  std::string wire;
  detail::Exchange x(&s, &wire);
  x.rbuf.assign(bytes.begin(), bytes.end());
  x.rend = bytes.size();
  x.held_back = held_back;
  for (;;) {
    x.started = net::Clock::now();
    x.head_at = x.started;
    x.head_ticks = goro::detail::ticks();
    detail::ParseResult r = x.parser.parse(x.unread());
    x.rpos += r.consumed;
    if (r.event == detail::ParseEvent::kError) {
      detail::answer_parse_error(x);
      (void)x.flush_out();
      responses.push_back(parse_response(std::exchange(wire, {}), true));
      break;
    }
    if (r.event != detail::ParseEvent::kHead) {
      if (r.consumed > 0 && !x.unread().empty()) continue;
      break;  // an incomplete request at the end of the bytes: no answer, as on a socket
    }
    detail::serve_one(x);
    (void)x.flush_out();
    responses.push_back(parse_response(std::exchange(wire, {}), x.close_after));
    if (x.close_after || first_only) break;
    x.reset_request();
  }
  return responses;
}

}  // namespace

RecordedResponse serve(const Handler& handler, const RequestSpec& request,
                       const ServerOptions& options) {
  const std::string bytes = serialize(request);
  // A client that asks "Expect: 100-continue" sends its body after the
  // server's invitation, which goes out at the handler's first body read.
  std::string_view head = bytes;
  std::string_view held_back;
  if (detail::equal_fold(request.header.get("Expect"), "100-continue")) {
    const std::size_t end = bytes.find("\r\n\r\n") + 4;
    head = head.substr(0, end);
    held_back = std::string_view(bytes).substr(end);
  }
  std::vector<RecordedResponse> rs = serve_bytes(handler, head, held_back, options, true);
  if (rs.empty()) return {};
  return std::move(rs.front());
}

std::vector<RecordedResponse> serve_raw(const Handler& handler, std::string_view bytes,
                                        const ServerOptions& options) {
  return serve_bytes(handler, bytes, {}, options, false);
}

}  // namespace goro::http::test
