// The Linux backend of the netpoller (Go's netpoll_epoll.go): the only file
// that says epoll_.
//
// ## Registration
// Each fd is added once for EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET. Edge
// triggering means no re-arming syscalls on the I/O path: the kernel reports
// a transition once, and the wait slot of the PollDesc remembers it until a
// goroutine consumes it. The event cookie is the PollDesc pointer tagged with
// 16 bits of its incarnation, so an event collected for an fd that has since
// been closed and whose descriptor was reused is dropped (poll_desc.cpp).
//
// ## Polling
// poll(0) from find_runnable and sysmon may run on several Ms at once
// (epoll_wait is thread-safe, and the slot CASes decide who readies a G);
// poll(timeout) is done by the one M holding the scheduler's poll token. Up to
// kMaxEvents events per call; the readied Gs go to the caller's queue in one
// batch and the waiter count drops once per batch.
//
// ## Breaking a blocking poll
// An eventfd, registered level-triggered, is the doorbell. wake() rings it at
// most once per sleep: a CAS on wake_pending_ elects one writer, and only the
// blocking poller (timeout != 0) drains the eventfd and clears the flag, as Go's
// netpollBreak/netpollWakeSig. A non-blocking poll that sees the doorbell
// leaves it for the sleeper it was meant for.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "netpoll/netpoll.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/runq.hpp"

namespace goro::detail {
namespace {

// 128, as Go: enough to batch a busy server's wake-ups, small on the stack.
constexpr int kMaxEvents = 128;
// The doorbell's cookie: no PollDesc lives at address 0.
constexpr std::uint64_t kWakeTag = 0;

class EpollPoller final : public NetPoller {
 public:
  EpollPoller() {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) fatal("netpoll: epoll_create1 failed");
    wakefd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wakefd_ < 0) fatal("netpoll: eventfd failed");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeTag;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev) != 0) fatal("netpoll: cannot add eventfd");
  }
  ~EpollPoller() override {
    close(wakefd_);
    close(epfd_);
  }

  std::error_code add(int fd, std::uint64_t tag) override {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = tag;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) return {errno, std::system_category()};
    return {};
  }

  void remove(int fd) override {
    epoll_event ev{};  // non-null for kernels before 2.6.9
    epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, &ev);
  }

  void poll(std::int64_t timeout_ns, GQueue& out) override {
    epoll_event events[kMaxEvents];
    const int waitms = to_millis(timeout_ns);
    int n;
    for (;;) {
      n = epoll_wait(epfd_, events, kMaxEvents, waitms);
      if (n >= 0) break;
      if (errno != EINTR) fatal("netpoll: epoll_wait failed");
      if (waitms > 0) return;  // the caller recomputes the wait from its timers
    }
    std::int64_t readied = 0;
    // Two passes (poll_desc.cpp "Warming a batch"): the descriptors' lines
    // are all requested before the first is read.
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 != kWakeTag) poll_prefetch_tag(events[i].data.u64);
    }
    for (int i = 0; i < n; ++i) {
      const epoll_event& ev = events[i];
      if (ev.data.u64 == kWakeTag) {
        if (timeout_ns != 0) drain_doorbell();
        continue;
      }
      const std::uint32_t e = ev.events;
      const bool readable = (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
      const bool writable = (e & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
      const bool hangup = (e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
      readied += poll_ready_from_event(ev.data.u64, readable, writable, hangup, out);
    }
    poll_waiters_sub(readied);
  }

  void wake() override {
    bool expected = false;
    if (!wake_pending_.compare_exchange_strong(expected, true)) return;  // already rung
    const std::uint64_t one = 1;
    for (;;) {
      if (write(wakefd_, &one, sizeof one) == sizeof one) return;
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;  // counter full: it is signalled anyway
      fatal("netpoll: eventfd write failed");
    }
  }

  bool has_waiters() const override { return poll_has_waiters(); }

 private:
  // Go's rounding: 0 stays 0 (non-blocking), below 1 ms waits 1 ms, and
  // anything else rounds up so the sleeper does not wake just before its timer.
  static int to_millis(std::int64_t ns) {
    if (ns < 0) return -1;
    if (ns == 0) return 0;
    constexpr std::int64_t kMaxMs = 1'000'000'000;
    const std::int64_t ms = (ns + 999'999) / 1'000'000;
    return static_cast<int>(ms < kMaxMs ? ms : kMaxMs);
  }

  void drain_doorbell() {
    std::uint64_t count;
    while (read(wakefd_, &count, sizeof count) < 0 && errno == EINTR) {
    }
    // release pairs with wake()'s CAS: a wake after this point rings again.
    wake_pending_.store(false, std::memory_order_release);
  }

  int epfd_ = -1;
  int wakefd_ = -1;
  std::atomic<bool> wake_pending_{false};
};

}  // namespace

NetPoller* make_platform_poller() {
  return new EpollPoller();
}

}  // namespace goro::detail
