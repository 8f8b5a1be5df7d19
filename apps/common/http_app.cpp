// The HTTP apps' shared settings, middleware and start-up (http_app.hpp).
#include "apps/common/http_app.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>

namespace goro_apps {

namespace http = goro::http;

void add_server_settings(goro::config::Config& cfg, ServerSettings* s) {
  cfg.add("addr", &s->addr, "listen address (host:port; port 0 picks one)").env("PORT");
  cfg.add("maxprocs", &s->maxprocs, "number of Ps; 0: GOMAXPROCS or the CPU/cgroup limit");
  cfg.add("server_name", &s->server_name, "Server header; empty for none");
  cfg.add("read_header_timeout", &s->read_header_timeout, "time to read a request head");
  cfg.add("write_timeout", &s->write_timeout, "time from request head to response end; 0: none");
  cfg.add("idle_timeout", &s->idle_timeout, "keep-alive wait for the next request");
  cfg.add("shutdown_timeout", &s->shutdown_timeout, "graceful shutdown deadline");
  cfg.add("max_connections", &s->max_connections,
          "open connections; beyond: 503 and close; 0: no limit");
  cfg.add("access_log", &s->access_log, "log every request to stdout");
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
  o.write_timeout = s.write_timeout;
  o.idle_timeout = s.idle_timeout;
  o.shutdown_timeout = s.shutdown_timeout;
  // goro::config range-checks ints but allows negatives; below 0 means none.
  o.max_connections = static_cast<std::size_t>(std::max(0, s.max_connections));
  return o;
}

http::Handler with_middleware(http::Handler handler, const ServerSettings& s, Observability o) {
  // Built inside out: chain(h, {a, b}) == a(b(h)), so the last applied is
  // the first to see a request.
  std::shared_ptr<http::LogSink> log;
  if (s.access_log) log = std::make_shared<http::LogSink>(1);
  handler = http::middleware::recover(log)(std::move(handler));
  if (o.metrics) handler = http::middleware::metrics()(std::move(handler));
  if (s.access_log) {
    handler = http::middleware::access_log(log)(std::move(handler));
    if (o.request_ids) handler = http::middleware::request_id()(std::move(handler));
  }
  return handler;
}

int listen_and_serve(std::string_view app, http::Server& srv) {
  if (auto r = srv.listen(); !r) {
    fmt::print(stderr, "{}: listen {}: {}\n", app, srv.options().addr, r.error().message());
    return 1;
  }
  fmt::print("{}\n", srv.addr());
  std::fflush(stdout);
  if (auto r = srv.serve(); !r) {
    fmt::print(stderr, "{}: serve: {}\n", app, r.error().message());
    return 1;
  }
  return 0;
}

}  // namespace goro_apps
