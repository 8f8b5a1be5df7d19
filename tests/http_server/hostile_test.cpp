// goro-hello, with its default settings unless a test says otherwise,
// against clients that try to take it offline: thousands of connections
// that never send a byte, a pipelining flood that never reads its answers.
// The test process holds the client sockets and goro-hello the server ones,
// so neither passes the 20,000-descriptor limit.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <thread>

#include "tests/http_server/test_util.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::get;
using Clock = std::chrono::steady_clock;

struct Hello : goro_test::ChildServer {
  explicit Hello(std::vector<std::string> args = {})
      : ChildServer(GORO_HELLO_PATH, std::move(args)) {}
  Client::Response fetch(const std::string& path,
                         std::chrono::milliseconds timeout = 5000ms) const {
    Client c(port, timeout);
    c.send(get(path));
    return c.read_response();
  }
  // A /metrics value (0 if absent).
  double metric(const std::string& name) const {
    return std::max(0.0, goro_test::metric_in(fetch("/metrics").body, name));
  }
  // The child's resident set in KiB, from /proc.
  long rss_kib() const {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(f, line);) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
  }
};

// A connected, non-blocking client socket (-1 on failure).
int dial(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// True once the server has closed `fd` (EOF or a reset).
bool closed_by_server(int fd) {
  char c;
  const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// The issue-17 acceptance: with default settings (10,000 connections, 10 s
// header timeout), 10,500 connections that never send a byte, then a normal
// request: answered 200 within 1 s, and the silent ones closed within the
// header timeout.
TEST(Hostile, TenThousandFiveHundredSilentConnectionsThenANormalRequest) {
  Hello h;
  ASSERT_GT(h.port, 0);
  constexpr int kSilent = 10'500;
  std::vector<int> fds;
  fds.reserve(kSilent);
  const auto opened = Clock::now();
  for (int i = 0; i < kSilent; ++i) {
    const int fd = dial(h.port);
    ASSERT_GE(fd, 0) << "connect " << i << ": " << std::generic_category().message(errno);
    fds.push_back(fd);
  }
  const double open_s = std::chrono::duration<double>(Clock::now() - opened).count();
  // Every one accepted and registered before the clock starts: on a busy
  // machine (CI shares its cores) working through 10,500 queued accepts
  // alone can take seconds, and the bound is about the server at its cap,
  // not about the kernel's accept backlog. Each poll is itself a request.
  const auto accept_limit = Clock::now() + 60s;
  double accepted = 0;
  while ((accepted = h.metric("goro_http_connections_total")) < kSilent &&
         Clock::now() < accept_limit)
    std::this_thread::sleep_for(100ms);
  ASSERT_GE(accepted, kSilent) << "the server accepted every silent connection";
  const double accept_s = std::chrono::duration<double>(Clock::now() - opened).count();

  const auto asked = Clock::now();
  const Client::Response r = h.fetch("/plaintext", 5000ms);
  const double answer_s = std::chrono::duration<double>(Clock::now() - asked).count();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "Hello, World!");
  EXPECT_LT(answer_s, 1.0) << "a real client is not locked out";
  const double evicted = h.metric("goro_http_connections_evicted_total");
  // Each connection past the cap displaced a silent one, if the cap was
  // reached: when accepting them all took longer than the header timeout
  // (10 s; ASan on a loaded machine: 30 s), the first ones were closed by
  // it before the last arrived, and fewer had to be evicted.
  if (accept_s < 10.0) {
    EXPECT_GE(evicted, kSilent - 10'000) << "each connection past the cap displaced a silent one";
  }

  // The silent ones go at the header timeout (10 s from their accept).
  int open = 0;
  // (each within 10 s of its accept, the last accepted by accept_s; 10 s
  // more for closing 10,000 on a loaded machine: ASan there still had 1,907
  // open 13 s after the last accept. Still far from the 120 s idle timeout
  // that would close them otherwise.)
  const auto until = opened + std::chrono::duration<double>(accept_s) + 10s + 10s;
  do {
    std::this_thread::sleep_for(200ms);
    open = 0;
    for (int fd : fds)
      open += closed_by_server(fd) ? 0 : 1;
  } while (open > 0 && Clock::now() < until);
  const double closed_s = std::chrono::duration<double>(Clock::now() - opened).count();
  std::printf(
      "silent: %d opened in %.2f s, accepted by %.2f s; normal request answered in %.1f ms; "
      "%.0f evicted; all closed by %.1f s\n",
      kSilent, open_s, accept_s, answer_s * 1000, evicted, closed_s);
  EXPECT_EQ(open, 0) << "silent connections still open past the header timeout";
  for (int fd : fds)
    ::close(fd);
  EXPECT_EQ(h.fetch("/plaintext").status, 200);
  EXPECT_TRUE(h.wait_for_line(
      [](const std::string& l) {
        return l.find("max_connections (10000) reached") != std::string::npos;
      },
      2s))
      << "the cap is logged";
}

// A client that pipelines requests and never reads the answers: the server
// stops reading once its writes block (TCP pushes back; nothing queues in
// its memory), serves everyone else meanwhile, and the write timeout frees
// the connection and its goroutine.
TEST(Hostile, PipeliningFloodThatNeverReads) {
  Hello h({"--write_timeout", "2s"});
  ASSERT_GT(h.port, 0);
  const long rss_before = h.rss_kib();
  const double open_before = h.metric("goro_http_connections");
  const int flood = dial(h.port);
  ASSERT_GE(flood, 0);
  int small = 4096;
  ::setsockopt(flood, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  std::string burst;
  for (int i = 0; i < 1000; ++i)
    burst += get("/plaintext");
  // Write until the server stops taking requests (its writes are blocked and
  // it no longer reads): a few seconds of trying at most.
  std::size_t sent = 0;
  const auto stop = Clock::now() + 3s;
  while (Clock::now() < stop) {
    const ssize_t n = ::send(flood, burst.data(), burst.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else {
      std::this_thread::sleep_for(5ms);
    }
  }
  // Everyone else is served promptly meanwhile.
  std::vector<double> ms;
  for (int i = 0; i < 50; ++i) {
    const auto t0 = Clock::now();
    EXPECT_EQ(h.fetch("/plaintext").status, 200);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const long rss_during = h.rss_kib();
  // The write timeout (2 s) frees the flooded connection.
  double open_now = 0;
  const auto until = Clock::now() + 10s;
  while (Clock::now() < until && (open_now = h.metric("goro_http_connections")) > open_before)
    std::this_thread::sleep_for(200ms);
  std::printf(
      "flood: %zu bytes of requests sent (%.0f requests), rss %ld -> %ld KiB; others' max "
      "latency %.1f ms; open connections %.0f -> %.0f\n",
      sent, static_cast<double>(sent) / static_cast<double>(get("/plaintext").size()), rss_before,
      rss_during, ms.back(), open_before, open_now);
  // Fifty samples: the 99th percentile would be the worst one, which one
  // preemption of a busy machine's can push past 100 ms. A server that
  // stalls behind the flood keeps the others waiting for the write timeout
  // (2 s), which both bounds catch.
  EXPECT_LT(ms[ms.size() * 9 / 10], 100.0) << "p90 of the other clients";
  EXPECT_LT(ms.back(), 1000.0) << "the slowest of the other clients";
  EXPECT_LT(rss_during - rss_before, 16 * 1024) << "the flood is not queued in the server";
  // Both readings count the scrape's own connection.
  EXPECT_LE(open_now, open_before) << "the write timeout closed the flooded connection";
  ::close(flood);
}

// Memory returns after a big request (issue 17): connections that each
// carried one ~900 KiB request head and are now idle hold about what a
// connection that carried a small one does, not the grown buffers.
TEST(Hostile, IdleConnectionsGiveBackWhatABigHeadGrew) {
  Hello h;
  ASSERT_GT(h.port, 0);
  constexpr int kConns = 200;
  const std::string big =
      "GET /plaintext HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(900 << 10, 'b') + "\r\n\r\n";
  auto hold = [&](const std::string& request, std::vector<std::unique_ptr<Client>>& held) {
    for (int i = 0; i < kConns; ++i) {
      auto c = std::make_unique<Client>(h.port);
      ASSERT_TRUE(c->send(request));
      ASSERT_EQ(c->read_response().status, 200);
      held.push_back(std::move(c));
    }
    std::this_thread::sleep_for(300ms);  // every one back at rest
  };
  std::vector<std::unique_ptr<Client>> small_held, big_held;
  const long rss0 = h.rss_kib();
  hold(get("/plaintext"), small_held);
  const long rss_small = h.rss_kib();
  hold(big, big_held);
  const long rss_big = h.rss_kib();
  const double per_small = static_cast<double>(rss_small - rss0) / kConns;
  const double per_big = static_cast<double>(rss_big - rss_small) / kConns;
  std::printf(
      "RSS per idle connection: %.1f KiB after a small request, %.1f KiB after a "
      "900 KiB head (%ld -> %ld -> %ld KiB)\n",
      per_small, per_big, rss0, rss_small, rss_big);
#if defined(GORO_ASAN)
  // ASan's allocator keeps freed memory in its quarantine (and never gives
  // it back the way glibc's trim does): the server's RSS says nothing about
  // what it holds. The release build checks the bound.
  std::printf("(ASan build: the RSS bound is checked in release builds only)\n");
#else
  EXPECT_LE(per_big, 64.0) << "KiB held per idle connection after one ~900 KiB head";
#endif
}

}  // namespace
