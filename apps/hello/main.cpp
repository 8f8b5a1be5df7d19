// goro-hello: the README's main job, an HTTP/1.1 hello server.
//
//   GET  /plaintext   Hello, World!                    (text/plain)
//   GET  /json        {"message":"Hello, World!"}      (application/json)
//   POST /echo        the request body back
//   GET  /delay?ms=N  sleeps N ms (parked, not blocking a thread), then 200
//   GET  /healthz     200 ok
//   GET  /readyz      200 ready; 503 once shutdown has begun, or while memory
//                     is over memory_shed_percent of the cgroup limit
//   GET  /metrics     Prometheus text format
//
// Configuration (goro::config: defaults < TOML file < env < flags; --help,
// --print-config): the HTTP apps' shared settings (addr, also PORT; maxprocs,
// timeouts, shutdown_delay, max_connections, access_log, log_format,
// log_level, memory_shed_percent: apps/common/http_app.hpp), then
// max_header_bytes, max_body_bytes and max_delay. The first
// stdout line says where it listens (the bare address, or the "listening"
// record in json/logfmt), flushed, so scripts can start it on port 0.
// SIGTERM/SIGINT shut down gracefully (after shutdown_delay, /readyz 503
// meanwhile); the process then exits 0. /healthz and /metrics are never shed.
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string>

#include "apps/common/http_app.hpp"
#include "goro/config.hpp"
#include "goro/goro.hpp"
#include "goro/http.hpp"
#include "goro/http/json.hpp"

namespace {

using namespace std::chrono_literals;
namespace http = goro::http;

// goro-hello's settings: the shared server ones (apps/common/http_app.hpp)
// and the limits and endpoint bound only this app exposes.
struct Settings {
  goro_apps::ServerSettings server{8080};
  goro::config::Size max_header_bytes{1 << 20};
  goro::config::Size max_body_bytes{10 << 20};
  // Under write_timeout (60 s), which covers the handler's time too.
  std::chrono::milliseconds max_delay = 30s;
};

http::Router routes(const std::shared_ptr<http::Server*>& server,
                    std::chrono::milliseconds max_delay, double shed_fraction) {
  http::Router r;
  r.handle("GET /plaintext", [](http::Request&, http::ResponseWriter& w) {
    w.header().set("Content-Type", "text/plain");
    (void)w.write("Hello, World!");
  });
  r.handle("GET /json", [](http::Request&, http::ResponseWriter& w) {
    (void)http::write_json(w, {{"message", "Hello, World!"}});
  });
  r.handle("POST /echo", [](http::Request& req, http::ResponseWriter& w) {
    // Streams: a 50 MiB upload is never held whole in memory.
    std::string type(req.header("Content-Type"));
    w.header().set("Content-Type", type.empty() ? "application/octet-stream" : type);
    if (auto len = req.body().content_length())
      w.header().set("Content-Length", fmt::format("{}", *len));
    // 32 KiB: a streaming echo pins this per request (the response side
    // copies nothing: writes this size go straight to writev).
    std::string buf(32 << 10, '\0');
    for (;;) {
      auto n = req.body().read(std::span<char>(buf));
      if (!n) {
        // The echo is cut short visibly: no final chunk, the connection
        // closed (a truncated but well-formed body would lie). If nothing
        // of it went out yet, the server answers the body's status (413,
        // 400, 408) instead.
        w.abort();
        return;
      }
      if (*n == 0) return;
      if (!w.write(std::string_view(buf.data(), *n))) return;
    }
  });
  r.handle("GET /delay", [max_delay](http::Request& req, http::ResponseWriter& w) {
    long long ms = 0;
    try {
      ms = std::stoll(req.query("ms"));
    } catch (...) {
      return http::error(w, "ms must be an integer", 400);
    }
    if (ms < 0 || std::chrono::milliseconds(ms) > max_delay)
      return http::error(w, fmt::format("ms must be in [0, {}]", max_delay.count()), 400);
    // Ends early if the client goes away or the server's deadline passes.
    goro::select(goro::after_case(std::chrono::milliseconds(ms)), goro::recv(req.context().done()));
    if (req.context().is_done()) return;
    w.header().set("Content-Type", "text/plain");
    (void)w.write(fmt::format("slept {} ms\n", ms));
  });
  r.handle("GET /healthz", [](http::Request&, http::ResponseWriter& w) {
    w.header().set("Content-Type", "text/plain");
    (void)w.write("ok\n");
  });
  r.handle("GET /readyz", [server, shed_fraction](http::Request&, http::ResponseWriter& w) {
    if (*server != nullptr && (*server)->is_shutting_down())
      return http::error(w, "shutting down", 503);
    if (http::memory_over(shed_fraction)) return http::error(w, "memory pressure", 503);
    w.header().set("Content-Type", "text/plain");
    (void)w.write("ready\n");
  });
  r.handle("GET /metrics", http::metrics_handler());
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  goro::config::Config cfg("goro-hello", "An HTTP hello server on goro (the README's main job).");
  goro_apps::add_server_settings(cfg, &s.server);
  cfg.add("max_header_bytes", &s.max_header_bytes, "request head limit (431 beyond)");
  cfg.add("max_body_bytes", &s.max_body_bytes, "request body limit (413 beyond)");
  cfg.add("max_delay", &s.max_delay, "largest /delay?ms= accepted");
  if (auto exit_code = cfg.parse(argc, argv)) return *exit_code;
  if (auto exit_code = goro_apps::check_tls_settings("goro-hello", s.server)) return *exit_code;

  return goro::run(
      [&]() -> int {
        const std::shared_ptr<http::Logger> log = goro_apps::make_logger(s.server);
        auto server_ref = std::make_shared<http::Server*>(nullptr);
        http::ServerOptions o = goro_apps::server_options(s.server, log);
        o.max_header_bytes = static_cast<std::size_t>(s.max_header_bytes.bytes);
        o.max_body_bytes = s.max_body_bytes.bytes;
        http::Server srv(
            std::move(o),
            goro_apps::with_middleware(
                routes(server_ref, s.max_delay, goro_apps::memory_shed_fraction(s.server)),
                s.server,
                {.metrics = true, .request_ids = true, .shed_exempt = {"/healthz", "/metrics"}},
                log));
        *server_ref = &srv;
        const int exit_code = goro_apps::listen_and_serve("goro-hello", srv, log);
        *server_ref = nullptr;
        return exit_code;
      },
      goro_apps::runtime_options(s.server));
}
