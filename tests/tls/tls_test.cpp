// goro::tls over loopback: handshakes (1.2, 1.3), ALPN, SNI, verification,
// mutual TLS, resumption keys, bad peers (garbage, plaintext HTTP, a stall,
// a vanishing peer), close_notify, full duplex under 4 Ps, deadlines. Every
// test checks that no descriptor leaks; ASan checks the memory.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "framework/tls/tls_impl.hpp"
#include "goro/goro.hpp"
#include "goro/net.hpp"
#include "goro/sync.hpp"
#include "goro/tls.hpp"
#include "tests/net/net_test_util.hpp"
#include "tests/tls/test_pki.hpp"

using namespace std::chrono_literals;
namespace tls = goro::tls;
using goro_test::KeyPair;
using goro_test::TestPki;

namespace {

constexpr goro::Options kOpts{.maxprocs = 4};

TestPki& pki() {
  static TestPki p;
  return p;
}

const KeyPair& localhost_cert() {
  static KeyPair kp = pki().issue("localhost", "DNS:localhost,IP:127.0.0.1");
  return kp;
}

tls::Config server_config() {
  tls::Config c;
  c.certificates = {{.cert_pem = localhost_cert().cert_pem, .key_pem = localhost_cert().key_pem}};
  c.alpn = {"http/1.1"};
  return c;
}

tls::Config client_config() {
  tls::Config c;
  c.ca_pem = pki().ca().cert_pem;
  c.alpn = {"http/1.1"};
  return c;
}

std::shared_ptr<const tls::Context> must(const tls::ContextResult& r) {
  EXPECT_TRUE(r) << r.error;
  return r.context;
}

// Runs a server that accepts one connection and hands it, as a TLS server
// Conn, to `serve`; then `client(addr)` on the main goroutine. Checks fds.
void with_server(const std::shared_ptr<const tls::Context>& sctx,
                 const std::function<void(tls::Conn&)>& serve,
                 const std::function<void(const std::string& addr)>& client) {
  const int fds_before = goro_test::count_fds();
  goro::run(
      [&] {
        auto ln = goro::net::listen("tcp", "127.0.0.1:0");
        ASSERT_TRUE(ln) << ln.error().message();
        goro::WaitGroup wg;
        wg.add(1);
        goro::go([&] {
          auto c = ln->accept();
          if (c) {
            tls::Conn conn = tls::Conn::server(std::move(*c), sctx);
            serve(conn);
          }
          wg.done();
        });
        client(ln->addr().to_string());
        wg.wait();
        (void)ln->close();
      },
      kOpts);
  EXPECT_EQ(goro_test::count_fds(), fds_before) << "fd leak";
}

void echo_until_eof(tls::Conn& conn) {
  std::vector<char> buf(64 << 10);
  for (;;) {
    auto n = conn.read(std::span<char>(buf));
    if (!n || *n == 0) break;
    if (!conn.write(std::string_view(buf.data(), *n))) break;
  }
  (void)conn.close();
}

std::string read_exactly(tls::Conn& c, std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    auto r = c.read(std::span<char>(out.data() + got, n - got));
    if (!r || *r == 0) break;
    got += *r;
  }
  out.resize(got);
  return out;
}

TEST(Tls, HandshakeAndEchoOverTls13And12) {
  for (tls::Version v : {tls::Version::tls13, tls::Version::tls12}) {
    auto sctx = must(tls::Context::server(server_config()));
    tls::Config cc = client_config();
    cc.max_version = v;
    auto cctx = must(tls::Context::client(cc));
    with_server(sctx, echo_until_eof, [&](const std::string& addr) {
      auto c = tls::dial("tcp", addr, cctx, 5s);
      ASSERT_TRUE(c) << c.error().message();
      const tls::ConnectionState& st = c->state();
      EXPECT_TRUE(st.handshake_complete);
      EXPECT_EQ(st.version, v);
      EXPECT_EQ(st.alpn, "http/1.1");
      EXPECT_FALSE(st.resumed);
      EXPECT_FALSE(st.cipher.empty());
      const std::string msg(100000, 'x');
      ASSERT_TRUE(c->write(msg));
      EXPECT_EQ(read_exactly(*c, msg.size()), msg);
      ASSERT_TRUE(c->close_write());  // close_notify: the server reads EOF
      char b[16];
      auto n = c->read(std::span<char>(b));
      ASSERT_TRUE(n) << n.error().message();
      EXPECT_EQ(*n, 0u);  // the server's close_notify after its EOF
      (void)c->close();
    });
  }
}

TEST(Tls, ClientVerifiesTheChainAndTheName) {
  auto sctx = must(tls::Context::server(server_config()));
  // An unknown CA.
  TestPki other("another CA");
  tls::Config wrong_ca = client_config();
  wrong_ca.ca_pem = other.ca().cert_pem;
  auto cctx_wrong = must(tls::Context::client(wrong_ca));
  with_server(
      sctx, [](tls::Conn& c) { EXPECT_FALSE(c.handshake()); },
      [&](const std::string& addr) {
        auto c = tls::dial("tcp", addr, cctx_wrong, 5s);
        ASSERT_FALSE(c);
        EXPECT_NE(c.error().message().find("certificate verify failed"), std::string::npos)
            << c.error().message();
      });
  // The right CA, the wrong name.
  auto cctx = must(tls::Context::client(client_config()));
  with_server(
      sctx, [](tls::Conn& c) { EXPECT_FALSE(c.handshake()); },
      [&](const std::string& addr) {
        auto raw = goro::net::dial("tcp", addr);
        ASSERT_TRUE(raw);
        tls::Conn c = tls::Conn::client(std::move(*raw), cctx, "not-localhost.example");
        auto r = c.handshake();
        ASSERT_FALSE(r);
        EXPECT_NE(r.error().message().find("certificate verify failed"), std::string::npos)
            << r.error().message();
      });
  // insecure_skip_verify accepts it.
  tls::Config skip;
  skip.insecure_skip_verify = true;
  auto cctx_skip = must(tls::Context::client(skip));
  with_server(sctx, echo_until_eof, [&](const std::string& addr) {
    auto c = tls::dial("tcp", addr, cctx_skip, 5s);
    ASSERT_TRUE(c) << c.error().message();
    (void)c->close();
  });
}

TEST(Tls, SniChoosesTheCertificate) {
  KeyPair a = pki().issue("a.test", "DNS:a.test");
  KeyPair b = pki().issue("wild", "DNS:*.b.test");
  tls::Config sc;
  sc.certificates = {{.cert_pem = a.cert_pem, .key_pem = a.key_pem},
                     {.cert_pem = b.cert_pem, .key_pem = b.key_pem}};
  auto sctx = must(tls::Context::server(sc));
  EXPECT_EQ(sctx->certificate_names(),
            (std::vector<std::vector<std::string>>{{"a.test"}, {"*.b.test"}}));
  auto cctx = must(tls::Context::client(client_config()));
  // Each name verifies only against its own certificate, so a completed
  // handshake proves which one the server sent.
  for (const char* name : {"a.test", "www.b.test"}) {
    std::string seen_sni;
    with_server(
        sctx,
        [&](tls::Conn& c) {
          if (c.handshake()) seen_sni = c.state().server_name;
          echo_until_eof(c);
        },
        [&](const std::string& addr) {
          auto raw = goro::net::dial("tcp", addr);
          ASSERT_TRUE(raw);
          tls::Conn c = tls::Conn::client(std::move(*raw), cctx, name);
          auto r = c.handshake();
          EXPECT_TRUE(r) << name << ": " << r.error().message();
          (void)c.close();
        });
    EXPECT_EQ(seen_sni, name);
  }
  // Two labels under the wildcard do not match it: the default (a.test) is
  // sent and fails verification.
  with_server(
      sctx, [](tls::Conn& c) { (void)c.handshake(); },
      [&](const std::string& addr) {
        auto raw = goro::net::dial("tcp", addr);
        ASSERT_TRUE(raw);
        tls::Conn c = tls::Conn::client(std::move(*raw), cctx, "x.y.b.test");
        EXPECT_FALSE(c.handshake());
      });
}

TEST(Tls, AlpnMismatchIsRefusedAndNoAlpnProceeds) {
  auto sctx = must(tls::Context::server(server_config()));
  tls::Config h2only = client_config();
  h2only.alpn = {"h2"};
  auto cctx = must(tls::Context::client(h2only));
  with_server(
      sctx, [](tls::Conn& c) { EXPECT_FALSE(c.handshake()); },
      [&](const std::string& addr) { EXPECT_FALSE(tls::dial("tcp", addr, cctx, 5s)); });
  tls::Config none = client_config();
  none.alpn.clear();
  auto cctx_none = must(tls::Context::client(none));
  with_server(sctx, echo_until_eof, [&](const std::string& addr) {
    auto c = tls::dial("tcp", addr, cctx_none, 5s);
    ASSERT_TRUE(c) << c.error().message();
    EXPECT_EQ(c->state().alpn, "");
    (void)c->close();
  });
}

TEST(Tls, MutualTlsRequiresAGoodClientCertificate) {
  tls::Config sc = server_config();
  sc.client_auth = tls::ClientAuth::require;
  sc.client_ca_pem = pki().ca().cert_pem;
  auto sctx = must(tls::Context::server(sc));
  KeyPair client = pki().issue("client-7", "", true);
  tls::Config with_cert = client_config();
  with_cert.certificates = {{.cert_pem = client.cert_pem, .key_pem = client.key_pem}};
  auto cctx = must(tls::Context::client(with_cert));
  std::string subject;
  bool verified = false;
  with_server(
      sctx,
      [&](tls::Conn& c) {
        if (c.handshake()) {
          subject = c.state().peer_common_name;
          verified = c.state().peer_verified;
        }
        echo_until_eof(c);
      },
      [&](const std::string& addr) {
        auto c = tls::dial("tcp", addr, cctx, 5s);
        ASSERT_TRUE(c) << c.error().message();
        ASSERT_TRUE(c->write("ping"));
        EXPECT_EQ(read_exactly(*c, 4), "ping");
        (void)c->close();
      });
  EXPECT_EQ(subject, "client-7");
  EXPECT_TRUE(verified);
  // Without a certificate: refused (in TLS 1.3 the client learns it at its
  // first read, after its own handshake completed).
  auto cctx_none = must(tls::Context::client(client_config()));
  std::error_code server_err;
  with_server(
      sctx,
      [&](tls::Conn& c) {
        auto r = c.handshake();
        if (!r) server_err = r.error();
      },
      [&](const std::string& addr) {
        auto c = tls::dial("tcp", addr, cctx_none, 5s);
        if (!c) return;
        char b[4];
        auto n = c->read(std::span<char>(b));
        EXPECT_TRUE(!n || *n == 0);
      });
  EXPECT_TRUE(server_err);
  EXPECT_NE(server_err.message().find("certificate"), std::string::npos) << server_err.message();
  // A certificate from another CA: refused too.
  TestPki other("rogue CA");
  KeyPair rogue = other.issue("rogue", "", true);
  tls::Config rogue_cfg = client_config();
  rogue_cfg.certificates = {{.cert_pem = rogue.cert_pem, .key_pem = rogue.key_pem}};
  auto cctx_rogue = must(tls::Context::client(rogue_cfg));
  bool accepted = false;
  with_server(
      sctx, [&](tls::Conn& c) { accepted = c.handshake().ok(); },
      [&](const std::string& addr) {
        auto c = tls::dial("tcp", addr, cctx_rogue, 5s);
        if (!c) return;
        char b[4];
        (void)c->read(std::span<char>(b));
      });
  EXPECT_FALSE(accepted);
}

// Sends `bytes` raw on a plain TCP connection and returns the server's
// handshake error.
std::error_code server_error_for(const std::string& bytes, bool then_close) {
  auto sctx = must(tls::Context::server(server_config()));
  std::error_code err;
  with_server(
      sctx,
      [&](tls::Conn& c) {
        (void)c.set_deadline(10s);
        auto r = c.handshake();
        if (!r) err = r.error();
        EXPECT_FALSE(c.state().handshake_complete);
      },
      [&](const std::string& addr) {
        auto raw = goro::net::dial("tcp", addr);
        ASSERT_TRUE(raw);
        ASSERT_TRUE(raw->write(bytes));
        if (then_close) {
          (void)raw->close();
          return;
        }
        char b[256];
        while (auto n = raw->read(std::span<char>(b))) {
          if (*n == 0) break;
        }
      });
  return err;
}

TEST(Tls, BadPeersFailTheirOwnConnectionOnly) {
  const tls::Stats before = tls::stats();
  // Garbage instead of a ClientHello.
  std::error_code e = server_error_for(std::string(300, '\x7f'), false);
  EXPECT_TRUE(e);
  EXPECT_NE(e, tls::errc::http_request);
  // A plaintext HTTP request (Go's five-byte rule).
  e = server_error_for("GET / HTTP/1.1\r\nHost: x\r\n\r\n", false);
  EXPECT_EQ(e, tls::errc::http_request) << e.message();
  // A truncated record header, then the peer vanishes.
  e = server_error_for(std::string("\x16\x03\x01\x02", 4), true);
  EXPECT_EQ(e, tls::errc::handshake_eof) << e.message();
  // A record that claims 512 bytes and brings 10, then EOF.
  e = server_error_for(std::string("\x16\x03\x01\x02\x00", 5) + std::string(10, 'a'), true);
  EXPECT_TRUE(e);
  const tls::Stats after = tls::stats();
  EXPECT_GE(after.handshakes_failed - before.handshakes_failed, 4u);
}

TEST(Tls, StalledHandshakeEndsAtTheDeadline) {
  auto sctx = must(tls::Context::server(server_config()));
  std::error_code err;
  with_server(
      sctx,
      [&](tls::Conn& c) {
        (void)c.set_deadline(200ms);
        auto r = c.handshake();
        if (!r) err = r.error();
      },
      [&](const std::string& addr) {
        auto raw = goro::net::dial("tcp", addr);
        ASSERT_TRUE(raw);
        // Half a ClientHello record, then silence.
        ASSERT_TRUE(raw->write(std::string("\x16\x03\x01\x00\x80\x01\x00\x00", 8)));
        char b[64];
        (void)raw->set_read_deadline(30s);
        while (auto n = raw->read(std::span<char>(b))) {
          if (*n == 0) break;
        }
      });
  EXPECT_EQ(err, goro::errc::timeout) << err.message();
}

TEST(Tls, ClientVanishingMidRecordEndsTheRead) {
  auto sctx = must(tls::Context::server(server_config()));
  auto cctx = must(tls::Context::client(client_config()));
  bool read_ended = false;
  with_server(
      sctx,
      [&](tls::Conn& c) {
        char b[1024];
        std::size_t total = 0;
        for (;;) {
          auto n = c.read(std::span<char>(b));
          if (!n || *n == 0) break;
          total += *n;
        }
        read_ended = true;
        EXPECT_EQ(total, 5u);
      },
      [&](const std::string& addr) {
        auto c = tls::dial("tcp", addr, cctx, 5s);
        ASSERT_TRUE(c) << c.error().message();
        ASSERT_TRUE(c->write("hello"));
        // Half a record straight on the socket, then a reset.
        goro::net::Conn& raw = c->net_conn();
        ASSERT_TRUE(raw.write(std::string("\x17\x03\x03\x00\x40xxxx", 9)));
        linger lg{1, 0};
        setsockopt(raw.native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        (void)raw.close();
      });
  EXPECT_TRUE(read_ended);
}

TEST(Tls, FullDuplexReaderAndWriterOnOneConn) {
  // Each side writes 8 MiB while reading the other's 8 MiB on a second
  // goroutine: the reader and the writer share one SSL object.
  auto sctx = must(tls::Context::server(server_config()));
  auto cctx = must(tls::Context::client(client_config()));
  constexpr std::size_t kTotal = 8 << 20;
  auto duplex = [](tls::Conn& c, std::atomic<std::size_t>& got) {
    goro::WaitGroup wg;
    wg.add(1);
    goro::go([&] {
      std::vector<char> buf(20000);
      while (got.load() < kTotal) {
        auto n = c.read(std::span<char>(buf));
        if (!n || *n == 0) break;
        for (std::size_t i = 0; i < *n; ++i) {
          if (buf[i] != static_cast<char>((got.load() + i) % 251)) {
            ADD_FAILURE() << "corrupt byte at " << got.load() + i;
            break;
          }
        }
        got += *n;
      }
      wg.done();
    });
    std::string chunk(33333, '\0');
    for (std::size_t sent = 0; sent < kTotal;) {
      const std::size_t n = std::min(chunk.size(), kTotal - sent);
      for (std::size_t i = 0; i < n; ++i)
        chunk[i] = static_cast<char>((sent + i) % 251);
      if (!c.write(std::string_view(chunk.data(), n))) break;
      sent += n;
    }
    wg.wait();
  };
  std::atomic<std::size_t> server_got{0}, client_got{0};
  with_server(
      sctx,
      [&](tls::Conn& c) {
        duplex(c, server_got);
        (void)c.close();
      },
      [&](const std::string& addr) {
        auto c = tls::dial("tcp", addr, cctx, 5s);
        ASSERT_TRUE(c) << c.error().message();
        duplex(*c, client_got);
        (void)c->close();
      });
  EXPECT_EQ(server_got.load(), kTotal);
  EXPECT_EQ(client_got.load(), kTotal);
}

TEST(Tls, ReadDeadlineAndCloseWakeAParkedReader) {
  auto sctx = must(tls::Context::server(server_config()));
  auto cctx = must(tls::Context::client(client_config()));
  with_server(
      sctx,
      [&](tls::Conn& c) {
        ASSERT_TRUE(c.handshake());
        (void)c.set_read_deadline(goro::net::Clock::now() + 100ms);
        char b[8];
        auto n = c.read(std::span<char>(b));
        ASSERT_FALSE(n);
        EXPECT_EQ(n.error(), goro::errc::timeout);
        // Closed from another goroutine while parked: errc::closed.
        (void)c.set_read_deadline(goro::net::Clock::time_point{});
        goro::go([&c] {
          goro::sleep_for(50ms);
          (void)c.net_conn().close();
        });
        n = c.read(std::span<char>(b));
        ASSERT_FALSE(n);
        EXPECT_EQ(n.error(), goro::errc::closed);
      },
      [&](const std::string& addr) {
        auto c = tls::dial("tcp", addr, cctx, 5s);
        ASSERT_TRUE(c) << c.error().message();
        char b[8];
        (void)c->set_read_deadline(goro::net::Clock::now() + 10s);
        (void)c->read(std::span<char>(b));  // until the server closes
      });
}

TEST(Tls, ConfigErrorsNameTheInput) {
  tls::Config c;
  auto r = tls::Context::server(c);
  EXPECT_FALSE(r);
  EXPECT_NE(r.error.find("certificates"), std::string::npos) << r.error;
  c.certificates = {{.cert_file = "/nonexistent/cert.pem", .key_file = "/nonexistent/key.pem"}};
  r = tls::Context::server(c);
  EXPECT_NE(r.error.find("cert_file /nonexistent/cert.pem: No such file"), std::string::npos)
      << r.error;
  c.certificates = {{.cert_pem = "not a certificate", .key_pem = localhost_cert().key_pem}};
  r = tls::Context::server(c);
  EXPECT_NE(r.error.find("cert_file (PEM): "), std::string::npos) << r.error;
  KeyPair other = pki().issue("other", "DNS:other");
  c.certificates = {{.cert_pem = localhost_cert().cert_pem, .key_pem = other.key_pem}};
  r = tls::Context::server(c);
  EXPECT_FALSE(r);
  EXPECT_NE(r.error.find("key_file"), std::string::npos) << r.error;
  tls::Config v = server_config();
  v.min_version = tls::Version::tls13;
  v.max_version = tls::Version::tls12;
  r = tls::Context::server(v);
  EXPECT_NE(r.error.find("min_version"), std::string::npos) << r.error;
  tls::Config ciphers = server_config();
  ciphers.ciphers_tls12 = "NO-SUCH-CIPHER";
  r = tls::Context::server(ciphers);
  EXPECT_NE(r.error.find("ciphers_tls12"), std::string::npos) << r.error;
}

TEST(TlsTicketKeys, RotateAndExpire) {
  using tls::detail::TicketKeys;
  TicketKeys keys(std::chrono::seconds(1), std::chrono::hours(1));
  TicketKeys::Key a, b, found;
  bool cur = false;
  ASSERT_TRUE(keys.current(&a));
  ASSERT_TRUE(keys.current(&b));
  EXPECT_EQ(a.name, b.name);  // not due yet
  ASSERT_TRUE(keys.find(a.name.data(), &found, &cur));
  EXPECT_TRUE(cur);
  std::this_thread::sleep_for(1100ms);
  ASSERT_TRUE(keys.current(&b));
  EXPECT_NE(a.name, b.name);  // rotated
  ASSERT_TRUE(keys.find(a.name.data(), &found, &cur));
  EXPECT_FALSE(cur);  // still decrypts, ticket renewed under b
  EXPECT_EQ(found.aes, a.aes);
  // With no lifetime beyond the rotation, an old key is gone at once.
  TicketKeys short_lived(std::chrono::seconds(1), std::chrono::seconds(0));
  ASSERT_TRUE(short_lived.current(&a));
  std::this_thread::sleep_for(1100ms);
  EXPECT_FALSE(short_lived.find(a.name.data(), &found, &cur));
  unsigned char unknown[16] = {};
  EXPECT_FALSE(keys.find(unknown, &found, &cur));
}

}  // namespace
