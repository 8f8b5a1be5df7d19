// goro::WaitGroup (Go's sync/waitgroup.go).
//
// One 64-bit word: the counter in the high half, the number of parked
// waiters in the low half, so add() can tell in one atomic step whether it
// brought the counter to zero with waiters to wake. When it did, nobody may
// touch the word until the waiters are released (Go's rule: add must not race
// with a wait that is returning), so it resets the word to 0 and releases the
// semaphore once per waiter.
#include <stdexcept>

#include "goro/sync.hpp"

namespace goro {

void WaitGroup::add(std::int32_t delta) {
  const std::uint64_t d = static_cast<std::uint64_t>(static_cast<std::int64_t>(delta)) << 32;
  // acq_rel: done() releases the finished goroutine's work to wait()'s acquire.
  const std::uint64_t state = state_.fetch_add(d, std::memory_order_acq_rel) + d;
  const auto v = static_cast<std::int32_t>(state >> 32);
  auto w = static_cast<std::uint32_t>(state);
  if (v < 0) throw std::logic_error("goro::WaitGroup: negative counter");
  if (w != 0 && delta > 0 && v == delta) {
    throw std::logic_error("goro::WaitGroup misuse: add called concurrently with wait");
  }
  if (v > 0 || w == 0) return;
  // Counter reached 0 with waiters: they are parked (or about to park) on
  // sema_; nothing else may change the word now.
  if (state_.load(std::memory_order_relaxed) != state) {
    throw std::logic_error("goro::WaitGroup misuse: add called concurrently with wait");
  }
  state_.store(0, std::memory_order_relaxed);
  for (; w != 0; --w)
    sema_.release();
}

void WaitGroup::wait() {
  std::uint64_t state = state_.load(std::memory_order_acquire);
  for (;;) {
    if ((state >> 32) == 0) return;
    if (state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      sema_.acquire(detail::WaitReason::kWaitGroup);
      if (state_.load(std::memory_order_relaxed) != 0) {
        throw std::logic_error("goro::WaitGroup is reused before the previous wait has returned");
      }
      return;
    }
  }
}

}  // namespace goro
