// The tree's answer equals the definition. For random non-conflicting tables
// and random requests, the pattern RouteTable picks must be the one a brute
// force search picks: among the patterns matching the request (host-specific
// ones first), the one more specific than every other. This checks the
// argument in route_table.cpp's essay that the first match of the ordered walk is
// the most specific, including after backtracking.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "framework/http/router/route_pattern.hpp"
#include "framework/http/router/route_table.hpp"

namespace goro::http {
namespace {

using detail::Pattern;
using detail::Relation;
using detail::Segment;

// A request path as the tree sees it: its segments, then a trailing-slash
// token if it ends in '/'.
struct Tokens {
  std::vector<std::string> segs;
  bool trailing = false;
};

Tokens tokenize(const std::string& path) {
  Tokens t;
  std::size_t i = 1;
  while (i < path.size()) {
    const std::size_t j = std::min(path.find('/', i), path.size());
    t.segs.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  t.trailing = path.back() == '/';
  return t;
}

// The definition of a path match, written independently of the tree.
bool path_matches(const std::vector<Segment>& segs, std::size_t k, const Tokens& t, std::size_t i) {
  const std::size_t n = t.segs.size() + (t.trailing ? 1 : 0);  // tokens left: segs + '/'
  if (k == segs.size()) return i == n;
  const Segment& s = segs[k];
  const bool at_slash = t.trailing && i == t.segs.size();
  switch (s.kind) {
    case Segment::Kind::kMulti:
      return i < n;  // the rest, possibly just the trailing slash
    case Segment::Kind::kEnd:
      return at_slash && k + 1 == segs.size();
    case Segment::Kind::kWild:
      return i < t.segs.size() && path_matches(segs, k + 1, t, i + 1);
    case Segment::Kind::kLiteral:
      return i < t.segs.size() && t.segs[i] == s.text && path_matches(segs, k + 1, t, i + 1);
  }
  return false;
}

bool matches(const Pattern& p, const std::string& method, const std::string& host,
             const std::string& path) {
  const bool method_ok =
      p.method.empty() || p.method == method || (p.method == "GET" && method == "HEAD");
  if (!method_ok || (!p.host.empty() && p.host != host)) return false;
  return path_matches(p.segments, 0, tokenize(path), 0);
}

bool more_specific(const Pattern& a, const Pattern& b) {
  const Relation m = detail::compare_methods(a, b);
  const Relation p = detail::compare_paths(a, b);
  if (m == Relation::kEquivalent) return p == Relation::kMoreSpecific;
  if (p == Relation::kEquivalent) return m == Relation::kMoreSpecific;
  return m == Relation::kMoreSpecific && p == Relation::kMoreSpecific;
}

std::optional<std::string> brute_force(const std::vector<Pattern>& table, const std::string& method,
                                       const std::string& host, const std::string& path) {
  std::vector<const Pattern*> hits;
  for (bool host_specific : {true, false}) {
    for (const Pattern& p : table) {
      if (p.host.empty() != host_specific && matches(p, method, host, path)) hits.push_back(&p);
    }
    if (!hits.empty()) break;
  }
  for (const Pattern* winner : hits) {
    bool beats_all = true;
    for (const Pattern* other : hits) {
      if (other != winner && !more_specific(*winner, *other)) beats_all = false;
    }
    if (beats_all) return winner->text;
  }
  EXPECT_TRUE(hits.empty()) << "no most specific pattern for " << method << " " << host << path;
  return std::nullopt;
}

std::string random_pattern(std::mt19937& rng, bool with_hosts) {
  auto pick = [&rng](std::initializer_list<const char*> xs) {
    return std::string(
        xs.begin()[std::uniform_int_distribution<std::size_t>(0, xs.size() - 1)(rng)]);
  };
  // std::string's operator+ trips GCC 12's -Wrestrict false positive at -O3
  // (GCC bug 105329), hence append() throughout.
  std::string text = pick({"", "", "GET ", "HEAD ", "POST "});
  if (with_hosts) text.append(pick({"", "", "", "h.com"}));
  const int depth = std::uniform_int_distribution<int>(0, 3)(rng);
  for (int i = 0; i < depth; ++i) {
    text.append("/").append(pick({"a", "b", "c", "{w}"}));
    if (text.ends_with("{w}")) text.insert(text.size() - 1, std::to_string(i));
  }
  text += pick({"", "", "/", "/{rest...}", "/{$}"});
  if (text.empty() || text.back() == ' ' || text.back() == 'm') text += "/";
  return text;
}

std::string random_path(std::mt19937& rng) {
  const int depth = std::uniform_int_distribution<int>(0, 4)(rng);
  std::string path;
  for (int i = 0; i < depth; ++i) {
    path += "/";
    path += "abcd"[std::uniform_int_distribution<int>(0, 3)(rng)];
  }
  if (path.empty() || std::uniform_int_distribution<int>(0, 3)(rng) == 0) path += "/";
  return path;
}

// Tables of random patterns, requests against them: the table's answer must
// be the brute force's. Returns {found, redirects, misses}.
std::array<int, 3> check_random_tables(bool with_hosts) {
  int found = 0, redirects = 0, misses = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    RouteTable table;
    std::vector<Pattern> patterns;
    for (int i = 0; i < 12; ++i) {
      const std::string text = random_pattern(rng, with_hosts);
      try {
        table.add(text);
        patterns.push_back(detail::parse_pattern(text));
      } catch (const PatternError&) {
        // A conflict (or a duplicate); the table is unchanged.
      }
    }
    for (int i = 0; i < 60; ++i) {
      const char* methods[] = {"GET", "HEAD", "POST", "PUT"};
      const char* hosts[] = {"", "h.com", "o.com"};
      const std::string method = methods[std::uniform_int_distribution<int>(0, 3)(rng)];
      const std::string host = hosts[std::uniform_int_distribution<int>(0, 2)(rng)];
      const std::string path = random_path(rng);
      const std::optional<std::string> want = brute_force(patterns, method, host, path);
      const MatchResult got = table.match(method, host, path);
      SCOPED_TRACE(testing::Message() << "seed " << seed << ": " << method << " " << host << path);
      if (got.kind == MatchResult::Kind::kFound) {
        ++found;
        EXPECT_TRUE(want.has_value());
        EXPECT_EQ(got.pattern, want.value_or("(none)"));
      } else if (got.kind == MatchResult::Kind::kRedirect) {
        // Only the subtree redirect applies: the paths are clean.
        ++redirects;
        const std::string with_slash = std::string(path).append("/");
        EXPECT_EQ(got.redirect_to, with_slash);
        EXPECT_TRUE(brute_force(patterns, method, host, with_slash).has_value());
      } else {
        ++misses;
        EXPECT_FALSE(want.has_value());
      }
    }
  }
  std::printf("found %d, redirects %d, misses %d\n", found, redirects, misses);
  return {found, redirects, misses};
}

TEST(RouterProperty, TreeAgreesWithBruteForceMostSpecific) {
  const auto [found, redirects, misses] = check_random_tables(true);
  // The generator must exercise every outcome, or the test proves little.
  EXPECT_GT(found, 5000);
  EXPECT_GT(redirects, 100);
  EXPECT_GT(misses, 1000);
}

// Without host patterns the static table ("Static routes" in
// route_table.cpp) answers for literal method patterns before the walk:
// its answers must be the most specific pattern too.
TEST(RouterProperty, StaticTableAgreesWithBruteForceMostSpecific) {
  const auto [found, redirects, misses] = check_random_tables(false);
  EXPECT_GT(found, 5000);
  EXPECT_GT(redirects, 100);
  EXPECT_GT(misses, 1000);
}

// The static table against the walk itself, on request paths the brute
// force does not model (escapes, unclean paths): a twin table with one host
// pattern for a host never asked for has the table switched off, so it
// answers every request by the walk. Both must agree on every outcome.
TEST(RouterProperty, StaticTableAgreesWithTheWalkOnAnySpelling) {
  const char* pieces[] = {"a", "b", "c", "%61", "%2F", "%2e", ".", "..", "", "%", "%zz", "A"};
  int static_hits = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    RouteTable with_table;
    RouteTable walk_only;
    walk_only.add("never.example/zz");
    for (int i = 0; i < 12; ++i) {
      const std::string text = random_pattern(rng, false);
      try {
        with_table.add(text);
        walk_only.add(text);
      } catch (const PatternError&) {
        // A conflict: neither table has it (the twin refuses it too).
      }
    }
    for (int i = 0; i < 80; ++i) {
      const char* methods[] = {"GET", "HEAD", "POST", "PUT"};
      const std::string method = methods[std::uniform_int_distribution<int>(0, 3)(rng)];
      std::string path;
      const int depth = std::uniform_int_distribution<int>(1, 4)(rng);
      for (int d = 0; d < depth; ++d) {
        path += "/";
        path += pieces[std::uniform_int_distribution<int>(0, 11)(rng)];
      }
      const MatchResult a = with_table.match(method, "", path);
      const MatchResult b = walk_only.match(method, "", path);
      SCOPED_TRACE(testing::Message() << "seed " << seed << ": " << method << " " << path);
      EXPECT_EQ(static_cast<int>(a.kind), static_cast<int>(b.kind));
      EXPECT_EQ(a.pattern, b.pattern);
      EXPECT_EQ(a.redirect_to, b.redirect_to);
      EXPECT_EQ(a.allow, b.allow);
      EXPECT_EQ(a.values.entries().size(), b.values.entries().size());
      if (a.kind == MatchResult::Kind::kFound && a.pattern.find('{') == std::string_view::npos)
        ++static_hits;
    }
  }
  EXPECT_GT(static_hits, 500);  // literal patterns found, most through the table
}

}  // namespace
}  // namespace goro::http
