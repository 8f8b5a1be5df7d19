// The runtime's public contract: run, go, yield, sleep, panics, migrating
// thread state.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cfenv>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "goro/detail/park.hpp"
#include "goro/detail/timer.hpp"
#include "goro/goro.hpp"
#if defined(__x86_64__)
#include <fpu_control.h>
#include <xmmintrin.h>
#endif
#include "tests/scheduler/gate.hpp"

using namespace std::chrono_literals;

namespace {

TEST(Runtime, RunReturnsMainResult) {
  EXPECT_EQ(goro::run([] { return 42; }, {.maxprocs = 2}), 42);
  EXPECT_EQ(goro::run([] {}, {.maxprocs = 1}), 0);
}

TEST(Runtime, RunTwiceSequentially) {
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(goro::run([i] { return i; }, {.maxprocs = 1 + i % 4}), i);
  }
}

TEST(Runtime, NestedRunAndSpawnOutsideAreErrors) {
  EXPECT_THROW(goro::go([] {}), std::logic_error);
  goro::run([] { EXPECT_THROW(goro::run([] {}), std::logic_error); }, {.maxprocs = 1});
}

TEST(Runtime, MaxprocsOption) {
  for (int n : {1, 3, 8}) {
    int seen = goro::run([] { return goro::maxprocs(); }, {.maxprocs = n});
    EXPECT_EQ(seen, n);
  }
}

TEST(Runtime, SpawnedGoroutinesAllRun) {
  std::atomic<long> sum{0};
  goro::run(
      [&] {
        for (long i = 1; i <= 10000; ++i)
          goro::go([&sum, i] { sum += i; });
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 4});
  EXPECT_EQ(sum.load(), 10000L * 10001 / 2);
}

TEST(Runtime, NumGoroutinesCountsLiveOnes) {
  goro::run(
      [] {
        EXPECT_EQ(goro::num_goroutines(), 1u);
        goro::test::Gate gate;
        for (int i = 0; i < 10; ++i)
          goro::go([&] { gate.wait(); });
        while (gate.parked() < 10)
          goro::yield();
        EXPECT_EQ(goro::num_goroutines(), 11u);
        gate.release_all();
        while (goro::num_goroutines() > 1)
          goro::yield();
        EXPECT_EQ(goro::num_goroutines(), 1u);
      },
      {.maxprocs = 2});
}

TEST(Runtime, LargeCallableIsHeapAllocated) {
  std::array<char, 32 * 1024> big{};
  big[100] = 7;
  int seen = 0;
  goro::run(
      [&] {
        goro::go([big, &seen] { seen = big[100]; });
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 1});
  EXPECT_EQ(seen, 7);
}

// A callable lives in one of three places (spawn.hpp): in the G (up to 64
// bytes; the stack is bound when the goroutine first runs), at the top of a
// stack bound at spawn, or on the heap. Each is run once and destroyed once,
// whichever P runs it and whatever stack it ends up on.
template <std::size_t N>
struct Counted {
  static inline std::atomic<int> live{0};
  static inline std::atomic<int> runs{0};
  std::array<char, N> pad{};
  Counted() { live.fetch_add(1); }
  Counted(const Counted& o) : pad(o.pad) { live.fetch_add(1); }
  Counted(Counted&& o) noexcept : pad(o.pad) { live.fetch_add(1); }
  ~Counted() { live.fetch_sub(1); }
  void operator()() const {
    if (pad[N - 1] == 42) runs.fetch_add(1);
  }
};

TEST(Runtime, CallablesInEveryPlacementRunAndDieOnce) {
  using Small = Counted<48>;         // in the G
  using Medium = Counted<1024>;      // at the top of its stack
  using Large = Counted<20 * 1024>;  // on the heap (over a quarter of 64 KiB)
  constexpr int kEach = 2000;
  goro::run(
      [&] {
        for (int i = 0; i < kEach; ++i) {
          Small s;
          s.pad[47] = 42;
          goro::go(s);
          Medium m;
          m.pad[1023] = 42;
          goro::go(std::move(m));
          auto l = std::make_unique<Large>();
          l->pad[20 * 1024 - 1] = 42;
          goro::go(*l);
          if (i % 16 == 0) goro::yield();
        }
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 4});
  EXPECT_EQ(Small::runs.load(), kEach);
  EXPECT_EQ(Medium::runs.load(), kEach);
  EXPECT_EQ(Large::runs.load(), kEach);
  EXPECT_EQ(Small::live.load(), 0);
  EXPECT_EQ(Medium::live.load(), 0);
  EXPECT_EQ(Large::live.load(), 0);
}

TEST(Runtime, PerSpawnStackSize) {
  std::atomic<bool> ok{false};
  goro::run(
      [&] {
        goro::go(goro::SpawnOptions{.stack_size = 1 << 20}, [&] {
          volatile char buf[512 * 1024];  // would overflow the 64 KiB default
          buf[0] = 1;
          buf[sizeof buf - 1] = 2;
          ok = buf[0] + buf[sizeof buf - 1] == 3;
        });
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 2});
  EXPECT_TRUE(ok);
}

TEST(Runtime, SleepForSleepsAtLeastThatLong) {
  goro::run(
      [] {
        for (auto d : {1ms, 5ms, 20ms}) {
          auto t0 = std::chrono::steady_clock::now();
          goro::sleep_for(d);
          auto took = std::chrono::steady_clock::now() - t0;
          EXPECT_GE(took, d);
          EXPECT_LT(took, d + 500ms);  // generous sanity bound on a noisy VM
        }
      },
      {.maxprocs = 2});
}

// Ten timers started in reverse order fire in deadline order. The order is
// observed in the timer callbacks themselves (the heap's order): the order in
// which the woken goroutines then run is the run queue's business (runnext,
// as Go's), and on a loaded machine timers that came due together while the
// thread was descheduled fire in one batch. So the callbacks, not sleeping
// goroutines, are recorded; and a batch still fires in deadline order.
TEST(Runtime, TimersFireInDeadlineOrder) {
  struct Rec {
    std::mutex mu;
    std::vector<int> order;
  } rec;
  struct Arm {
    goro::detail::Timer t;
    Rec* rec = nullptr;
    int i = 0;
  };
  std::vector<Arm> arms(10);
  goro::run(
      [&] {
        const std::int64_t base = goro::detail::nanotime() + 50'000'000;
        for (int i = 9; i >= 0; --i) {
          Arm& a = arms[i];
          a.rec = &rec;
          a.i = i;
          a.t.when = base + std::int64_t{5'000'000} * i;
          a.t.arg = &a;
          a.t.fn = [](void* arg, std::uint64_t) {
            auto* a = static_cast<Arm*>(arg);
            std::lock_guard<std::mutex> lock(a->rec->mu);
            a->rec->order.push_back(a->i);
          };
          goro::detail::timer_start(&a.t);
        }
        for (;;) {
          {
            std::lock_guard<std::mutex> lock(rec.mu);
            if (rec.order.size() == arms.size()) break;
          }
          goro::sleep_for(5ms);
        }
      },
      {.maxprocs = 1});
  ASSERT_EQ(rec.order.size(), 10u);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(rec.order[i], i);
}

// Sleepers never wake before their deadline, whatever the load.
TEST(Runtime, ManySleepersNeverWakeEarly) {
  using Clock = std::chrono::steady_clock;
  std::mutex mu;
  std::vector<std::pair<int, Clock::time_point>> woke;  // (i, when it ran)
  const auto gap = 10ms;
  Clock::time_point base;
  goro::run(
      [&] {
        base = Clock::now() + 50ms;
        for (int i = 9; i >= 0; --i) {
          goro::go([&, i] {
            goro::sleep_until(base + gap * i);
            std::lock_guard<std::mutex> lock(mu);
            woke.emplace_back(i, Clock::now());
          });
        }
        while (goro::num_goroutines() > 1)
          goro::sleep_for(1ms);
      },
      {.maxprocs = 1});
  ASSERT_EQ(woke.size(), 10u);
  for (const auto& [i, at] : woke)
    EXPECT_GE(at, base + gap * i) << "goroutine " << i << " woke before its deadline";
}

// A timer whose P is kept busy by goroutines that always have local work
// must still fire (the fast path steps aside when the P's timer is due).
TEST(Runtime, TimerFiresOnBusyP) {
  goro::run(
      [] {
        std::atomic<bool> stop{false};
        for (int i = 0; i < 2; ++i) {
          goro::go([&] {
            while (!stop.load())
              goro::yield();
          });
        }
        auto t0 = std::chrono::steady_clock::now();
        goro::sleep_for(10ms);
        auto late = std::chrono::steady_clock::now() - t0 - 10ms;
        stop = true;
        EXPECT_LT(late, 200ms);
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 1});
}

// errno is read and written through out-of-line functions: within one
// function the compiler may keep errno's thread-local address across a call
// (see runtime.hpp), which no runtime can fix; the runtime's promise is the
// value a fresh read sees after a switch.
__attribute__((noinline)) void set_errno(int v) {
  asm volatile("" ::: "memory");
  errno = v;
}
__attribute__((noinline)) int get_errno() {
  asm volatile("" ::: "memory");
  return errno;
}

TEST(Runtime, ErrnoMigratesWithTheGoroutine) {
  std::atomic<int> bad{0};
  goro::run(
      [&] {
        for (int k = 0; k < 16; ++k) {
          goro::go([&, k] {
            for (int i = 0; i < 2000; ++i) {
              set_errno(1000 + k);
              goro::yield();
              if (get_errno() != 1000 + k) ++bad;
            }
          });
        }
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 4});
  EXPECT_EQ(bad.load(), 0);
}

// The floating-point control state (rounding mode, flush-to-zero, and on
// x86-64 the x87 control word) belongs to the goroutine: the context switch
// saves and restores it (scheduler/context_*.S), so a goroutine finds its own
// after every yield and park, on whichever M it resumes, and a new goroutine
// starts from the default. Both the direct goroutine-to-goroutine switch and
// the one through g0 (parks, sleeps) are exercised.
struct FpEnv {
  int round;
  std::uint32_t control;  // MXCSR or FPCR bits beyond the rounding mode (flush-to-zero)
  std::uint32_t x87 = 0;  // x87 control word (x86-64)
};

FpEnv read_fp_env() {
  FpEnv e{std::fegetround(), 0};
#if defined(__x86_64__)
  e.control = _mm_getcsr() & _MM_FLUSH_ZERO_MASK;
  fpu_control_t cw;
  _FPU_GETCW(cw);
  e.x87 = cw;
#elif defined(__aarch64__)
  std::uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  e.control = static_cast<std::uint32_t>(fpcr & (1u << 24));  // FZ
#endif
  return e;
}

void set_flush_to_zero(bool on) {
#if defined(__x86_64__)
  _mm_setcsr((_mm_getcsr() & ~_MM_FLUSH_ZERO_MASK) | (on ? _MM_FLUSH_ZERO_ON : 0));
#elif defined(__aarch64__)
  std::uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr = on ? (fpcr | (1u << 24)) : (fpcr & ~std::uint64_t{1u << 24});
  asm volatile("msr fpcr, %0" ::"r"(fpcr));
#else
  (void)on;
#endif
}

bool same_env(const FpEnv& a, const FpEnv& b) {
  return a.round == b.round && a.control == b.control && a.x87 == b.x87;
}

TEST(Runtime, FloatingPointControlStateIsPerGoroutine) {
  static constexpr std::array kModes = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
  std::atomic<int> bad{0}, checks{0}, fresh_bad{0};
  goro::run(
      [&] {
        const FpEnv main_env = read_fp_env();
        for (int k = 0; k < 16; ++k) {
          goro::go([&, k] {
            ASSERT_EQ(std::fesetround(kModes[k % 4]), 0);
            set_flush_to_zero(k % 8 >= 4);
            const FpEnv mine = read_fp_env();
            for (int i = 0; i < 3000; ++i) {
              if (i % 100 == 99) {
                goro::sleep_for(std::chrono::microseconds(50));  // park, resumes through g0
              } else if (i % 10 == 9) {
                // A goroutine spawned from here starts from the default
                // environment, not this one.
                goro::go([&, main_env] {
                  if (!same_env(read_fp_env(), main_env)) ++fresh_bad;
                });
              } else {
                goro::yield();
              }
              if (!same_env(read_fp_env(), mine)) ++bad;
              ++checks;
            }
          });
        }
        while (goro::num_goroutines() > 1)
          goro::yield();
        // main never changed its own environment and got it back each time.
        if (!same_env(read_fp_env(), main_env)) ++bad;
      },
      {.maxprocs = 4});
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(fresh_bad.load(), 0);
  EXPECT_EQ(checks.load(), 16 * 3000);
}

TEST(Runtime, ParkingInsideCatchBlockKeepsTheException) {
  std::atomic<int> ok{0};
  goro::run(
      [&] {
        for (int k = 0; k < 8; ++k) {
          goro::go([&, k] {
            try {
              throw std::runtime_error("boom " + std::to_string(k));
            } catch (const std::exception&) {
              for (int i = 0; i < 200; ++i)
                goro::yield();
              try {
                throw;  // rethrow needs this goroutine's caught-exception stack
              } catch (const std::runtime_error& e) {
                if (std::string(e.what()) == "boom " + std::to_string(k)) ++ok;
              }
            }
          });
        }
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 4});
  EXPECT_EQ(ok.load(), 8);
}

// goro::yield's fast path moves only errno and leaves the exception globals
// alone, relying on every switch away from a goroutine inside a catch block
// (or an unwind) to clear the thread's copy (sched.hpp "clean exception
// globals"). Goroutines inside catch blocks and unwinds, yielding and
// parking, share the Ms with clean ones that check after every yield that
// they see no exception and their own errno.
struct YieldsWhileUnwinding {
  std::atomic<int>* bad;
  ~YieldsWhileUnwinding() {
    for (int i = 0; i < 50; ++i) {
      goro::yield();
      if (std::uncaught_exceptions() != 1) ++*bad;
    }
  }
};

TEST(Runtime, CleanGoroutinesNeverSeeAnotherGoroutinesException) {
  std::atomic<int> bad{0}, caught{0}, unwound{0}, clean_checks{0};
  goro::run(
      [&] {
        for (int k = 0; k < 24; ++k) {
          goro::go([&, k] {
            switch (k % 3) {
              case 0:  // inside a catch block, yielding and parking
                try {
                  throw std::runtime_error("boom " + std::to_string(k));
                } catch (const std::exception&) {
                  for (int i = 0; i < 300; ++i) {
                    if (i % 50 == 49) {
                      goro::sleep_for(std::chrono::microseconds(20));
                    } else {
                      goro::yield();
                    }
                    if (std::current_exception() == nullptr) ++bad;
                  }
                  try {
                    throw;
                  } catch (const std::runtime_error& e) {
                    if (std::string(e.what()) == "boom " + std::to_string(k)) ++caught;
                  }
                }
                break;
              case 1:  // a destructor yielding during an unwind
                try {
                  YieldsWhileUnwinding y{&bad};
                  throw std::logic_error("unwind");
                } catch (const std::logic_error&) {
                  ++unwound;
                }
                break;
              default:  // clean: no exception, its own errno, after every switch
                for (int i = 0; i < 3000; ++i) {
                  set_errno(2000 + k);
                  goro::yield();
                  if (std::current_exception() != nullptr || std::uncaught_exceptions() != 0 ||
                      get_errno() != 2000 + k) {
                    ++bad;
                  }
                  ++clean_checks;
                }
            }
            // Whatever it went through, a goroutine ends clean.
            if (std::current_exception() != nullptr || std::uncaught_exceptions() != 0) ++bad;
          });
        }
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 4});
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(caught.load(), 8);
  EXPECT_EQ(unwound.load(), 8);
  EXPECT_EQ(clean_checks.load(), 8 * 3000);
}

// goro::run called inside a catch block: the goroutines start clean, and the
// caller gets its exception (and errno) back when run returns.
TEST(Runtime, RunInsideCatchBlockKeepsTheCallersException) {
  std::atomic<int> bad{0};
  try {
    throw std::runtime_error("outer");
  } catch (const std::exception&) {
    set_errno(77);
    goro::run(
        [&] {
          if (std::current_exception() != nullptr) ++bad;
          for (int k = 0; k < 4; ++k) {
            goro::go([&] {
              for (int i = 0; i < 100; ++i) {
                goro::yield();
                if (std::current_exception() != nullptr) ++bad;
              }
            });
          }
          while (goro::num_goroutines() > 1)
            goro::yield();
        },
        {.maxprocs = 2});
    EXPECT_EQ(get_errno(), 77);
    try {
      throw;
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "outer");
    }
  }
  EXPECT_EQ(bad.load(), 0);
}

TEST(RuntimeDeathTest, EscapingExceptionPanicsWithGoroutineId) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(goro::run(
                  [] {
                    goro::go([] { throw std::runtime_error("handler exploded"); });
                    goro::sleep_for(1s);
                  },
                  {.maxprocs = 2}),
              ::testing::ExitedWithCode(2), "panic: handler exploded(.|\n)*goroutine [0-9]+");
}

TEST(Runtime, StatsCountSpawnsAndParks) {
  goro::run(
      [] {
        goro::test::Gate gate;
        for (int i = 0; i < 100; ++i)
          goro::go([&] { gate.wait(); });
        while (gate.parked() < 100)
          goro::yield();
        goro::RuntimeStats s = goro::stats();
        EXPECT_GE(s.spawns, 100u);
        EXPECT_GE(s.parks, 100u);
        EXPECT_EQ(s.goroutines, 101u);
        EXPECT_EQ(s.maxprocs, 2u);
        EXPECT_GE(s.stacks_live, 101u);
        gate.release_all();
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 2});
}

// GORO_DEBUG=schedtrace=MS,scheddetail=1 while goroutines spawn, park and
// move between Ps: the SCHED line in Go's shape every interval, one line per
// P and one per live G. Sysmon reads the Ps and Gs while their Ms change
// them, so under TSan this also checks that the trace reads only what may be
// read racily (it once read P::m and a reused G's spawn site unguarded).
TEST(Runtime, SchedtraceAndScheddetailPrintWhileGoroutinesRun) {
  ASSERT_EQ(setenv("GORO_DEBUG", "schedtrace=2,scheddetail=1", 1), 0);
  ::testing::internal::CaptureStderr();
  goro::run(
      [] {
        const auto end = std::chrono::steady_clock::now() + 150ms;
        std::atomic<int> live{0};
        while (std::chrono::steady_clock::now() < end) {
          for (int i = 0; i < 16; ++i) {
            live.fetch_add(1);
            goro::go([&live, i] {
              for (int k = 0; k < i % 3; ++k)
                goro::yield();
              if (i % 4 == 0) goro::sleep_for(1ms);
              live.fetch_sub(1);
            });
          }
          goro::sleep_for(1ms);
        }
        while (live.load() != 0)
          goro::sleep_for(1ms);
      },
      {.maxprocs = 4});
  const std::string out = ::testing::internal::GetCapturedStderr();
  unsetenv("GORO_DEBUG");
  // A sanitizer report made while stderr was captured would otherwise only
  // show as the exit status.
  EXPECT_EQ(out.find("WARNING: ThreadSanitizer"), std::string::npos) << out;

  // The shapes, field by field (sscanf: std::regex trips GCC 12's
  // maybe-uninitialized warning under ASan).
  int sched_lines = 0;
  std::array<bool, 4> p_seen{};
  int g_lines = 0;
  std::size_t pos = 0;
  while (pos < out.size()) {
    std::size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    const std::string line = out.substr(pos, eol - pos);
    pos = eol + 1;
    long ms = 0, threads = 0, spinning = 0, needspinning = 0, idle_ms = 0, runqueue = 0;
    long local[4] = {};  // one run-queue length per P
    int procs = 0, idle = 0, n = 0;
    if (std::sscanf(line.c_str(),
                    "SCHED %ldms: gomaxprocs=%d idleprocs=%d threads=%ld spinningthreads=%ld "
                    "needspinning=%ld idlethreads=%ld runqueue=%ld [%ld %ld %ld %ld]%n",
                    &ms, &procs, &idle, &threads, &spinning, &needspinning, &idle_ms, &runqueue,
                    &local[0], &local[1], &local[2], &local[3], &n) == 12 &&
        n > 0 && procs == 4 && idle >= 0 && idle <= 4 &&
        line.find(" schedticks=[ ", static_cast<std::size_t>(n)) != std::string::npos) {
      ++sched_lines;
    }
    int pid = -1, status = -1, timers = -1;
    long tick = 0, m = 0, runq = 0, gfree = 0;
    if (std::sscanf(line.c_str(),
                    "  P%d: status=%d schedtick=%ld m=%ld runqsize=%ld gfreecnt=%ld timerslen=%d",
                    &pid, &status, &tick, &m, &runq, &gfree, &timers) == 7 &&
        pid >= 0 && pid < 4) {
      p_seen[static_cast<std::size_t>(pid)] = true;
    }
    if (line.rfind("  G", 0) == 0 && line.find(": status=") != std::string::npos &&
        line.find(" spawned at ") != std::string::npos &&
        line.find("runtime_test.cpp:") != std::string::npos) {
      ++g_lines;
    }
  }
  // 150 ms at 2 ms intervals; generous for a loaded machine.
  EXPECT_GE(sched_lines, 5) << out.substr(0, 2000);
  for (std::size_t p = 0; p < 4; ++p)
    EXPECT_TRUE(p_seen[p]) << "no P" << p << " line\n" << out.substr(0, 2000);
  EXPECT_GT(g_lines, 0) << out.substr(0, 2000);
}

}  // namespace
