// The server's finite default deadlines (issue 17): read_timeout bounds a
// trickled body, write_timeout frees a connection whose client never reads,
// a handler moves either for itself (Go's ResponseController), a file body
// moves the write deadline as the client takes it, and a body the server
// could not read is answered 408/400 when the handler said nothing.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "goro/http/file_server.hpp"
#include "tests/http_server/test_util.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::get;
using goro_test::TestServer;
namespace http = goro::http;
using Clock = std::chrono::steady_clock;

http::Handler body_routes() {
  static http::Router r;
  static bool once = [] {
    // Reads the whole body; answers its size, or nothing if the read failed.
    r.handle("POST /read", [](http::Request& req, http::ResponseWriter& w) {
      auto body = req.body().read_all();
      if (body) (void)w.write(std::to_string(body->size()));
    });
    r.handle("POST /read-patiently", [](http::Request& req, http::ResponseWriter& w) {
      req.set_read_deadline(Clock::now() + 20s);
      auto body = req.body().read_all();
      if (body) (void)w.write(std::to_string(body->size()));
    });
    r.handle("GET /late", [](http::Request&, http::ResponseWriter& w) {
      goro::sleep_for(600ms);
      (void)w.write("late");
    });
    r.handle("GET /late-patiently", [](http::Request&, http::ResponseWriter& w) {
      w.set_write_deadline(Clock::now() + 20s);
      goro::sleep_for(600ms);
      (void)w.write("late");
    });
    return true;
  }();
  (void)once;
  return r;
}

// Sends `head`, then `n` body bytes one every `gap`, stopping early if the
// server closes the connection. Returns how many bytes went out.
int trickle(Client& c, const std::string& head, int n, std::chrono::milliseconds gap) {
  if (!c.send(head)) return 0;
  int sent = 0;
  for (; sent < n; ++sent) {
    std::this_thread::sleep_for(gap);
    if (::send(c.fd(), "x", 1, MSG_NOSIGNAL) != 1) break;
  }
  return sent;
}

TEST(Deadlines, DefaultsAreFinite) {
  const http::ServerOptions o;
  EXPECT_EQ(o.read_timeout, 60s);
  EXPECT_EQ(o.write_timeout, 60s);
  EXPECT_EQ(o.read_header_timeout, 10s);
}

TEST(Deadlines, ReadTimeoutCutsATrickledBodyWith408) {
  TestServer s(body_routes(), {.read_timeout = 800ms});
  Client c(s.port(), 10s);
  const auto start = Clock::now();
  std::thread t([&] {
    trickle(c, "POST /read HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n", 100, 50ms);
  });
  auto r = c.read_response();
  const auto took = Clock::now() - start;
  t.join();
  EXPECT_EQ(r.status, 408) << "the server answers for the silent handler; never an empty 200";
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_LT(took, 4s) << "cut near read_timeout, not after the 5 s the body would take";
}

TEST(Deadlines, AHandlerMovesItsReadDeadline) {
  TestServer s(body_routes(), {.read_timeout = 300ms});
  Client c(s.port(), 10s);
  std::thread t([&] {
    trickle(c, "POST /read-patiently HTTP/1.1\r\nHost: t\r\nContent-Length: 20\r\n\r\n", 20, 50ms);
  });
  auto r = c.read_response();
  t.join();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "20");
}

// 100-continue, then nothing: never a 200 (issue 17).
TEST(Deadlines, ContinueFollowedBySilenceIs408) {
  TestServer s(body_routes(), {.read_header_timeout = 300ms, .read_timeout = 60s});
  Client c(s.port(), 10s);
  ASSERT_TRUE(c.send(
      "POST /read HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n"));
  auto cont = c.read_response();
  EXPECT_EQ(cont.status, 100);
  auto r = c.read_response();
  EXPECT_EQ(r.status, 408);
}

TEST(Deadlines, BodyCutShortIs400) {
  TestServer s(body_routes());
  Client c(s.port(), 10s);
  ASSERT_TRUE(c.send("POST /read HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc"));
  ::shutdown(c.fd(), SHUT_WR);
  auto r = c.read_response();
  EXPECT_EQ(r.status, 400);
}

TEST(Deadlines, WriteTimeoutCoversTheHandlerUnlessItMovesIt) {
  TestServer s(body_routes(), {.write_timeout = 300ms});
  {
    Client c(s.port(), 10s);
    ASSERT_TRUE(c.send(get("/late")));
    auto r = c.read_response();
    EXPECT_FALSE(r.ok) << "600 ms of handler against a 300 ms write deadline: " << r.status_line;
  }
  {
    Client c(s.port(), 10s);
    ASSERT_TRUE(c.send(get("/late-patiently")));
    auto r = c.read_response();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "late");
  }
}

// Go resets the write deadline once a request's head is read: a head that
// trickles in does not eat the handler's write_timeout. The server reads the
// clock once per request where it can (Exchange::head_at); this catches a
// head_at left at the head's first byte (or at accept, for the first one).
TEST(Deadlines, WriteTimeoutRunsFromTheEndOfTheHead) {
  TestServer s(body_routes(), {.write_timeout = 1500ms});
  Client c(s.port(), 10s);
  for (int i = 0; i < 2; ++i) {  // the connection's first request, then a keep-alive one
    ASSERT_TRUE(c.send("GET /late HTTP/1.1\r\n"));
    std::this_thread::sleep_for(1s);
    ASSERT_TRUE(c.send("Host: t\r\n\r\n"));
    // The handler writes 600 ms after the head's end, 1.6 s after its start.
    auto r = c.read_response();
    ASSERT_EQ(r.status, 200) << "request " << i << ": " << r.status_line;
    EXPECT_EQ(r.body, "late");
  }
}

// A file body outlives write_timeout as long as the client keeps taking
// it: each 4 MiB slice has its own deadline.
TEST(Deadlines, SlowDownloadOutlivesWriteTimeoutWhileItProgresses) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("goro-deadline-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  constexpr std::size_t kSize = 16u << 20;
  {
    std::ofstream f(dir / "big.bin", std::ios::binary);
    const std::string block(1 << 20, 'f');
    for (std::size_t i = 0; i < kSize / block.size(); ++i)
      f << block;
  }
  http::Router r;
  r.handle("GET /", http::file_server(dir.string()));
  TestServer s(r, {.write_timeout = 2s});
  Client c(s.port(), 10s);
  int small = 64 << 10;
  ::setsockopt(c.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  ASSERT_TRUE(c.send(get("/big.bin")));
  // 4 MiB/s: 4 s in all, twice write_timeout; 1 s per slice.
  std::size_t got = 0;
  const auto start = Clock::now();
  std::vector<char> buf(64 << 10);
  while (got < kSize + 100) {
    const ssize_t n = ::recv(c.fd(), buf.data(), buf.size(), 0);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
    const auto due = start + std::chrono::microseconds(got / 4);  // 4 bytes per µs
    std::this_thread::sleep_until(due);
    if (got >= kSize) break;  // the head came first; the body is at least this
  }
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  std::filesystem::remove_all(dir);
  EXPECT_GE(got, kSize) << "cut after " << took << " s";
  EXPECT_GT(took, 2.5) << "the download outlived write_timeout";
}

}  // namespace
