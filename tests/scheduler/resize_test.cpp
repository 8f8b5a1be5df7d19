// Live maxprocs changes: set_maxprocs under load, and the automatic mode.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

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
TEST(ResizeStress, MaxprocsMovesUnderLoad) {
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

TEST(Resize, ShrinkMovesQueuedWorkAndTimers) {
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

// sysmon resizes from its own thread, not from a goroutine. Here a plain
// thread plays sysmon, resizing every few hundred microseconds, while a few
// goroutines sleep in short steps: every resize moves timers and Ps under
// their feet, and a lost wake-up would stop a sleeper for good.
TEST(ResizeStress, ForeignThreadResizesWhileGoroutinesSleep) {
  std::atomic<long> naps{0};
  goro::run(
      [&] {
        std::atomic<bool> stop{false};
        std::thread resizer([&] {
          unsigned x = 12345;
          while (!stop.load()) {
            x = x * 1103515245 + 12345;
            goro::set_maxprocs(1 + static_cast<int>((x >> 16) % 6));
            std::this_thread::sleep_for(std::chrono::microseconds(200 + (x >> 8) % 800));
          }
        });
        goro::WaitGroup wg;
        for (int i = 0; i < 4; ++i) {
          wg.add(1);
          goro::go([&, i] {
            for (int k = 0; k < 300; ++k) {
              goro::sleep_for(std::chrono::microseconds(500 + 300 * i));
              naps.fetch_add(1);
            }
            wg.done();
          });
        }
        wg.wait();
        stop = true;
        resizer.join();
      },
      {.maxprocs = 2});
  EXPECT_EQ(naps.load(), 4 * 300);
}

}  // namespace
