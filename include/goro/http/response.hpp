// goro::http::ResponseWriter: how a handler answers (Go's http.ResponseWriter).
//
// Rules, as Go's:
//   - header() may be changed until the header is written; later changes are
//     ignored.
//   - write_header(status) sends the status and header. A second call is
//     ignored and logged ("superfluous write_header call"). Codes outside
//     100-999 throw std::invalid_argument (a programming error: 500 through
//     the server's recovery). 1xx codes other than the automatic
//     100 Continue are not supported and are ignored with a log line.
//   - write(data) writes write_header(200) first if needed. If no
//     Content-Type was set and the status allows a body, the first bytes
//     choose one (text/plain; charset=utf-8, text/html; charset=utf-8 or
//     application/octet-stream: a small subset of Go's sniffing).
//   - Framing: the first 4 KiB are buffered. A handler that returns within
//     them gets a Content-Length; one that writes more or flush()es streams
//     with chunked encoding (HTTP/1.1) or until close (HTTP/1.0), unless it set
//     Content-Length itself; writing past a declared length fails with
//     http::errc::content_length. HEAD responses carry the headers only.
//   - flush() sends everything written so far to the client now.
//   - Unlike Go's, the writer belongs to the goroutine running its handler,
//     for the handler's duration (as the Request). Used after the handler
//     returned, or from another goroutine, write() and flush() fail with
//     http::errc::handler_returned, header() is a scratch Header that is
//     never sent, status() is 0 and nothing reaches any response: a
//     goroutine the handler leaked cannot write into the connection's next
//     response. A handler that fans work out collects the results and
//     writes them itself.
// Errors are values: a write on a connection the client dropped returns the
// socket error; the handler may stop early, the server closes the connection.
//
// # Wrapping (middleware that observes or transforms a response)
// A middleware may pass its handler a writer of its own: derive from
// ResponseWriter with the wrapping constructor (it takes the writer to wrap
// by address) and override what it needs;
// everything it does not override passes to the writer it wraps. status(),
// header_written() and bytes_written() of the writer the middleware was given
// already tell what went out after next() returns, so observing needs no
// wrapper; transforming the body (compression, a digest) does. A wrapper must
// hand every byte it holds back to the inner writer before the middleware
// returns: the server finishes the response from the innermost writer, so
// bytes a wrapper still holds then are lost. A wrapper that changes the
// body's length (compression) removes the handler's Content-Length before
// the header goes out: in its write_header(), and in its first write() or
// flush() when status() is still 0 (the handler never called write_header).
// A derived class that overrides write(std::string_view) adds
// `using ResponseWriter::write;` to keep the byte-span overload, which calls
// it.
//
// Example:
//   // Upper-cases every body byte its handler writes.
//   class Upper : public goro::http::ResponseWriter {
//    public:
//     using ResponseWriter::ResponseWriter;  // the wrapping constructor
//     using ResponseWriter::write;
//     goro::http::WriteResult write(std::string_view data) override {
//       std::string up(data);
//       for (char& c : up) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
//       return ResponseWriter::write(up);
//     }
//   };
//   goro::http::Middleware upper = [](goro::http::Handler next) -> goro::http::Handler {
//     return [next = std::move(next)](goro::http::Request& req, goro::http::ResponseWriter& w) {
//       Upper u(&w);
//       next(req, u);
//     };
//   };
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "goro/detail/park.hpp"
#include "goro/http/header.hpp"
#include "goro/result.hpp"

namespace goro::http {

namespace detail {
struct Exchange;
struct ExchangeAccess;
struct HandlerSlot;
}  // namespace detail

// What write() returns: the bytes accepted, or the error. Unlike Result it
// may be dropped without a (void), as Go's handlers drop Write's error: a
// failed write is sticky (every later write and flush() returns the same
// error at once) and the server closes the connection after the handler, so
// a handler that does not look loses nothing but the chance to stop early.
class WriteResult : public Result<std::size_t> {
 public:
  using Result<std::size_t>::Result;
  WriteResult(Result<std::size_t> r) : Result<std::size_t>(r) {}
};

class ResponseWriter {
 public:
  ResponseWriter(const ResponseWriter&) = delete;
  ResponseWriter& operator=(const ResponseWriter&) = delete;
  virtual ~ResponseWriter() = default;

  virtual Header& header();
  virtual void write_header(int status);
  virtual WriteResult write(std::string_view data);
  WriteResult write(std::span<const std::byte> data);  // calls write(std::string_view)
  virtual Result<void> flush();

  // What was sent: the status (0 before write_header or the first write),
  // whether the header went out, and body bytes accepted from the handler.
  virtual int status() const;
  virtual bool header_written() const;
  virtual std::size_t bytes_written() const;

  // Asks the server to close the connection after this response (sends
  // "Connection: close" if the header has not gone out yet).
  virtual void close_connection();

  // Cuts the response short (Go's panic(http.ErrAbortHandler)): nothing more
  // is sent and the connection closes after what already went out, so the
  // client can tell a cut body from a whole one: a chunked body lacks its
  // final chunk, a Content-Length body comes up short, and a response whose
  // header was still buffered is not sent at all; but if the request body
  // failed (too large, malformed, too slow) and nothing went out yet, the
  // server answers its status (413, 400, 408) in place of the buffered
  // response. Later write() and flush() calls fail with http::errc::aborted.
  virtual void abort();

  // Moves this response's write deadline (Go's
  // ResponseController.SetWriteDeadline): writes that cannot finish by `t`
  // fail with goro::errc::timeout; a default-constructed time_point clears
  // it. ServerOptions::write_timeout sets it when the request head is read;
  // a handler that streams for longer (server-sent events, a slow producer)
  // moves it forward as it goes. No effect in-process (http::test).
  virtual void set_write_deadline(std::chrono::steady_clock::time_point t);

  // A writer that wraps `*inner` (which must outlive it): each operation a
  // derived class does not override, or calls on the base, passes to it.
  explicit ResponseWriter(ResponseWriter* inner) : inner_(inner) {}

 protected:
  ResponseWriter& inner() { return *inner_; }
  const ResponseWriter& inner() const { return *inner_; }

 private:
  friend struct detail::ExchangeAccess;
  friend struct detail::HandlerSlot;
  explicit ResponseWriter(detail::Exchange* x) : x_(x) {}
  // x_ when the caller is the goroutine running this response's handler
  // (owner_), else null; x_ as is when owner_ is null (the server's own use).
  // Inline for the usual caller, the handler's own goroutine (a handler's
  // write asks several times: a call each was ~16 instructions); any other
  // caller, on a goroutine or not, is live_slow()'s.
  detail::Exchange* live() const noexcept {
    if (owner_ == nullptr) return x_;
    const void* owner = owner_->load(std::memory_order_relaxed);
    if (owner != nullptr && owner == goro::detail::running_g()) return x_;
    return live_slow();
  }
  detail::Exchange* live_slow() const noexcept;
  // Exactly one is set: x_ for the server's writer, inner_ for a wrapper.
  detail::Exchange* x_ = nullptr;
  ResponseWriter* inner_ = nullptr;
  const std::atomic<const void*>* owner_ = nullptr;
};

}  // namespace goro::http
