// SignalWatch: the self-pipe trick. The handler does one write(2) of the
// signal number (async-signal-safe, works on whichever thread the kernel
// picks: under goro::run, the runtime's signal thread, the only one that
// does not block SIGTERM and SIGINT; scheduler/signals.cpp); the watch
// thread blocks in read(2) on the other end and calls the callback outside
// signal context. A byte 0 written by the destructor ends the
// thread. One watch at a time per process (the pipe is a process global the
// handler can reach).
#include "framework/http/server/signals.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

namespace goro::http::detail {

namespace {

std::atomic<int> g_pipe_write{-1};

extern "C" void on_stop_signal(int signo) {
  const int saved = errno;
  const int fd = g_pipe_write.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const unsigned char b = static_cast<unsigned char>(signo);
    ssize_t r = ::write(fd, &b, 1);
    (void)r;
  }
  errno = saved;
}

}  // namespace

struct SignalWatch::Impl {
  int fds[2] = {-1, -1};
  struct sigaction old_term {};
  struct sigaction old_int {};
  struct sigaction old_hup {};
  bool hangup = false;
  std::thread thread;
};

SignalWatch::SignalWatch(std::function<void(int)> on_signal, bool hangup)
    : impl_(std::make_unique<Impl>()) {
  if (::pipe2(impl_->fds, O_CLOEXEC) != 0) return;
  int expected = -1;
  if (!g_pipe_write.compare_exchange_strong(expected, impl_->fds[1])) {
    ::close(impl_->fds[0]);
    ::close(impl_->fds[1]);
    impl_->fds[0] = impl_->fds[1] = -1;
    return;  // another server already watches the signals
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, &impl_->old_term);
  sigaction(SIGINT, &sa, &impl_->old_int);
  impl_->hangup = hangup;
  if (hangup) sigaction(SIGHUP, &sa, &impl_->old_hup);
  const int read_fd = impl_->fds[0];
  impl_->thread = std::thread([read_fd, cb = std::move(on_signal)] {
    for (;;) {
      unsigned char b = 0;
      const ssize_t n = ::read(read_fd, &b, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || b == 0) return;
      cb(b);
    }
  });
  ok_ = true;
}

SignalWatch::~SignalWatch() {
  if (!ok_) return;
  sigaction(SIGTERM, &impl_->old_term, nullptr);
  sigaction(SIGINT, &impl_->old_int, nullptr);
  if (impl_->hangup) sigaction(SIGHUP, &impl_->old_hup, nullptr);
  g_pipe_write.store(-1);
  const unsigned char stop = 0;
  ssize_t r = ::write(impl_->fds[1], &stop, 1);
  (void)r;
  impl_->thread.join();
  ::close(impl_->fds[0]);
  ::close(impl_->fds[1]);
}

}  // namespace goro::http::detail
