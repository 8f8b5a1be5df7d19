// RequestParser: incremental HTTP/1.1 request parsing for the server's
// connection loop, on llhttp 8.1 in HTTP_REQUEST mode. Pure: no I/O, no
// runtime, no allocation per request once a connection's buffers have grown.
//
// # Protocol with the connection loop
// The loop owns the read buffer and hands the parser whatever is unread.
// parse() takes some prefix of it, reports at most one event, and says how
// many bytes it took; the loop drops those bytes and calls again. Bytes not
// taken stay the loop's — that is how pipelined requests, and the bytes
// after an upgrade, are never lost.
//
//   RequestParser p{limits};
//   for (;;) {
//     ParseResult r = p.parse(unread);          // unread may be empty
//     unread.remove_prefix(r.consumed);
//     switch (r.event) {
//       case ParseEvent::kNeedMore:   read more into the buffer (EOF: close;
//                                     clean if p.is_idle()); break;
//       case ParseEvent::kHead:       route p.head(); answer 417 if
//                                     head().expect == kOther; start the handler;
//                                     send "100 Continue" before its first body
//                                     read if head().should_send_continue(); break;
//       case ParseEvent::kBody:       hand r.body (a view into `unread`'s old
//                                     prefix, de-chunked) to the body reader; break;
//       case ParseEvent::kMessageEnd: p.trailers() is complete; finish the
//                                     response; close unless head().keep_alive;
//                                     if the handler took over an upgrade, the
//                                     rest of `unread` belongs to it; break;
//       case ParseEvent::kError:      answer p.error().status with
//                                     "Connection: close", then close.
//     }
//   }
//
// After kHead, call parse() again even with no unread bytes: a request without
// a body reports kMessageEnd without consuming anything. A handler that runs
// between kHead and the body simply delays the next parse() call — the parser
// is stopped between events, never mid-callback. Serial pipelining follows:
// the next request's head is not read until the previous message has ended.
//
// # Lifetimes
// head() and its views stay valid from kHead until the parse() call after
// kMessageEnd; trailers() from kMessageEnd until that same call. r.body views
// the caller's input. After kError every call returns kError again.
//
// # What is checked where
// llhttp (strict build, no lenient flags) checks: method against its table;
// target bytes; "HTTP/" and version digits; header-name token bytes and
// header-value bytes (no NUL, CTL, DEL; HTAB and obs-text allowed); a CR inside
// a line must be followed by LF; whitespace before a colon; Content-Length
// digits, overflow, emptiness and any second Content-Length (even identical —
// stricter than Go, which de-duplicates); Transfer-Encoding with
// Content-Length (Go instead drops the Content-Length); Transfer-Encoding
// whose final coding is not chunked or with anything after chunked; chunk-size
// hex digits and overflow; chunk-extension bytes; CRLF after chunk data.
// goro adds (section_scanner, request_line, head_rules, this file):
//   - bare LF anywhere in the head or trailers (llhttp takes one ending the
//     head or the trailers), bare CR in either: 400
//   - obs-fold and whitespace-led first header line: 400
//   - request line over max_request_line: 414; head over max_header_bytes: 431
//   - request-line shape (two single spaces), HTTP/0.9 simple requests: 400
//   - versions other than 1.0/1.1 (0.9, 2.0, PRI, 1.2+): 505
//   - target form: "*" only with OPTIONS, authority-form only and always with
//     CONNECT, absolute-form only for http/https without userinfo: 400
//   - empty header name: 400 "invalid header name"
//   - a second Host line, missing Host on HTTP/1.1 (not CONNECT), bytes Go's
//     ValidHostHeader refuses: 400 with Go's reasons
//   - Transfer-Encoding: more than one line or any value but "chunked" (incl.
//     "gzip, chunked" and empty) 501; on HTTP/1.0 400
//   - Content-Length over max_body_bytes: 413 at the head; chunked running
//     total over it: 413 at the chunk header
//   - chunk extensions longer than max_chunk_extension_bytes: 400
//   - CONNECT with a body: 400
// Known llhttp 8.1 false rejections, left as they are: unknown or lowercase
// methods (Go would route them) and an unquoted chunk-extension value followed
// by another extension ("5;a=b;c=d").
//
// # Where goro is stricter than Go (all allowed by RFC 9112)
// Go accepts, and goro refuses with 400: Transfer-Encoding plus Content-Length
// (Go drops the length), identical duplicate Content-Length lines, obs-fold
// (Go joins the lines), bare LF line endings, Transfer-Encoding on HTTP/1.0
// (Go ignores it), CONNECT with an origin-form target, "GET *" (Go's mux says
// 400 later anyway). Go never sends 414 or 413 on its own; goro does, from
// HttpLimits, because a server without a body limit is not safe by default.
// HTTP/1.2+ is 505 here, 1.1 in Go.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "framework/http/parser/request_head.hpp"

namespace goro::http::detail {

enum class ParseEvent : std::uint8_t {
  kNeedMore,    // every offered byte was taken; nothing complete yet
  kHead,        // head() is complete and valid
  kBody,        // ParseResult::body holds the next de-chunked body bytes
  kMessageEnd,  // the request (body and trailers included) is complete
  kError,       // error() says what to answer; the connection must close
};

struct ParseResult {
  ParseEvent event = ParseEvent::kNeedMore;
  std::size_t consumed = 0;  // bytes taken from the front of the input
  std::string_view body;     // kBody only: a view into the input
};

// How a complete head reaches its verdict. kFastPath (the default) lets the
// head fast path (parser.cpp, "The head fast path") take the requests it
// knows llhttp accepts; kLlhttpOnly runs llhttp on every head. The two must
// report the same: tests and the http_request fuzzer compare them.
enum class HeadPath : std::uint8_t { kFastPath, kLlhttpOnly };

class RequestParser {
 public:
  explicit RequestParser(HttpLimits limits = {}, HeadPath path = HeadPath::kFastPath);
  ~RequestParser();
  RequestParser(RequestParser&&) noexcept;
  RequestParser& operator=(RequestParser&&) noexcept;
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  ParseResult parse(std::string_view input);

  const RequestHead& head() const noexcept;
  const HeaderList& trailers() const noexcept;
  const ParseError& error() const noexcept;
  // The current request head's first line as received so far (up to its CR
  // or LF, at most 1 KiB), raw: what an access log shows for a request the
  // parser refused before it understood the request line.
  std::string_view raw_request_line() const noexcept;
  const HttpLimits& limits() const noexcept;
  // The current (or last) head was judged by the fast path, not by llhttp.
  bool head_took_fast_path() const noexcept;

  // Between requests with no byte of the next one taken: EOF here is a clean
  // close, anywhere else a truncated request.
  bool is_idle() const noexcept;

  // Forgets everything, for a new connection (keeps buffer capacity).
  void reset();

  // # Borrowed input
  // A head the fast path takes from the start of parse()'s input is copied
  // into the parser (its section), so the caller may reuse its buffer at
  // once. With borrow_input(true) it stays where it lies instead, and the
  // head's views (and those the caller derives from them) point into the
  // input: the caller promises to leave those bytes in place and unchanged
  // until it calls end_borrow() (or the next message begins, or reset()).
  // head_borrowed() says whether the current head is such a one. A head
  // the scanner assembled, a refused one and any other message's bytes
  // are the parser's own as before.
  void borrow_input(bool on) noexcept;
  bool head_borrowed() const noexcept;
  // The caller is done with the borrowed head (its request is over): the
  // parser forgets where it lies. Its views are not to be read again.
  void end_borrow() noexcept;

  // Between messages (is_idle()): frees each buffer that grew past
  // `keep_bytes` (the head section, the trailer section, the header lists);
  // a no-op mid-message. The last message's head() and trailers() are gone
  // after it. Call when a connection goes idle.
  void release_buffers(std::size_t keep_bytes);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace goro::http::detail
