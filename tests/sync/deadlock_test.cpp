// The deadlock report: "all goroutines are asleep - deadlock!", status 2 --
// and no report when something can still wake a goroutine. Also the SIGQUIT
// dump, which prints the same goroutine lines on demand (sysmon.cpp).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

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
        std::exit(0);  // NOLINT(concurrency-mt-unsafe): the child, ending
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
        std::exit(0);  // NOLINT(concurrency-mt-unsafe): the child, ending
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
        std::exit(0);  // NOLINT(concurrency-mt-unsafe): the child, ending
      },
      ::testing::ExitedWithCode(0), "");
}

// The report must not depend on which M goes to sleep last. Many goroutines
// on many Ps park at nearly the same moment, so several Ms give up their Ps
// together; the last of them to sleep must see all the others asleep. (The
// check used to run before the M entered the idle list, outside the lock
// that puts it there, so two Ms could each see the other still awake and
// both sleep: a hang instead of the report, seen once in CI under TSan.)
//
// Each round re-executes this test binary as a fresh process (as gtest's
// threadsafe death tests do; a plain fork child of a TSan process gets a
// second sanitizer thread, which the report rightly counts as a possible
// waker) and gives it 20 s before it counts as hung.
constexpr const char* kManyMsChild = "GORO_TEST_DEADLOCK_CHILD";

void many_ms_deadlock_child() {
  goro::run(
      [] {
        goro::Chan<int> start;
        for (int i = 0; i < 32; ++i) {
          goro::go([start, i]() mutable {
            start.recv();  // closed below: all of them wake at once
            for (int k = 0; k < i % 4; ++k)
              goro::yield();
            goro::Chan<int> never;
            never.recv();
          });
        }
        goro::yield();
        start.close();
        goro::Chan<int> never;
        never.recv();
      },
      goro::Options{.maxprocs = 8});
  _exit(0);  // not reached: the deadlock report exits with status 2
}

TEST_F(Deadlock, ReportedWhenManyMsGoIdleAtOnce) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read before any thread starts
  if (getenv(kManyMsChild) != nullptr) many_ms_deadlock_child();
  // With the bug, about one round in 30 hung (TSan build, idle 2-core
  // machine): 200 rounds miss it with probability ~0.1%. A round takes ~80 ms
  // under TSan; the test stops at the third hung round.
  constexpr int kRounds = 200;
  constexpr int kMaxHung = 3;
  // The child's environment, built before fork (only async-signal-safe calls
  // between fork and exec): ours plus the marker, minus gtest's sharding
  // variables (a sharded run could otherwise select no test in the child).
  std::vector<std::string> env_store;
  for (char** e = ::environ; *e != nullptr; ++e) {  // unistd.h (_GNU_SOURCE)
    const std::string_view kv(*e);
    if (kv.starts_with("GTEST_TOTAL_SHARDS=") || kv.starts_with("GTEST_SHARD_INDEX=") ||
        kv.starts_with(std::string(kManyMsChild) + "="))
      continue;
    env_store.emplace_back(kv);
  }
  env_store.push_back(std::string(kManyMsChild) + "=1");
  std::vector<char*> child_env;
  child_env.reserve(env_store.size() + 1);
  for (std::string& kv : env_store)
    child_env.push_back(kv.data());
  child_env.push_back(nullptr);

  // And at most kBudget of rounds: a round is ~40 ms in release but 0.7 s
  // under TSan on this 2-core machine, and several times that with the
  // machine loaded; the test must finish inside its ctest timeout there too.
  constexpr auto kBudget = std::chrono::seconds(120);
  const auto started = std::chrono::steady_clock::now();
  int rounds = 0;
  int hung = 0;
  int wrong_status = 0;
  for (;
       rounds < kRounds && hung < kMaxHung && std::chrono::steady_clock::now() - started < kBudget;
       ++rounds) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const int devnull = open("/dev/null", O_WRONLY);
      if (devnull >= 0) {
        dup2(devnull, STDOUT_FILENO);
        dup2(devnull, STDERR_FILENO);
      }
      execle("/proc/self/exe", "sync_deadlock_test",
             "--gtest_filter=Deadlock.ReportedWhenManyMsGoIdleAtOnce", static_cast<char*>(nullptr),
             child_env.data());
      _exit(127);
    }
    int status = 0;
    pid_t done = 0;
    for (int ms = 0; ms < 20'000 && done == 0; ms += 2) {
      done = waitpid(pid, &status, WNOHANG);
      if (done == 0) std::this_thread::sleep_for(2ms);
    }
    if (done == 0) {
      ++hung;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 2) {
      ++wrong_status;
    }
  }
  std::printf("[ info ] %d deadlocked children, %d hung, %d with a wrong status\n", rounds, hung,
              wrong_status);
  EXPECT_GE(rounds, 10) << "too few rounds to mean anything";
  EXPECT_EQ(hung, 0) << "of " << rounds << " deadlocked children, " << hung
                     << " hung instead of reporting";
  EXPECT_EQ(wrong_status, 0) << "children that exited other than with the report's status 2";
}

// SIGQUIT, as in Go: a dump of every goroutine with its wait reason, then
// exit status 2. A goroutine blocked in a receive, one sleeping, and the main
// goroutine, which sends the signal to the process and keeps running.
//
// The child starts with SIGQUIT at its default action: the dump is for that
// disposition only, and a test run from a non-interactive shell's background
// job (`ctest ... &`) inherits SIGQUIT ignored, where the child used to wait
// forever for a dump the runtime rightly never made.
TEST_F(Deadlock, SigquitDumpsGoroutinesAndExits) {
  EXPECT_EXIT((::signal(SIGQUIT, SIG_DFL), run([] {
                 goro::Chan<int> ch;
                 // Both have run up to their blocking call (a fixed 20 ms was
                 // not enough under TSan on a loaded machine: the sleeper was
                 // still "runnable" in the dump); then 50 ms for the last steps.
                 std::atomic<int> started{0};
                 goro::go([&] {
                   started.fetch_add(1);
                   ch.recv();
                 });
                 goro::go([&] {
                   started.fetch_add(1);
                   goro::sleep_for(10s);
                 });
                 while (started.load() < 2)
                   goro::sleep_for(1ms);
                 goro::sleep_for(50ms);
                 kill(getpid(), SIGQUIT);
                 for (;;)
                   goro::sleep_for(1ms);  // until sysmon prints and exits
               })),
              ::testing::ExitedWithCode(2),
              "SIGQUIT: quit(.|\n)*goroutine [0-9]+ \\[(chan receive|sleep)\\](.|\n)*goroutine "
              "[0-9]+ \\[(chan receive|sleep)\\](.|\n)*exit status 2");
}

}  // namespace
