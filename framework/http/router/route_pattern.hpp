// Route patterns: parsing "[METHOD ][HOST]/[PATH]" and deciding how two
// patterns relate (which is more specific, whether they conflict). Internal to
// goro::http; RouteTable uses it at registration, never per request.
//
// Representation (as Go's pattern.go, whose names the functions keep): the
// path is a list of segments. A trailing '/' becomes an anonymous multi
// wildcard, so "/a/" is [literal "a", multi ""]; "{$}" becomes an end-of-path
// segment, so "/a/{$}" is [literal "a", end]. Literals are stored unescaped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace goro::http::detail {

struct Segment {
  enum class Kind : unsigned char {
    kLiteral,  // matches one path segment equal to `text` (unescaped)
    kWild,     // {text}: any one non-empty segment
    kMulti,    // {text...} or a trailing '/' (text empty): the rest of the path
    kEnd,      // {$}: only the trailing slash itself
  };
  Kind kind;
  std::string text;
};

struct Pattern {
  std::string text;    // as registered
  std::string method;  // "" matches every method
  std::string host;    // "" matches every host
  std::vector<Segment> segments;

  bool ends_in_multi() const noexcept {
    return !segments.empty() && segments.back().kind == Segment::Kind::kMulti;
  }
};

// Parses a pattern; throws PatternError naming the pattern and the reason.
Pattern parse_pattern(std::string_view text);

// How the requests matched by `a` relate to those matched by `b`.
enum class Relation {
  kEquivalent,    // the same requests
  kMoreGeneral,   // a matches everything b does, and more
  kMoreSpecific,  // b matches everything a does, and more
  kDisjoint,      // no request matches both
  kOverlaps,      // some request matches both, neither is more specific
};

Relation compare_methods(const Pattern& a, const Pattern& b) noexcept;
Relation compare_paths(const Pattern& a, const Pattern& b) noexcept;

// True when registering both would leave some request without a single most
// specific pattern: same host, and methods-and-paths equivalent or overlapping.
bool conflicts(const Pattern& a, const Pattern& b) noexcept;

// A human explanation of a conflict between `a` and `b`, with an example
// path that both match (Go's describeConflict).
std::string describe_conflict(const Pattern& a, const Pattern& b);

}  // namespace goro::http::detail
