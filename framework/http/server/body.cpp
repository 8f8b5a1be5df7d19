// The request body as a reader: pulls de-chunked bytes out of the parser,
// reading the socket only when the parser needs more (parser.hpp's protocol).
#include <algorithm>
#include <cstring>

#include "framework/http/server/exchange.hpp"
#include "goro/detail/check.hpp"
#include "goro/http/request.hpp"
#include "goro/runtime.hpp"

namespace goro::http {

namespace {

using detail::BodyState;
using detail::Exchange;
using detail::ParseEvent;

// Fills x.pending with the next body bytes, or ends the body. False when the
// body is over (kDone) or failed (kError).
bool next_body_chunk(Exchange& x) {
  while (x.pending.empty()) {
    if (x.body_state != BodyState::kReading) return false;
    detail::ParseResult r = x.parser.parse(x.unread());
    x.rpos += r.consumed;
    switch (r.event) {
      case ParseEvent::kBody:
        x.pending = r.body;
        x.body_bytes += r.body.size();
        break;
      case ParseEvent::kMessageEnd:
        x.body_state = BodyState::kDone;
        // A handler that asked for its context before reading the body
        // starts watching for the client's departure now (the check for a
        // context inline: nearly every request has none).
        if (x.ctx) detail::maybe_start_background_read(x);
        return false;
      case ParseEvent::kError: {
        const int status = x.parser.error().status;
        x.body_state = BodyState::kError;
        x.body_error_status = status;
        x.body_error = status == 413 ? errc::body_too_large : errc::bad_request;
        x.close_after = true;
        return false;
      }
      case ParseEvent::kHead:  // cannot happen inside a message
      case ParseEvent::kNeedMore: {
        // Go's rule: "100 Continue" goes out at the first body read that
        // needs the client's bytes, and never once the response has begun.
        if (!x.continue_sent && !x.head_sent && x.head->should_send_continue()) {
          x.out.append("HTTP/1.1 100 Continue\r\n\r\n");
          x.continue_sent = true;
        }
        // A body read never waits longer than read_header_timeout for a byte,
        // nor past the body deadline (read_timeout from the head's first
        // byte, unless the handler moved it).
        const auto now = net::Clock::now();
        auto deadline = now + x.s->opts.read_header_timeout;
        if (x.body_deadline != std::chrono::steady_clock::time_point{})
          deadline = std::min(deadline, x.body_deadline);
        x.set_read_deadline(deadline);
        Result<std::size_t> n = x.read_more();
        if (!n || *n == 0) {
          x.body_state = BodyState::kError;
          x.body_error = n ? std::error_code(goro::errc::eof) : n.error();
          x.close_after = true;
          return false;
        }
        break;
      }
    }
  }
  return true;
}

Result<std::size_t> read_into(Exchange& x, char* dst, std::size_t size) {
  if (size == 0) return std::size_t{0};
  if (!next_body_chunk(x)) {
    if (x.body_state == BodyState::kError) return x.body_error;
    return std::size_t{0};
  }
  const std::size_t n = std::min(size, x.pending.size());
  std::memcpy(dst, x.pending.data(), n);
  x.pending.remove_prefix(n);
  detail::note_bytes_handled(x, n);  // a scheduling point every 256 KiB
  return n;
}

}  // namespace

Exchange* BodyReader::live() const noexcept {
  if (owner_ != nullptr && owner_->load(std::memory_order_relaxed) != detail::handler_caller())
    return nullptr;
  return x_;
}

Result<std::size_t> BodyReader::read(std::span<char> buf) {
  Exchange* x = live();
  if (x == nullptr) return make_error_code(errc::handler_returned);
  return read_into(*x, buf.data(), buf.size());
}

Result<std::size_t> BodyReader::read(std::span<std::byte> buf) {
  Exchange* x = live();
  if (x == nullptr) return make_error_code(errc::handler_returned);
  return read_into(*x, reinterpret_cast<char*>(buf.data()), buf.size());
}

Result<std::string> BodyReader::read_all() {
  Exchange* live_x = live();
  if (live_x == nullptr) return make_error_code(errc::handler_returned);
  Exchange& x = *live_x;
  std::string all;
  if (auto len = content_length()) all.reserve(static_cast<std::size_t>(*len));
  for (;;) {
    if (!next_body_chunk(x)) {
      if (x.body_state == BodyState::kError) return x.body_error;
      return all;
    }
    // In slices, each a scheduling point's worth (the in-process harness
    // hands out a whole body at once).
    const std::size_t n = std::min<std::size_t>(x.pending.size(), detail::kYieldEveryBytes);
    all.append(x.pending.substr(0, n));
    x.pending.remove_prefix(n);
    detail::note_bytes_handled(x, n);  // a scheduling point every 256 KiB
  }
}

std::optional<std::uint64_t> BodyReader::content_length() const {
  const Exchange* x = live();
  if (x == nullptr) return std::nullopt;
  if (x->head->framing == detail::BodyFraming::kContentLength) return x->head->content_length;
  if (x->head->framing == detail::BodyFraming::kNone) return std::uint64_t{0};
  return std::nullopt;
}

namespace detail {

bool body_finished_without_io(Exchange& x) {
  if (x.body_state == BodyState::kDone) return true;
  if (x.body_state != BodyState::kReading || x.head->has_body() || !x.pending.empty()) return false;
  // No body: the parser reports the message end without taking a byte.
  ParseResult r = x.parser.parse(x.unread());
  x.rpos += r.consumed;
  GORO_CHECK(r.event == ParseEvent::kMessageEnd && r.consumed == 0,
             "http: a request without a body did not end at its head");
  if (r.event != ParseEvent::kMessageEnd) return false;
  x.body_state = BodyState::kDone;
  return true;
}

bool drain_body(Exchange& x) {
  if (x.body_state == BodyState::kDone) return true;
  if (x.body_state == BodyState::kError) return false;
  // The client waits for "100 Continue" that never came: it may or may not
  // send the body, so the connection's framing is unknown. Close (Go does).
  if (x.head->should_send_continue() && !x.continue_sent) return false;
  if (x.head->framing == BodyFraming::kContentLength &&
      x.head->content_length - std::min(x.head->content_length, x.body_bytes - x.pending.size()) >
          kMaxPostHandlerDrain) {
    return false;
  }
  const std::uint64_t limit = x.body_bytes + kMaxPostHandlerDrain;
  x.pending = {};
  while (next_body_chunk(x)) {
    detail::note_bytes_handled(x, x.pending.size());
    x.pending = {};
    if (x.body_bytes > limit) return false;
  }
  return x.body_state == BodyState::kDone;
}

}  // namespace detail
}  // namespace goro::http
