// goro-fileserver: serves the files under --root over HTTP/1.1 with
// http::file_server (sendfile, Range, If-Modified-Since, no escape above the
// root, no directory listings; include/goro/http/file_server.hpp).
//
//   goro-fileserver --root /srv/www                   http://127.0.0.1:8000/<path>
//   goro-fileserver --root . --index --addr :8080     index.html for directories
//   goro-fileserver --root dist --prefix /static      http://.../static/<path>
//
// Configuration (goro::config: defaults < TOML file < env < flags; --help,
// --print-config): root (required), prefix, index, then the HTTP apps' shared
// settings (addr, also PORT; maxprocs, timeouts, max_connections, access_log:
// apps/common/http_app.hpp). Every path is a file lookup (no other routes,
// so no file name is shadowed). The first stdout line is the bound address,
// flushed, so scripts can start it on port 0 and read where it listens.
// SIGTERM/SIGINT shut down gracefully; the process then exits 0.
#include <fmt/format.h>

#include <string>
#include <system_error>

#include "apps/common/http_app.hpp"
#include "goro/config.hpp"
#include "goro/goro.hpp"
#include "goro/http.hpp"

namespace {

namespace http = goro::http;

// goro-fileserver's settings: what to serve, then the shared server ones
// (apps/common/http_app.hpp).
struct Settings {
  std::string root;
  std::string prefix;
  bool index = false;
  goro_apps::ServerSettings server{8000};
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
  cfg.add("prefix", &s.prefix, "URL path the files are mounted under, e.g. /static");
  cfg.add("index", &s.index, "serve index.html for directory requests (no listings either way)");
  goro_apps::add_server_settings(cfg, &s.server);
  if (auto exit_code = cfg.parse(argc, argv)) return *exit_code;
  if (auto exit_code = goro_apps::check_tls_settings("goro-fileserver", s.server))
    return *exit_code;
  if (s.root.empty()) {
    fmt::print(stderr, "goro-fileserver: --root DIR is required (see --help)\n");
    return 2;
  }
  if (!s.prefix.empty() && s.prefix.front() != '/') s.prefix = std::string("/").append(s.prefix);
  while (!s.prefix.empty() && s.prefix.back() == '/')
    s.prefix.pop_back();

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
        const std::shared_ptr<http::Logger> log = goro_apps::make_logger(s.server);
        http::Server srv(goro_apps::server_options(s.server, log),
                         goro_apps::with_middleware(std::move(r), s.server, {}, log));
        return goro_apps::listen_and_serve("goro-fileserver", srv, log);
      },
      goro_apps::runtime_options(s.server));
}
