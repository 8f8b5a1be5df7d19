// goro::Result: what a caller sees of a success and of an error, for
// Result<void> (which keeps an error_code's two parts, not an error_code)
// and Result<T>; and the netpoller's PollStatus, which NetFd turns into
// either.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <system_error>

#include "goro/result.hpp"
#include "netpoll/netpoll.hpp"

namespace {

// A category of the caller's own, to see that one passes through whole.
class TestCategory : public std::error_category {
 public:
  const char* name() const noexcept override { return "test"; }
  std::string message(int v) const override { return "test error " + std::to_string(v); }
};

const TestCategory& test_category() {
  static const TestCategory c;
  return c;
}

TEST(Result, VoidSuccessIsOkWithTheDefaultErrorCode) {
  const goro::Result<void> r;
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r.error(), std::error_code{});
  EXPECT_EQ(&r.error().category(), &std::system_category());
  EXPECT_NO_THROW(r.value());
}

TEST(Result, VoidErrorKeepsValueAndCategory) {
  const goro::Result<void> t = goro::errc::timeout;
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.error(), goro::errc::timeout);
  EXPECT_EQ(t.error(), std::errc::timed_out);  // goro's category maps it
  const goro::Result<void> s = std::make_error_code(std::errc::connection_reset);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.error(), std::errc::connection_reset);
  EXPECT_EQ(&s.error().category(), &std::generic_category());
  const goro::Result<void> own = std::error_code(7, test_category());
  EXPECT_FALSE(own.ok());
  EXPECT_EQ(own.error().value(), 7);
  EXPECT_EQ(&own.error().category(), &test_category());
  try {
    own.value();
    ADD_FAILURE() << "value() of an error did not throw";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::error_code(7, test_category()));
  }
}

TEST(Result, VoidFromAZeroErrorCodeIsOkAndKeepsItsCategory) {
  // As std::error_code's own bool: value 0 is success in any category.
  const goro::Result<void> r = std::error_code(0, test_category());
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(&r.error().category(), &test_category());
  EXPECT_NO_THROW(r.value());
}

TEST(Result, ValueOrError) {
  const goro::Result<int> v = 42;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 42);
  EXPECT_EQ(v.error(), std::error_code{});
  const goro::Result<int> e = goro::errc::closed;
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.error(), goro::errc::closed);
  EXPECT_EQ(e.value_or(-1), -1);
  EXPECT_THROW((void)e.value(), std::system_error);
}

TEST(PollStatus, NoneIsSuccessAndTheErrorsAreGoros) {
  const goro::detail::PollStatus none;
  EXPECT_FALSE(none);
  EXPECT_EQ(none.error_code(), std::error_code{});
  EXPECT_EQ(&none.error_code().category(), &std::system_category());
  for (const goro::errc e : {goro::errc::closed, goro::errc::timeout}) {
    const goro::detail::PollStatus st = e;
    EXPECT_TRUE(st);
    EXPECT_EQ(st.code(), e);
    EXPECT_EQ(st.error_code(), goro::make_error_code(e));
    EXPECT_EQ(&st.error_code().category(), &goro::goro_category());
    const goro::Result<std::size_t> r = st.code();  // NetFd's `return st.code();`
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error(), e);
  }
}

}  // namespace
