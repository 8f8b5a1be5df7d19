// The stock middleware and LogSink (goro/http/middleware.hpp).
//
// LogSink: handlers must never wait for a disk or a pipe, and neither may
// the M they run on. Lines go into a bounded in-memory queue; a writer
// goroutine takes the whole queue at once and writes it with one write(2) per
// batch inside goro::blocking, so a slow descriptor costs a parked thread in a
// syscall (the P moves on after a sysmon tick), never a P.
//
// # The writer's lifecycle
// No goroutine lives while there is nothing to write: the push that finds no
// writer running spawns one; the writer loops while the queue has lines and
// ends when it finds it empty. `writing` (under mu) says a writer is between
// its spawn and the moment it saw the empty queue, so there is at most one
// writer, there is one whenever lines are queued, and batches go out in push
// order. Under load a writer keeps looping and spawns are rare; when idle, a
// push costs one spawn (a recycled G, no allocation) per batch. mu is a
// std::mutex held for a push or a swap, never across a park or I/O.
//
// # Threads that are not goroutines
// A push from a plain thread (no goroutine to spawn from) writes the queue
// itself: a plain thread may block, there is no P to stall.
//
// # Rejected
// - A dedicated std::thread (the first version): a thread per sink for the
//   process's life, a condition variable per batch, and a second way of
//   blocking next to the runtime's own.
// - A long-lived writer goroutine parked on a channel: its life must be tied
//   to goro::run's, and a sink destroyed outside a goroutine could not stop it.
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <random>

#include "framework/http/server/exchange.hpp"
#include "framework/http/server/http_metrics.hpp"
#include "goro/detail/park.hpp"
#include "goro/detail/thread_lock.hpp"
#include "goro/http/middleware.hpp"
#include "goro/runtime.hpp"
#include "goro/sync.hpp"

namespace goro::http {

struct LogSink::Impl {
  int fd;
  std::size_t max_queued;
  std::mutex mu;
  std::vector<std::string> queue;  // guarded by mu
  bool writing = false;            // guarded by mu: a writer is running (see the essay)
  std::atomic<std::uint64_t> dropped{0};
  // add(1) by the push that spawns a writer, done() by the writer when it
  // ends; the destructor waits on it when it runs on a goroutine.
  WaitGroup writers;

  // Writes batches until the queue is empty, then clears `writing`.
  void drain() {
    std::vector<std::string> batch;
    std::string buf;
    for (;;) {
      {
        goro::detail::ThreadLockGuard lock(mu);
        if (queue.empty()) {
          writing = false;
          return;
        }
        batch.swap(queue);
      }
      buf.clear();
      for (const std::string& line : batch)
        buf.append(line);
      batch.clear();
      goro::blocking([&] { write_all(buf); });
    }
  }

  void write_all(std::string_view buf) const {
    std::size_t off = 0;
    while (off < buf.size()) {
      const ssize_t n = ::write(fd, buf.data() + off, buf.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // a log that cannot be written is dropped, not retried
      off += static_cast<std::size_t>(n);
    }
  }
};

LogSink::LogSink(int fd, std::size_t max_queued) : impl_(std::make_shared<Impl>()) {
  impl_->fd = fd;
  impl_->max_queued = max_queued;
}

LogSink::~LogSink() {
  if (goro::detail::current_g() != nullptr) {
    impl_->writers.wait();  // every queued line has been written
    return;
  }
  // A plain thread (after goro::run, say): write what is left here. A writer
  // goroutine still running keeps impl_ alive through its own reference.
  bool write_here = false;
  {
    goro::detail::ThreadLockGuard lock(impl_->mu);
    if (!impl_->writing) impl_->writing = write_here = true;
  }
  if (write_here) impl_->drain();
}

void LogSink::push(std::string line) {
  line.push_back('\n');
  bool start_writer = false;
  {
    goro::detail::ThreadLockGuard lock(impl_->mu);
    if (impl_->queue.size() >= impl_->max_queued) {
      impl_->dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    impl_->queue.push_back(std::move(line));
    if (!impl_->writing) impl_->writing = start_writer = true;
  }
  if (!start_writer) return;
  if (goro::detail::current_g() == nullptr) {
    impl_->drain();
    return;
  }
  impl_->writers.add(1);
  try {
    goro::go([impl = impl_] {
      impl->drain();
      impl->writers.done();  // `impl` (captured) keeps the WaitGroup alive
    });
  } catch (...) {
    // No stack for a writer: write this batch here, through the handoff.
    impl_->drain();
    impl_->writers.done();
  }
}

std::uint64_t LogSink::dropped() const {
  return impl_->dropped.load(std::memory_order_relaxed);
}

namespace middleware {

namespace {

std::string clf_time() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:%d/%b/%Y:%H:%M:%S} +0000", tm);
}

bool valid_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

}  // namespace

Middleware access_log(std::shared_ptr<LogSink> sink) {
  return [sink](Handler next) -> Handler {
    return [sink, next = std::move(next)](Request& req, ResponseWriter& w) {
      const auto start = std::chrono::steady_clock::now();
      struct Logger {
        LogSink& sink;
        Request& req;
        ResponseWriter& w;
        std::chrono::steady_clock::time_point start;
        // Logs in a destructor so a request whose handler throws is logged too.
        ~Logger() {
          const double secs =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          sink.push(fmt::format("{} - - [{}] \"{} {} {}\" {} {} {:.6f} {}", req.remote_addr(),
                                clf_time(), req.method(), req.target(), req.proto(),
                                w.status() == 0 ? 500 : w.status(), w.bytes_written(), secs,
                                req.id().empty() ? "-" : req.id()));
        }
      } logger{*sink, req, w, start};
      next(req, w);
    };
  };
}

Middleware recover(std::shared_ptr<LogSink> sink) {
  return [sink](Handler next) -> Handler {
    return [sink, next = std::move(next)](Request& req, ResponseWriter& w) {
      std::string what;
      try {
        next(req, w);
        return;
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
        what = "unknown exception";
      }
      std::string line = fmt::format("http: panic serving {} {} {}: {}", req.remote_addr(),
                                     req.method(), req.target(), what);
      if (sink) {
        sink->push(std::move(line));
      } else {
        std::fprintf(stderr, "%s\n", line.c_str());
      }
      detail::answer_panic(*detail::ExchangeAccess::of(w));
    };
  };
}

Middleware request_id() {
  return [](Handler next) -> Handler {
    return [next = std::move(next)](Request& req, ResponseWriter& w) {
      std::string_view given = req.header("X-Request-Id");
      if (valid_request_id(given)) {
        req.set_id(std::string(given));
      } else {
        // Per-thread generator: read and used within this call (no switch).
        static thread_local std::mt19937_64 rng{std::random_device{}()};
        req.set_id(fmt::format("{:016x}", rng()));
      }
      w.header().set("X-Request-Id", req.id());
      next(req, w);
    };
  };
}

Middleware metrics() {
  return [](Handler next) -> Handler {
    return [next = std::move(next)](Request& req, ResponseWriter& w) {
      const auto start = std::chrono::steady_clock::now();
      struct Recorder {
        ResponseWriter& w;
        std::chrono::steady_clock::time_point start;
        ~Recorder() {
          detail::http_metrics().record(w.status() == 0 ? 500 : w.status(),
                                        std::chrono::steady_clock::now() - start);
        }
      } recorder{w, start};
      next(req, w);
    };
  };
}

}  // namespace middleware
}  // namespace goro::http
