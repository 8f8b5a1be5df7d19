// Slowloris: 1,000 connections dribble header bytes; the read-header timeout
// (set low here) closes each one while normal requests keep succeeding.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>

#include <cstdio>

#include "tests/http_server/test_util.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::get;
using goro_test::TestServer;
namespace http = goro::http;

TEST(HttpSlowloris, DribblingConnectionsAreClosedWhileOthersAreServed) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  const int kSlow = rl.rlim_max >= 4096 ? 1000 : static_cast<int>(rl.rlim_max / 4);
  const rlim_t want = static_cast<rlim_t>(kSlow) * 2 + 200;
  if (rl.rlim_cur < want) {
    rl.rlim_cur = std::min(rl.rlim_max, want);
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  http::Router r;
  r.handle("GET /plaintext",
           [](http::Request&, http::ResponseWriter& w) { (void)w.write("Hello, World!"); });
  TestServer s(r, {.read_header_timeout = 1s});

  std::vector<Client> slow;
  slow.reserve(kSlow);
  for (int i = 0; i < kSlow; ++i) {
    slow.emplace_back(s.port(), 100ms);
    ASSERT_TRUE(slow.back().connected());
    ASSERT_TRUE(slow.back().send("GET /plaintext HTTP/1.1\r\nHost: t\r\n"));
  }
  const auto start = std::chrono::steady_clock::now();

  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0}, late{0};
  std::thread normal([&] {
    while (!stop.load()) {
      const auto t0 = std::chrono::steady_clock::now();
      // A loaded machine is slow, not broken: under TSan with four busy
      // loops the dribblers alone keep the server busy for ~14 s.
      Client c(s.port(), 30000ms);
      const bool sent = c.connected() && c.send(get("/plaintext"));
      // The server rightly closes a connection whose head has not come in
      // within the 1 s read-header timeout: a client thread that a busy
      // machine held up that long between connect and send is not a
      // request the server failed. One sent within half of it must be served.
      const bool in_time = std::chrono::steady_clock::now() - t0 < 500ms;
      const int status = sent ? c.read_response().status : -1;
      if (status == 200) {
        ok.fetch_add(1);
      } else if (in_time) {
        failed.fetch_add(1);
        std::fprintf(
            stderr, "normal request: %s, status %d after %.0f ms\n", sent ? "sent" : "not sent",
            status,
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      } else {
        late.fetch_add(1);
      }
      std::this_thread::sleep_for(10ms);
    }
  });

  // Dribble one header line per connection every 200 ms until each is closed.
  std::vector<bool> closed(kSlow, false);
  int open = kSlow;
  while (open > 0 && std::chrono::steady_clock::now() - start < 45s) {
    std::vector<pollfd> fds;
    for (int i = 0; i < kSlow; ++i) {
      if (!closed[i]) fds.push_back({slow[i].fd(), POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 200);
    int k = 0;
    for (int i = 0; i < kSlow; ++i) {
      if (closed[i]) continue;
      const pollfd& p = fds[k++];
      if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        char buf[256];
        ssize_t n = ::recv(p.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n <= 0) {
          closed[i] = true;
          --open;
          continue;
        }
      }
      (void)slow[i].send("X-Slow: 1\r\n");
    }
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  stop.store(true);
  normal.join();
  // With a 1 s read-header timeout every dribbler is gone after ~1-2 s on an
  // idle machine; without the timeout none is, ever (the 45 s cap). The
  // bounds leave room for four busy loops on the two cores (under TSan with
  // them: 13.3 s).
  EXPECT_EQ(open, 0);
  EXPECT_LT(elapsed, 30s);
  EXPECT_GT(ok.load(), 3);
  EXPECT_EQ(failed.load(), 0);
  if (late.load() > 0)
    std::fprintf(stderr, "%d normal request(s) sent late, not counted\n", late.load());
}

}  // namespace
