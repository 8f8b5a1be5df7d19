// ResponseWriter: Go's response rules on top of the connection's `out`
// buffer.
//
// # Framing decision
// Body bytes a handler writes wait in body_buf until the head goes out. The
// head goes out (commit_head) at the first of: the handler returns (framing:
// Content-Length of what was buffered), body_buf passes
// kBufferBeforeChunking or the handler flushes (chunked on HTTP/1.1, until
// close on HTTP/1.0), unless the handler declared a Content-Length, which is
// then used as is and enforced. Statuses that carry no body (1xx, 204, 304)
// get neither header and drop writes.
//
// # Keep-alive decision (also at commit_head)
// The connection is reused only if the request allows it (parser: HTTP/1.1
// without "Connection: close", HTTP/1.0 with "keep-alive"), the handler did
// not set "Connection: close", the server is not shutting down, the body
// framing lets the client find the end of this response, and what is left of
// the request body can be skipped (Go: at most 256 KiB, and never a body the
// client is still waiting to be invited to send by "100 Continue").
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "framework/http/parser/header_list.hpp"
#include "framework/http/parser/status_text.hpp"
#include "framework/http/server/chunked_encoder.hpp"
#include "framework/http/server/content_type.hpp"
#include "framework/http/server/exchange.hpp"
#include "framework/http/server/short_bytes.hpp"
#include "goro/fs.hpp"
#include "goro/http/response.hpp"

namespace goro::http {

namespace {

using detail::Exchange;
using detail::Framing;

bool body_allowed(int status) {
  return !(status < 200 || status == 204 || status == 304);
}

// A response head (and a small body after it) is assembled here and
// appended to `out` once: four std::string appends per field were a
// sixteenth of a pipelined request's instructions. A head past the buffer
// goes to `out` piece by piece. The pieces are inlined and copied with
// copy_short (short_bytes.hpp), so the server's own field names are
// constant-size moves.
class HeadBuilder {
 public:
  explicit HeadBuilder(std::string& out) : out_(out) {}
  HeadBuilder(const HeadBuilder&) = delete;
  HeadBuilder& operator=(const HeadBuilder&) = delete;
  ~HeadBuilder() = default;

  [[gnu::always_inline]] void put(std::string_view s) {
    if (s.size() > room()) {
      spill(s);
      return;
    }
    detail::copy_short(buf_ + n_, s.data(), s.size());
    n_ += s.size();
  }

  void status_line(bool http10, int status) {
    if (status == 200) {  // nearly every response
      put(http10 ? std::string_view("HTTP/1.0 200 OK\r\n")
                 : std::string_view("HTTP/1.1 200 OK\r\n"));
      return;
    }
    other_status_line(http10, status);
  }

  // "name: " at p (room checked by the caller); returns the value's place.
  [[gnu::always_inline]] static char* name_at(char* p, std::string_view name) {
    detail::copy_short(p, name.data(), name.size());
    p += name.size();
    p[0] = ':';
    p[1] = ' ';
    return p + 2;
  }

  // One bound check and two copies for the line that fits (all but a
  // handler's huge field).
  [[gnu::always_inline]] void field(std::string_view name, std::string_view value) {
    const std::size_t line = name.size() + value.size() + 4;
    if (line > room()) {
      field_piecewise(name, value);
      return;
    }
    char* p = name_at(buf_ + n_, name);
    detail::copy_short(p, value.data(), value.size());
    p += value.size();
    p[0] = '\r';
    p[1] = '\n';
    n_ += line;
  }

  // A number's digits go straight into the buffer.
  [[gnu::always_inline]] void field(std::string_view name, std::uint64_t value) {
    constexpr std::size_t kMaxDigits = 20;  // UINT64_MAX
    if (name.size() + kMaxDigits + 4 > room()) {
      char digits[kMaxDigits];
      const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
      field_piecewise(name, std::string_view(digits, static_cast<std::size_t>(end - digits)));
      return;
    }
    char* p = name_at(buf_ + n_, name);
    p = std::to_chars(p, p + kMaxDigits, value).ptr;
    p[0] = '\r';
    p[1] = '\n';
    n_ = static_cast<std::size_t>(p + 2 - buf_);
  }

  // The Date field, from the per-thread cache (date_cache.cpp).
  void date() {
    char date_buf[29];
    (void)detail::cached_http_date(date_buf);  // always all 29 bytes
    field("Date", std::string_view(date_buf, sizeof date_buf));
  }

  std::size_t size() const noexcept { return n_; }
  std::size_t room() const noexcept { return sizeof buf_ - n_; }

  // Appends what is still buffered; call once, after the last piece.
  void finish() {
    out_.append(buf_, n_);
    n_ = 0;
  }

 private:
  [[gnu::noinline]] void spill(std::string_view s) {
    out_.append(buf_, n_);
    n_ = 0;
    if (s.size() > sizeof buf_) {
      out_.append(s);
      return;
    }
    std::memcpy(buf_, s.data(), s.size());
    n_ = s.size();
  }

  [[gnu::noinline]] void other_status_line(bool http10, int status) {
    put(http10 ? "HTTP/1.0 " : "HTTP/1.1 ");
    char digits[12];
    const auto end = std::to_chars(digits, digits + sizeof digits, status).ptr;
    put_cold(std::string_view(digits, static_cast<std::size_t>(end - digits)));
    put(" ");
    put(detail::status_text(status));
    put("\r\n");
  }

  // put() for a piece from a small buffer of the caller's (copy_short's
  // moves could read past it as far as the compiler can tell).
  [[gnu::noinline]] void put_cold(std::string_view s) {
    if (s.size() > room()) {
      spill(s);
      return;
    }
    std::memcpy(buf_ + n_, s.data(), s.size());
    n_ += s.size();
  }

  [[gnu::noinline]] void field_piecewise(std::string_view name, std::string_view value) {
    put(name);
    put(": ");
    put_cold(value);
    put("\r\n");
  }

  std::string& out_;
  std::size_t n_ = 0;  // bytes of buf_ in use
  char buf_[512];
};

// Can the rest of the request body be skipped after the response?
bool body_is_skippable(const Exchange& x) {
  if (x.body_state == detail::BodyState::kDone) return true;
  if (x.body_state == detail::BodyState::kError) return false;
  if (x.head->should_send_continue() && !x.continue_sent) return false;
  if (x.head->framing == detail::BodyFraming::kContentLength) {
    const std::uint64_t consumed = x.body_bytes - x.pending.size();
    return x.head->content_length - std::min(consumed, x.head->content_length) <=
           detail::kMaxPostHandlerDrain;
  }
  return true;  // chunked: try to drain, close if it runs long
}

// Go reads a handler-declared Content-Length when the status is decided
// (write_header, or the implicit 200): a valid one frames the body, an
// invalid one is dropped.
void adopt_declared_length(Exchange& x) {
  // The first Content-Length, as Header::get would find it: names are kept
  // canonical, so an exact compare is enough (inline: no call per response).
  std::string_view cl;
  for (const Header::Field& f : x.header) {
    if (std::string_view(f.name) == "Content-Length") {
      cl = f.value;
      break;
    }
  }
  if (cl.empty()) return;
  std::uint64_t v = 0;
  for (char c : cl) {
    if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10) {
      x.header.del("Content-Length");
      return;
    }
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  x.declared_length = v;
}

// Which of the fields the head depends on the handler set itself.
struct HandlerFields {
  bool date = false;
  bool server = false;
  bool type = false;
  bool framing = false;  // Connection or Transfer-Encoding
};

// One pass over the handler's fields for what the head depends on (each
// separate lookup was a scan of its own, seven per response).
HandlerFields scan_handler_fields(const Header& h) {
  HandlerFields has;
  for (const Header::Field& f : h) {
    const std::string_view n = f.name;  // canonical: compared exactly
    if (n == "Date") {
      has.date = true;
    } else if (n == "Server") {
      has.server = true;
    } else if (n == "Content-Type") {
      has.type = true;
    } else if (n == "Connection" || n == "Transfer-Encoding") {
      has.framing = true;
    }
  }
  return has;
}

// Decides the framing and keep-alive (see the top of the file) and writes
// the head into `out`; the caller finishes `out` and sets head_sent.
void commit_head(Exchange& x, bool finishing, HeadBuilder& out) {
  bool computed_length = false;  // a Content-Length of body_buf_len to write
  if (x.status == 0) {
    x.status = 200;
    adopt_declared_length(x);
  }
  Header& h = x.header;
  const bool http10 = x.head->version_minor == 0;
  const HandlerFields has = scan_handler_fields(h);
  if (has.framing) {  // rare: the handler named them itself
    if (detail::list_has_token(h.get("Connection"), "close")) x.close_after = true;
    h.del("Connection");
    h.del("Transfer-Encoding");  // framing is the server's business
  }

  if (!body_allowed(x.status)) {
    x.framing = Framing::kNone;
    h.del("Content-Length");
  } else if (x.declared_length) {
    x.framing = Framing::kLength;
    // The handler declared more than it wrote (Go keeps the header and
    // closes): the client would wait for bytes that never come.
    if (finishing && x.body_buf_len < *x.declared_length && !x.is_head_method) x.close_after = true;
  } else if (finishing) {
    x.framing = Framing::kLength;
    // HEAD with nothing written: the handler said nothing about the size.
    // Otherwise the length of what was buffered goes straight into the head
    // below, not through the Header (a formatted string and a set() per
    // response: a tenth of a keep-alive request's instructions).
    computed_length = !(x.is_head_method && x.body_buf_len == 0);
  } else if (!http10) {
    x.framing = Framing::kChunked;
  } else {
    x.framing = Framing::kUntilClose;
    x.close_after = true;
  }

  if (!x.head->keep_alive || x.s->shutting_down.load() || !body_is_skippable(x))
    x.close_after = true;

  out.status_line(http10, x.status);
  if (!has.date) out.date();
  if (!x.s->opts.server_name.empty() && !has.server) out.field("Server", x.s->opts.server_name);
  if (body_allowed(x.status) && !has.type && x.body_buf_len > 0 && !x.is_head_method)
    out.field("Content-Type", detail::sniff_content_type(x.body_buf));
  for (const Header::Field& f : h)
    out.field(f.name, f.value);
  if (computed_length) out.field("Content-Length", std::uint64_t{x.body_buf_len});
  if (x.framing == Framing::kChunked) out.field("Transfer-Encoding", "chunked");
  if (x.close_after) {
    out.field("Connection", "close");
  } else if (http10) {
    out.field("Connection", "keep-alive");
  }
  out.put("\r\n");
}

// Appends body bytes after the head, framed.
Result<void> emit_body(Exchange& x, std::string_view data) {
  if (data.empty() || x.is_head_method || x.framing == Framing::kNone) return {};
  // Data that would take `out` past the threshold is gathered with it into
  // one writev instead of copied: `out` never grows past kOutFlushThreshold,
  // so a streaming response pins at most that much to its connection.
  const bool direct = x.out.size() + data.size() >= detail::kOutFlushThreshold;
  if (x.framing == Framing::kChunked) {
    if (direct) {
      // Large chunk: gather [pending out, size line, data, CRLF] in one writev
      // instead of copying the data into `out`.
      detail::ChunkSizeLine line = detail::chunk_size_line(data.size());
      iovec iov[4] = {{x.out.data(), x.out.size()},
                      {const_cast<char*>(line.bytes.data()), line.size},
                      {const_cast<char*>(data.data()), data.size()},
                      {const_cast<char*>(detail::kChunkEnd.data()), detail::kChunkEnd.size()}};
      auto n = x.writev(iov);
      x.out.clear();
      if (!n) return n.error();
      return {};
    }
    detail::append_chunk(x.out, data);
  } else if (direct) {
    iovec iov[2] = {{x.out.data(), x.out.size()}, {const_cast<char*>(data.data()), data.size()}};
    auto n = x.writev(iov);
    x.out.clear();
    if (!n) return n.error();
    return {};
  } else {
    x.out.append(data);
  }
  if (x.out.size() >= detail::kOutFlushThreshold) return x.flush_out();
  return {};
}

// Sends the head and what the handler wrote before it (emit_body copies or
// writes it out and never touches body_buf). body_buf keeps its capacity
// for the connection's next response. A small Content-Length body that
// emit_body would only append to `out` is appended with the head instead,
// in the same copy (emit_body's every other case needs it separate: HEAD and
// no-body statuses drop it, chunks are framed, a body that takes `out` to
// kOutFlushThreshold goes out at once).
Result<void> commit_buffered(Exchange& x, bool finishing) {
  HeadBuilder out(x.out);
  commit_head(x, finishing, out);
  std::string_view body = x.body_buf;
  if (x.framing == Framing::kLength && !x.is_head_method && body.size() <= out.room() &&
      x.out.size() + out.size() + body.size() < detail::kOutFlushThreshold) {
    out.put(body);
    body = {};
  }
  out.finish();
  x.head_sent = true;
  Result<void> r = body.empty() ? Result<void>{} : emit_body(x, body);
  x.body_buf.clear();
  return r;
}

// A failed write is sticky and the connection closes after the response.
std::error_code fail_writes(Exchange& x, std::error_code ec) {
  x.write_error = ec;
  x.close_after = true;
  return ec;
}

}  // namespace

Exchange* ResponseWriter::live_slow() const noexcept {
  if (owner_ != nullptr && owner_->load(std::memory_order_relaxed) != detail::handler_caller())
    return nullptr;
  return x_;
}

Header& ResponseWriter::header() {
  if (inner_ != nullptr) return inner_->header();
  Exchange* x = live();
  if (x == nullptr) {
    // A scratch header that is never sent: a stale caller's changes go
    // nowhere (per thread, emptied on each call).
    static thread_local Header scratch;
    scratch = Header{};
    return scratch;
  }
  return x->header;
}

void ResponseWriter::write_header(int status) {
  if (inner_ != nullptr) return inner_->write_header(status);
  Exchange* live_x = live();
  if (live_x == nullptr) return;
  Exchange& x = *live_x;
  if (status < 100 || status > 999)
    throw std::invalid_argument(fmt::format("goro/http: invalid write_header code {}", status));
  if (x.status != 0) {
    x.s->log(fmt::format("http: superfluous write_header call ({} after {}) for {} {}", status,
                         x.status, x.head->method, x.head->target));
    return;
  }
  if (status < 200) {
    x.s->log(fmt::format("http: informational status {} is not supported; ignored", status));
    return;
  }
  x.status = status;
  adopt_declared_length(x);
}

WriteResult ResponseWriter::write(std::string_view data) {
  if (inner_ != nullptr) return inner_->write(data);
  Exchange* live_x = live();
  if (live_x == nullptr) return make_error_code(errc::handler_returned);
  Exchange& x = *live_x;
  if (x.write_error) return x.write_error;
  if (x.status == 0) {  // write_header(200), whose checks 200 passes
    x.status = 200;
    adopt_declared_length(x);
  }
  if (!body_allowed(x.status)) return data.size();  // Go: ErrBodyNotAllowed; dropped here
  if (x.declared_length && x.written + data.size() > *x.declared_length)
    return make_error_code(errc::content_length);
  x.written += data.size();
  if (!x.head_sent) {
    x.body_buf_len += data.size();
    if (x.body_buf_len > detail::kBufferBeforeChunking && x.body_buf.empty()) {
      // A first write past the buffer goes out as it is: copying it into
      // body_buf would pin a buffer of its size to the connection.
      if (auto r = commit_buffered(x, false); !r) return fail_writes(x, r.error());
      if (x.is_head_method) return data.size();
      if (auto r = emit_body(x, data); !r) return fail_writes(x, r.error());
      return data.size();
    }
    if (!x.is_head_method) x.body_buf.append(data);
    if (x.body_buf_len <= detail::kBufferBeforeChunking) return data.size();
    if (auto r = commit_buffered(x, false); !r) return fail_writes(x, r.error());
    return data.size();
  }
  if (auto r = emit_body(x, data); !r) return fail_writes(x, r.error());
  return data.size();
}

WriteResult ResponseWriter::write(std::span<const std::byte> data) {
  return write(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
}

Result<void> ResponseWriter::flush() {
  if (inner_ != nullptr) return inner_->flush();
  Exchange* live_x = live();
  if (live_x == nullptr) return make_error_code(errc::handler_returned);
  Exchange& x = *live_x;
  if (x.write_error) return x.write_error;
  if (x.status == 0) write_header(200);
  if (!x.head_sent) {
    if (auto r = commit_buffered(x, false); !r) return fail_writes(x, r.error());
  }
  if (auto r = x.flush_out(); !r) return fail_writes(x, r.error());
  return {};
}

int ResponseWriter::status() const {
  if (inner_ != nullptr) return inner_->status();
  const Exchange* x = live();
  return x != nullptr ? x->status : 0;
}
bool ResponseWriter::header_written() const {
  if (inner_ != nullptr) return inner_->header_written();
  const Exchange* x = live();
  return x != nullptr && x->head_sent;
}
std::size_t ResponseWriter::bytes_written() const {
  if (inner_ != nullptr) return inner_->bytes_written();
  const Exchange* x = live();
  return x != nullptr ? x->written : 0;
}

void ResponseWriter::close_connection() {
  if (inner_ != nullptr) return inner_->close_connection();
  if (Exchange* x = live()) x->close_after = true;
}

void ResponseWriter::set_write_deadline(std::chrono::steady_clock::time_point t) {
  if (inner_ != nullptr) return inner_->set_write_deadline(t);
  Exchange* x = live();
  if (x != nullptr && x->conn != nullptr) (void)x->conn->set_write_deadline(t);
}

void ResponseWriter::abort() {
  if (inner_ != nullptr) return inner_->abort();
  Exchange* live_x = live();
  if (live_x == nullptr) return;
  Exchange& x = *live_x;
  x.aborted = true;  // finish_response adds nothing
  x.close_after = true;
  if (!x.write_error) x.write_error = make_error_code(errc::aborted);
  if (!x.head_sent) {  // the buffered response never goes out
    x.body_buf.clear();
    x.body_buf_len = 0;
  }
}

namespace detail {

void finish_response(Exchange& x) {
  if (x.aborted) {
    x.close_after = true;
    return;
  }
  if (!x.head_sent) {
    if (!commit_buffered(x, true)) x.close_after = true;
  } else if (x.framing == Framing::kChunked && !x.is_head_method) {
    x.out.append(kLastChunk);
  }
  if (x.declared_length && x.written < *x.declared_length && !x.is_head_method &&
      x.framing == Framing::kLength) {
    x.close_after = true;  // the client would wait for bytes that never come
  }
}

namespace {

// A file body goes out in slices this big, each under its own write
// deadline: a client must take 4 MiB per write_timeout (70 KB/s at 60 s).
constexpr std::uint64_t kSendfileSlice = 4 << 20;

// Where sendfile cannot go (in-process, where the bytes are recorded; TLS,
// where they are encrypted in user space: the kernel here has no kTLS): the
// file is read in pieces and written through the exchange's own writer,
// each piece under a fresh write deadline as sendfile's slices are. A read
// error mid-body fails the response like a write error: the head is out.
constexpr std::size_t kCopyPiece = 64 << 10;

Result<void> copy_file_body(Exchange& x, fs::File& file, std::uint64_t offset,
                            std::uint64_t length) {
  std::string buf(static_cast<std::size_t>(std::min<std::uint64_t>(kCopyPiece, length)), '\0');
  const auto timeout = x.s->opts.write_timeout;
  for (std::uint64_t done = 0; done < length;) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), length - done));
    if (auto r =
            file.pread_full(std::as_writable_bytes(std::span<char>(buf.data(), n)), offset + done);
        !r) {
      return fail_writes(x, r.error());
    }
    if (timeout.count() > 0) x.set_write_deadline(timeout);
    const iovec piece{buf.data(), n};
    if (auto w = x.writev(std::span<const iovec>(&piece, 1)); !w) return fail_writes(x, w.error());
    done += n;
    x.written += n;
  }
  return {};
}

}  // namespace

Result<void> send_file_body(Exchange& x, fs::File& file, std::uint64_t offset,
                            std::uint64_t length) {
  // No body to send: the head goes out with the handler's end, batched with
  // other pipelined responses.
  if (x.is_head_method || length == 0 || !body_allowed(x.status)) return {};
  ResponseWriter w = ExchangeAccess::make_writer(&x);
  if (auto r = w.flush(); !r) return r;  // the head, after any pipelined responses before it
  if (x.declared_length && x.written + length > *x.declared_length)
    return make_error_code(errc::content_length);
  if (x.conn == nullptr || x.tls != nullptr) return copy_file_body(x, file, offset, length);
  // In slices, each with a fresh write deadline: a download fails when the
  // client takes nothing for write_timeout, not when the whole file takes
  // longer than that (nginx's send_timeout; Go's WriteTimeout would cut it).
  const auto timeout = x.s->opts.write_timeout;
  const std::uint64_t slice = timeout.count() > 0 ? kSendfileSlice : length;
  for (std::uint64_t done = 0; done < length;) {
    const std::uint64_t count = std::min(slice, length - done);
    if (timeout.count() > 0) (void)x.conn->set_write_deadline(timeout);
    Result<std::size_t> n =
        fs::sendfile(*x.conn, file, offset + done, static_cast<std::size_t>(count));
    if (!n) return fail_writes(x, n.error());
    done += count;
    x.written += static_cast<std::size_t>(count);
  }
  return {};
}

void write_simple_response(std::string& out, int status, std::string_view body, bool close,
                           std::string_view server_name, bool http10,
                           std::string_view retry_after) {
  HeadBuilder head(out);
  head.status_line(http10, status);
  head.date();
  if (!server_name.empty()) head.field("Server", server_name);
  if (!retry_after.empty()) head.field("Retry-After", retry_after);
  if (!body.empty()) head.field("Content-Type", "text/plain; charset=utf-8");
  head.field("Content-Length", std::uint64_t{body.size()});
  if (close) head.field("Connection", "close");
  head.put("\r\n");
  head.finish();
  out.append(body);
}

}  // namespace detail
}  // namespace goro::http
