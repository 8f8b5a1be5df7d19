// goro::http::Router: Go 1.22 ServeMux patterns (docs/DESIGN.md "Router and middleware").
//
// Example:
//   using goro::http::Request, goro::http::ResponseWriter;
//   goro::http::Router r;
//   r.handle("GET /hello/{name}", [](Request& req, ResponseWriter& w) {
//     w.write(fmt::format("Hello, {}!\n", req.path_value("name")));
//   });
//   r.handle("POST /items/{id}", [](Request& req, ResponseWriter& w) {
//     if (req.path_value("id").empty()) return goro::http::error(w, "no id", 400);
//     w.write_header(204);
//   });
//   goro::http::Server srv{{.addr = ":8080"}, r};
//
// Patterns are "[METHOD ][HOST]/[PATH]" with "{name}", "{rest...}" and "{$}"
// wildcards; the most specific match wins; "GET" also matches HEAD.
// Registration throws PatternError for an invalid pattern or a conflict.
// Requests that match nothing get "404 page not found"; a path that matches
// only with other methods gets 405 with a sorted Allow header (both text/plain,
// both replaceable: not_found(), method_not_allowed()); an unclean
// path ("/a/../b", "//x") or a subtree root without its slash gets a 301.
// The mechanism (the segment tree) is framework/http/router/route_table.cpp.
//
// A Router is a cheap handle: copies share the routes (the server keeps one).
// Register every route before serving: handle() must not race with requests.
#pragma once

#include <memory>
#include <string_view>

#include "goro/http/handler.hpp"
#include "goro/http/pattern_error.hpp"

namespace goro::http {

class Router {
 public:
  Router();

  void handle(std::string_view pattern, Handler h);
  // Replaces the 404 handler.
  void not_found(Handler h);
  // Replaces the 405 handler; the Allow header is set when it runs (a JSON
  // API answers its own error body, say, instead of the text/plain one).
  void method_not_allowed(Handler h);

  // Routes one request (a Router is a Handler).
  void operator()(Request& req, ResponseWriter& w) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace goro::http
