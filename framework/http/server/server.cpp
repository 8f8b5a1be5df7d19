// Server: the accept loop, the connection registry and graceful shutdown.
//
// # Shutdown protocol (Go's Server.Shutdown, with an optional lame duck)
// 0. Lame duck (opts.shutdown_delay > 0, the first shutdown() or signal):
//    begin_shutdown sets shutting_down (readiness handlers now fail, every
//    response says Connection: close) and hands the delay to serve()'s
//    lame-duck goroutine instead of closing the listener: new connections
//    are still accepted and served for the delay, while a load balancer
//    stops routing here. Then that goroutine closes the listener. A later
//    shutdown (a second signal) closes it at once.
// 1. begin_shutdown (any thread): set shutting_down, record the deadline,
//    close the listener. The accept loop's accept() returns errc::closed.
//    `draining` is set first: from now on a connection at rest ends.
// 2. serve() then sweeps: every connection found kIdle is CASed to kClosed
//    and closed (its goroutine wakes from its read with errc::closed and
//    ends); one still kNew (no request yet) only once it is kNewConnGrace
//    (5 s) old, as Go does, so a request sent just before the listener
//    closed is served, not reset. Active connections finish their request; commit_head sees
//    shutting_down and answers with Connection: close, and the goroutine
//    ends after the response. The sweep repeats with a growing pause (1 ms
//    doubling to 50 ms: quick for an idle server, cheap for a busy one).
// 3. When the registry is empty, or the deadline passes (then every
//    remaining connection is closed and every request context cancelled),
//    serve() returns.
// Connection goroutines keep the ServerState alive (shared_ptr), so one still
// in a handler past the deadline is harmless: its writes fail, it ends.
#include "goro/http/server.hpp"

#include <fmt/format.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <signal.h>

#include <algorithm>
#include <cstdio>

#include "framework/http/server/exchange.hpp"
#include "framework/http/server/http_metrics.hpp"
#include "framework/http/server/server_state.hpp"
#include "framework/http/server/signals.hpp"
#include "goro/detail/thread_lock.hpp"
#include "goro/goro.hpp"

namespace goro::http {

namespace detail {

void ServerState::log(std::string_view line) const {
  if (opts.error_log) {
    opts.error_log(line);
  } else {
    // One fprintf per line: stdio locks the stream, lines do not interleave.
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  }
}

void ServerState::begin_shutdown(std::chrono::nanoseconds timeout, std::chrono::nanoseconds delay) {
  const std::int64_t deadline =
      (std::chrono::steady_clock::now() + delay + timeout).time_since_epoch().count();
  std::int64_t cur = shutdown_deadline.load();
  while ((cur == 0 || deadline < cur) && !shutdown_deadline.compare_exchange_weak(cur, deadline)) {
  }
  const bool first = !shutting_down.exchange(true);
  if (first && opts.on_shutdown) opts.on_shutdown();
  // The lame-duck goroutine closes the listener after the delay; if serve()
  // is not running (no goroutine to receive), close now.
  if (first && delay.count() > 0 && lame_duck.try_send(delay)) return;
  close_listener();
}

void ServerState::close_listener() {
  draining.store(true);
  goro::detail::ThreadLockGuard lock(listener_mu);
  if (listener) (void)listener->close();
}

std::size_t ServerState::close_idle() {
  const net::Clock::time_point now = net::Clock::now();
  goro::detail::ThreadLockGuard lock(conns_mu);
  for (const auto& e : conns) {
    int expected = ConnEntry::kIdle;
    const bool idle = e->state.compare_exchange_strong(expected, ConnEntry::kClosed);
    // `expected` now holds the state found; a kNew one goes only once old.
    const bool stale_new = !idle && expected == ConnEntry::kNew &&
                           now - e->accepted >= kNewConnGrace &&
                           e->state.compare_exchange_strong(expected, ConnEntry::kClosed);
    if (idle || stale_new) (void)e->conn.close();
  }
  return conns.size();
}

bool ServerState::evict_one_locked() {
  // A connection at rest has no request to lose (nginx's
  // ngx_drain_connections). First the connections that never sent a byte,
  // oldest first (from the back: the list is newest first): what a flood of
  // silent connections is made of. Only then keep-alive connections waiting
  // for their next request, which a busy client (a load generator, a proxy's
  // pool) passes through between every two requests: closing one of those
  // races with the client's next request.
  for (const int at_rest :
       {static_cast<int>(ConnEntry::kNew), static_cast<int>(ConnEntry::kIdle)}) {
    for (auto it = conns.rbegin(); it != conns.rend(); ++it) {
      ConnEntry& e = **it;
      int st = at_rest;
      if (e.state.compare_exchange_strong(st, ConnEntry::kClosed)) {
        (void)e.conn.close();  // its goroutine wakes from its read and ends
        return true;
      }
    }
  }
  return false;
}

void ServerState::log_cap(std::size_t cap) {
  if (!once_a_second(cap_logged_ns)) return;
  const std::uint64_t evicted = cap_evicted.exchange(0, std::memory_order_relaxed);
  const std::uint64_t refused = cap_refused.exchange(0, std::memory_order_relaxed);
  log(fmt::format(
      "http: max_connections ({}) reached: {} idle connection(s) closed to admit new ones, "
      "{} refused with 503 (every connection busy) since the last report",
      cap, evicted, refused));
}

Result<void> ServerState::load_tls(std::string_view why) {
  if (!opts.tls || opts.tls->certificates.empty()) return make_error_code(tls::errc::bad_config);
  tls::Config cfg = *opts.tls;
  if (cfg.alpn.empty()) cfg.alpn = {"http/1.1"};
  const std::shared_ptr<const tls::Context> prev = current_tls();
  // Files are read here: off the P (a no-op on a plain thread, the signal
  // watch's).
  tls::ContextResult r = goro::blocking([&] { return tls::Context::server(cfg, prev); });
  if (!r) {
    log(prev ? fmt::format("http: tls: {} failed: {}; still serving the current certificate", why,
                           r.error)
             : fmt::format("http: tls: {}", r.error));
    return make_error_code(tls::errc::bad_config);
  }
  {
    goro::detail::ThreadLockGuard lock(tls_mu);
    tls_ctx = std::move(r.context);
  }
  if (prev) log(fmt::format("http: tls: {}: certificate reloaded", why));
  return {};
}

void ServerState::log_tls_failure(std::string_view remote, const std::error_code& ec) {
  const std::uint64_t failed = tls_failed.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!once_a_second(tls_logged_ns)) return;
  tls_failed.fetch_sub(failed, std::memory_order_relaxed);
  log(failed > 1 ? fmt::format("http: TLS handshake error from {}: {} ({} more since the last "
                               "report)",
                               remote, ec.message(), failed - 1)
                 : fmt::format("http: TLS handshake error from {}: {}", remote, ec.message()));
}

void ServerState::close_all() {
  goro::detail::ThreadLockGuard lock(conns_mu);
  for (const auto& e : conns) {
    if (e->state.exchange(ConnEntry::kClosed) != ConnEntry::kClosed) {
      connections_forced.fetch_add(1, std::memory_order_relaxed);
    }
    (void)e->conn.close();
  }
}

}  // namespace detail

struct Server::Impl : detail::ServerState {};

Server::Server(ServerOptions opts, Handler handler) : impl_(std::make_shared<Impl>()) {
  impl_->opts = std::move(opts);
  impl_->handler = std::move(handler);
  impl_->limits.max_header_bytes = impl_->opts.max_header_bytes;
  impl_->limits.max_request_line = impl_->opts.max_request_line;
  impl_->limits.max_body_bytes = impl_->opts.max_body_bytes;
}

Server::~Server() = default;

const ServerOptions& Server::options() const {
  return impl_->opts;
}

Result<void> Server::listen() {
  // A bad certificate fails before the port is taken.
  if (impl_->opts.tls && !impl_->current_tls()) {
    if (auto r = impl_->load_tls("load"); !r) return r;
  }
  auto ln = net::listen("tcp", impl_->opts.addr);
  if (!ln) return ln.error();
  goro::detail::ThreadLockGuard lock(impl_->listener_mu);
  impl_->bound_addr = ln->addr().to_string();
  impl_->listener.emplace(std::move(*ln));
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): emplaced above
  if (impl_->draining.load()) (void)impl_->listener->close();
  if (impl_->opts.handle_signals && !impl_->signals) {
    std::weak_ptr<detail::ServerState> weak = impl_;
    const bool hangup = impl_->opts.tls.has_value();
    impl_->signals = std::make_unique<detail::SignalWatch>(
        [weak](int signo) {
          std::shared_ptr<detail::ServerState> s = weak.lock();
          if (!s) return;
          if (signo == SIGHUP) {
            (void)s->load_tls("SIGHUP");
            return;
          }
          // First signal: graceful (after the lame duck); a second one: now.
          if (s->shutting_down.load()) {
            s->begin_shutdown(std::chrono::nanoseconds{0}, std::chrono::nanoseconds{0});
          } else {
            s->begin_shutdown(s->opts.shutdown_timeout, s->opts.shutdown_delay);
          }
        },
        hangup);
  }
  return {};
}

Result<void> Server::listen_and_serve_tls(std::string cert_file, std::string key_file) {
  if (!impl_->opts.tls) impl_->opts.tls.emplace();
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): emplaced above
  impl_->opts.tls->certificates = {
      {.cert_file = std::move(cert_file), .key_file = std::move(key_file)}};
  return listen_and_serve();
}

Result<void> Server::reload_tls() {
  return impl_->load_tls("reload");
}

std::string Server::addr() const {
  goro::detail::ThreadLockGuard lock(impl_->listener_mu);
  return impl_->bound_addr;
}

Result<void> Server::listen_and_serve() {
  if (auto r = listen(); !r) return r;
  return serve();
}

namespace {

// After the forced close, how long serve() waits for handlers to notice their
// cancelled contexts before it returns without them.
constexpr auto kForcedGrace = std::chrono::seconds(1);

// Accept errors (EMFILE, ENFILE, ENOBUFS...) and connections that could not
// be started back off as Go's Serve does: 5 ms, doubling to 1 s, back to
// nothing after a connection starts.
constexpr auto kMinBackoff = std::chrono::milliseconds(5);
constexpr auto kMaxBackoff = std::chrono::seconds(1);

std::chrono::milliseconds next_backoff(std::chrono::milliseconds b) {
  return b.count() == 0 ? kMinBackoff : std::min<std::chrono::milliseconds>(b * 2, kMaxBackoff);
}

// Registers `conn` and spawns its goroutine (or, over max_connections, a 503
// goroutine): a plain connection's parked until its first bytes (conn.cpp
// "Started parked"). The spawn happens outside conns_mu: goro::go may switch, and a
// goroutine must never switch holding a thread mutex (thread_lock.hpp).
// Throws (bad_alloc, or system_error when no goroutine stack can be mapped)
// with `conn` closed and the registry as it was.
void start_conn(const std::shared_ptr<detail::ServerState>& s, net::Conn& conn) {
  detail::HttpMetrics& m = detail::http_metrics();
  auto entry =
      std::allocate_shared<detail::ConnEntry>(net::slab::SlabAllocator<detail::ConnEntry>{});
  entry->conn = std::move(conn);  // before it is registered: the sweep may close it
  bool over = false;
  bool evicted = false;
  {
    goro::detail::ThreadLockGuard lock(s->conns_mu);
    if (s->opts.max_connections != 0 && s->conns.size() >= s->opts.max_connections) {
      // At the cap: make room by closing a connection at rest; refuse only
      // when every connection is in a request. An evicted entry stays
      // registered until its goroutine ends, so the registry may exceed the
      // cap by the evictions in flight; each admission costs one eviction.
      evicted = s->evict_one_locked();
      over = !evicted;
    }
    if (!over) {
      s->conns.push_front(entry);
      entry->self = s->conns.begin();
    }
  }
  if (evicted || over) {
    (evicted ? s->cap_evicted : s->cap_refused).fetch_add(1, std::memory_order_relaxed);
    if (evicted) m.connections_evicted.fetch_add(1, std::memory_order_relaxed);
    s->log_cap(s->opts.max_connections);
  }
  if (over) conn = std::move(entry->conn);  // never registered: ours alone
  s->conns_wg.add(1);
  try {
    if (over) {
      m.connections_rejected.fetch_add(1, std::memory_order_relaxed);
      // `conn` was moved back from entry->conn just above when `over`.
      // NOLINTNEXTLINE(bugprone-use-after-move)
      goro::go([s, c = std::move(conn)]() mutable {
        detail::reject_conn(std::move(c), s->opts.tls.has_value());
        s->conns_wg.done();
      });
    } else if (!detail::start_parked(s, entry)) {
      goro::go(goro::SpawnOptions{.stack_size = s->opts.stack_size}, [sp = s, entry]() mutable {
        // Its last goroutine calls conns_wg.done() (the connection may
        // outlive this one: conn.cpp "Released while idle").
        detail::serve_conn(std::move(sp), std::move(entry));
      });
    }
  } catch (...) {
    // goro::go did not take the callable: `conn` (or entry->conn) is still
    // ours. Nobody waits on the registry entry but the shutdown sweep.
    s->conns_wg.done();
    if (!over) {
      goro::detail::ThreadLockGuard lock(s->conns_mu);  // the sweep reads entry->conn under it
      entry->state.store(detail::ConnEntry::kClosed);
      s->conns.erase(entry->self);
      conn = std::move(entry->conn);
    }
    (void)conn.close();
    throw;
  }
}

void accept_loop(const std::shared_ptr<detail::ServerState>& s, net::Listener& ln) {
  detail::HttpMetrics& m = detail::http_metrics();
  std::chrono::milliseconds backoff{0};
  for (;;) {
    Result<net::Conn> c = ln.accept();
    if (!c) {
      if (c.error() == goro::errc::closed || s->draining.load()) return;
      backoff = next_backoff(backoff);
      s->log(fmt::format("http: accept error: {}; retrying in {}ms", c.error().message(),
                         backoff.count()));
      goro::sleep_for(backoff);
      continue;
    }
    m.connections_total.fetch_add(1, std::memory_order_relaxed);
    // Kept for the log line below: start_conn moves the connection away.
    const net::Addr remote = c->remote_addr();
    try {
      start_conn(s, *c);
      backoff = std::chrono::milliseconds{0};
    } catch (const std::exception& e) {
      (void)c->close();
      backoff = next_backoff(backoff);
      try {
        s->log(fmt::format("http: dropping connection from {}: {}; accepting again in {}ms",
                           remote.to_string(), e.what(), backoff.count()));
      } catch (...) {
        // Out of memory for the log line too: drop it, keep serving.
      }
      goro::sleep_for(backoff);
    }
  }
}

}  // namespace

namespace {

// The housekeeping's heap trim (serve()'s once-a-second goroutine).
void trim_heap_after_releases([[maybe_unused]] detail::ServerState& s) {
#if defined(__GLIBC__)
  // A walk of every arena's free chunks under its lock (1-3 ms for a
  // big heap, stalling threads that allocate meanwhile), decided by how
  // far the released-connections gauge rose since the last trim and
  // stayed up for a second: at once for 256 or more connections, at
  // most every 10 s for a smaller rise. Not by the count of releases: with
  // release_when_drained a busy connection is released and woken many
  // times a second, its memory in use again at once, and a trim every
  // second under that churn made the RSS creep (about 400 B/s,
  // docs/DESIGN.md "Released when drained"). In goro::blocking: off
  // the P.
  const std::int64_t released = detail::metric_total(detail::kReleased);
  const std::int64_t held = std::min(released, s.released_last_sweep);
  s.released_last_sweep = released;
  s.released_at_trim = std::min(s.released_at_trim, released);
  const std::int64_t rise = held - s.released_at_trim;
  ++s.sweeps_since_trim;
  if (rise >= 256 || (rise > 0 && s.sweeps_since_trim >= 10)) {
    s.released_at_trim = released;
    s.sweeps_since_trim = 0;
    goro::blocking([] { malloc_trim(0); });
  }
#endif
}

}  // namespace

Result<void> Server::serve() {
  std::shared_ptr<detail::ServerState> s = impl_;
  net::Listener* ln = nullptr;
  {
    goro::detail::ThreadLockGuard lock(s->listener_mu);
    if (!s->listener) return std::make_error_code(std::errc::not_connected);
    ln = &*s->listener;  // NOLINT(bugprone-unchecked-optional-access): checked above
  }
  auto [base, cancel] = with_cancel(Context::background());
  s->base_ctx = base;
  s->cancel_base = cancel;

  // The lame duck (protocol step 0): the delay arrives on the channel; a
  // close (serve() is returning) or a listener closed by a later shutdown
  // ends the wait early.
  // Only with a delay: begin_shutdown sends only a positive one.
  if (s->opts.shutdown_delay.count() > 0) {
    s->lame_duck_wg.add(1);
    goro::go([s] {
      if (auto delay = s->lame_duck.recv()) {
        goro::select(goro::after_case(*delay), goro::recv(s->lame_duck));
        s->close_listener();
      }
      s->lame_duck_wg.done();
    });
  }

  // HTTPS: once a second, connections at rest for the whole second give
  // OpenSSL's buffers back (ServerState::sweep_tls_buffers).
  // With idle_release_after: once a second, after connections were
  // released, the heap's free pages go back to the kernel (malloc_trim: the
  // buffers those connections' goroutines gave back would otherwise stay
  // resident, docs/DESIGN.md "Idle connections without a goroutine").
  const bool tls = s->current_tls() != nullptr;
  if (tls || s->opts.idle_release_after.count() > 0) {
    s->tls_sweep_wg.add(1);
    // The gauge counts every server of the process: this one's rises are
    // measured from where it stood when this one started.
    s->released_at_trim = s->released_last_sweep = detail::metric_total(detail::kReleased);
    goro::go([s, tls] {
      for (;;) {
        const std::size_t which =
            goro::select(goro::after_case(std::chrono::seconds(1)), goro::recv(s->tls_sweep_stop));
        if (which != 0) break;
        if (tls) s->sweep_tls_buffers();
        trim_heap_after_releases(*s);
      }
      s->tls_sweep_wg.done();
    });
  }

  accept_loop(s, *ln);
  s->lame_duck.close();
  s->tls_sweep_stop.close();

  // Graceful drain (see the protocol above).
  auto pause = std::chrono::milliseconds(1);
  bool forced = false;
  for (;;) {
    if (s->close_idle() == 0) break;
    const auto deadline = std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(s->shutdown_deadline.load()));
    if (std::chrono::steady_clock::now() >= deadline) {
      s->log("http: shutdown deadline passed; closing the remaining connections");
      s->cancel_base();
      s->close_all();
      forced = true;
      break;
    }
    goro::sleep_for(
        std::min<std::chrono::nanoseconds>(pause, deadline - std::chrono::steady_clock::now()));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  s->cancel_base();
  // After a clean drain every connection goroutine is on its way out: wait for
  // its last instructions. After a forced close, handlers may still run for
  // as long as they like; those goroutines are abandoned (they hold `s`).
  if (forced) {
    // Handlers that watch their context end promptly: give them a moment.
    const auto grace_end = std::chrono::steady_clock::now() + kForcedGrace;
    while (s->close_idle() != 0 && std::chrono::steady_clock::now() < grace_end)
      goro::sleep_for(std::chrono::milliseconds(5));
    forced = s->close_idle() != 0;
  }
  if (!forced) s->conns_wg.wait();
  s->lame_duck_wg.wait();
  s->tls_sweep_wg.wait();
  {
    goro::detail::ThreadLockGuard lock(s->listener_mu);
    s->listener.reset();
  }
  s->signals.reset();  // outside listener_mu: its destructor joins the watch thread
  return {};
}

void Server::shutdown() {
  impl_->begin_shutdown(impl_->opts.shutdown_timeout, impl_->opts.shutdown_delay);
}
void Server::shutdown(std::chrono::nanoseconds timeout) {
  impl_->begin_shutdown(timeout, std::chrono::nanoseconds{0});
}
bool Server::is_shutting_down() const {
  return impl_->shutting_down.load();
}

ServerStats Server::stats() const {
  ServerStats st;
  st.requests_drained = impl_->requests_drained.load(std::memory_order_relaxed);
  st.connections_forced = impl_->connections_forced.load(std::memory_order_relaxed);
  {
    goro::detail::ThreadLockGuard lock(impl_->conns_mu);
    st.connections_open = impl_->conns.size();
  }
  return st;
}

}  // namespace goro::http
