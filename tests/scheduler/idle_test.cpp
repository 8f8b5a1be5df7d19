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
        goro::sleep_for(std::chrono::milliseconds(100));
        double before = cpu_ms();
        goro::sleep_for(std::chrono::seconds(2));
        double used = cpu_ms() - before;
        std::printf("[ info ] CPU over 2 s idle: %.2f ms\n", used);
        EXPECT_LT(used, 20.0);
      },
      {.maxprocs = 4});
}

}  // namespace
