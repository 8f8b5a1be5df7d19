// Path cleaning, unescaping and host stripping: the cases of Go's path.Clean,
// cleanPath, url.PathUnescape and stripHostPort that the router relies on.
#include "framework/http/router/route_path.hpp"

#include <gtest/gtest.h>

#include <string>

namespace goro::http::detail {
namespace {

std::string unescape(std::string_view in) {
  std::string out(in.size(), '\0');
  const std::size_t n = path_unescape(in, out.data());
  if (n == kInvalidEscape) return "<invalid>";
  out.resize(n);
  return out;
}

TEST(RouterPath, CleanPathFollowsGoCleanPath) {
  EXPECT_EQ(clean_path(""), "/");
  EXPECT_EQ(clean_path("/"), "/");
  EXPECT_EQ(clean_path("a"), "/a");
  EXPECT_EQ(clean_path("a/"), "/a/");
  EXPECT_EQ(clean_path("//"), "/");
  EXPECT_EQ(clean_path("/a//b"), "/a/b");
  EXPECT_EQ(clean_path("/a/./b"), "/a/b");
  EXPECT_EQ(clean_path("/a/../b"), "/b");
  EXPECT_EQ(clean_path("/a/b/.."), "/a");
  EXPECT_EQ(clean_path("/a/b/../"), "/a/");
  EXPECT_EQ(clean_path("/../a"), "/a");
  EXPECT_EQ(clean_path("/.."), "/");
  EXPECT_EQ(clean_path("/."), "/");
  EXPECT_EQ(clean_path("/./"), "/");
  EXPECT_EQ(clean_path("/a/b/c/../../d/"), "/a/d/");
  EXPECT_EQ(clean_path("/a//"), "/a/");
  EXPECT_EQ(clean_path("/..a/b.."), "/..a/b..");
  EXPECT_EQ(clean_path("/a/%2E%2E/b"), "/a/%2E%2E/b");  // escaped dots are not dots
}

TEST(RouterPath, IsCleanPathAgreesWithCleanPath) {
  for (const char* p : {"/", "/a", "/a/", "/a/b/c", "/a.b/..c/", "/%2F", "", "a", "//", "/a//b",
                        "/a/./b", "/a/../b", "/a/.", "/a/..", "/./", "/a//", "/..a/b.."}) {
    EXPECT_EQ(is_clean_path(p), clean_path(p) == p) << p;
  }
}

TEST(RouterPath, PathUnescape) {
  EXPECT_EQ(unescape("abc"), "abc");
  EXPECT_EQ(unescape("a%2Fb"), "a/b");
  EXPECT_EQ(unescape("a%2fb"), "a/b");
  EXPECT_EQ(unescape("%62"), "b");
  EXPECT_EQ(unescape("a+b"), "a+b");
  EXPECT_EQ(unescape("%e2%82%ac"), "\xe2\x82\xac");
  EXPECT_EQ(unescape("%"), "<invalid>");
  EXPECT_EQ(unescape("%4"), "<invalid>");
  EXPECT_EQ(unescape("%zz"), "<invalid>");
  EXPECT_EQ(unescape("ab%4"), "<invalid>");
}

TEST(RouterPath, StripHostPort) {
  EXPECT_EQ(strip_host_port("example.com"), "example.com");
  EXPECT_EQ(strip_host_port("example.com:8080"), "example.com");
  EXPECT_EQ(strip_host_port("example.com:"), "example.com");
  EXPECT_EQ(strip_host_port("[::1]:80"), "::1");
  EXPECT_EQ(strip_host_port("[::1]"), "[::1]");  // no port: unchanged
  EXPECT_EQ(strip_host_port("::1"), "::1");      // too many colons: unchanged
  EXPECT_EQ(strip_host_port("[::1]x:80"), "[::1]x:80");
  EXPECT_EQ(strip_host_port(":80"), "");
  EXPECT_EQ(strip_host_port(""), "");
}

TEST(RouterPath, HttpToken) {
  EXPECT_FALSE(is_http_token(""));
  EXPECT_TRUE(is_http_token("GET"));
  EXPECT_TRUE(is_http_token("get"));
  EXPECT_FALSE(is_http_token("white space"));
  EXPECT_TRUE(is_http_token("#!~"));
  EXPECT_TRUE(is_http_token("a-b1_2"));
  EXPECT_FALSE(is_http_token("notok)"));
  EXPECT_FALSE(is_http_token(std::string_view("A\0B", 3)));
}

}  // namespace
}  // namespace goro::http::detail
