// Mutex, RWMutex, WaitGroup, Cond, Once, Semaphore.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <vector>

#include "tests/sync/sync_test_util.hpp"

namespace {

using goro_test::run;
using namespace std::chrono_literals;

TEST(Mutex, CounterUnderContention) {
  run([] {
    constexpr int kGoroutines = 64, kIncrements = 10000;
    goro::Mutex mu;
    long counter = 0;
    goro::WaitGroup wg;
    for (int g = 0; g < kGoroutines; ++g) {
      wg.go([&] {
        for (int i = 0; i < kIncrements; ++i) {
          std::lock_guard<goro::Mutex> lock(mu);
          ++counter;
        }
      });
    }
    wg.wait();
    EXPECT_EQ(counter, long{kGoroutines} * kIncrements);
  });
}

TEST(Mutex, TryLock) {
  run([] {
    goro::Mutex mu;
    EXPECT_TRUE(mu.try_lock());
    EXPECT_FALSE(mu.try_lock());
    mu.unlock();
    std::unique_lock<goro::Mutex> lock(mu, std::try_to_lock);
    EXPECT_TRUE(lock.owns_lock());
  });
}

TEST(Mutex, UnlockOfUnlockedThrows) {
  run([] {
    goro::Mutex mu;
    EXPECT_THROW(mu.unlock(), std::logic_error);
  });
}

// A goroutine that wants the lock gets it within a bounded time even while
// others hammer it (starvation mode kicks in after 1 ms of waiting).
TEST(Mutex, NoStarvation) {
  run([] {
    goro::Mutex mu;
    std::atomic<bool> stop{false};
    goro::WaitGroup wg;
    for (int g = 0; g < 4; ++g) {
      wg.go([&] {
        while (!stop.load(std::memory_order_relaxed)) {
          mu.lock();
          auto until = std::chrono::steady_clock::now() + 50us;
          while (std::chrono::steady_clock::now() < until) {
          }
          mu.unlock();
          goro::yield();
        }
      });
    }
    goro::sleep_for(5ms);
    std::chrono::nanoseconds worst{0};
    for (int i = 0; i < 50; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      mu.lock();
      worst = std::max(worst, std::chrono::steady_clock::now() - t0);
      mu.unlock();
      goro::sleep_for(100us);
    }
    stop = true;
    wg.wait();
    EXPECT_LT(worst, 200ms) << "a waiter starved";  // generous: sanitizers, oversubscribed CI
  });
}

TEST(RWMutex, ReadersShareWritersExclude) {
  run([] {
    goro::RWMutex rw;
    std::atomic<int> readers{0}, max_readers{0};
    int value = 0;
    bool writer_saw_reader = false;
    goro::WaitGroup wg;
    for (int g = 0; g < 8; ++g) {
      wg.go([&] {
        for (int i = 0; i < 200; ++i) {
          std::shared_lock<goro::RWMutex> lock(rw);
          int now = ++readers;
          int seen = max_readers.load();
          while (now > seen && !max_readers.compare_exchange_weak(seen, now)) {
          }
          goro::yield();
          --readers;
        }
      });
    }
    for (int g = 0; g < 2; ++g) {
      wg.go([&] {
        for (int i = 0; i < 200; ++i) {
          std::lock_guard<goro::RWMutex> lock(rw);
          if (readers.load() != 0) writer_saw_reader = true;
          ++value;
        }
      });
    }
    wg.wait();
    EXPECT_EQ(value, 400);
    EXPECT_FALSE(writer_saw_reader);
    EXPECT_GE(max_readers.load(), 1);
  });
}

TEST(WaitGroup, WaitsForAll) {
  run([] {
    goro::WaitGroup wg;
    std::atomic<int> done{0};
    for (int i = 0; i < 100; ++i) {
      wg.add(1);
      goro::go([&] {
        goro::sleep_for(1ms);
        ++done;
        wg.done();
      });
    }
    wg.wait();
    EXPECT_EQ(done.load(), 100);
    wg.wait();  // zero: returns at once
  });
}

TEST(WaitGroup, NegativeCounterIsAnError) {
  run([] {
    goro::WaitGroup wg;
    EXPECT_THROW(wg.done(), std::logic_error);
  });
}

TEST(WaitGroup, ManyWaiters) {
  run([] {
    goro::WaitGroup wg, waiters;
    wg.add(1);
    std::atomic<int> woke{0};
    for (int i = 0; i < 10; ++i) {
      waiters.go([&] {
        wg.wait();
        ++woke;
      });
    }
    goro::sleep_for(5ms);
    EXPECT_EQ(woke.load(), 0);
    wg.done();
    waiters.wait();
    EXPECT_EQ(woke.load(), 10);
  });
}

TEST(Cond, SignalAndBroadcast) {
  run([] {
    goro::Mutex mu;
    goro::Cond cond;
    int ready = 0;
    int woken = 0;
    goro::WaitGroup wg;
    for (int i = 0; i < 5; ++i) {
      wg.go([&] {
        std::unique_lock<goro::Mutex> lock(mu);
        cond.wait(lock, [&] { return ready > 0; });
        --ready;
        ++woken;
      });
    }
    goro::sleep_for(2ms);
    {
      std::lock_guard<goro::Mutex> lock(mu);
      ready = 1;
    }
    cond.signal();
    // The signalled waiter runs when an M gets to it, later on a busy machine:
    // wait for it, up to 5 s (a lost signal still fails).
    const auto limit = std::chrono::steady_clock::now() + 5s;
    for (bool seen = false; !seen && std::chrono::steady_clock::now() < limit;) {
      {
        std::lock_guard<goro::Mutex> lock(mu);
        seen = woken >= 1;
      }
      if (!seen) goro::sleep_for(1ms);
    }
    goro::sleep_for(5ms);
    {
      std::lock_guard<goro::Mutex> lock(mu);
      EXPECT_EQ(woken, 1);
      ready = 4;
    }
    cond.broadcast();
    wg.wait();
    EXPECT_EQ(woken, 5);
  });
}

TEST(Once, RunsOnceAndWaiters) {
  run([] {
    goro::Once once;
    std::atomic<int> calls{0};
    goro::WaitGroup wg;
    for (int i = 0; i < 20; ++i) {
      wg.go([&] {
        once.call([&] {
          goro::sleep_for(2ms);  // others park meanwhile
          ++calls;
        });
        EXPECT_TRUE(once.is_done());
      });
    }
    wg.wait();
    EXPECT_EQ(calls.load(), 1);
  });
}

TEST(Once, ThrowingFunctionIsRetried) {
  run([] {
    goro::Once once;
    EXPECT_THROW(once.call([] { throw std::runtime_error("no"); }), std::runtime_error);
    int calls = 0;
    once.call([&] { ++calls; });
    once.call([&] { ++calls; });
    EXPECT_EQ(calls, 1);
  });
}

TEST(Semaphore, BoundsConcurrency) {
  run([] {
    goro::Semaphore sem(3);
    std::atomic<int> inside{0}, max_inside{0};
    goro::WaitGroup wg;
    for (int i = 0; i < 30; ++i) {
      wg.go([&] {
        sem.acquire();
        int now = ++inside;
        int seen = max_inside.load();
        while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
        }
        goro::sleep_for(200us);
        --inside;
        sem.release();
      });
    }
    wg.wait();
    EXPECT_LE(max_inside.load(), 3);
    EXPECT_GE(max_inside.load(), 1);
    EXPECT_TRUE(sem.try_acquire());
  });
}

}  // namespace
