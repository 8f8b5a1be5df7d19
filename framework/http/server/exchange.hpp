// Exchange: one connection's state as the connection goroutine, the Request
// and the ResponseWriter share it. Request and ResponseWriter are thin views
// over it (public headers cannot name parser or router types); the
// connection loop (conn.cpp) owns it while a request is read and served,
// resets its per-request half between requests, keeping every buffer's
// capacity (no allocation per request once warm), and hands it to its
// thread's cache while the connection rests (conn.cpp "At rest without an
// Exchange"), so one Exchange serves many connections in turn.
//
// # Buffers
// rbuf holds bytes read from the socket; [rpos, rend) is unread. The parser's
// head() owns copies of what it reports, so the buffer may be compacted at
// any read except while `pending` (the current body chunk) views it; reads
// happen only when `pending` is empty. `out` holds response bytes not yet
// written: responses to pipelined requests accumulate there and go out in one
// write, before the next blocking read (flush-before-read is the only rule
// that keeps pipelining from deadlocking). While a background read runs
// (background_read.hpp), rbuf's tail and the socket's read side are the
// watcher's: nothing here reads the socket or moves rbuf/rend until it stops.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <sys/uio.h>

#include "framework/http/parser/parser.hpp"
#include "framework/http/router/route_table.hpp"
#include "framework/http/server/background_read.hpp"
#include "framework/http/server/server_state.hpp"
#include "framework/net/netfd.hpp"
#include "goro/detail/park.hpp"
#include "goro/detail/ticks.hpp"
#include "goro/http/header.hpp"
#include "goro/http/request.hpp"
#include "goro/http/response.hpp"

namespace goro::fs {
class File;
}

namespace goro::http::detail {

// How the response body is delimited, chosen when the head is written.
enum class Framing : std::uint8_t { kUnset, kNone, kLength, kChunked, kUntilClose };
enum class BodyState : std::uint8_t { kReading, kDone, kError };

// Go's maxPostHandlerReadBytes: an unread request body up to this size is
// read and dropped after the handler so the connection can be reused.
inline constexpr std::uint64_t kMaxPostHandlerDrain = 256 << 10;
// Response bytes buffered before the framing is decided (Go: 2048 per
// response plus a 4 KiB bufio; one 4 KiB decision point here).
inline constexpr std::size_t kBufferBeforeChunking = 4096;
// `out` is written once it holds this much even with more requests queued,
// and body data that would take it past this goes out with it in one writev
// (emit_body): the most a response's writes pin to a connection. Go's
// response buffers are 4 KiB + 2 KiB; 16 KiB still coalesces a pipelined
// batch of small responses into one write.
inline constexpr std::size_t kOutFlushThreshold = 16 << 10;
// serve_one yields once per this many requests on a connection (conn.cpp).
inline constexpr std::uint32_t kYieldEveryRequests = 64;
// note_bytes_handled yields once per this many request bytes, head or body:
// well under a millisecond of this work; a yield costs ~100 ns.
inline constexpr std::uint64_t kYieldEveryBytes = 256 << 10;

// The Request and ResponseWriter a handler is given, and who may use them.
//
// A handler gets them by reference, so a reference it leaks (captured by a
// goroutine that outlives it) points at these objects, whatever happens to
// the connection after. Slots therefore come from a pool and are never freed
// (type-stable memory): a leaked reference always points at a live
// HandlerSlot, possibly serving another connection by then. Every public
// method first compares `owner` with the caller's goroutine and touches
// nothing else unless they match, so a stale or foreign caller gets an error
// and never reaches an Exchange (which may be serving another connection
// by then, from its thread's cache, or be gone: conn.cpp "At rest without
// an Exchange").
//
// owner: the goroutine running this slot's handler (a per-thread token off
// goroutines, in-process), set by run_handler before the handler is called
// and cleared when it returns; null otherwise. Written only by that
// goroutine; read by any caller, hence atomic (relaxed: a caller that sees
// its own token wrote it itself, earlier on the same goroutine).
struct HandlerSlot {
  std::atomic<const void*> owner{nullptr};
  Request req{nullptr};
  ResponseWriter w{static_cast<Exchange*>(nullptr)};
  HandlerSlot* next_free = nullptr;  // the pool's list; under its lock

  // From a slab (framework/net/slab.hpp), as they are never freed.
  static void* operator new(std::size_t) {
    return net::slab::SlabPool<sizeof(HandlerSlot), alignof(HandlerSlot)>::instance().allocate();
  }
  static void operator delete(void* p) noexcept {
    net::slab::SlabPool<sizeof(HandlerSlot), alignof(HandlerSlot)>::instance().deallocate(p);
  }

  HandlerSlot() {
    req.owner_ = &owner;
    req.body_.owner_ = &owner;
    w.owner_ = &owner;
  }
  // For the Exchange that took the slot (x_ changes only while owner is null).
  void bind(Exchange* x) {
    req.x_ = x;
    req.body_.x_ = x;
    req.route_ = nullptr;
    w.x_ = x;
  }
  void begin_handler() { req.route_ = nullptr; }
};

// The pool: two slots per live Exchange, reused LIFO, never freed.
HandlerSlot* acquire_handler_slot(Exchange* x);
void release_handler_slot(HandlerSlot* slot) noexcept;

// An Exchange's two slots, used in turn, one request each: a reference kept
// from one request is to the other slot while the next request's handler
// runs, whose owner is then null, so even on the same goroutine (the
// connection's next request) it fails instead of writing into the next
// response. (A reference kept for two requests on the same connection and
// used in the second one's handler is not caught: detecting that would take
// a slot per request from a shared pool, a lock per request.)
class HandlerSlots {
 public:
  explicit HandlerSlots(Exchange* x) : a_(acquire_handler_slot(x)) {
    try {
      b_ = acquire_handler_slot(x);
    } catch (...) {
      release_handler_slot(a_);
      throw;
    }
  }
  // The pool is LIFO: the slot used last goes back first, so the next
  // Exchange's first request gets the other one (next() swaps first), not
  // the slot this connection's last handler may have leaked.
  ~HandlerSlots() {
    release_handler_slot(b_);
    release_handler_slot(a_);
  }
  HandlerSlots(const HandlerSlots&) = delete;
  HandlerSlots& operator=(const HandlerSlots&) = delete;

  // The slot for the request about to be handled; the other one next time.
  HandlerSlot& next() {
    std::swap(a_, b_);
    return *a_;
  }

 private:
  HandlerSlot* a_;
  HandlerSlot* b_ = nullptr;
};
// A token of the calling thread, for a caller that runs on no goroutine.
const void* thread_caller() noexcept;
// The caller's identity for HandlerSlot::owner: its goroutine, or a token of
// its thread when it runs on none. Inline: eleven checks a request.
inline const void* handler_caller() noexcept {
  if (const void* g = goro::detail::running_g()) return g;
  return thread_caller();
}

struct Exchange {
  Exchange(ServerState* server, ConnEntry* entry)
      : s(server),
        e(entry),
        conn(&entry->conn),
        server_generation(server->generation),
        parser(server->limits),
        slots(this) {
    parser.borrow_input(true);  // see reserve_tail
  }
  // In-process (goro/http/test.hpp): no connection; the request's bytes are
  // put in rbuf up front (a read past them is the end of the stream) and
  // every byte for the socket is appended to *recording.
  Exchange(ServerState* server, std::string* recording)
      : s(server),
        e(nullptr),
        conn(nullptr),
        recording(recording),
        server_generation(server->generation),
        parser(server->limits),
        slots(this) {
    parser.borrow_input(true);
  }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  ServerState* s;
  ConnEntry* e;     // null in-process
  net::Conn* conn;  // null in-process: use the I/O helpers below, not conn
  // HTTPS: the TLS layer over *conn (serve_conn's), through which the I/O
  // helpers below move every byte; deadlines and closing stay on conn.
  // Null for plain HTTP and in-process.
  tls::Conn* tls = nullptr;
  // A plain connection's socket and the serving goroutine's Ref on it,
  // held for the goroutine's whole run (serve_requests): the reads, writes
  // and waits below take none of their own (NetFd "Held references").
  // Null otherwise, and in a thread's cache.
  net::NetFd* held_fd = nullptr;
  const net::NetFd::Ref* hold = nullptr;
  std::string* recording = nullptr;
  // s->generation: the server whose limits the parser has. An Exchange at
  // rest in a thread's cache (conn.cpp "At rest without an Exchange") serves
  // only that server's connections again; s, e, conn and tls are set anew
  // each time it is taken.
  std::uint64_t server_generation;
  // In-process only: bytes the client sends once the server reads for them
  // (the body of an "Expect: 100-continue" request, as a real client waits
  // for the invitation); read_more hands them over.
  std::string_view held_back;
  RequestParser parser;
  HandlerSlots slots;  // the handlers' Requests and ResponseWriters
  // rbuf[rpos, rend) is unread. rbuf's storage, rend and the socket's read
  // side belong to the connection goroutine except while bg.active, when
  // rbuf[rend, size()) and the read side are the watcher's (it never touches
  // rend: stop adds what it read).
  std::vector<char> rbuf;
  std::size_t rpos = 0;
  std::size_t rend = 0;
  // # The head in rbuf
  // A head the parser's fast path takes stays where it was read
  // (RequestParser::borrow_input), and the request's views (its target,
  // fields, path and query, the handler's own) point into rbuf. So until
  // reset_request() ends the borrow, no byte of rbuf before rend is moved
  // or overwritten: reserve_tail() reads on after rend, and when the tail
  // is too short moves the unread bytes to a new buffer and keeps this one,
  // with the head, in head_rbuf (a background or body read during such a
  // request; the usual one reads nothing until it is over).
  std::vector<char> head_rbuf;
  std::string out;
  MatchResult match;  // the router's, reused across requests
  bool peer_eof = false;

  std::string_view unread() const { return {rbuf.data() + rpos, rend - rpos}; }

  // ---- request (valid from kHead until the next request) ----
  const RequestHead* head = nullptr;
  std::string_view path;
  std::string_view query;
  bool is_head_method = false;
  std::string id;
  // The first byte of the head, on the coarse clock plus its slack
  // (read_head's late_now: never early, up to three ticks late): the clock of
  // the read-header and body deadlines.
  std::chrono::steady_clock::time_point started;
  // When the head was complete (read_head), on the same clock: the write
  // deadline's (Go resets it once a request's head is read; on a grid of
  // 1/1024 of write_timeout anyway) and memory_guard's (10 ms steps).
  // `started` when the head came whole in the bytes `started` was read with.
  std::chrono::steady_clock::time_point head_at;
  // The same moment on the duration clock (goro/detail/ticks.hpp): the
  // start of the latency the metrics and access-log middleware measure.
  // 0: not read (a request no connection serves).
  std::int64_t head_ticks = 0;
  // The body's read deadline: started + read_timeout unless the handler
  // moved it (Request::set_read_deadline); time_point{}: none.
  std::chrono::steady_clock::time_point body_deadline;

  // body
  BodyState body_state = BodyState::kReading;
  std::string_view pending;  // de-chunked body bytes not yet handed out
  std::uint64_t body_bytes = 0;
  std::uint64_t bytes_since_yield = 0;     // request bytes since note_bytes_handled yielded
  std::uint32_t requests_since_yield = 0;  // requests since serve_one yielded
  bool continue_sent = false;
  std::error_code body_error;
  int body_error_status = 0;  // the parser's status when body_error came from it

  // context: created by the first Request::context(); the background read
  // cancels it when the client goes away while the handler runs.
  std::optional<Context> ctx;
  CancelFunc ctx_cancel;
  bool in_handler = false;  // the handler (with its middleware) is running
  BackgroundRead bg;

  // ---- response ----
  Header header;
  int status = 0;
  bool head_sent = false;
  Framing framing = Framing::kUnset;
  std::optional<std::uint64_t> declared_length;
  std::string body_buf;          // bytes written before the head went out
  std::size_t body_buf_len = 0;  // as body_buf.size(), but counted for HEAD too
  std::size_t written = 0;       // body bytes the handler wrote
  bool close_after = false;      // close the connection after this response
  // The response was cut short: ResponseWriter::abort(), or the handler threw
  // after the head went out. Nothing more is sent; the connection closes.
  bool aborted = false;
  std::error_code write_error;

  void reset_request();
  bool ctx_cancel_pending() const;

  // I/O helpers (conn.cpp). Each works in-process too.
  // Writes `out`. Inline for the empty case: a keep-alive request calls it
  // three times (the rest's flush, read_head's and read_more's), and two
  // of them find nothing to write.
  Result<void> flush_out() {
    if (out.empty()) return {};
    return write_out();
  }
  // flush_out() when `out` has bytes.
  Result<void> write_out();
  // Writes bufs (after `out`, which the caller put first when it has bytes).
  Result<std::size_t> writev(std::span<const iovec> bufs);
  // A plain connection's serving goroutine sets them under its held Ref.
  void set_read_deadline(net::Clock::time_point t) {
    if (hold != nullptr) {
      (void)held_fd->set_deadline(net::NetFd::deadline_at(t), 1, *hold);
    } else if (conn) {
      (void)conn->set_read_deadline(t);
    }
  }
  void set_read_deadline(std::chrono::nanoseconds from_now) {
    if (conn) (void)conn->set_read_deadline(from_now);
  }
  void set_write_deadline(std::chrono::nanoseconds from_now) {
    if (conn) (void)conn->set_write_deadline(from_now);
  }
  void set_write_deadline(net::Clock::time_point t) {
    if (hold != nullptr) {
      (void)held_fd->set_deadline(net::NetFd::deadline_at(t), 2, *hold);
    } else if (conn) {
      (void)conn->set_write_deadline(t);
    }
  }
  std::string remote_addr() const;
  // Reads more bytes into rbuf (flushing `out` first). 0: end of stream.
  // Never while bg.active.
  // `may_park` false, on a plain connection: EAGAIN
  // (std::errc::resource_unavailable_try_again) where the read would park
  // (net::NetFd::read_if_ready; conn.cpp "Woken for nothing").
  Result<std::size_t> read_more(bool may_park = true);
  // Makes at least kMinRead bytes free after rend (compacting or growing
  // rbuf): only when no view into rbuf[rpos, rend) is live and !bg.active.
  // A borrowed head stays where it is ("The head in rbuf").
  void reserve_tail();
  // At rest between requests: every buffer a big request or response grew
  // goes back to its initial size (rbuf to 8 KiB, the parser's head and
  // header lists to 4 KiB, out and the response buffers), so what an idle
  // keep-alive connection holds does not depend on what it once carried.
  void release_buffers();
};

// Access for the framework's files to the public classes' private parts.
struct ExchangeAccess {
  static Request make_request(Exchange* x) { return Request(x); }
  static ResponseWriter make_writer(Exchange* x) { return ResponseWriter(x); }
  // Each of these is null for a caller that may not use the request (see
  // HandlerSlot): a stale or foreign goroutine.
  static Exchange* of(Request& r) { return r.live(); }
  // The exchange under `w` and any writers wrapping it.
  static Exchange* of(ResponseWriter& w) {
    ResponseWriter* p = &w;
    while (p->inner_ != nullptr)
      p = p->inner_;
    return p->live();
  }
  // The exchange if `w` is the server's own writer; null for a wrapper, whose
  // bytes must pass through its write().
  static Exchange* direct(ResponseWriter& w) { return w.inner_ == nullptr ? w.live() : nullptr; }
  // The route the request was matched to (null before routing); a Router
  // sets it for the handlers below it (framework/http/server/router.cpp).
  static const MatchResult* route(const Request& r) { return r.route_; }
  static void set_route(Request& r, const MatchResult* m) { r.route_ = m; }
};

// conn.cpp: serves the request whose head the parser just reported: the
// handler, the response, the body's drain (close_after says what is next).
void serve_one(Exchange& x);
// conn.cpp: the status the server answers for a handler that wrote nothing
// (or gave up on a failed body: body_error_takes_over): 200, or, when the
// request body failed, the parser's status (413, 400), 408 for a client too
// slow, 400 for a body cut short.
int status_for_silent_handler(const Exchange& x);
// conn.cpp: the handler aborted because the request body failed, before
// anything of its response went out: the server answers the body's status
// in its place (status_for_silent_handler), so the client is told why.
bool body_error_takes_over(const Exchange& x);
// conn.cpp: counts request bytes the connection's goroutine handled and
// yields every kYieldEveryBytes: bytes that arrive as fast as they are read
// never make a read wait, so a big head or body would otherwise keep the P
// (de-chunking a fast client's 64 MiB upload and the handler's copies held
// one for 61 ms).
void note_bytes_handled(Exchange& x, std::size_t n);
// conn.cpp: answers the parser's error (status, Connection: close).
void answer_parse_error(Exchange& x);
// conn.cpp: tells ServerOptions::on_rejected about an answer the server gave
// on its own (`bytes` of it went out; 0 when nothing did).
void report_rejected(Exchange& x, int status, std::size_t bytes, std::string_view reason);
// conn.cpp: an exception escaped the handler: 500 if nothing went out, else
// cut the response short; the connection closes either way.
void answer_panic(Exchange& x);
// response.cpp
void finish_response(Exchange& x);
void write_simple_response(std::string& out, int status, std::string_view body, bool close,
                           std::string_view server_name, bool http10 = false,
                           std::string_view retry_after = {});
// response.cpp: writes the response head (status and a declared
// Content-Length set by the caller), then `length` bytes of `file` from
// `offset` straight from the page cache with sendfile(2); HEAD sends the head
// only. A failed send closes the connection after the handler.
Result<void> send_file_body(Exchange& x, fs::File& file, std::uint64_t offset,
                            std::uint64_t length);
// body.cpp: read and drop what the handler left of the body; false if the
// connection cannot be reused.
bool drain_body(Exchange& x);
// body.cpp: true if the request body is over, advancing the parser to the
// message end when the request has no body (no I/O either way).
bool body_finished_without_io(Exchange& x);
// date_cache.cpp: the Date header value, formatted at most once a second per thread.
std::string_view cached_http_date(char (&buf)[29]);

}  // namespace goro::http::detail
