// goro::http::Server: HTTP/1.1 on goro::net, one goroutine per connection.
//
// Example:
//   goro::http::Handler handler = [](goro::http::Request&, goro::http::ResponseWriter& w) {
//     w.write("ok\n");
//   };
//   goro::http::Server srv{{.addr = "127.0.0.1:8080"}, handler};
//   auto served = srv.listen_and_serve();  // returns after a graceful shutdown
//   if (!served) std::fprintf(stderr, "%s\n", served.error().message().c_str());
//
// Protocol: keep-alive; pipelining (requests are handled one at a time and
// answered in order; responses to requests already in the buffer are
// coalesced into one write); HTTP/1.0 (close unless "Connection: keep-alive"
// and a known length); chunked request bodies and trailers; Expect:
// 100-continue (417 for other expectations); HEAD; "OPTIONS *" (200, empty);
// Date (cached per second), Content-Length or chunked framing, Server header.
// Bad requests get the parser's status ("400 Bad Request: <reason>", 413, 414,
// 431, 501, 505) with Connection: close, then the connection closes.
//
// Limits and timeouts (Go's semantics, safer defaults; all options below).
//
// Connection cap: at max_connections the server first makes room, as nginx
// does: it closes the oldest connection that has not sent a byte yet or,
// failing that, the longest-registered keep-alive connection waiting for
// its next request, and serves the new one. Only when every connection is in a request
// does it answer "503 Service Unavailable" with Retry-After: 1 and
// Connection: close, rather than leave the client hanging in the kernel's
// backlog. So silent connections cannot lock real clients out: each new
// connection displaces the oldest idle one. Evictions and refusals are
// counted in /metrics and logged at most once a second.
//
// Graceful shutdown (shutdown(), or SIGTERM/SIGINT when handle_signals):
// with a shutdown_delay (a lame duck, for load balancers that learn of a
// shutdown from a failing readiness probe: Kubernetes), is_shutting_down()
// turns true at once and the server keeps accepting and serving for the
// delay, every response with Connection: close; a second shutdown() ends the
// delay (a second signal ends everything: deadline now). Then the listener closes (new connections
// are refused), idle keep-alive connections are closed, requests in flight finish and their
// connections close after the response; when shutdown_timeout passes, the remaining connections are
// closed and the request contexts cancelled. Then listen_and_serve() returns. readyz-style handlers
// can ask is_shutting_down().
//
// HTTPS (opts.tls, or listen_and_serve_tls): each connection's TLS
// handshake runs on its goroutine under Go's deadline, the smallest positive
// of read_header_timeout, read_timeout and write_timeout from the accept;
// one that fails closes that connection only (logged at most once a second
// with a count; /metrics counts handshakes by outcome and version). A
// plaintext HTTP request on the TLS port is answered "400 Bad Request" in
// plaintext and closed, as Go does. Handlers see the TLS state in
// Request::tls(). Connections close with a close_notify. The certificate
// is reloaded by reload_tls() and, when handle_signals, on SIGHUP.
//
// Signals: the server installs SIGTERM/SIGINT handlers that write the signal
// number to a self-pipe (write(2) is async-signal-safe); a small dedicated
// thread blocks reading it and starts the shutdown, which only stores
// atomics, calls on_shutdown, and either closes the listener (thread-safe)
// or does a try_send to the server's lame-duck goroutine (allowed from a
// foreign thread, chan.hpp). Under goro::run the handler runs on
// the runtime's signal thread: every other runtime thread blocks SIGTERM and
// SIGINT, so a shutdown never interrupts a goroutine's call in
// goro::blocking (scheduler/signals.cpp "The signal thread"). Rejected:
// sigwait or signalfd would bypass the dispositions a user or library set.
// The previous dispositions are restored when serve() returns.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "goro/http/handler.hpp"
#include "goro/result.hpp"
#include "goro/tls.hpp"

namespace goro::http {

// A request the server answered on its own, before any handler or
// middleware saw it: a malformed or oversized head (400, 413, 414, 431, 501,
// 505), an unmet expectation (417), or a head that did not arrive whole
// within read_header_timeout (408; nothing is sent, as in Go and nginx, but
// nginx logs it so). The views live for the call only.
struct RejectedRequest {
  std::string_view remote_addr;  // "127.0.0.1:53412"
  // The request line as understood; all three "" when it was not (too long,
  // malformed, or not complete), and then request_line holds what arrived
  // of it (at most 1 KiB, unescaped bytes: escape before printing).
  std::string_view method;
  std::string_view target;
  std::string_view proto;  // "HTTP/1.1"
  std::string_view request_line;
  int status = 0;
  std::size_t bytes = 0;    // response bytes sent, head included (0 for 408)
  std::string_view reason;  // the parser's words ("invalid header name", ...)
};

struct ServerOptions {
  // "host:port", ":port" (all interfaces); port 0 picks one (see addr()).
  std::string addr = ":8080";
  // The Server header; empty: none.
  std::string server_name = "goro";
  // Time allowed to read a request's head, from its first byte (slowloris);
  // for a connection's first request, from the accept: a connection that
  // sends nothing is closed after it, not after idle_timeout.
  std::chrono::nanoseconds read_header_timeout = std::chrono::seconds{10};
  // Time allowed for the whole request, body included, from its first byte
  // (Go's ReadTimeout); 0: none. Whatever it is, a body read also fails
  // after read_header_timeout without a single byte arriving. 60 s by
  // default (nginx's client_body_timeout; Go has none): a client that
  // trickles its body cannot hold a connection for longer. A handler that
  // takes bigger uploads moves it: Request::set_read_deadline.
  std::chrono::nanoseconds read_timeout = std::chrono::seconds{60};
  // Time allowed from the end of the request head until the response is
  // written (Go's WriteTimeout: handler time included); 0: none. 60 s by
  // default (nginx's send_timeout; Go has none): a client that never reads
  // its response frees its goroutine and connection then. A handler that
  // streams for longer moves it (ResponseWriter::set_write_deadline); file
  // bodies (sendfile) move it themselves as the client takes the bytes, so a
  // download only fails when the client takes nothing for write_timeout.
  std::chrono::nanoseconds write_timeout = std::chrono::seconds{60};
  // How long a keep-alive connection may wait for its next request.
  std::chrono::nanoseconds idle_timeout = std::chrono::seconds{120};
  // A keep-alive connection that has waited this long for its next request
  // gives its goroutine back: the goroutine ends (its stack, read buffer and
  // request state return to the runtime's pools) and the netpoller keeps
  // only the socket; the next request starts a fresh goroutine, invisible
  // to handlers. An idle connection then costs about 1 KiB of RSS instead of
  // 14 (docs/DESIGN.md "Idle connections without a goroutine"). Busy
  // connections never wait this long, so it costs them nothing; 0: keep the
  // goroutine for the whole rest; below a millisecond counts as one. Only
  // with the default stack_size. While it is on, a new HTTP connection has
  // no goroutine stack either until its first bytes come (its goroutine
  // waits parked in the netpoller, under read_header_timeout from the
  // accept): a thousand connections opened at once hold a thousand stacks
  // no longer (docs/DESIGN.md "Started parked").
  std::chrono::nanoseconds idle_release_after = std::chrono::seconds{1};
  // Sooner: a keep-alive connection whose socket holds nothing more once
  // its response is out gives its goroutine back at once, the same release
  // without the wait (HTTP only; HTTPS connections wait idle_release_after,
  // as OpenSSL may hold bytes the socket no longer shows). A thousand busy
  // connections then share a few warm stacks instead of holding a thousand
  // (CPU per request -5% at 1,000 connections), and every request pays a
  // goroutine's exit and start (+1% at 64 connections): on by default, as
  // the cost is under 2% (docs/DESIGN.md "Released when drained"). false:
  // a connection keeps its goroutine until idle_release_after. Needs
  // idle_release_after > 0 and the default stack_size, as any release.
  bool release_when_drained = true;
  // ... but only while the process has more than this many HTTP
  // connections open per P (the goro_http_connections gauge over maxprocs()).
  // Up to it, a drained connection keeps its goroutine until
  // idle_release_after, as with release_when_drained off: a few stacks stay
  // warm anyway, and keeping them spares each request the goroutine's exit
  // and start (~500 instructions, CPU per request -1 to -2% at 64
  // connections; docs/DESIGN.md "Few connections keep theirs"). 0: release at
  // once at any count.
  std::size_t release_when_drained_above = 128;
  // Graceful-shutdown deadline, counted from the moment the listener closes.
  std::chrono::nanoseconds shutdown_timeout = std::chrono::seconds{30};
  // Lame-duck period before that (see "Graceful shutdown"); 0: none.
  std::chrono::nanoseconds shutdown_delay = std::chrono::seconds{0};
  // Called once when a shutdown begins (shutdown() or a signal), on the
  // caller's goroutine or the signal thread: it must not block; logging a
  // line to a LogSink is fine.
  std::function<void()> on_shutdown = {};
  std::size_t max_header_bytes = std::size_t{1} << 20;     // 431 beyond
  std::size_t max_request_line = std::size_t{8} << 10;     // 414 beyond
  std::uint64_t max_body_bytes = std::uint64_t{10} << 20;  // 413 beyond
  // Connections served at once; 0: unlimited. See "Connection cap".
  std::size_t max_connections = 10000;
  // Stack of each connection's goroutine, where its handlers run; 0: the
  // runtime's default (goro::Options::stack_size: 512 KiB, enough for 256 KiB
  // of handler frames). Prefer raising the runtime's default: another size
  // costs an mmap and a munmap per connection (goro::SpawnOptions).
  std::size_t stack_size = 0;
  // Install SIGTERM/SIGINT handlers for graceful shutdown during serve().
  bool handle_signals = true;
  // Where the server's own diagnostics go (superfluous write_header, handler
  // exceptions, accept errors); nullptr: stderr.
  std::function<void(std::string_view)> error_log = {};
  // Called for each request the server answered on its own (see
  // RejectedRequest), on the connection's goroutine: it must not block.
  // middleware::access_log_rejected() writes them as access-log lines.
  std::function<void(const RejectedRequest&)> on_rejected = {};
  // HTTPS: set (with at least one certificate) and every connection speaks
  // TLS (see "HTTPS"). alpn empty: {"http/1.1"}.
  std::optional<tls::Config> tls = std::nullopt;
};

// What a server has done, for an operator's shutdown line.
struct ServerStats {
  std::uint64_t requests_drained = 0;    // finished after the shutdown began
  std::uint64_t connections_open = 0;    // now
  std::uint64_t connections_forced = 0;  // closed at the shutdown deadline
};

class Server {
 public:
  Server(ServerOptions opts, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // listen() then serve(). Returns once a graceful shutdown completed (ok),
  // or the listen error.
  Result<void> listen_and_serve();
  // The same over TLS with this certificate chain and key (PEM files), on
  // top of whatever else opts.tls says (Go's ListenAndServeTLS).
  Result<void> listen_and_serve_tls(std::string cert_file, std::string key_file);
  // Reads opts.tls's certificate and key files again and serves new
  // connections with them; connections already open keep theirs, and
  // session tickets keep resuming. On a bad file the error is logged
  // (error_log) and returned, and the current certificate stays. SIGHUP
  // does the same when handle_signals. Any goroutine or thread; the files
  // are read inside goro::blocking on a goroutine.
  Result<void> reload_tls();
  // Binds opts.addr; addr() is then the bound address ("127.0.0.1:41235").
  Result<void> listen();
  std::string addr() const;
  // Accepts and serves until shutdown; must follow listen(). Call from a
  // goroutine.
  Result<void> serve();

  // Starts a graceful shutdown (shutdown_delay, then shutdown_timeout) and
  // returns at once; serve() returns when it completes. Callable from any
  // goroutine or thread, any number of times.
  void shutdown();
  // Same with an explicit deadline for in-flight requests and no lame duck
  // (it also ends one under way).
  void shutdown(std::chrono::nanoseconds timeout);
  bool is_shutting_down() const;
  ServerStats stats() const;

  const ServerOptions& options() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace goro::http
