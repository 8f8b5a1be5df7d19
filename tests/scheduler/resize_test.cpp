// Live maxprocs changes: set_maxprocs under load, and the automatic mode.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "goro/goro.hpp"

using namespace std::chrono_literals;

namespace {

#if defined(GORO_TSAN) || defined(GORO_ASAN)
constexpr int kWorkers = 200;  // sanitizers are 5-20x slower
#else
constexpr int kWorkers = 1000;
#endif

// While 1,000 goroutines keep spawning and sleeping, maxprocs moves
// 2 -> 8 -> 1 -> 4. Nothing may be lost: every spawned goroutine completes.
// DISABLED: hangs intermittently (more under load and the sanitizers); a live-resize
// bug under investigation, see issue 7. Run with --gtest_also_run_disabled_tests.
TEST(ResizeStress, DISABLED_MaxprocsMovesUnderLoad) {
  std::atomic<long> spawned{0}, completed{0};
  goro::run(
      [&] {
        std::atomic<bool> stop{false};
        goro::WaitGroup workers;
        for (int w = 0; w < kWorkers; ++w) {
          workers.add(1);
          goro::go([&, w] {
            for (int round = 0; !stop.load(); ++round) {
              spawned.fetch_add(1);
              goro::go([&, w, round] {
                if ((w + round) % 3 == 0) goro::sleep_for(std::chrono::microseconds(100 + w % 400));
                if ((w + round) % 5 == 0) goro::yield();
                completed.fetch_add(1);
              });
              goro::sleep_for(std::chrono::microseconds(200 + (w * 37) % 800));
            }
            workers.done();
          });
        }
        for (int n : {2, 8, 1, 4}) {
          goro::set_maxprocs(n);
          EXPECT_EQ(goro::maxprocs(), n);
          goro::sleep_for(300ms);
          EXPECT_EQ(goro::stats().maxprocs, static_cast<std::uint64_t>(n));
        }
        stop = true;
        workers.wait();
        while (goro::num_goroutines() > 1)
          goro::sleep_for(1ms);
      },
      {.maxprocs = 2});
  EXPECT_GT(spawned.load(), kWorkers);
  EXPECT_EQ(completed.load(), spawned.load());
}

TEST(Resize, SetMaxprocsReturnsPreviousAndIgnoresNonPositive) {
  goro::run(
      [] {
        EXPECT_EQ(goro::set_maxprocs(5), 3);
        EXPECT_EQ(goro::set_maxprocs(0), 5);
        EXPECT_EQ(goro::maxprocs(), 5);
        EXPECT_EQ(goro::set_maxprocs(1), 5);
        // Work still runs on the single remaining P.
        std::atomic<int> ran{0};
        goro::WaitGroup wg;
        for (int i = 0; i < 100; ++i) {
          wg.add(1);
          goro::go([&] {
            ++ran;
            wg.done();
          });
        }
        wg.wait();
        EXPECT_EQ(ran.load(), 100);
      },
      {.maxprocs = 3});
}

// DISABLED: same intermittent hang as DISABLED_MaxprocsMovesUnderLoad (issue 7).
TEST(Resize, DISABLED_ShrinkMovesQueuedWorkAndTimers) {
  goro::run(
      [] {
        // Sleepers parked on every P's timer heap, then the Ps go away.
        std::atomic<int> woke{0};
        goro::WaitGroup wg;
        for (int i = 0; i < 64; ++i) {
          wg.add(1);
          goro::go([&, i] {
            goro::sleep_for(std::chrono::milliseconds(20 + i % 7));
            ++woke;
            wg.done();
          });
        }
        goro::sleep_for(2ms);
        goro::set_maxprocs(1);
        wg.wait();
        EXPECT_EQ(woke.load(), 64);
      },
      {.maxprocs = 8});
}

}  // namespace
