// Two goroutines on different Ps increment a plain int with no
// synchronisation. ThreadSanitizer must report it (exit 66); ctest expects
// this program to FAIL. If it ever passes, the tsan build is not real.
#include <goro/goro.hpp>

#include <atomic>
#include <cstdio>

int counter = 0;  // deliberately unsynchronised

int main() {
  goro::run(
      [] {
        std::atomic<int> started{0}, done{0};
        for (int k = 0; k < 2; ++k) {
          goro::go([&] {
            // Wait until both run at once, on two Ms: fibers on one thread
            // are ordered by their switches and would not race.
            started.fetch_add(1);
            while (started.load() < 2) {
            }
            // The compiler barrier keeps one load and one store per
            // iteration (hoisted to a single add, the two goroutines' lone
            // accesses could miss each other in TSan's shadow: 1 run in 20).
            for (int i = 0; i < 100000; ++i) {
              ++counter;
              asm volatile("" ::: "memory");
            }
            done.fetch_add(1);
          });
        }
        while (done.load() < 2)
          goro::yield();
      },
      {.maxprocs = 2});
  std::printf("counter=%d\n", counter);
  return 0;
}
