// goro::Context: cancel propagation down the tree (never up), deadlines,
// done() in select, err().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

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
// Deadlines racing explicit cancels, receives on done(), and contexts dropped
// while their timer is armed, on 8 goroutines at once. Every context ends
// cancelled with the error its path implies, and none outlives its use: a
// dropped one is freed when its timer fires (the timer holds the only
// reference), so once the deadlines have passed no derived context is left.
TEST(Context, DeadlineRacesAndDroppedContexts) {
  const std::int64_t alive_before = goro::detail::context_states_alive();
  std::atomic<int> wrong_err{0};
  run([&] {
    goro::WaitGroup wg;
    auto [root, cancel_root] = goro::with_cancel(goro::Context{});
    std::mutex mu;
    std::vector<goro::Context> kept;  // the cancelled and received ones
    for (int g = 0; g < 8; ++g) {
      wg.go([&] {
        for (int i = 0; i < 200; ++i) {
          auto [ctx, cancel] = goro::with_timeout(root, std::chrono::microseconds(i % 50));
          if (i % 3 == 0) {
            cancel();
            if (!ctx.err()) wrong_err.fetch_add(1);
          } else if (i % 3 == 1) {
            ctx.done().recv();
            if (ctx.err() != goro::ContextErrc::deadline_exceeded) wrong_err.fetch_add(1);
          } else {
            continue;  // dropped; the timer still holds it until it fires
          }
          std::lock_guard<std::mutex> lock(mu);
          kept.push_back(ctx);
        }
      });
    }
    wg.wait();
    EXPECT_EQ(kept.size(), 8u * 134u);  // i % 3 != 2 for 134 of 0..199
    for (const goro::Context& c : kept)
      EXPECT_TRUE(c.err()) << "a context that was cancelled or received from reports no error";
    kept.clear();
    // The dropped ones are freed as their deadlines (at most 50 us) fire.
    for (int i = 0; i < 2000 && goro::detail::context_states_alive() > alive_before + 1; ++i)
      goro::sleep_for(1ms);
    EXPECT_EQ(goro::detail::context_states_alive(), alive_before + 1) << "only root is left";
    cancel_root();
  });
  EXPECT_EQ(wrong_err.load(), 0);
  EXPECT_EQ(goro::detail::context_states_alive(), alive_before) << "a context leaked";
}

}  // namespace
