// Blocking calls hand the P off (issue 6): goro::blocking, the thread limit,
// and misuse.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "goro/goro.hpp"

using namespace std::chrono_literals;

namespace {

void nanosleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

// This thread's time runnable but waiting for a CPU, in nanoseconds (the
// second field of /proc/thread-self/schedstat), or -1 where the kernel does
// not say.
long long run_delay_ns() {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (f == nullptr) return -1;
  long long on_cpu = 0;
  long long delay = -1;
  if (std::fscanf(f, "%lld %lld", &on_cpu, &delay) != 2) delay = -1;
  std::fclose(f);
  return delay;
}

// maxprocs 1: 50 goroutines each block 100 ms in goro::blocking; all finish
// well under a second (each hands its P on), and a 10 ms ticker keeps ticking.
TEST(Syscall, BlockingCallsHandOffThePAndTickerKeepsTicking) {
  goro::run(
      [] {
        std::atomic<bool> stop{false};
        std::atomic<int> ticks{0};
        goro::WaitGroup ticker;
        ticker.add(1);
        goro::go([&] {
          while (!stop.load()) {
            goro::sleep_for(10ms);
            ++ticks;
          }
          ticker.done();
        });
        goro::sleep_for(20ms);
        const int ticks_before = ticks.load();
        auto t0 = std::chrono::steady_clock::now();
        goro::WaitGroup wg;
        for (int i = 0; i < 50; ++i) {
          wg.add(1);
          goro::go([&] {
            goro::blocking([] { nanosleep_ms(100); });
            wg.done();
          });
        }
        wg.wait();
        auto took = std::chrono::steady_clock::now() - t0;
        const int ticked = ticks.load() - ticks_before;
        stop = true;
        ticker.wait();
        const double expected = std::chrono::duration<double, std::milli>(took).count() / 10.0;
        const goro::RuntimeStats s = goro::stats();
        std::printf(
            "[ info ] 50 x 100 ms blocking calls on 1 P: %.0f ms, %d/%.0f ticks (%.0f%%), "
            "%llu handoffs, %llu threads\n",
            std::chrono::duration<double, std::milli>(took).count(), ticked, expected,
            100.0 * ticked / expected, static_cast<unsigned long long>(s.handoffs),
            static_cast<unsigned long long>(s.threads));
        // Handed off, the 50 calls overlap: ~100-150 ms on an idle machine.
        // Without the handoff they run one after another on the one P (5 s)
        // and the ticker stops for all of it (0%). The bounds sit well away
        // from both, so four busy loops on the machine (or a sanitizer) cannot
        // break them; the idle figures are in the [ info ] line (the issue's
        // acceptance bound was 80% of the ticks, measured there).
        EXPECT_LT(took, 2500ms);
        EXPECT_GE(ticked, 0.1 * expected);  // 25% seen under TSan with four busy loops
        EXPECT_GE(s.handoffs, 1u);
      },
      {.maxprocs = 1});
}

TEST(Syscall, BlockingReturnsValuesAndRethrows) {
  goro::run(
      [] {
        EXPECT_EQ(goro::blocking([] { return getppid(); }), getppid());
        std::string s = goro::blocking([] { return std::string(1000, 'x'); });
        EXPECT_EQ(s.size(), 1000u);
        EXPECT_THROW(goro::blocking([]() -> int { throw std::runtime_error("db down"); }),
                     std::runtime_error);
        // The goroutine still works normally afterwards.
        goro::Chan<int> ch(1);
        ch.send(7);
        EXPECT_EQ(*ch.recv(), 7);
      },
      {.maxprocs = 2});
}

// A fast call keeps its P (no handoff): thousands in a row stay on the fast path.
TEST(Syscall, ShortCallsKeepTheirP) {
  goro::run(
      [] {
        for (int i = 0; i < 10000; ++i)
          goro::blocking([] { return getppid(); });
        EXPECT_LT(goro::stats().handoffs, 100u);
      },
      {.maxprocs = 2});
}

// max_threads bounds the Ms; blocked goroutines beyond it wait for a thread
// to come back, with one clear line on stderr; nothing is lost.
TEST(Syscall, ThreadLimitIsReportedNotFatal) {
  testing::internal::CaptureStderr();
  std::atomic<int> done{0};
  goro::run(
      [&] {
        goro::WaitGroup wg;
        for (int i = 0; i < 6; ++i) {
          wg.add(1);
          goro::go([&] {
            goro::blocking([] { nanosleep_ms(100); });
            ++done;
            wg.done();
          });
        }
        wg.wait();
        EXPECT_LE(goro::stats().threads, 3u);
      },
      {.maxprocs = 1, .max_threads = 3});
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(done.load(), 6);
  EXPECT_NE(err.find("thread limit reached (Options::max_threads = 3)"), std::string::npos) << err;
}

// Sysmon retakes a P from a blocking call while the call's goroutine comes
// back, loses its P, takes an idle one and enters its next call at once:
// sysmon's report reads the call's fields (what, since) while the owner
// rewrites them. The shape makes that hand-over frequent: 4 Ps (above the
// core count), 4 callers that each leave a fresh goroutine in their P's run
// queue before a short call (so sysmon retakes on its next tick rather than
// after 10 ms), one yielder. Under TSan it caught the plain `since` field
// this once was in 3 of 10 runs (CI had caught it once in fs_write_file_test);
// every call must still return.
TEST(Syscall, RetakenCallsReenteredAtOnceStayRaceFree) {
  constexpr int kCallers = 4;
  std::atomic<int> calls{0};
  goro::run(
      [&] {
        std::atomic<bool> stop{false};
        goro::WaitGroup yielder;
        yielder.add(1);
        goro::go([&] {
          while (!stop.load(std::memory_order_relaxed))
            goro::yield();
          yielder.done();
        });
        goro::WaitGroup wg;
        const auto end = std::chrono::steady_clock::now() + 500ms;
        for (int i = 0; i < kCallers; ++i) {
          wg.add(1);
          goro::go([&, i] {
            for (int k = 0; std::chrono::steady_clock::now() < end; ++k) {
              // Empty: anything shared it touched would order the threads
              // and hide the race from TSan.
              goro::go([] {});
              const long us = 20 + 37 * ((i + k) % 7);  // 20..242 us, staggered
              goro::blocking([us] {
                timespec ts{0, us * 1000};
                nanosleep(&ts, nullptr);
              });
              calls.fetch_add(1, std::memory_order_relaxed);
            }
            wg.done();
          });
        }
        wg.wait();
        stop = true;
        yielder.wait();
        std::printf("[ info ] %d calls, %llu handoffs\n", calls.load(),
                    static_cast<unsigned long long>(goro::stats().handoffs));
        EXPECT_GE(goro::stats().handoffs, 1u);  // the hand-over this test is about happened
      },
      {.maxprocs = 4});
  EXPECT_GE(calls.load(), kCallers);
}

std::atomic<int> g_sigterms{0};
std::atomic<pid_t> g_sigterm_tid{0};
extern "C" void count_sigterm(int) {
  g_sigterms.fetch_add(1);
  g_sigterm_tid.store(gettid());
}

// A SIGTERM for the process lands on the runtime's signal thread, never on a
// thread inside goro::blocking (scheduler/signals.cpp "The signal thread"):
// six 1 s usleeps in goro::blocking, a SIGTERM from another thread 300 ms in;
// each sleep lasts its full second and the handler ran on none of their
// threads. (usleep is never restarted: the interrupted one returns EINTR.)
TEST(Syscall, ProcessSignalsDoNotInterruptBlockingCalls) {
  struct sigaction sa {
  }, old{};
  sa.sa_handler = count_sigterm;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGTERM, &sa, &old), 0);
  g_sigterms.store(0);
  constexpr int kCalls = 6;
  constexpr auto kSleep = 1s;
  std::vector<double> elapsed_ms(kCalls, 0);
  std::set<pid_t> blocking_tids;
  std::mutex tids_mu;
  std::thread killer([] {
    std::this_thread::sleep_for(300ms);
    kill(getpid(), SIGTERM);
  });
  goro::run(
      [&] {
        goro::WaitGroup wg;
        for (int i = 0; i < kCalls; ++i) {
          wg.add(1);
          goro::go([&, i] {
            goro::blocking([&] {
              {
                std::lock_guard<std::mutex> lock(tids_mu);
                blocking_tids.insert(gettid());
              }
              const auto t0 = std::chrono::steady_clock::now();
              usleep(static_cast<useconds_t>(
                  std::chrono::duration_cast<std::chrono::microseconds>(kSleep).count()));
              elapsed_ms[i] =
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                      .count();
            });
            wg.done();
          });
        }
        wg.wait();
      },
      {.maxprocs = 2});
  killer.join();
  sigaction(SIGTERM, &old, nullptr);
  EXPECT_EQ(g_sigterms.load(), 1);
  EXPECT_EQ(blocking_tids.count(g_sigterm_tid.load()), 0u)
      << "the SIGTERM handler ran on a thread inside goro::blocking";
  const double want = std::chrono::duration<double, std::milli>(kSleep).count();
  for (int i = 0; i < kCalls; ++i)
    EXPECT_GE(elapsed_ms[i], want) << "sleep " << i << " was cut short by the signal";
}

// A goroutine back from a blocking call long enough for sysmon to take its P
// gets an idle P, and a new time slice with it: 5 ms of work after the call
// (half the 10 ms the hog protocol allows) must not be flagged. sysmon's
// view of that P (the tick it last saw and when) is from before the call,
// so without a new slice it counted the call's 30 ms as running, flagged the
// goroutine at its next look and signalled its thread (a handoff).
TEST(Syscall, BackFromABlockingCallTheGoroutineGetsANewTimeSlice) {
  // The hog protocol's signal is on; TSan builds leave it off unless asked.
  setenv("GORO_DEBUG", "asyncpreemptoff=0", 1);  // NOLINT(concurrency-mt-unsafe)
  struct Unset {
    ~Unset() { unsetenv("GORO_DEBUG"); }  // NOLINT(concurrency-mt-unsafe)
  } unset;
  // Each round: a blocking call, then a 5 ms spin with no runtime entry,
  // then a real park (sysmon sees the P reschedule). Without a new slice
  // every round is flagged (the P's tick last moved before the call). A
  // round counts only when its thread was not kept off a CPU for 2 ms or
  // more between the call's sleep and the spin's end (the kernel's run
  // delay, which sees a stall inside the call's return too), and the spin
  // took under 8 ms on the wall clock: a busy machine that stalls the
  // thread there makes a real hog of it. (The wall clock alone missed the
  // stalls before the spin's first clock read: 4 of 10 rounds flagged
  // under TSan beside another test.)
  // Up to kMaxRounds rounds, until kWantClean of them are clean: on a loaded
  // machine most rounds are not (TSan beside four busy loops: 1 to 4 of 10).
  constexpr int kMaxRounds = 40;
  constexpr int kWantClean = 10;
  int rounds = 0;
  int clean = 0;
  int flagged_clean = 0;
  goro::run(
      [&] {
        for (; rounds < kMaxRounds && clean < kWantClean; ++rounds) {
          const std::uint64_t before = goro::stats().preempt_requests;
          const auto [tid, delay0] = goro::blocking([] {
            nanosleep_ms(30);
            return std::pair<pid_t, long long>(gettid(), run_delay_ns());
          });
          const auto start = std::chrono::steady_clock::now();
          unsigned long spin = 0;
          while (std::chrono::steady_clock::now() < start + 5ms) {  // no runtime entry
            ++spin;
            asm volatile("" : "+r"(spin));
          }
          const auto spun = std::chrono::steady_clock::now() - start;
          const long long delay1 = run_delay_ns();
          const bool same_thread = gettid() == tid;
          goro::sleep_for(20ms);
          const bool stalled =
              !same_thread || delay0 < 0 || delay1 < 0 || delay1 - delay0 >= 2'000'000;
          if (spun < 8ms && !stalled) {
            ++clean;
            if (goro::stats().preempt_requests != before) ++flagged_clean;
          }
        }
      },
      {.maxprocs = 2});
  std::printf("[ info ] %d of %d rounds clean, %d of them flagged\n", clean, rounds, flagged_clean);
  if (clean < 6) GTEST_SKIP() << "the machine stalled nearly every spin";
  // A stall the run delay misses (TSan's own slowness on a loaded machine
  // between the spin and the park, say) may still flag a round: half of the
  // clean rounds may be flagged (2 of 4 seen under TSan beside four busy
  // loops). Without the new slice all of them are (9 or 10 of 10).
  EXPECT_LE(flagged_clean * 2, clean) << "goroutines flagged as hogs right after a blocking call";
}

TEST(SyscallDeathTest, CallingGoroFromInsideBlockingIsFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(goro::run([] { goro::blocking([] { goro::go([] {}); }); }, {.maxprocs = 1}),
               "blocking code must not use channels");
}

}  // namespace
