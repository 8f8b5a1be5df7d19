// goro::http::Header, the http::errc category, chain() and error().
#include "goro/http/header.hpp"

#include <algorithm>

#include "framework/http/header_key.hpp"
#include "framework/http/header_list.hpp"
#include "framework/http/status_text.hpp"
#include "goro/http/handler.hpp"
#include "goro/http/request.hpp"

namespace goro::http {

namespace {

bool has_line_break(std::string_view v) {
  return v.find_first_of("\r\n") != std::string_view::npos;
}

}  // namespace

void Header::set(std::string_view name, std::string_view value) {
  del(name);
  add(name, value);
}

void Header::add(std::string_view name, std::string_view value) {
  if (has_line_break(name) || has_line_break(value)) return;
  fields_.push_back({detail::canonical_header_key(name), std::string(value)});
}

void Header::del(std::string_view name) {
  std::erase_if(fields_, [&](const Field& f) { return detail::equal_fold(f.name, name); });
}

std::string_view Header::get(std::string_view name) const {
  for (const Field& f : fields_) {
    if (detail::equal_fold(f.name, name)) return f.value;
  }
  return {};
}

bool Header::has(std::string_view name) const {
  return std::any_of(fields_.begin(), fields_.end(),
                     [&](const Field& f) { return detail::equal_fold(f.name, name); });
}

std::vector<std::string_view> Header::values(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const Field& f : fields_) {
    if (detail::equal_fold(f.name, name)) out.push_back(f.value);
  }
  return out;
}

namespace {

class HttpCategory : public std::error_category {
 public:
  const char* name() const noexcept override { return "goro.http"; }
  std::string message(int c) const override {
    switch (static_cast<errc>(c)) {
      case errc::body_too_large:
        return "http: request body too large";
      case errc::bad_request:
        return "http: malformed request body";
      case errc::content_length:
        return "http: wrote more than the declared Content-Length";
      case errc::header_written:
        return "http: response header already written";
    }
    return "http: unknown error";
  }
};

}  // namespace

const std::error_category& http_category() noexcept {
  static const HttpCategory category;
  return category;
}

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
