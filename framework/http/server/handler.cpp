// chain(), error() and status_text() (goro/http/handler.hpp).
#include "goro/http/handler.hpp"

#include <iterator>
#include <string>

#include "framework/http/parser/status_text.hpp"
#include "goro/http/header.hpp"
#include "goro/http/response.hpp"

namespace goro::http {

Handler chain(Handler h, std::initializer_list<Middleware> middleware) {
  // Wrap from the innermost (last) outwards so the first sees requests first.
  for (auto it = std::rbegin(middleware); it != std::rend(middleware); ++it)
    h = (*it)(std::move(h));
  return h;
}

void error(ResponseWriter& w, std::string_view message, int status) {
  Header& h = w.header();
  h.del("Content-Length");
  h.set("Content-Type", "text/plain; charset=utf-8");
  h.set("X-Content-Type-Options", "nosniff");
  w.write_header(status);
  std::string body(message);
  body.push_back('\n');
  (void)w.write(body);
}

std::string_view status_text(int status) noexcept {
  return detail::status_text(status);
}

}  // namespace goro::http
