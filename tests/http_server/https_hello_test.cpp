// goro-hello over HTTPS as a child process (--tls-cert/--tls-key), driven by
// real clients: curl, Python's ssl + http.client, Go's net/http client,
// openssl s_client (TLS 1.2 and 1.3, ALPN, refused old versions, session
// resumption by id and by ticket, a renegotiation attempt), wrk across a
// SIGHUP certificate reload, and hostile bytes. The CA and certificates are
// made by the test (tests/tls/test_pki.hpp) into a temporary directory.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/http_server/test_util.hpp"
#include "tests/tls/test_pki.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::KeyPair;
using goro_test::TestPki;

std::string run(const std::string& cmd) {
  return goro_test::run_command(cmd);
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// The PKI on disk: ca.pem, cert.pem/key.pem (CN localhost), and a second
// pair (CN renewed) for the reload test.
struct Files {
  TestPki pki;
  goro_test::TempDir dir;
  Files() {
    const KeyPair leaf = pki.issue("localhost", "DNS:localhost,IP:127.0.0.1");
    const KeyPair renewed = pki.issue("renewed", "DNS:localhost,IP:127.0.0.1");
    TestPki::write_file(dir.file("ca.pem"), pki.ca().cert_pem);
    TestPki::write_file(dir.file("cert.pem"), leaf.cert_pem);
    TestPki::write_file(dir.file("key.pem"), leaf.key_pem);
    TestPki::write_file(dir.file("renewed.pem"), renewed.cert_pem);
    TestPki::write_file(dir.file("renewed.key"), renewed.key_pem);
  }
  std::string f(const std::string& name) const { return dir.file(name); }
};

Files& files() {
  static Files f;
  return f;
}

struct HelloTls : goro_test::ChildServer {
  explicit HelloTls(std::vector<std::string> extra = {},
                    const std::string& cert = files().f("cert.pem"),
                    const std::string& key = files().f("key.pem"))
      : ChildServer(GORO_HELLO_PATH, with_tls(std::move(extra), cert, key)) {}
  static std::vector<std::string> with_tls(std::vector<std::string> extra, const std::string& cert,
                                           const std::string& key) {
    extra.insert(extra.end(), {"--tls-cert", cert, "--tls-key", key});
    return extra;
  }
  std::string url(const std::string& path) const {
    return "https://localhost:" + std::to_string(port) + path;
  }
};

std::string s_client(const HelloTls& h, const std::string& args, const std::string& input = "") {
  const std::string in = input.empty() ? "echo Q" : "printf '" + input + "'";
  return run(in + " | timeout 20 openssl s_client -connect 127.0.0.1:" + std::to_string(h.port) +
             " -servername localhost -CAfile " + files().f("ca.pem") + " " + args + " 2>&1");
}

const std::string kGetClose =
    "GET /plaintext HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n";

TEST(HttpsHello, CurlOverTls12And13WithAlpn) {
  HelloTls h({"--security_headers"});
  ASSERT_GT(h.port, 0);
  const std::string curl = "curl -sS --cacert " + files().f("ca.pem") + " ";
  EXPECT_EQ(run(curl + "-o - -w ' %{http_code}' " + h.url("/plaintext")), "Hello, World! 200");
  for (const char* v : {"--tlsv1.2 --tls-max 1.2", "--tlsv1.3"}) {
    const std::string out = run(curl + v + " -v --http1.1 " + h.url("/json") + " 2>&1");
    EXPECT_TRUE(contains(out, "ALPN: server accepted http/1.1")) << out;
    EXPECT_TRUE(contains(out, R"({"message":"Hello, World!"})")) << out;
    EXPECT_TRUE(contains(out, std::string("SSL connection using ") +
                                  (std::string(v) == "--tlsv1.3" ? "TLSv1.3" : "TLSv1.2")))
        << out;
  }
  // --security_headers: HSTS and the OWASP headers.
  const std::string head = run(curl + "-s -D - -o /dev/null " + h.url("/plaintext"));
  EXPECT_TRUE(contains(head, "Strict-Transport-Security: max-age=63072000")) << head;
  EXPECT_TRUE(contains(head, "X-Content-Type-Options: nosniff")) << head;
  // A 5 MiB upload echoed back over TLS.
  EXPECT_EQ(run("head -c 5242880 /dev/zero | " + curl + "--data-binary @- " + h.url("/echo") +
                " | wc -c"),
            "5242880\n");
  // The metrics count the handshakes.
  const std::string metrics = run(curl + h.url("/metrics"));
  EXPECT_GE(goro_test::metric_in(metrics, "goro_tls_handshakes_total{result=\"full\"}"), 1)
      << metrics;
  EXPECT_TRUE(contains(metrics, "goro_tls_connections_total{version=\"TLSv1.2\"} 1")) << metrics;
}

TEST(HttpsHello, PythonSslAndHttpClient) {
  HelloTls h;
  ASSERT_GT(h.port, 0);
  const std::string script = R"PY(
import http.client, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.set_alpn_protocols(["http/1.1"])
c = http.client.HTTPSConnection("localhost", int(sys.argv[1]), context=ctx)
out = []
for path in ["/plaintext", "/json"]:
    c.request("GET", path)
    r = c.getresponse()
    out.append("%d %s" % (r.status, r.read().decode()))
out.append(c.sock.version() + " " + c.sock.selected_alpn_protocol())
c.request("POST", "/echo", body=iter([b"chunk1-", b"chunk2"]), encode_chunked=True)
r = c.getresponse()
out.append("%d %s" % (r.status, r.read().decode()))
print("|".join(out))
)PY";
  const std::string path = files().f("client.py");
  TestPki::write_file(path, script);
  EXPECT_EQ(run("python3 " + path + " " + std::to_string(h.port) + " " + files().f("ca.pem")),
            "200 Hello, World!|200 {\"message\":\"Hello, World!\"}|TLSv1.3 http/1.1|"
            "200 chunk1-chunk2\n");
}

TEST(HttpsHello, GoNetHttpClient) {
  if (run("command -v go").empty()) GTEST_SKIP() << "go not installed";
  HelloTls h;
  ASSERT_GT(h.port, 0);
  const std::string program = R"GO(package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	pem, err := os.ReadFile(os.Args[2])
	if err != nil {
		panic(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for i := 0; i < 3; i++ {
		resp, err := client.Get("https://localhost:" + os.Args[1] + "/plaintext")
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s %s %x|", resp.StatusCode, body, resp.Proto, resp.TLS.Version)
	}
	fmt.Println()
}
)GO";
  const std::string dir = files().f("goclient");
  std::filesystem::create_directories(dir);
  TestPki::write_file(dir + "/main.go", program);
  const std::string env = "cd " + dir + " && HOME=" + dir + " GOCACHE=" + dir +
                          "/cache GOPATH=" + dir + "/gopath GO111MODULE=off ";
  const std::string out = run(env + "timeout 120 go run main.go " + std::to_string(h.port) + " " +
                              files().f("ca.pem") + " 2>&1");
  EXPECT_EQ(out,
            "200 Hello, World! HTTP/1.1 304|200 Hello, World! HTTP/1.1 304|"
            "200 Hello, World! HTTP/1.1 304|\n");
}

TEST(HttpsHello, OpensslSClientVersionsAlpnAndOldProtocolsRefused) {
  HelloTls h;
  ASSERT_GT(h.port, 0);
  for (const char* v : {"-tls1_2", "-tls1_3"}) {
    const std::string out = s_client(h, std::string(v) + " -alpn http/1.1 -ign_eof", kGetClose);
    EXPECT_TRUE(contains(out, "Verify return code: 0 (ok)")) << out;
    EXPECT_TRUE(contains(out, "ALPN protocol: http/1.1")) << out;
    EXPECT_TRUE(contains(
        out, std::string("Protocol  : ") + (std::string(v) == "-tls1_3" ? "TLSv1.3" : "TLSv1.2")))
        << out;
    EXPECT_TRUE(contains(out, "Hello, World!")) << out;
  }
  // TLS 1.0 and 1.1 (the client allowed to offer them at security level 0).
  for (const char* v : {"-tls1", "-tls1_1"}) {
    const std::string out = s_client(h, std::string(v) + " -cipher DEFAULT@SECLEVEL=0");
    EXPECT_TRUE(contains(out, "alert protocol version") ||
                contains(out, "no protocols available") || contains(out, "unsupported protocol"))
        << out;
    EXPECT_TRUE(contains(out, "Cipher is (NONE)")) << out;  // no session
  }
  // A client offering only h2: refused with no_application_protocol (Go).
  const std::string h2 = s_client(h, "-alpn h2");
  EXPECT_TRUE(contains(h2, "no application protocol")) << h2;
}

TEST(HttpsHello, SessionResumptionById12AndByTicket13) {
  HelloTls h;
  ASSERT_GT(h.port, 0);
  for (const char* v : {"-tls1_2", "-tls1_3"}) {
    const std::string sess = files().f(std::string("sess") + v);
    const std::string first =
        s_client(h, std::string(v) + " -ign_eof -sess_out " + sess, kGetClose);
    EXPECT_TRUE(contains(first, "New, TLSv1.")) << first;
    const std::string again =
        s_client(h, std::string(v) + " -ign_eof -msg -sess_in " + sess, kGetClose);
    EXPECT_TRUE(contains(again, "Reused, TLSv1.")) << v << "\n" << again;
    EXPECT_TRUE(contains(again, "Hello, World!")) << again;
    // TLS 1.3: a fresh ticket after the resumption too (OpenSSL's clients
    // use a TLS 1.3 session once; without it every other connection would
    // be a full handshake).
    if (std::string(v) == "-tls1_3") {
      EXPECT_TRUE(contains(again, "NewSessionTicket")) << again;
    }
  }
  // TLS 1.2 without tickets: the session-id cache.
  const std::string sess = files().f("sess-noticket");
  const std::string first = s_client(h, "-tls1_2 -no_ticket -ign_eof -sess_out " + sess, kGetClose);
  EXPECT_TRUE(contains(first, "New, TLSv1.2")) << first;
  const std::string again = s_client(h, "-tls1_2 -no_ticket -ign_eof -sess_in " + sess, kGetClose);
  EXPECT_TRUE(contains(again, "Reused, TLSv1.2")) << again;
  const std::string metrics =
      run("curl -s --cacert " + files().f("ca.pem") + " " + h.url("/metrics"));
  EXPECT_GE(goro_test::metric_in(metrics, "goro_tls_handshakes_total{result=\"resumed\"}"), 3)
      << metrics;
}

TEST(HttpsHello, RenegotiationGarbageAndStallsLeaveTheServerServing) {
  HelloTls h({"--read_header_timeout", "500ms"});
  ASSERT_GT(h.port, 0);
  // Client-initiated renegotiation (s_client's "R" command): refused.
  const std::string reneg = s_client(h, "-tls1_2", "R\\n");
  EXPECT_TRUE(contains(reneg, "RENEGOTIATING")) << reneg;
  EXPECT_FALSE(contains(reneg, "Hello, World!")) << reneg;
  // Garbage, a half ClientHello that stalls, a truncated record: each closes
  // its own connection; the stall by the handshake deadline.
  const std::string script = R"PY(
import socket, sys, time
port = int(sys.argv[1])
def conn():
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(10); return s
out = []
s = conn(); s.sendall(b"\x7f" * 500)
try:
    out.append("garbage:%d" % len(s.recv(4096) + s.recv(4096)))
except OSError as e:
    out.append("garbage:" + type(e).__name__)
s = conn(); s.sendall(b"\x16\x03\x01\x01\x00\x01\x00\x00\xfc\x03\x03")
t0 = time.time()
try:
    while s.recv(4096): pass
    out.append("stall:closed")
except OSError as e:
    out.append("stall:" + type(e).__name__)
out.append("waited<3s" if time.time() - t0 < 3 else "waited %.1fs" % (time.time() - t0))
s = conn(); s.sendall(b"\x16\x03\x01\x00\x60\x01"); s.close()
print(" ".join(out))
)PY";
  const std::string path = files().f("hostile.py");
  TestPki::write_file(path, script);
  const std::string out = run("python3 " + path + " " + std::to_string(h.port));
  EXPECT_TRUE(contains(out, "stall:closed waited<3s")) << out;
  const std::string curl = "curl -sS --cacert " + files().f("ca.pem") + " ";
  EXPECT_EQ(run(curl + h.url("/plaintext")), "Hello, World!");
  // A plaintext request on the TLS port: Go's 400.
  EXPECT_EQ(run("curl -s -i http://127.0.0.1:" + std::to_string(h.port) + "/plaintext"),
            "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n");
}

TEST(HttpsHello, SighupReloadUnderWrkDropsNoRequest) {
  GORO_SKIP_SIGNAL_TIMING_UNDER_TSAN();
  if (run("command -v wrk").empty()) GTEST_SKIP() << "wrk not installed";
  // Files of its own: the reload rewrites them.
  const std::string cert = files().f("live-cert.pem"), key = files().f("live-key.pem");
  run("cp " + files().f("cert.pem") + " " + cert + " && cp " + files().f("key.pem") + " " + key);
  HelloTls h({}, cert, key);
  ASSERT_GT(h.port, 0);
  const std::string cn_cmd =
      "echo Q | timeout 10 openssl s_client -connect 127.0.0.1:" + std::to_string(h.port) +
      " -servername localhost 2>/dev/null | "
      "openssl x509 -noout -subject";
  EXPECT_TRUE(contains(run(cn_cmd), "CN = localhost"));
  // wrk over TLS for 4 s; at 1.5 s the pair is replaced and SIGHUP sent.
  std::string wrk_out;
  std::thread load([&] { wrk_out = run("wrk -t1 -c16 -d4s " + h.url("/plaintext") + " 2>&1"); });
  std::this_thread::sleep_for(1500ms);
  run("cp " + files().f("renewed.pem") + " " + cert + " && cp " + files().f("renewed.key") + " " +
      key);
  ASSERT_EQ(kill(h.pid, SIGHUP), 0);
  EXPECT_TRUE(h.wait_for_line(
      [](const std::string& l) { return contains(l, "certificate reloaded"); }, 10s));
  // New connections see the new certificate while the old ones go on.
  EXPECT_TRUE(contains(run(cn_cmd), "CN = renewed"));
  load.join();
  EXPECT_TRUE(contains(wrk_out, "requests in")) << wrk_out;
  EXPECT_FALSE(contains(wrk_out, "Socket errors")) << wrk_out;
  EXPECT_FALSE(contains(wrk_out, "Non-2xx")) << wrk_out;
  // A broken file on the next SIGHUP: logged, and the renewed pair stays.
  TestPki::write_file(cert, "not a certificate");
  ASSERT_EQ(kill(h.pid, SIGHUP), 0);
  EXPECT_TRUE(h.wait_for_line(
      [](const std::string& l) { return contains(l, "SIGHUP failed") && contains(l, "current"); },
      10s));
  EXPECT_TRUE(contains(run(cn_cmd), "CN = renewed"));
  EXPECT_EQ(run("curl -sS --cacert " + files().f("ca.pem") + " " + h.url("/plaintext")),
            "Hello, World!");
}

TEST(HttpsHello, BadTlsSettingsExitTwoNamingTheKeys) {
  const std::string bin = GORO_HELLO_PATH;
  std::string out = run(bin + " --tls-cert " + files().f("cert.pem") + " 2>&1; echo \"exit=$?\"");
  EXPECT_TRUE(contains(out, "tls_cert/tls_key: both are needed")) << out;
  EXPECT_TRUE(contains(out, "exit=2")) << out;
  out = run(bin + " --tls-cert /nonexistent.pem --tls-key " + files().f("key.pem") +
            " 2>&1; echo \"exit=$?\"");
  EXPECT_TRUE(contains(out, "cert_file /nonexistent.pem: No such file")) << out;
  EXPECT_TRUE(contains(out, "exit=2")) << out;
  out = run(bin + " --tls-cert " + files().f("renewed.pem") + " --tls-key " + files().f("key.pem") +
            " 2>&1; echo \"exit=$?\"");
  EXPECT_TRUE(contains(out, "key_file")) << out;
  EXPECT_TRUE(contains(out, "exit=2")) << out;
  out = run("GORO_TLS_CERT=" + files().f("cert.pem") + " GORO_TLS_KEY=" + files().f("key.pem") +
            " " + bin + " --print-config");
  EXPECT_TRUE(contains(out, "tls_cert = \"" + files().f("cert.pem") + "\"")) << out;
}

}  // namespace
