// The server's shared state: what the accept loop, every connection
// goroutine, shutdown() and the signal thread see. Connection goroutines hold
// it by shared_ptr, so a goroutine abandoned at the shutdown deadline (its
// handler still sleeping) never outlives what it points at.
#pragma once

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "framework/http/parser/request_head.hpp"
#include "framework/http/server/signals.hpp"
#include "goro/context.hpp"
#include "goro/http/server.hpp"
#include "goro/net.hpp"
#include "goro/sync.hpp"

namespace goro::http::detail {

// One accepted connection, as the server's registry sees it.
//
// `state` governs who may close the connection during shutdown:
//   kIdle   -> kActive  the connection goroutine, when a request's first bytes
//                       arrive (transition_to_active)
//   kActive -> kIdle    the connection goroutine, after a response, before
//                       waiting for the next request (transition_to_idle)
//   kIdle   -> kClosed  shutdown's idle sweep, which then closes `conn`
//   any     -> kClosed  the forced close at the shutdown deadline
// A goroutine whose transition fails finds kClosed and ends. After its CAS to
// kIdle it re-checks `shutting_down` (seq_cst both sides): either the sweep
// sees it idle, or it sees the flag; a connection never sleeps through a
// shutdown.
struct ConnEntry {
  enum State : int { kIdle, kActive, kClosed };
  net::Conn conn;
  std::atomic<int> state{kIdle};
  std::list<std::shared_ptr<ConnEntry>>::iterator self;

  bool transition_to_active() {
    int expected = kIdle;
    return state.compare_exchange_strong(expected, kActive);
  }
  bool transition_to_idle() {
    int expected = kActive;
    return state.compare_exchange_strong(expected, kIdle);
  }
};

struct ServerState {
  ServerOptions opts;
  Handler handler;
  HttpLimits limits;

  std::atomic<bool> shutting_down{false};
  // Nanoseconds since the steady epoch; written by the first shutdown() (or a
  // later one with an earlier deadline).
  std::atomic<std::int64_t> shutdown_deadline{0};

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
  std::list<std::shared_ptr<ConnEntry>> conns;

  // Every connection goroutine (and 503 goroutine): add before spawning, done
  // as its very last act, after its socket is closed and released. serve()
  // waits for it after a clean drain so that no goroutine of the server is
  // still releasing descriptors when goro::run's main returns.
  WaitGroup conns_wg;

  // Parent of every request context; cancelled at the forced close.
  Context base_ctx;
  CancelFunc cancel_base;

  void log(std::string_view line) const;
  void begin_shutdown(std::chrono::nanoseconds timeout);
  // Closes idle connections; returns how many are still registered.
  std::size_t close_idle();
  void close_all();
};

// The connection goroutine's body (conn.cpp).
void serve_conn(std::shared_ptr<ServerState> s, std::shared_ptr<ConnEntry> e);
// Answers 503 + close to a connection over the cap (conn.cpp).
void reject_conn(net::Conn conn);

}  // namespace goro::http::detail
