// The connection goroutine: read a head, run the handler, finish the
// response, repeat (parser.hpp's protocol, driven with real I/O).
//
// # Deadlines (Go's net/http server.go; docs/DESIGN.md "Deadlines and limits")
// Waiting for a request: read deadline now + idle_timeout. When the first
// bytes arrive and the head is still incomplete: the head's first byte +
// read_header_timeout (slowloris). A head that arrives in one read costs no
// timer change beyond the idle one, which keeps a keep-alive request at one
// deadline reset. Body reads: body.cpp. Writes: now + write_timeout from the
// end of the head, when configured.
//
// # Deadlines on a grid
// The idle deadline (at each rest) and the write deadline (at each head) are
// rounded up to a grid of at most 1/1024 of their timeout, a power of two of
// nanoseconds (on_grid): the requests a keep-alive connection sends within
// one step of it set the deadline it has already (the write deadline always;
// the idle one at the rests that put idle_until on the socket: a drained
// plain connection's under release_when_drained, the default; a rest with
// a release moment arms that instead), which the netpoller sees
// at the cost of three loads (netpoll/poll_desc.cpp "Setting a deadline
// again"), where a deadline moved later took a reference on the socket,
// dropped it, and a CAS. A timeout then ends up to a thousandth of its
// length late (the default idle_timeout's 120 s: 67 ms).
//
// # Closing
// A connection closes after a response that says so (commit_head's
// keep-alive decision), after a bad request (the parser's status with
// Connection: close), when the client goes away, or when shutdown finds it
// idle. When the client may still be sending (an unread body, a bad request),
// the close is a lingering one as Go's closeWriteAndWait: FIN first, then
// read and drop for a moment, so the kernel does not answer the client's
// late bytes with an RST that destroys the response before it is read.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>

#include "framework/http/parser/status_text.hpp"
#include "framework/http/server/exchange.hpp"
#include "framework/http/server/http_metrics.hpp"
#include "framework/net/netfd.hpp"
#include "framework/tls/tls_impl.hpp"
#include "goro/detail/check.hpp"
#include "goro/detail/park.hpp"
#include "goro/detail/thread_lock.hpp"
#include "goro/runtime.hpp"

namespace goro::http::detail {

namespace {

constexpr std::size_t kInitialReadBuffer = 8 << 10;
constexpr std::size_t kMinRead = 4 << 10;
// While a body is read: fewer syscalls per upload, at this much per
// in-flight upload (the most a request pins here; back to the initial size
// after it).
constexpr std::size_t kBodyReadBuffer = 32 << 10;
constexpr auto kLingerTime = std::chrono::milliseconds(500);
// The shortest idle_release_after honoured (begin_rest says why).
constexpr auto kMinIdleRelease = std::chrono::milliseconds(1);
// From this idle_release_after on, a rest's release moment is read from the
// coarse clock (begin_rest).
constexpr auto kCoarseReleaseAfter = std::chrono::milliseconds(100);
constexpr std::size_t kLingerBytes = 256 << 10;

// Now on the coarse clock plus its slack: never early, up to three ticks
// (12 ms here) late, for a fifth of a precise read. The clock of deadlines
// that run seconds (read-header, body, write, idle), never of latency
// (Exchange::head_ticks).
net::Clock::time_point late_now() {
  return net::Clock::time_point(
      std::chrono::nanoseconds(goro::detail::coarse_now() + goro::detail::coarse_slack()));
}

// `t` rounded up to the grid of `timeout` ("Deadlines on a grid").
net::Clock::time_point on_grid(net::Clock::time_point t, std::chrono::nanoseconds timeout) {
  const auto step = static_cast<std::int64_t>(
      std::bit_floor(static_cast<std::uint64_t>(timeout.count() >> 10) | 1));
  const std::int64_t ns = t.time_since_epoch().count();
  return net::Clock::time_point(net::Clock::duration((ns + step - 1) & ~(step - 1)));
}

// FIN, then drop what the client still sends for a moment, then close.
void linger_close(net::Conn& conn) {
  (void)conn.close_write();
  (void)conn.set_read_deadline(kLingerTime);
  char sink[4096];
  std::size_t total = 0;
  while (total < kLingerBytes) {
    auto n = conn.read(std::span<char>(sink));
    if (!n || *n == 0) break;
    total += *n;
  }
  (void)conn.close();
}

}  // namespace

void report_rejected(Exchange& x, int status, std::size_t bytes, std::string_view reason) {
  if (!x.s->opts.on_rejected) return;
  const RequestHead& h = x.parser.head();
  RejectedRequest r;
  const std::string remote = x.remote_addr();
  r.remote_addr = remote;
  if (!h.method.empty()) {
    r.method = h.method;
    r.target = h.target;
    r.proto = h.version_minor == 0 ? "HTTP/1.0" : "HTTP/1.1";
  } else {
    r.request_line = x.parser.raw_request_line();
  }
  r.status = status;
  r.bytes = bytes;
  r.reason = reason;
  try {
    x.s->opts.on_rejected(r);
  } catch (const std::exception& e) {
    x.s->log(fmt::format("http: on_rejected threw: {}", e.what()));
  }
}

void answer_parse_error(Exchange& x) {
  const ParseError& err = x.parser.error();
  std::string body = fmt::format("{} {}", err.status, status_text(err.status));
  if (!err.reason.empty() && err.status == 400)
    fmt::format_to(std::back_inserter(body), ": {}", err.reason);
  const std::size_t before = x.out.size();
  write_simple_response(x.out, err.status, body, true, x.s->opts.server_name);
  HttpMetrics::record(err.status, std::chrono::nanoseconds{0});
  report_rejected(x, err.status, x.out.size() - before, err.reason);
}

namespace {

// # At rest without an Exchange
// An Exchange is a connection's whole working state: the read buffer, the
// parser's state and head buffers, the router's match, the response's
// header and buffers, about 13 KiB over a dozen allocations. Between two
// requests it holds nothing a connection needs: rbuf has no unread byte,
// `out` is written, the parser is idle, the request's and response's
// fields are reset. So a connection at rest on a drained socket gives its
// Exchange to its thread's cache and waits for readability without one
// (NetFd::await_readable); once bytes are there it takes the cache's most
// recent Exchange, most likely one another connection was just served
// with, still in the CPU's cache. A thousand busy connections then share a
// few warm Exchanges instead of each pulling its own from memory
// (docs/DESIGN.md "What a thousand busy connections cost"), and a
// connection at rest costs none of it.
//
// Invariants:
// - An Exchange in a cache is at rest: no unread byte, `out` empty, the
//   parser idle, no background read, reset_request() and release_buffers()
//   done (a goroutine's first rest need not release them again). Nobody holds a
//   pointer to it but the cache (its HandlerSlots point back at it, and
//   their owner is null: no handler runs).
// - A cache is its thread's own: only code on that thread touches it, and
//   take and give back make no runtime call, so the goroutine cannot change
//   thread in between (a goroutine moves only at a runtime call; a hog keeps
//   its thread: scheduler/syscall.cpp). No lock.
// - A taken Exchange serves only the server it was built for
//   (server_generation: its parser has that server's limits) and is bound
//   to its new connection (e, conn, tls) before use. Nothing of the last
//   connection's messages carries over: its parser is idle at a message
//   boundary, where llhttp has cleared its flags (after every message it
//   completes) and goro's own head state is begun afresh, and goro closes
//   after any message llhttp would close after (parser.cpp), so a parser
//   at rest is one that could serve any connection; a closed connection's
//   is reset before it is given back.
// TLS connections keep theirs: OpenSSL may hold decrypted bytes that only
// a read through the Exchange hands over, and its record reads are not
// NetFd reads.
constexpr std::size_t kCachedExchanges = 8;

struct ExchangeCache {
  std::array<Exchange*, kCachedExchanges> items{};  // oldest first
  std::size_t n = 0;
  ExchangeCache() = default;
  ExchangeCache(const ExchangeCache&) = delete;
  ExchangeCache& operator=(const ExchangeCache&) = delete;
  ~ExchangeCache() {
    while (n > 0)
      delete items[--n];  // NOLINT(cppcoreguidelines-owning-memory)
  }
};

thread_local ExchangeCache t_exchanges;

// The running thread's cache. Out of line and opaque to the optimiser
// (as goro's current_m(), scheduler/current.cpp): inlined, the compiler may
// compute the thread_local's address once and reuse it after a call that
// parked the goroutine and resumed it on another thread (rest_without_exchange
// does exactly that), touching the old thread's cache from the new one.
#if defined(__clang__)
__attribute__((noinline))
#else
__attribute__((noipa))
#endif
ExchangeCache&
this_thread_exchanges() noexcept {
  ExchangeCache* c = &t_exchanges;
  asm volatile("" : "+r"(c));
  return *c;
}

// A new Exchange for `e`, or null (logged) when there is no memory for one.
Exchange* new_exchange(ServerState& s, ConnEntry& e) noexcept {
  try {
    auto x = std::make_unique<Exchange>(&s, &e);
    x->rbuf.resize(kInitialReadBuffer);
    x->tls = e.tls;
    return x.release();
  } catch (const std::exception& ex) {
    try {
      s.log(fmt::format("http: dropping connection from {}: {}", e.conn.remote_addr().to_string(),
                        ex.what()));
    } catch (...) {
      // Out of memory for the log line too: the drop still happens.
    }
    return nullptr;
  }
}

// This thread's most recent Exchange of server `s`, bound to `e`; else a
// new one; null when none could be made.
Exchange* take_exchange(ServerState& s, ConnEntry& e) noexcept {
  ExchangeCache& c = this_thread_exchanges();
  for (std::size_t i = c.n; i-- > 0;) {
    Exchange* x = c.items[i];
    if (x->server_generation != s.generation) continue;
    std::copy(c.items.begin() + static_cast<std::ptrdiff_t>(i) + 1,
              c.items.begin() + static_cast<std::ptrdiff_t>(c.n),
              c.items.begin() + static_cast<std::ptrdiff_t>(i));
    --c.n;
    x->e = &e;
    x->conn = &e.conn;
    x->tls = e.tls;
    x->peer_eof = false;
    return x;
  }
  return new_exchange(s, e);
}

// Puts an Exchange at rest into this thread's cache; when it is full the
// oldest goes (another server's, say, that nobody will take again).
void give_back_exchange(Exchange* x) noexcept {
  GORO_CHECK(x->rpos == x->rend && x->out.empty() && x->parser.is_idle() && !x->bg.active &&
                 x->head == nullptr && !x->parser.head_borrowed() && x->head_rbuf.empty(),
             "http: an Exchange given back while not at rest");
  x->held_fd = nullptr;  // the goroutine's Ref, not the Exchange's
  x->hold = nullptr;
  ExchangeCache& c = this_thread_exchanges();
  if (c.n == kCachedExchanges) {
    delete c.items[0];  // NOLINT(cppcoreguidelines-owning-memory)
    std::copy(c.items.begin() + 1, c.items.end(), c.items.begin());
    --c.n;
  }
  c.items[c.n++] = x;
}

// The socket of a plain (not TLS) connection whose last read drained it
// (NetFd::read_would_park), else null: the next request's bytes will come
// with an edge, so the connection may wait for them without its Exchange,
// or without its goroutine.
net::NetFd* drained_socket(const Exchange& x) {
  if (x.conn == nullptr || x.tls != nullptr) return nullptr;
  net::NetFd* fd = goro::detail::NetConnAccess::netfd(*x.conn);
  return fd != nullptr && fd->read_would_park() ? fd : nullptr;
}

// Whether a connection may live without its goroutine at all (released
// while idle, started parked): releases on, and the default stack_size.
bool releases_allowed(const ServerOptions& o) {
  return o.idle_release_after.count() > 0 && o.stack_size == 0;
}

// More HTTP connections open in the process than release_when_drained_above
// per P: enough that holding a goroutine (and its stack's touched lines) for
// each would crowd the caches, so a drained rest releases at once.
bool many_connections(const ServerOptions& o) {
  const std::int64_t open = http_metrics().connections_open.load(std::memory_order_relaxed);
  return static_cast<std::uint64_t>(std::max<std::int64_t>(open, 0)) >
         o.release_when_drained_above * static_cast<std::uint64_t>(goro::maxprocs());
}

// NetFd::await_readable under the goroutine's held Ref (serve_requests'
// hold_socket), or with its own when there is none.
void await_readable(net::NetFd& fd, const net::NetFd::Ref* hold) {
  if (hold != nullptr) {
    fd.await_readable(*hold);
  } else {
    fd.await_readable();
  }
}

// At rest (`out` written: begin_rest), read deadline set: when the socket is
// known drained, gives the Exchange back and waits for the next request's
// bytes (or the deadline, or a close) without one, then takes one. False:
// no Exchange could be made (`xp` null), close the connection.
bool rest_without_exchange(Exchange*& xp) {
  Exchange* x = xp;
  net::NetFd* fd = drained_socket(*x);
  if (fd == nullptr) return true;
  ServerState& s = *x->s;
  ConnEntry& e = *x->e;
  const net::NetFd::Ref* hold = x->hold;
  give_back_exchange(x);
  xp = nullptr;
  await_readable(*fd, hold);
  xp = take_exchange(s, e);
  if (xp != nullptr && hold != nullptr) {
    xp->held_fd = fd;
    xp->hold = hold;
  }
  return xp != nullptr;
}

// The start of a rest between two requests, up to read_head's read: writes
// what `out` holds, makes the connection idle, arms the read deadline and,
// on a drained socket, waits for bytes without an Exchange. `release_at`:
// when this rest releases the goroutine, or none; `release_now`: release it
// at once (release_when_drained). False: close the connection (`xp` null
// when no Exchange could be had).
bool begin_rest(Exchange*& xp, net::Clock::time_point& release_at, bool& release_now) {
  Exchange* x = xp;
  release_now = false;
  // A rest begins after a response (kActive); a goroutine started for a
  // released connection continues the one its predecessor began (kIdle).
  // The responses still buffered (the last of a pipelined batch) go out
  // first, while the connection is active: shutdown and eviction wait for
  // them as for the handler, and a failed write, a lost response, closes
  // it. The read deadline comes after: a timeout from read_head's read is
  // then the rest's own (its release moment or its end), never the
  // write's, which fails with the same errc::timeout past write_timeout.
  if (!x->flush_out()) return false;
  const bool new_rest = x->e->state.load() == ConnEntry::kActive;
  if (new_rest && !x->e->transition_to_idle()) return false;
  if (x->s->draining.load()) return false;
  x->release_buffers();
  const bool may_release = releases_allowed(x->s->opts);
  // Released when drained (ServerOptions::release_when_drained): the rest
  // has just begun, the responses are out, and the last read drained the
  // socket, so the next request's bytes will come with an edge the parked
  // successor waits for (NetFd::go_when_readable). Only the rest's own
  // deadline goes on the socket. A successor's rest (kIdle, not new) never
  // releases at once: it was woken because something came.
  const bool release_drained = may_release && x->s->opts.release_when_drained && new_rest &&
                               many_connections(x->s->opts) && drained_socket(*x) != nullptr;
  // The clock: the end of the rest needs only the coarse clock plus its
  // slack, never early, at most three ticks late on an idle_timeout of
  // seconds, for a third of the cost (nearly every keep-alive request
  // under load rests). So does a release moment armed below when
  // idle_release_after is long (the default second: a few milliseconds
  // late are under a hundredth of it). A short one needs the precise
  // clock: a coarse one, a tick behind, made a short moment already past
  // when armed, and a late one would stretch it several times.
  const bool coarse = release_drained || x->s->opts.idle_release_after >= kCoarseReleaseAfter;
  const net::Clock::time_point now = coarse ? late_now() : net::Clock::now();
  if (new_rest) {
    const std::chrono::nanoseconds idle = x->s->opts.idle_timeout;
    x->e->idle_until = idle.count() > 0 ? on_grid(now + idle, idle) : net::Clock::time_point{};
  }
  if (release_drained) {
    x->set_read_deadline(x->e->idle_until);
    release_at = {};
    release_now = true;
    return true;
  }
  // The read deadline: the end of the rest, or sooner the moment to
  // release the goroutine. Under load a connection's next request comes
  // long before either (the deadline is then moved later without a timer
  // operation: netpoll's lazy extension).
  net::Clock::time_point deadline = x->e->idle_until;
  release_at = {};
  if (may_release) {
    // Never a release moment that may already be past when armed: an
    // expired deadline fails the read before it looks at the socket, so a
    // connection whose next request is waiting would release, and its
    // successor, woken by that request's edge, would rest and release again:
    // a spin that never reads (IdleRelease.ATinyReleaseMomentDoesNotSpin;
    // it was sticky with the coarse clock here, a tick behind). A
    // millisecond outlasts the way from the clock read to the arming
    // except when the thread is preempted in between, and then the next
    // rest reads the clock afresh.
    const net::Clock::time_point r =
        now + std::max<std::chrono::nanoseconds>(x->s->opts.idle_release_after, kMinIdleRelease);
    if (deadline == net::Clock::time_point{} || r < deadline) deadline = release_at = r;
  }
  x->set_read_deadline(deadline);
  return rest_without_exchange(xp);
}

// A new connection's wait for its first head: read_header_timeout from the
// accept, else idle_timeout from it (read_head, start_parked).
void arm_first_head_deadline(const ServerOptions& o, ConnEntry& e) {
  if (o.read_header_timeout.count() > 0) {
    (void)e.conn.set_read_deadline(e.accepted + o.read_header_timeout);
  } else if (o.idle_timeout.count() > 0) {
    (void)e.conn.set_read_deadline(e.accepted + o.idle_timeout);
  }
}

// # Woken for nothing
// A released plain connection's successor starts when an edge arrives
// (NetFd::go_when_readable), and it has begun nothing: its rest is the one
// its predecessor began, whose read deadline (idle_until) is on the socket,
// and its Exchange comes from the cache (buffers released: the cache's
// invariant). So its first rest needs none of begin_rest's work (a clock
// read, a deadline moved, the buffers' trims: a fifth of what the release
// when drained added to a request), only the drain check. And its first
// read must not park: the edge may have announced bytes the predecessor had
// read already (the netpoller saw it after that read), and a successor
// parked in the read would keep its goroutine until idle_release_after.
// Nothing there, it releases again at once (NetFd::read_if_ready; the
// socket is then marked drained, so the next wait is for a new edge).

// The head is complete: when, for its deadlines and its latency. The
// moment its first bytes came (`started`, `started_ticks`) when it came
// whole in them (`started_is_now`), else now.
void stamp_head(Exchange& x, bool started_is_now, std::int64_t started_ticks) {
  if (started_is_now) {
    x.head_at = x.started;
    x.head_ticks = started_ticks;
  } else {
    x.head_at = late_now();
    x.head_ticks = goro::detail::ticks();
  }
}

// Reads until the parser reports a head. False: close the connection
// (`linger` says how), or, with `release` set, end this goroutine and leave
// the connection to a parked one ("Released while idle"). `woken`: this
// goroutine is a released plain connection's successor, woken by its socket
// ("Woken for nothing").
bool read_head(Exchange*& xp, bool& linger, bool& release, bool woken) {
  Exchange* x = xp;
  bool head_deadline_set = false;
  net::Clock::time_point release_at{};  // when this rest releases the goroutine
  // `started` was read from the clock after the last read: a head parsed
  // from those bytes was complete at that time too (x->head_at).
  bool started_is_now = false;
  std::int64_t started_ticks = 0;
  if (!x->unread().empty()) {
    x->started = late_now();
    started_ticks = goro::detail::ticks();
    started_is_now = true;
  }
  for (;;) {
    ParseResult r = x->parser.parse(x->unread());
    x->rpos += r.consumed;
    if (r.event == ParseEvent::kHead) {
      stamp_head(*x, started_is_now, started_ticks);
      return true;
    }
    if (r.event == ParseEvent::kError) {
      answer_parse_error(*x);
      linger = true;
      return false;
    }
    const bool at_rest = x->parser.is_idle() && x->unread().empty();
    // A new connection waits for its first request under the read-header
    // timeout from accept (Go's ReadHeaderTimeout runs from the start of
    // readRequest, which for the first request is the accept), not the idle
    // timeout: silence from the start is a slow head, not a rest. It does
    // not end at a drain either: it may hold the request the client sent
    // just before the listener closed (ConnEntry, kNew).
    const bool fresh = at_rest && x->e->state.load() == ConnEntry::kNew;
    if (fresh) {
      arm_first_head_deadline(x->s->opts, *x->e);  // again if started parked: the same
    } else if (at_rest && woken) {
      if (x->s->draining.load()) return false;
    } else if (at_rest) {
      bool release_now = false;
      if (!begin_rest(xp, release_at, release_now)) return false;
      x = xp;
      if (release_now) {
        release = true;
        return false;
      }
    } else if (!head_deadline_set) {
      if (x->s->opts.read_header_timeout.count() > 0)
        x->set_read_deadline(x->started + x->s->opts.read_header_timeout);
      head_deadline_set = true;
    }
    // Responses still buffered (a pipelined batch whose next head is only
    // partly here) go before the read, which would write them first: a
    // failed write closes, never reported as the read's 408 below.
    if (!x->flush_out()) return false;
    Result<std::size_t> n = x->read_more(!(woken && at_rest));
    if (woken && at_rest && !n && n.error() == std::errc::resource_unavailable_try_again) {
      release = true;  // woken for nothing: idle_until stays on the socket
      return false;
    }
    woken = false;
    if (!n && n.error() == goro::errc::timeout && at_rest &&
        release_at != net::Clock::time_point{} && x->unread().empty()) {
      // Rested until release_at, not until the end of the rest: the
      // goroutine goes, the rest's own deadline stays on the socket.
      x->set_read_deadline(x->e->idle_until);
      release = true;
      return false;
    }
    if (!n && n.error() == goro::errc::timeout && !at_rest) {
      // Part of a head, then nothing for read_header_timeout: closed
      // without an answer (Go, nginx), logged as nginx does (408).
      report_rejected(*x, 408, 0, "request header timeout");
    }
    if (!n || *n == 0) return false;
    started_is_now = false;
    if (at_rest) {
      if (!x->e->transition_to_active()) return false;
      // The first request's clocks (read-header, read) run from accept.
      x->started = fresh ? x->e->accepted : late_now();
      started_ticks = goro::detail::ticks();
      started_is_now = !fresh;
    }
    // A big head arriving as fast as it is read; after the transition, as
    // a connection at rest may be closed (shutdown, eviction) until then.
    note_bytes_handled(*x, *n);
  }
}

// Splits the target into path and query.
void split_target(Exchange& x) {
  std::string_view t = x.head->target;
  x.path = t;
  x.query = {};
  if (x.head->target_form == TargetForm::kAbsolute) {
    std::size_t scheme_end = t.find("://");
    std::size_t slash = t.find_first_of("/?", scheme_end + 3);
    t = slash == std::string_view::npos ? std::string_view("/") : t.substr(slash);
    x.path = t;
  }
  if (x.head->target_form == TargetForm::kAuthority || x.head->target_form == TargetForm::kAsterisk)
    return;
  if (std::size_t q = t.find('?'); q != std::string_view::npos) {
    x.path = t.substr(0, q);
    x.query = t.substr(q + 1);
  }
  if (x.path.empty()) x.path = "/";
}

// An exception escaped the handler: 500 if nothing went out, else cut the
// response short. The connection closes either way.
void recover_from_panic(Exchange& x, std::string_view what) {
  x.s->log(fmt::format("http: panic serving {} {} {}: {}", x.remote_addr(), x.head->method,
                       x.head->target, what));
  answer_panic(x);
}

}  // namespace

int status_for_silent_handler(const Exchange& x) {
  if (!x.body_error) return 200;
  // Too large or malformed: the parser's status, as the server would have
  // answered at the head. The client too slow (read_timeout, or no byte for
  // read_header_timeout, e.g. after a 100 Continue): 408, as nginx's
  // client_body_timeout. Cut short (EOF, reset): 400.
  if (x.body_error_status != 0) return x.body_error_status;
  return x.body_error == goro::errc::timeout ? 408 : 400;
}

void note_bytes_handled(Exchange& x, std::size_t n) {
  x.bytes_since_yield += n;
  if (x.bytes_since_yield >= kYieldEveryBytes) {
    x.bytes_since_yield = 0;
    goro::yield();
  }
}

bool body_error_takes_over(const Exchange& x) {
  return x.aborted && !x.head_sent && x.body_error;
}

namespace {

// What the handler had buffered goes; the request's id (request_id()
// middleware) stays, so the client's answer and the log lines match.
void clear_unsent_response(Exchange& x) {
  x.header.clear();
  x.header.set("Content-Type", "text/plain; charset=utf-8");
  x.header.set("X-Content-Type-Options", "nosniff");
  if (!x.id.empty()) x.header.set("X-Request-Id", x.id);
  x.declared_length.reset();
  x.body_buf.clear();
  x.body_buf_len = 0;
  x.written = 0;
}

}  // namespace

void answer_panic(Exchange& x) {
  x.close_after = true;
  if (x.head_sent) {
    x.aborted = true;
    return;
  }
  clear_unsent_response(x);  // the client's 500 keeps the request's id
  x.status = 500;
  x.body_buf = "Internal Server Error\n";
  x.body_buf_len = x.body_buf.size();
  if (x.is_head_method) x.body_buf.clear();
}

namespace {

void run_handler(Exchange& x) {
  HandlerSlot& slot = x.slots.next();
  slot.begin_handler();
  Request& req = slot.req;
  ResponseWriter& w = slot.w;
  slot.owner.store(handler_caller(), std::memory_order_relaxed);
  struct Disown {  // also when the server's answer below throws
    HandlerSlot& slot;
    ~Disown() { slot.owner.store(nullptr, std::memory_order_relaxed); }
  } disown{slot};
  try {
    x.s->handler(req, w);
  } catch (const std::exception& e) {
    recover_from_panic(x, e.what());
  } catch (...) {
    recover_from_panic(x, "unknown exception");
  }
  // The handler gave up (abort()) on a body that failed before anything of
  // its response went out: the client gets the body's status below, not a
  // connection closed without a word.
  if (body_error_takes_over(x)) {
    clear_unsent_response(x);
    x.status = 0;
    x.aborted = false;
    x.write_error.clear();
    x.close_after = true;
  }
  // The body failed and the handler said nothing: the server answers for
  // it, never with an empty 200 (the connection closes after it:
  // close_after is set).
  if (x.status == 0) {
    const int status = status_for_silent_handler(x);
    if (status != 200) http::error(w, fmt::format("{} {}", status, status_text(status)), status);
  }
}

}  // namespace

namespace {

// The HandlerSlot pool (exchange.hpp). A mutex: slots are taken and given
// back once per connection goroutine, not per request.
struct SlotPool {
  std::mutex mu;
  HandlerSlot* free = nullptr;  // guarded by mu
};

SlotPool& slot_pool() {
  static auto* pool = new SlotPool;  // never destroyed: leaked references outlive main
  return *pool;
}

}  // namespace

HandlerSlot* acquire_handler_slot(Exchange* x) {
  SlotPool& pool = slot_pool();
  HandlerSlot* slot = nullptr;
  {
    std::lock_guard lock(pool.mu);
    slot = pool.free;
    if (slot != nullptr) pool.free = slot->next_free;
  }
  // Never deleted (type-stable: see HandlerSlot).
  if (slot == nullptr) slot = new HandlerSlot;  // NOLINT(cppcoreguidelines-owning-memory)
  slot->next_free = nullptr;
  slot->bind(x);
  return slot;
}

void release_handler_slot(HandlerSlot* slot) noexcept {
  if (slot == nullptr) return;
  slot->owner.store(nullptr, std::memory_order_relaxed);
  SlotPool& pool = slot_pool();
  std::lock_guard lock(pool.mu);
  slot->next_free = pool.free;
  pool.free = slot;
}

const void* thread_caller() noexcept {
  static thread_local const char off_goroutine = 0;
  return &off_goroutine;
}

void serve_one(Exchange& x) {
  x.head = &x.parser.head();
  x.body_deadline = x.s->opts.read_timeout.count() > 0 ? x.started + x.s->opts.read_timeout
                                                       : std::chrono::steady_clock::time_point{};
  split_target(x);
  x.is_head_method = x.head->method == "HEAD";
  if (x.s->opts.write_timeout.count() > 0)
    x.set_write_deadline(on_grid(x.head_at + x.s->opts.write_timeout, x.s->opts.write_timeout));

  const bool http10 = x.head->version_minor == 0;
  if (x.head->expect == Expectation::kOther) {
    // Go's sendExpectationFailed: 417 and close, body unread.
    const std::size_t before = x.out.size();
    write_simple_response(x.out, 417, "417 Expectation Failed", true, x.s->opts.server_name,
                          http10);
    HttpMetrics::record(417, std::chrono::nanoseconds{0});
    report_rejected(x, 417, x.out.size() - before, "unsupported Expect");
    x.close_after = true;
    return;
  }
  if (x.head->target_form == TargetForm::kAsterisk) {
    // "OPTIONS *": Go's globalOptionsHandler, 200 with an empty body.
    x.status = 200;
    x.header.set("Content-Length", "0");
    x.declared_length = 0;
    finish_response(x);
    HttpMetrics::record(200, std::chrono::nanoseconds{0});
  } else {
    this_thread_metrics().add(kInFlight, 1);
    struct InFlight {  // also when finish_response throws (serve_conn's catch)
      // The thread's shard as of the end: the handler may have parked and
      // resumed on another thread.
      ~InFlight() { this_thread_metrics().add(kInFlight, -1); }
    } in_flight;
    x.in_handler = true;
    run_handler(x);
    x.in_handler = false;
    stop_background_read(x);
    finish_response(x);
  }
  if (x.ctx_cancel_pending()) x.ctx_cancel();
  if (!x.close_after && !drain_body(x)) x.close_after = true;
  if (x.s->shutting_down.load(std::memory_order_relaxed)) {
    x.s->requests_drained.fetch_add(1, std::memory_order_relaxed);
  }
  // A scheduling point every kYieldEveryRequests requests: a client that
  // pipelines small requests faster than they are answered never makes the
  // goroutine's reads wait, and it would keep the P to itself until sysmon's
  // 10 ms preemption. 64 requests are well under a millisecond here; the
  // yield costs a few instructions a request.
  if (++x.requests_since_yield >= kYieldEveryRequests) {
    x.requests_since_yield = 0;
    goro::yield();
  }
}

bool Exchange::ctx_cancel_pending() const {
  return ctx.has_value();
}

void Exchange::release_buffers() {
  constexpr std::size_t kKeepParserBytes = 4 << 10;
  if (rbuf.size() > kInitialReadBuffer && rpos == rend && !bg.active) {
    std::vector<char>(kInitialReadBuffer).swap(rbuf);
    rpos = rend = 0;
  }
  parser.release_buffers(kKeepParserBytes);
  if (out.empty() && out.capacity() > kOutFlushThreshold) std::string().swap(out);
  if (body_buf.capacity() > kBufferBeforeChunking) std::string().swap(body_buf);
  header.trim(kKeepParserBytes);
}

void Exchange::reset_request() {
  head = nullptr;
  if (parser.head_borrowed()) {
    parser.end_borrow();
    // Moved off while the head was borrowed: the head's buffer goes (rbuf
    // holds the bytes since, release_buffers shrinks it at the rest).
    if (!head_rbuf.empty()) std::vector<char>().swap(head_rbuf);
  }
  path = query = {};
  is_head_method = false;
  id.clear();
  body_state = BodyState::kReading;
  pending = {};
  body_bytes = 0;
  continue_sent = false;
  // Cleared only when set: assigning a default std::error_code calls
  // std::system_category() (out of line in libstdc++) every request.
  if (body_error) body_error = {};
  body_error_status = 0;
  ctx.reset();
  ctx_cancel = CancelFunc{};
  header.clear();
  status = 0;
  head_sent = false;
  framing = Framing::kUnset;
  declared_length.reset();
  body_buf.clear();
  body_buf_len = 0;
  written = 0;
  close_after = false;
  aborted = false;
  if (write_error) write_error = {};
}

Result<void> Exchange::write_out() {
  if (conn == nullptr) {
    recording->append(out);
    out.clear();
    return {};
  }
  auto n = hold != nullptr  ? held_fd->write_all(out.data(), out.size(), *hold)
           : tls != nullptr ? tls->write(out)
                            : conn->write(out);
  out.clear();
  if (!n) return n.error();
  return {};
}

void Exchange::reserve_tail() {
  GORO_CHECK(!bg.active, "http: rbuf moved while the background read owns it");
  if (parser.head_borrowed() && head_rbuf.empty()) [[unlikely]] {
    // The head lies in rbuf before rpos: read on after rend, or move the
    // unread bytes to a new buffer and keep this one until reset_request.
    if (rbuf.size() - rend >= kMinRead) return;
    std::vector<char> fresh(std::max(kInitialReadBuffer, rend - rpos + kMinRead));
    std::memcpy(fresh.data(), rbuf.data() + rpos, rend - rpos);
    head_rbuf.swap(rbuf);
    rbuf.swap(fresh);
    rend -= rpos;
    rpos = 0;
    return;
  }
  if (rpos == rend) {
    rpos = rend = 0;
  } else if (rpos > 0 && rbuf.size() - rend < kMinRead) {
    std::memmove(rbuf.data(), rbuf.data() + rpos, rend - rpos);
    rend -= rpos;
    rpos = 0;
  }
  // Bodies stream through a larger buffer: fewer, bigger reads.
  const std::size_t want = head != nullptr && rbuf.size() < kBodyReadBuffer ? kBodyReadBuffer : 0;
  if (rbuf.size() - rend < kMinRead || rbuf.size() < want)
    rbuf.resize(std::max({rbuf.size() * 2, rend + kMinRead, want}));
}

Result<std::size_t> Exchange::read_more(bool may_park) {
  GORO_CHECK(!bg.active, "http: socket read while the background read owns it");
  if (auto r = flush_out(); !r) return r.error();
  reserve_tail();
  if (conn == nullptr) {  // in-process: what was held back, then the end of the stream
    const std::size_t n = std::min(held_back.size(), rbuf.size() - rend);
    std::memcpy(rbuf.data() + rend, held_back.data(), n);
    held_back.remove_prefix(n);
    rend += n;
    return n;
  }
  const std::span<char> tail(rbuf.data() + rend, rbuf.size() - rend);
  Result<std::size_t> n = std::size_t{0};
  if (hold != nullptr) {
    n = may_park ? held_fd->read(tail.data(), tail.size(), *hold)
                 : held_fd->read_if_ready(tail.data(), tail.size(), *hold);
  } else if (tls != nullptr) {
    n = tls->read(tail);
  } else if (net::NetFd* fd = may_park ? nullptr : goro::detail::NetConnAccess::netfd(*conn)) {
    n = fd->read_if_ready(tail.data(), tail.size());
  } else {
    n = conn->read(tail);
  }
  if (n) rend += *n;
  return n;
}

Result<std::size_t> Exchange::writev(std::span<const iovec> bufs) {
  if (tls != nullptr) return tls->writev(bufs);
  if (conn != nullptr) return conn->writev(bufs);
  std::size_t n = 0;
  for (const iovec& b : bufs) {
    recording->append(static_cast<const char*>(b.iov_base), b.iov_len);
    n += b.iov_len;
  }
  return n;
}

std::string Exchange::remote_addr() const {
  // In-process: the documentation address Go's httptest.NewRequest uses.
  return conn != nullptr ? conn->remote_addr().to_string() : std::string("192.0.2.1:1234");
}

namespace {

// An exception escaped the server's own code for this connection (bad_alloc
// while building a response head, say; the handler's own are caught in
// run_handler). The connection is dropped without another byte, the request
// (if any) gets its context cancelled, and the server goes on: one client's
// request must not take the process down. Must not throw: it runs in a catch.
void drop_after_exception(Exchange& x, std::string_view what) noexcept {
  x.in_handler = false;
  stop_background_read(x);  // before the Exchange and its rbuf go away
  if (x.ctx_cancel_pending()) x.ctx_cancel();
  x.out.clear();
  x.aborted = true;
  try {
    x.s->log(fmt::format("http: dropping connection from {}: {}", x.remote_addr(), what));
  } catch (...) {
    // Out of memory for the log line too: the drop itself still happens.
  }
}

// Go's tlsHandshakeTimeout: the smallest positive of the three.
std::chrono::nanoseconds handshake_timeout(const ServerOptions& o) {
  std::chrono::nanoseconds t{0};
  for (const std::chrono::nanoseconds d : {o.read_header_timeout, o.read_timeout, o.write_timeout})
    if (d.count() > 0 && (t.count() == 0 || d < t)) t = d;
  return t;
}

// What Go answers a plaintext request on its TLS port (server.go, conn.serve).
constexpr std::string_view kHttpOnTlsPort =
    "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

// A new connection's TLS handshake, under Go's deadline from the accept.
// False: the connection is over (`linger`: it got the plaintext 400 and is
// to be closed lingering).
bool start_tls(ServerState& s, ConnEntry& e, tls::Conn& tc, bool& linger) {
  const std::chrono::nanoseconds limit = handshake_timeout(s.opts);
  if (limit.count() > 0) (void)e.conn.set_deadline(e.accepted + limit);
  Result<void> r = tc.handshake();
  if (r) {
    // read_head arms the read deadline it needs; serve_one the write one.
    (void)e.conn.set_deadline(net::Clock::time_point{});
    return true;
  }
  if (r.error() == tls::errc::http_request) {
    linger = e.conn.write(kHttpOnTlsPort).ok();
  }
  // A client that connects and leaves (a TCP health check) and a
  // connection closed by the server (evicted at the cap, shut down) are
  // not handshake errors worth a line.
  if (r.error() != tls::errc::handshake_eof && r.error() != goro::errc::closed) {
    s.log_tls_failure(e.conn.remote_addr().to_string(), r.error());
  }
  return false;
}

}  // namespace

namespace {

// The end of a connection, on its last goroutine: close (or linger), leave
// the registry, drop the entry (socket, TLS state: destroyed here if this
// was the last reference), and only then tell serve() this connection is
// done (it may return, and goro::run with it, right after).
void finish_conn(std::shared_ptr<ServerState>& sp, std::shared_ptr<ConnEntry>& ep,
                 bool linger_after) {
  ServerState& s = *sp;
  ConnEntry& e = *ep;
  if (!linger_after) (void)e.conn.close();
  // Lingers with the Exchange gone: its buffers (rbuf up to kBodyReadBuffer,
  // out, the header maps) go back now, not after up to kLingerTime. Under a
  // flood of refused uploads this is most of what a connection costs.
  if (linger_after) linger_close(e.conn);
  e.state.store(ConnEntry::kClosed);
  {
    goro::detail::ThreadLockGuard lock(s.conns_mu);
    e.tls = nullptr;  // the sweep never sees it again
    s.conns.erase(e.self);
  }
  http_metrics().connections_open.fetch_sub(1, std::memory_order_relaxed);
  ep.reset();
  s.conns_wg.done();  // `sp` keeps the WaitGroup alive until we return
}

void serve_requests(std::shared_ptr<ServerState> sp, std::shared_ptr<ConnEntry> ep,
                    bool resumed = false);

// The parked successor's body: both references moved in, so the goroutine
// that releases a connection holds none once the successor may run.
struct ResumeConn {
  std::shared_ptr<ServerState> sp;
  std::shared_ptr<ConnEntry> ep;
  void operator()() {
    this_thread_metrics().add(kReleased, -1);
    serve_requests(std::move(sp), std::move(ep), true);
  }
};

// A connection that started parked (start_parked): its first goroutine
// runs as a released connection's successor does, woken by its socket, but
// it was never released (goro_http_connections_released counts rests).
struct StartConn {
  std::shared_ptr<ServerState> sp;
  std::shared_ptr<ConnEntry> ep;
  void operator()() { serve_requests(std::move(sp), std::move(ep), true); }
};

// Released while idle (docs/DESIGN.md "Idle connections without a
// goroutine"). A connection that rested idle_release_after ends its
// goroutine: its Exchange (read buffer, parser, header maps, handler slots)
// goes back to the thread's cache, the stack to the P's cache as the
// goroutine exits.
// What stays is the ConnEntry (socket, TLS state, the rest's deadline) and
// a goroutine that has never run, parked in the socket's read wait with no
// stack (late stack binding), holding the two references. Readiness, the
// idle deadline or a close (shutdown, eviction at the cap) readies it; it
// binds a stack, takes an Exchange and continues at read_head, which finds
// the bytes, the timeout or the closed socket exactly as the old goroutine
// would have. The state machine does not change: the connection stays
// kIdle throughout, so shutdown's sweep and the cap's eviction close it as
// any idle one. True: `resume` was moved into the parked goroutine. False:
// the connection was closed meanwhile, or no goroutine could be made (no
// stack credit, no memory); `resume` still holds the references and the
// caller closes the connection.
bool park_until_readable(ResumeConn& resume) {
  ServerState& s = *resume.sp;
  ConnEntry& e = *resume.ep;
  net::NetFd* fd = goro::detail::NetConnAccess::netfd(e.conn);
  if (fd == nullptr) return false;
  if (e.tls != nullptr) tls::detail::expect_wait(*e.tls);
  // Counted before the goroutine can start (it may run at once).
  this_thread_metrics().add(kReleased, 1);
  try {
    if (fd->go_when_readable(std::move(resume), &e)) return true;
  } catch (const std::exception& ex) {
    try {
      s.log(fmt::format("http: closing idle connection from {}: {}",
                        e.conn.remote_addr().to_string(), ex.what()));
    } catch (...) {
      // Out of memory for the log line too: the close still happens.
    }
  }
  this_thread_metrics().add(kReleased, -1);
  return false;
}

// A plain connection's socket, null over TLS, and in `hold` one Ref on it
// for the calling goroutine's run, under which its reads, writes and waits
// take none (NetFd "Held references": four locked instructions a
// keep-alive request fewer). `hold` stays empty when the socket is closed
// already: the operations report the close as before. serve_requests lets
// it go before the connection is finished (~NetFd waits for every
// reference) and before a release hands the socket to a successor.
net::NetFd* hold_socket(ConnEntry& e, std::optional<net::NetFd::Ref>& hold) {
  net::NetFd* fd = e.tls == nullptr ? goro::detail::NetConnAccess::netfd(e.conn) : nullptr;
  if (fd != nullptr) {
    hold.emplace(fd);
    if (!hold->ok()) hold.reset();
  }
  return fd;
}

// One goroutine's share of a connection: requests until the connection
// closes, or until it rests long enough to be released.
// NOLINTNEXTLINE(performance-unnecessary-value-param): owned for the goroutine's life
void serve_requests(std::shared_ptr<ServerState> sp, std::shared_ptr<ConnEntry> ep, bool resumed) {
  ServerState& s = *sp;
  bool linger_after = false;
  bool release = false;
  std::optional<net::NetFd::Ref> hold;
  net::NetFd* const fd = hold_socket(*ep, hold);
  if (resumed && fd != nullptr) {
    // Woken by readiness (or the deadline, or a close): consume the wait
    // before taking an Exchange, which read_head's rest would otherwise
    // give back and take again.
    await_readable(*fd, hold ? &*hold : nullptr);
  }
  // Taken on every wake of a released connection: null (no memory) closes
  // this connection, not the process.
  Exchange* x = take_exchange(s, *ep);
  if (x == nullptr) {
    hold.reset();
    finish_conn(sp, ep, false);
    return;
  }
  if (hold) {
    x->held_fd = fd;
    x->hold = &*hold;
  }
  bool linger = false;
  bool threw = false;
  try {
    // The first head of a released plain connection's successor: woken by
    // its socket ("Woken for nothing").
    for (bool woken = resumed && ep->tls == nullptr;; woken = false) {
      if (!read_head(x, linger, release, woken)) break;  // may swap x; null: none to be had
      serve_one(*x);
      if (x->close_after) {
        linger = x->body_state != BodyState::kDone || !x->unread().empty();
        break;
      }
      x->reset_request();
    }
  } catch (const std::exception& e) {
    release = false;
    threw = true;
    if (x != nullptr) drop_after_exception(*x, e.what());
  } catch (...) {
    release = false;
    threw = true;
    if (x != nullptr) drop_after_exception(*x, "unknown exception");
  }
  if (x != nullptr) {
    if (!release) {
      if (x->flush_out() && linger && !x->aborted) linger_after = true;
      // Over TLS a whole exchange ends with a close_notify; a cut one
      // (aborted) without, so the client sees the truncation.
      if (ep->tls != nullptr && !x->aborted) tls::detail::close_notify_now(*ep->tls);
    }
    // The Exchange goes before another goroutine may take the connection:
    // back to the cache when nothing went wrong (a released connection's is
    // at rest; a closed one's is reset to rest), else destroyed.
    if (!threw && !x->bg.active) {
      if (!release) {  // a released one's is at rest already: begin_rest saw to it
        x->reset_request();
        x->parser.reset();
        x->rpos = x->rend = 0;
        x->out.clear();
        x->release_buffers();
      }
      give_back_exchange(x);
    } else {
      delete x;  // NOLINT(cppcoreguidelines-owning-memory)
    }
    x = nullptr;
  }
  hold.reset();
  if (release) {
    ResumeConn resume{std::move(sp), std::move(ep)};
    if (park_until_readable(resume)) return;  // this goroutine holds nothing now
    sp = std::move(resume.sp);
    ep = std::move(resume.ep);
    if (ep->tls != nullptr) tls::detail::close_notify_now(*ep->tls);
  }
  finish_conn(sp, ep, linger_after);
}

}  // namespace

// By value: the connection goroutine owns its references to the server and
// the entry for as long as it runs (the server may drop its own meanwhile).
// NOLINTNEXTLINE(performance-unnecessary-value-param)
void serve_conn(std::shared_ptr<ServerState> sp, std::shared_ptr<ConnEntry> ep) {
  ServerState& s = *sp;
  http_metrics().connections_open.fetch_add(1, std::memory_order_relaxed);
  // HTTPS: the handshake first, before the Exchange's buffers exist (a
  // flood of handshakes that never finish costs their goroutines and
  // OpenSSL's state, nothing of ours).
  if (std::shared_ptr<const tls::Context> ctx = s.current_tls()) {
    tls::Conn& tc = ep->tls_conn.emplace(tls::detail::server_over(ep->conn, std::move(ctx)));
    bool linger_after = false;
    if (!start_tls(s, *ep, tc, linger_after)) {
      finish_conn(sp, ep, linger_after);
      return;
    }
    // TLS buffers: kept while requests come (OpenSSL's own release after
    // every record cost an allocation and a free of 17 KiB each way, a
    // twentieth of a keep-alive request), given back by the server's
    // sweep once the connection has rested a whole second.
    tls::detail::keep_buffers(tc);
    goro::detail::ThreadLockGuard lock(s.conns_mu);
    ep->tls = &tc;
  }
  serve_requests(std::move(sp), std::move(ep));
}

// # Started parked
// A new connection's goroutine would begin by waiting for its first
// request: with a stack bound, an Exchange taken and its first read parked.
// A thousand connections opened at once (a load generator's start, a
// client pool's) then held a thousand stacks until their requests came,
// and the stack pool's scavenger gave the excess back to the kernel half a
// second later (a madvise each), to be faulted in again at the next such
// burst. So a plain connection waits for its first bytes as a released one
// waits for its next request (NetFd::go_when_readable): a goroutine that
// has never run, parked in the socket's read slot with the first head's
// deadline armed, readied by the bytes, the deadline or a close (shutdown's
// sweep of kNew connections, eviction at the cap). It then runs
// serve_requests as a woken successor: its first read does not park (an
// edge for nothing releases it again, the deadline still armed), and the
// connection is kNew until its first bytes, so the read-header timeout, the
// sweep's grace and eviction treat it as before. HTTPS keeps a goroutine
// from the start (the handshake comes first), as do connections with their
// own stack_size and servers whose releases are off (idle_release_after 0).
bool start_parked(const std::shared_ptr<ServerState>& sp, const std::shared_ptr<ConnEntry>& ep) {
  const ServerOptions& o = sp->opts;
  if (o.tls.has_value() || !releases_allowed(o)) return false;
  net::NetFd* fd = goro::detail::NetConnAccess::netfd(ep->conn);
  if (fd == nullptr) return false;
  arm_first_head_deadline(o, *ep);
  // Counted before the goroutine can run (it may at once), as serve_conn's.
  std::atomic<std::int64_t>& open = http_metrics().connections_open;
  open.fetch_add(1, std::memory_order_relaxed);
  bool parked = false;
  try {
    parked = fd->go_when_readable(StartConn{sp, ep}, ep.get());
  } catch (...) {
    open.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
  if (!parked) open.fetch_sub(1, std::memory_order_relaxed);
  return parked;
}

void ServerState::sweep_tls_buffers() {
  goro::detail::ThreadLockGuard lock(conns_mu);
  for (const auto& e : conns) {
    if (e->tls == nullptr) continue;
    const std::uint32_t seen = e->activity.load(std::memory_order_relaxed);
    if (seen == e->swept_activity && e->state.load() == ConnEntry::kIdle) {
      (void)tls::detail::release_buffers(*e->tls);
    }
    e->swept_activity = seen;
  }
}

void reject_conn(net::Conn conn, bool tls) {
  // Over HTTPS the 503 would need a handshake first, which is what the cap
  // protects the server from: the connection is closed without a word.
  if (tls) {
    (void)conn.close();
    return;
  }
  std::string out;
  write_simple_response(out, 503, "503 Service Unavailable: too many connections", true, "", false,
                        "1");
  if (conn.write(out)) linger_close(conn);
}

}  // namespace goro::http::detail
