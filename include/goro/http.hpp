// <goro/http.hpp>: the HTTP/1.1 server framework (docs/DESIGN.md "The HTTP server").
//
// Example:
//   #include <fmt/format.h>
//   #include <goro/http.hpp>
//
//   int main() {
//     return goro::run([] {
//       goro::http::Router r;
//       r.handle("GET /hello/{name}", [](goro::http::Request& req, goro::http::ResponseWriter& w) {
//         w.header().set("Content-Type", "text/plain");
//         w.write(fmt::format("Hello, {}!\n", req.path_value("name")));
//       });
//       goro::http::Server srv{{.addr = ":8080"}, r};
//       return srv.listen_and_serve() ? 0 : 1;
//     });
//   }
//
// Parts: header.hpp (Header), request.hpp (Request, BodyReader, http::errc),
// response.hpp (ResponseWriter), handler.hpp (Handler, Middleware, chain,
// error), router.hpp (Router), server.hpp (Server, ServerOptions),
// middleware.hpp (access log, recovery, request id, metrics), metrics.hpp
// (/metrics), file_server.hpp (static files). JSON is separate, so that
// nlohmann/json is compiled only where it is used: <goro/http/json.hpp>.
#pragma once

#include "goro/goro.hpp"  // the runtime: an HTTP program starts with goro::run
#include "goro/http/file_server.hpp"
#include "goro/http/handler.hpp"
#include "goro/http/header.hpp"
#include "goro/http/log.hpp"
#include "goro/http/metrics.hpp"
#include "goro/http/middleware.hpp"
#include "goro/http/pattern_error.hpp"
#include "goro/http/request.hpp"
#include "goro/http/response.hpp"
#include "goro/http/router.hpp"
#include "goro/http/server.hpp"
