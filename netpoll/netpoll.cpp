// Poller installation. Until the epoll backend lands, the runtime uses a
// fd-less poller: an idle M sleeps on a futex until the earliest timer, and
// wake() breaks the sleep. It has no I/O waiters by construction.
#include <algorithm>

#include "scheduler/futex.hpp"
#include "scheduler/poller.hpp"

namespace goro::detail {
namespace {

class TimerOnlyPoller final : public Poller {
 public:
  void poll(std::int64_t timeout_ns, GQueue&) override {
    if (timeout_ns == 0) return;
    note_.sleep(timeout_ns < 0 ? -1 : timeout_ns);
  }
  void wake() override { note_.wake(); }
  bool has_waiters() const override { return false; }

 private:
  Note note_;
};

}  // namespace

Poller* netpoll_create() {
  return new TimerOnlyPoller();
}
void netpoll_destroy(Poller* p) {
  delete p;
}

}  // namespace goro::detail
