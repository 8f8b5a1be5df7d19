// goro::http::Request: views over the connection's Exchange.
#include "goro/http/request.hpp"

#include "framework/http/server/exchange.hpp"
#include "goro/detail/park.hpp"

namespace goro::http {

using detail::Exchange;

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

// live_exchange() for a caller on no goroutine: x when its thread's token
// is `owner`. Out of line, and a tail call: the caller live() expects, a
// handler's goroutine, then pays for no stack frame.
[[gnu::noinline]] Exchange* live_off_goroutine(const void* owner, Exchange* x) noexcept {
  return owner == detail::thread_caller() ? x : nullptr;
}

// Request::live(), with handler_caller() spelled out: running_g() first,
// the thread's token only off goroutines. Inline here for this file's
// accessors, live()'s most frequent callers (three a request in
// goro-hello): written when the library's position-independent code made
// the compiler assume live() interposable and never inline it (the build
// now says -fno-semantic-interposition, cmake/GoroLibrary.cmake); the call
// and its stack frame were half of each check.
inline Exchange* live_exchange(Exchange* x, const std::atomic<const void*>* owner) noexcept {
  if (owner == nullptr) return x;
  const void* o = owner->load(std::memory_order_relaxed);
  if (const void* g = goro::detail::running_g(); g != nullptr) return o == g ? x : nullptr;
  return live_off_goroutine(o, x);
}

}  // namespace

Exchange* Request::live() const noexcept {
  return live_exchange(x_, owner_);
}

std::string_view Request::method() const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr ? x->head->method : std::string_view{};
}
std::string_view Request::target() const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr ? x->head->target : std::string_view{};
}
std::string_view Request::path() const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr ? x->path : std::string_view{};
}
std::string_view Request::raw_query() const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr ? x->query : std::string_view{};
}

std::string Request::query(std::string_view name) const {
  std::string found;
  for_each_query_value(raw_query(), name, [&](std::string v) {
    found = std::move(v);
    return false;
  });
  return found;
}

std::vector<std::string> Request::query_values(std::string_view name) const {
  std::vector<std::string> all;
  for_each_query_value(raw_query(), name, [&](std::string v) {
    all.push_back(std::move(v));
    return true;
  });
  return all;
}

bool Request::has_query(std::string_view name) const {
  bool found = false;
  for_each_query_value(raw_query(), name, [&](const std::string&) {
    found = true;
    return false;
  });
  return found;
}

std::string_view Request::host() const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr ? x->head->host : std::string_view{};
}
int Request::proto_major() const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr ? x->head->version_major : 0;
}
int Request::proto_minor() const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr ? x->head->version_minor : 0;
}
std::string_view Request::proto() const {
  const Exchange* x = live_exchange(x_, owner_);
  if (x == nullptr) return {};
  return x->head->version_minor == 0 ? "HTTP/1.0" : "HTTP/1.1";
}

std::string_view Request::header(std::string_view name) const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr ? x->head->headers.get(name).value_or(std::string_view{})
                      : std::string_view{};
}
bool Request::has_header(std::string_view name) const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr && x->head->headers.count(name) > 0;
}
std::vector<std::string_view> Request::header_values(std::string_view name) const {
  std::vector<std::string_view> out;
  if (const Exchange* x = live_exchange(x_, owner_))
    x->head->headers.for_each_value(name, [&](std::string_view v) { out.push_back(v); });
  return out;
}
std::size_t Request::header_count() const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr ? x->head->headers.size() : 0;
}
std::pair<std::string_view, std::string_view> Request::header_at(std::size_t i) const {
  const Exchange* x = live_exchange(x_, owner_);
  if (x == nullptr) return {};
  detail::HeaderField f = x->head->headers[i];
  return {f.name, f.value};
}

std::string_view Request::path_value(std::string_view name) const {
  if (live_exchange(x_, owner_) == nullptr) return {};
  if (route_ == nullptr || route_->kind != MatchResult::Kind::kFound) return {};
  return route_->values.get(name);
}
std::string_view Request::pattern() const {
  if (live_exchange(x_, owner_) == nullptr) return {};
  return route_ != nullptr && route_->kind == MatchResult::Kind::kFound ? route_->pattern
                                                                        : std::string_view{};
}

BodyReader& Request::body() {
  return body_;  // its reads check the caller themselves
}

void Request::set_read_deadline(std::chrono::steady_clock::time_point t) {
  if (Exchange* x = live_exchange(x_, owner_)) x->body_deadline = t;
}

const tls::ConnectionState* Request::tls() const {
  detail::Exchange* x = live_exchange(x_, owner_);
  return x != nullptr && x->tls != nullptr ? &x->tls->state() : nullptr;
}

std::string Request::remote_addr() const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr ? x->remote_addr() : std::string{};
}

const Context& Request::context() {
  Exchange* x = live_exchange(x_, owner_);
  if (x == nullptr) {
    // A caller that may not touch the request gets a context that is
    // already done (as every request's is once its handler returned).
    static const Context* const done = [] {
      auto [ctx, cancel] = with_cancel(Context::background());
      cancel();
      return new Context(std::move(ctx));  // NOLINT(cppcoreguidelines-owning-memory): immortal
    }();
    return *done;
  }
  if (!x->ctx) {
    auto [ctx, cancel] = with_cancel(x->s->base_ctx);
    x->ctx = std::move(ctx);
    x->ctx_cancel = std::move(cancel);
    detail::maybe_start_background_read(*x);
  }
  return *x->ctx;
}

std::string_view Request::id() const {
  const Exchange* x = live_exchange(x_, owner_);
  return x != nullptr ? std::string_view(x->id) : std::string_view{};
}
void Request::set_id(std::string id) {
  if (Exchange* x = live_exchange(x_, owner_)) x->id = std::move(id);
}

}  // namespace goro::http
