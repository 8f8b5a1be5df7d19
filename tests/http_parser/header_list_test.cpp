#include "framework/http/parser/header_list.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace goro::http::detail {
namespace {

TEST(HeaderList, KeepsOrderAndRepeatsAndIgnoresCase) {
  HeaderList h;
  h.add("Accept", "a");
  h.add("X-Y", "1");
  h.add("x-y", "2");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[1].name, "X-Y");
  EXPECT_EQ(h.get("X-y"), std::optional<std::string_view>("1"));
  EXPECT_EQ(h.count("X-Y"), 2u);
  std::vector<std::string> values;
  h.for_each_value("x-Y", [&](std::string_view v) { values.emplace_back(v); });
  EXPECT_EQ(values, (std::vector<std::string>{"1", "2"}));
}

TEST(HeaderList, ViewsSurviveLaterAdds) {
  HeaderList h;
  h.add("First", "value");
  for (int i = 0; i < 1000; ++i)
    h.add("Filler", std::string(100, 'f'));
  EXPECT_EQ(h[0].name, "First");
  EXPECT_EQ(h[0].value, "value");
}

TEST(HeaderList, ClearEmptiesTheList) {
  HeaderList h;
  h.add("A", "b");
  h.clear();
  EXPECT_TRUE(h.empty());
  EXPECT_FALSE(h.get("A").has_value());
}

TEST(HeaderList, TokenListsMatchWholeElementsOnly) {
  EXPECT_TRUE(list_has_token("keep-alive, Upgrade", "upgrade"));
  EXPECT_TRUE(list_has_token(" close ", "close"));
  EXPECT_TRUE(list_has_token("a,,close", "close"));
  EXPECT_FALSE(list_has_token("closed", "close"));
  EXPECT_FALSE(list_has_token("", "close"));
  EXPECT_FALSE(list_has_token("x-close", "close"));
}

// Every pair of bytes against the definition: equal after mapping A-Z to
// a-z and nothing else (no locale, no other byte folded, '@' and '`' differ).
TEST(HeaderList, EqualFoldEveryBytePair) {
  auto lower = [](int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; };
  for (int x = 0; x < 256; ++x) {
    for (int y = 0; y < 256; ++y) {
      const char a[2] = {'k', static_cast<char>(x)};
      const char b[2] = {'K', static_cast<char>(y)};
      ASSERT_EQ(equal_fold(std::string_view(a, 2), std::string_view(b, 2)), lower(x) == lower(y))
          << x << " " << y;
    }
  }
}

TEST(HeaderList, EqualFoldAndTrim) {
  EXPECT_TRUE(equal_fold("Content-Length", "content-LENGTH"));
  EXPECT_FALSE(equal_fold("Content-Length", "Content-Lengt"));
  EXPECT_FALSE(equal_fold("a", "\xc1"));
  EXPECT_EQ(trim_ows(" \t x y\t "), "x y");
  EXPECT_EQ(trim_ows(" \t "), "");
}

}  // namespace
}  // namespace goro::http::detail
