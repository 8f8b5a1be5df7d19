// Goroutine stacks: guard pages, the map-count budget, and the fallbacks.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>

#include "goro/goro.hpp"
#include "scheduler/sched.hpp"
#include "scheduler/stack.hpp"
#include "tests/scheduler/await_fault.hpp"
#include "tests/scheduler/gate.hpp"

namespace {

// ThreadSanitizer keeps a thread record per fiber and dies past 8128 of them,
// and each live goroutine costs it ~0.9 MiB and ~15 ms (6,000 took 85-105 s
// idle and overran the test's 300 s with the machine loaded), so the TSan
// build exercises the same paths with fewer live goroutines.
#if defined(GORO_TSAN)
constexpr int kManyLive = 1500;
#else
constexpr int kManyLive = 100000;
#endif

long map_count() {
  std::ifstream in("/proc/self/maps");
  long n = 0;
  std::string line;
  while (std::getline(in, line))
    ++n;
  return n;
}

long rss_kib() {
  std::ifstream in("/proc/self/statm");
  long size = 0, resident = 0;
  in >> size >> resident;
  return resident * 4;
}

// Page tables (not in the RSS): each 2 MiB of stack arena that holds a
// stack's top page costs one (stack.hpp "Size").
long page_tables_kib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  long v = 0;
  while (in >> key) {
    if (key == "VmPTE:") {
      in >> v;
      return v;
    }
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

// Set before goro::run starts any thread, unset after it returned.
struct ScopedDebugEnv {
  explicit ScopedDebugEnv(const char* v) {
    setenv("GORO_DEBUG", v, 1);  // NOLINT(concurrency-mt-unsafe): no other thread yet
  }
  ~ScopedDebugEnv() {
    unsetenv("GORO_DEBUG");  // NOLINT(concurrency-mt-unsafe): the runtime has stopped
  }
};

// Recurses until the frames reach `stop` (an address below the stack's start).
__attribute__((noinline)) void dive(const char* stop) {
  volatile char frame[256];
  for (auto& c : frame)
    c = 0x5a;  // touch every byte, as real frames do
  if (const_cast<const char*>(&frame[0]) > stop) dive(stop);
  frame[1] = frame[0];
}

int recurse(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  if (depth == 0) return frame[0];
  return recurse(depth - 1) + frame[0];
}

// 100,000 live goroutines with the default guard: on kernels with
// MADV_GUARD_INSTALL they cost no extra mappings; otherwise the mprotect
// budget and then canaries keep the process inside vm.max_map_count.
TEST(Stacks, HundredThousandParkedGoroutinesFitTheMapCount) {
  constexpr int kN = kManyLive;
  long maps_before = map_count();
  long rss_before = rss_kib();
  long pte_before = page_tables_kib();
  goro::run(
      [&] {
        goro::test::Gate gate;
        for (int i = 0; i < kN; ++i)
          goro::go([&] { gate.wait(); });
        while (gate.parked() < kN)
          goro::yield();
        goro::RuntimeStats s = goro::stats();
        long maps_during = map_count();
        long rss_during = rss_kib();
        long pte_during = page_tables_kib();
        EXPECT_EQ(s.goroutines, static_cast<std::uint64_t>(kN + 1));
        EXPECT_EQ(s.stacks_guard_install + s.stacks_guard_mprotect + s.stacks_canary_only,
                  s.stacks_live);
        EXPECT_LT(maps_during, 65530);
#if !defined(GORO_TSAN)  // TSan maps shadow memory for every stack it sees
        if (s.stacks_guard_install == s.stacks_live) {
          EXPECT_LT(maps_during - maps_before, 1000) << "guard pages split the stack arenas";
        }
#endif
#if !defined(GORO_TSAN) && !defined(GORO_ASAN)  // shadow memory is in the RSS
        // Target 4.5 KiB (the stack's top page and the G); generous bound.
        EXPECT_LT(static_cast<double>(rss_during - rss_before) / kN, 8.0)
            << "a parked goroutine commits more than its stack's top pages";
#endif
        std::printf(
            "[ info ] %d parked goroutines: +%ld mappings, %.2f KiB RSS each (+%.2f KiB page "
            "tables); guards: %llu install, %llu mprotect, %llu canary\n",
            kN, maps_during - maps_before, static_cast<double>(rss_during - rss_before) / kN,
            static_cast<double>(pte_during - pte_before) / kN,
            static_cast<unsigned long long>(s.stacks_guard_install),
            static_cast<unsigned long long>(s.stacks_guard_mprotect),
            static_cast<unsigned long long>(s.stacks_canary_only));
        gate.release_all();
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 4});
}

// The default stack is deep enough for a handler with a few large buffers on
// it: 256 KiB of frames (1 KiB each) on the default settings (stack.hpp
// "Size"), on a spawned goroutine and on the main one.
TEST(Stacks, QuarterMebibyteOfFramesWorksByDefault) {
#if defined(GORO_ASAN)
  GTEST_SKIP() << "ASan's redzones make each 1 KiB frame several times larger";
#endif
  int spawned = -1, main = -1;
  goro::run([&] {
    goro::WaitGroup wg;
    wg.add(1);
    goro::go([&] {
      spawned = recurse(256);
      wg.done();
    });
    main = recurse(256);
    wg.wait();
  });
  EXPECT_EQ(spawned, main);
}

// A stack that went deep returns its deep pages to the kernel once it cools
// (stack.hpp "Size"), not only after sysmon's scavenge (which leaves the
// first 256 free stacks alone): 200 goroutines (fewer than that) each dirty
// 256 KiB, park, and exit; the RSS they added must be gone as soon as they
// have exited, but for the few hot stacks each P keeps.
TEST(Stacks, DeepStacksAreTrimmedOnceTheyCool) {
#if defined(GORO_TSAN) || defined(GORO_ASAN)
  GTEST_SKIP() << "the sanitizers' shadow memory for the stacks stays in the RSS";
#endif
  constexpr int kN = 200;
  long rss_before = 0, rss_peak = 0, rss_after = 0;
  goro::run(
      [&] {
        rss_before = rss_kib();
        goro::test::Gate gate;
        for (int i = 0; i < kN; ++i) {
          goro::go([&] {
            volatile char deep[256 * 1024];
            for (std::size_t k = 0; k < sizeof deep; k += 512)
              deep[k] = 1;
            gate.wait();
          });
        }
        while (gate.parked() < kN)
          goro::yield();
        rss_peak = rss_kib();
        gate.release_all();
        while (goro::num_goroutines() > 1)
          goro::yield();
        rss_after = rss_kib();
      },
      {.maxprocs = 2});
  const long grown = rss_peak - rss_before;
  std::printf("[ info ] RSS +%ld KiB with %d 256 KiB-deep stacks parked, +%ld KiB after exit\n",
              grown, kN, rss_after - rss_before);
  ASSERT_GT(grown, kN * 200L) << "the goroutines did not dirty their stacks";
  // Each keeps at most its top 64 KiB: a quarter of what it dirtied.
  EXPECT_LT(rss_after - rss_before, grown / 2) << "deep stacks were cached fully committed";
}

// From a goroutine: N goroutines each dirty 256 KiB of their stack, all
// alive at once (so on N stacks), record their deepest dirtied byte in
// `low`, and exit; returns once they all have.
template <std::size_t N>
void run_deep_goroutines(std::array<char*, N>& low) {
  goro::test::Gate gate;
  for (std::size_t i = 0; i < N; ++i) {
    goro::go([&, i] {
      volatile char deep[256 * 1024];
      for (std::size_t k = 0; k < sizeof deep; k += 512)
        deep[k] = 1;
      low[i] = const_cast<char*>(&deep[0]);
      gate.wait();
    });
  }
  while (gate.parked() < N)
    goro::yield();
  gate.release_all();
  while (goro::num_goroutines() > 1)
    goro::yield();
}

// 1 if the page holding `b` is resident (mincore), 0 if not, -1 when
// mincore fails.
int page_resident(char* b) {
  const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  unsigned char v = 0;
  char* at = b - (reinterpret_cast<std::uintptr_t>(b) & (page - 1));
  if (mincore(at, page, &v) != 0) return -1;
  return v & 1;
}

// How many of the pages holding `bytes` (each goroutine's deepest dirtied
// byte) are resident; -1 when mincore fails.
template <std::size_t N>
int resident_pages(const std::array<char*, N>& bytes) {
  int n = 0;
  for (char* p : bytes) {
    const int r = page_resident(p);
    if (r < 0) return -1;
    n += r;
  }
  return n;
}

// Stacks are probed when they cool (scheduler/galloc.cpp "Trimmed when
// they cool"), not at every exit: of the stacks a P's cache holds, only the
// P::kHotStacks most recently freed may keep their deep pages. Twelve
// goroutines on one P each dirty 256 KiB, park, and exit; mincore then finds
// the deepest dirtied page resident in at most kHotStacks of their stacks
// (in all twelve without the probe at cooling), and in at least one (the
// hot ones are left alone: the probe no longer runs at every exit).
TEST(Stacks, OnlyTheHotStacksOfACacheStayDeep) {
#if defined(GORO_TSAN) || defined(GORO_ASAN)
  GTEST_SKIP() << "the sanitizers may move large locals off the goroutine stack";
#endif
  constexpr int kN = 12;
  std::array<char*, kN> low{};  // each goroutine's deepest dirtied byte
  int resident = -1;
  goro::run(
      [&] {
        run_deep_goroutines(low);
        resident = resident_pages(low);
        ASSERT_GE(resident, 0) << "mincore failed";
      },
      {.maxprocs = 1});
  std::printf("[ info ] %d of %d deep stacks still deep after exit (hot ones kept: %d)\n", resident,
              kN, goro::detail::P::kHotStacks);
  EXPECT_LE(resident, goro::detail::P::kHotStacks);
  EXPECT_GE(resident, 1);
}

// An idle P's hot stacks (galloc.cpp "Idle Ps' hot stacks"): four
// goroutines on one P each dirty 256 KiB and exit, which leaves their stacks
// hot and deep in the P's cache (the case above). The main goroutine then
// enters a blocking call, so sysmon hands its P off to the idle list, and
// with every P idle sysmon gives the deep pages back before it sleeps,
// without any call from the program. mincore on each deepest dirtied page,
// polled for up to 20 s. Without that step all four stayed resident (run:
// sysmon then sleeps for up to a minute, as maxprocs is explicit here).
TEST(Stacks, AnIdlePsHotStacksAreTrimmedByTheScavenger) {
#if defined(GORO_TSAN) || defined(GORO_ASAN)
  GTEST_SKIP() << "the sanitizers may move large locals off the goroutine stack";
#endif
  constexpr int kN = goro::detail::P::kHotStacks;
  std::array<char*, kN> low{};
  auto resident = [&] { return resident_pages(low); };
  int before = -1;
  int after = -1;
  goro::run(
      [&] {
        run_deep_goroutines(low);
        before = resident();
        goro::blocking([&] {
          const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          do {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            after = resident();
          } while (after > 0 && std::chrono::steady_clock::now() < give_up);
        });
      },
      {.maxprocs = 1});
  std::printf("[ info ] deep stacks resident: %d of %d after exit, %d once the P idled\n", before,
              kN, after);
  EXPECT_EQ(before, kN) << "the hot stacks were trimmed at exit: this test checks nothing";
  EXPECT_EQ(after, 0);
}

// The same from a P that idles while another stays busy: sysmon's scavenger
// takes its hot stacks once it has been idle for a second (its passes come
// every 500 ms). The main goroutine spins without yielding while eight deep
// goroutines run, so most are stolen by the other P. Then the main goroutine
// keeps its P busy while the other idles: every deep page must go but those
// of the busy P's own hot stacks (P::stack_cache's invariant: only a P's
// kHotStacks most recent stacks may stay deep, and an idle P's go after a
// second). (Run one after another, goroutines on one P may all reuse one
// stack: the count is of their deepest pages, some of them the same page.)
//
// The busy P is the one the main goroutine is on at each check, and what it
// may keep is read from its cache (owner only: the main goroutine runs on
// it, alone), not guessed from where the goroutines ran. Earlier versions
// guessed: by the main goroutine's first thread, then by the P each deep
// goroutine saw. Under four busy loops both failed. The spin is a hog, so
// sysmon hands its P to another thread and the main goroutine comes back on
// whichever P it finds; a deep goroutine flagged as a hog likewise runs on
// without a P and exits on the one it gets back, leaving its stack there.
TEST(Stacks, ABusyProcessStillTrimsItsIdlePsHotStacks) {
#if defined(GORO_TSAN) || defined(GORO_ASAN)
  GTEST_SKIP() << "the sanitizers may move large locals off the goroutine stack";
#endif
  using goro::detail::P;
  constexpr int kN = 2 * P::kHotStacks;
  std::array<char*, kN> low{};
  // The P the main goroutine runs on, after a yield: a goroutine flagged as
  // a hog runs on without one until its next scheduling point.
  auto my_p = [] {
    const P* p = nullptr;
    while (p == nullptr) {
      goro::yield();
      p = goro::detail::current_m()->p;
    }
    return p;
  };
  // Does one of `busy`'s hot stacks hold `b`?
  auto in_hot_stacks = [&](const P* busy, const char* b) {
    for (int j = std::max(0, busy->nstack_cache - P::kHotStacks); j < busy->nstack_cache; ++j) {
      const goro::detail::Stack& st = busy->stack_cache[j];
      if (b >= st.lo && b < st.hi()) return true;
    }
    return false;
  };
  // Resident deep pages outside the hot stacks of the caller's P; -1 if
  // mincore fails.
  auto strays = [&] {
    const P* busy = my_p();
    int n = 0;
    for (char* b : low) {
      if (in_hot_stacks(busy, b)) continue;
      const int r = page_resident(b);
      if (r < 0) return -1;
      n += r;
    }
    return n;
  };
  int before = -1;
  int after = -1;
  int kept = 0;
  goro::run(
      [&] {
        std::atomic<int> done{0};
        for (int i = 0; i < kN; ++i) {
          goro::go([&, i] {
            volatile char deep[256 * 1024];
            for (std::size_t k = 0; k < sizeof deep; k += 512)
              deep[k] = 1;
            low[static_cast<std::size_t>(i)] = const_cast<char*>(&deep[0]);
            done.fetch_add(1);
          });
        }
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (done.load() < kN && std::chrono::steady_clock::now() < give_up) {
        }
        while (goro::num_goroutines() > 1)
          goro::yield();
        before = strays();
        do {
          for (int k = 0; k < 1000; ++k)
            goro::yield();
          after = strays();
        } while (after > 0 && std::chrono::steady_clock::now() < give_up);
        const P* busy = my_p();
        for (const char* b : low)
          kept += in_hot_stacks(busy, b) ? 1 : 0;
      },
      {.maxprocs = 2});
  std::printf(
      "[ info ] deep pages outside the busy P's hot stacks resident: %d after exit, %d with the "
      "other P idle (%d of %d in the busy P's hot stacks)\n",
      before, after, kept, kN);
  if (before == 0) GTEST_SKIP() << "every deep stack is the busy P's: inconclusive";
  EXPECT_EQ(after, 0);
}

// trim_deep's probe (stack.hpp "Size") reads the whole page below the kept
// part, not a sample of it: one word written anywhere in that page (its first,
// a middle and its last word here) marks the stack deep and its lower pages
// go back to the kernel; an untouched probe page leaves them alone. Checked
// with mincore on a stack-shaped mapping, no goroutine involved.
TEST(Stacks, TrimDeepSeesOneWordAnywhereInItsProbePage) {
  using goro::detail::StackPool;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  constexpr std::size_t kSize = 256 * 1024;
  auto resident = [&](const char* p) {
    unsigned char v = 0;
    EXPECT_EQ(mincore(const_cast<char*>(p), page, &v), 0);
    return (v & 1) != 0;
  };
  constexpr std::size_t kNoWrite = ~std::size_t{0};
  for (const std::size_t offset :
       {std::size_t{0}, StackPool::kPageProbe / 2 + 8, StackPool::kPageProbe - 8, kNoWrite}) {
    void* m = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    goro::detail::Stack s;
    s.lo = static_cast<char*>(m);
    s.size = kSize;
    s.guard = goro::detail::GuardKind::kGuardInstall;  // no canary to rewrite
    s.pooled = true;
    s.lo[0] = 1;  // a low page in use: resident until trimmed
    char* const probe = s.hi() - StackPool::kKeepCommitted - StackPool::kPageProbe;
    if (offset != kNoWrite) *reinterpret_cast<volatile std::uint64_t*>(probe + offset) = 1;
    ASSERT_TRUE(resident(s.lo));
    StackPool::trim_deep(s);
    if (offset == kNoWrite) {
      EXPECT_TRUE(resident(s.lo)) << "a stack that never reached the probe page was trimmed";
    } else {
      EXPECT_FALSE(resident(s.lo))
          << "a write at byte " << offset << " of the probe page went unseen";
    }
    munmap(m, kSize);
  }
}

// Freed stacks beyond the warm cache go back to the kernel, off the exit
// path: sysmon's scavenge() DONTNEEDs those unused for a whole period
// (stack.hpp). 5,000 goroutines each dirty 32 KiB of stack, park, and exit;
// within a few seconds most of that memory must be gone from the RSS.
TEST(Stacks, FreedStacksAreScavenged) {
#if defined(GORO_TSAN) || defined(GORO_ASAN)
  GTEST_SKIP() << "the sanitizers' shadow memory for the stacks stays in the RSS after the "
                  "stacks themselves are released; covered by the release build";
#endif
  constexpr int kN = 5000;
  long rss_before = 0, rss_peak = 0, rss_after = 0;
  goro::run(
      [&] {
        rss_before = rss_kib();
        goro::test::Gate gate;
        for (int i = 0; i < kN; ++i) {
          goro::go([&] {
            volatile char deep[32 * 1024];
            for (std::size_t k = 0; k < sizeof deep; k += 512)
              deep[k] = 1;
            gate.wait();
          });
        }
        while (gate.parked() < kN)
          goro::yield();
        rss_peak = rss_kib();
        gate.release_all();
        while (goro::num_goroutines() > 1)
          goro::yield();
        // Two scavenge periods (0.5 s each) make the freed stacks eligible;
        // allow far more on a loaded machine (4 s was not enough with four
        // busy loops on two cores). Without scavenging, none is ever freed.
        for (int i = 0; i < 200; ++i) {
          goro::sleep_for(std::chrono::milliseconds(100));
          rss_after = rss_kib();
          if (i >= 10 && rss_after - rss_before < (rss_peak - rss_before) / 3) break;
        }
      },
      {.maxprocs = 2});
  const long grown = rss_peak - rss_before;
  std::printf("[ info ] RSS +%ld KiB with %d deep stacks parked, +%ld KiB after they exited\n",
              grown, kN, rss_after - rss_before);
  ASSERT_GT(grown, kN * 24L) << "the goroutines did not dirty their stacks";
  EXPECT_LT(rss_after - rss_before, grown / 3) << "freed stacks were not returned to the kernel";
}

// The fallback path, forced: mprotect guards until the budget is spent, then
// canary-only stacks, all reported in the stats; nothing crashes.
TEST(Stacks, MprotectFallbackRationsTheMapCount) {
#if defined(GORO_TSAN)
  GTEST_SKIP() << "needs ~30,000 live goroutines; TSan allows 8128 fibers";
#endif
  ScopedDebugEnv env("stackguard=mprotect");
  constexpr int kN = 40000;
  goro::run(
      [&] {
        goro::test::Gate gate;
        for (int i = 0; i < kN; ++i)
          goro::go([&] { gate.wait(); });
        while (gate.parked() < kN)
          goro::yield();
        goro::RuntimeStats s = goro::stats();
        EXPECT_EQ(s.stacks_guard_install, 0u);
        EXPECT_GT(s.stacks_guard_mprotect, 0u);
        EXPECT_GT(s.stacks_canary_only, 0u) << "budget should run out before 40,000 stacks";
        EXPECT_EQ(s.map_count_budget_left, 0);
        EXPECT_LT(map_count(), 65530);
        gate.release_all();
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 2});
}

[[noreturn]] void spawn_until_stack_memory_runs_out() {
  long vm_pages = 0;
  {
    std::ifstream in("/proc/self/statm");
    in >> vm_pages;
  }
  const rlim_t cap = static_cast<rlim_t>(vm_pages) * 4096 + (700ul << 20);
  rlimit lim{cap, cap};
  if (setrlimit(RLIMIT_AS, &lim) != 0) std::_Exit(3);
  int spawned = 0;
  bool threw = false;
  std::string what;
  std::atomic<bool> ran_after{false};
  goro::run(
      [&] {
        goro::test::Gate gate;
        try {
          for (int i = 0; i < 1000000; ++i) {
            goro::go([&] { gate.wait(); });
            ++spawned;
          }
        } catch (const std::system_error& e) {
          threw = true;
          what = e.what();
        }
        while (gate.parked() < static_cast<std::size_t>(spawned))
          goro::yield();
        gate.release_all();
        while (goro::num_goroutines() > 1)
          goro::yield();
        goro::go([&] { ran_after.store(true); });
        while (!ran_after.load())
          goro::yield();
      },
      // 64 KiB stacks: a few thousand fit in the capped address space.
      {.maxprocs = 2, .stack_size = 64 * 1024});
  std::fprintf(stderr, "spawned %d, threw %d (%s), ran after %d\n", spawned, threw, what.c_str(),
               ran_after.load());
  std::_Exit(threw && spawned > 1000 && what.find("cannot map") != std::string::npos &&
                     ran_after.load()
                 ? 0
                 : 1);
}

// Stacks bind when a goroutine first runs (galloc.cpp "Late stack binding"),
// but running out of stack memory is still an error at goro::go, not a crash
// later on whichever M first runs the goroutine: spawn takes a stack credit
// and the pool maps the arenas behind it up front. Address space is capped
// with RLIMIT_AS in a child process, goroutines are spawned (and park) until
// goro::go throws; the runtime then keeps running and spawning.
TEST(StacksDeathTest, ExhaustedStackMemoryFailsAtTheSpawnSite) {
#if defined(GORO_ASAN) || defined(GORO_TSAN)
  GTEST_SKIP() << "the sanitizers reserve terabytes of shadow address space: RLIMIT_AS cannot "
                  "be used";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(spawn_until_stack_memory_runs_out(), ::testing::ExitedWithCode(0), "threw 1");
}

// Recurses in 256-byte frames until one reaches `stop`, then spins there,
// never entering goro, until `done` is set or `limit` passes: a hog that sits
// near the bottom of its stack.
__attribute__((noinline)) void spin_at(const char* stop, const std::atomic<bool>& done,
                                       std::chrono::steady_clock::time_point limit) {
  volatile char frame[256];
  for (auto& c : frame)
    c = 0x5a;
  if (const_cast<const char*>(&frame[0]) > stop) {
    spin_at(stop, done, limit);
  } else {
    while (!done.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < limit) {
    }
  }
  frame[1] = frame[0];
}

[[noreturn]] void hog_near_the_stack_bottom() {
  // The protocol under test; TSan builds leave it off unless asked (sysmon.cpp).
  ScopedDebugEnv env("asyncpreemptoff=0");
  constexpr std::size_t kStack = 64 * 1024;
  std::atomic<bool> handed_off{false};
  goro::run(
      [&] {
        const std::uint64_t before = goro::stats().handoffs;
        std::atomic<bool> started{false};
        goro::go(goro::SpawnOptions{.stack_size = kStack}, [&] {
          // The goroutine's first frame is a few hundred bytes below the top
          // of its stack: frames down to here - kStack + 2 KiB end within
          // about 2 KiB of the guard page, less than the kernel's signal frame
          // (AT_MINSIGSTKSZ: 3.4 KiB with AVX-512) plus the 128-byte red zone.
          const auto here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
          started.store(true);
          // NOLINTNEXTLINE(performance-no-int-to-ptr): an address below this frame
          spin_at(reinterpret_cast<const char*>(here - kStack + 2048), handed_off,
                  std::chrono::steady_clock::now() + std::chrono::seconds(20));
        });
        while (!started.load())
          goro::yield();
        // The hog's P was retaken once its thread ran the SIGURG handler.
        while (goro::stats().handoffs == before)
          goro::sleep_for(std::chrono::milliseconds(1));
        handed_off.store(true);
      },
      {.maxprocs = 2});
  std::fprintf(stderr, "survived the hog signal\n");
  std::_Exit(0);
}

// The hog signal (SIGURG, syscall.cpp "Hogs") must not be delivered on the
// goroutine's stack: a goroutine 2 KiB above its guard page would take the
// kernel's signal frame into the guard (SIGSEGV), or, with canary-only
// stacks, into its neighbour's stack. Every M has a signal stack
// (scheduler/signals.cpp "Signal stacks").
TEST(StacksDeathTest, HogSignalNearTheStackBottomRunsOnTheSignalStack) {
#if defined(GORO_ASAN)
  GTEST_SKIP() << "ASan moves instrumented frames to its fake stack, so spin_at() cannot reach "
                  "the stack bottom";
#endif
#if defined(GORO_TSAN)
  GTEST_SKIP() << "TSan defers asynchronous signals and runs the handler later from its own "
                  "frames on the interrupted (goroutine) stack, not the signal stack; the hog "
                  "signal is off by default in TSan builds (sysmon.cpp)";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(hog_near_the_stack_bottom(), ::testing::ExitedWithCode(0), "survived");
}

// An overflow is reported like Go's fatal error, from the M's signal stack
// (scheduler/signals.cpp "Fatal faults"): which goroutine, its stack size,
// where it was spawned; exit status 2.
TEST(StacksDeathTest, OverflowIsReportedAndExitsTwo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(goro::run(
                  [] {
                    goro::go([] { recurse(1000); });  // 1 MiB of frames
                    goro::test::await_the_fault();
                  },
                  {.maxprocs = 1}),
              ::testing::ExitedWithCode(2),
              "goroutine [0-9]+: stack overflow \\(512 KiB\\), spawned at .*stack_test.cpp:[0-9]+");
}

// The report is one write(2) (signals.cpp "Fatal faults"): a line another
// thread logs while the goroutine overflows lands before or after it, never
// inside it. CI once saw sysmon's "running without a scheduling point" (a
// deep recursion on a loaded machine earns it) split the report written in
// pieces, so the regex above missed. Here a thread logs without pause from
// just before the recursion; with the report in ten writes, its lines fell
// inside it.
void overflow_beside_a_logging_thread() {
  // Static: the detached logger may outlive this frame if the overflow
  // never came.
  static std::atomic<bool> go{false};
  static std::atomic<int> logged{0};
  std::thread logger([] {
    while (!go.load())
      std::this_thread::yield();
    for (int i = 0; i < 20000; ++i) {
      (void)!::write(STDERR_FILENO, "log\n", 4);
      logged.fetch_add(1, std::memory_order_relaxed);
    }
  });
  logger.detach();  // _exit(2) ends it
  goro::run(
      [] {
        goro::go([] {
          go.store(true);
          while (logged.load(std::memory_order_relaxed) < 100)  // the logger is writing
            std::this_thread::yield();
          recurse(1000);
        });
        goro::test::await_the_fault();
      },
      {.maxprocs = 1});
}

TEST(StacksDeathTest, OverflowReportIsWholeBesideAnotherThreadsLog) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // Ten children: one caught the report in pieces split about one time in
  // three.
  for (int run = 0; run < 10; ++run)
    EXPECT_EXIT(overflow_beside_a_logging_thread(), ::testing::ExitedWithCode(2),
                "goro: fatal error: goroutine [0-9]+: stack overflow \\(512 KiB\\), spawned at "
                "[^\n]*stack_test.cpp:[0-9]+\ngoro: give it a larger stack");
}

// The same for a stack given by SpawnOptions (its own mapping).
TEST(StacksDeathTest, OverflowOfASpawnOptionsStackIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(goro::run(
                  [] {
                    goro::go(goro::SpawnOptions{.stack_size = 128 * 1024}, [] { recurse(200); });
                    goro::test::await_the_fault();
                  },
                  {.maxprocs = 2}),
              ::testing::ExitedWithCode(2), "stack overflow \\(128 KiB\\)");
}

// A fault that is not an overflow is not the runtime's business: the default
// action happens where the fault was (the process dies of SIGSEGV and can
// dump core), with no overflow report (that exits 2), after a report of the
// goroutine it happened on and a backtrace.
TEST(StacksDeathTest, OtherFaultsKeepTheirDefaultAction) {
#if defined(GORO_ASAN) || defined(GORO_TSAN)
  GTEST_SKIP() << "the sanitizers' own SEGV handlers report the fault and exit";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(goro::run(
                  [] {
                    goro::go([] { *static_cast<volatile int*>(nullptr) = 1; });
                    goro::test::await_the_fault();
                  },
                  {.maxprocs = 1}),
              ::testing::KilledBySignal(SIGSEGV),
              "goro: fatal signal 11 \\(SIGSEGV\\) in goroutine [0-9]+, spawned at "
              ".*stack_test.cpp");
}

// glibc's heap checks ("free(): invalid pointer") and std::abort end in
// SIGABRT: the process still dies of it, and the log says on which goroutine.
TEST(StacksDeathTest, AbortIsReportedAndKeepsItsDefaultAction) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(goro::run(
                  [] {
                    goro::go([] { std::abort(); });
                    goro::test::await_the_fault();
                  },
                  {.maxprocs = 1}),
              ::testing::KilledBySignal(SIGABRT),
              "goro: fatal signal 6 \\(SIGABRT\\) in goroutine [0-9]+, spawned at "
              ".*stack_test.cpp");
}

TEST(StacksDeathTest, CanaryCatchesOverflowWithoutGuards) {
#if defined(GORO_ASAN)
  GTEST_SKIP() << "ASan moves instrumented frames to its fake stack, so dive() cannot reach "
                  "the stack bottom; covered by the release and tsan builds";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ScopedDebugEnv env("stackguard=canary");
        goro::run(
            [] {
              goro::go([] {
                // Frames 1 KiB past the bottom of the 64 KiB stack: into the
                // unguarded gap below it; the canary check at the switch fires.
                auto here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
                // NOLINTNEXTLINE(performance-no-int-to-ptr): an address below this frame
                dive(reinterpret_cast<const char*>(here - 65 * 1024));
                goro::yield();
              });
              goro::test::await_the_fault();
            },
            {.maxprocs = 1, .stack_size = 64 * 1024});
      },
      ::testing::ExitedWithCode(2), "goroutine [0-9]+: stack overflow \\(64 KiB\\)");
}

}  // namespace
