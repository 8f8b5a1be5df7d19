// An idle runtime burns no CPU: Ms park on futexes, sysmon deep-sleeps.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>

#include "goro/goro.hpp"

namespace {

double cpu_ms() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

TEST(Idle, ProcessCpuNearZeroWhileAllGoroutinesSleep) {
  goro::run(
      [] {
        // Some work first, so Ms exist and have parked.
        for (int i = 0; i < 1000; ++i)
          goro::go([] { goro::yield(); });
        while (goro::num_goroutines() > 1)
          goro::yield();
        // What the burst left goes back to the kernel once its Ps have idled
        // a second (sysmon's kIdleStackAge) and the stack pool's scavenger,
        // twice a second, has found the free stacks unused: a one-off release
        // of up to a thousand stacks. It took 20-30 ms on a VM where page
        // faults and madvise trap to the hypervisor, inside what used to be
        // the measured window. It is not CPU burnt while idle, so it is given
        // its own, generous bound, and the steady state after it is measured.
        const double settle_from = cpu_ms();
        goro::sleep_for(std::chrono::seconds(2));
        const double settle = cpu_ms() - settle_from;
        std::printf("[ info ] CPU over the 2 s the burst's memory goes back in: %.2f ms\n", settle);
        EXPECT_LT(settle, 500.0);
        double before = cpu_ms();
        goro::sleep_for(std::chrono::seconds(2));
        double used = cpu_ms() - before;
        std::printf("[ info ] CPU over 2 s idle: %.2f ms\n", used);
        EXPECT_LT(used, 20.0);
      },
      {.maxprocs = 4});
}

}  // namespace
