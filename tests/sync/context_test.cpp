// goro::Context: cancel propagation down the tree (never up), deadlines,
// done() in select, err().
#include <gtest/gtest.h>

#include <chrono>

#include "tests/sync/sync_test_util.hpp"

namespace {

using goro_test::run;
using namespace std::chrono_literals;

TEST(Context, BackgroundIsNeverDone) {
  run([] {
    goro::Context bg;
    EXPECT_FALSE(bg.err());
    EXPECT_FALSE(bg.deadline().has_value());
    EXPECT_TRUE(bg.done().is_nil());
    EXPECT_EQ(goro::select(goro::recv(bg.done()), goro::default_case()), 1u);
  });
}

TEST(Context, CancelPropagatesDownNotUp) {
  run([] {
    auto [parent, cancel_parent] = goro::with_cancel(goro::Context{});
    auto [child, cancel_child] = goro::with_cancel(parent);
    auto [grandchild, cancel_grandchild] = goro::with_cancel(child);
    auto [sibling, cancel_sibling] = goro::with_cancel(parent);

    cancel_child();
    EXPECT_EQ(child.err(), goro::ContextErrc::canceled);
    EXPECT_EQ(grandchild.err(), goro::ContextErrc::canceled);
    EXPECT_FALSE(parent.err());
    EXPECT_FALSE(sibling.err());

    // A goroutine parked on the sibling's done() is woken by the parent.
    goro::Chan<int> woke(1);
    goro::go([s = sibling, woke]() mutable {
      s.done().recv();
      woke.send(1);
    });
    goro::sleep_for(2ms);
    cancel_parent();
    EXPECT_EQ(woke.recv(), 1);
    EXPECT_EQ(sibling.err(), goro::ContextErrc::canceled);
    EXPECT_EQ(sibling.err().message(), "context canceled");
    cancel_parent();  // twice is harmless
    cancel_grandchild();
    cancel_sibling();
  });
}

TEST(Context, ChildOfCanceledParentIsBornCanceled) {
  run([] {
    auto [parent, cancel] = goro::with_cancel(goro::Context{});
    cancel();
    auto [child, cancel_child] = goro::with_timeout(parent, 1h);
    EXPECT_EQ(child.err(), goro::ContextErrc::canceled);
    EXPECT_FALSE(child.done().recv().has_value());  // closed
    cancel_child();
  });
}

TEST(Context, DeadlineExpires) {
  run([] {
    auto start = std::chrono::steady_clock::now();
    auto [ctx, cancel] = goro::with_timeout(goro::Context{}, 20ms);
    ASSERT_TRUE(ctx.deadline().has_value());
    goro::Chan<int> never;
    std::size_t i = goro::select(goro::recv(never), goro::recv(ctx.done()));
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(i, 1u);
    EXPECT_EQ(ctx.err(), goro::ContextErrc::deadline_exceeded);
    EXPECT_EQ(ctx.err().message(), "context deadline exceeded");
    EXPECT_GE(took, 19ms);
    EXPECT_LT(took, 2s);
    cancel();
    EXPECT_EQ(ctx.err(), goro::ContextErrc::deadline_exceeded);  // first cause wins
  });
}

TEST(Context, ChildDeadlineNotLaterThanParent) {
  run([] {
    auto [parent, cancel_parent] = goro::with_timeout(goro::Context{}, 10ms);
    auto [child, cancel_child] = goro::with_timeout(parent, 1h);
    EXPECT_EQ(child.deadline(), parent.deadline());
    child.done().recv();
    EXPECT_EQ(child.err(), goro::ContextErrc::deadline_exceeded);
    cancel_child();
    cancel_parent();
  });
}

TEST(Context, CancelBeforeDeadlineStopsTimer) {
  run([] {
    for (int i = 0; i < 1000; ++i) {
      auto [ctx, cancel] = goro::with_timeout(goro::Context{}, 1h);
      cancel();
      EXPECT_EQ(ctx.err(), goro::ContextErrc::canceled);
    }
  });
}

// Contexts dropped without cancel (their deadline fires after every handle is
// gone) and contexts racing their deadline with cancel: no leak, no crash.
TEST(Context, DeadlineRacesAndDroppedContexts) {
  run([] {
    goro::WaitGroup wg;
    auto [root, cancel_root] = goro::with_cancel(goro::Context{});
    for (int g = 0; g < 8; ++g) {
      wg.go([&root] {
        for (int i = 0; i < 200; ++i) {
          auto [ctx, cancel] = goro::with_timeout(root, std::chrono::microseconds(i % 50));
          if (i % 3 == 0) cancel();
          if (i % 3 == 1) ctx.done().recv();
          // i % 3 == 2: dropped; the timer still holds it until it fires
        }
      });
    }
    wg.wait();
    goro::sleep_for(5ms);
    cancel_root();
  });
}

}  // namespace
