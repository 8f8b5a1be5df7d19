// goro::select: readiness, fairness, default, timeouts, send cases, close,
// and that no waiter is left queued after select returns.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/sync/sync_test_util.hpp"

namespace {

using goro_test::run;
using namespace std::chrono_literals;

TEST(Select, PicksTheReadyCase) {
  run([] {
    goro::Chan<int> a(1), b(1);
    b.send(5);
    int got = 0;
    std::size_t i =
        goro::select(goro::recv(a, [&](std::optional<int> v) { got = v.value_or(-1); }),
                     goro::recv(b, [&](std::optional<int> v) { got = v.value_or(-1); }));
    EXPECT_EQ(i, 1u);
    EXPECT_EQ(got, 5);
  });
}

TEST(Select, FairAmongReadyCases) {
  run([] {
    goro::Chan<int> a(1), b(1);
    int count_a = 0, count_b = 0;
    constexpr int kRounds = 10000;
    for (int r = 0; r < kRounds; ++r) {
      a.try_send(1);
      b.try_send(2);
      std::size_t i = goro::select(goro::recv(a), goro::recv(b));
      (i == 0 ? count_a : count_b)++;
    }
    EXPECT_GT(count_a, kRounds * 40 / 100);
    EXPECT_LT(count_a, kRounds * 60 / 100);
    EXPECT_EQ(count_a + count_b, kRounds);
  });
}

TEST(Select, DefaultWhenNothingReady) {
  run([] {
    goro::Chan<int> a, b(1);
    bool ran_default = false;
    std::size_t i = goro::select(goro::recv(a), goro::send(b, 1),
                                 goro::default_case([&] { ran_default = true; }));
    EXPECT_EQ(i, 1u);  // the buffered send could proceed
    EXPECT_FALSE(ran_default);
    i = goro::select(goro::recv(a), goro::send(b, 2),
                     goro::default_case([&] { ran_default = true; }));
    EXPECT_EQ(i, 2u);  // b is full now
    EXPECT_TRUE(ran_default);
    EXPECT_EQ(b.recv(), 1);
  });
}

TEST(Select, TimeoutFires) {
  run([] {
    goro::Chan<int> never;
    auto start = std::chrono::steady_clock::now();
    bool fired = false;
    std::size_t i = goro::select(goro::recv(never), goro::after_case(20ms, [&] { fired = true; }));
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(i, 1u);
    EXPECT_TRUE(fired);
    EXPECT_GE(took, 20ms);
    EXPECT_LT(took, 2s);  // generous: sanitizers, loaded CI
  });
}

TEST(Select, DeadlineInThePast) {
  run([] {
    goro::Chan<int> never;
    std::size_t i =
        goro::select(goro::recv(never), goro::deadline_case(std::chrono::steady_clock::now() - 1s));
    EXPECT_EQ(i, 1u);
  });
}

TEST(Select, ChannelWinsBeforeTimeout) {
  run([] {
    goro::Chan<int> ch;
    goro::go([ch]() mutable {
      goro::sleep_for(5ms);
      ch.send(9);
    });
    int got = 0;
    std::size_t i = goro::select(goro::recv(ch, [&](std::optional<int> v) { got = *v; }),
                                 goro::after_case(10s));
    EXPECT_EQ(i, 0u);
    EXPECT_EQ(got, 9);
  });
}

TEST(Select, ParkedSendCaseCompletes) {
  run([] {
    goro::Chan<std::string> ch;
    goro::Chan<int> other;
    goro::Chan<std::string> got(1);
    goro::go([ch, got]() mutable {
      goro::sleep_for(2ms);
      got.send(ch.recv().value());
    });
    bool sent = false;
    std::size_t i = goro::select(goro::send(ch, std::string("hello"), [&](bool ok) { sent = ok; }),
                                 goro::recv(other));
    EXPECT_EQ(i, 0u);
    EXPECT_TRUE(sent);
    EXPECT_EQ(got.recv(), "hello");
  });
}

TEST(Select, ClosedChannelsAreReady) {
  run([] {
    goro::Chan<int> r, s;
    r.close();
    bool empty = false;
    EXPECT_EQ(goro::select(goro::recv(r, [&](std::optional<int> v) { empty = !v; })), 0u);
    EXPECT_TRUE(empty);
    s.close();
    bool sent = true;
    EXPECT_EQ(goro::select(goro::send(s, 1, [&](bool ok) { sent = ok; })), 0u);
    EXPECT_FALSE(sent);
  });
}

TEST(Select, CloseWakesParkedSelect) {
  run([] {
    goro::Chan<int> a, b;
    goro::go([b]() mutable {
      goro::sleep_for(2ms);
      b.close();
    });
    bool closed = false;
    std::size_t i =
        goro::select(goro::recv(a), goro::recv(b, [&](std::optional<int> v) { closed = !v; }));
    EXPECT_EQ(i, 1u);
    EXPECT_TRUE(closed);
  });
}

// After a select returns, none of its waiters may remain: a later plain
// operation on each channel must not hand a value to the finished select.
TEST(Select, LeavesNoWaiterBehind) {
  run([] {
    goro::Chan<int> a, b, c;
    for (int round = 0; round < 200; ++round) {
      goro::go([a]() mutable { a.send(1); });
      std::size_t i = goro::select(goro::recv(a), goro::recv(b), goro::send(c, 3));
      EXPECT_EQ(i, 0u);
      // b and c must have no waiter: non-blocking ops find nobody.
      EXPECT_FALSE(b.try_send(2));
      EXPECT_FALSE(c.try_recv().has_value());
    }
  });
}

TEST(Select, SameChannelTwice) {
  run([] {
    goro::Chan<int> ch;
    goro::go([ch]() mutable { ch.send(4); });
    int got = 0;
    std::size_t i = goro::select(goro::recv(ch, [&](std::optional<int> v) { got = *v; }),
                                 goro::recv(ch, [&](std::optional<int> v) { got = *v; }));
    EXPECT_LT(i, 2u);
    EXPECT_EQ(got, 4);
  });
}

TEST(Select, NilChannelCaseNeverChosen) {
  run([] {
    auto nil = goro::Chan<int>::nil();
    std::size_t i = goro::select(goro::recv(nil), goro::after_case(1ms));
    EXPECT_EQ(i, 1u);
    EXPECT_EQ(goro::select(goro::send(nil, 1), goro::default_case()), 1u);
  });
}

TEST(Select, ManySelectorsManyChannels) {
  run([] {
    constexpr int kWorkers = 8, kPer = 2000;
    goro::Chan<int> a(4), b, out(16);
    goro::WaitGroup wg;
    for (int w = 0; w < kWorkers; ++w) {
      wg.go([&] {
        for (int i = 0; i < kPer; ++i) {
          goro::select(goro::send(a, 1), goro::send(b, 1));
        }
      });
    }
    goro::go([&] {
      wg.wait();
      a.close();
      b.close();
    });
    long total = 0;
    bool a_open = true, b_open = true;
    while (a_open || b_open) {
      goro::select(goro::recv(a_open ? a : goro::Chan<int>::nil(),
                              [&](std::optional<int> v) {
                                if (v) {
                                  total += *v;
                                } else {
                                  a_open = false;
                                }
                              }),
                   goro::recv(b_open ? b : goro::Chan<int>::nil(), [&](std::optional<int> v) {
                     if (v) {
                       total += *v;
                     } else {
                       b_open = false;
                     }
                   }));
    }
    EXPECT_EQ(total, kWorkers * kPer);
  });
}

}  // namespace
