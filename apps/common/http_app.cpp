// The HTTP apps' shared settings, middleware and start-up (http_app.hpp).
#include "apps/common/http_app.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>

namespace goro_apps {

namespace http = goro::http;

void add_server_settings(goro::config::Config& cfg, ServerSettings* s) {
  cfg.add("addr", &s->addr, "listen address (host:port; port 0 picks one)").env("PORT");
  cfg.add("maxprocs", &s->maxprocs, "number of Ps; 0: GOMAXPROCS or the CPU/cgroup limit");
  cfg.add("server_name", &s->server_name, "Server header; empty for none");
  cfg.add("read_header_timeout", &s->read_header_timeout, "time to read a request head");
  cfg.add("read_timeout", &s->read_timeout, "time to read a whole request, body included; 0: none");
  cfg.add("write_timeout", &s->write_timeout,
          "time from request head to response end (files: per 4 MiB sent); 0: none");
  cfg.add("idle_timeout", &s->idle_timeout, "keep-alive wait for the next request");
  cfg.add("idle_release_after", &s->idle_release_after,
          "a keep-alive connection idle this long gives its goroutine back; 0: never");
  cfg.add("release_when_drained", &s->release_when_drained,
          "sooner: a keep-alive connection with nothing more to read after its response gives "
          "its goroutine back at once (HTTP; needs idle_release_after > 0); false: only after "
          "idle_release_after");
  cfg.add("release_when_drained_above", &s->release_when_drained_above,
          "release_when_drained only with more HTTP connections open than this per P; up to it "
          "a drained connection keeps its goroutine until idle_release_after; 0: at any count")
      .range(0, 1 << 30);
  cfg.add("shutdown_timeout", &s->shutdown_timeout,
          "graceful shutdown deadline, from the listener's close");
  cfg.add("shutdown_delay", &s->shutdown_delay,
          "lame duck: after SIGTERM, /readyz fails while serving on this long");
  cfg.add("max_connections", &s->max_connections,
          "open connections; beyond: 503 and close; 0: no limit");
  cfg.add("access_log", &s->access_log, "log every request to stdout");
  cfg.add("log_format", &s->log_format, "stdout log format: text, json or logfmt")
      .one_of({"text", "json", "logfmt"});
  cfg.add("log_level", &s->log_level, "least level logged: debug, info, warn or error")
      .one_of({"debug", "info", "warn", "error"});
  cfg.add("memory_shed_percent", &s->memory_shed_percent,
          "503 new requests past this % of the cgroup memory limit; 0: never")
      .range(0, 100);
  cfg.add("tls_cert", &s->tls_cert,
          "HTTPS: certificate chain PEM file (with tls_key; SIGHUP reloads both)");
  cfg.add("tls_key", &s->tls_key, "HTTPS: private key PEM file (with tls_cert)");
  cfg.add("security_headers", &s->security_headers,
          "send Strict-Transport-Security (over HTTPS), X-Content-Type-Options, X-Frame-Options");
}

std::optional<int> check_tls_settings(std::string_view app, const ServerSettings& s) {
  if (s.tls_cert.empty() && s.tls_key.empty()) return std::nullopt;
  std::string why;
  if (s.tls_cert.empty() || s.tls_key.empty()) {
    why = "both are needed for HTTPS, or neither";
  } else {
    goro::tls::Config cfg;
    cfg.certificates = {{.cert_file = s.tls_cert, .key_file = s.tls_key}};
    goro::tls::ContextResult r = goro::tls::Context::server(cfg);
    if (r) return std::nullopt;
    why = r.error;
  }
  fmt::print(stderr, "{}: tls_cert/tls_key: {}\n", app, why);
  return 2;
}

goro::Options runtime_options(const ServerSettings& s) {
  goro::Options o;
  o.maxprocs = s.maxprocs;
  return o;
}

http::ServerOptions server_options(const ServerSettings& s) {
  http::ServerOptions o;
  o.addr = s.addr.str();
  o.server_name = s.server_name;
  o.read_header_timeout = s.read_header_timeout;
  o.read_timeout = s.read_timeout;
  o.write_timeout = s.write_timeout;
  o.idle_timeout = s.idle_timeout;
  o.idle_release_after = s.idle_release_after;
  o.release_when_drained = s.release_when_drained;
  o.release_when_drained_above = static_cast<std::size_t>(s.release_when_drained_above);
  o.shutdown_timeout = s.shutdown_timeout;
  // goro::config range-checks ints but allows negatives; below 0 means none.
  o.max_connections = static_cast<std::size_t>(std::max(0, s.max_connections));
  if (!s.tls_cert.empty() && !s.tls_key.empty()) {
    o.tls.emplace();
    o.tls->certificates = {{.cert_file = s.tls_cert, .key_file = s.tls_key}};
  }
  return o;
}

std::shared_ptr<http::Logger> make_logger(const ServerSettings& s) {
  // goro::config checked both against the same lists (one_of).
  return std::make_shared<http::Logger>(
      std::make_shared<http::LogSink>(1),
      http::parse_log_format(s.log_format).value_or(http::LogFormat::kText),
      http::parse_log_level(s.log_level).value_or(http::LogLevel::kInfo));
}

double memory_shed_fraction(const ServerSettings& s) {
  return static_cast<double>(std::clamp(s.memory_shed_percent, 0, 100)) / 100.0;
}

namespace {

// When the shutdown began (steady nanoseconds; 0: not yet), for "stopped".
std::atomic<std::int64_t> shutdown_began{0};

double seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

http::ServerOptions server_options(const ServerSettings& s,
                                   const std::shared_ptr<http::Logger>& log) {
  http::ServerOptions o = server_options(s);
  o.shutdown_delay = s.shutdown_delay;
  o.error_log = [log](std::string_view line) { log->log(http::LogLevel::kError, line); };
  if (s.access_log && log->enabled(http::LogLevel::kInfo)) {
    o.on_rejected = http::middleware::access_log_rejected(log->sink(), log->format());
  }
  o.on_shutdown = [log, delay = s.shutdown_delay, timeout = s.shutdown_timeout] {
    shutdown_began.store(std::chrono::steady_clock::now().time_since_epoch().count());
    log->log(http::LogRecord(http::LogLevel::kInfo, "shutting down")
                 .add("shutdown_delay", seconds(delay))
                 .add("shutdown_timeout", seconds(timeout)));
  };
  return o;
}

http::Handler with_middleware(http::Handler handler, const ServerSettings& s, Observability o,
                              const std::shared_ptr<http::Logger>& log) {
  // Built inside out: chain(h, {a, b}) == a(b(h)), so the last applied is
  // the first to see a request.
  handler = http::middleware::recover(log->sink(), log->format())(std::move(handler));
  if (s.security_headers) handler = http::middleware::security_headers()(std::move(handler));
  if (s.memory_shed_percent > 0) {
    handler = http::middleware::memory_guard({.fraction = memory_shed_fraction(s),
                                              .exempt = std::move(o.shed_exempt),
                                              .log = log})(std::move(handler));
  }
  if (o.metrics) handler = http::middleware::metrics()(std::move(handler));
  if (s.access_log && log->enabled(http::LogLevel::kInfo)) {
    handler = http::middleware::access_log(log->sink(), log->format())(std::move(handler));
    if (o.request_ids) handler = http::middleware::request_id()(std::move(handler));
  }
  return handler;
}

int listen_and_serve(std::string_view app, http::Server& srv,
                     const std::shared_ptr<http::Logger>& log) {
  if (auto r = srv.listen(); !r) {
    fmt::print(stderr, "{}: listen {}: {}\n", app, srv.options().addr, r.error().message());
    return 1;
  }
  const goro::RuntimeStats st = goro::stats();
  http::LogRecord listening(http::LogLevel::kInfo, "listening");
  listening.add("app", app)
      .add("version", GORO_VERSION)
      .add("addr", srv.addr())
      .add("tls", srv.options().tls.has_value())
      .add("maxprocs", st.maxprocs)
      .add("maxprocs_source", goro::to_string(st.maxprocs_source))
      .add("memory_limit_bytes", st.memory_limit_bytes)
      .add("pid", static_cast<std::int64_t>(::getpid()));
  if (log->format() == http::LogFormat::kText) {
    // The contract's bare first line, then the record like any other line.
    fmt::print("{}\n", srv.addr());
    std::fflush(stdout);
    log->log(listening);
  } else {
    // The record itself is the first line: written here, not queued, so it
    // is on stdout before anyone can connect and be logged.
    fmt::print("{}\n", listening.render(log->format()));
    std::fflush(stdout);
  }
  if (auto r = srv.serve(); !r) {
    fmt::print(stderr, "{}: serve: {}\n", app, r.error().message());
    return 1;
  }
  const http::ServerStats done = srv.stats();
  const std::int64_t began = shutdown_began.load();
  log->log(http::LogRecord(http::LogLevel::kInfo, "stopped")
               .add("requests_drained", done.requests_drained)
               .add("connections_forced", done.connections_forced)
               .add("seconds", began == 0 ? 0.0
                                          : seconds(std::chrono::steady_clock::now() -
                                                    std::chrono::steady_clock::time_point(
                                                        std::chrono::nanoseconds(began)))));
  return 0;
}

}  // namespace goro_apps
