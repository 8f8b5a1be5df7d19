// RouteTable end to end: the cases of Go's ServeMux documentation,
// routing_tree_test.go and server_test.go, as facts about the results.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "framework/http/router/route_table.hpp"

namespace goro::http {
namespace {

RouteTable table(std::initializer_list<const char*> patterns) {
  RouteTable t;
  for (const char* p : patterns)
    t.add(p);
  return t;
}

// One line per outcome: "<pattern> name=value ...", "404", "405 <Allow>" or
// "301 <location>".
std::string route(const RouteTable& t, std::string_view method, std::string_view host,
                  std::string_view path) {
  const MatchResult r = t.match(method, host, path);
  switch (r.kind) {
    case MatchResult::Kind::kFound: {
      std::string out(r.pattern);
      for (const PathValues::Entry& e : r.values.entries()) {
        out.append(" ").append(e.name).append("=").append(e.value);
      }
      return out;
    }
    case MatchResult::Kind::kNotFound:
      return "404";
    case MatchResult::Kind::kMethodNotAllowed:
      return std::string("405 ").append(r.allow);
    case MatchResult::Kind::kRedirect:
      return std::string("301 ").append(r.redirect_to);
  }
  return "?";
}

std::string add_error(RouteTable& t, std::string_view pattern) {
  try {
    t.add(pattern);
  } catch (const PatternError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(RouterMatch, GoRoutingTreeCases) {
  const RouteTable t =
      table({"/a", "/a/b", "/a/{x}", "/g/h/i", "/g/{x}/j", "/a/b/{x...}", "/a/b/{y}", "/a/b/{$}"});
  EXPECT_EQ(route(t, "GET", "", "/a"), "/a");
  EXPECT_EQ(route(t, "Get", "", "/b"), "404");
  EXPECT_EQ(route(t, "Get", "", "/a/b"), "/a/b");
  EXPECT_EQ(route(t, "Get", "", "/a/c"), "/a/{x} x=c");
  EXPECT_EQ(route(t, "Get", "", "/a/b/"), "/a/b/{$}");
  EXPECT_EQ(route(t, "Get", "", "/a/b/c"), "/a/b/{y} y=c");
  EXPECT_EQ(route(t, "Get", "", "/a/b/c/d"), "/a/b/{x...} x=c/d");
  EXPECT_EQ(route(t, "Get", "", "/g/h/i"), "/g/h/i");
  EXPECT_EQ(route(t, "Get", "", "/g/h/j"), "/g/{x}/j x=h");
}

TEST(RouterMatch, GoMethodAndHostCases) {
  const RouteTable t =
      table({"/item/", "POST /item/{user}", "GET /item/{user}", "/item/{user}", "/item/{user}/{id}",
             "/item/{user}/new", "/item/{$}", "POST alt.com/item/{user}", "GET /headwins",
             "HEAD /headwins", "/path/{p...}"});
  EXPECT_EQ(route(t, "GET", "", "/item/jba"), "GET /item/{user} user=jba");
  EXPECT_EQ(route(t, "POST", "", "/item/jba"), "POST /item/{user} user=jba");
  EXPECT_EQ(route(t, "HEAD", "", "/item/jba"), "GET /item/{user} user=jba");
  EXPECT_EQ(route(t, "get", "", "/item/jba"), "/item/{user} user=jba");  // case-sensitive
  EXPECT_EQ(route(t, "POST", "", "/item/jba/17"), "/item/{user}/{id} user=jba id=17");
  EXPECT_EQ(route(t, "GET", "", "/item/jba/new"), "/item/{user}/new user=jba");
  EXPECT_EQ(route(t, "GET", "", "/item/"), "/item/{$}");
  EXPECT_EQ(route(t, "GET", "", "/item/jba/17/line2"), "/item/");
  EXPECT_EQ(route(t, "POST", "alt.com", "/item/jba"), "POST alt.com/item/{user} user=jba");
  EXPECT_EQ(route(t, "GET", "alt.com", "/item/jba"), "GET /item/{user} user=jba");
  EXPECT_EQ(route(t, "GET", "", "/item"), "301 /item/");
  EXPECT_EQ(route(t, "GET", "", "/headwins"), "GET /headwins");
  EXPECT_EQ(route(t, "HEAD", "", "/headwins"), "HEAD /headwins");  // HEAD beats GET
  EXPECT_EQ(route(t, "GET", "", "/path/to/file"), "/path/{p...} p=to/file");
  EXPECT_EQ(route(t, "GET", "", "/path/*"), "/path/{p...} p=*");
}

TEST(RouterMatch, EndAnchorSingleAndMultiWildcards) {
  const RouteTable end = table({"/a/b/{$}"});
  EXPECT_EQ(route(end, "GET", "", "/a/b"), "301 /a/b/");
  EXPECT_EQ(route(end, "GET", "", "/a/b/"), "/a/b/{$}");
  EXPECT_EQ(route(end, "GET", "", "/a/b/c"), "404");
  EXPECT_EQ(route(end, "GET", "", "/a/b/c/d"), "404");

  const RouteTable single = table({"/a/b/{w}"});
  EXPECT_EQ(route(single, "GET", "", "/a/b"), "404");
  EXPECT_EQ(route(single, "GET", "", "/a/b/"), "404");
  EXPECT_EQ(route(single, "GET", "", "/a/b/c"), "/a/b/{w} w=c");
  EXPECT_EQ(route(single, "GET", "", "/a/b/c/d"), "404");

  const RouteTable multi = table({"/a/b/{w...}"});
  EXPECT_EQ(route(multi, "GET", "", "/a/b"), "301 /a/b/");
  EXPECT_EQ(route(multi, "GET", "", "/a/b/"), "/a/b/{w...} w=");
  EXPECT_EQ(route(multi, "GET", "", "/a/b/c"), "/a/b/{w...} w=c");
  EXPECT_EQ(route(multi, "GET", "", "/a/b/c/d"), "/a/b/{w...} w=c/d");

  const RouteTable all = table({"/a/b/{$}", "/a/b/{w}", "/a/b/{w...}"});
  EXPECT_EQ(route(all, "GET", "", "/a/b"), "301 /a/b/");
  EXPECT_EQ(route(all, "GET", "", "/a/b/"), "/a/b/{$}");
  EXPECT_EQ(route(all, "GET", "", "/a/b/c"), "/a/b/{w} w=c");
  EXPECT_EQ(route(all, "GET", "", "/a/b/c/d"), "/a/b/{w...} w=c/d");

  const RouteTable root = table({"/{$}", "/"});
  EXPECT_EQ(route(root, "GET", "", "/"), "/{$}");
  EXPECT_EQ(route(root, "GET", "", "/x"), "/");
}

TEST(RouterMatch, ConnectPathsAreNotCleaned) {
  const RouteTable t = table({"CONNECT /a//b", "/a/{x}/b", "/{x}/{y...}"});
  EXPECT_EQ(route(t, "CONNECT", "", "/a//b"), "CONNECT /a//b");
  EXPECT_EQ(route(t, "CONNECT", "", "/a/z/b"), "/a/{x}/b x=z");
  EXPECT_EQ(route(t, "CONNECT", "", "//c"), "/{x}/{y...} x= y=c");
  EXPECT_EQ(route(t, "CONNECT", "", "/a//c"), "/{x}/{y...} x=a y=/c");
  EXPECT_EQ(route(t, "GET", "", "/a//b"), "301 /a/b");

  const RouteTable u = table({"/a/{x}/b", "/{x}/", "/{x}/{y}/{z}"});
  EXPECT_EQ(route(u, "CONNECT", "", "/a//b"), "/a/{x}/b x=");
  EXPECT_EQ(route(u, "CONNECT", "", "//"), "/{x}/ x=");
  EXPECT_EQ(route(u, "CONNECT", "", "///c"), "/{x}/{y}/{z} x= y= z=c");
  EXPECT_EQ(route(u, "CONNECT", "", "example.com:443"), "404");
}

TEST(RouterMatch, MethodNotAllowedListsSortedAllow) {
  EXPECT_EQ(route(table({"POST /"}), "GET", "", "/foo"), "405 POST");
  EXPECT_EQ(route(table({"GET /"}), "POST", "", "/foo"), "405 GET, HEAD");
  EXPECT_EQ(route(table({"HEAD /x"}), "GET", "", "/x"), "405 HEAD");
  EXPECT_EQ(route(table({"GET /r", "POST /r", "DELETE /r"}), "PUT", "", "/r"),
            "405 DELETE, GET, HEAD, POST");
  EXPECT_EQ(route(table({"/r", "GET /r"}), "PUT", "", "/r"), "/r");

  const RouteTable hosts = table({"GET a.com/", "PUT b.com/", "POST /foo/{x}"});
  EXPECT_EQ(route(hosts, "DELETE", "", "/foo"), "404");
  EXPECT_EQ(route(hosts, "DELETE", "", "/foo/bar"), "405 POST");
  EXPECT_EQ(route(hosts, "DELETE", "a.com", "/foo/bar"), "405 GET, HEAD, POST");
  EXPECT_EQ(route(hosts, "DELETE", "a.com:8080", "/foo/bar"), "405 GET, HEAD, POST");
  EXPECT_EQ(route(hosts, "DELETE", "b.com", "/bar"), "405 PUT");

  // The path with a '/' appended counts, as the redirect step would try it.
  const RouteTable subtree = table({"GET /a/"});
  EXPECT_EQ(route(subtree, "GET", "", "/a"), "301 /a/");
  EXPECT_EQ(route(subtree, "DELETE", "", "/a"), "405 GET, HEAD");
  EXPECT_EQ(route(subtree, "DELETE", "", "/a/x"), "405 GET, HEAD");
  EXPECT_EQ(route(subtree, "DELETE", "", "/b"), "404");
}

TEST(RouterMatch, ServeMuxDocumentationExamples) {
  const RouteTable t = table({"/index.html", "GET /static/", "example.com/", "example.com/{$}",
                              "/b/{bucket}/o/{objectname...}"});
  EXPECT_EQ(route(t, "GET", "", "/index.html"), "/index.html");
  EXPECT_EQ(route(t, "POST", "other.org", "/index.html"), "/index.html");
  EXPECT_EQ(route(t, "GET", "", "/static/css/site.css"), "GET /static/");
  EXPECT_EQ(route(t, "HEAD", "", "/static/x"), "GET /static/");
  EXPECT_EQ(route(t, "POST", "", "/static/x"), "405 GET, HEAD");
  EXPECT_EQ(route(t, "GET", "", "/static"), "301 /static/");
  EXPECT_EQ(route(t, "GET", "example.com", "/anything"), "example.com/");
  EXPECT_EQ(route(t, "GET", "example.com", "/"), "example.com/{$}");
  EXPECT_EQ(route(t, "GET", "other.org", "/anything"), "404");
  EXPECT_EQ(route(t, "GET", "", "/b/mybucket/o/path/to/obj"),
            "/b/{bucket}/o/{objectname...} bucket=mybucket objectname=path/to/obj");
  // A host-specific pattern wins even over a more specific host-less one.
  EXPECT_EQ(route(t, "GET", "example.com", "/index.html"), "example.com/");

  const RouteTable images = table({"/images/", "/images/thumbnails/"});
  EXPECT_EQ(route(images, "GET", "", "/images/thumbnails/a.png"), "/images/thumbnails/");
  EXPECT_EQ(route(images, "GET", "", "/images/a.png"), "/images/");
  EXPECT_EQ(route(images, "GET", "", "/images"), "301 /images/");
  EXPECT_EQ(route(table({"/images/", "/images"}), "GET", "", "/images"), "/images");
}

TEST(RouterMatch, HostSpecificPatternsFallBackToHostless) {
  const RouteTable t = table({"/a/{x}", "example.com/a/b"});
  EXPECT_EQ(route(t, "GET", "example.com", "/a/b"), "example.com/a/b");
  EXPECT_EQ(route(t, "GET", "example.com:8080", "/a/b"), "example.com/a/b");
  EXPECT_EQ(route(t, "GET", "example.com", "/a/c"), "/a/{x} x=c");
  EXPECT_EQ(route(t, "GET", "other.com", "/a/b"), "/a/{x} x=b");
  EXPECT_EQ(route(t, "GET", "", "/a/b"), "/a/{x} x=b");
  EXPECT_EQ(route(t, "GET", "EXAMPLE.COM", "/a/b"), "/a/{x} x=b");  // exact, as Go
  const RouteTable v6 = table({"::1/x"});
  EXPECT_EQ(route(v6, "GET", "[::1]:80", "/x"), "::1/x");
}

TEST(RouterMatch, UncleanPathsRedirectToCleanOnes) {
  const RouteTable t = table({"/a/b", "/c/"});
  EXPECT_EQ(route(t, "GET", "", "//a//b"), "301 /a/b");
  EXPECT_EQ(route(t, "GET", "", "/a/./b"), "301 /a/b");
  EXPECT_EQ(route(t, "GET", "", "/a/x/../b"), "301 /a/b");
  EXPECT_EQ(route(t, "GET", "", "/../a/b"), "301 /a/b");
  EXPECT_EQ(route(t, "GET", "", "/x//y"), "301 /x/y");  // even with no match, as Go
  EXPECT_EQ(route(t, "GET", "", "//c"), "301 /c/");     // straight to the subtree
  EXPECT_EQ(route(t, "GET", "", "/c/./d/"), "301 /c/d/");
  EXPECT_EQ(route(t, "GET", "", ""), "301 /");
  EXPECT_EQ(route(t, "CONNECT", "", "//a//b"), "404");
}

TEST(RouterMatch, TrailingSlashRedirects) {
  EXPECT_EQ(route(table({"/", "/a/"}), "GET", "", "/a"), "301 /a/");
  EXPECT_EQ(route(table({"/", "/a/"}), "GET", "", "/b"), "/");
  EXPECT_EQ(route(table({"/a/{x...}"}), "GET", "", "/a"), "301 /a/");
  EXPECT_EQ(route(table({"/a/{$}"}), "GET", "", "/a"), "301 /a/");
  EXPECT_EQ(route(table({"GET /a/"}), "POST", "", "/a"), "405 GET, HEAD");
  EXPECT_EQ(route(table({"/a%2Fb/"}), "GET", "", "/a%2Fb"), "301 /a%2Fb/");
  EXPECT_EQ(route(table({"/a/"}), "GET", "", "/a/"), "/a/");
  const RouteTable deep = table({"/", "/a/b/c/", "/x/{y}/{$}"});
  EXPECT_EQ(route(deep, "GET", "", "/a/b/c"), "301 /a/b/c/");
  EXPECT_EQ(route(deep, "GET", "", "/x/q"), "301 /x/q/");
  EXPECT_EQ(route(deep, "GET", "", "/a/b"), "/");
  EXPECT_EQ(route(deep, "GET", "", "/a/b/c/d/e"), "/a/b/c/");
  // Past 63 segments the depth filter saturates but must not lose a case.
  std::string subtree;
  for (int i = 0; i < 70; ++i)
    subtree += "/s";
  const RouteTable very_deep = table({"/", (subtree + "/").c_str()});
  EXPECT_EQ(route(very_deep, "GET", "", subtree), std::string("301 ").append(subtree).append("/"));
  EXPECT_EQ(route(very_deep, "GET", "", subtree.substr(0, 100)), "/");
  // "/a/" matches "/a/b" through its wildcard, and "/a/b/" only that way too.
  EXPECT_EQ(route(table({"/a/", "/a/b/c"}), "GET", "", "/a/b"), "/a/");
}

TEST(RouterMatch, SegmentsAreUnescapedOneByOne) {
  const RouteTable wild = table({"/{x}"});
  EXPECT_EQ(route(wild, "GET", "", "/a%2Fb"), "/{x} x=a/b");
  EXPECT_EQ(route(wild, "GET", "", "/a/b"), "404");
  EXPECT_EQ(route(wild, "GET", "", "/a%zz"), "/{x} x=a%zz");  // invalid escape kept
  EXPECT_EQ(route(wild, "GET", "", "/%E2%82%AC"), "/{x} x=\xe2\x82\xac");

  const RouteTable lit = table({"/a%2Fb", "/c/d"});
  EXPECT_EQ(route(lit, "GET", "", "/a%2Fb"), "/a%2Fb");
  EXPECT_EQ(route(lit, "GET", "", "/a%2fb"), "/a%2Fb");
  EXPECT_EQ(route(lit, "GET", "", "/a/b"), "404");
  EXPECT_EQ(route(lit, "GET", "", "/%63/d"), "/c/d");
  EXPECT_EQ(route(lit, "GET", "", "/c%2Fd"), "404");

  EXPECT_EQ(route(table({"/{rest...}"}), "GET", "", "/a%2Fb/c%20d"), "/{rest...} rest=a/b/c d");
  EXPECT_EQ(route(table({"/f/{rest...}"}), "GET", "", "/f/a%zz/b"), "/f/{rest...} rest=a%zz/b");

  // Go keys {$} as the literal "/", so there "/a/%2F" reaches "/a/{$}"; here
  // an escaped slash is an ordinary segment.
  const RouteTable end = table({"/a/{$}", "/a/{x}"});
  EXPECT_EQ(route(end, "GET", "", "/a/%2F"), "/a/{x} x=/");
  EXPECT_EQ(route(end, "GET", "", "/a/"), "/a/{$}");
}

// Literal method patterns are answered from the static table
// (route_table.cpp, "Static routes") when the request spells the path the
// same way; every other case takes the walk, with the walk's answer.
TEST(RouterMatch, StaticTableAnswersAsTheWalkWould) {
  RouteTable t =
      table({"GET /a/b", "GET /a/{x}", "POST /a/b", "HEAD /e/{y}", "GET /c/", "GET /%64"});
  EXPECT_EQ(route(t, "GET", "", "/a/b"), "GET /a/b");
  EXPECT_EQ(route(t, "GET", "any.host:80", "/a/b"), "GET /a/b");
  EXPECT_EQ(route(t, "POST", "", "/a/b"), "POST /a/b");
  EXPECT_EQ(route(t, "HEAD", "", "/a/b"), "GET /a/b");  // HEAD's own tree, then GET's
  EXPECT_EQ(route(t, "HEAD", "", "/e/a"), "HEAD /e/{y} y=a");
  EXPECT_EQ(route(t, "PUT", "", "/a/b"), "405 GET, HEAD, POST");
  EXPECT_EQ(route(t, "GET", "", "/a/%62"), "GET /a/b");  // unescaped by the walk
  EXPECT_EQ(route(t, "GET", "", "/a/%2F"), "GET /a/{x} x=/");
  EXPECT_EQ(route(t, "GET", "", "/a//b"), "301 /a/b");  // unclean: the walk's redirect
  EXPECT_EQ(route(t, "GET", "", "/a/./b"), "301 /a/b");
  EXPECT_EQ(route(t, "GET", "", "/c"), "301 /c/");   // a subtree, not a literal
  EXPECT_EQ(route(t, "GET", "", "/d"), "GET /%64");  // an escaped literal
  EXPECT_EQ(route(t, "GET", "", "/%64"), "GET /%64");
  // A host pattern is tried before host-less ones: the table stands aside.
  t.add("h.com/a/b");
  EXPECT_EQ(route(t, "GET", "h.com", "/a/b"), "h.com/a/b");
  EXPECT_EQ(route(t, "GET", "o.com", "/a/b"), "GET /a/b");
}

// The static table keys a string by its length and its first and last eight
// bytes: strings over 16 bytes that differ only in between, and methods of
// every length, must still tell apart; the table grows as routes come.
TEST(RouterMatch, StaticTableTellsLongStringsApart) {
  RouteTable t = table({"GET /aaaaaaaa/one/zzzzzzzz", "GET /aaaaaaaa/two/zzzzzzzz", "GET /abcdefgh",
                        "GET /abcdefgh/", "GET /abcdefghi", "LONGMETHODNAME-ONE /abc",
                        "LONGMETHODNAME-TWO /abc", "M /abc", "MKCOL /abc"});
  EXPECT_EQ(route(t, "GET", "", "/aaaaaaaa/one/zzzzzzzz"), "GET /aaaaaaaa/one/zzzzzzzz");
  EXPECT_EQ(route(t, "GET", "", "/aaaaaaaa/two/zzzzzzzz"), "GET /aaaaaaaa/two/zzzzzzzz");
  EXPECT_EQ(route(t, "GET", "", "/aaaaaaaa/six/zzzzzzzz"), "404");
  EXPECT_EQ(route(t, "GET", "", "/abcdefgh"), "GET /abcdefgh");
  EXPECT_EQ(route(t, "GET", "", "/abcdefghi"), "GET /abcdefghi");
  EXPECT_EQ(route(t, "GET", "", "/abcdefgh/"), "GET /abcdefgh/");
  EXPECT_EQ(route(t, "LONGMETHODNAME-ONE", "", "/abc"), "LONGMETHODNAME-ONE /abc");
  EXPECT_EQ(route(t, "LONGMETHODNAME-TWO", "", "/abc"), "LONGMETHODNAME-TWO /abc");
  EXPECT_EQ(route(t, "LONGMETHODNAME-SIX", "", "/abc"),
            "405 LONGMETHODNAME-ONE, LONGMETHODNAME-TWO, M, MKCOL");
  EXPECT_EQ(route(t, "M", "", "/abc"), "M /abc");
  EXPECT_EQ(route(t, "MKCOL", "", "/abc"), "MKCOL /abc");
  for (int i = 0; i < 100; ++i)
    t.add(std::string("PUT /many/").append(std::to_string(i)));
  for (int i = 0; i < 100; ++i) {
    const std::string path = std::string("/many/").append(std::to_string(i));
    EXPECT_EQ(route(t, "PUT", "", path), std::string("PUT ").append(path));
  }
  EXPECT_EQ(route(t, "PUT", "", "/many/100"), "404");
  EXPECT_EQ(route(t, "GET", "", "/abcdefgh"), "GET /abcdefgh");
}

TEST(RouterMatch, BacktracksToTheWildcardBranch) {
  const RouteTable t = table({"/a/b/z", "/a/{x}/c", "/{y}/b/z", "/{u}/{w}/c/d"});
  EXPECT_EQ(route(t, "GET", "", "/a/b/c"), "/a/{x}/c x=b");
  EXPECT_EQ(route(t, "GET", "", "/a/b/z"), "/a/b/z");
  EXPECT_EQ(route(t, "GET", "", "/q/b/z"), "/{y}/b/z y=q");
  EXPECT_EQ(route(t, "GET", "", "/q/b/c/d"), "/{u}/{w}/c/d u=q w=b");
  EXPECT_EQ(route(t, "GET", "", "/a/b/c/d"), "/{u}/{w}/c/d u=a w=b");
  EXPECT_EQ(route(t, "GET", "", "/q%2F/b%2F/c/d"), "/{u}/{w}/c/d u=q/ w=b/");
}

TEST(RouterMatch, ManyLiteralChildren) {
  RouteTable t;
  for (int i = 19; i >= 0; --i)
    t.add(std::string("GET /k").append(std::to_string(i)).append("/{id}"));
  for (int i = 0; i < 20; ++i) {
    const std::string k = std::string("/k").append(std::to_string(i));
    EXPECT_EQ(route(t, "GET", "", std::string(k).append("/7")),
              std::string("GET ").append(k).append("/{id} id=7"));
  }
  EXPECT_EQ(route(t, "GET", "", "/k20/7"), "404");
  EXPECT_EQ(route(t, "GET", "", "/k1"), "404");
}

TEST(RouterMatch, IdsAndPatterns) {
  RouteTable t;
  EXPECT_EQ(t.add("GET /hello/{name}"), 0);
  EXPECT_EQ(t.add("/"), 1);
  EXPECT_EQ(t.add("POST example.com/x"), 2);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.pattern(0), "GET /hello/{name}");
  EXPECT_EQ(t.pattern(2), "POST example.com/x");
  const MatchResult r = t.match("GET", "localhost:8080", "/hello/gopher");
  EXPECT_EQ(r.kind, MatchResult::Kind::kFound);
  EXPECT_EQ(r.id, 0);
  EXPECT_EQ(r.values.get("name"), "gopher");
  EXPECT_EQ(t.match("GET", "", "/nothing").id, 1);
}

TEST(RouterMatch, ConflictsAndInvalidPatternsAreRejected) {
  RouteTable t = table({"/a/{x}"});
  EXPECT_EQ(add_error(t, "/{y}/b"),
            "goro/http: pattern \"/{y}/b\" conflicts with pattern \"/a/{x}\": \"/{y}/b\" and "
            "\"/a/{x}\" both match some paths, like \"/a/b\", but neither is more specific");
  EXPECT_EQ(add_error(t, "/a/{z}"),
            "goro/http: pattern \"/a/{z}\" conflicts with pattern \"/a/{x}\": \"/a/{z}\" matches "
            "the same requests as \"/a/{x}\"");
  EXPECT_EQ(add_error(t, "/a/{x"),
            "goro/http: invalid pattern \"/a/{x\": bad wildcard segment (must end with '}')");
  // A rejected pattern leaves the table as it was.
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(route(t, "GET", "", "/q/b"), "404");
  EXPECT_EQ(route(t, "GET", "", "/a/b"), "/a/{x} x=b");

  RouteTable doc = table({"GET /"});
  EXPECT_EQ(add_error(doc, "/index.html"),
            "goro/http: pattern \"/index.html\" conflicts with pattern \"GET /\": "
            "\"/index.html\" matches more methods than \"GET /\", but has a more specific path");
  EXPECT_EQ(add_error(doc, "GET /"),
            "goro/http: pattern \"GET /\" conflicts with pattern \"GET /\": \"GET /\" matches "
            "the same requests as \"GET /\"");
  EXPECT_EQ(add_error(doc, "HEAD /"), "<no error>");
  EXPECT_EQ(add_error(doc, "a.com/index.html"), "<no error>");
}

TEST(RouterMatch, PathValuesViewThePathOrTheirOwnBuffer) {
  const RouteTable t = table({"/{a}/{b}/{c...}"});
  const std::string path = "/plain/a%20b/x/y";
  MatchResult r;
  t.match("GET", "", path, r);
  ASSERT_EQ(r.kind, MatchResult::Kind::kFound);
  ASSERT_EQ(r.values.size(), 3u);
  EXPECT_EQ(r.values.entries()[0].name, "a");
  EXPECT_EQ(r.values.entries()[1].name, "b");
  EXPECT_EQ(r.values.entries()[2].name, "c");
  EXPECT_EQ(r.values.get("a"), "plain");
  EXPECT_EQ(r.values.get("b"), "a b");
  EXPECT_EQ(r.values.get("c"), "x/y");
  EXPECT_EQ(r.values.get("missing"), "");
  EXPECT_EQ(r.values.find("missing"), nullptr);
  // Unescaped segments view the path itself; decoded ones a private buffer.
  EXPECT_EQ(r.values.get("a").data(), path.data() + 1);
  EXPECT_EQ(r.values.get("c").data(), path.data() + 13);
  const char* b = r.values.get("b").data();
  EXPECT_TRUE(b < path.data() || b >= path.data() + path.size());

  // Moving keeps the views; reuse resets everything.
  MatchResult moved = std::move(r);
  EXPECT_EQ(moved.values.get("b"), "a b");
  t.match("GET", "", "/x/y", moved);
  EXPECT_EQ(moved.kind, MatchResult::Kind::kRedirect);
  EXPECT_EQ(moved.redirect_to, "/x/y/");
  EXPECT_TRUE(moved.values.empty());
  t.match("GET", "", "/%41/%42/%43%44/%45", moved);
  EXPECT_EQ(moved.kind, MatchResult::Kind::kFound);
  EXPECT_EQ(moved.values.get("a"), "A");
  EXPECT_EQ(moved.values.get("b"), "B");
  EXPECT_EQ(moved.values.get("c"), "CD/E");
  EXPECT_TRUE(moved.redirect_to.empty());
}

}  // namespace
}  // namespace goro::http
