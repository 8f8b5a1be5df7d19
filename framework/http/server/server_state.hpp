// The server's shared state: what the accept loop, every connection
// goroutine, shutdown() and the signal thread see. Connection goroutines hold
// it by shared_ptr, so a goroutine abandoned at the shutdown deadline (its
// handler still sleeping) never outlives what it points at.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "framework/http/parser/request_head.hpp"
#include "framework/http/server/signals.hpp"
#include "framework/net/slab.hpp"
#include "goro/chan.hpp"
#include "goro/context.hpp"
#include "goro/detail/thread_lock.hpp"
#include "goro/http/server.hpp"
#include "goro/net.hpp"
#include "goro/sync.hpp"
#include "goro/tls.hpp"

namespace goro::http::detail {

// One accepted connection, as the server's registry sees it.
//
// `state` governs who may close the connection during shutdown:
//   kNew    -> kActive  the connection goroutine, when its first request's
//                       first bytes arrive (transition_to_active)
//   kIdle   -> kActive  the same, for a later request
//   kActive -> kIdle    the connection goroutine, after a response, before
//                       waiting for the next request (transition_to_idle)
//   kIdle   -> kClosed  shutdown's idle sweep, which then closes `conn`
//   kNew    -> kClosed  the sweep too, but only once the connection is
//                       kNewConnGrace old: one accepted just before the
//                       listener closed gets to send its request (Go's
//                       closeIdleConns, net/http server.go, golang/go#22682)
//   any     -> kClosed  the forced close at the shutdown deadline
// A goroutine whose transition fails finds kClosed and ends. After its CAS to
// kIdle it re-checks `draining` (seq_cst both sides; the sweep runs only
// after draining was set): either the sweep sees it idle, or it sees the
// flag; a connection never sleeps through a shutdown. A kNew connection
// sleeps through it at most until kNewConnGrace or its read-header
// deadline, which runs from `accepted`.
struct ConnEntry {
  enum State : int { kNew, kIdle, kActive, kClosed };
  // Layout: what a request's goroutine touches first comes first (conn,
  // state, activity, tls, idle_until: 32 bytes), the address a released
  // connection names for its wake-up's prefetch (conn.cpp
  // park_until_readable; netpoll's "Warming a batch").
  net::Conn conn;
  std::atomic<int> state{kNew};
  // Requests begun, counted by the connection goroutine (relaxed: only a
  // hint for the sweep, which compares it with what it saw a second ago).
  std::atomic<std::uint32_t> activity{0};
  // &*tls_conn while the connection is being served, else null. Set and
  // cleared by the connection's goroutine of the moment under the server's
  // conns_mu; read under it by the TLS buffer sweep
  // (ServerState::sweep_tls_buffers).
  tls::Conn* tls = nullptr;
  // When the current rest between requests ends (idle_timeout after the
  // response that began it; time_point{}: never). Owned by the connection's
  // goroutine of the moment: a goroutine released while idle hands it to the
  // next one (conn.cpp "Released while idle"), whose start happens after.
  net::Clock::time_point idle_until{};
  // Set at construction (in the accept loop), read-only afterwards.
  const net::Clock::time_point accepted = net::Clock::now();
  // HTTPS: the connection's TLS layer, owned here (after `conn`, which it
  // borrows, so destroyed before it) because it outlives each of the
  // connection's goroutines (conn.cpp "Released while idle"). Written only
  // by the handshake, before `tls` points at it.
  std::optional<tls::Conn> tls_conn;
  std::uint32_t swept_activity = 0;  // the sweep's last look (under conns_mu)
  std::list<std::shared_ptr<ConnEntry>,
            net::slab::SlabAllocator<std::shared_ptr<ConnEntry>>>::iterator self;

  // kNew or kIdle -> kActive; false when the sweep closed it.
  bool transition_to_active() {
    activity.store(activity.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    int expected = state.load();
    while (expected == kNew || expected == kIdle) {
      if (state.compare_exchange_weak(expected, kActive)) return true;
    }
    return false;
  }
  bool transition_to_idle() {
    int expected = kActive;
    return state.compare_exchange_strong(expected, kIdle);
  }
};

// True for at most one caller per second per `stamp` (steady-clock ns of the
// last success, 0 at first): log and housekeeping throttles that many
// goroutines may hit at once. Relaxed: the stamp orders nothing else.
inline bool once_a_second(std::atomic<std::int64_t>& stamp) {
  const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  std::int64_t last = stamp.load(std::memory_order_relaxed);
  if (last != 0 && now - last < std::chrono::nanoseconds(std::chrono::seconds(1)).count())
    return false;
  return stamp.compare_exchange_strong(last, now, std::memory_order_relaxed);
}

// How long a connection that has sent nothing may hold up a graceful drain
// (Go: 5 s).
inline constexpr std::chrono::seconds kNewConnGrace{5};

// A number no other ServerState of the process had (see `generation`).
inline std::uint64_t next_server_generation() {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

struct ServerState {
  ServerOptions opts;
  Handler handler;
  HttpLimits limits;
  // Tells this server's Exchanges from another's in a thread's cache of
  // Exchanges at rest (conn.cpp "At rest without an Exchange"), where the
  // address alone would not: a later server may be allocated at this one's.
  const std::uint64_t generation = next_server_generation();

  // A shutdown was asked for: readiness fails, responses say Connection:
  // close. During a lame duck, connections are still accepted and served.
  std::atomic<bool> shutting_down{false};
  // The listener is closing or closed (set before it is closed, seq_cst):
  // connections at rest end instead of waiting for a next request, and the
  // idle sweep closes the ones already waiting (see ConnEntry).
  std::atomic<bool> draining{false};
  // Nanoseconds since the steady epoch; written by the first shutdown() (or a
  // later one with an earlier deadline).
  std::atomic<std::int64_t> shutdown_deadline{0};
  // The lame-duck period: the first shutdown with a positive delay sends it
  // here instead of closing the listener; serve()'s lame-duck goroutine
  // receives it, waits that long (or until a later shutdown closes the
  // listener, or serve() closes this channel) and closes the listener.
  // Capacity 1: try_send from the signal thread never blocks, and only the
  // first shutdown sends.
  Chan<std::chrono::nanoseconds> lame_duck{1};
  WaitGroup lame_duck_wg;  // the lame-duck goroutine; serve() waits for it

  // Requests that finished after shutting_down was set (lame duck + drain),
  // and connections closed at the shutdown deadline: the numbers an
  // operator's shutdown line reports (Server::stats()).
  std::atomic<std::uint64_t> requests_drained{0};
  std::atomic<std::uint64_t> connections_forced{0};

  // The listener; closed by shutdown() from any thread.
  std::mutex listener_mu;
  std::optional<net::Listener> listener;
  // SIGTERM/SIGINT watch (opts.handle_signals), installed by listen() so a
  // signal between "listening" and serve() is a graceful stop, not a kill;
  // removed when serve() returns. Its callback holds a weak_ptr to us.
  std::unique_ptr<SignalWatch> signals;
  std::string bound_addr;

  // Live connections (registry for shutdown). Lock held only for list edits
  // and the sweep's CAS + close, never across a park.
  std::mutex conns_mu;
  // Newest first. The entries and the list's nodes come from slabs
  // (framework/net/slab.hpp): they live as long as their connections.
  std::list<std::shared_ptr<ConnEntry>, net::slab::SlabAllocator<std::shared_ptr<ConnEntry>>> conns;

  // At max_connections (server.cpp, start_conn): what was evicted and
  // refused since the last log line, and when that line went out (steady
  // ns): one line a second at most, however fast a flood arrives.
  std::atomic<std::uint64_t> cap_evicted{0};
  std::atomic<std::uint64_t> cap_refused{0};
  std::atomic<std::int64_t> cap_logged_ns{0};

  // Every connection goroutine (and 503 goroutine): add before spawning, done
  // as its very last act, after its socket is closed and released. serve()
  // waits for it after a clean drain so that no goroutine of the server is
  // still releasing descriptors when goro::run's main returns.
  WaitGroup conns_wg;

  // Parent of every request context; cancelled at the forced close.
  Context base_ctx;
  CancelFunc cancel_base;

  // HTTPS (opts.tls): the context a new connection handshakes with; a
  // reload replaces it whole, and connections keep the one they took (their
  // tls::Conn holds it). Null for plain HTTP.
  mutable std::mutex tls_mu;
  std::shared_ptr<const tls::Context> tls_ctx;  // guarded by tls_mu
  // Handshake failures since the last log line, and when that went out
  // (once a second at most: a scanner or a flood of garbage must not flood
  // the log).
  std::atomic<std::uint64_t> tls_failed{0};
  std::atomic<std::int64_t> tls_logged_ns{0};

  std::shared_ptr<const tls::Context> current_tls() const {
    goro::detail::ThreadLockGuard lock(tls_mu);
    return tls_ctx;
  }
  // Builds a context from opts.tls (keeping the current one's ticket keys)
  // and installs it; on failure logs why and keeps the current one.
  Result<void> load_tls(std::string_view why);
  // Counts a failed handshake and logs it (with the failures since the last
  // line) at most once a second.
  void log_tls_failure(std::string_view remote, const std::error_code& ec);
  // Gives back OpenSSL's buffers of every TLS connection that was at rest
  // with no request begun since the previous sweep (serve()'s TLS goroutine,
  // once a second; conn.cpp "TLS buffers"). Closed when serve() stops.
  void sweep_tls_buffers();
  // The sweep gives the heap's free pages back when the released-connections
  // gauge (http_metrics().connections_released) rose above this: memory that
  // became idle, not the churn of connections released and woken again.
  // Lowered to the gauge whenever the gauge is lower (connections woke, so
  // their memory is in use again), set to it at each trim. The sweep's
  // goroutine only.
  std::int64_t released_at_trim = 0;
  // The gauge at the previous sweep: a rise counts once it held for a whole
  // second (the lower of the two readings), so the gauge's swings under
  // churn do not add up to one. The sweep's goroutine only.
  std::int64_t released_last_sweep = 0;
  int sweeps_since_trim = 0;  // (the sweep's goroutine only)
  Chan<int> tls_sweep_stop{0};
  WaitGroup tls_sweep_wg;

  void log(std::string_view line) const;
  // Starts a shutdown: in-flight requests get `timeout` after the listener
  // closes, which happens at once or, for the first shutdown with a
  // positive `delay`, after the lame-duck period. Any thread.
  void begin_shutdown(std::chrono::nanoseconds timeout, std::chrono::nanoseconds delay);
  void close_listener();
  // Closes idle connections, and new ones older than kNewConnGrace; returns
  // how many are still registered.
  std::size_t close_idle();
  void close_all();
  // Under conns_mu, at max_connections: closes the oldest connection at rest
  // (kIdle, or kNew: nothing sent yet) so a new one can be served; false when
  // every connection is in a request.
  bool evict_one_locked();
  // Logs the cap's evictions and refusals, at most once a second.
  void log_cap(std::size_t cap);
};

// The connection goroutine's body (conn.cpp).
void serve_conn(std::shared_ptr<ServerState> s, std::shared_ptr<ConnEntry> e);
// A new plain connection's goroutine, spawned parked in its socket's read
// wait with no stack until its first bytes, its read-header deadline or a
// close (conn.cpp "Started parked"). False, with nothing spawned, where the
// connection needs a goroutine at once (HTTPS, its own stack_size, releases
// off) or its socket is closed already: serve_conn's goroutine then. Throws
// as goro::go, with nothing spawned.
bool start_parked(const std::shared_ptr<ServerState>& s, const std::shared_ptr<ConnEntry>& e);
// Answers 503 + close to a connection over the cap (conn.cpp); over TLS
// only closes it.
void reject_conn(net::Conn conn, bool tls);

}  // namespace goro::http::detail
