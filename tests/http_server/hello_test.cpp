// goro-hello as a child process, driven by real clients: curl, Python's
// http.client, wrk and raw sockets.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/http_server/test_util.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::get;

struct Hello : goro_test::ChildServer {
  explicit Hello(std::vector<std::string> extra = {})
      : ChildServer(GORO_HELLO_PATH, std::move(extra)) {}
};

std::string run(const std::string& cmd) {
  return goro_test::run_command(cmd);
}

TEST(GoroHello, CurlEndpoints) {
  Hello h;
  ASSERT_GT(h.port, 0);
  const std::string base = "curl -s -o - -w ' %{http_code}' http://" + h.addr;
  EXPECT_EQ(run(base + "/plaintext"), "Hello, World! 200");
  EXPECT_EQ(run(base + "/json"), R"({"message":"Hello, World!"} 200)");
  EXPECT_EQ(run(base + "/echo --data-binary abc"), "abc 200");
  EXPECT_EQ(run(base + "/healthz"), "ok\n 200");
  EXPECT_EQ(run(base + "/readyz"), "ready\n 200");
  EXPECT_EQ(run(base + "/delay?ms=20"), "slept 20 ms\n 200");
  EXPECT_EQ(run(base + "/nope"), "404 page not found\n 404");
  const std::string metrics = run("curl -s http://" + h.addr + "/metrics");
  EXPECT_NE(metrics.find("goro_maxprocs "), std::string::npos);
  EXPECT_NE(metrics.find("goro_http_requests_total{code=\"2xx\"}"), std::string::npos);
  EXPECT_NE(metrics.find("goro_http_request_duration_seconds_bucket{le=\"+Inf\"}"),
            std::string::npos);
  // 100-continue through curl (it sends Expect for large bodies).
  EXPECT_EQ(
      run("head -c 2000000 /dev/zero | curl -s -H 'Expect: 100-continue' --data-binary @- http://" +
          h.addr + "/echo | wc -c"),
      "2000000\n");
}

// An operator sees the hostile-client defaults: every timeout finite (a
// value with a unit, not 0 or "off"), the connection cap a number.
TEST(GoroHello, PrintConfigShowsFiniteTimeouts) {
  const std::string out = run(std::string(GORO_HELLO_PATH) + " --print-config");
  for (const char* key : {"read_header_timeout", "read_timeout", "write_timeout", "idle_timeout"}) {
    const std::string line_start = std::string("\n") + key + " = \"";
    const std::size_t at = out.find(line_start);
    ASSERT_NE(at, std::string::npos) << key << " missing from:\n" << out;
    const std::size_t from = at + line_start.size();
    const std::string value = out.substr(from, out.find('"', from) - from);
    EXPECT_NE(value, "0s") << key;
    EXPECT_TRUE(!value.empty() && value[0] >= '1' && value[0] <= '9') << key << " = " << value;
  }
  EXPECT_NE(out.find("\nread_timeout = \"1m\""), std::string::npos) << out;
  EXPECT_NE(out.find("\nwrite_timeout = \"1m\""), std::string::npos) << out;
  EXPECT_NE(out.find("\nmax_connections = 10000"), std::string::npos) << out;
}

TEST(GoroHello, PythonHttpClient) {
  Hello h;
  ASSERT_GT(h.port, 0);
  const std::string script = R"PY(
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
out = []
for path in ["/plaintext", "/json", "/nope"]:
    c.request("GET", path)
    r = c.getresponse()
    out.append("%d %s" % (r.status, r.read().decode()))
c.request("HEAD", "/plaintext")
r = c.getresponse(); r.read()
out.append("HEAD %d %s" % (r.status, r.getheader("Content-Length")))
c.request("POST", "/echo", body=iter([b"chunk1-", b"chunk2"]), encode_chunked=True)
r = c.getresponse()
out.append("%d %s" % (r.status, r.read().decode()))
c.request("DELETE", "/plaintext")
r = c.getresponse(); r.read()
out.append("%d %s" % (r.status, r.getheader("Allow")))
print("|".join(out))
)PY";
  std::ofstream("/tmp/goro_http_client_test.py") << script;
  EXPECT_EQ(run("python3 /tmp/goro_http_client_test.py " + std::to_string(h.port)),
            "200 Hello, World!|200 {\"message\":\"Hello, World!\"}|404 404 page not found\n|"
            "HEAD 200 13|200 chunk1-chunk2|405 GET, HEAD\n");
}

TEST(GoroHello, ChunkedUpload50MiBThroughEcho) {
  Hello h({"--max_body_bytes", "64MiB"});
  ASSERT_GT(h.port, 0);
  const std::string file = "/tmp/goro_http_50mib.bin";
  run("head -c 52428800 /dev/urandom > " + file);
  const std::string want = run("sha256sum < " + file);
  const std::string got = run("curl -s -H 'Transfer-Encoding: chunked' --data-binary @" + file +
                              " http://" + h.addr + "/echo | sha256sum");
  EXPECT_EQ(got, want);
  // Over the default limit (10 MiB): a declared length is refused at the head
  // with 413; a chunked one is cut off when the limit passes (the streaming
  // echo has begun its 200 by then, so the connection closes mid-response).
  Hello small;
  EXPECT_EQ(run("curl -s -o /dev/null -w '%{http_code}' --data-binary @" + file + " http://" +
                small.addr + "/echo"),
            "413");
  EXPECT_NE(run("curl -s -o /dev/null -H 'Transfer-Encoding: chunked' --data-binary @" + file +
                " http://" + small.addr + "/echo; echo $?"),
            "0\n");
  std::remove(file.c_str());
}

// A chunked upload that passes the body limit after the echo's 200 began
// streaming: the response is cut visibly (no final chunk, connection
// closed), so the client cannot take the truncated echo for the whole one.
TEST(GoroHello, EchoCutByTheBodyLimitHasNoFinalChunk) {
  Hello h({"--max_body_bytes", "64KiB"});
  ASSERT_GT(h.port, 0);
  const std::string script = R"PY(
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(20)
piece = b"x" * 40960
s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" +
          b"a000\r\n" + piece + b"\r\n" + b"a000\r\n" + piece + b"\r\n0\r\n\r\n")
got = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
except ConnectionResetError:
    pass
head, _, body = got.partition(b"\r\n\r\n")
print(head.split(b"\r\n")[0].decode(), b"chunked" in head.lower(), len(body) > 40960,
      body.endswith(b"0\r\n\r\n"))
)PY";
  std::ofstream("/tmp/goro_echo_cut_test.py") << script;
  // Status line, chunked, the first 40 KiB echoed, no final chunk.
  EXPECT_EQ(run("python3 /tmp/goro_echo_cut_test.py " + std::to_string(h.port)),
            "HTTP/1.1 200 OK True True False\n");
}

// The body fails while the echo is still buffered (nothing went out): the
// client gets the body's status and a close, not a silent close or a 200.
TEST(GoroHello, EchoWhoseBodyFailsBeforeAnythingWentOutGetsItsStatus) {
  Hello h({"--max_body_bytes", "64KiB"});
  ASSERT_GT(h.port, 0);
  const std::string script = R"PY(
import socket, sys
def ask(tail):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.settimeout(20)
    try:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" +
                  b"5\r\nhello\r\n" + tail)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server stopped reading: its answer is still there to read
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except ConnectionResetError:
        pass
    head, _, body = got.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    close = any(l.lower() == b"connection: close" for l in lines[1:])
    return "%s close=%s echoed=%s" % (lines[0].decode(), close, b"hello" in body)
print(ask(b"5\r\nworldXX\r\n0\r\n\r\n"))           # chunk framing broken
print(ask(b"11000\r\n" + b"y" * 0x11000 + b"\r\n0\r\n\r\n"))  # over 64 KiB
)PY";
  // Per process: the presets' suites may run at once on one machine.
  const std::string path = "/tmp/goro_echo_unsent_test." + std::to_string(::getpid()) + ".py";
  std::ofstream(path) << script;
  const std::string got = run("python3 " + path + " " + std::to_string(h.port));
  std::remove(path.c_str());
  EXPECT_EQ(got,
            "HTTP/1.1 400 Bad Request close=True echoed=False\n"
            "HTTP/1.1 413 Request Entity Too Large close=True echoed=False\n");
}

TEST(GoroHello, GracefulShutdownUnderSigterm) {
  GORO_SKIP_SIGNAL_TIMING_UNDER_TSAN();
  Hello h;
  ASSERT_GT(h.port, 0);
  constexpr int kRequests = 50;
  std::vector<std::thread> clients;
  clients.reserve(kRequests);
  std::atomic<int> ok{0};
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&] {
      Client c(h.port, 5000ms);
      if (c.send(get("/delay?ms=1000")) && c.read_response().status == 200) ok.fetch_add(1);
    });
  }
  // All fifty in their handlers before the signal (a connection still in
  // the listener's backlog when it closes would be reset, rightly).
  auto in_flight = [&] {
    Client m(h.port);
    if (!m.send(get("/metrics"))) return 0.0;
    return goro_test::metric_in(m.read_response().body, "goro_http_requests_in_flight");
  };
  // The scrape counts itself.
  ASSERT_TRUE(goro_test::eventually([&] { return in_flight() >= kRequests + 1; }))
      << "in flight: " << in_flight();
  const auto sigterm_at = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(h.pid, SIGTERM), 0);
  // The listener closes at once (the signal thread's shutdown closes it).
  EXPECT_TRUE(goro_test::eventually([&] { return !Client(h.port).connected(); }, 2s));
  const int status = h.wait_exit(10000ms);
  const auto exited_after = std::chrono::steady_clock::now() - sigterm_at;
  for (auto& t : clients)
    t.join();
  EXPECT_EQ(ok.load(), kRequests);
  EXPECT_EQ(status, 0);
  // The requests take 1 s; a shutdown that waited for its 30 s timeout, or
  // for the idle connections, would take far longer.
  EXPECT_LT(exited_after, 5s);
}

// The signal handlers are installed before the address is printed: a
// SIGTERM the moment a script has read it stops the server cleanly (it once
// killed it with status 143, SIGTERM's default action).
TEST(GoroHello, SigtermRightAfterTheAddressLineExitsZero) {
  GORO_SKIP_SIGNAL_TIMING_UNDER_TSAN();
  for (int i = 0; i < 5; ++i) {
    Hello h;
    ASSERT_GT(h.port, 0);
    ASSERT_EQ(kill(h.pid, SIGTERM), 0);
    EXPECT_EQ(h.wait_exit(3000ms), 0) << "round " << i;
  }
}

TEST(GoroHello, WrkSmokeHasNoErrors) {
  if (run("command -v wrk").empty()) GTEST_SKIP() << "wrk not installed";
  Hello h;
  ASSERT_GT(h.port, 0);
  const std::string out = run("wrk -t1 -c64 -d5s http://" + h.addr + "/plaintext 2>&1");
  std::printf("%s\n", out.c_str());
  EXPECT_NE(out.find("Requests/sec"), std::string::npos);
  EXPECT_EQ(out.find("Socket errors"), std::string::npos);
  EXPECT_EQ(out.find("Non-2xx"), std::string::npos);
}

}  // namespace
