// Handler, the one callable shape of goro::http, and http::error (Go's
// http.Error).
#pragma once

#include <functional>
#include <string_view>

#include "goro/http/request.hpp"
#include "goro/http/response.hpp"

namespace goro::http {

// A handler runs on the connection's goroutine, in blocking style. An
// exception escaping it is caught by the server: 500 if nothing was written,
// else the connection is closed; the server lives on.
using Handler = std::function<void(Request&, ResponseWriter&)>;

// Middleware is plain function composition: it takes the next handler and
// returns one that wraps it.
using Middleware = std::function<Handler(Handler)>;

// chain(h, {a, b, c}) == a(b(c(h))): a sees the request first.
Handler chain(Handler h, std::initializer_list<Middleware> middleware);

// Replies with `message` + "\n" as text/plain (nosniff), as Go's http.Error.
void error(ResponseWriter& w, std::string_view message, int status);

// Status reason phrase, as Go's http.StatusText ("" if unknown).
std::string_view status_text(int status) noexcept;

}  // namespace goro::http
