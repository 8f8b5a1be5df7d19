// Many-goroutine stress: no lost or duplicated values under 8 producers x 8
// consumers, mixed select traffic, a contended mutex, WaitGroup churn.
#include <gtest/gtest.h>

#include <vector>

#include "tests/sync/sync_test_util.hpp"

namespace {

using goro_test::run;

void producers_consumers(std::size_t cap) {
  constexpr int kProducers = 8, kConsumers = 8, kPer = 20000;
  goro::Chan<int> ch(cap);
  std::vector<std::atomic<int>> seen(kProducers * kPer);
  goro::WaitGroup producers, consumers;
  for (int p = 0; p < kProducers; ++p) {
    producers.go([&, p] {
      for (int i = 0; i < kPer; ++i)
        ASSERT_TRUE(ch.send(p * kPer + i));
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    consumers.go([&] {
      for (int v : ch)
        seen[v].fetch_add(1, std::memory_order_relaxed);
    });
  }
  producers.wait();
  ch.close();
  consumers.wait();
  for (int i = 0; i < kProducers * kPer; ++i)
    ASSERT_EQ(seen[i].load(), 1) << "value " << i;
}

TEST(SyncStress, ProducersConsumersUnbuffered) {
  run([] { producers_consumers(0); });
}

TEST(SyncStress, ProducersConsumersBuffered) {
  run([] { producers_consumers(64); });
}

TEST(SyncStress, SelectFanInFanOut) {
  run([] {
    constexpr int kSenders = 8, kPer = 5000;
    goro::Chan<int> a, b(8), quit;
    std::atomic<long> received{0};
    goro::WaitGroup senders, receivers;
    for (int s = 0; s < kSenders; ++s) {
      senders.go([&] {
        for (int i = 0; i < kPer; ++i)
          goro::select(goro::send(a, 1), goro::send(b, 1));
      });
    }
    for (int r = 0; r < 8; ++r) {
      receivers.go([&] {
        for (bool done = false; !done;) {
          goro::select(goro::recv(a, [&](std::optional<int> v) { received += v.value_or(0); }),
                       goro::recv(b, [&](std::optional<int> v) { received += v.value_or(0); }),
                       goro::recv(quit, [&] { done = true; }),
                       goro::after_case(std::chrono::milliseconds(50)));
        }
      });
    }
    senders.wait();
    while (received.load() < long{kSenders} * kPer || b.len() > 0)
      goro::sleep_for(std::chrono::milliseconds(1));
    quit.close();
    receivers.wait();
    EXPECT_EQ(received.load(), long{kSenders} * kPer);
  });
}

TEST(SyncStress, MutexAndWaitGroupChurn) {
  run([] {
    goro::Mutex mu;
    long counter = 0;
    for (int round = 0; round < 20; ++round) {
      goro::WaitGroup wg;
      for (int g = 0; g < 100; ++g) {
        wg.go([&] {
          for (int i = 0; i < 100; ++i) {
            mu.lock();
            ++counter;
            mu.unlock();
          }
        });
      }
      wg.wait();
    }
    EXPECT_EQ(counter, 20L * 100 * 100);
  });
}

TEST(SyncStress, PingPongPairs) {
  run([] {
    constexpr int kPairs = 16;
    static constexpr int kRounds = 5000;
    goro::WaitGroup wg;
    for (int p = 0; p < kPairs; ++p) {
      goro::Chan<int> ping, pong;
      wg.go([ping, pong]() mutable {
        for (std::optional<int> v; (v = ping.recv());)
          pong.send(*v + 1);
      });
      wg.go([ping, pong]() mutable {
        int v = 0;
        for (int i = 0; i < kRounds; ++i) {
          ping.send(v);
          v = pong.recv().value();
        }
        EXPECT_EQ(v, kRounds);
        ping.close();
      });
    }
    wg.wait();
  });
}

}  // namespace
