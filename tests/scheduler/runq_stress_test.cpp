// The local run queue under concurrency: the owner pushes and pops while
// three thieves steal; every G must be seen exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "scheduler/g.hpp"
#include "scheduler/runq.hpp"

namespace goro::detail {
namespace {

TEST(RunQueueStress, OwnerAndThreeThievesSeeEachGExactlyOnce) {
  constexpr int kGs = 200000;
  std::vector<G> gs(kGs);
  std::vector<std::atomic<int>> seen(kGs);
  for (int i = 0; i < kGs; ++i)
    gs[i].id = static_cast<std::uint64_t>(i);
  RunQueue owner_q;
  std::atomic<bool> done{false};
  std::atomic<long> taken{0};
  GQueue spilled;

  auto record = [&](G* g) {
    seen[g->id].fetch_add(1, std::memory_order_relaxed);
    taken.fetch_add(1, std::memory_order_relaxed);
  };

  std::vector<std::thread> thieves;
  for (int t = 0; t < 3; ++t) {
    thieves.emplace_back([&, t] {
      RunQueue mine;
      bool inherit;
      while (!done.load(std::memory_order_acquire)) {
        G* g = mine.steal_from(owner_q, t == 0, true);
        if (g == nullptr) continue;
        record(g);
        while (G* more = mine.get(&inherit))
          record(more);
      }
    });
  }
  bool inherit;
  for (int i = 0; i < kGs; ++i) {
    RunQueue::Spill spill;
    if (owner_q.put(&gs[i], i % 7 == 0, &spill)) {
      for (std::uint32_t k = 0; k < spill.n; ++k)
        record(spill.g[k]);
    }
    if (i % 3 == 0) {
      if (G* g = owner_q.get(&inherit)) record(g);
    }
  }
  while (G* g = owner_q.get(&inherit))
    record(g);
  while (taken.load() < kGs)
    std::this_thread::yield();
  done.store(true, std::memory_order_release);
  for (auto& t : thieves)
    t.join();
  for (int i = 0; i < kGs; ++i)
    ASSERT_EQ(seen[i].load(), 1) << "G " << i;
}

}  // namespace
}  // namespace goro::detail
