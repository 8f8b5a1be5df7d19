// Pattern parsing, the specificity relation and conflicts, with the cases of
// Go's ServeMux documentation and pattern_test.go.
#include "framework/http/router/route_pattern.hpp"

#include <gtest/gtest.h>

#include <string>

#include "framework/http/router/route_table.hpp"

namespace goro::http::detail {
namespace {

// A compact rendering of a parsed pattern: "METHOD|HOST|segments", where a
// literal is itself, {x} and {x...} are as written, a trailing '/' is {...}
// and {$} is {$}.
std::string render(const Pattern& p) {
  std::string out = p.method + "|" + p.host + "|";
  for (const Segment& s : p.segments) {
    out += '/';
    switch (s.kind) {
      case Segment::Kind::kLiteral:
        out += s.text;
        break;
      case Segment::Kind::kWild:
        out += "{" + s.text + "}";
        break;
      case Segment::Kind::kMulti:
        out += "{" + s.text + "...}";
        break;
      case Segment::Kind::kEnd:
        out += "{$}";
        break;
    }
  }
  return out;
}

std::string parse_error(std::string_view text) {
  try {
    parse_pattern(text);
  } catch (const PatternError& e) {
    return e.what();
  }
  return "<no error>";
}

const char* name(Relation r) {
  switch (r) {
    case Relation::kEquivalent:
      return "equivalent";
    case Relation::kMoreGeneral:
      return "moreGeneral";
    case Relation::kMoreSpecific:
      return "moreSpecific";
    case Relation::kDisjoint:
      return "disjoint";
    case Relation::kOverlaps:
      return "overlaps";
  }
  return "?";
}

std::string paths(std::string_view a, std::string_view b) {
  return name(compare_paths(parse_pattern(a), parse_pattern(b)));
}

bool conflict(std::string_view a, std::string_view b) {
  return conflicts(parse_pattern(a), parse_pattern(b));
}

TEST(RouterPattern, ParsesMethodHostAndSegments) {
  EXPECT_EQ(render(parse_pattern("/")), "||/{...}");
  EXPECT_EQ(render(parse_pattern("/a")), "||/a");
  EXPECT_EQ(render(parse_pattern("/a/")), "||/a/{...}");
  EXPECT_EQ(render(parse_pattern("/path/to/something")), "||/path/to/something");
  EXPECT_EQ(render(parse_pattern("/{w1}/lit/{w2}")), "||/{w1}/lit/{w2}");
  EXPECT_EQ(render(parse_pattern("/{w1}/lit/{w2}/")), "||/{w1}/lit/{w2}/{...}");
  EXPECT_EQ(render(parse_pattern("example.com/")), "|example.com|/{...}");
  EXPECT_EQ(render(parse_pattern("GET /")), "GET||/{...}");
  EXPECT_EQ(render(parse_pattern("POST example.com/foo/{w}")), "POST|example.com|/foo/{w}");
  EXPECT_EQ(render(parse_pattern("/{$}")), "||/{$}");
  EXPECT_EQ(render(parse_pattern("DELETE example.com/a/{foo12}/{$}")),
            "DELETE|example.com|/a/{foo12}/{$}");
  EXPECT_EQ(render(parse_pattern("/foo/{$}")), "||/foo/{$}");
  EXPECT_EQ(render(parse_pattern("/{a}/foo/{rest...}")), "||/{a}/foo/{rest...}");
  EXPECT_EQ(render(parse_pattern("//")), "||//{...}");  // method-less: unclean allowed
  EXPECT_EQ(render(parse_pattern("/foo///./../bar")), "||/foo///./../bar");
  EXPECT_EQ(render(parse_pattern("a.com/foo//")), "|a.com|/foo//{...}");
  EXPECT_EQ(render(parse_pattern("/%61%62/%7b/%")), "||/ab/{/%");  // literals unescaped
  EXPECT_EQ(render(parse_pattern("GET\t  /x")), "GET||/x");
  EXPECT_EQ(render(parse_pattern("CONNECT /a//b")), "CONNECT||/a//b");
  EXPECT_EQ(render(parse_pattern("/{_x9}")), "||/{_x9}");
}

TEST(RouterPattern, RejectsInvalidPatternsNamingThem) {
  EXPECT_EQ(parse_error(""), "goro/http: invalid pattern \"\": empty pattern");
  EXPECT_EQ(parse_error("A=B /"), "goro/http: invalid pattern \"A=B /\": invalid method \"A=B\"");
  EXPECT_EQ(parse_error(" "), "goro/http: invalid pattern \" \": host/path missing /");
  EXPECT_EQ(parse_error("example.com"),
            "goro/http: invalid pattern \"example.com\": host/path missing /");
  EXPECT_EQ(parse_error("{a}/b"),
            "goro/http: invalid pattern \"{a}/b\": host contains '{' (missing initial '/'?)");
  EXPECT_EQ(parse_error("/{w}x"),
            "goro/http: invalid pattern \"/{w}x\": bad wildcard segment (must end with '}')");
  EXPECT_EQ(parse_error("/x{w}"),
            "goro/http: invalid pattern \"/x{w}\": bad wildcard segment (must start with '{')");
  EXPECT_EQ(parse_error("/a{x}"),
            "goro/http: invalid pattern \"/a{x}\": bad wildcard segment (must start with '{')");
  EXPECT_EQ(parse_error("/b_{bucket}"),
            "goro/http: invalid pattern \"/b_{bucket}\": bad wildcard segment (must start with "
            "'{')");
  EXPECT_EQ(parse_error("/{"),
            "goro/http: invalid pattern \"/{\": bad wildcard segment (must end with '}')");
  EXPECT_EQ(parse_error("/{wx"),
            "goro/http: invalid pattern \"/{wx\": bad wildcard segment (must end with '}')");
  EXPECT_EQ(parse_error("/a}"),
            "goro/http: invalid pattern \"/a}\": bad literal segment (stray '}')");
  EXPECT_EQ(parse_error("/{a$}"), "goro/http: invalid pattern \"/{a$}\": bad wildcard name \"a$\"");
  EXPECT_EQ(parse_error("/{1a}"), "goro/http: invalid pattern \"/{1a}\": bad wildcard name \"1a\"");
  EXPECT_EQ(parse_error("/{a{b}"),
            "goro/http: invalid pattern \"/{a{b}\": bad wildcard name \"a{b\"");
  EXPECT_EQ(parse_error("/{$...}"),
            "goro/http: invalid pattern \"/{$...}\": bad wildcard name \"$\"");
  EXPECT_EQ(parse_error("/{}"), "goro/http: invalid pattern \"/{}\": empty wildcard name");
  EXPECT_EQ(parse_error("/{...}"), "goro/http: invalid pattern \"/{...}\": empty wildcard name");
  EXPECT_EQ(parse_error("POST a.com/b/{$}/c"),
            "goro/http: invalid pattern \"POST a.com/b/{$}/c\": {$} not at end");
  EXPECT_EQ(parse_error("/a/{x...}/b"),
            "goro/http: invalid pattern \"/a/{x...}/b\": {...} wildcard not at end");
  EXPECT_EQ(parse_error("/a/{x...}/"),
            "goro/http: invalid pattern \"/a/{x...}/\": {...} wildcard not at end");
  EXPECT_EQ(parse_error("/{x}/{x...}"),
            "goro/http: invalid pattern \"/{x}/{x...}\": duplicate wildcard name \"x\"");
  EXPECT_EQ(parse_error("/{a}/{b}/{a}"),
            "goro/http: invalid pattern \"/{a}/{b}/{a}\": duplicate wildcard name \"a\"");
  EXPECT_EQ(parse_error("GET //"),
            "goro/http: invalid pattern \"GET //\": non-CONNECT pattern with unclean path can "
            "never match");
  EXPECT_EQ(parse_error("GET /a/../b"),
            "goro/http: invalid pattern \"GET /a/../b\": non-CONNECT pattern with unclean path "
            "can never match");
}

TEST(RouterPattern, ComparePaths) {
  // Cases from Go's TestComparePaths.
  EXPECT_EQ(paths("/a", "/a"), "equivalent");
  EXPECT_EQ(paths("/a", "/b"), "disjoint");
  EXPECT_EQ(paths("/a", "/"), "moreSpecific");
  EXPECT_EQ(paths("/a", "/{$}"), "disjoint");
  EXPECT_EQ(paths("/a", "/{x}"), "moreSpecific");
  EXPECT_EQ(paths("/a", "/{x...}"), "moreSpecific");
  EXPECT_EQ(paths("/b/{x}", "/b/{y}"), "equivalent");
  EXPECT_EQ(paths("/b/{x}", "/b/c"), "moreGeneral");
  EXPECT_EQ(paths("/b/{x}", "/b/{$}"), "disjoint");
  EXPECT_EQ(paths("/b/{x}", "/b/"), "moreSpecific");
  EXPECT_EQ(paths("/b/{x}", "/b/{x...}"), "moreSpecific");
  EXPECT_EQ(paths("/b/{x}", "/b/c/d"), "disjoint");
  EXPECT_EQ(paths("/b/{$}", "/b/"), "moreSpecific");
  EXPECT_EQ(paths("/b/{$}", "/b/{x...}"), "moreSpecific");
  EXPECT_EQ(paths("/b/{$}", "/b/{$}"), "equivalent");
  EXPECT_EQ(paths("/b/", "/b/{x...}"), "equivalent");
  EXPECT_EQ(paths("/b/", "/b/c/"), "moreGeneral");
  EXPECT_EQ(paths("/{z}/", "/a/"), "moreGeneral");
  EXPECT_EQ(paths("/{z}/{$}", "/a/"), "overlaps");
  EXPECT_EQ(paths("/a/{x}", "/{y}/b"), "overlaps");
  EXPECT_EQ(paths("/a/{x}/c", "/{y}/b/{z}"), "overlaps");
  EXPECT_EQ(paths("/images/thumbnails/", "/images/"), "moreSpecific");
  EXPECT_EQ(paths("/a/b/c/", "/a/b/c/d"), "moreGeneral");
  EXPECT_EQ(paths("/a/b/c/", "/a/{x}/c/d"), "overlaps");
  EXPECT_EQ(paths("/", "/"), "equivalent");
}

TEST(RouterPattern, ConflictsFollowGoRules) {
  EXPECT_TRUE(conflict("/a", "/a"));                    // identical
  EXPECT_TRUE(conflict("/a/{x}", "/a/{y}"));            // equivalent, names differ
  EXPECT_TRUE(conflict("/a/{x}", "/{y}/b"));            // overlap
  EXPECT_TRUE(conflict("GET /", "/index.html"));        // methods narrower, path wider
  EXPECT_TRUE(conflict("/a/{x...}", "/a/"));            // named vs anonymous multi
  EXPECT_TRUE(conflict("/{x}/{$}", "/a/{y...}"));       // overlap in the last segment
  EXPECT_TRUE(conflict("GET a.com/{x}", "a.com/y"));    // same host: normal rules
  EXPECT_FALSE(conflict("GET /a", "/a"));               // GET /a is more specific
  EXPECT_FALSE(conflict("HEAD /a", "GET /a"));          // HEAD is more specific than GET
  EXPECT_FALSE(conflict("POST /a/{x}", "GET /{y}/b"));  // methods disjoint
  EXPECT_FALSE(conflict("a.com/a", "/{x}"));            // host-specific wins by rule
  EXPECT_FALSE(conflict("a.com/a", "b.com/a"));         // different hosts
  EXPECT_FALSE(conflict("/{$}", "/"));
  EXPECT_FALSE(conflict("/images/thumbnails/", "/images/"));
  EXPECT_FALSE(conflict("/a/b", "/a/{x}"));
  EXPECT_FALSE(conflict("/b/{x}", "/b/{$}"));
}

TEST(RouterPattern, DescribesConflicts) {
  auto describe = [](std::string_view a, std::string_view b) {
    return describe_conflict(parse_pattern(a), parse_pattern(b));
  };
  EXPECT_EQ(describe("/a/{x}", "/{y}/b"),
            "\"/a/{x}\" and \"/{y}/b\" both match some paths, like \"/a/b\", but neither is more "
            "specific");
  EXPECT_EQ(describe("/a", "/a"), "\"/a\" matches the same requests as \"/a\"");
  EXPECT_EQ(describe("GET /", "/index.html"),
            "\"GET /\" matches fewer methods than \"/index.html\", but has a more general path");
  EXPECT_EQ(describe("/index.html", "GET /"),
            "\"/index.html\" matches more methods than \"GET /\", but has a more specific path");
}

}  // namespace
}  // namespace goro::http::detail
