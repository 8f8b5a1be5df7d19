// netpoll: installation and fd registration, the portable glue between the
// scheduler's Poller interface (scheduler/poller.hpp), the poll descriptors
// (poll_desc.cpp) and the OS backend (epoll_poller.cpp).
//
// One poller per goro::run: netpoll_create makes the platform poller and
// publishes it for poll_open; netpoll_destroy runs after every M has exited.
// Sockets belong to the run that opened them: a descriptor registered with
// one run's poller gets no events in the next run.
#include <atomic>

#include "goro/result.hpp"
#include "netpoll/netpoll.hpp"
#include "netpoll/poll_desc.hpp"
#include "scheduler/debug.hpp"

namespace goro::detail {

std::atomic<std::uint64_t> g_netpoll_epoch{0};

namespace {

// The running poller; written by netpoll_create/destroy (single-threaded,
// before the first goroutine and after the last M), read by poll_open.
std::atomic<NetPoller*> g_poller{nullptr};

}  // namespace

Poller* netpoll_create() {
  g_netpoll_epoch.fetch_add(1, std::memory_order_relaxed);
  poll_cache_new_run();
  NetPoller* p = make_platform_poller();
  g_poller.store(p, std::memory_order_release);
  return p;
}

void netpoll_destroy(Poller* p) {
  g_poller.store(nullptr, std::memory_order_release);
  delete p;
}

PollDesc* poll_open(int fd, std::error_code& ec) {
  NetPoller* poller = g_poller.load(std::memory_order_acquire);
  if (poller == nullptr) {
    ec = std::make_error_code(std::errc::operation_not_permitted);  // no goro::run
    return nullptr;
  }
  PollDesc* pd = poll_cache_alloc();
  const std::uint64_t tag = poll_desc_init(pd, fd);
  ec = poller->add(fd, tag);
  if (ec) {
    poll_evict(pd);
    poll_cache_free(pd);
    return nullptr;
  }
  return pd;
}

void poll_close(PollDesc* pd) {
  GORO_CHECK(pd->info.load() & kInfoClosing, "netpoll: close without evict");
  GORO_CHECK(pd->rg.load() <= kSlotWait && pd->wg.load() <= kSlotWait,
             "netpoll: close with a goroutine blocked on the descriptor");
  if (NetPoller* poller = g_poller.load(std::memory_order_acquire)) poller->remove(pd->fd);
  poll_cache_free(pd);
}

}  // namespace goro::detail
