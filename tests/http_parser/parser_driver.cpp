#include "parser_driver.hpp"

namespace goro::http::detail::testing {

namespace {

Fields copy_fields(const HeaderList& list) {
  Fields out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    out.emplace_back(std::string(list[i].name), std::string(list[i].value));
  }
  return out;
}

Message copy_head(const RequestHead& h) {
  Message m;
  m.method = h.method;
  m.target = h.target;
  m.target_form = h.target_form;
  m.version_major = h.version_major;
  m.version_minor = h.version_minor;
  m.host = h.host;
  m.headers = copy_fields(h.headers);
  m.framing = h.framing;
  m.content_length = h.content_length;
  m.keep_alive = h.keep_alive;
  m.expect = h.expect;
  m.should_send_continue = h.should_send_continue();
  m.upgrade = h.upgrade;
  m.upgrade_protocol = h.upgrade_protocol;
  return m;
}

}  // namespace

Transcript drive(std::string_view wire, const std::vector<std::size_t>& cuts,
                 const DriveOptions& options) {
  RequestParser parser(options.limits, options.head_path);
  Transcript t;
  std::string buffer;  // the loop's read buffer: bytes read, not yet taken
  std::size_t next_piece = 0;
  bool stopped = false;
  // Each event consumes bytes or ends a message, so the loop is bounded by
  // twice the wire size plus the message count; the cap only guards a bug.
  std::size_t budget = 4 * wire.size() + 64;

  for (std::size_t piece = 0; piece <= cuts.size() && !stopped; ++piece) {
    std::size_t end = piece < cuts.size() ? cuts[piece] : wire.size();
    buffer.append(wire.substr(next_piece, end - next_piece));
    next_piece = end;
    for (;;) {
      if (budget-- == 0) {
        t.error_status = -1;
        t.error_reason = "driver: parser made no progress";
        return t;
      }
      ParseResult r = parser.parse(buffer);
      // Copy the body before the bytes under it are dropped.
      if (r.event == ParseEvent::kBody) {
        t.messages.back().body.append(r.body);
        ++t.body_events;
      }
      buffer.erase(0, r.consumed);
      if (r.event == ParseEvent::kNeedMore) break;
      if (r.event == ParseEvent::kHead) {
        t.messages.push_back(copy_head(parser.head()));
      } else if (r.event == ParseEvent::kMessageEnd) {
        t.messages.back().trailers = copy_fields(parser.trailers());
        t.messages.back().ended = true;
        const bool switching = options.stop_at_upgrade && parser.head().upgrade;
        if (!parser.head().keep_alive || switching) {
          stopped = true;
          break;
        }
      } else if (r.event == ParseEvent::kError) {
        t.error_status = parser.error().status;
        t.error_reason = parser.error().reason;
        stopped = true;
        break;
      }
    }
  }
  t.unread = buffer + std::string(wire.substr(next_piece));
  return t;
}

Transcript drive_bytewise(std::string_view wire, const DriveOptions& options) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i < wire.size(); ++i)
    cuts.push_back(i);
  return drive(wire, cuts, options);
}

}  // namespace goro::http::detail::testing
