// libFuzzer target for the router core (framework/http/router/): pattern
// parsing, the specificity relation, registration and matching.
//
// Input layout: lines split at '\n'. Line 0 is the request's method, line 1
// its Host, line 2 its path (escaped, without a query); each further line, up
// to kMaxPatterns, is a pattern, registered in order.
//
// Oracles, beyond ASan/UBSan and the router's own debug assertions (on here,
// as in the debug and asan presets):
//   - parse_pattern returns or throws PatternError, nothing else; what it
//     returns keeps the text and has the shape route_pattern.hpp describes
//     (at least one segment, {$} and multis only last, wildcard names valid
//     and unique, a token or no method, no '{' or '/' in the host);
//   - the relation is one: compare_methods and compare_paths answer the
//     inverse when their arguments swap, a pattern is equivalent to itself,
//     conflicts() is symmetric;
//   - RouteTable::add accepts a pattern exactly when it parses and conflicts
//     with no pattern accepted before, returns the next id, and leaves the
//     table unchanged when it throws;
//   - match() agrees with the definition (route_table.hpp) written out below
//     without the tree: an unclean path is redirected to its clean form; a
//     found route matches the request, yields the wildcard values the
//     definition does, and no other matching route is more specific or has
//     the host the found one lacks; a 404 or 405 means no route matches; a
//     trailing-slash redirect means the path plus '/' matches some route;
//   - a MatchResult reused from an earlier match answers as a fresh one.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "framework/http/router/route_path.hpp"
#include "framework/http/router/route_pattern.hpp"
#include "framework/http/router/route_table.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using goro::http::MatchResult;
using goro::http::PatternError;
using goro::http::RouteTable;
using goro::http::detail::Pattern;
using goro::http::detail::Relation;
using goro::http::detail::Segment;

// Registration compares each pattern with every earlier one; a dozen keeps
// an execution in microseconds while still building multi-level trees.
constexpr std::size_t kMaxPatterns = 12;

bool is_ident_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (!first && c >= '0' && c <= '9');
}

bool is_wildcard_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!is_ident_char(name[i], i == 0)) return false;
  }
  return true;
}

std::vector<std::string> wildcard_names(const Pattern& p) {
  std::vector<std::string> names;
  for (const Segment& s : p.segments) {
    const bool wild = s.kind == Segment::Kind::kWild || s.kind == Segment::Kind::kMulti;
    if (wild && !s.text.empty()) names.push_back(s.text);
  }
  return names;
}

void check_parsed(const Pattern& p, std::string_view text) {
  FUZZ_CHECK(p.text == text);
  FUZZ_CHECK(!p.segments.empty());
  for (std::size_t i = 0; i + 1 < p.segments.size(); ++i) {
    FUZZ_CHECK(p.segments[i].kind != Segment::Kind::kMulti);
    FUZZ_CHECK(p.segments[i].kind != Segment::Kind::kEnd);
  }
  const std::vector<std::string> names = wildcard_names(p);
  for (std::size_t i = 0; i < names.size(); ++i) {
    FUZZ_CHECK(is_wildcard_name(names[i]));
    for (std::size_t j = 0; j < i; ++j)
      FUZZ_CHECK(names[i] != names[j]);
  }
  FUZZ_CHECK(p.method.empty() || goro::http::detail::is_http_token(p.method));
  FUZZ_CHECK(p.host.find_first_of("{/") == std::string::npos);
}

// nullopt: `text` is not a pattern (parse_pattern threw PatternError).
std::optional<Pattern> parse_checked(std::string_view text) {
  try {
    Pattern p = goro::http::detail::parse_pattern(text);
    check_parsed(p, text);
    return p;
  } catch (const PatternError&) {
    return std::nullopt;
  } catch (...) {
    goro::fuzz::fail("parse_pattern threw something other than PatternError", __FILE__, __LINE__);
  }
  return std::nullopt;
}

Relation inverse(Relation r) {
  if (r == Relation::kMoreGeneral) return Relation::kMoreSpecific;
  if (r == Relation::kMoreSpecific) return Relation::kMoreGeneral;
  return r;
}

void check_relation(const Pattern& a, const Pattern& b) {
  using goro::http::detail::compare_methods;
  using goro::http::detail::compare_paths;
  FUZZ_CHECK(compare_methods(a, b) == inverse(compare_methods(b, a)));
  FUZZ_CHECK(compare_paths(a, b) == inverse(compare_paths(b, a)));
  FUZZ_CHECK(goro::http::detail::conflicts(a, b) == goro::http::detail::conflicts(b, a));
}

// True when `a` matches a strict subset of the requests `b` matches.
bool more_specific(const Pattern& a, const Pattern& b) {
  const Relation m = goro::http::detail::compare_methods(a, b);
  const Relation p = goro::http::detail::compare_paths(a, b);
  const bool m_ok = m == Relation::kEquivalent || m == Relation::kMoreSpecific;
  const bool p_ok = p == Relation::kEquivalent || p == Relation::kMoreSpecific;
  return m_ok && p_ok && !(m == Relation::kEquivalent && p == Relation::kEquivalent);
}

// A segment as the router compares it: unescaped, or verbatim when it holds
// a '%' that does not start an escape.
std::string unescaped(std::string_view raw) {
  auto buf = std::make_unique<char[]>(raw.size() + 1);
  const std::size_t n = goro::http::detail::path_unescape(raw, buf.get());
  if (n == goro::http::detail::kInvalidEscape) return std::string(raw);
  return std::string(buf.get(), n);
}

struct Request {
  std::string_view method;
  std::string_view host;  // as matched: without its port, except for CONNECT
  std::string_view path;  // as matched: clean and starting with '/'
};

// The definition of a match (route_table.hpp), walking the pattern's
// segments against the path's; the wildcard values it yields, or nullopt.
// `path` has no empty segment (the caller matches clean paths only).
std::optional<std::vector<std::string>> reference_match(const Pattern& p, const Request& r) {
  const bool method_ok =
      p.method.empty() || p.method == r.method || (p.method == "GET" && r.method == "HEAD");
  if (!method_ok || (!p.host.empty() && p.host != r.host)) return std::nullopt;
  std::vector<std::string> values;
  std::string_view rest = r.path;
  for (const Segment& s : p.segments) {
    if (rest.empty()) return std::nullopt;
    if (s.kind == Segment::Kind::kMulti) {
      if (!s.text.empty()) values.push_back(unescaped(rest.substr(1)));
      return values;
    }
    if (s.kind == Segment::Kind::kEnd) {
      return rest == "/" ? std::optional(values) : std::nullopt;
    }
    if (rest == "/") return std::nullopt;  // only {$} and multis take the trailing slash
    const std::size_t slash = std::min(rest.find('/', 1), rest.size());
    const std::string segment = unescaped(rest.substr(1, slash - 1));
    rest.remove_prefix(slash);
    if (s.kind == Segment::Kind::kLiteral && segment != s.text) return std::nullopt;
    if (s.kind == Segment::Kind::kWild) values.push_back(segment);
  }
  return rest.empty() ? std::optional(values) : std::nullopt;
}

bool any_matches(const std::vector<Pattern>& routes, const Request& r) {
  for (const Pattern& p : routes) {
    if (reference_match(p, r)) return true;
  }
  return false;
}

void check_found(const std::vector<Pattern>& routes, const Request& r, const MatchResult& m) {
  FUZZ_CHECK(m.id >= 0 && static_cast<std::size_t>(m.id) < routes.size());
  const Pattern& found = routes[static_cast<std::size_t>(m.id)];
  FUZZ_CHECK(m.pattern == found.text);
  const auto values = reference_match(found, r);
  FUZZ_CHECK(values.has_value());
  const std::vector<std::string> names = wildcard_names(found);
  FUZZ_CHECK(m.values.size() == names.size() && values->size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    FUZZ_CHECK(m.values.entries()[i].name == names[i]);
    FUZZ_CHECK(m.values.entries()[i].value == (*values)[i]);
  }
  for (const Pattern& other : routes) {
    if (&other == &found || !reference_match(other, r)) continue;
    if (found.host.empty()) FUZZ_CHECK(other.host.empty());  // a host-specific match wins
    if (other.host == found.host) FUZZ_CHECK(!more_specific(other, found));
  }
}

void check_match(const std::vector<Pattern>& routes, std::string_view method, std::string_view host,
                 std::string_view path, const MatchResult& m) {
  using goro::http::detail::clean_path;
  using goro::http::detail::is_clean_path;
  using Kind = MatchResult::Kind;
  const bool is_connect = method == "CONNECT";
  if (!is_connect && !is_clean_path(path)) {
    const std::string clean = clean_path(path);
    FUZZ_CHECK(m.kind == Kind::kRedirect);
    FUZZ_CHECK(m.redirect_to == clean || m.redirect_to == clean + "/");
    return;
  }
  // A CONNECT path is matched as given; an unclean one may hold empty
  // segments, which the definition above does not cover.
  if (!is_clean_path(path)) return;
  const Request r{method, is_connect ? host : goro::http::detail::strip_host_port(host), path};
  switch (m.kind) {
    case Kind::kFound:
      check_found(routes, r, m);
      break;
    case Kind::kRedirect: {
      FUZZ_CHECK(path.back() != '/' && m.redirect_to == std::string(path) + "/");
      FUZZ_CHECK(any_matches(routes, Request{r.method, r.host, m.redirect_to}));
      break;
    }
    case Kind::kNotFound:
      FUZZ_CHECK(m.allow.empty());
      FUZZ_CHECK(!any_matches(routes, r));
      break;
    case Kind::kMethodNotAllowed:
      FUZZ_CHECK(!m.allow.empty());
      FUZZ_CHECK(!any_matches(routes, r));
      break;
  }
}

bool same_answer(const MatchResult& a, const MatchResult& b) {
  if (a.kind != b.kind || a.id != b.id || a.pattern != b.pattern || a.allow != b.allow ||
      a.redirect_to != b.redirect_to || a.values.size() != b.values.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    if (a.values.entries()[i].name != b.values.entries()[i].name ||
        a.values.entries()[i].value != b.values.entries()[i].value) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string_view> lines =
      goro::fuzz::split_input(goro::fuzz::as_text(data, size), '\n', 3 + kMaxPatterns);
  if (lines.size() < 3) return 0;
  const std::string_view method = lines[0], host = lines[1], path = lines[2];

  RouteTable table;
  std::vector<Pattern> parsed;    // every line that parsed
  std::vector<Pattern> accepted;  // by id
  for (std::size_t i = 3; i < lines.size(); ++i) {
    const std::optional<Pattern> p = parse_checked(lines[i]);
    if (p) {
      FUZZ_CHECK(goro::http::detail::compare_paths(*p, *p) == Relation::kEquivalent);
      for (const Pattern& q : parsed)
        check_relation(*p, q);
    }
    bool expect_accepted = p.has_value();
    for (const Pattern& q : accepted) {
      if (expect_accepted && goro::http::detail::conflicts(*p, q)) expect_accepted = false;
    }
    const std::size_t before = table.size();
    try {
      const int id = table.add(lines[i]);
      FUZZ_CHECK(expect_accepted && static_cast<std::size_t>(id) == before);
      accepted.push_back(*p);
    } catch (const PatternError&) {
      FUZZ_CHECK(!expect_accepted && table.size() == before);
    } catch (...) {
      goro::fuzz::fail("RouteTable::add threw something other than PatternError", __FILE__,
                       __LINE__);
    }
    if (p) parsed.push_back(*p);
  }

  const MatchResult fresh = table.match(method, host, path);
  check_match(accepted, method, host, path, fresh);

  MatchResult reused;
  table.match("GET", host, "/a/b/", reused);
  table.match(method, host, path, reused);
  FUZZ_CHECK(same_answer(fresh, reused));
  return 0;
}
