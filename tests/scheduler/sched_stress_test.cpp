// Scheduler stress: many goroutines, lost wake-ups, fairness. Run under TSan
// and ASan too, with more Ps than cores.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "goro/goro.hpp"
#include "tests/scheduler/gate.hpp"

using namespace std::chrono_literals;

namespace {

#if defined(GORO_TSAN) || defined(GORO_ASAN)
constexpr int kScale = 10;  // sanitizers are 5-20x slower
#else
constexpr int kScale = 1;
#endif
// ThreadSanitizer keeps a thread record per fiber and dies past 8128, and
// each live fiber costs it ~11 ms: 6,000 took 68 s of the TSan run, 2,000
// park and release on the same 8 Ps in a third of that.
#if defined(GORO_TSAN)
constexpr int kManyLive = 2000;
#else
constexpr int kManyLive = 100000;
#endif

void wait_all_done() {
  while (goro::num_goroutines() > 1)
    goro::yield();
}

// 1M goroutines spawned from 100 spawner goroutines spread across 8 Ps.
TEST(SchedStress, MillionGoroutinesChecksum) {
  const long per = 10000 / kScale;
  const long spawners = 100;
  std::atomic<long> sum{0};
  goro::run(
      [&] {
        for (long s = 0; s < spawners; ++s) {
          goro::go([&, s] {
            for (long i = 0; i < per; ++i) {
              long v = s * per + i;
              goro::go([&sum, v] { sum.fetch_add(v, std::memory_order_relaxed); });
            }
          });
        }
        wait_all_done();
      },
      {.maxprocs = 8});
  const long n = spawners * per;
  EXPECT_EQ(sum.load(), n * (n - 1) / 2);
}

// Lost wake-up: goroutine A spawns B and then spins without yielding, so B can
// only run if wakep() started a spinning M that steals it. Other Ms are at
// every stage of going to sleep (random short pauses between iterations). If
// a wake-up is lost, B waits for A's spin to end: caught by the deadline.
TEST(SchedStress, NoLostWakeupsWhileMsPark) {
  const int iterations = 3000 / kScale;
  std::atomic<int> late{0};
  goro::run(
      [&] {
        for (int it = 0; it < iterations; ++it) {
          std::atomic<bool> ran{false};
          goro::go([&] {
            goro::go([&] { ran.store(true); });
            auto deadline = std::chrono::steady_clock::now() + 2s;
            while (!ran.load() && std::chrono::steady_clock::now() < deadline) {
            }
            if (!ran.load()) ++late;
          });
          while (!ran.load())
            goro::yield();
          wait_all_done();
          if (it % 3 == 0) goro::sleep_for(std::chrono::microseconds(it % 50));
        }
      },
      {.maxprocs = 4});
  EXPECT_EQ(late.load(), 0) << "a runnable goroutine waited while Ms slept";
}

// Work submitted from outside the runtime (a foreign thread readies parked
// goroutines onto the global queue) while every M is going idle.
TEST(SchedStress, ForeignReadiesWakeIdleMs) {
  const int rounds = 2000 / kScale;
  goro::run(
      [&] {
        for (int r = 0; r < rounds; ++r) {
          goro::test::Gate gate;
          std::atomic<int> done{0};
          for (int i = 0; i < 4; ++i) {
            goro::go([&] {
              gate.wait();
              ++done;
            });
          }
          while (gate.parked() < 4)
            goro::yield();
          std::thread t([&] { gate.release_all(); });
          auto deadline = std::chrono::steady_clock::now() + 5s;
          while (done.load() < 4 && std::chrono::steady_clock::now() < deadline) {
            goro::sleep_for(std::chrono::microseconds(50));
          }
          t.join();
          ASSERT_EQ(done.load(), 4) << "round " << r;
          wait_all_done();
        }
      },
      {.maxprocs = 3});
}

// Fairness: two goroutines re-spawning each other forever through runnext must
// not starve a goroutine that sits in the global queue (the schedtick % 61
// check). The waiter is readied from a foreign thread, so it lands globally.
TEST(SchedStress, RespawningPairDoesNotStarveGlobalQueue) {
  goro::run(
      [] {
        std::atomic<bool> stop{false};
        struct Chain {
          std::atomic<bool>* stop;
          void operator()() const {
            if (!stop->load()) goro::go(Chain{stop});
          }
        };
        goro::go(Chain{&stop});
        goro::go(Chain{&stop});
        goro::test::Gate gate;
        std::thread t([&] {
          while (gate.parked() < 1)
            std::this_thread::sleep_for(1ms);
          std::this_thread::sleep_for(10ms);
          gate.release_all();
        });
        auto t0 = std::chrono::steady_clock::now();
        gate.wait();
        auto waited = std::chrono::steady_clock::now() - t0;
        stop = true;
        t.join();
        EXPECT_LT(waited, 2s);
        wait_all_done();
      },
      {.maxprocs = 1});
}

// 100,000 goroutines parked at once on 8 Ps, then all released.
TEST(SchedStress, HundredThousandParkedThenReleased) {
  const int n = kManyLive;
  std::atomic<int> done{0};
  goro::run(
      [&] {
        goro::test::Gate gate;
        for (int i = 0; i < n; ++i) {
          goro::go([&] {
            gate.wait();
            done.fetch_add(1, std::memory_order_relaxed);
          });
        }
        while (gate.parked() < static_cast<std::size_t>(n))
          goro::yield();
        EXPECT_EQ(goro::num_goroutines(), static_cast<std::size_t>(n + 1));
        gate.release_all();
        wait_all_done();
      },
      {.maxprocs = 8});
  EXPECT_EQ(done.load(), n);
}

// Uneven work spreads over Ps by stealing: with 4 Ps and 4 long tasks spawned
// from one goroutine, several Ms must end up running them at once.
TEST(SchedStress, StealingSpreadsWork) {
  std::atomic<int> running{0}, peak{0};
  goro::run(
      [&] {
        for (int i = 0; i < 4; ++i) {
          goro::go([&] {
            int now = ++running;
            int p = peak.load();
            while (now > p && !peak.compare_exchange_weak(p, now)) {
            }
            auto until = std::chrono::steady_clock::now() + 50ms;
            while (std::chrono::steady_clock::now() < until)
              goro::yield();
            --running;
          });
        }
        wait_all_done();
      },
      {.maxprocs = 4});
  EXPECT_GE(peak.load(), 2);
}

}  // namespace
