// goro::http::Router: RouteTable (framework/http/router/route_table.hpp) plus a handler per route
// id, and the replies Go's ServeMux gives when no route takes the request.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "framework/http/router/route_table.hpp"
#include "framework/http/server/exchange.hpp"
#include "goro/http/router.hpp"

namespace goro::http {

struct Router::Impl {
  RouteTable table;
  std::vector<Handler> handlers;  // by route id
  Handler not_found;
  Handler method_not_allowed;

  // `x` is req's exchange (the caller checked it is live).
  void dispatch(const detail::Exchange& x, Request& req, ResponseWriter& w, MatchResult& m) const;
  // dispatch() for a match that found no route: out of line, so the found
  // route's path does not pay this one's frame (its strings, the redirect's
  // format) at every request.
  [[gnu::noinline]] void answer_miss(Request& req, ResponseWriter& w, const MatchResult& m) const;
};

Router::Router() : impl_(std::make_shared<Impl>()) {}

void Router::handle(std::string_view pattern, Handler h) {
  if (!h) throw PatternError(fmt::format("goro/http: nil handler for pattern \"{}\"", pattern));
  // Room for the handler first: once the table has the pattern, its id must
  // have a handler (the resize below then allocates nothing).
  if (impl_->handlers.size() == impl_->handlers.capacity())
    impl_->handlers.reserve(std::max<std::size_t>(8, 2 * impl_->handlers.size()));
  const int id = impl_->table.add(pattern);
  if (static_cast<std::size_t>(id) >= impl_->handlers.size()) impl_->handlers.resize(id + 1);
  impl_->handlers[id] = std::move(h);
}

void Router::not_found(Handler h) {
  impl_->not_found = std::move(h);
}

void Router::method_not_allowed(Handler h) {
  impl_->method_not_allowed = std::move(h);
}

void Router::operator()(Request& req, ResponseWriter& w) const {
  using detail::ExchangeAccess;
  detail::Exchange* x = ExchangeAccess::of(req);
  if (x == nullptr) return;  // a stale or foreign caller: nothing to route
  const MatchResult* outer = ExchangeAccess::route(req);
  if (outer == nullptr) {
    // The outermost Router matches into the connection's MatchResult, reused
    // across requests (no allocation once warm), and leaves it set.
    impl_->dispatch(*x, req, w, x->match);
    return;
  }
  // A Router under another Router's route: its own match for its handlers,
  // the outer one's back afterwards, also when the handler throws.
  struct Restore {
    Request& req;
    const MatchResult* outer;
    ~Restore() { ExchangeAccess::set_route(req, outer); }
  } restore{req, outer};
  MatchResult own;
  impl_->dispatch(*x, req, w, own);
}

void Router::Impl::dispatch(const detail::Exchange& x, Request& req, ResponseWriter& w,
                            MatchResult& m) const {
  // From the exchange: req's accessors would each check the caller again.
  table.match(x.head->method, x.head->host, x.path, m);
  detail::ExchangeAccess::set_route(req, &m);
  if (m.kind == MatchResult::Kind::kFound) {
    handlers[m.id](req, w);
    return;
  }
  answer_miss(req, w, m);
}

void Router::Impl::answer_miss(Request& req, ResponseWriter& w, const MatchResult& m) const {
  switch (m.kind) {
    case MatchResult::Kind::kFound:  // dispatch() ran the route itself
      return;
    case MatchResult::Kind::kNotFound:
      if (not_found) {
        not_found(req, w);
      } else {
        error(w, "404 page not found", 404);
      }
      return;
    case MatchResult::Kind::kMethodNotAllowed:
      w.header().set("Allow", m.allow);
      if (method_not_allowed) {
        method_not_allowed(req, w);
      } else {
        error(w, "Method Not Allowed", 405);
      }
      return;
    case MatchResult::Kind::kRedirect: {
      std::string location = m.redirect_to;
      if (!req.raw_query().empty()) {
        location.push_back('?');
        location.append(req.raw_query());
      }
      w.header().set("Location", location);
      // Go's Redirect: a short HTML body for GET and HEAD only.
      if (req.method() == "GET" || req.method() == "HEAD") {
        w.header().set("Content-Type", "text/html; charset=utf-8");
        w.write_header(301);
        (void)w.write(fmt::format("<a href=\"{}\">Moved Permanently</a>.\n\n", location));
      } else {
        w.write_header(301);
      }
      return;
    }
  }
}

}  // namespace goro::http
