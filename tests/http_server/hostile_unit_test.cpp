// Hostile clients against an in-process server (unit label: these run in
// the release, ASan, TSan and debug suites). The integration tests in
// hostile_test.cpp and slowhttp_test.cpp do the same at full scale against
// goro-hello; these keep every behaviour the issue asks for under the
// sanitizers: silent connections at the cap, a peer that never reads, a
// pipelining flood that never reads, the cap's log limit, and the memory a
// big request head leaves on an idle connection.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "goro/http/metrics.hpp"
#include "tests/http_server/test_util.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GORO_TEST_SANITIZER_HEAP 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GORO_TEST_SANITIZER_HEAP 1
#endif
#if defined(GORO_TEST_SANITIZER_HEAP)
// The sanitizer runtimes' allocator statistics (compiler-rt's
// sanitizer/allocator_interface.h, which GCC does not install).
extern "C" std::size_t
__sanitizer_get_current_allocated_bytes();  // NOLINT(bugprone-reserved-identifier)
#endif

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::get;
using goro_test::TestServer;
namespace http = goro::http;
using Clock = std::chrono::steady_clock;

// Bytes the process's allocator has handed out and not taken back: the
// sanitizer's count under ASan/TSan (freed memory in its quarantine is not
// counted), glibc's otherwise.
std::size_t heap_in_use() {
#if defined(GORO_TEST_SANITIZER_HEAP)
  return __sanitizer_get_current_allocated_bytes();
#else
  const struct mallinfo2 mi = ::mallinfo2();
  return mi.uordblks + mi.hblkhd;
#endif
}

// A /metrics gauge or counter without labels (process-wide).
double metric(std::string_view name) {
  return goro_test::metric_in_process(name);
}

using goro_test::eventually;

struct Seen {
  std::atomic<int> write_failures{0};
  std::atomic<int> timeouts{0};
  std::atomic<bool> hold_released{false};  // ends /hold
};

http::Router routes(const std::shared_ptr<Seen>& seen) {
  http::Router r;
  r.handle("GET /plaintext",
           [](http::Request&, http::ResponseWriter& w) { (void)w.write("Hello, World!"); });
  // In its handler until the test says so (at most 30 s).
  r.handle("GET /hold", [seen](http::Request&, http::ResponseWriter& w) {
    for (int i = 0; i < 3000 && !seen->hold_released.load(); ++i)
      goro::sleep_for(10ms);
    (void)w.write("held");
  });
  // 64 MiB in 64 KiB writes: far more than the socket buffers hold.
  r.handle("GET /big", [seen](http::Request&, http::ResponseWriter& w) {
    const std::string piece(64 << 10, 'z');
    for (int i = 0; i < 1024; ++i) {
      const http::WriteResult wr = w.write(piece);
      if (!wr) {
        seen->write_failures.fetch_add(1);
        if (wr.error() == goro::errc::timeout) seen->timeouts.fetch_add(1);
        return;
      }
    }
  });
  return r;
}

// Silent connections past the cap: a normal request is still answered (a
// silent one is evicted for it), and every silent one is closed once the
// read-header timeout from accept has passed.
TEST(HostileInProcess, SilentConnectionsPastTheCapThenANormalRequest) {
  // Under TSan a goroutine that needs a new G costs its TSan fiber, about
  // 12 ms of CPU (perf, 2026-11-26: __tsan::CreateThreadContext and the
  // memset of its state; Gs and their fibers are reused after that): 85
  // accepts/s on an idle machine, 22/s with four busy loops and another
  // TSan test beside it, so 220 connections took longer to accept than the
  // header timeout gave the first of them, and the cap never filled. The
  // same shape at a tenth of the scale there: past the cap by 20.
#if defined(GORO_TSAN)
  constexpr int kCap = 20;
#else
  constexpr int kCap = 200;
#endif
  constexpr int kSilent = kCap + 20;
  auto seen = std::make_shared<Seen>();
  // 5 s: every silent connection is accepted well before the first of them
  // times out, even under TSan on a loaded machine (with 1 s the first ones
  // were closed before the last were accepted, and the cap never filled).
  TestServer s(routes(seen), {.read_header_timeout = 5s, .max_connections = kCap});
  std::vector<std::unique_ptr<Client>> silent;
  for (int i = 0; i < kSilent; ++i) {
    silent.push_back(std::make_unique<Client>(s.port(), 10000ms));
    ASSERT_TRUE(silent.back()->connected()) << i;
  }
  // Every silent connection accepted (or refused at the cap) before asking.
  ASSERT_TRUE(eventually([] { return metric("goro_http_connections") >= kCap; }, 20s))
      << "open: " << metric("goro_http_connections")
      << "; server log: " << (s.log().empty() ? std::string("(empty)") : s.log().front());
  const auto t0 = Clock::now();
  Client c(s.port());
  ASSERT_TRUE(c.send(get("/plaintext")));
  const auto r = c.read_response();
  const double took_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "Hello, World!");
  // The bound is 1 s; a loaded sanitizer build keeps well inside 2.
  EXPECT_LT(took_ms, 2000.0);
  // Closed within the header timeout (5 s from accept), with slack for a
  // loaded machine: no silent connection stays open.
  const auto closing_from = Clock::now();
  int closed = 0;
  for (auto& sc : silent)
    closed += sc->closed_by_peer() ? 1 : 0;
  EXPECT_EQ(closed, kSilent);
  EXPECT_LT(Clock::now() - closing_from, 12s);
}

// The cap's refusal is logged at most once a second, however many clients
// are refused.
TEST(HostileInProcess, RefusalsAtTheCapAreLoggedOnceASecond) {
  auto seen = std::make_shared<Seen>();
  TestServer s(routes(seen), {.max_connections = 1});
  Client busy(s.port());
  ASSERT_TRUE(busy.send(get("/hold")));
  // In its handler: nothing to evict, every newcomer is refused.
  ASSERT_TRUE(eventually([] { return metric("goro_http_requests_in_flight") >= 1; }, 10s));
  const auto t0 = Clock::now();
  int refused = 0;
  for (int i = 0; i < 30; ++i) {
    Client c(s.port());
    refused += c.read_response().status == 503 ? 1 : 0;
  }
  const auto took = Clock::now() - t0;
  seen->hold_released.store(true);
  EXPECT_EQ(refused, 30);
  EXPECT_EQ(busy.read_response().status, 200);
  int lines = 0;
  for (const std::string& line : s.log())
    lines += line.find("max_connections (1) reached") != std::string::npos ? 1 : 0;
  EXPECT_GE(lines, 1);
  // One line per started second of refusals.
  EXPECT_LE(lines,
            1 + static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(took).count()))
      << "refusals took " << std::chrono::duration<double>(took).count() << " s";
}

// A peer that asks for a big response and never reads it: the write timeout
// fails the handler's write, the connection and its goroutine go, and
// everyone else is served meanwhile.
TEST(HostileInProcess, APeerThatNeverReadsIsCutByTheWriteTimeout) {
  auto seen = std::make_shared<Seen>();
  TestServer s(routes(seen), {.write_timeout = 500ms});
  const double open_before = metric("goro_http_connections");
  Client stuck(s.port());
  int small = 4096;
  ::setsockopt(stuck.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  ASSERT_TRUE(stuck.send(get("/big")));
  for (int i = 0; i < 20; ++i) {
    Client c(s.port());
    ASSERT_TRUE(c.send(get("/plaintext")));
    EXPECT_EQ(c.read_response().status, 200);
  }
  EXPECT_TRUE(eventually([&] { return seen->write_failures.load() == 1; }, 10s));
  EXPECT_EQ(seen->timeouts.load(), 1) << "the handler's write failed with goro::errc::timeout";
  EXPECT_TRUE(eventually([&] { return metric("goro_http_connections") <= open_before; }, 10s))
      << "the stuck connection was closed";
}

// Pipelined requests that are never read: the server stops reading once its
// writes block (nothing queues in its memory) and the write timeout frees
// the connection; others are served throughout.
TEST(HostileInProcess, PipeliningFloodThatNeverReads) {
  auto seen = std::make_shared<Seen>();
  TestServer s(routes(seen), {.write_timeout = 500ms});
  const double open_before = metric("goro_http_connections");
  Client flood(s.port());
  int small = 4096;
  ::setsockopt(flood.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  std::string burst;
  for (int i = 0; i < 500; ++i)
    burst += get("/plaintext");
  std::size_t sent = 0;
  const auto stop = Clock::now() + 2s;
  while (Clock::now() < stop) {
    const ssize_t n = ::send(flood.fd(), burst.data(), burst.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else {
      std::this_thread::sleep_for(5ms);
    }
  }
  EXPECT_GT(sent, burst.size()) << "the flood got going";
  for (int i = 0; i < 20; ++i) {
    Client c(s.port());
    ASSERT_TRUE(c.send(get("/plaintext")));
    EXPECT_EQ(c.read_response().status, 200);
  }
  EXPECT_TRUE(eventually([&] { return metric("goro_http_connections") <= open_before; }, 10s))
      << "the write timeout closed the flooded connection";
}

// Memory returns after a big request: connections that each carried one
// ~900 KiB request head and now rest hold about what a small request leaves
// (heap bytes in use; the RSS bound of 64 KiB is checked against goro-hello
// by Hostile.IdleConnectionsGiveBackWhatABigHeadGrew). The goroutine is kept
// (idle_release_after 0), so this is the buffers' shrinking alone.
TEST(HostileInProcess, AnIdleConnectionGivesBackWhatABigHeadGrew) {
  auto seen = std::make_shared<Seen>();
  TestServer s(routes(seen), {.idle_release_after = 0s});
  constexpr int kConns = 20;
  const std::string big =
      "GET /plaintext HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(900 << 10, 'b') + "\r\n\r\n";
  std::vector<std::unique_ptr<Client>> held;
  auto hold = [&](const std::string& request) {
    for (int i = 0; i < kConns; ++i) {
      auto c = std::make_unique<Client>(s.port());
      ASSERT_TRUE(c->send(request));
      ASSERT_EQ(c->read_response().status, 200);
      held.push_back(std::move(c));
    }
    std::this_thread::sleep_for(300ms);  // every one back at rest
  };
  const std::size_t heap0 = heap_in_use();
  hold(get("/plaintext"));
  const std::size_t heap_small = heap_in_use();
  hold(big);
  const std::size_t heap_big = heap_in_use();
  const double per_small =
      (static_cast<double>(heap_small) - static_cast<double>(heap0)) / kConns / 1024;
  const double per_big =
      (static_cast<double>(heap_big) - static_cast<double>(heap_small)) / kConns / 1024;
  std::printf(
      "heap per idle connection: %.1f KiB after a small request, %.1f KiB after a "
      "900 KiB head\n",
      per_small, per_big);
  EXPECT_LE(per_big, 64.0) << "KiB of heap held per idle connection after one ~900 KiB head";
}

}  // namespace
