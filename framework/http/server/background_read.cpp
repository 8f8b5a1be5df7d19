// The background read's mechanism; the protocol and its race-freedom
// argument are in background_read.hpp.
#include "framework/http/server/background_read.hpp"

#include <exception>
#include <span>

#include "framework/http/server/exchange.hpp"
#include "goro/detail/check.hpp"
#include "goro/runtime.hpp"

namespace goro::http::detail {

namespace {

// A read deadline long past: wakes a parked read at once (net::Conn: "a time
// in the past expires at once"); Clock::time_point{} would clear instead.
constexpr net::Clock::time_point kLongAgo{net::Clock::duration(1)};

void watch(net::Conn* conn, tls::Conn* tc, std::span<char> tail, const CancelFunc& cancel,
           BackgroundRead* bg) {
  // Over TLS the watcher reads through the TLS layer: bytes of a pipelined
  // request are decrypted into the tail like plain ones, a close_notify or
  // a FIN reads as the end (the handler's writes meanwhile share the SSL
  // object safely: framework/tls/conn.cpp, "One OpenSSL call at a time").
  Result<std::size_t> n = tc != nullptr ? tc->read(tail) : conn->read(tail);
  if (n && *n > 0) {
    bg->bytes = *n;  // the next request's first bytes: keep them
  } else if (n || n.error() != goro::errc::timeout) {
    cancel();  // FIN, RST or a forced close: nobody is waiting for the answer
  }
  bg->running.done();  // last touch of *bg: stop may return and reuse it
}

}  // namespace

void maybe_start_background_read(Exchange& x) {
  BackgroundRead& bg = x.bg;
  if (bg.active || !x.in_handler || !x.ctx) return;
  if (!body_finished_without_io(x)) return;
  if (x.conn == nullptr) return;  // in-process: no client to watch
  x.reserve_tail();
  x.set_read_deadline(net::Clock::time_point{});
  bg.active = true;
  bg.bytes = 0;
  bg.running.add(1);
  std::span<char> tail(x.rbuf.data() + x.rend, x.rbuf.size() - x.rend);
  try {
    goro::go([conn = x.conn, tc = x.tls, tail, cancel = x.ctx_cancel, bgp = &bg] {
      watch(conn, tc, tail, cancel, bgp);
    });
  } catch (const std::exception&) {
    // No memory for the watcher's stack. Watching is a courtesy: the context
    // still ends with its deadline or the server's shutdown; only a gone
    // client is not noticed. Undo, so stop finds nothing to wait for.
    bg.running.done();
    bg.active = false;
  }
}

void stop_background_read(Exchange& x) {
  BackgroundRead& bg = x.bg;
  if (!bg.active) return;
  x.set_read_deadline(kLongAgo);
  bg.running.wait();
  GORO_CHECK(bg.bytes <= x.rbuf.size() - x.rend, "http: background read overran rbuf");
  x.rend += bg.bytes;
  bg.bytes = 0;
  x.set_read_deadline(net::Clock::time_point{});
  bg.active = false;
}

}  // namespace goro::http::detail
