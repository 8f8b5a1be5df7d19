// The TLS layer's error categories, version names and process counters.
#include <openssl/err.h>

#include <fmt/format.h>

#include <string>

#include "framework/tls/tls_impl.hpp"

namespace goro::tls {

namespace {

class TlsCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "goro.tls"; }
  std::string message(int c) const override {
    switch (static_cast<errc>(c)) {
      case errc::http_request:
        return "client sent an HTTP request to a TLS server";
      case errc::handshake_eof:
        return "connection closed during the TLS handshake";
      case errc::no_connection:
        return "no TLS connection";
      case errc::bad_config:
        return "invalid TLS configuration";
    }
    return "unknown TLS error";
  }
};

// Codes are OpenSSL 3's packed errors (library << 23 | reason), which fit
// in a positive int; system errors never get here (they are errno's).
class OpensslCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "openssl"; }
  std::string message(int c) const override {
    const auto e = static_cast<unsigned long>(c);
    const char* lib = ERR_lib_error_string(e);
    const char* reason = ERR_reason_error_string(e);
    if (reason == nullptr) {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof buf);
      return buf;
    }
    return lib != nullptr ? fmt::format("{}: {}", lib, reason) : std::string(reason);
  }
};

}  // namespace

const std::error_category& tls_category() noexcept {
  static const TlsCategory c;
  return c;
}

const std::error_category& openssl_category() noexcept {
  static const OpensslCategory c;
  return c;
}

std::string_view to_string(Version v) {
  return v == Version::tls13 ? "TLSv1.3" : "TLSv1.2";
}

Stats stats() {
  const detail::Counters& c = detail::counters();
  Stats s;
  s.handshakes_full = c.full.load(std::memory_order_relaxed);
  s.handshakes_resumed = c.resumed.load(std::memory_order_relaxed);
  s.handshakes_failed = c.failed.load(std::memory_order_relaxed);
  s.tls12 = c.tls12.load(std::memory_order_relaxed);
  s.tls13 = c.tls13.load(std::memory_order_relaxed);
  return s;
}

namespace detail {

Counters& counters() {
  static Counters c;
  return c;
}

std::error_code openssl_error(std::error_code fallback) {
  const unsigned long e = ERR_peek_error();
  if (e == 0) return fallback;
  if (ERR_SYSTEM_ERROR(e)) return {static_cast<int>(ERR_GET_REASON(e)), std::system_category()};
  return {static_cast<int>(e & 0x7fffffffUL), openssl_category()};
}

}  // namespace detail

}  // namespace goro::tls
