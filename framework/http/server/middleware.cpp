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

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <random>

#include "framework/http/server/exchange.hpp"
#include "framework/http/server/http_metrics.hpp"
#include "goro/detail/park.hpp"
#include "goro/detail/thread_lock.hpp"
#include "goro/detail/ticks.hpp"
#include "goro/http/middleware.hpp"
#include "goro/runtime.hpp"
#include "goro/sync.hpp"

namespace goro::http {

namespace {

// What memory_guard and memory_over weigh against the limit: the limiting
// cgroup's working set, what the OOM killer weighs; RSS misses the kernel's
// share (socket buffers, page tables) and is the fallback when the cgroup's
// files cannot be read.
std::uint64_t weighed_bytes(const MemoryUsage& u) {
  return u.cgroup_bytes != 0 ? u.cgroup_bytes : u.rss_bytes;
}

}  // namespace

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

// Request-line bytes in the text access log: '"', '\\', controls and
// non-ASCII as \xHH (nginx's escaping), so a line cannot be split or forged.
void append_escaped(std::string& out, std::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\x{:02X}", c);
    } else {
      out.push_back(ch);
    }
  }
}

// The status the client got: a handler that wrote nothing and returned
// normally, or aborted on a failed body before anything went out, gets what
// the server answers for it (200, or 408/400/413 when its request body
// failed: detail::status_for_silent_handler); one that
// threw gets 500 (from recover or the server), which is what an outer
// middleware sees while unwinding. `direct` is ExchangeAccess::direct(w),
// which a caller may have asked already: the server's own writer (the usual
// case) tells its status from the exchange; a wrapper may override
// status(), so it is asked.
int status_sent(const ResponseWriter& w, const detail::Exchange* direct) {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): read-only use
  const detail::Exchange* x =
      direct != nullptr ? direct : detail::ExchangeAccess::of(const_cast<ResponseWriter&>(w));
  if (x != nullptr && detail::body_error_takes_over(*x))
    return detail::status_for_silent_handler(*x);
  if (const int status = direct != nullptr ? direct->status : w.status(); status != 0)
    return status;
  if (std::uncaught_exceptions() > 0) return 500;
  return x != nullptr ? detail::status_for_silent_handler(*x) : 200;
}

int status_sent(const ResponseWriter& w) {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): read-only use
  return status_sent(w, detail::ExchangeAccess::direct(const_cast<ResponseWriter&>(w)));
}

// When the request's head was complete, on the coarse clock (memory_guard's
// 10 ms steps; Exchange::head_at). Now for a request no connection serves.
// `x` is the request's exchange if the caller has it (null: looked up).
std::chrono::steady_clock::time_point request_start(Request& req,
                                                    const detail::Exchange* x = nullptr) {
  if (x == nullptr) x = detail::ExchangeAccess::of(req);
  if (x != nullptr && x->head_at != std::chrono::steady_clock::time_point{}) return x->head_at;
  return std::chrono::steady_clock::now();
}

// The same moment on the duration clock, for a latency: the server read it
// when the head was complete (Exchange::head_ticks), so the latency and
// access-log middleware add one cheap read per request, not two precise ones.
std::int64_t request_start_ticks(Request& req, const detail::Exchange* x = nullptr) {
  if (x == nullptr) x = detail::ExchangeAccess::of(req);
  if (x != nullptr && x->head_ticks != 0) return x->head_ticks;
  return goro::detail::ticks();
}

// Nanoseconds since `start` (request_start_ticks).
std::chrono::nanoseconds since_ticks(std::int64_t start) {
  return std::chrono::nanoseconds(goro::detail::ticks_to_ns(goro::detail::ticks() - start));
}

// The body bytes the handler got to the client: none when the server's
// answer took the place of its buffered response (body_error_takes_over).
std::size_t bytes_sent(const ResponseWriter& w) {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): read-only use
  const detail::Exchange* x = detail::ExchangeAccess::of(const_cast<ResponseWriter&>(w));
  if (x != nullptr && detail::body_error_takes_over(*x)) return 0;
  return w.bytes_written();
}

// One access-log line, from a handled request or from one the server
// refused on its own (request_line is then the raw line, when the parser did
// not understand it).
struct AccessFields {
  std::string_view remote;
  std::string_view method;
  std::string_view target;
  std::string_view proto;
  std::string_view request_line;
  int status = 0;
  std::size_t bytes = 0;
  double secs = 0;
  std::string_view request_id;
};

std::string render_access_line(LogFormat format, const AccessFields& f) {
  if (format != LogFormat::kText) {
    LogRecord r(LogLevel::kInfo, "request");
    r.add("remote", f.remote).add("method", f.method).add("target", f.target);
    r.add("proto", f.proto);
    if (!f.request_line.empty()) r.add("request_line", f.request_line);
    r.add("status", f.status)
        .add("bytes", f.bytes)
        .add("duration", f.secs)
        .add("request_id", f.request_id);
    return r.render(format);
  }
  std::string line;
  line.reserve(128 + f.target.size() + f.request_line.size());
  fmt::format_to(std::back_inserter(line), "{} - - [{}] \"", f.remote, clf_time());
  if (f.method.empty()) {
    append_escaped(line, f.request_line);  // nginx logs what arrived
  } else {
    append_escaped(line, f.method);
    line.push_back(' ');
    append_escaped(line, f.target);
    line.push_back(' ');
    append_escaped(line, f.proto);
  }
  fmt::format_to(std::back_inserter(line), "\" {} {} {:.6f} ", f.status, f.bytes, f.secs);
  if (f.request_id.empty()) {
    line.push_back('-');
  } else {
    append_escaped(line, f.request_id);
  }
  return line;
}

}  // namespace

Middleware access_log(const std::shared_ptr<LogSink>& sink, LogFormat format) {
  return [sink, format](Handler next) -> Handler {
    return [sink, format, next = std::move(next)](Request& req, ResponseWriter& w) {
      const std::int64_t start = request_start_ticks(req);
      struct Logger {
        LogSink& sink;
        LogFormat format;
        Request& req;
        ResponseWriter& w;
        std::int64_t start;
        // Logs in a destructor so a request whose handler throws is logged
        // too. Out of memory for the line: the line is lost, not the request.
        ~Logger() {
          try {
            write();
          } catch (...) {  // NOLINT(bugprone-empty-catch): see above
          }
        }
        void write() {
          const std::string remote = req.remote_addr();
          sink.push(render_access_line(
              format, {.remote = remote,
                       .method = req.method(),
                       .target = req.target(),
                       .proto = req.proto(),
                       .status = status_sent(w),
                       .bytes = bytes_sent(w),
                       .secs = std::chrono::duration<double>(since_ticks(start)).count(),
                       .request_id = req.id()}));
        }
      } logger{*sink, format, req, w, start};
      next(req, w);
    };
  };
}

std::function<void(const RejectedRequest&)> access_log_rejected(
    const std::shared_ptr<LogSink>& sink, LogFormat format) {
  return [sink, format](const RejectedRequest& r) {
    sink->push(render_access_line(format, {.remote = r.remote_addr,
                                           .method = r.method,
                                           .target = r.target,
                                           .proto = r.proto,
                                           .request_line = r.request_line,
                                           .status = r.status,
                                           .bytes = r.bytes}));
  };
}

Middleware recover(const std::shared_ptr<LogSink>& sink, LogFormat format) {
  return [sink, format](Handler next) -> Handler {
    return [sink, format, next = std::move(next)](Request& req, ResponseWriter& w) {
      std::string what;
      try {
        next(req, w);
        return;
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
        what = "unknown exception";
      }
      std::string line;
      if (format != LogFormat::kText) {
        line = LogRecord(LogLevel::kError, "panic")
                   .add("remote", req.remote_addr())
                   .add("method", req.method())
                   .add("target", req.target())
                   .add("error", what)
                   .add("request_id", req.id())
                   .render(format);
      } else {
        line = fmt::format("http: panic serving {} {} ", req.remote_addr(), req.method());
        append_escaped(line, req.target());
        fmt::format_to(std::back_inserter(line), ": {}", what);
        if (!req.id().empty()) {
          line.append(" (request id ");
          append_escaped(line, req.id());
          line.push_back(')');
        }
      }
      if (sink) {
        sink->push(std::move(line));
      } else {
        std::fprintf(stderr, "%s\n", line.c_str());
      }
      if (detail::Exchange* x = detail::ExchangeAccess::of(w)) detail::answer_panic(*x);
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

Middleware security_headers(SecurityHeadersOptions opts) {
  std::string hsts;
  if (opts.hsts_max_age.count() > 0) {
    hsts = fmt::format("max-age={}{}", opts.hsts_max_age.count(),
                       opts.hsts_include_subdomains ? "; includeSubDomains" : "");
  }
  return [hsts = std::move(hsts), nosniff = opts.nosniff,
          frame = std::move(opts.frame_options)](Handler next) -> Handler {
    return [next = std::move(next), hsts, nosniff, frame](Request& req, ResponseWriter& w) {
      Header& h = w.header();
      if (!hsts.empty() && req.tls() != nullptr) h.set("Strict-Transport-Security", hsts);
      if (nosniff) h.set("X-Content-Type-Options", "nosniff");
      if (!frame.empty()) h.set("X-Frame-Options", frame);
      next(req, w);
    };
  };
}

Middleware metrics() {
  return [](Handler next) -> Handler {
    return [next = std::move(next)](Request& req, ResponseWriter& w) {
      // One caller check for the start and the status (the server's own
      // writer; a wrapper's status is asked of it).
      const detail::Exchange* direct = detail::ExchangeAccess::direct(w);
      const std::int64_t start = request_start_ticks(req, direct);
      struct Recorder {
        ResponseWriter& w;
        const detail::Exchange* direct;
        std::int64_t start;
        ~Recorder() { detail::HttpMetrics::record(status_sent(w, direct), since_ticks(start)); }
      } recorder{w, direct, start};
      next(req, w);
    };
  };
}

namespace {

// How long the guard's memory_over() answer stands: memory_over() re-reads
// the process's memory at most this often anyway (stats.cpp's kRssMaxAge).
constexpr std::int64_t kMemoryRecheckNs = 10'000'000;

// One guard's shared state. `shedding` is only for logging (the decision is
// over_at() per request); the times are nanoseconds on the steady clock.
//
// over_at() asks memory_over() at most once per kMemoryRecheckNs of request
// time (when each request's head was complete: the server read that clock
// already) and answers the requests in between from `over`: a call per
// request was ~80 instructions (memory_usage()'s clock read and sample
// check) of a keep-alive request's ~6,000, for an answer that changes at
// most every 10 ms. A shed therefore starts or stops up to 10 ms after the
// sample behind it. Relaxed: a reader that sees a new `checked_at` with the
// old `over` answers from the reading before, one interval older.
struct GuardState {
  MemoryGuardOptions opts;
  std::string retry_after;
  std::atomic<bool> shedding{false};
  std::atomic<std::int64_t> last_log{0};
  std::atomic<std::int64_t> last_trim{0};
  std::atomic<std::uint64_t> shed_since_log{0};
  std::atomic<std::int64_t> checked_at{0};  // 0: never
  std::atomic<bool> over{false};

  static std::int64_t now() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

  // The rare paths, out of line so the guard's per-request frame stays small.
  // Logs "serving again" if this caller is the one that ends the shedding.
  [[gnu::noinline]] void serving_again() {
    if (shedding.exchange(false))
      log(LogLevel::kInfo, "memory below the threshold: serving again", memory_usage(), 0);
  }
  // Answers 503 over the threshold, or false for an exempt path (the caller
  // serves it).
  [[gnu::noinline]] bool shed(Request& req, ResponseWriter& w) {
    for (const std::string& path : opts.exempt) {
      if (req.path() == path) return false;
    }
    detail::http_metrics().requests_shed.fetch_add(1, std::memory_order_relaxed);
    shed_since_log.fetch_add(1, std::memory_order_relaxed);
    const bool started = !shedding.load(std::memory_order_relaxed) && !shedding.exchange(true);
    if (started || detail::once_a_second(last_log)) {
      if (started) last_log.store(now(), std::memory_order_relaxed);
      log(LogLevel::kWarn, "memory over the threshold: shedding new requests", memory_usage(),
          shed_since_log.exchange(0));
    }
    // Free stacks the cache keeps committed and freed heap glibc keeps in
    // its arenas count against the limit: give them back, at most once a
    // second (a madvise per stack, a walk of every arena: a thread waits).
    if (detail::once_a_second(last_trim)) goro::blocking([] { goro::free_os_memory(); });
    w.header().set("Retry-After", retry_after);
    w.header().set("Connection", "close");
    error(w, "memory limit nearly reached; retry later", 503);
    return true;
  }

  // memory_over(opts.fraction) as of request time `t` (see above).
  bool over_at(std::chrono::steady_clock::time_point t) {
    const std::int64_t at = t.time_since_epoch().count();
    const std::int64_t last = checked_at.load(std::memory_order_relaxed);
    if (last != 0 && at - last < kMemoryRecheckNs) return over.load(std::memory_order_relaxed);
    const bool o = memory_over(opts.fraction);
    over.store(o, std::memory_order_relaxed);
    checked_at.store(at, std::memory_order_relaxed);
    return o;
  }

  void log(LogLevel level, std::string_view msg, const MemoryUsage& u, std::uint64_t shed) const {
    if (!opts.log || !opts.log->enabled(level)) return;
    const std::uint64_t used = weighed_bytes(u);
    const double pct = u.limit_bytes == 0
                           ? 0
                           : 100.0 * static_cast<double>(used) / static_cast<double>(u.limit_bytes);
    LogRecord r(level, msg);
    r.add("cgroup_bytes", u.cgroup_bytes)
        .add("rss_bytes", u.rss_bytes)
        .add("limit_bytes", u.limit_bytes)
        .add("percent", std::round(pct * 10) / 10)
        .add("threshold_percent", std::round(opts.fraction * 1000) / 10);
    if (level == LogLevel::kWarn) r.add("shed", shed);
    opts.log->log(r);
  }
};

}  // namespace

Middleware memory_guard(MemoryGuardOptions opts) {
  auto st = std::make_shared<GuardState>();
  st->retry_after = fmt::format("{}", std::max<std::int64_t>(1, opts.retry_after.count()));
  st->opts = std::move(opts);
  return [st](Handler next) -> Handler {
    return [st, next = std::move(next)](Request& req, ResponseWriter& w) {
      if (!st->over_at(request_start(req))) {
        if (st->shedding.load(std::memory_order_relaxed)) st->serving_again();
        next(req, w);
        return;
      }
      if (!st->shed(req, w)) next(req, w);
    };
  };
}

}  // namespace middleware

bool memory_over(double fraction) {
  if (!(fraction > 0)) return false;
  const MemoryUsage u = memory_usage();
  if (u.limit_bytes == 0) return false;
  return static_cast<double>(weighed_bytes(u)) >= fraction * static_cast<double>(u.limit_bytes);
}

}  // namespace goro::http
