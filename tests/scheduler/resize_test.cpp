// Live maxprocs changes: set_maxprocs under load, and the automatic mode.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "goro/goro.hpp"
#include "scheduler/sched.hpp"
#include "tests/scheduler/gate.hpp"

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

// White-box (issue 16 item 1): Ps below maxprocs that a resize left retired.
// A live P is never kDead; a retired one below maxprocs is capacity lost for
// good (it never goes on the idle list again).
int retired_live_ps() {
  using namespace goro::detail;
  std::lock_guard<SchedMutex> lock(sched.lock);
  int n = 0;
  for (int i = 0; i < sched.gomaxprocs.load() && i < sched.allp.size(); ++i) {
    if (sched.allp[i]->status.load() == PStatus::kDead) ++n;
  }
  return n;
}

// Shrink to 1 and grow back to 8 at once, over and over, from a plain thread
// while goroutines spawn and yield on every P. A shrink asks each running
// doomed P's owner to retire it; the grow right behind it cancels the
// request. The owner read the request without sched.lock, so it could see
// the request, lose the race to the grow and retire a P that was live again
// (issue 16 item 1). Returns after the load has stopped.
void shrink_and_grow_under_load(int rounds) {
  std::atomic<bool> stop{false};
  goro::WaitGroup load;
  for (int w = 0; w < 16; ++w) {
    load.add(1);
    goro::go([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        goro::go([] { goro::yield(); });
        goro::yield();
      }
      load.done();
    });
  }
  std::thread resizer([rounds] {
    for (int i = 0; i < rounds; ++i) {
      goro::set_maxprocs(1);
      goro::set_maxprocs(8);
    }
  });
  goro::blocking([&] { resizer.join(); });
  stop = true;
  load.wait();
}

#if defined(GORO_TSAN) || defined(GORO_ASAN)
constexpr int kResizeRounds = 500;
#else
constexpr int kResizeRounds = 3000;
#endif

// Every P below maxprocs is alive after the storm, and with the load gone all
// of them but main's go idle (npidle reaches maxprocs - 1).
TEST(ResizeStress, ShrinkThenGrowNeverRetiresALiveP) {
  goro::run(
      [] {
        shrink_and_grow_under_load(kResizeRounds);
        EXPECT_EQ(retired_live_ps(), 0);
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        // Yield, not sleep: a goroutine woken from a sleep readies itself with
        // wakep, and the spinner that starts holds a P for the first
        // stats() after every wake-up.
        // stats() is read once per round: a spinner some wake-up started can
        // hold a P for a moment at any time, so only "reached 7" means much.
        std::uint64_t idle = 0;
        while ((idle = goro::stats().idle_procs) < 7 && std::chrono::steady_clock::now() < deadline)
          goro::yield();
        EXPECT_EQ(idle, 7u);
        while (goro::num_goroutines() > 1)
          goro::sleep_for(1ms);
      },
      {.maxprocs = 8});
}

// The same storm, then main blocks forever: the deadlock detector needs
// every P below maxprocs idle, so a P retired while live turned this report
// into a silent hang. alarm() bounds the hang (the child then dies of
// SIGALRM and the expectation fails).
TEST(ResizeDeathTest, DeadlockAfterShrinkAndGrowIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        alarm(20);
        goro::run(
            [] {
              shrink_and_grow_under_load(kResizeRounds);
              while (goro::num_goroutines() > 1)
                goro::sleep_for(1ms);
              goro::Chan<int> never;
              never.recv();
            },
            {.maxprocs = 8});
      },
      ::testing::ExitedWithCode(2), "all goroutines are asleep");
}

// White-box: the id of the P this goroutine runs on (-1: none, the hog
// protocol took it).
int current_p_id() {
  goro::detail::M* m = goro::detail::current_m();
  return m->p != nullptr ? m->p->id : -1;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

enum class Then { kBlock, kSpin };

// Issue 16 item 2. On 2 Ps, goroutine A runs on P1; the only other
// goroutines are parked, so P0 goes idle. maxprocs drops to 1, which dooms
// P1; A then readies B (onto P1, whose owner retires it only at its next
// scheduling point) and blocks in goro::blocking or spins for up to 3 s.
// Returns how long B waited to run, in ms, or -1 if A was not on P1 when it
// readied B (the scenario did not set up). The bug: ready() skipped wakep
// because maxprocs was 1 although P1 still existed, and sysmon neither
// watched P1 (beyond maxprocs) nor stayed awake (P0 idle looked like "all
// idle"), so B waited for A: 3 s.
std::int64_t stranded_ready_wait_ms(Then then) {
  std::int64_t waited = -1;
  goro::run(
      [&] {
        goro::test::Gate gate;
        std::atomic<bool> b_ran{false}, on_p1{false}, shrunk{false};
        std::atomic<std::int64_t> readied_at{0}, ran_at{0};
        std::mutex mu;
        std::condition_variable cv;
        goro::WaitGroup wg;
        wg.add(2);
        goro::go([&] {  // B
          gate.wait();
          ran_at = now_ns();
          {
            std::lock_guard<std::mutex> lock(mu);
            b_ran = true;
          }
          cv.notify_all();
          wg.done();
        });
        while (gate.parked() < 1)
          goro::yield();
        // On a loaded machine the set-up can fail to happen (the hog protocol
        // moves the spinners' Ps around): every wait for it gives up after
        // 10 s, and the round then reports "not set up" (-1).
        const auto give_up = std::chrono::steady_clock::now() + 10s;
        auto late = [give_up] { return std::chrono::steady_clock::now() > give_up; };
        goro::go([&] {  // A
          while (current_p_id() != 1 && !late())
            goro::yield();  // main holds P0 without yielding: a spinner on P1 takes us
          on_p1 = true;
          while (!shrunk.load())
            ;  // no scheduling point: stay on P1
          // Wait for main to park and its M to give up P0 (the only idle P).
          while (goro::stats().idle_procs < 1 && !late())
            ;
          const int p = current_p_id();
          readied_at = now_ns();
          gate.release_all();  // B goes on P1's queue
          if (p != 1 || late()) readied_at = -1;
          const auto limit = std::chrono::steady_clock::now() + 3s;
          if (then == Then::kBlock) {
            goro::blocking([&] {
              std::unique_lock<std::mutex> lock(mu);
              cv.wait_until(lock, limit, [&] { return b_ran.load(); });
            });
          } else {
            while (!b_ran.load() && std::chrono::steady_clock::now() < limit)
              ;
          }
          wg.done();
        });
        while (!on_p1.load())
          ;  // no scheduling point: keep P0 so that A moves to P1
        goro::set_maxprocs(1);
        shrunk = true;
        wg.wait();  // main parks: P0 goes idle
        if (readied_at.load() > 0) waited = (ran_at.load() - readied_at.load()) / 1'000'000;
      },
      {.maxprocs = 2});
  return waited;
}

// The bound is a sanity bound a loaded machine cannot break; the bug gives 3 s.
// A scenario that did not set up (A lost P1 to the hog protocol on a loaded
// machine) is tried again.
std::int64_t stranded_ready_wait_ms_retried(Then then) {
  std::int64_t waited = -1;
  for (int attempt = 0; attempt < 3 && waited < 0; ++attempt)
    waited = stranded_ready_wait_ms(then);
  return waited;
}

TEST(Resize, WorkReadiedOnADoomedPThatBlocksRunsElsewhere) {
  const std::int64_t waited = stranded_ready_wait_ms_retried(Then::kBlock);
  if (waited < 0) GTEST_SKIP() << "A lost P1 before readying B; scenario not set up";
  EXPECT_LT(waited, 1000);
}

TEST(Resize, WorkReadiedOnADoomedPThatSpinsRunsElsewhere) {
  const std::int64_t waited = stranded_ready_wait_ms_retried(Then::kSpin);
  if (waited < 0) GTEST_SKIP() << "A lost P1 before readying B; scenario not set up";
  EXPECT_LT(waited, 1000);
}

}  // namespace
