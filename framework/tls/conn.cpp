// tls::Conn: OpenSSL driven non-blocking from goroutines.
//
// # The BIO
// OpenSSL does its socket I/O through a BIO of ours rather than its socket
// BIO, for four reasons: the read fast path of framework/net (a short read
// means the receive queue was empty: the next read parks without the
// read(2) that would only say EAGAIN, unless the poller saw a hang-up:
// framework/net/netfd.hpp), syscall(2) instead of glibc's cancellable
// wrappers, the errno of a failed call kept where OpenSSL cannot clobber it,
// and the first five bytes a client sent, which tell a plaintext HTTP
// request from a ClientHello (Go's tlsRecordHeaderLooksLikeHTTP). The BIO
// never blocks and never parks: EAGAIN is OpenSSL's WANT_READ or WANT_WRITE,
// and the goroutine parks outside OpenSSL (below). OpenSSL calls it only
// from inside an SSL_* call made under `mu`, so its fields are `mu`'s.
//
// # One OpenSSL call at a time, and no switch inside one
// Every SSL_* call on a connection runs under `mu` (a thread mutex: no call
// parks, so it is held for one call's CPU work and never across a switch;
// checked builds verify that: goro/detail/thread_lock.hpp). That makes a
// reader and a writer safe on one SSL object, which OpenSSL does not
// promise by itself. The error queue is thread-local and the goroutine may
// resume on another thread after any park, so each call clears the queue
// before, reads SSL_get_error and turns the queue's error into an
// std::error_code before unlocking, and clears it again: nothing of
// OpenSSL's per-thread state survives a park.
//
// # Parking
// After WANT_READ the goroutine parks in the socket's read wait, after
// WANT_WRITE in its write wait, then repeats the call (with the same
// arguments, as OpenSSL requires for a write; the write buffer may move:
// SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER). Any call can want either direction
// (a read during a handshake may have to write), but the netpoller allows
// one waiter per direction, and the normal reader and writer may already be
// parked there. So `waiting` (under mu) says which directions have a
// goroutine parked; a call that wants a direction somebody else waits in
// sleeps 1 ms and repeats instead (that waiter's wake-up moves the
// connection on). Only the crossed cases take that path: a handshake
// driven by a read and a write at once, in practice.
//
// Before parking for a read nothing decrypted is left behind: the call is
// always made first, and SSL_read returns buffered plaintext and records
// already read (read-ahead) before it asks for more.
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "framework/net/netfd.hpp"
#include "framework/tls/tls_impl.hpp"
#include "goro/detail/thread_lock.hpp"
#include "goro/runtime.hpp"

namespace goro::tls {

namespace {

constexpr int kRead = 1;
constexpr int kWrite = 2;
// Writes of up to this much go out as one gathered write (writev copies
// into one buffer: OpenSSL has no gathering write, and one record per iovec
// would cost a syscall each).
constexpr std::size_t kGatherLimit = 64 << 10;
constexpr auto kCloseNotifyTimeout = std::chrono::seconds(5);
constexpr std::size_t kYieldEvery = 256 << 10;
// Step::ret when call()'s `would_block` answered WANT_READ without calling
// OpenSSL.
constexpr int kWouldBlock = -1000;

}  // namespace

struct Conn::Impl {
  net::Conn owned;           // the socket, when this Conn owns it
  net::Conn* raw = nullptr;  // the socket: &owned, or the HTTP server's
  net::NetFd* fd = nullptr;
  std::shared_ptr<const Context> ctx;  // the SSL_CTXs outlive the SSL
  SSL* ssl = nullptr;
  bool server = false;

  std::mutex mu;  // see "One OpenSSL call at a time"; guards what says (mu)
  // The BIO's state (mu).
  bool read_drained = false;  // the last read(2) was short or said EAGAIN
  bool after_wait = false;    // the read wait just returned: no poll_prepare
  bool eof = false;           // read(2) returned 0
  int last_errno = 0;         // of the BIO's last failed syscall
  std::array<char, 5> first{};
  std::uint8_t first_len = 0;
  // A goroutine is parked in that direction's wait (index kRead-1, kWrite-1) (mu).
  std::array<bool, 2> waiting{};
  bool fatal = false;               // an SSL or syscall error: no close_notify (mu)
  bool close_notify_sent = false;   // (mu)
  std::error_code handshake_error;  // (mu)
  // Set once the handshake completed, after `state` was filled (release);
  // readers of `state` load it first (acquire).
  std::atomic<bool> handshake_done{false};
  ConnectionState state;
  bool closed = false;  // close() ran (the owner's)
  std::string gather;   // writev's staging buffer (the writer's)
  // Bytes decrypted (the reader's) and encrypted (the writer's) since that
  // side last gave up its P. A stream whose bytes are always there never
  // parks, and 256 KiB of AES-GCM is a fraction of a millisecond: past
  // that, the side yields, so a fast upload or download cannot hold a P
  // (the HTTP body reader's rule).
  std::size_t read_since_yield = 0;
  std::size_t written_since_yield = 0;

  void count_and_yield(std::size_t& counter, std::size_t add) {
    counter += add;
    if (counter >= kYieldEvery) {
      counter = 0;
      goro::yield();
    }
  }

  ~Impl() {
    if (ssl != nullptr) SSL_free(ssl);  // frees the BIO too
  }

  struct Step {
    int ret = 0;
    int err = SSL_ERROR_NONE;
    std::error_code ec;  // for SSL_ERROR_SSL and SSL_ERROR_SYSCALL
  };

  // One OpenSSL call under mu, with the error queue empty before it and
  // left empty after it. ERR_clear_error walks the whole queue (16 slots):
  // at two calls per OpenSSL call it was a sixth of a keep-alive request's
  // TLS instructions, so it runs only when there is something to clear: a
  // peek before (someone else's leftovers on this thread), and after a
  // failed call, the one kind that queues errors.
  //
  // `would_block` (under mu) answers WANT_READ without the call and without
  // the peek, which costs a thread-local lookup in OpenSSL 3 (~200
  // instructions): a keep-alive read that finds the socket drained, once a
  // request.
  template <class F, class W = bool (*)()>
  Step call(
      F&& f, W&& would_block = [] { return false; }) {
    goro::detail::ThreadLockGuard lock(mu);
    Step s;
    if (would_block()) {
      s.ret = kWouldBlock;
      s.err = SSL_ERROR_WANT_READ;
      return s;
    }
    if (ERR_peek_error() != 0) ERR_clear_error();
    last_errno = 0;
    s.ret = f();
    if (s.ret <= 0) {
      s.err = SSL_get_error(ssl, s.ret);
      if (s.err == SSL_ERROR_SSL || s.err == SSL_ERROR_SYSCALL) {
        fatal = true;
        // SYSCALL with an empty queue: the BIO's errno, or 0 for an EOF.
        const std::error_code sys = last_errno != 0
                                        ? std::error_code(last_errno, std::system_category())
                                        : std::error_code();
        s.ec = detail::openssl_error(sys);
      }
      ERR_clear_error();
    }
    return s;
  }

  // Parks until the socket is ready in `dir` (see "Parking").
  std::error_code wait(int dir) {
    bool mine = false;
    {
      goro::detail::ThreadLockGuard lock(mu);
      if (!waiting[dir - 1]) mine = waiting[dir - 1] = true;
    }
    if (!mine) {
      goro::sleep_for(std::chrono::milliseconds(1));
      return fd->check(dir);
    }
    const std::error_code ec = fd->wait(dir);
    goro::detail::ThreadLockGuard lock(mu);
    waiting[dir - 1] = false;
    if (dir == kRead) {
      read_drained = false;
      after_wait = true;
    }
    return ec;
  }

  // Drives an SSL call that returns 1 on success to completion, parking on
  // WANT_READ/WANT_WRITE. Returns the final Step (ret 1, or an error).
  template <class F, class W = bool (*)()>
  Step drive(
      F&& f, W&& would_block = [] { return false; }) {
    for (;;) {
      Step s = call(f, would_block);
      if (s.ret == 1) return s;
      int dir = 0;
      if (s.err == SSL_ERROR_WANT_READ) dir = kRead;
      if (s.err == SSL_ERROR_WANT_WRITE) dir = kWrite;
      if (dir == 0) return s;
      if (std::error_code ec = wait(dir)) {
        s.ec = ec;
        s.err = SSL_ERROR_SYSCALL;
        return s;
      }
    }
  }

  bool looks_like_http() {
    goro::detail::ThreadLockGuard lock(mu);
    if (first_len < first.size()) return false;
    const std::string_view h(first.data(), first.size());
    return h == "GET /" || h == "HEAD " || h == "POST " || h == "PUT /" || h == "OPTIO";
  }

  void fill_state();
  // A close_notify if it goes out at once (never parks).
  void try_close_notify();
};

namespace {

// ---- the BIO (see "The BIO") ----

Conn::Impl* bio_conn(BIO* b) {
  return static_cast<Conn::Impl*>(BIO_get_data(b));
}

int bio_read(BIO* b, char* out, int len) {
  Conn::Impl* c = bio_conn(b);
  BIO_clear_retry_flags(b);
  if (len <= 0) return 0;
  if (c->read_drained) {
    BIO_set_retry_read(b);
    return -1;
  }
  if (!c->after_wait) c->fd->prepare_read();
  c->after_wait = false;
  for (;;) {
    const long r = ::syscall(SYS_read, c->fd->sysfd(), out, static_cast<std::size_t>(len));
    if (r > 0) {
      while (c->first_len < c->first.size() && c->first_len < r) {
        c->first[c->first_len] = out[c->first_len];
        ++c->first_len;
      }
      if (r < len && !c->fd->hangup_seen()) c->read_drained = true;
      return static_cast<int>(r);
    }
    if (r == 0) {
      c->eof = true;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      c->read_drained = true;
      BIO_set_retry_read(b);
      return -1;
    }
    c->last_errno = errno;
    return -1;
  }
}

int bio_write(BIO* b, const char* in, int len) {
  Conn::Impl* c = bio_conn(b);
  BIO_clear_retry_flags(b);
  for (;;) {
    const long w = ::syscall(SYS_sendto, c->fd->sysfd(), in, static_cast<std::size_t>(len),
                             MSG_NOSIGNAL, nullptr, 0);
    if (w >= 0) return static_cast<int>(w);
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      BIO_set_retry_write(b);
      return -1;
    }
    c->last_errno = errno;
    return -1;
  }
}

long bio_ctrl(BIO* b, int cmd, long /*num*/, void* /*ptr*/) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_EOF:
      return bio_conn(b)->eof ? 1 : 0;
    default:
      return 0;
  }
}

int bio_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

int bio_destroy(BIO* /*b*/) {
  return 1;  // the data is the Conn's
}

BIO_METHOD* bio_method() {
  static BIO_METHOD* m = [] {  // never freed
    BIO_METHOD* meth = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "goro socket");
    if (meth == nullptr) return meth;
    BIO_meth_set_write(meth, bio_write);
    BIO_meth_set_read(meth, bio_read);
    BIO_meth_set_ctrl(meth, bio_ctrl);
    BIO_meth_set_create(meth, bio_create);
    BIO_meth_set_destroy(meth, bio_destroy);
    return meth;
  }();
  return m;
}

bool is_ip_literal(std::string_view host) {
  if (host.find(':') != std::string_view::npos) return true;  // IPv6
  return !host.empty() && std::all_of(host.begin(), host.end(), [](char ch) {
    return (ch >= '0' && ch <= '9') || ch == '.';
  });
}

std::string name_string(X509_NAME* name) {
  BIO* b = BIO_new(BIO_s_mem());
  if (b == nullptr) return {};
  X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  std::string s(data, n > 0 ? static_cast<std::size_t>(n) : 0);
  BIO_free(b);
  return s;
}

// A new Impl speaking TLS on `raw` (SSL object and BIO made; `err` set when
// OpenSSL could not make them).
std::unique_ptr<Conn::Impl> make_impl(std::shared_ptr<const Context> ctx, bool server) {
  auto c = std::make_unique<Conn::Impl>();
  c->ctx = std::move(ctx);
  c->server = server;
  if (!c->ctx || c->ctx->impl().ctxs.empty() || c->ctx->is_server() != server) {
    c->handshake_error = make_error_code(errc::no_connection);
    return c;
  }
  ERR_clear_error();
  c->ssl = SSL_new(c->ctx->impl().ctxs[0]);
  BIO* bio = c->ssl != nullptr && bio_method() != nullptr ? BIO_new(bio_method()) : nullptr;
  if (bio == nullptr) {
    c->handshake_error = detail::openssl_error(std::make_error_code(std::errc::not_enough_memory));
    ERR_clear_error();
    return c;
  }
  BIO_set_data(bio, c.get());
  SSL_set_bio(c->ssl, bio, bio);
  if (server) {
    SSL_set_accept_state(c->ssl);
  } else {
    SSL_set_connect_state(c->ssl);
  }
  return c;
}

void attach(Conn::Impl* c, net::Conn* raw) {
  c->raw = raw;
  c->fd = goro::detail::NetConnAccess::netfd(*raw);
  if (c->fd == nullptr && !c->handshake_error)
    c->handshake_error = make_error_code(errc::no_connection);
}

}  // namespace

void Conn::Impl::fill_state() {
  state.handshake_complete = true;
  state.version = SSL_version(ssl) == TLS1_3_VERSION ? Version::tls13 : Version::tls12;
  if (const char* cipher = SSL_get_cipher_name(ssl)) state.cipher = cipher;
  const unsigned char* proto = nullptr;
  unsigned int proto_len = 0;
  SSL_get0_alpn_selected(ssl, &proto, &proto_len);
  state.alpn.assign(reinterpret_cast<const char*>(proto), proto_len);
  if (const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name)) state.server_name = sni;
  state.resumed = SSL_session_reused(ssl) == 1;
  if (X509* peer = SSL_get0_peer_certificate(ssl)) {
    state.peer_certificate = true;
    state.peer_verified = SSL_get_verify_result(ssl) == X509_V_OK;
    state.peer_subject = name_string(X509_get_subject_name(peer));
    char cn[256];
    const int n =
        X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
    if (n > 0) state.peer_common_name.assign(cn, static_cast<std::size_t>(n));
  }
}

// ---- ConnAccess: the HTTP server's borrowed-socket Conn ----

struct ConnAccess {
  static Conn make(std::unique_ptr<Conn::Impl> impl) { return Conn(std::move(impl)); }
  static Conn::Impl* impl(Conn& c) { return c.impl_.get(); }
};

namespace detail {

Conn server_over(net::Conn& raw, std::shared_ptr<const Context> ctx) {
  std::unique_ptr<Conn::Impl> c = make_impl(std::move(ctx), true);
  attach(c.get(), &raw);
  return ConnAccess::make(std::move(c));
}

}  // namespace detail

// ---- Conn ----

Conn::Conn() = default;
Conn::Conn(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Conn::Conn(Conn&&) noexcept = default;
Conn& Conn::operator=(Conn&& o) noexcept {
  if (this != &o) {
    if (impl_ && impl_->raw == &impl_->owned && !impl_->closed) (void)close();
    impl_ = std::move(o.impl_);
  }
  return *this;
}

void Conn::Impl::try_close_notify() {
  if (!handshake_done.load(std::memory_order_acquire) || fd == nullptr) return;
  net::NetFd::Ref ref(fd);
  if (!ref.ok()) return;
  goro::detail::ThreadLockGuard lock(mu);
  if (fatal || close_notify_sent) return;
  close_notify_sent = true;
  ERR_clear_error();
  (void)SSL_shutdown(ssl);  // WANT_WRITE: the alert stays unsent
  ERR_clear_error();
}

namespace detail {

void close_notify_now(Conn& c) {
  if (Conn::Impl* impl = ConnAccess::impl(c)) impl->try_close_notify();
}

void keep_buffers(Conn& c) {
  Conn::Impl* impl = ConnAccess::impl(c);
  if (impl == nullptr || impl->ssl == nullptr) return;
  goro::detail::ThreadLockGuard lock(impl->mu);
  SSL_clear_mode(impl->ssl, SSL_MODE_RELEASE_BUFFERS);
}

void expect_wait(Conn& c) {
  Conn::Impl* impl = ConnAccess::impl(c);
  if (impl == nullptr) return;
  goro::detail::ThreadLockGuard lock(impl->mu);
  impl->read_drained = true;
  impl->after_wait = false;
}

bool release_buffers(Conn& c) {
  Conn::Impl* impl = ConnAccess::impl(c);
  if (impl == nullptr || impl->ssl == nullptr) return false;
  // Under mu: never inside another OpenSSL call on this connection. Its
  // owner is parked (or will take mu before its next call).
  goro::detail::ThreadLockGuard lock(impl->mu);
  return SSL_free_buffers(impl->ssl) == 1;
}

}  // namespace detail

Conn::~Conn() {
  if (!impl_ || impl_->raw != &impl_->owned || impl_->closed) return;
  impl_->try_close_notify();  // a destructor does not park
  (void)impl_->owned.close();
}

Conn Conn::server(net::Conn conn, std::shared_ptr<const Context> ctx) {
  std::unique_ptr<Impl> c = make_impl(std::move(ctx), true);
  c->owned = std::move(conn);
  attach(c.get(), &c->owned);
  return Conn(std::move(c));
}

Conn Conn::client(net::Conn conn, std::shared_ptr<const Context> ctx,
                  std::string_view server_name) {
  std::unique_ptr<Impl> c = make_impl(std::move(ctx), false);
  c->owned = std::move(conn);
  attach(c.get(), &c->owned);
  if (c->ssl == nullptr) return Conn(std::move(c));
  const std::string name(server_name);
  if (!name.empty() && !is_ip_literal(name)) SSL_set_tlsext_host_name(c->ssl, name.c_str());
  if (c->ctx->impl().verify_peer) {
    X509_VERIFY_PARAM* param = SSL_get0_param(c->ssl);
    int ok = 0;
    if (name.empty()) {
      ok = 0;  // nothing to verify the certificate against
    } else if (is_ip_literal(name)) {
      ok = X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
    } else {
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      ok = X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
    }
    if (ok != 1) {
      ERR_clear_error();
      c->handshake_error = std::make_error_code(std::errc::invalid_argument);
    }
  }
  return Conn(std::move(c));
}

Result<void> Conn::handshake() {
  Impl* c = impl_.get();
  if (c == nullptr) return make_error_code(errc::no_connection);
  if (c->handshake_done.load(std::memory_order_acquire)) return {};
  {
    goro::detail::ThreadLockGuard lock(c->mu);
    if (c->handshake_error) return c->handshake_error;
  }
  net::NetFd::Ref ref(c->fd);
  if (!ref.ok()) return goro::errc::closed;
  std::error_code ec = c->fd->check(kRead);
  Impl::Step s;
  if (!ec) {
    s = c->drive([c] { return SSL_do_handshake(c->ssl); });
    if (s.ret == 1) {
      goro::detail::ThreadLockGuard lock(c->mu);
      if (!c->handshake_done.load(std::memory_order_relaxed)) {
        c->fill_state();
        if (c->server) {
          detail::Counters& k = detail::counters();
          (c->state.resumed ? k.resumed : k.full).fetch_add(1, std::memory_order_relaxed);
          (c->state.version == Version::tls13 ? k.tls13 : k.tls12)
              .fetch_add(1, std::memory_order_relaxed);
        }
        c->handshake_done.store(true, std::memory_order_release);
      }
      return {};
    }
    ec = s.ec;
  }
  if (c->looks_like_http()) {
    ec = make_error_code(errc::http_request);
  } else if (!ec) {
    ec = make_error_code(errc::handshake_eof);  // SYSCALL with no errno: EOF
  }
  goro::detail::ThreadLockGuard lock(c->mu);
  if (!c->handshake_error) {
    c->handshake_error = ec;
    // A timeout or a close by this side is not a verdict on the peer's
    // handshake, but it did not complete either: counted as failed.
    if (c->server) detail::counters().failed.fetch_add(1, std::memory_order_relaxed);
  }
  return c->handshake_error;
}

Result<std::size_t> Conn::read(std::span<std::byte> buf) {
  return read(std::span<char>(reinterpret_cast<char*>(buf.data()), buf.size()));
}

Result<std::size_t> Conn::read(std::span<char> buf) {
  Impl* c = impl_.get();
  if (c == nullptr) return make_error_code(errc::no_connection);
  if (!c->handshake_done.load(std::memory_order_acquire)) {
    if (auto r = handshake(); !r) return r.error();
  }
  net::NetFd::Ref ref(c->fd);
  if (!ref.ok()) return goro::errc::closed;
  if (buf.empty()) return std::size_t{0};
  // Deadlines and close win over buffered data, as net::Conn's.
  if (std::error_code ec = c->fd->check(kRead)) return ec;
  std::size_t n = 0;
  const Impl::Step s = c->drive([&] { return SSL_read_ex(c->ssl, buf.data(), buf.size(), &n); },
                                // The socket was drained (a short read or EAGAIN
                                // since the last wait) and OpenSSL holds no
                                // byte, decrypted or not: an SSL_read could only
                                // say WANT_READ, so the read parks without it.
                                [c] { return c->read_drained && SSL_has_pending(c->ssl) == 0; });
  if (s.ret == 1) {
    c->count_and_yield(c->read_since_yield, n);
    return n;
  }
  if (s.err == SSL_ERROR_ZERO_RETURN) return std::size_t{0};
  if (s.err == SSL_ERROR_SYSCALL && !s.ec) return std::size_t{0};  // EOF
  return s.ec ? s.ec : std::make_error_code(std::errc::io_error);
}

Result<std::size_t> Conn::write(std::string_view s) {
  return write(std::span<const std::byte>(reinterpret_cast<const std::byte*>(s.data()), s.size()));
}

Result<std::size_t> Conn::write(std::span<const std::byte> buf) {
  Impl* c = impl_.get();
  if (c == nullptr) return make_error_code(errc::no_connection);
  if (!c->handshake_done.load(std::memory_order_acquire)) {
    if (auto r = handshake(); !r) return r.error();
  }
  net::NetFd::Ref ref(c->fd);
  if (!ref.ok()) return goro::errc::closed;
  if (std::error_code ec = c->fd->check(kWrite)) return ec;
  std::size_t done = 0;
  while (done < buf.size()) {
    c->count_and_yield(c->written_since_yield, 0);
    std::size_t n = 0;
    // Partial-write mode: each call returns after a record, so a big write
    // lets a reader in between records.
    const Impl::Step s =
        c->drive([&] { return SSL_write_ex(c->ssl, buf.data() + done, buf.size() - done, &n); });
    if (s.ret != 1) return s.ec ? s.ec : std::make_error_code(std::errc::broken_pipe);
    done += n;
    c->written_since_yield += n;
  }
  return buf.size();
}

Result<std::size_t> Conn::writev(std::span<const iovec> bufs) {
  Impl* c = impl_.get();
  if (c == nullptr) return make_error_code(errc::no_connection);
  std::size_t total = 0;
  for (const iovec& b : bufs)
    total += b.iov_len;
  auto bytes = [](const iovec& b) {
    return std::span<const std::byte>(static_cast<const std::byte*>(b.iov_base), b.iov_len);
  };
  if (bufs.size() == 1) return write(bytes(bufs[0]));
  // Small buffers share records: gathered into one, up to kGatherLimit, and
  // each buffer over it goes out as it is.
  std::string& g = c->gather;
  g.clear();
  for (const iovec& b : bufs) {
    if (b.iov_len >= kGatherLimit) {
      if (!g.empty()) {
        if (auto r = write(g); !r) return r.error();
        g.clear();
      }
      if (auto r = write(bytes(b)); !r) return r.error();
      continue;
    }
    if (g.size() + b.iov_len > kGatherLimit) {
      if (auto r = write(g); !r) return r.error();
      g.clear();
    }
    g.append(static_cast<const char*>(b.iov_base), b.iov_len);
  }
  if (!g.empty()) {
    if (auto r = write(g); !r) return r.error();
  }
  // What a busy spell grew goes back (the writer may idle for long).
  if (g.capacity() > kGatherLimit) std::string().swap(g);
  return total;
}

Result<void> Conn::close_write() {
  Impl* c = impl_.get();
  if (c == nullptr) return make_error_code(errc::no_connection);
  net::NetFd::Ref ref(c->fd);
  if (!ref.ok()) return goro::errc::closed;
  bool send = false;
  {
    goro::detail::ThreadLockGuard lock(c->mu);
    send = c->handshake_done.load(std::memory_order_relaxed) && !c->fatal && !c->close_notify_sent;
    c->close_notify_sent = true;
  }
  if (send) {
    // SSL_shutdown: 0 once our close_notify is out (the peer's is not
    // awaited), 1 if the peer's had come already; both will do.
    for (;;) {
      const Impl::Step s = c->call([c] { return SSL_shutdown(c->ssl) >= 0 ? 1 : -1; });
      if (s.ret == 1) break;
      if (s.err != SSL_ERROR_WANT_WRITE || c->wait(kWrite)) break;
    }
  }
  return c->raw->close_write();
}

Result<void> Conn::close() {
  Impl* c = impl_.get();
  if (c == nullptr) return make_error_code(errc::no_connection);
  if (c->closed) return goro::errc::closed;
  c->closed = true;
  if (c->handshake_done.load(std::memory_order_acquire)) {
    (void)c->raw->set_write_deadline(kCloseNotifyTimeout);
    {
      net::NetFd::Ref ref(c->fd);
      if (ref.ok()) {
        bool send = false;
        {
          goro::detail::ThreadLockGuard lock(c->mu);
          send = !c->fatal && !c->close_notify_sent;
          c->close_notify_sent = true;
        }
        for (bool again = send; again;) {
          const Impl::Step s = c->call([c] { return SSL_shutdown(c->ssl) >= 0 ? 1 : -1; });
          again = s.ret != 1 && s.err == SSL_ERROR_WANT_WRITE && !c->wait(kWrite);
        }
      }
    }
  }
  return c->raw->close();
}

Result<void> Conn::set_deadline(net::Clock::time_point t) {
  if (!impl_) return make_error_code(errc::no_connection);
  return impl_->raw->set_deadline(t);
}
Result<void> Conn::set_read_deadline(net::Clock::time_point t) {
  if (!impl_) return make_error_code(errc::no_connection);
  return impl_->raw->set_read_deadline(t);
}
Result<void> Conn::set_write_deadline(net::Clock::time_point t) {
  if (!impl_) return make_error_code(errc::no_connection);
  return impl_->raw->set_write_deadline(t);
}
Result<void> Conn::set_deadline(std::chrono::nanoseconds from_now) {
  if (!impl_) return make_error_code(errc::no_connection);
  return impl_->raw->set_deadline(from_now);
}

const ConnectionState& Conn::state() const {
  static const ConnectionState none;
  if (!impl_ || !impl_->handshake_done.load(std::memory_order_acquire)) return none;
  return impl_->state;
}

net::Addr Conn::local_addr() const {
  return impl_ ? impl_->raw->local_addr() : net::Addr();
}
net::Addr Conn::remote_addr() const {
  return impl_ ? impl_->raw->remote_addr() : net::Addr();
}
net::Conn& Conn::net_conn() {
  static net::Conn none;
  return impl_ ? *impl_->raw : none;
}

}  // namespace goro::tls
