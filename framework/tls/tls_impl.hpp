// The insides of goro::tls (include/goro/tls.hpp) that its files, and the
// HTTP server's connection loop, share. Not installed.
#pragma once

#include <openssl/ssl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "goro/tls.hpp"

namespace goro::tls::detail {

// Session-ticket keys (context.cpp, "Ticket keys"): the newest encrypts, the
// others still decrypt until their time is up. Shared by every SSL_CTX of a
// Context and handed on to the Context that replaces it at a reload.
class TicketKeys {
 public:
  TicketKeys(std::chrono::seconds rotation, std::chrono::seconds lifetime)
      : rotation_(rotation), lifetime_(lifetime) {}

  struct Key {
    std::array<unsigned char, 16> name{};
    std::array<unsigned char, 32> aes{};   // AES-256-CBC
    std::array<unsigned char, 32> hmac{};  // HMAC-SHA256
    std::chrono::steady_clock::time_point created;
  };

  // The key that encrypts new tickets (rotating first if it is due); false
  // if no randomness was available.
  bool current(Key* out);
  // The key named `name`, if it may still decrypt; *is_current says whether
  // it is the newest (else the ticket is renewed under the newest).
  bool find(const unsigned char* name, Key* out, bool* is_current);

 private:
  bool rotate_locked(std::chrono::steady_clock::time_point now);

  const std::chrono::seconds rotation_;
  const std::chrono::seconds lifetime_;
  std::mutex mu_;
  std::vector<Key> keys_;  // newest first; guarded by mu_
};

}  // namespace goro::tls::detail

namespace goro::tls {

struct Context::Impl {
  bool server = false;
  // One SSL_CTX per certificate (server), all configured alike; ctxs[0] is
  // the default and the one every connection starts on. A client has one.
  std::vector<SSL_CTX*> ctxs;
  // The DNS names of each certificate (server), lower-case.
  std::vector<std::vector<std::string>> names;
  // ALPN in wire format ("\x08http/1.1..."), as configured.
  std::string alpn_wire;
  std::shared_ptr<detail::TicketKeys> tickets;  // null when tickets are off
  bool verify_peer = false;                     // client: verify the server's certificate

  ~Impl();
  // The SSL_CTX for SNI `name` (server; ctxs[0] when nothing matches).
  SSL_CTX* ctx_for_name(std::string_view name) const;
};

}  // namespace goro::tls

namespace goro::tls::detail {

// Handshake counters (Stats), bumped by server-side handshakes.
struct Counters {
  std::atomic<std::uint64_t> full{0};
  std::atomic<std::uint64_t> resumed{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<std::uint64_t> tls12{0};
  std::atomic<std::uint64_t> tls13{0};
};
Counters& counters();

// The HTTP server's doorway: a server Conn over a socket the caller keeps
// owning (its registry closes it). The Conn never closes `raw`; it must not
// outlive it.
Conn server_over(net::Conn& raw, std::shared_ptr<const Context> ctx);

// OpenSSL's read and write buffers (34 KiB while a connection is busy). A
// Conn gives them back after each record by default
// (SSL_MODE_RELEASE_BUFFERS: an allocation and a free per record);
// keep_buffers() turns that off for a connection whose owner releases them
// itself once it has been idle a while, with release_buffers() (any
// goroutine; false when OpenSSL still holds unread bytes, which keeps them).
void keep_buffers(Conn& c);
// The connection's next read is to wait for the socket first (it was idle
// and drained): framework/http's release while idle, whose parked goroutine
// is woken by the very edge that read must then consume.
void expect_wait(Conn& c);
bool release_buffers(Conn& c);

// Sends a close_notify if it can go out without waiting (never parks; a
// no-op before the handshake completed, after a fatal error, or once sent).
void close_notify_now(Conn& c);

// OpenSSL's error for the current thread's queue (the earliest), or
// `fallback` when the queue is empty.
std::error_code openssl_error(std::error_code fallback);

}  // namespace goro::tls::detail
