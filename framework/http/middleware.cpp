// The stock middleware and LogSink (goro/http/middleware.hpp).
//
// LogSink: handlers run on Ms that must never wait for a disk or a pipe, so
// lines go through a bounded in-memory queue to one writer thread. The queue
// lock is a std::mutex held for a push or a swap, never across I/O; the
// writer takes the whole queue at once and writes it with one write(2) per
// batch.
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "framework/http/exchange.hpp"
#include "framework/http/http_metrics.hpp"
#include "goro/http/middleware.hpp"

namespace goro::http {

struct LogSink::Impl {
  int fd;
  std::size_t max_queued;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> queue;  // guarded by mu
  bool stopping = false;           // guarded by mu
  std::atomic<std::uint64_t> dropped{0};
  std::thread writer;

  void run() {
    std::vector<std::string> batch;
    std::string buf;
    for (;;) {
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty() && stopping) return;
        batch.swap(queue);
      }
      buf.clear();
      for (const std::string& line : batch)
        buf.append(line);
      batch.clear();
      std::size_t off = 0;
      while (off < buf.size()) {
        const ssize_t n = ::write(fd, buf.data() + off, buf.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
    }
  }
};

LogSink::LogSink(int fd, std::size_t max_queued) : impl_(std::make_unique<Impl>()) {
  impl_->fd = fd;
  impl_->max_queued = max_queued;
  impl_->writer = std::thread([impl = impl_.get()] { impl->run(); });
}

LogSink::~LogSink() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_one();
  impl_->writer.join();
}

void LogSink::push(std::string line) {
  line.push_back('\n');
  bool was_empty;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->queue.size() >= impl_->max_queued) {
      impl_->dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    was_empty = impl_->queue.empty();
    impl_->queue.push_back(std::move(line));
  }
  if (was_empty) impl_->cv.notify_one();
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
