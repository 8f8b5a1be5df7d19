// <goro/tls.hpp>: TLS 1.2 and 1.3 over goro::net connections, on OpenSSL 3
// (docs/DESIGN.md "TLS").
//
// Example (a TLS echo server):
//   auto ctx = goro::tls::Context::server({.certificates = {{.cert_file = "cert.pem",
//                                                            .key_file = "key.pem"}}});
//   if (!ctx) { std::fprintf(stderr, "%s\n", ctx.error.c_str()); return 1; }
//   auto ln = goro::net::listen("tcp", "127.0.0.1:8443");
//   for (;;) {
//     auto c = ln->accept();
//     if (!c) break;
//     goro::go([conn = goro::tls::Conn::server(std::move(*c), ctx.context)]() mutable {
//       char buf[4096];
//       while (auto n = conn.read(std::span<char>(buf))) {   // handshakes first
//         if (*n == 0 || !conn.write(std::string_view(buf, *n))) break;
//       }
//     });
//   }
//
// And a client: goro::tls::dial("tcp", "example.com:443", client_ctx) verifies
// the certificate against the system trust store (or Config::ca_file) and
// the host name, and sends SNI.
//
// A Conn behaves as goro::net::Conn does: every call that would block parks
// the goroutine (OpenSSL runs on non-blocking sockets and never blocks a
// thread); one goroutine may read while another writes; deadlines are the
// socket's. read() returns 0 at the end of the stream: after the peer's
// close_notify, and also when the peer closes the TCP connection without one
// (OpenSSL's SSL_OP_IGNORE_UNEXPECTED_EOF, as browsers and Go's HTTP client
// tolerate it): a protocol that must tell a cut stream from a whole one
// frames its messages (HTTP does, with Content-Length and chunks).
//
// Errors are goro::Result values: the socket's (errc::timeout, errc::closed,
// errno), tls::errc below, or OpenSSL's own in tls::openssl_category(),
// whose message() is OpenSSL's ("SSL routines::certificate verify failed").
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "goro/net.hpp"
#include "goro/result.hpp"

namespace goro::tls {

// Conditions of the TLS layer that OpenSSL has no code for (category "goro.tls").
enum class errc {
  // The first bytes on a server connection were a plaintext HTTP request
  // (Go's rule: they start with "GET /", "HEAD ", "POST ", "PUT /" or
  // "OPTIO"). goro's HTTP server answers it with a plaintext 400, as Go does.
  http_request = 1,
  // The peer closed the connection before the handshake completed.
  handshake_eof,
  // A Conn that was default-constructed or moved from.
  no_connection,
  // A Config a Context could not be built from (the ContextResult, or the
  // server's log, says why).
  bad_config,
};
const std::error_category& tls_category() noexcept;
// OpenSSL's packed error codes (ERR_get_error()), message() from OpenSSL.
const std::error_category& openssl_category() noexcept;
inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), tls_category()};
}

}  // namespace goro::tls

template <>
struct std::is_error_code_enum<goro::tls::errc> : std::true_type {};

namespace goro::tls {

enum class Version : std::uint16_t { tls12 = 0x0303, tls13 = 0x0304 };
std::string_view to_string(Version v);  // "TLSv1.2", "TLSv1.3"

// A certificate chain and its private key, from files or from PEM text.
struct Certificate {
  std::string cert_file = {};  // PEM: the leaf first, then its intermediates
  std::string key_file = {};   // PEM private key (RSA, EC, Ed25519), unencrypted
  std::string cert_pem = {};   // instead of cert_file: the PEM text itself
  std::string key_pem = {};    // instead of key_file
};

enum class ClientAuth : std::uint8_t {
  none,             // no client certificate is asked for
  verify_if_given,  // asked for; one that is sent must verify against client_ca
  require,          // one that verifies against client_ca is required (mutual TLS)
};

// Everything a Context is built from. One struct serves both sides; each
// field says which side reads it.
struct Config {
  // Server: the certificates to present, chosen per connection by the
  // client's SNI against each leaf's DNS names (subjectAltName, else the
  // common name; "*.example.com" matches one label), the first one when
  // nothing matches or no SNI was sent (as Go). Client: at most one, sent
  // when the server asks for a client certificate.
  std::vector<Certificate> certificates = {};
  // Both: the versions spoken. Nothing older than TLS 1.2 is ever offered
  // or accepted.
  Version min_version = Version::tls12;
  Version max_version = Version::tls13;
  // Both: TLS 1.2 cipher suites in OpenSSL's cipher-list syntax; empty:
  // ECDHE key exchange with AES-GCM or ChaCha20-Poly1305 only (forward
  // secrecy and AEAD, Mozilla's "intermediate" list). TLS 1.3's suites are
  // OpenSSL's defaults, all AEAD.
  std::string ciphers_tls12 = {};
  // Both: application protocols (ALPN), most preferred first. Server: the
  // first of these the client offers is chosen; a client that offers ALPN
  // but none of these is refused (no_application_protocol alert, as Go
  // since 1.17); a client that offers none proceeds without. Client: offered.
  std::vector<std::string> alpn = {};

  // Server: session resumption. TLS 1.3 and 1.2 session tickets, encrypted
  // with keys that rotate every ticket_key_rotation (a ticket keeps
  // resuming for session_timeout after its key stops being current), and a
  // cache of session ids for TLS 1.2 clients without tickets.
  bool session_tickets = true;
  std::chrono::seconds session_timeout = std::chrono::hours(2);
  std::chrono::seconds ticket_key_rotation = std::chrono::hours(24);
  std::size_t session_cache_size = 20480;  // 0: no session-id cache

  // Server: client certificates (mutual TLS), verified against the CA
  // certificates in client_ca_file or client_ca_pem.
  ClientAuth client_auth = ClientAuth::none;
  std::string client_ca_file = {};
  std::string client_ca_pem = {};

  // Client: the trust anchors for the server's certificate (PEM); both
  // empty: the system's store (/etc/ssl/certs).
  std::string ca_file = {};
  std::string ca_pem = {};
  // Client: accept any certificate and any name. For tests only.
  bool insecure_skip_verify = false;
};

class Context;

// What Context::server/client built: the context, or why not, in words
// naming the input ("certificate 1 key_file key.pem: No such file or
// directory").
struct ContextResult {
  std::shared_ptr<const Context> context;  // null on failure
  std::string error;
  explicit operator bool() const { return context != nullptr; }
};

// A compiled Config (OpenSSL's SSL_CTX, one per server certificate),
// immutable and shared by every connection made with it. Building one reads
// files with plain blocking I/O and parses keys: do it before serving, or
// inside goro::blocking (goro::http::Server::reload_tls does).
class Context {
 public:
  // `previous`: a server context this one replaces (a certificate reload):
  // its session-ticket keys carry over, so tickets issued before the reload
  // still resume.
  static ContextResult server(const Config& cfg,
                              const std::shared_ptr<const Context>& previous = {});
  static ContextResult client(const Config& cfg);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  bool is_server() const;
  // Server: the DNS names of each certificate, in Config order.
  std::vector<std::vector<std::string>> certificate_names() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Context(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// What a completed handshake settled (Go's tls.ConnectionState).
struct ConnectionState {
  bool handshake_complete = false;
  Version version = Version::tls12;
  std::string cipher;       // OpenSSL's name: "TLS_AES_128_GCM_SHA256"
  std::string alpn;         // the protocol chosen; "" if none
  std::string server_name;  // the SNI the client sent; "" if none
  bool resumed = false;     // an abbreviated handshake (session or ticket)
  // The peer's certificate, if it sent one (server: mutual TLS), and
  // whether it verified (always true for a client with verification on:
  // the handshake fails otherwise).
  bool peer_certificate = false;
  bool peer_verified = false;
  std::string peer_subject;      // RFC 2253: "CN=client,O=Example"
  std::string peer_common_name;  // "client"
};

// A TLS connection over a goro::net::Conn. The handshake runs on the first
// read or write, or explicitly with handshake().
class Conn {
 public:
  Conn();
  // Takes `conn` and speaks TLS on it as the server (ctx from
  // Context::server) or the client (ctx from Context::client).
  // server_name: the name the client verifies the certificate against (a
  // host name or an IP address) and sends as SNI (a host name only); it
  // may be empty only with insecure_skip_verify.
  static Conn server(net::Conn conn, std::shared_ptr<const Context> ctx);
  static Conn client(net::Conn conn, std::shared_ptr<const Context> ctx,
                     std::string_view server_name);
  Conn(Conn&&) noexcept;
  Conn& operator=(Conn&&) noexcept;
  // Closes: a close_notify if it can go out without waiting, then the socket.
  ~Conn();

  bool valid() const { return impl_ != nullptr; }

  // Runs the handshake if it has not run (a no-op after it completed; its
  // error again after it failed). Bounded by the socket's deadlines.
  Result<void> handshake();
  // Up to buf.size() bytes of application data; 0 at the end of the stream.
  Result<std::size_t> read(std::span<char> buf);
  Result<std::size_t> read(std::span<std::byte> buf);
  // Writes all of it (in records of up to 16 KiB) or fails.
  Result<std::size_t> write(std::string_view s);
  Result<std::size_t> write(std::span<const std::byte> buf);
  // Writes every buffer; small ones are gathered into shared records.
  Result<std::size_t> writev(std::span<const iovec> bufs);
  // Sends close_notify and shuts down the sending side (Go's CloseWrite);
  // the peer reads the end of the stream, and this side may still read.
  Result<void> close_write();
  // Sends close_notify (waiting at most 5 s for it to go out, as Go) and
  // closes the socket. A second close returns errc::closed.
  Result<void> close();

  // The socket's deadlines (net::Conn's contract), which also bound the
  // handshake.
  Result<void> set_deadline(net::Clock::time_point t);
  Result<void> set_read_deadline(net::Clock::time_point t);
  Result<void> set_write_deadline(net::Clock::time_point t);
  Result<void> set_deadline(std::chrono::nanoseconds from_now);

  // After the handshake; handshake_complete is false before.
  const ConnectionState& state() const;
  net::Addr local_addr() const;
  net::Addr remote_addr() const;
  net::Conn& net_conn();

  struct Impl;

 private:
  explicit Conn(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend struct ConnAccess;
};

// Dials `address` (net::dial's syntax and happy eyeballs) and runs the
// handshake as a client, all within `timeout` (0: none). The server name
// sent and verified is the address's host.
Result<Conn> dial(std::string_view network, std::string_view address,
                  std::shared_ptr<const Context> ctx,
                  std::chrono::nanoseconds timeout = std::chrono::nanoseconds{0});

// Handshake and connection counters of every server-side Conn in the
// process (the HTTP server's /metrics shows them).
struct Stats {
  std::uint64_t handshakes_full = 0;
  std::uint64_t handshakes_resumed = 0;
  std::uint64_t handshakes_failed = 0;
  std::uint64_t tls12 = 0;  // completed handshakes by version
  std::uint64_t tls13 = 0;
};
Stats stats();

}  // namespace goro::tls
