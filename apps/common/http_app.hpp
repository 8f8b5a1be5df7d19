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
// listen_and_serve() prints the bound address ("127.0.0.1:41235") as the
// first stdout line and flushes it, so a script can start an app on port 0
// and read where it listens. A listen or serve error goes to stderr as
// "<app>: listen <addr>: <reason>" or "<app>: serve: <reason>" and main
// returns 1; a graceful shutdown (SIGTERM/SIGINT) returns 0. Configuration
// errors exit 2 before any of this (goro::config).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

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
  std::chrono::milliseconds write_timeout{0};
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(120);
  std::chrono::milliseconds shutdown_timeout = std::chrono::seconds(30);
  int max_connections = 10000;
  bool access_log = false;
};

// Declares the settings of ServerSettings in `cfg`, in the order above, bound
// to `*s` (which must outlive `cfg`); addr is also read from env PORT.
void add_server_settings(goro::config::Config& cfg, ServerSettings* s);

// The runtime's options: s.maxprocs Ps (0: resolved as Go does).
goro::Options runtime_options(const ServerSettings& s);

// The ServerOptions the shared settings determine; the other fields keep
// http's defaults for the app to set (read_timeout, max_header_bytes, ...).
goro::http::ServerOptions server_options(const ServerSettings& s);

// The optional middleware an app asks for besides logging and recovery.
struct Observability {
  bool metrics = false;      // middleware::metrics(): the app serves /metrics
  bool request_ids = false;  // middleware::request_id(), with access_log only
};

// `handler` inside the apps' middleware, outermost first: request_id (if
// asked and access_log), access_log into a LogSink on stdout (if access_log),
// metrics (if asked), recover, which logs what a handler throws to that sink,
// or to stderr without access_log.
goro::http::Handler with_middleware(goro::http::Handler handler, const ServerSettings& s,
                                    Observability o);

// Listens on srv's address, prints the bound address as the first stdout
// line, and serves until a graceful shutdown (see "Start-up contract"). The
// return value is main's exit code. Call from a goroutine.
int listen_and_serve(std::string_view app, goro::http::Server& srv);

}  // namespace goro_apps
