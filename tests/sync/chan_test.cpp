// goro::Chan semantics: buffered/unbuffered x open/closed x send/recv/try,
// close wakes every waiter, move-only values, destroyed exactly once,
// range-style receive, the nil channel.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/sync/sync_test_util.hpp"

namespace {

using goro_test::run;

TEST(Chan, UnbufferedHandOff) {
  run([] {
    goro::Chan<int> ch;
    EXPECT_EQ(ch.cap(), 0u);
    goro::go([ch]() mutable {
      for (int i = 0; i < 100; ++i)
        EXPECT_TRUE(ch.send(i));
      ch.close();
    });
    int want = 0;
    while (std::optional<int> v = ch.recv())
      EXPECT_EQ(*v, want++);
    EXPECT_EQ(want, 100);
  });
}

TEST(Chan, BufferedKeepsFifoOrderAndCapacity) {
  run([] {
    goro::Chan<int> ch(3);
    EXPECT_TRUE(ch.try_send(1));
    EXPECT_TRUE(ch.try_send(2));
    EXPECT_TRUE(ch.try_send(3));
    EXPECT_FALSE(ch.try_send(4));  // full
    EXPECT_EQ(ch.len(), 3u);
    // A blocked sender refills the tail as the receiver drains the head.
    goro::Chan<int> done;
    goro::go([ch, done]() mutable {
      ch.send(4);
      ch.send(5);
      done.send(0);
    });
    for (int want = 1; want <= 5; ++want)
      EXPECT_EQ(ch.recv(), want);
    EXPECT_EQ(done.recv(), 0);
  });
}

// The semantics table: {unbuffered, buffered} x {open, closed} x operation.
TEST(Chan, SemanticsTable) {
  run([] {
    for (std::size_t cap : {0u, 2u}) {
      // Open, empty.
      goro::Chan<int> ch(cap);
      EXPECT_FALSE(ch.try_recv().has_value());
      EXPECT_EQ(ch.try_send(7), cap > 0);
      if (cap > 0) {
        EXPECT_EQ(ch.try_recv(), 7);
      }
      // Open with a parked receiver: try_send hands off.
      goro::Chan<int> got;
      goro::go([ch, got]() mutable { got.send(ch.recv().value_or(-1)); });
      while (!ch.try_send(8))
        goro::yield();
      EXPECT_EQ(got.recv(), 8);
      // Closed with buffered values: receives drain, then empty; sends fail.
      if (cap > 0) {
        EXPECT_TRUE(ch.send(9));
      }
      ch.close();
      EXPECT_TRUE(ch.is_closed());
      EXPECT_FALSE(ch.send(10));
      EXPECT_FALSE(ch.try_send(10));
      if (cap > 0) {
        EXPECT_EQ(ch.recv(), 9);
      }
      EXPECT_FALSE(ch.recv().has_value());
      EXPECT_FALSE(ch.try_recv().has_value());
      EXPECT_THROW(ch.close(), std::logic_error);
    }
  });
}

TEST(Chan, SendOnClosedLeavesValueUntouched) {
  run([] {
    goro::Chan<std::string> ch(1);
    ch.close();
    std::string s = "still here";
    EXPECT_FALSE(ch.send(std::move(s)));
    EXPECT_EQ(s, "still here");  // NOLINT(bugprone-use-after-move): the contract
  });
}

TEST(Chan, CloseWakesEveryWaiter) {
  run([] {
    for (std::size_t cap : {0u, 4u}) {
      goro::Chan<int> ch(cap);
      goro::Chan<int> results(64);
      constexpr int kReceivers = 16;
      for (int i = 0; i < kReceivers; ++i) {
        goro::go([ch, results]() mutable { results.send(ch.recv().has_value() ? 1 : 0); });
      }
      // Fill the buffer, then park senders behind it.
      goro::Chan<int> full(cap == 0 ? 1 : cap);  // separate channel for senders
      for (std::size_t i = 0; i < full.cap(); ++i)
        full.send(0);
      constexpr int kSenders = 8;
      for (int i = 0; i < kSenders; ++i) {
        goro::go([full, results]() mutable { results.send(full.send(1) ? 10 : 20); });
      }
      goro::sleep_for(std::chrono::milliseconds(20));  // let them all park
      ch.close();
      full.close();
      int receivers_empty = 0, senders_failed = 0;
      for (int i = 0; i < kReceivers + kSenders; ++i) {
        int r = results.recv().value();
        if (r == 0) ++receivers_empty;
        if (r == 20) ++senders_failed;
      }
      EXPECT_EQ(receivers_empty, kReceivers);
      EXPECT_EQ(senders_failed, kSenders);
    }
  });
}

TEST(Chan, MoveOnlyValues) {
  run([] {
    goro::Chan<std::unique_ptr<int>> ch(2);
    goro::Chan<std::unique_ptr<int>> unbuf;
    goro::go([ch, unbuf]() mutable {
      for (int i = 0; i < 10; ++i) {
        ch.send(std::make_unique<int>(i));
        unbuf.send(std::make_unique<int>(100 + i));
      }
      ch.close();
      unbuf.close();
    });
    int n = 0;
    for (std::unique_ptr<int> p : ch) {
      EXPECT_EQ(*p, n);
      EXPECT_EQ(**unbuf.recv(), 100 + n);
      ++n;
    }
    EXPECT_EQ(n, 10);
  });
}

TEST(Chan, ValuesDestroyedExactlyOnce) {
  using goro_test::Counted;
  Counted::live = 0;
  run([] {
    {
      goro::Chan<Counted> ch(8);
      goro::Chan<Counted> unbuf;
      goro::Chan<int> done;
      // By reference: an exited goroutine's closure may be destroyed after
      // main moves on, and its handles would keep the channel alive.
      goro::go([&] {
        for (int i = 0; i < 100; ++i) {
          unbuf.send(Counted(i));
          ch.send(Counted(i));
        }
        done.send(0);
      });
      for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(unbuf.recv()->v, i);
        if (i < 92) {
          EXPECT_EQ(ch.recv()->v, i);  // leave 8 buffered
        }
      }
      done.recv();
      EXPECT_EQ(ch.len(), 8u);
    }
    // The channel's destructor destroyed what was still buffered.
    EXPECT_EQ(Counted::live.load(), 0);
  });
  EXPECT_EQ(Counted::live.load(), 0);
}

TEST(Chan, RangeLoopEndsOnClose) {
  run([] {
    goro::Chan<int> ch(5);
    goro::go([ch]() mutable {
      for (int i = 1; i <= 50; ++i)
        ch.send(i);
      ch.close();
    });
    int sum = 0;
    for (int v : ch)
      sum += v;
    EXPECT_EQ(sum, 50 * 51 / 2);
  });
}

TEST(Chan, HandleSemantics) {
  run([] {
    goro::Chan<int> a(1);
    goro::Chan<int> b = a;  // same channel
    EXPECT_TRUE(a == b);
    b.send(3);
    EXPECT_EQ(a.recv(), 3);
    goro::Chan<int> c(1);
    EXPECT_FALSE(a == c);
    goro::Chan<int> moved = std::move(c);
    EXPECT_TRUE(c.is_nil());  // NOLINT(bugprone-use-after-move)
  });
}

TEST(Chan, NilChannel) {
  run([] {
    auto nil = goro::Chan<int>::nil();
    EXPECT_TRUE(nil.is_nil());
    EXPECT_FALSE(nil.try_send(1));
    EXPECT_FALSE(nil.try_recv().has_value());
    EXPECT_THROW(nil.close(), std::logic_error);
    EXPECT_EQ(nil.len(), 0u);
  });
}

TEST(Chan, TryOpsFromAForeignThread) {
  run([] {
    goro::Chan<int> ch(1);
    std::thread t([ch]() mutable { EXPECT_TRUE(ch.try_send(42)); });
    t.join();
    EXPECT_EQ(ch.recv(), 42);
  });
}

}  // namespace
