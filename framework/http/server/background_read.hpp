// Background read: how a request's context learns, while its handler runs,
// that the client has gone away (Go's connReader.startBackgroundRead).
//
// # The problem
// A handler that waits (a slow upstream, a long poll, /delay) should stop
// when nobody is left to answer. The only way to learn that a TCP peer has
// closed or reset is to read the socket: EOF or ECONNRESET. But the
// connection goroutine is busy inside the handler, and a read can also bring
// the next pipelined request, which must not be lost.
//
// # Protocol
// start (the connection goroutine, from inside the handler: when the handler
// first asks for Request::context() and the request body has been read to its
// end or there is none; or when the body reaches its end after the context
// was asked for):
//   1. make room at rbuf's tail (compact or grow; no view into rbuf is live
//      once the body is over: the head owns copies, `pending` is empty);
//   2. clear the read deadline (the watcher waits as long as the handler runs);
//   3. set `active`, add 1 to `running`, spawn the watcher with the tail span.
// watcher: one conn.read into the tail span.
//   - n > 0: bytes of the next request (pipelined); record n. The context is
//     not cancelled (Go since 1.11), and watching stops there, as Go's.
//   - n == 0 (FIN) or an error other than the deadline's timeout (RST,
//     errc::closed from a forced shutdown): the client is gone; cancel the
//     request's context.
//   then running.done() as its last act.
// stop (the connection goroutine, as soon as the handler returns): set a read
// deadline in the past — a parked read wakes with errc::timeout at once, a
// read not yet started fails at once (deadlines win over data in NetFd::read,
// so nothing is read and lost) — then running.wait(), append the watcher's
// bytes to the unread part of rbuf (rend += bytes), clear the deadline (the
// next read sets its own; with read_header_timeout 0 it sets none), clear
// `active`.
//
// # Why there is no data race
// The socket's read side and rbuf[rend, rbuf.size()) have exactly one owner
// at a time: the watcher between start and the end of stop's wait, the
// connection goroutine otherwise. The connection goroutine's only socket
// reads are in Exchange::read_more (head, body, drain) and linger_close; the
// first asserts !active, and none of them runs while the handler runs once
// the body is over (the body reader answers from its state without I/O after
// kMessageEnd), and linger_close runs after serve_one's stop. Writes to the
// socket (flush, sendfile) may go on meanwhile: net::Conn allows one reader
// and one writer at once. The hand-offs are ordered by the spawn (start ->
// watcher) and by the WaitGroup (watcher's stores -> stop's loads).
//
// # Rejected alternatives
// - Always watching, as Go does: a goroutine spawn and two deadline changes
//   per request for every handler. Here only handlers that ask for their
//   context pay; a context asked for later sees a close that happened earlier
//   at once (the read returns EOF immediately).
// - Reading into a private 1-byte buffer, as Go: the byte then has to be
//   spliced in front of the next request; reading straight into rbuf's tail
//   leaves it where the parser reads.
// - Watching EPOLLRDHUP readiness without reading: it tells FIN but not RST
//   apart from data, and the netpoller exposes readiness only by reading.
// - One watcher goroutine per connection, woken per request: a channel round
//   trip per request instead of a spawn, and a goroutine per idle connection.
//
// # Half-closed clients
// A client that sends its requests and then shuts down its sending side
// (shutdown(SHUT_WR)) reads as gone: its requests' contexts are cancelled,
// as in Go. Handlers that do not watch their context answer it normally.
#pragma once

#include <cstddef>

#include "goro/sync.hpp"

namespace goro::http::detail {

struct Exchange;

struct BackgroundRead {
  // Set by start and cleared by stop, both on the connection goroutine, the
  // only one that reads it. While it is set the watcher owns the socket's
  // read side and rbuf[rend, rbuf.size()) (see "Why there is no data race").
  bool active = false;
  // add(1) by start before the spawn; done() as the watcher's last act;
  // wait() by stop. Orders the watcher's stores below before stop's loads.
  WaitGroup running;
  // Written by the watcher before running.done(); read by stop after
  // running.wait(). Bytes the watcher read into rbuf at rend.
  std::size_t bytes = 0;
};

// Starts the watcher if the handler asked for its context, the body is over
// and none runs yet. Connection goroutine, inside the handler only.
void maybe_start_background_read(Exchange& x);
// Stops the watcher if one runs and keeps what it read. Connection goroutine.
void stop_background_read(Exchange& x);

}  // namespace goro::http::detail
