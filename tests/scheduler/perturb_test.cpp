// The asan and debug presets' scheduling perturbation (GORO_SCHED_PERTURB,
// sched.cpp perturb_migrate) really moves goroutines between threads, even
// at maxprocs 1: the rest of the suite relies on it to shake out code that
// caches a thread-local or holds a thread-owned lock across a switch.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <set>

#include "goro/goro.hpp"

namespace {

TEST(Perturb, GoroutinesMigrateBetweenThreadsAtOneProc) {
#if !defined(GORO_SCHED_PERTURB)
  GTEST_SKIP() << "only the asan and debug presets perturb scheduling";
#else
  std::set<long> tids;
  goro::run(
      [&] {
        for (int i = 0; i < 2000; ++i) {
          tids.insert(::syscall(SYS_gettid));  // a real syscall: never cached
          goro::yield();
        }
      },
      {.maxprocs = 1});
  EXPECT_GE(tids.size(), 2u) << "2000 yields at maxprocs 1 never changed thread";
#endif
}

}  // namespace
