// The scheduler's window on the network poller (Go's netpoll.go contract).
//
// The scheduler owns this interface; netpoll/ implements it for epoll and
// the runtime installs that implementation at startup (netpoll_create). The
// scheduler calls poll(0) from find_runnable, lets one idle M block in
// poll(timeout) until the earliest timer, and calls wake() when new work or an
// earlier timer appears while that M sleeps.
#pragma once

#include <cstdint>

namespace goro::detail {

struct GQueue;

class Poller {
 public:
  virtual ~Poller() = default;
  // Waits up to timeout_ns (< 0: forever, 0: not at all) and appends the
  // goroutines made ready to `out`. May return early (wake(), EINTR).
  virtual void poll(std::int64_t timeout_ns, GQueue& out) = 0;
  // Interrupts a blocking poll() from any thread; cheap if none is blocked.
  virtual void wake() = 0;
  // True while some goroutine is parked waiting for I/O.
  virtual bool has_waiters() const = 0;
};

// Defined by netpoll/: the poller this runtime uses. Called once per run.
Poller* netpoll_create();
void netpoll_destroy(Poller* p);

}  // namespace goro::detail
