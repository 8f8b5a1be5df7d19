// goro::http::Server over TLS, in-process, driven by a blocking OpenSSL
// client on raw sockets: keep-alive and pipelining through TLS, bodies in
// both directions, files (no sendfile), the background read, Request::tls(),
// mutual TLS, a plaintext request on the TLS port (Go's 400), garbage, a
// stalled and a vanishing handshake, a reload with a good and a bad
// certificate, the connection cap, the counters. ASan and TSan run it.
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <filesystem>
#include <fstream>

#include "goro/http/file_server.hpp"
#include "goro/http/metrics.hpp"
#include "goro/http/middleware.hpp"
#include "tests/http_server/test_util.hpp"
#include "tests/tls/test_pki.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::KeyPair;
using goro_test::TestPki;
using goro_test::TestServer;
namespace http = goro::http;
namespace tls = goro::tls;

TestPki& pki() {
  static TestPki p;
  return p;
}

const KeyPair& server_cert() {
  static KeyPair kp = pki().issue("localhost", "DNS:localhost,IP:127.0.0.1");
  return kp;
}

http::ServerOptions tls_options(const KeyPair& kp = server_cert()) {
  http::ServerOptions o;
  o.tls.emplace();
  o.tls->certificates = {{.cert_pem = kp.cert_pem, .key_pem = kp.key_pem}};
  return o;
}

struct CtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using CtxPtr = std::unique_ptr<SSL_CTX, CtxFree>;

// A blocking OpenSSL client context trusting the test CA, offering
// http/1.1; optionally with a client certificate.
CtxPtr client_ctx(const KeyPair* client_cert = nullptr, int max_version = 0) {
  ::signal(SIGPIPE, SIG_IGN);  // SSL_write on a socket the server closed
  CtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
  BIO* b =
      BIO_new_mem_buf(pki().ca().cert_pem.data(), static_cast<int>(pki().ca().cert_pem.size()));
  X509* ca = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  X509_STORE_add_cert(store, ca);
  X509_free(ca);
  BIO_free(b);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  static const unsigned char alpn[] = "\x08http/1.1";
  SSL_CTX_set_alpn_protos(ctx.get(), alpn, sizeof alpn - 1);
  if (max_version != 0) SSL_CTX_set_max_proto_version(ctx.get(), max_version);
  if (client_cert != nullptr) {
    BIO* cb = BIO_new_mem_buf(client_cert->cert_pem.data(),
                              static_cast<int>(client_cert->cert_pem.size()));
    X509* x = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    BIO* kb =
        BIO_new_mem_buf(client_cert->key_pem.data(), static_cast<int>(client_cert->key_pem.size()));
    EVP_PKEY* k = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    SSL_CTX_use_certificate(ctx.get(), x);
    SSL_CTX_use_PrivateKey(ctx.get(), k);
    X509_free(x);
    EVP_PKEY_free(k);
    BIO_free(cb);
    BIO_free(kb);
  }
  return ctx;
}

// The subject CN of the certificate the server presented on `c`.
std::string peer_cn(const Client& c) {
  X509* x = SSL_get1_peer_certificate(c.ssl());
  if (x == nullptr) return "";
  char cn[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof cn);
  X509_free(x);
  return cn;
}

std::string get_request(std::string_view path, bool close = false) {
  return std::string("GET ") + std::string(path) + " HTTP/1.1\r\nHost: localhost\r\n" +
         (close ? "Connection: close\r\n" : "") + "\r\n";
}

// The handler most tests use: the TLS state and the body's size.
void describe(http::Request& req, http::ResponseWriter& w) {
  const tls::ConnectionState* st = req.tls();
  std::string body = req.body().read_all().value_or("<body error>");
  if (st == nullptr) {
    (void)w.write("plain");
    return;
  }
  (void)w.write(std::string(tls::to_string(st->version)) + " alpn=" + st->alpn +
                " sni=" + st->server_name + " peer=" + st->peer_common_name +
                " body=" + std::to_string(body.size()));
}

TEST(Https, KeepAlivePipeliningAndTlsState) {
  TestServer srv(describe, tls_options());
  for (int v : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    CtxPtr ctx = client_ctx(nullptr, v);
    Client c(srv.port());
    ASSERT_TRUE(c.start_tls(ctx.get()));
    // Keep-alive: three requests on one connection.
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(c.send(get_request("/")));
      Client::Response r = c.read_response();
      ASSERT_TRUE(r.ok);
      EXPECT_EQ(r.status, 200);
      EXPECT_EQ(r.body, std::string(v == TLS1_3_VERSION ? "TLSv1.3" : "TLSv1.2") +
                            " alpn=http/1.1 sni=localhost peer= body=0");
    }
    // Pipelined: five in one write, answered in order.
    std::string five;
    for (int i = 0; i < 5; ++i)
      five += get_request("/");
    ASSERT_TRUE(c.send(five));
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(c.read_response().status, 200) << i;
  }
}

// A TLS connection at rest gives its goroutine back (idle_release_after)
// and OpenSSL's buffers (the sweep); the next request on it, in both TLS
// versions, wakes a new goroutine that carries on with the same session.
TEST(Https, ReleasedWhileIdleTheConnectionServesOn) {
  http::ServerOptions o = tls_options();
  o.idle_release_after = std::chrono::milliseconds(50);
  TestServer srv(describe, o);
  for (int v : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    CtxPtr ctx = client_ctx(nullptr, v);
    Client c(srv.port());
    ASSERT_TRUE(c.start_tls(ctx.get()));
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(c.send(get_request("/")));
      Client::Response r = c.read_response();
      ASSERT_TRUE(r.ok) << "request " << i;
      EXPECT_EQ(r.body, std::string(v == TLS1_3_VERSION ? "TLSv1.3" : "TLSv1.2") +
                            " alpn=http/1.1 sni=localhost peer= body=0");
      // Past the release and a buffer sweep (once a second) the second time.
      std::this_thread::sleep_for(i == 0 ? std::chrono::milliseconds(300)
                                         : std::chrono::milliseconds(1300));
    }
    const std::string metrics = http::metrics_text();
    const std::string key = "\ngoro_http_connections_released ";
    const std::size_t at = metrics.find(key);
    ASSERT_NE(at, std::string::npos);
    EXPECT_GE(std::stol(metrics.substr(at + key.size())), 1) << "the idle connection's goroutine";
  }
}

TEST(Https, SecurityHeadersAndHstsOnlyOverTls) {
  http::Handler h = http::middleware::security_headers()(describe);
  Client::Response r;
  {
    TestServer tls_srv(h, tls_options());
    CtxPtr ctx = client_ctx();
    Client c(tls_srv.port());
    ASSERT_TRUE(c.start_tls(ctx.get()));
    ASSERT_TRUE(c.send(get_request("/")));
    r = c.read_response();
    EXPECT_EQ(r.header("strict-transport-security"), "max-age=63072000");
    EXPECT_EQ(r.header("x-content-type-options"), "nosniff");
    EXPECT_EQ(r.header("x-frame-options"), "DENY");
  }
  TestServer plain(h);  // one runtime per process: after the first has stopped
  Client p(plain.port());
  ASSERT_TRUE(p.send(get_request("/")));
  r = p.read_response();
  EXPECT_EQ(r.body, "plain");
  EXPECT_EQ(r.header("strict-transport-security"), "");  // RFC 6797: never over plain HTTP
  EXPECT_EQ(r.header("x-content-type-options"), "nosniff");
}

TEST(Https, BodiesBothWaysAndChunked) {
  TestServer srv(
      [](http::Request& req, http::ResponseWriter& w) {
        // Echo, streamed: the body read through TLS, written back through it.
        std::string buf(40000, '\0');
        for (;;) {
          auto n = req.body().read(std::span<char>(buf));
          if (!n || *n == 0) break;
          (void)w.write(std::string_view(buf.data(), *n));
        }
      },
      tls_options());
  CtxPtr ctx = client_ctx();
  Client c(srv.port());
  ASSERT_TRUE(c.start_tls(ctx.get()));
  std::string body(3 << 20, '\0');
  for (std::size_t i = 0; i < body.size(); ++i)
    body[i] = static_cast<char>('a' + i % 26);
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body));
  Client::Response r = c.read_response();
  ASSERT_TRUE(r.ok) << r.status_line << " " << r.body.size();
  EXPECT_EQ(r.header("transfer-encoding"), "chunked");
  EXPECT_TRUE(r.body == body);
  // The head went out with over 256 KiB of the body unread: Go's rule
  // closes the connection after such a response (a close_notify ends it).
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_EQ(c.read_all(), "");
  // A chunked upload, small enough to stay on its connection.
  Client c2(srv.port());
  ASSERT_TRUE(c2.start_tls(ctx.get()));
  ASSERT_TRUE(
      c2.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
              "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  r = c2.read_response();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.body, "hello world");
  EXPECT_EQ(r.header("connection"), "");
  ASSERT_TRUE(c2.send(get_request("/")));
  EXPECT_EQ(c2.read_response().status, 200);
}

TEST(Https, FileBodiesAreCopiedThroughTls) {
  goro_test::TempDir dir;
  std::string data(5 << 20, '\0');
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<char>(i * 7 % 251);
  TestPki::write_file(dir.file("big.bin"), data);
  TestServer srv(http::file_server(dir.path()), tls_options());
  CtxPtr ctx = client_ctx();
  Client c(srv.port());
  ASSERT_TRUE(c.start_tls(ctx.get()));
  ASSERT_TRUE(c.send(get_request("/big.bin")));
  Client::Response r = c.read_response();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), data.size());
  EXPECT_TRUE(r.body == data);
  // A range, then the connection is still good.
  ASSERT_TRUE(c.send("GET /big.bin HTTP/1.1\r\nHost: localhost\r\nRange: bytes=100-199\r\n\r\n"));
  r = c.read_response();
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.body, data.substr(100, 100));
}

TEST(Https, ContextCancelledWhenTheTlsClientGoesAway) {
  std::atomic<bool> cancelled{false};
  TestServer srv(
      [&](http::Request& req, http::ResponseWriter& w) {
        goro::select(goro::after_case(10s), goro::recv(req.context().done()));
        cancelled = req.context().is_done();
        (void)w.write("late");
      },
      tls_options());
  CtxPtr ctx = client_ctx();
  {
    Client c(srv.port());
    ASSERT_TRUE(c.start_tls(ctx.get()));
    ASSERT_TRUE(c.send(get_request("/")));
    std::this_thread::sleep_for(100ms);
    SSL_shutdown(c.ssl());  // close_notify, then the socket closes
  }
  for (int i = 0; i < 500 && !cancelled.load(); ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(cancelled.load());
}

TEST(Https, MutualTls) {
  http::ServerOptions o = tls_options();
  ASSERT_TRUE(o.tls.has_value());
  tls::Config& cfg = *o.tls;  // NOLINT(bugprone-unchecked-optional-access): asserted above
  cfg.client_auth = tls::ClientAuth::require;
  cfg.client_ca_pem = pki().ca().cert_pem;
  TestServer srv(describe, o);
  KeyPair client = pki().issue("client-42", "", true);
  CtxPtr good = client_ctx(&client);
  Client c(srv.port());
  ASSERT_TRUE(c.start_tls(good.get()));
  ASSERT_TRUE(c.send(get_request("/")));
  Client::Response r = c.read_response();
  ASSERT_TRUE(r.ok);
  EXPECT_NE(r.body.find("peer=client-42"), std::string::npos) << r.body;
  // No certificate: the request never reaches the handler.
  CtxPtr none = client_ctx();
  Client n(srv.port());
  if (n.start_tls(none.get())) {  // TLS 1.3: the client learns it when it reads
    (void)n.send(get_request("/"));
    EXPECT_FALSE(n.read_response().ok);
  }
  ERR_clear_error();
}

TEST(Https, PlaintextRequestGetsGoBadRequest) {
  TestServer srv(describe, tls_options());
  Client c(srv.port());
  ASSERT_TRUE(c.send(get_request("/")));
  EXPECT_EQ(c.read_all(),
            "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n");
  // The server lives on.
  CtxPtr ctx = client_ctx();
  Client t(srv.port());
  ASSERT_TRUE(t.start_tls(ctx.get()));
  ASSERT_TRUE(t.send(get_request("/")));
  EXPECT_EQ(t.read_response().status, 200);
  auto log = srv.log();
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
    return l.find("TLS handshake error") != std::string::npos &&
           l.find("HTTP request") != std::string::npos;
  })) << "no log line";
}

TEST(Https, GarbageStallsAndVanishingClientsCloseTheirConnectionOnly) {
  http::ServerOptions o = tls_options();
  o.read_header_timeout = 300ms;  // the handshake's deadline (Go's rule: the smallest)
  TestServer srv(describe, o);
  const tls::Stats before = tls::stats();
  {
    Client g(srv.port());  // garbage
    ASSERT_TRUE(g.send(std::string(600, '\x7f')));
    (void)g.read_all();
    EXPECT_TRUE(g.closed_by_peer());
  }
  {
    // t0 before the connect: the handshake's deadline runs from the accept.
    const auto t0 = std::chrono::steady_clock::now();
    Client s(srv.port());  // half a ClientHello, then silence
    ASSERT_TRUE(s.send(std::string("\x16\x03\x01\x01\x00\x01\x00\x00\xfc\x03\x03", 11)));
    (void)s.read_all();  // until the server closes (the client's timeout is 5 s)
    const auto waited = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(waited, 200ms);
    EXPECT_LT(waited, 4500ms);
  }
  {
    Client v(srv.port());  // a truncated record, then gone
    ASSERT_TRUE(v.send(std::string("\x16\x03\x01\x00\x50\x01\x00", 7)));
  }
  {
    // A handshake, then half an application-data record and a reset.
    CtxPtr ctx = client_ctx();
    Client h(srv.port());
    ASSERT_TRUE(h.start_tls(ctx.get()));
    ASSERT_TRUE(::send(h.fd(), "\x17\x03\x03\x01\x00xyz", 8, MSG_NOSIGNAL) == 8);
    linger lg{1, 0};
    ::setsockopt(h.fd(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  }
  std::this_thread::sleep_for(100ms);
  CtxPtr ctx = client_ctx();
  Client ok(srv.port());
  ASSERT_TRUE(ok.start_tls(ctx.get()));
  ASSERT_TRUE(ok.send(get_request("/")));
  EXPECT_EQ(ok.read_response().status, 200);
  EXPECT_GE(tls::stats().handshakes_failed - before.handshakes_failed, 2u);
  EXPECT_GE(tls::stats().handshakes_full - before.handshakes_full, 2u);
}

TEST(Https, ReloadServesTheNewCertificateAndKeepsTheOldOnError) {
  goro_test::TempDir dir;
  const KeyPair first = pki().issue("first", "DNS:localhost");
  const KeyPair second = pki().issue("second", "DNS:localhost");
  TestPki::write_file(dir.file("cert.pem"), first.cert_pem);
  TestPki::write_file(dir.file("key.pem"), first.key_pem);
  http::ServerOptions o;
  o.tls.emplace();
  o.tls->certificates = {{.cert_file = dir.file("cert.pem"), .key_file = dir.file("key.pem")}};
  TestServer srv(describe, o);
  CtxPtr ctx = client_ctx();
  Client before(srv.port());
  ASSERT_TRUE(before.start_tls(ctx.get()));
  EXPECT_EQ(peer_cn(before), "first");
  // A new pair: new connections get it, the open one goes on.
  TestPki::write_file(dir.file("cert.pem"), second.cert_pem);
  TestPki::write_file(dir.file("key.pem"), second.key_pem);
  ASSERT_TRUE(srv.server()->reload_tls());
  Client after(srv.port());
  ASSERT_TRUE(after.start_tls(ctx.get()));
  EXPECT_EQ(peer_cn(after), "second");
  ASSERT_TRUE(before.send(get_request("/")));
  EXPECT_EQ(before.read_response().status, 200);
  // A broken file: refused, logged, the current certificate stays.
  TestPki::write_file(dir.file("cert.pem"), "garbage");
  EXPECT_FALSE(srv.server()->reload_tls());
  Client still(srv.port());
  ASSERT_TRUE(still.start_tls(ctx.get()));
  EXPECT_EQ(peer_cn(still), "second");
  auto log = srv.log();
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
    return l.find("reload failed") != std::string::npos &&
           l.find("still serving the current certificate") != std::string::npos;
  }));
}

TEST(Https, BadCertificateFailsListen) {
  http::ServerOptions o;
  o.addr = "127.0.0.1:0";
  o.handle_signals = false;
  o.tls.emplace();
  o.tls->certificates = {{.cert_file = "/nonexistent.pem", .key_file = "/nonexistent.key"}};
  std::vector<std::string> log;
  o.error_log = [&log](std::string_view l) { log.emplace_back(l); };
  std::error_code err;
  goro::run([&] {
    http::Server srv(o, describe);
    auto r = srv.listen();
    if (!r) err = r.error();
  });
  EXPECT_EQ(err, tls::errc::bad_config);
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find("/nonexistent.pem"), std::string::npos) << log[0];
}

TEST(Https, OverTheCapATlsConnectionIsClosedNotAnsweredInPlaintext) {
  http::ServerOptions o = tls_options();
  o.max_connections = 1;
  std::atomic<bool> release{false};
  std::atomic<bool> in_handler{false};
  TestServer srv(
      [&](http::Request&, http::ResponseWriter& w) {
        in_handler = true;
        while (!release.load())
          goro::sleep_for(5ms);
        (void)w.write("done");
      },
      o);
  CtxPtr ctx = client_ctx();
  Client busy(srv.port());
  ASSERT_TRUE(busy.start_tls(ctx.get()));
  ASSERT_TRUE(busy.send(get_request("/")));
  // The handler is running: nothing at rest to evict.
  ASSERT_TRUE(goro_test::eventually([&] { return in_handler.load(); }));
  Client over(srv.port());
  EXPECT_FALSE(over.start_tls(ctx.get()));
  ERR_clear_error();
  release = true;
  EXPECT_EQ(busy.read_response().status, 200);
}

}  // namespace
