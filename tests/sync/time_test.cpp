// goro::after and goro::Ticker.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/sync/sync_test_util.hpp"

namespace {

using goro_test::run;
using namespace std::chrono_literals;

TEST(Time, AfterDeliversOnce) {
  run([] {
    auto start = std::chrono::steady_clock::now();
    auto ch = goro::after(10ms);
    std::optional<std::chrono::steady_clock::time_point> t = ch.recv();
    ASSERT_TRUE(t.has_value());
    EXPECT_GE(*t - start, 10ms);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
    EXPECT_FALSE(ch.try_recv().has_value());
  });
}

TEST(Time, AfterInSelectAndDroppedEarly) {
  run([] {
    goro::Chan<int> never;
    EXPECT_EQ(goro::select(goro::recv(never), goro::recv(goro::after(2ms))), 1u);
    for (int i = 0; i < 100; ++i)
      (void)goro::after(1h);  // dropped at once: the timer is stopped
  });
}

TEST(Time, TickerTicksAndStops) {
  run([] {
    auto start = std::chrono::steady_clock::now();  // before the ticker starts
    goro::Ticker ticker(2ms);
    for (int i = 0; i < 5; ++i)
      ASSERT_TRUE(ticker.chan().recv().has_value());
    EXPECT_GE(std::chrono::steady_clock::now() - start, 8ms);
    ticker.reset(1h);
    (void)ticker.chan().try_recv();  // a tick may have been pending
    EXPECT_EQ(goro::select(goro::recv(ticker.chan()), goro::after_case(20ms)), 1u);
    ticker.stop();
    ticker.stop();
    EXPECT_THROW(goro::Ticker(0ms), std::invalid_argument);
  });
}

}  // namespace
