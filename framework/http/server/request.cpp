// goro::http::Request: views over the connection's Exchange.
#include "goro/http/request.hpp"

#include "framework/http/server/exchange.hpp"

namespace goro::http {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded decoding: '+' is a space, %XX a byte; a
// malformed escape is kept as it is (Go's ParseQuery drops the pair instead;
// keeping it is kinder to hand-typed URLs and cannot smuggle anything).
std::string query_unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 &&
               hex_value(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2])));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Calls fn(decoded value) for each "name=value" pair of `query` whose decoded
// name is `name`; stops when fn returns false.
template <class Fn>
void for_each_query_value(std::string_view query, std::string_view name, Fn&& fn) {
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;
    std::size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    if (query_unescape(key) != name) continue;
    if (!fn(query_unescape(value))) return;
  }
}

}  // namespace

std::string_view Request::method() const {
  return x_->head->method;
}
std::string_view Request::target() const {
  return x_->head->target;
}
std::string_view Request::path() const {
  return x_->path;
}
std::string_view Request::raw_query() const {
  return x_->query;
}

std::string Request::query(std::string_view name) const {
  std::string found;
  for_each_query_value(x_->query, name, [&](std::string v) {
    found = std::move(v);
    return false;
  });
  return found;
}

std::vector<std::string> Request::query_values(std::string_view name) const {
  std::vector<std::string> all;
  for_each_query_value(x_->query, name, [&](std::string v) {
    all.push_back(std::move(v));
    return true;
  });
  return all;
}

bool Request::has_query(std::string_view name) const {
  bool found = false;
  for_each_query_value(x_->query, name, [&](const std::string&) {
    found = true;
    return false;
  });
  return found;
}

std::string_view Request::host() const {
  return x_->head->host;
}
int Request::proto_major() const {
  return x_->head->version_major;
}
int Request::proto_minor() const {
  return x_->head->version_minor;
}
std::string_view Request::proto() const {
  return x_->head->version_minor == 0 ? "HTTP/1.0" : "HTTP/1.1";
}

std::string_view Request::header(std::string_view name) const {
  return x_->head->headers.get(name).value_or(std::string_view{});
}
bool Request::has_header(std::string_view name) const {
  return x_->head->headers.count(name) > 0;
}
std::vector<std::string_view> Request::header_values(std::string_view name) const {
  std::vector<std::string_view> out;
  x_->head->headers.for_each_value(name, [&](std::string_view v) { out.push_back(v); });
  return out;
}
std::size_t Request::header_count() const {
  return x_->head->headers.size();
}
std::pair<std::string_view, std::string_view> Request::header_at(std::size_t i) const {
  detail::HeaderField f = x_->head->headers[i];
  return {f.name, f.value};
}

std::string_view Request::path_value(std::string_view name) const {
  if (route_ == nullptr || route_->kind != MatchResult::Kind::kFound) return {};
  return route_->values.get(name);
}
std::string_view Request::pattern() const {
  return route_ != nullptr && route_->kind == MatchResult::Kind::kFound ? route_->pattern
                                                                        : std::string_view{};
}

BodyReader& Request::body() {
  return body_;
}

void Request::set_read_deadline(std::chrono::steady_clock::time_point t) {
  x_->body_deadline = t;
}

std::string Request::remote_addr() const {
  return x_->remote_addr();
}

const Context& Request::context() {
  if (!x_->ctx) {
    auto [ctx, cancel] = with_cancel(x_->s->base_ctx);
    x_->ctx = std::move(ctx);
    x_->ctx_cancel = std::move(cancel);
    detail::maybe_start_background_read(*x_);
  }
  return *x_->ctx;
}

std::string_view Request::id() const {
  return x_->id;
}
void Request::set_id(std::string id) {
  x_->id = std::move(id);
}

}  // namespace goro::http
