// <goro/http/test.hpp>: run a handler, or a middleware chain around one,
// in-process against a recorded response, without a socket (Go's
// net/http/httptest: NewRequest + NewRecorder).
//
// The request goes through the server's own parser and the response through
// its own writer (framing, Content-Length or chunked, Date, Content-Type
// sniffing, HEAD, 100-continue, the 500 of a handler that throws), so what is
// recorded is what a client would receive: `wire` holds the bytes, `status`,
// `header` and `body` (chunked coding removed) what they say.
//
// Example:
//   goro::http::Handler hello = [](goro::http::Request& req, goro::http::ResponseWriter& w) {
//     w.header().set("Content-Type", "text/plain");
//     w.write(fmt::format("Hello, {}!\n", req.query("name")));
//   };
//   goro::http::test::RecordedResponse res =
//       goro::http::test::serve(hello, {.method = "GET", .target = "/?name=Ada"});
//   if (res.status != 200 || res.body != "Hello, Ada!\n") return 1;
//   if (res.header.get("Content-Type") != "text/plain") return 1;
//
// A handler that blocks (a channel, a sleep, goro::fs, goro::blocking) must
// be served from a goroutine, inside goro::run, as on a server; one that
// only computes may be served from any thread. Request::remote_addr() is
// "192.0.2.1:1234" and Request::context() is never cancelled by a client
// (there is none); the server's timeouts do not apply.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "goro/http/handler.hpp"
#include "goro/http/header.hpp"
#include "goro/http/server.hpp"

namespace goro::http::test {

// A request to serve (Go's httptest.NewRequest). It is sent as HTTP/1.1 with
// `Host: host` unless `header` has a Host, and with a Content-Length for a
// non-empty body unless `header` has Content-Length or Transfer-Encoding
// (then the body must be framed accordingly).
struct RequestSpec {
  std::string method = "GET";
  std::string target = "/";  // origin form ("/a?b=c") or absolute form
  Header header = {};
  std::string body = {};
  std::string host = "example.com";
};

// What the server answered to one request.
struct RecordedResponse {
  int status = 0;      // 0: no response (the request was incomplete)
  Header header;       // every field as sent, Date and framing fields included
  std::string body;    // the body, chunked coding removed; empty for HEAD
  std::string wire;    // the bytes the server wrote, a "100 Continue" included
  bool close = false;  // the server would close the connection afterwards
};

// Serves one request with `handler` under `options` (limits such as
// max_body_bytes and server_name apply; addresses, timeouts and signals do
// not).
RecordedResponse serve(const Handler& handler, const RequestSpec& request,
                       const ServerOptions& options = {});

// Serves raw request bytes: every request in them in order, as the
// connection loop would (pipelining), up to a response that closes the
// connection or to the end of the bytes. A malformed request gets the
// server's error response (400, 413, 431, 501, ...), as on a socket.
std::vector<RecordedResponse> serve_raw(const Handler& handler, std::string_view bytes,
                                        const ServerOptions& options = {});

}  // namespace goro::http::test
