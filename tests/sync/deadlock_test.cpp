// The deadlock report: "all goroutines are asleep - deadlock!", status 2 --
// and no report when something can still wake a goroutine. Also the SIGQUIT
// dump, which prints the same goroutine lines on demand (sysmon.cpp).
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/sync/sync_test_util.hpp"

namespace {

using goro_test::run;
using namespace std::chrono_literals;

class Deadlock : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(Deadlock, MainBlockedOnChannel) {
  EXPECT_EXIT(run([] {
                goro::Chan<int> ch;
                ch.recv();
              }),
              ::testing::ExitedWithCode(2),
              "all goroutines are asleep - deadlock!(.|\n)*chan receive");
}

TEST_F(Deadlock, EveryoneWaitingOnEachOther) {
  EXPECT_EXIT(run([] {
                goro::Mutex mu;
                mu.lock();
                goro::WaitGroup wg;
                wg.add(1);
                goro::go([&] {
                  mu.lock();  // never unlocked
                  wg.done();
                });
                goro::go([] {
                  goro::Chan<int> a, b;
                  goro::select(goro::recv(a), goro::recv(b));
                });
                wg.wait();
              }),
              ::testing::ExitedWithCode(2),
              "all goroutines are asleep - deadlock!(.|\n)*\\[mutex\\](.|\n)*\\[waitgroup wait\\]");
}

TEST_F(Deadlock, NotReportedWhileATimerIsPending) {
  EXPECT_EXIT(
      {
        run([] {
          goro::Chan<int> ch;
          goro::go([ch]() mutable {
            goro::sleep_for(50ms);
            ch.send(1);
          });
          ch.recv();
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(Deadlock, NotReportedWhileAContextDeadlineIsPending) {
  EXPECT_EXIT(
      {
        run([] {
          auto [ctx, cancel] = goro::with_timeout(goro::Context{}, 30ms);
          ctx.done().recv();
          cancel();
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(Deadlock, NotReportedWhenAForeignThreadCanWake) {
  EXPECT_EXIT(
      {
        run([] {
          goro::Chan<int> ch(1);
          // A thread outside the runtime that will send only later: main
          // parks with every goroutine asleep, but it is no deadlock.
          std::thread t([ch] {
            std::this_thread::sleep_for(50ms);
            ch.try_send(2);
          });
          EXPECT_EQ(ch.recv(), 2);
          t.join();
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// SIGQUIT, as in Go: a dump of every goroutine with its wait reason, then
// exit status 2. A goroutine blocked in a receive, one sleeping, and the main
// goroutine, which sends the signal to the process and keeps running.
TEST_F(Deadlock, SigquitDumpsGoroutinesAndExits) {
  EXPECT_EXIT(run([] {
                goro::Chan<int> ch;
                goro::go([&] { ch.recv(); });
                goro::go([] { goro::sleep_for(10s); });
                goro::sleep_for(20ms);
                kill(getpid(), SIGQUIT);
                for (;;)
                  goro::sleep_for(1ms);  // until sysmon prints and exits
              }),
              ::testing::ExitedWithCode(2),
              "SIGQUIT: quit(.|\n)*goroutine [0-9]+ \\[(chan receive|sleep)\\](.|\n)*goroutine "
              "[0-9]+ \\[(chan receive|sleep)\\](.|\n)*exit status 2");
}

}  // namespace
