// Middleware: each is a goro::http::Middleware (Handler -> Handler), composed
// with chain(). None of them blocks an M on I/O.
//
//   auto h = goro::http::chain(router, {middleware::request_id(),
//                                       middleware::access_log(log),
//                                       middleware::metrics(),
//                                       middleware::recover()});
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "goro/http/handler.hpp"

namespace goro::http {

// An asynchronous line writer for access logs. Handlers hand it lines; a
// writer goroutine, started when lines are queued and ending when the queue
// is empty, writes them in batches, each write(2) inside goro::blocking: a
// slow disk or a full pipe parks a thread in a syscall while its P serves on,
// and no thread of its own exists. push() takes a std::mutex for a few
// instructions and never waits for I/O; when the queue holds `max_queued`
// lines, new lines are dropped and counted (a full disk must not stall
// request handling). push() from a thread that is not a goroutine writes the
// queue on that thread.
// The destructor, on a goroutine, returns once every queued line is written;
// on a plain thread it writes what is queued unless a writer goroutine is
// still at it (that one finishes on its own). The descriptor is not closed
// and must stay open until then.
class LogSink {
 public:
  explicit LogSink(int fd = 1, std::size_t max_queued = 65536);
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  void push(std::string line);  // a '\n' is appended
  std::uint64_t dropped() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with a running writer goroutine
};

namespace middleware {

// One line per request in Common Log Format plus the duration and request id:
//   127.0.0.1:5012 - - [06/Nov/2024:08:49:37 +0000] "GET /json HTTP/1.1" 200 27 0.000113 req-id
Middleware access_log(std::shared_ptr<LogSink> sink);

// Catches what escapes the handler, logs it (what() and the request line) to
// `sink` (stderr when null), answers 500 if nothing was written, else makes
// the server close the connection. The server itself does the same for
// anything that escapes every middleware; this one adds the log line.
Middleware recover(std::shared_ptr<LogSink> sink = nullptr);

// Uses the request's X-Request-Id if it is 1-128 visible ASCII bytes, else
// makes one (16 hex digits); stores it on the request (Request::id()) and
// echoes it in the response's X-Request-Id.
Middleware request_id();

// Records each request in the process's HTTP metrics (goro/http/metrics.hpp):
// count by status class and the latency histogram.
Middleware metrics();

}  // namespace middleware
}  // namespace goro::http
