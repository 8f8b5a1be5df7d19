// Middleware: each is a goro::http::Middleware (Handler -> Handler), composed
// with chain(). None of them blocks an M on I/O.
//
//   auto h = goro::http::chain(router, {middleware::request_id(),
//                                       middleware::access_log(log),
//                                       middleware::metrics(),
//                                       middleware::recover()});
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "goro/http/handler.hpp"
#include "goro/http/log.hpp"
#include "goro/http/server.hpp"

namespace goro::http {

namespace middleware {

// One line per request. kText: Common Log Format plus the duration and
// request id, with '"', '\\', control and non-ASCII bytes of the request
// line written as \xHH (nginx's escaping):
//   127.0.0.1:5012 - - [06/Nov/2024:08:49:37 +0000] "GET /json HTTP/1.1" 200 27 0.000113 req-id
// kJson / kLogfmt: a LogRecord at level info, msg "request", with fields
// remote, method, target, proto, status, bytes, duration (seconds) and
// request_id. The status is the one the client got: 200 when the handler
// wrote nothing, 500 when it threw. The duration runs from the moment the
// request's head was complete (for a request a server read) to the end of
// the middleware chain below.
Middleware access_log(const std::shared_ptr<LogSink>& sink, LogFormat format = LogFormat::kText);

// The same lines for the requests the server answered on its own before any
// middleware ran (a malformed head's 400, 413, 414, 431, 501, 505, a 417, a
// head timeout's 408: see RejectedRequest), for ServerOptions::on_rejected.
// When the request line was not understood, the text line quotes the raw
// bytes that arrived (escaped) and JSON/logfmt add a request_line field.
std::function<void(const RejectedRequest&)> access_log_rejected(
    const std::shared_ptr<LogSink>& sink, LogFormat format = LogFormat::kText);

// Catches what escapes the handler, logs it (what(), the request line and the
// request id) to `sink` (stderr when null), answers 500 if nothing was
// written, else makes the server close the connection. The server itself
// does the same for anything that escapes every middleware; this one adds
// the log line (kJson / kLogfmt: level error, msg "panic").
Middleware recover(const std::shared_ptr<LogSink>& sink = nullptr,
                   LogFormat format = LogFormat::kText);

// Uses the request's X-Request-Id if it is 1-128 visible ASCII bytes, else
// makes one (16 hex digits); stores it on the request (Request::id()) and
// echoes it in the response's X-Request-Id.
Middleware request_id();

struct SecurityHeadersOptions {
  // Strict-Transport-Security's max-age, sent only on responses over TLS
  // (RFC 6797: a browser ignores it over plain HTTP); 0: not sent. Two
  // years, as hstspreload.org asks.
  std::chrono::seconds hsts_max_age = std::chrono::hours(24 * 730);
  bool hsts_include_subdomains = false;
  // X-Content-Type-Options: nosniff (no MIME sniffing of responses).
  bool nosniff = true;
  // X-Frame-Options; empty: not sent. DENY: no page may frame these
  // responses (an API's answer never needs framing).
  std::string frame_options = "DENY";
};
// Sets the response headers security scanners and browsers look for (OWASP's
// for an API) before the handler runs; a handler may still change them.
// goro-hello and goro-fileserver use it with --security_headers. Each
// header is a Header::set: three cost about 4,000 instructions a request.
Middleware security_headers(SecurityHeadersOptions opts = {});
// Records each request in the process's HTTP metrics (goro/http/metrics.hpp):
// count by status class and the latency histogram (from the moment the
// request's head was complete, as access_log's duration).
Middleware metrics();

struct MemoryGuardOptions {
  // Shed at or above this fraction of the memory limit; <= 0: never.
  double fraction = 0.9;
  // The Retry-After the 503 carries (whole seconds, at least 1).
  std::chrono::seconds retry_after{1};
  // Paths served whatever the memory (a liveness probe: a pod that sheds must
  // not be restarted for it; /metrics, so the pressure can be seen).
  std::vector<std::string> exempt;
  // Where "shedding" (warn, at most once a second, with the count shed since
  // the last line) and "serving again" (info) go; nullptr: nowhere.
  std::shared_ptr<Logger> log;
};

// Sheds load before the kernel's OOM killer does: while memory_over(fraction)
// holds, a new request (outside `exempt`) is answered "503 Service
// Unavailable" with Retry-After and Connection: close before its handler
// runs, its body unread, and counted in goro_http_requests_shed_total. The
// guard asks memory_over() at most every 10 ms (as often as memory_over()
// re-reads the memory), so shedding starts and stops up to about 20 ms late
// (memory_over()'s own sample may be 10 ms old when the guard keeps it).
// Requests already in their handlers finish. While shedding it also calls
// goro::free_os_memory() once a second, so stacks and heap freed by finished
// requests leave the cgroup. Without a cgroup memory limit it never sheds. The measure is what the
// OOM killer weighs: the limiting cgroup's working set (goro::memory_usage():
// usage minus reclaimable page cache), or the RSS if that cannot be read.
Middleware memory_guard(MemoryGuardOptions opts);

}  // namespace middleware

// True when the limiting cgroup's working set (else the process's RSS) is
// at or above `fraction` of its memory limit (goro::memory_usage()); false
// without a limit or for
// fraction <= 0. Two atomic loads, and a /proc read at most every 10 ms: cheap
// enough for a readiness handler or a per-request check.
bool memory_over(double fraction);
}  // namespace goro::http
