// Pattern parsing and the specificity relation; the contract is in
// router_pattern.hpp. The algorithms follow Go's net/http pattern.go so that
// a route table accepted by Go is accepted here with the same precedence.
#include "framework/http/router/route_pattern.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "framework/http/router/route_path.hpp"
#include "framework/http/router/route_table.hpp"

namespace goro::http::detail {

namespace {

bool is_ident_start(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// Wildcard names are Go identifiers, restricted to ASCII.
bool is_valid_wildcard_name(std::string_view name) noexcept {
  if (name.empty() || !is_ident_start(name[0])) return false;
  for (char c : name) {
    if (!is_ident_start(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::string unescape_literal(std::string_view raw) {
  if (raw.find('%') == std::string_view::npos) return std::string(raw);
  auto buf = std::make_unique<char[]>(raw.size());
  const std::size_t n = path_unescape(raw, buf.get());
  if (n == kInvalidEscape) return std::string(raw);
  return std::string(buf.get(), n);
}

class PatternParser {
 public:
  explicit PatternParser(std::string_view text) : text_(text) {}

  Pattern parse() {
    if (text_.empty()) fail("empty pattern");
    Pattern p;
    p.text = std::string(text_);
    std::string_view rest = text_;
    // "[METHOD ][HOST]/[PATH]": the method ends at the first space or tab.
    if (const std::size_t ws = text_.find_first_of(" \t"); ws != std::string_view::npos) {
      p.method = std::string(text_.substr(0, ws));
      rest = text_.substr(ws + 1);
      rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
    }
    if (!p.method.empty() && !is_http_token(p.method)) {
      fail(fmt::format("invalid method \"{}\"", p.method));
    }
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos) fail("host/path missing /");
    p.host = std::string(rest.substr(0, slash));
    if (p.host.find('{') != std::string::npos) fail("host contains '{' (missing initial '/'?)");
    const std::string_view path = rest.substr(slash);
    // Requests are cleaned before matching, so such a pattern could only ever
    // see CONNECT requests (whose paths are not cleaned).
    if (!p.method.empty() && p.method != "CONNECT" && path != clean_path(path)) {
      fail("non-CONNECT pattern with unclean path can never match");
    }
    parse_segments(path, p);
    return p;
  }

 private:
  [[noreturn]] void fail(std::string_view why) const {
    throw PatternError(fmt::format("goro/http: invalid pattern \"{}\": {}", text_, why));
  }

  void parse_segments(std::string_view rest, Pattern& p) {
    std::vector<std::string_view> seen_names;
    while (!rest.empty()) {
      rest.remove_prefix(1);  // invariant: rest starts with '/'
      if (rest.empty()) {
        p.segments.push_back({Segment::Kind::kMulti, ""});  // trailing slash
        break;
      }
      const std::size_t end = std::min(rest.find('/'), rest.size());
      const std::string_view seg = rest.substr(0, end);
      rest.remove_prefix(end);
      const std::size_t brace = seg.find('{');
      if (brace == std::string_view::npos) {
        // Go accepts a stray '}' as literal text; we reject it as an
        // unbalanced brace (write %7D to mean the character).
        if (seg.find('}') != std::string_view::npos) fail("bad literal segment (stray '}')");
        p.segments.push_back({Segment::Kind::kLiteral, unescape_literal(seg)});
        continue;
      }
      if (brace != 0) fail("bad wildcard segment (must start with '{')");
      if (seg.back() != '}') fail("bad wildcard segment (must end with '}')");
      std::string_view name = seg.substr(1, seg.size() - 2);
      if (name == "$") {
        if (!rest.empty()) fail("{$} not at end");
        p.segments.push_back({Segment::Kind::kEnd, ""});
        break;
      }
      const bool multi = name.ends_with("...");
      if (multi) name.remove_suffix(3);
      if (multi && !rest.empty()) fail("{...} wildcard not at end");
      if (name.empty()) fail("empty wildcard name");
      if (!is_valid_wildcard_name(name)) fail(fmt::format("bad wildcard name \"{}\"", name));
      for (std::string_view s : seen_names) {
        if (s == name) fail(fmt::format("duplicate wildcard name \"{}\"", name));
      }
      seen_names.push_back(name);
      p.segments.push_back(
          {multi ? Segment::Kind::kMulti : Segment::Kind::kWild, std::string(name)});
    }
  }

  std::string_view text_;
};

Relation inverse(Relation r) noexcept {
  switch (r) {
    case Relation::kMoreGeneral:
      return Relation::kMoreSpecific;
    case Relation::kMoreSpecific:
      return Relation::kMoreGeneral;
    default:
      return r;
  }
}

// The relation of (a1 and a2) to (b1 and b2) given r1 = rel(a1, b1) and
// r2 = rel(a2, b2), where a request must match both parts (Go's
// combineRelationships).
Relation combine(Relation r1, Relation r2) noexcept {
  switch (r1) {
    case Relation::kEquivalent:
      return r2;
    case Relation::kDisjoint:
      return Relation::kDisjoint;
    case Relation::kOverlaps:
      return r2 == Relation::kDisjoint ? Relation::kDisjoint : Relation::kOverlaps;
    case Relation::kMoreGeneral:
    case Relation::kMoreSpecific:
      if (r2 == Relation::kEquivalent) return r1;
      if (r2 == inverse(r1)) return Relation::kOverlaps;
      return r2;
  }
  return Relation::kDisjoint;
}

bool is_wild(const Segment& s) noexcept {
  return s.kind == Segment::Kind::kWild || s.kind == Segment::Kind::kMulti;
}

Relation compare_segments(const Segment& a, const Segment& b) noexcept {
  using K = Segment::Kind;
  if (a.kind == K::kMulti && b.kind == K::kMulti) return Relation::kEquivalent;
  if (a.kind == K::kMulti) return Relation::kMoreGeneral;
  if (b.kind == K::kMulti) return Relation::kMoreSpecific;
  if (a.kind == K::kWild && b.kind == K::kWild) return Relation::kEquivalent;
  // A single wildcard never matches the trailing slash that {$} stands for.
  if (a.kind == K::kWild) return b.kind == K::kEnd ? Relation::kDisjoint : Relation::kMoreGeneral;
  if (b.kind == K::kWild) return a.kind == K::kEnd ? Relation::kDisjoint : Relation::kMoreSpecific;
  return a.kind == b.kind && a.text == b.text ? Relation::kEquivalent : Relation::kDisjoint;
}

// A path both patterns match, for conflict messages (Go's commonPath).
std::string common_path(const Pattern& a, const Pattern& b) {
  std::string out;
  auto write = [&out](const Segment& s) {
    out.push_back('/');
    if (s.kind == Segment::Kind::kLiteral || s.kind == Segment::Kind::kWild) out += s.text;
  };
  std::size_t i = 0;
  for (; i < a.segments.size() && i < b.segments.size(); ++i) {
    write(is_wild(a.segments[i]) ? b.segments[i] : a.segments[i]);
  }
  for (std::size_t j = i; j < a.segments.size(); ++j)
    write(a.segments[j]);
  for (std::size_t j = i; j < b.segments.size(); ++j)
    write(b.segments[j]);
  return out;
}

}  // namespace

Pattern parse_pattern(std::string_view text) {
  return PatternParser(text).parse();
}

Relation compare_methods(const Pattern& a, const Pattern& b) noexcept {
  if (a.method == b.method) return Relation::kEquivalent;
  if (a.method.empty()) return Relation::kMoreGeneral;
  if (b.method.empty()) return Relation::kMoreSpecific;
  // GET also matches HEAD.
  if (a.method == "GET" && b.method == "HEAD") return Relation::kMoreGeneral;
  if (a.method == "HEAD" && b.method == "GET") return Relation::kMoreSpecific;
  return Relation::kDisjoint;
}

Relation compare_paths(const Pattern& a, const Pattern& b) noexcept {
  const std::size_t na = a.segments.size();
  const std::size_t nb = b.segments.size();
  // Without a multi wildcard a pattern matches only paths of its own length.
  if (na != nb && !a.ends_in_multi() && !b.ends_in_multi()) return Relation::kDisjoint;
  Relation rel = Relation::kEquivalent;
  for (std::size_t i = 0; i < na && i < nb; ++i) {
    rel = combine(rel, compare_segments(a.segments[i], b.segments[i]));
    if (rel == Relation::kDisjoint) return rel;
  }
  if (na == nb) return rel;
  // The shorter one can still match the longer one's paths if it ends in a
  // multi wildcard, which makes it the more general of the two.
  if (na < nb && a.ends_in_multi()) return combine(rel, Relation::kMoreGeneral);
  if (nb < na && b.ends_in_multi()) return combine(rel, Relation::kMoreSpecific);
  return Relation::kDisjoint;
}

bool conflicts(const Pattern& a, const Pattern& b) noexcept {
  // Different hosts never conflict: either they match disjoint requests, or
  // one has no host and the host-specific pattern wins by rule.
  if (a.host != b.host) return false;
  const Relation m = compare_methods(a, b);
  if (m == Relation::kDisjoint) return false;
  const Relation r = combine(m, compare_paths(a, b));
  return r == Relation::kEquivalent || r == Relation::kOverlaps;
}

std::string describe_conflict(const Pattern& a, const Pattern& b) {
  const Relation m = compare_methods(a, b);
  const Relation p = compare_paths(a, b);
  const Relation r = combine(m, p);
  if (r == Relation::kEquivalent) {
    return fmt::format("\"{}\" matches the same requests as \"{}\"", a.text, b.text);
  }
  if (p == Relation::kOverlaps) {
    return fmt::format(
        "\"{}\" and \"{}\" both match some paths, like \"{}\", but neither is more specific",
        a.text, b.text, common_path(a, b));
  }
  if (m == Relation::kMoreGeneral && p == Relation::kMoreSpecific) {
    return fmt::format("\"{}\" matches more methods than \"{}\", but has a more specific path",
                       a.text, b.text);
  }
  return fmt::format("\"{}\" matches fewer methods than \"{}\", but has a more general path",
                     a.text, b.text);
}

}  // namespace goro::http::detail
