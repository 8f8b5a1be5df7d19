// What goro's HTTP apps (goro-hello, goro-fileserver) have in common: the
// server settings every one of them declares, their mapping onto
// http::ServerOptions, the middleware around the app's own handler, and the
// start-up sequence scripts rely on. Each app keeps what is its own (routes,
// its own settings and limits) and calls these in its main().
//
// # Why here and not in framework/http
//
// The settings are goro::config declarations, and goro::config's server half
// is for apps only (docs/DESIGN.md "Layers": framework/ does not include it). A library
// user builds http::ServerOptions directly; these helpers are the apps'
// shared glue, not part of the installed API.
//
// # Start-up contract
//
// listen_and_serve() makes the first stdout line say where the app listens,
// flushed, so a script can start an app on port 0 and read the port: with
// log_format text, the bare bound address ("127.0.0.1:41235"); with json or
// logfmt, the "listening" record, whose addr field holds it (every stdout
// line then parses in that format). A listen or serve error goes to stderr
// as "<app>: listen <addr>: <reason>" or "<app>: serve: <reason>" and main
// returns 1; a graceful shutdown (SIGTERM/SIGINT) returns 0. Configuration
// errors exit 2 before any of this (goro::config).
//
// # Logs
//
// One Logger per process (make_logger) on stdout, in log_format
// (GORO_LOG_FORMAT: text, json, logfmt) at log_level (GORO_LOG_LEVEL):
//   info  "listening": app, version, addr, maxprocs and its source
//         (affinity, cgroup, env, explicit), memory_limit_bytes (0: none),
//         pid; "shutting down": shutdown_delay and shutdown_timeout (s);
//         "stopped": requests_drained, connections_forced, seconds since
//         the shutdown began; "request" per request (access_log), info
//         "serving again" when memory falls back below the threshold
//   warn  "memory over the threshold: shedding new requests", at most
//         once a second
//   error the server's own diagnostics (accept errors, handler panics)
// A level above info silences the access log too.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "goro/config.hpp"
#include "goro/goro.hpp"
#include "goro/http.hpp"

namespace goro_apps {

// The settings every HTTP app declares, with their shared defaults; each app
// picks its default port (loopback only until told otherwise).
struct ServerSettings {
  explicit ServerSettings(std::uint16_t default_port) : addr{"127.0.0.1", default_port} {}

  goro::config::Address addr;
  int maxprocs = 0;
  std::string server_name = "goro";
  std::chrono::milliseconds read_header_timeout = std::chrono::seconds(10);
  std::chrono::milliseconds read_timeout = std::chrono::seconds(60);
  std::chrono::milliseconds write_timeout = std::chrono::seconds(60);
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(120);
  std::chrono::milliseconds idle_release_after = std::chrono::seconds(1);
  bool release_when_drained = true;
  int release_when_drained_above = 128;  // connections per P (ServerOptions)
  std::chrono::milliseconds shutdown_timeout = std::chrono::seconds(30);
  std::chrono::milliseconds shutdown_delay{0};
  int max_connections = 10000;
  bool access_log = false;
  std::string log_format = "text";
  std::string log_level = "info";
  int memory_shed_percent = 90;
  // HTTPS when both are set: PEM files, the certificate chain (leaf first)
  // and its key. SIGHUP reloads them.
  std::string tls_cert;
  std::string tls_key;
  // middleware::security_headers: HSTS (over TLS), nosniff, X-Frame-Options.
  // Off by default: three headers cost a handler about 4,000 instructions
  // (callgrind), a tenth of a TLS keep-alive request, and the load tests
  // compare servers doing the same work.
  bool security_headers = false;
};

// Declares the settings of ServerSettings in `cfg`, in the order above, bound
// to `*s` (which must outlive `cfg`); addr is also read from env PORT.
void add_server_settings(goro::config::Config& cfg, ServerSettings* s);

// Checks what cannot be checked key by key: tls_cert and tls_key come
// together and load (the files exist, parse, and the key matches). Prints
// "<app>: tls_cert/tls_key: <why>" on stderr and returns 2 (a configuration
// error's exit status), or nullopt when they are fine or unset.
std::optional<int> check_tls_settings(std::string_view app, const ServerSettings& s);

// The runtime's options: s.maxprocs Ps (0: resolved as Go does).
goro::Options runtime_options(const ServerSettings& s);

// The ServerOptions the shared settings determine; the other fields keep
// http's defaults for the app to set (read_timeout, max_header_bytes, ...).
goro::http::ServerOptions server_options(const ServerSettings& s);

// The process's log on stdout, in s.log_format at s.log_level (see "Logs").
std::shared_ptr<goro::http::Logger> make_logger(const ServerSettings& s);

// The server options and the logger together: server_options(s) with the
// server's diagnostics (error) and shutdown ("shutting down") sent to `log`.
goro::http::ServerOptions server_options(const ServerSettings& s,
                                         const std::shared_ptr<goro::http::Logger>& log);

// The optional middleware an app asks for besides logging and recovery.
struct Observability {
  bool metrics = false;      // middleware::metrics(): the app serves /metrics
  bool request_ids = false;  // middleware::request_id(), with access_log only
  // Paths memory_guard never sheds (liveness probe, /metrics).
  std::vector<std::string> shed_exempt;
};

// `handler` inside the apps' middleware, outermost first: request_id (if
// asked and access_log), access_log (if access_log and log_level allows
// info), metrics (if asked), memory_guard (if memory_shed_percent > 0),
// security_headers (if asked: HSTS over TLS, nosniff, X-Frame-Options),
// recover. All of them log through `log`.
goro::http::Handler with_middleware(goro::http::Handler handler, const ServerSettings& s,
                                    Observability o,
                                    const std::shared_ptr<goro::http::Logger>& log);

// memory_shed_percent as the fraction memory_guard and readiness use (0: off).
double memory_shed_fraction(const ServerSettings& s);

// Listens on srv's address, announces it on stdout, logs the lifecycle and
// serves until a graceful shutdown (see "Start-up contract"). The return
// value is main's exit code. Call from a goroutine.
int listen_and_serve(std::string_view app, goro::http::Server& srv,
                     const std::shared_ptr<goro::http::Logger>& log);

}  // namespace goro_apps
