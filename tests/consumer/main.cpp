// A minimal outside program: spawns goroutines and joins them through a
// channel, then prints the sum. check.sh compares the output.
#include <goro/goro.hpp>

#include <cstdio>

int main() {
  return goro::run([] {
    goro::Chan<int> results(0);
    for (int i = 1; i <= 10; ++i)
      goro::go([results, i]() mutable { results.send(i * i); });
    int sum = 0;
    for (int i = 0; i < 10; ++i)
      sum += *results.recv();
    std::printf("consumer sum=%d\n", sum);
    return sum == 385 ? 0 : 1;
  });
}
