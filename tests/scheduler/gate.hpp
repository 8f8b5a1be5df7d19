// Test helper: a gate goroutines park at until release_all(), built directly
// on the runtime's park/ready doorway (no dependency on goro's sync layer).
#pragma once

#include <mutex>
#include <vector>

#include "goro/detail/park.hpp"

namespace goro::test {

class Gate {
 public:
  void wait() {
    detail::park(
        detail::WaitReason::kForever,
        [](detail::G* g, void* self) {
          auto* gate = static_cast<Gate*>(self);
          std::lock_guard<std::mutex> lock(gate->mu_);
          if (gate->open_) return false;  // released meanwhile: do not sleep
          gate->waiters_.push_back(g);
          return true;
        },
        this);
  }
  // Readies every parked goroutine and keeps the gate open.
  void release_all() {
    std::vector<detail::G*> ws;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
      ws.swap(waiters_);
    }
    for (detail::G* g : ws)
      detail::ready(g);
  }
  std::size_t parked() {
    std::lock_guard<std::mutex> lock(mu_);
    return waiters_.size();
  }

 private:
  std::mutex mu_;
  bool open_ = false;
  std::vector<detail::G*> waiters_;
};

}  // namespace goro::test
