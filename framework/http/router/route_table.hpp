// goro::http routing core: Go 1.22 ServeMux patterns matched by a segment tree.
//
// RouteTable is the runtime-free half of goro::http::Router: it maps pattern
// strings to dense integer ids and, per request, maps (method, host, path) to
// one id plus the wildcard values, or to the response the router owes
// instead (404, 405 with Allow, 301 redirect). The Router stores handlers in
// a vector indexed by id. The mechanism is described in route_table.cpp.
//
// Patterns: "[METHOD ][HOST]/[PATH]" (at least one space or tab after METHOD).
//   - No METHOD matches every method; "GET" also matches HEAD; any other
//     method matches exactly. No HOST matches every host.
//   - PATH segments are literals or whole-segment wildcards: "{name}" matches
//     one non-empty segment, "{name...}" the rest of the path (last only),
//     "{$}" only the end of a path that ends in '/'. A trailing '/' matches
//     the whole subtree ("/static/" matches "/static/a/b"). Names are ASCII
//     identifiers, unique within a pattern. Literals are unescaped, so
//     "/a%2Fb" is one segment "a/b".
//   - Precedence: a host-specific pattern that matches beats host-less ones;
//     otherwise the most specific pattern wins, the one matching a strict
//     subset of the other's requests. Two patterns with the same host that
//     both match some request while neither is more specific conflict, and
//     registering the second throws. Identical patterns conflict too.
//
// Requests: `path` is the escaped path of the request target, without the
// query ("/a%2Fb/c"). Matching cleans it first (".", "..", "//"); an unclean
// path answers a redirect to the clean one. Segments are unescaped one by one,
// so "%2F" never splits a segment. `host` is the Host header; its port is
// stripped. CONNECT requests are matched on the path and host as given.
//
// Threads: add() must not race with anything; match() is const and may run
// concurrently from any number of threads once registration is over.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

// Spelled from the project root: the router tests compile this engine without
// goro_http's public include path. Same file, so #pragma once still holds.
#include <goro/http/pattern_error.hpp>

namespace goro::http {

namespace detail {
class RouteTree;
}

// RouteTable::add throws PatternError (goro/http/pattern_error.hpp, public
// because goro::http::Router lets it through) for an invalid pattern or a
// conflict with an already registered one.

// Wildcard values of one match, in pattern order.
//
// Lifetime: a name views the RouteTable's copy of the pattern (valid while the
// table lives). A value views either the `path` passed to match() (when the
// segment had no '%') or a buffer owned by this object (when it had to be
// unescaped): it is valid until the path's storage dies, this object is
// destroyed, or it is reused by the next match(), whichever comes first.
// Moving keeps values valid; copying is not offered for that reason.
class PathValues {
 public:
  struct Entry {
    std::string_view name;
    std::string_view value;
  };

  PathValues() = default;
  PathValues(PathValues&&) noexcept = default;
  PathValues& operator=(PathValues&&) noexcept = default;
  PathValues(const PathValues&) = delete;
  PathValues& operator=(const PathValues&) = delete;

  // The value of wildcard `name`, or "" if the pattern has no such wildcard
  // (as Go's Request.PathValue). Use find() to tell absent from empty.
  std::string_view get(std::string_view name) const noexcept;
  const Entry* find(std::string_view name) const noexcept;

  std::span<const Entry> entries() const noexcept { return entries_; }
  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }

 private:
  friend class detail::RouteTree;

  std::vector<Entry> entries_;
  // Unescaped values. Sized before a match starts and never grown during it,
  // so views into it stay put while the match pushes more values.
  std::unique_ptr<char[]> unescaped_;
  std::size_t unescaped_capacity_ = 0;
  std::size_t unescaped_size_ = 0;
};

struct MatchResult {
  enum class Kind {
    kFound,             // `id`, `pattern` and `values` describe the route
    kNotFound,          // answer 404
    kMethodNotAllowed,  // answer 405 with the `allow` header value
    kRedirect,          // answer 301 Moved Permanently to `redirect_to`
  };

  Kind kind = Kind::kNotFound;
  int id = -1;               // kFound: the id add() returned
  std::string_view pattern;  // kFound: the pattern as registered (table lifetime)
  // kMethodNotAllowed: sorted, ", "-separated methods that would match; HEAD
  // is listed whenever GET is. Example: "GET, HEAD, POST".
  std::string allow;
  // kRedirect: the escaped target path. The caller appends "?" and the raw
  // query, if the request had one.
  std::string redirect_to;
  PathValues values;  // kFound only; empty otherwise
};

class RouteTable {
 public:
  RouteTable();
  ~RouteTable();
  RouteTable(RouteTable&&) noexcept;
  RouteTable& operator=(RouteTable&&) noexcept;

  // Registers `pattern` and returns its id: 0 for the first pattern, then
  // 1, 2, ... Throws PatternError if the pattern is invalid or conflicts
  // with a registered one; the table is then unchanged.
  int add(std::string_view pattern);

  // Routes one request into `out`. Reusing one MatchResult across requests
  // (say, one per connection) makes a match allocation-free in steady state.
  void match(std::string_view method, std::string_view host, std::string_view path,
             MatchResult& out) const;
  MatchResult match(std::string_view method, std::string_view host, std::string_view path) const;

  std::size_t size() const noexcept;
  std::string_view pattern(int id) const;  // as registered; id must be valid

 private:
  std::unique_ptr<detail::RouteTree> tree_;
};

}  // namespace goro::http
