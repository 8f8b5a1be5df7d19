// goro-fileserver: serves the files under --root over HTTP/1.1 with
// http::file_server (sendfile, Range, If-Modified-Since, no escape above the
// root, no directory listings; include/goro/http/file_server.hpp).
//
//   goro-fileserver --root /srv/www                   http://127.0.0.1:8000/<path>
//   goro-fileserver --root . --index --addr :8080     index.html for directories
//   goro-fileserver --root dist --prefix /static      http://.../static/<path>
//
// Configuration (goro::config: defaults < TOML file < env < flags; --help,
// --print-config): root (required), addr (also PORT), prefix, index, maxprocs,
// timeouts, max_connections, access_log. Every path is a file lookup (no
// other routes, so no file name is shadowed). The first stdout line is the
// bound address, flushed, so scripts can start it on port 0 and read where it
// listens. SIGTERM/SIGINT shut down gracefully; the process then exits 0.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "goro/config.hpp"
#include "goro/goro.hpp"
#include "goro/http.hpp"

namespace {

using namespace std::chrono_literals;
namespace http = goro::http;

struct Settings {
  std::string root;
  goro::config::Address addr{"127.0.0.1", 8000};
  std::string prefix;
  bool index = false;
  int maxprocs = 0;
  std::string server_name = "goro";
  std::chrono::milliseconds read_header_timeout = 10s;
  std::chrono::milliseconds write_timeout = 0s;
  std::chrono::milliseconds idle_timeout = 120s;
  std::chrono::milliseconds shutdown_timeout = 30s;
  int max_connections = 10000;
  bool access_log = false;
};

// The prefix as a Router pattern: "GET /static/" (a subtree) or "GET /".
std::string mount_pattern(const std::string& prefix) {
  std::string p = prefix;
  while (!p.empty() && p.back() == '/')
    p.pop_back();
  return "GET " + p + "/";
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  goro::config::Config cfg("goro-fileserver",
                           "Serves the files under a directory over HTTP/1.1 (GET and HEAD).");
  cfg.add("root", &s.root, "directory to serve (required)");
  cfg.add("addr", &s.addr, "listen address (host:port; port 0 picks one)").env("PORT");
  cfg.add("prefix", &s.prefix, "URL path the files are mounted under, e.g. /static");
  cfg.add("index", &s.index, "serve index.html for directory requests (no listings either way)");
  cfg.add("maxprocs", &s.maxprocs, "number of Ps; 0: GOMAXPROCS or the CPU/cgroup limit");
  cfg.add("server_name", &s.server_name, "Server header; empty for none");
  cfg.add("read_header_timeout", &s.read_header_timeout, "time to read a request head");
  cfg.add("write_timeout", &s.write_timeout, "time from request head to response end; 0: none");
  cfg.add("idle_timeout", &s.idle_timeout, "keep-alive wait for the next request");
  cfg.add("shutdown_timeout", &s.shutdown_timeout, "graceful shutdown deadline");
  cfg.add("max_connections", &s.max_connections,
          "open connections; beyond: 503 and close; 0: no limit");
  cfg.add("access_log", &s.access_log, "log every request to stdout");
  if (auto exit_code = cfg.parse(argc, argv)) return *exit_code;
  if (s.root.empty()) {
    fmt::print(stderr, "goro-fileserver: --root DIR is required (see --help)\n");
    return 2;
  }
  if (!s.prefix.empty() && s.prefix.front() != '/') s.prefix = std::string("/").append(s.prefix);
  while (!s.prefix.empty() && s.prefix.back() == '/')
    s.prefix.pop_back();

  goro::Options ropts;
  ropts.maxprocs = s.maxprocs;
  return goro::run(
      [&]() -> int {
        http::Handler files;
        try {
          files = http::file_server(s.root, {.strip_prefix = s.prefix, .index = s.index});
        } catch (const std::system_error& e) {
          fmt::print(stderr, "goro-fileserver: {}\n", e.what());
          return 1;
        }
        http::Router r;
        r.handle(mount_pattern(s.prefix), files);
        std::shared_ptr<http::LogSink> log;
        http::Handler handler = r;
        if (s.access_log) {
          log = std::make_shared<http::LogSink>(1);
          handler = http::chain(
              handler, {http::middleware::access_log(log), http::middleware::recover(log)});
        } else {
          handler = http::chain(handler, {http::middleware::recover()});
        }
        http::ServerOptions o;
        o.addr = s.addr.str();
        o.server_name = s.server_name;
        o.read_header_timeout = s.read_header_timeout;
        o.write_timeout = s.write_timeout;
        o.idle_timeout = s.idle_timeout;
        o.shutdown_timeout = s.shutdown_timeout;
        o.max_connections = static_cast<std::size_t>(std::max(0, s.max_connections));
        http::Server srv(std::move(o), handler);
        if (auto lr = srv.listen(); !lr) {
          fmt::print(stderr, "goro-fileserver: listen {}: {}\n", s.addr.str(),
                     lr.error().message());
          return 1;
        }
        fmt::print("{}\n", srv.addr());
        std::fflush(stdout);
        if (auto sr = srv.serve(); !sr) {
          fmt::print(stderr, "goro-fileserver: serve: {}\n", sr.error().message());
          return 1;
        }
        return 0;
      },
      ropts);
}
