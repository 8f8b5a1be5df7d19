// Idle connections without a goroutine (ServerOptions::idle_release_after;
// framework/http/server/conn.cpp "Released while idle"): a keep-alive
// connection at rest gives its goroutine back, a new one has none until its
// first bytes ("Started parked"), and everything a connection
// at rest must do still works: the next request (whole, split, pipelined,
// with a body), the idle timeout, graceful shutdown, eviction at the cap,
// and release and wake-up racing each other from many clients at once; and
// a rest that cannot write the responses it begins with closes, never
// releases.
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <sys/ioctl.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "goro/detail/fault.hpp"
#include "goro/http/metrics.hpp"
#include "tests/http_server/test_util.hpp"
#include "tests/tls/test_pki.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::get;
using goro_test::TestServer;
namespace http = goro::http;

http::Router routes() {
  http::Router r;
  r.handle("GET /plaintext", [](http::Request&, http::ResponseWriter& w) {
    w.header().set("Content-Type", "text/plain");
    (void)w.write("Hello, World!");
  });
  r.handle("POST /echo", [](http::Request& req, http::ResponseWriter& w) {
    auto body = req.body().read_all();
    if (!body) return;
    (void)w.write(*body);
  });
  return r;
}

// goro_http_connections_released from /metrics' text (process-wide).
long released_now() {
  return static_cast<long>(goro_test::metric_in_process("goro_http_connections_released"));
}

using goro_test::eventually;

std::string post_echo(std::string_view body) {
  return fmt::format("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{}", body.size(),
                     body);
}

// Twice: released when drained (the default, at once after each
// response) and after the 50 ms rest alone.
// NOLINTNEXTLINE(readability-function-size): a test's script, as the TEST body it was
void released_connections_serve_their_next_requests(bool when_drained) {
  const long base = released_now();
  ASSERT_GE(base, 0) << "goro_http_connections_released missing from /metrics";
  TestServer s(routes(), {.idle_release_after = 50ms, .release_when_drained = when_drained});
  constexpr int kConns = 20;
  std::vector<Client> cs;
  for (int i = 0; i < kConns; ++i) {
    cs.emplace_back(s.port());
    ASSERT_TRUE(cs.back().send(get("/plaintext")));
    EXPECT_EQ(cs.back().read_response().status, 200);
  }
  EXPECT_TRUE(eventually([&] { return released_now() == base + kConns; }))
      << "released: " << released_now() - base;
  // A whole request, a pipelined pair, a body: each wakes a goroutine.
  for (int i = 0; i < kConns; ++i) {
    Client& c = cs[static_cast<std::size_t>(i)];
    const std::string body = fmt::format("body-{}-{}", i, std::string(5000, 'x'));
    if (i % 3 == 0) {
      ASSERT_TRUE(c.send(get("/plaintext")));
      auto r = c.read_response();
      EXPECT_EQ(r.status, 200);
      EXPECT_EQ(r.body, "Hello, World!");
    } else if (i % 3 == 1) {
      ASSERT_TRUE(c.send(get("/plaintext") + post_echo(body)));
      EXPECT_EQ(c.read_response().body, "Hello, World!");
      EXPECT_EQ(c.read_response().body, body);
    } else {
      ASSERT_TRUE(c.send(post_echo(body)));
      EXPECT_EQ(c.read_response().body, body);
    }
  }
  // And at rest again, released again.
  EXPECT_TRUE(eventually([&] { return released_now() == base + kConns; }))
      << "released: " << released_now() - base;
  cs.clear();  // the clients close: each goroutine wakes to the EOF and ends
  EXPECT_TRUE(eventually([&] { return released_now() == base; }))
      << "released: " << released_now() - base;
}

TEST(IdleRelease, ReleasedConnectionsServeTheirNextRequests) {
  released_connections_serve_their_next_requests(true);
}

TEST(IdleRelease, ReleasedConnectionsServeTheirNextRequestsAfterTheRestAlone) {
  released_connections_serve_their_next_requests(false);
}

// release_when_drained: the goroutine goes as soon as the response is out
// and the socket holds nothing more, long before idle_release_after (30 s
// here); every request of a keep-alive connection then starts a goroutine
// of its own, and the connection is released between them. Off, the
// connection keeps its goroutine through a rest shorter than
// idle_release_after.
TEST(IdleRelease, ReleasedAtOnceWhenDrained) {
  const long base = released_now();
  TestServer s(
      routes(),
      {.idle_release_after = 30s, .release_when_drained = true, .release_when_drained_above = 0});
  Client c(s.port());
  for (int i = 0; i < 3; ++i) {
    const std::uint64_t spawns = goro::stats().spawns;
    ASSERT_TRUE(c.send(get("/plaintext")));
    auto r = c.read_response();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "Hello, World!");
    EXPECT_TRUE(eventually([&] { return released_now() == base + 1; }))
        << "request " << i << ": released " << released_now() - base;
    // The gauge rises before the successor is spawned (park_until_readable
    // counts the release first), so the spawn is waited for too.
    EXPECT_TRUE(eventually([&] { return goro::stats().spawns - spawns >= 1; }))
        << "no successor for request " << i;
  }
  // A pipelined pair: both answered before the release.
  ASSERT_TRUE(c.send(get("/plaintext") + get("/plaintext")));
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_TRUE(eventually([&] { return released_now() == base + 1; }));
}

// A released connection's successor woken by an edge with nothing to read
// releases again at once (conn.cpp "Woken for nothing") instead of parking
// in its read with its goroutine until idle_release_after (30 s here). In
// service such an edge is one the netpoller, on another thread, recorded
// for bytes a read took meanwhile; FaultSite::kStaleEdge records one at the
// release, so the successor starts at once and finds nothing.
TEST(IdleRelease, AWakeWithNothingToReadReleasesAgainAtOnce) {
  const long base = released_now();
  TestServer s(
      routes(),
      {.idle_release_after = 30s, .release_when_drained = true, .release_when_drained_above = 0});
  Client c(s.port());
  ASSERT_TRUE(c.send(get("/plaintext")));
  EXPECT_EQ(c.read_response().status, 200);
  ASSERT_TRUE(eventually([&] { return released_now() == base + 1; }));
  const std::uint64_t taken = goro::detail::faults_taken(goro::detail::FaultSite::kStaleEdge);
  const std::uint64_t spawns = goro::stats().spawns;
  goro::detail::arm_fault(goro::detail::FaultSite::kStaleEdge, 1, 0);
  ASSERT_TRUE(c.send(get("/plaintext")));  // its release takes the fault
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_TRUE(eventually([&] {
    return goro::detail::faults_taken(goro::detail::FaultSite::kStaleEdge) == taken + 1;
  }));
  // Two successors: the one the stale edge woke, and the one it parked
  // when it released again (a successor parked in its read makes none).
  EXPECT_TRUE(eventually([&] { return goro::stats().spawns - spawns >= 2; }))
      << "spawns: " << goro::stats().spawns - spawns;
  EXPECT_TRUE(eventually([&] { return released_now() == base + 1; }))
      << "released: " << released_now() - base;
  goro::detail::arm_fault(goro::detail::FaultSite::kStaleEdge, 0, 0);
  ASSERT_TRUE(c.send(get("/plaintext")));  // and it serves on
  auto r = c.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "Hello, World!");
}

TEST(IdleRelease, NotAtOnceWhenDrainedIsOff) {
  const long base = released_now();
  TestServer s(routes(), {.idle_release_after = 30s, .release_when_drained = false});
  Client c(s.port());
  ASSERT_TRUE(c.send(get("/plaintext")));
  EXPECT_EQ(c.read_response().status, 200);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(released_now(), base) << "released before idle_release_after";
  ASSERT_TRUE(c.send(get("/plaintext")));
  EXPECT_EQ(c.read_response().status, 200);
}

// release_when_drained_above: while the process has no more HTTP
// connections open than that per P, a drained connection keeps its
// goroutine (until idle_release_after, 30 s here); past it, each drained
// rest releases at once. Below: the default (128 per P) with one connection,
// then a threshold of one per P with a connection more than maxprocs().
TEST(IdleRelease, FewConnectionsKeepTheirGoroutinesWhenDrained) {
  const long base = released_now();
  TestServer s(routes(), {.idle_release_after = 30s, .release_when_drained = true});
  Client c(s.port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.send(get("/plaintext")));
    EXPECT_EQ(c.read_response().status, 200);
  }
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(released_now(), base) << "released with one connection open";
}

TEST(IdleRelease, ManyConnectionsReleaseAtOnceWhenDrained) {
  const long base = released_now();
  TestServer s(
      routes(),
      {.idle_release_after = 30s, .release_when_drained = true, .release_when_drained_above = 1});
  const int n = static_cast<int>(goro::stats().maxprocs) + 1;
  std::vector<std::unique_ptr<Client>> cs;
  cs.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    cs.push_back(std::make_unique<Client>(s.port()));
  // Every connection answered once: all n are open in the server (counted
  // at their start), so each rest from the second round on is over the
  // threshold and releases as soon as it is drained.
  for (int round = 0; round < 2; ++round) {
    for (auto& c : cs) {
      ASSERT_TRUE(c->send(get("/plaintext")));
      EXPECT_EQ(c->read_response().status, 200);
    }
  }
  EXPECT_TRUE(eventually([&] { return released_now() == base + n; }))
      << "released " << released_now() - base << " of " << n;
  for (auto& c : cs) {  // and they serve on
    ASSERT_TRUE(c->send(get("/plaintext")));
    EXPECT_EQ(c->read_response().body, "Hello, World!");
  }
}

// A head that arrives in two pieces across the wake-up: the new goroutine
// keeps reading under the read-header timeout.
TEST(IdleRelease, AHeadSplitAcrossTheWakeUpIsServed) {
  TestServer s(routes(), {.idle_release_after = 30ms});
  Client c(s.port());
  ASSERT_TRUE(c.send(get("/plaintext")));
  EXPECT_EQ(c.read_response().status, 200);
  std::this_thread::sleep_for(150ms);
  ASSERT_TRUE(c.send("GET /plaintext HTTP/1.1\r\nHo"));
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(c.send("st: t\r\n\r\n"));
  EXPECT_EQ(c.read_response().status, 200);
}

// The idle timeout runs from the response, across the release: not
// restarted by it, not cut short by it. Twice: released when drained, and
// after the rest alone, where the deadline put back on the socket at the
// release moment is the rest's own.
void idle_timeout_still_closes(bool when_drained) {
  TestServer s(
      routes(),
      {.idle_timeout = 600ms, .idle_release_after = 50ms, .release_when_drained = when_drained});
  Client c(s.port());
  // Before the send: the timeout runs from the server's write, which a
  // clock read after the response could follow by any delay of this thread's.
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.send(get("/plaintext")));
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_TRUE(c.closed_by_peer());
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 500ms) << "closed before its idle timeout";
  EXPECT_LT(took, 4s);
}

TEST(IdleRelease, IdleTimeoutStillClosesAReleasedConnection) {
  idle_timeout_still_closes(true);
}

TEST(IdleRelease, IdleTimeoutStillClosesAConnectionReleasedAfterItsRest) {
  idle_timeout_still_closes(false);
}

// A release moment already past when the rest arms it fails the rest's read
// before it looks at the socket: the connection released with its next
// request waiting, and its successor, woken by that request, rested and
// released again, a goroutine per turn, never reading (a 1 ns
// idle_release_after did it every time; the coarse clock, a tick behind,
// did it at 1 ms). Below a millisecond counts as one.
TEST(IdleRelease, ATinyReleaseMomentDoesNotSpin) {
  const long base = released_now();
  TestServer s(routes(), {.idle_release_after = 1ns, .release_when_drained = false});
  Client c(s.port());
  ASSERT_TRUE(c.send(get("/plaintext")));
  EXPECT_EQ(c.read_response().status, 200);
  ASSERT_TRUE(eventually([&] { return released_now() == base + 1; }));
  const std::uint64_t spawns = goro::stats().spawns;
  std::this_thread::sleep_for(300ms);
  EXPECT_LT(goro::stats().spawns - spawns, 10u) << "goroutines spawned by one idle connection";
  ASSERT_TRUE(c.send(get("/plaintext")));
  EXPECT_EQ(c.read_response().status, 200);
}

TEST(IdleRelease, ShutdownClosesReleasedConnectionsAtOnce) {
  const long base = released_now();
  TestServer s(routes(), {.idle_release_after = 30ms});
  Client c(s.port());
  ASSERT_TRUE(c.send(get("/plaintext")));
  EXPECT_EQ(c.read_response().status, 200);
  ASSERT_TRUE(eventually([&] { return released_now() == base + 1; }));
  const auto start = std::chrono::steady_clock::now();
  s.stop(10s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(released_now(), base);
}

TEST(IdleRelease, AReleasedConnectionIsEvictedAtTheCap) {
  const long base = released_now();
  TestServer s(routes(), {.idle_release_after = 30ms, .max_connections = 1});
  Client a(s.port());
  ASSERT_TRUE(a.send(get("/plaintext")));
  EXPECT_EQ(a.read_response().status, 200);
  ASSERT_TRUE(eventually([&] { return released_now() == base + 1; }));
  Client b(s.port());
  ASSERT_TRUE(b.send(get("/plaintext")));
  EXPECT_EQ(b.read_response().status, 200);
  EXPECT_TRUE(a.closed_by_peer());
}

// Started parked (conn.cpp): a new plain connection holds no stack until
// its first bytes. 200 silent connections, then a request on each: every
// one is answered. With releases off (idle_release_after 0) each new
// connection's goroutine waits in its first read with a stack, which the
// second half checks, so the count below measures what it claims to.
// stacks_live counts the stacks the Ps' caches hold too, which a P's
// batch refill raises by up to 8 and a spawn past its credits lowers: a
// signed difference, and margins wider than a few caches.
// The connections wait from their accept until their turn in the request
// loop: under TSan on a loaded machine that took longer than the default
// 10 s read-header timeout, which closed the last ones unanswered (the
// timeout has its own test below). So the timeout here is far longer, and
// so is the wait for the accepts (180 of 200 in 10 s there).
std::int64_t stacks_with_silent_connections(http::ServerOptions opts) {
  constexpr int kConns = 200;
  opts.read_header_timeout = std::chrono::minutes(5);
  TestServer s(routes(), std::move(opts));
  const double base_conns = goro_test::metric_in_process("goro_http_connections");
  const auto base_stacks = static_cast<std::int64_t>(goro::stats().stacks_live);
  std::vector<std::unique_ptr<Client>> cs;
  cs.reserve(kConns);
  for (int i = 0; i < kConns; ++i)
    cs.push_back(std::make_unique<Client>(s.port()));
  EXPECT_TRUE(eventually(
      [&] { return goro_test::metric_in_process("goro_http_connections") >= base_conns + kConns; },
      std::chrono::seconds(120)))
      << "accepted: " << goro_test::metric_in_process("goro_http_connections") - base_conns;
  std::this_thread::sleep_for(100ms);  // whatever they would run, let it run
  const std::int64_t stacks = static_cast<std::int64_t>(goro::stats().stacks_live) - base_stacks;
  for (auto& c : cs) {
    EXPECT_TRUE(c->send(get("/plaintext")));
    auto r = c->read_response();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "Hello, World!");
  }
  return stacks;
}

TEST(IdleRelease, NewConnectionsWaitForTheirFirstBytesWithoutAStack) {
  const std::int64_t parked = stacks_with_silent_connections({});
  EXPECT_LT(parked, 30) << "stacks held by 200 silent new connections";
  const std::int64_t kept = stacks_with_silent_connections({.idle_release_after = 0s});
  EXPECT_GE(kept, 150) << "stacks held by 200 silent new connections, releases off";
}

// A new connection parked for its first bytes is under the read-header
// timeout from its accept, as one waiting in its read was; so is one whose
// parked start an edge woke with nothing to read (FaultSite::kStaleEdge at
// its park): it parks again, counted released, its deadline still armed.
void silent_new_connection_closes(bool stale_edge) {
  TestServer s(routes(), {.read_header_timeout = 500ms});
  const long base = released_now();
  const std::uint64_t taken = goro::detail::faults_taken(goro::detail::FaultSite::kStaleEdge);
  if (stale_edge) goro::detail::arm_fault(goro::detail::FaultSite::kStaleEdge, 1, 0);
  const auto start = std::chrono::steady_clock::now();
  Client c(s.port());
  if (stale_edge) {
    EXPECT_TRUE(eventually([&] {
      return goro::detail::faults_taken(goro::detail::FaultSite::kStaleEdge) == taken + 1;
    }));
    EXPECT_TRUE(eventually([&] { return released_now() == base + 1; }))
        << "released: " << released_now() - base;
  }
  goro::detail::arm_fault(goro::detail::FaultSite::kStaleEdge, 0, 0);
  EXPECT_TRUE(c.closed_by_peer());
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 400ms) << "closed before its read-header timeout";
  EXPECT_LT(took, 5s);
  EXPECT_TRUE(eventually([&] { return released_now() == base; }));
  // A client that speaks within the timeout is served, head split or not.
  Client d(s.port());
  ASSERT_TRUE(d.send("GET /plaintext HTTP/1.1\r\nHo"));
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(d.send("st: t\r\n\r\n"));
  EXPECT_EQ(d.read_response().body, "Hello, World!");
}

TEST(IdleRelease, ASilentNewConnectionClosesAtItsReadHeaderTimeout) {
  silent_new_connection_closes(false);
}

TEST(IdleRelease, ANewConnectionWokenForNothingKeepsItsReadHeaderTimeout) {
  silent_new_connection_closes(true);
}

// Release and wake-up racing: clients pause around the release threshold,
// so requests arrive just before, during and after the goroutine's end and
// the parked one's start. Every request is answered, in order. (TSan and
// the asan preset's perturbed scheduling run it too.)
TEST(IdleRelease, RequestsRacingTheReleaseAreAllServed) {
  TestServer s(routes(), {.idle_release_after = 5ms});
  constexpr int kClients = 12;
  constexpr int kRounds = 25;
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  ts.reserve(kClients);
  for (int t = 0; t < kClients; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      Client c(s.port());
      for (int i = 0; i < kRounds; ++i) {
        const std::string body = fmt::format("{}:{}", t, i);
        if (!c.send(post_echo(body)) || c.read_response().body != body) ++bad;
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 12000));
      }
    });
  }
  for (auto& t : ts)
    t.join();
  EXPECT_EQ(bad.load(), 0);
}

// Released when drained, under four Ps on this machine's two cores: each
// response is followed by a release, and the client's next bytes race it
// (sent at once, after a few microseconds, or split across the release),
// so the edge lands before, during and after the successor is parked in
// the read slot. A lost edge strands a request (the client times out), a
// double wait aborts, a mixed-up Exchange answers the wrong body. Every
// answer is checked against its own request.
TEST(IdleRelease, StressReleasedWhenDrainedUnderFourPs) {
  // Read once, by the server's goro::run; no other thread reads it then.
  ::setenv("GOMAXPROCS", "4", 1);  // NOLINT(concurrency-mt-unsafe)
  TestServer s(routes(), {.release_when_drained = true, .release_when_drained_above = 0});
  ::unsetenv("GOMAXPROCS");  // NOLINT(concurrency-mt-unsafe)
  ASSERT_EQ(goro::stats().maxprocs, 4u);
  const std::uint64_t spawns = goro::stats().spawns;
  constexpr int kClients = 16;
  constexpr int kRounds = 400;
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  ts.reserve(kClients);
  for (int t = 0; t < kClients; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) + 1000);
      Client c(s.port());
      for (int i = 0; i < kRounds && bad.load() == 0; ++i) {
        const std::string body = fmt::format("{}:{}", t, i);
        const std::string req = post_echo(body);
        switch (rng() % 4) {
          case 0:  // whole
            if (!c.send(req) || c.read_response().body != body) ++bad;
            break;
          case 1: {  // split in two across the release
            const std::size_t cut = 1 + rng() % (req.size() - 1);
            if (!c.send(req.substr(0, cut))) ++bad;
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
            if (!c.send(req.substr(cut)) || c.read_response().body != body) ++bad;
            break;
          }
          case 2:  // a pipelined pair
            if (!c.send(get("/plaintext") + req) || c.read_response().body != "Hello, World!" ||
                c.read_response().body != body) {
              ++bad;
            }
            break;
          default:  // whole, then a pause that lets the release happen
            if (!c.send(req) || c.read_response().body != body) ++bad;
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
            break;
        }
      }
    });
  }
  for (auto& t : ts)
    t.join();
  EXPECT_EQ(bad.load(), 0);
  // A successor per release: most requests ended one.
  EXPECT_GT(goro::stats().spawns - spawns, std::uint64_t{kClients} * kRounds / 2);
}

// Eviction racing the release: each new connection evicts the one before
// it at the cap while that one may be between its read's timeout and its
// successor's parking (the close must not recycle the poll descriptor under
// the parked goroutine: NetFd::go_when_readable holds a reference; without
// it, the next accept may reuse the descriptor: "netpoll: double wait").
// The server lives on and serves. A fault site holds the window open for
// 3 ms; the next connections arrive inside it.
//
// c's answer is 200, or 503 when a was not yet at rest when b and c came:
// a goes idle after its response is written, so a slow machine (a sanitizer
// build beside busy loops) can keep it active past the sleep below, and
// then every connection is in a request and the cap refuses (CI saw 1 in
// 150). Both are correct; a connection closed without an answer is not.
TEST(IdleRelease, EvictionRacingTheReleaseIsSafe) {
  using goro::detail::FaultSite;
  TestServer s(routes(), {.idle_release_after = 3ms, .max_connections = 1});
  goro::detail::arm_fault(FaultSite::kParkWindow, 1000000, 3000);
  const std::uint64_t taken0 = goro::detail::faults_taken(FaultSite::kParkWindow);
  const double evicted0 = goro_test::metric_in_process("goro_http_connections_evicted_total");
  std::mt19937 rng(7);
  int served = 0;
  int refused = 0;
  constexpr int kRounds = 150;
  for (int i = 0; i < kRounds; ++i) {
    // At a cap of 1, a is refused (503) while the last round's c is still
    // finishing its response (mid-request, not evictable): try again.
    std::optional<Client> a;
    for (int attempt = 0; attempt < 100; ++attempt) {
      a.emplace(s.port());
      if (a->send(get("/plaintext")) && a->read_response().status == 200) break;
      a.reset();
      std::this_thread::sleep_for(2ms);
    }
    ASSERT_TRUE(a) << "round " << i << ": never admitted";
    std::this_thread::sleep_for(std::chrono::microseconds(3500 + rng() % 2000));
    // b evicts a, which may be in the window; c, accepted right after,
    // would be handed a's recycled poll descriptor.
    Client b(s.port());
    Client c(s.port());
    const int status = c.send(get("/plaintext")) ? c.read_response().status : 0;
    if (status == 200) {
      ++served;
    } else if (status == 503) {
      ++refused;
    } else {
      ADD_FAILURE() << "round " << i << ": c answered " << status;
    }
  }
  goro::detail::arm_fault(FaultSite::kParkWindow, 0, 0);
  EXPECT_EQ(served + refused, kRounds);
  // Refusals are the slow machine's exception: most rounds race the window.
  EXPECT_GE(served, kRounds / 2) << "refused: " << refused;
  // Each served round admitted c by an eviction (of a, or of b, which had
  // evicted a): the path the rounds are about, seen in the metric.
  EXPECT_GE(goro_test::metric_in_process("goro_http_connections_evicted_total") - evicted0,
            kRounds / 2.0);
  EXPECT_GT(goro::detail::faults_taken(FaultSite::kParkWindow), taken0);
}

// A rest begins by writing the responses still buffered; when that write
// fails the response is lost and the connection must close. Here it fails
// with errc::timeout, the same error as the read's release deadline, because
// the handler outlives write_timeout (as a client that stops reading makes
// the write outlive it). The rest must not take that for its own deadline:
// a connection released after losing a response keeps its client waiting
// for an answer that never comes until idle_timeout (30 s here), where a
// closed one tells it at once. `c` has sent a request for /late.
void expect_closed_not_released(Client& c, long released_before) {
  const auto start = std::chrono::steady_clock::now();
  (void)c.read_all();  // until the server closes (the client's timeout is 15 s)
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 1500ms) << "closed before the handler was done";
  EXPECT_LT(waited, 10s) << "the connection outlived its lost response";
  EXPECT_EQ(released_now(), released_before) << "released after losing a response";
}

http::ServerOptions late_options() {
  return {.write_timeout = 1s, .idle_timeout = 30s, .idle_release_after = 50ms};
}

void late(http::Request&, http::ResponseWriter& w) {
  goro::sleep_for(2s);  // past write_timeout: the response's write fails
  (void)w.write("late");
}

// Over TLS a rest always reads through its Exchange (OpenSSL may hold
// decrypted bytes), so the write comes from read_more, not from a rest
// without an Exchange.
TEST(IdleRelease, ARestThatCannotWriteItsResponseClosesOverTls) {
  static goro_test::TestPki pki;
  static const goro_test::KeyPair cert = pki.issue("localhost", "DNS:localhost,IP:127.0.0.1");
  ::signal(SIGPIPE, SIG_IGN);  // SSL_write on a socket the server closed
  const long base = released_now();
  http::ServerOptions o = late_options();
  o.tls.emplace();
  o.tls->certificates = {{.cert_pem = cert.cert_pem, .key_pem = cert.key_pem}};
  TestServer s(late, o);
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        SSL_CTX_free);
  Client c(s.port(), 15s);
  ASSERT_TRUE(c.start_tls(ctx.get()));
  ASSERT_TRUE(c.send(get("/late")));
  expect_closed_not_released(c, base);
}

// A plain connection rests without an Exchange only when its socket is
// known drained (its last read was short); after a read that filled the
// read buffer it reads through its Exchange, as over TLS. 32 KiB in one
// send ends in a full read: four of the 8 KiB buffer (the parser keeps a
// partial head itself), or 8 + 8 + 16 KiB were the buffer to grow instead.
TEST(IdleRelease, ARestThatCannotWriteItsResponseClosesAfterAFullRead) {
  const long base = released_now();
  TestServer s(late, late_options());
  Client c(s.port(), 15s);
  const int sndbuf = 1 << 20;  // the request leaves in one segment
  ::setsockopt(c.fd(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  constexpr std::size_t kRequestBytes = 32 << 10;
  const std::string head = "GET /late HTTP/1.1\r\nHost: t\r\nX-Pad: ";
  const std::string request = head + std::string(kRequestBytes - head.size() - 4, 'p') + "\r\n\r\n";
  ASSERT_EQ(request.size(), kRequestBytes);
  ASSERT_TRUE(c.send(request));
  expect_closed_not_released(c, base);
}

// The same lost write before the read of a partial head (the next request
// of a pipelined pair has begun to arrive): the connection closes, and the
// failure is not the client's slow head. It used to come out of read_more
// as errc::timeout and be reported to on_rejected as a 408 "request header
// timeout".
TEST(IdleRelease, AWriteFailingBeforeAPartialHeadIsNotReportedAs408) {
  std::atomic<int> rejected_408{0};
  http::ServerOptions o = late_options();
  o.on_rejected = [&rejected_408](const http::RejectedRequest& r) {
    if (r.status == 408) ++rejected_408;
  };
  TestServer s(late, o);
  Client c(s.port(), 15s);
  ASSERT_TRUE(c.send("GET /late HTTP/1.1\r\nHost: t\r\n\r\nGET /plaintext HT"));
  const auto start = std::chrono::steady_clock::now();
  (void)c.read_all();
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 1500ms) << "closed before the handler was done";
  EXPECT_LT(waited, 10s) << "the connection outlived its lost response";
  EXPECT_EQ(rejected_408.load(), 0) << "the lost write was reported as a slow head";
}

// A pipelined pair whose responses (13 bytes and 15,000) sit in `out` until
// the rest begins: the rest's write of them cannot finish while the client
// reads nothing, the server's send buffer (set small here through the
// server's own descriptor, found in /proc/self/fd) and the client's
// receive window holding less than 15 KB. Shutdown and eviction that come
// during that write find the connection active, as during its handler.
constexpr std::size_t kBigBody = 15000;

http::Router batch_routes() {
  http::Router r = routes();
  r.handle("GET /big", [](http::Request&, http::ResponseWriter& w) {
    (void)w.write(std::string(kBigBody, 'b'));
  });
  return r;
}

// The server's end of `client`'s connection (this process), or -1.
int server_end(int client) {
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (::getsockname(client, reinterpret_cast<sockaddr*>(&local), &len) != 0) return -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_in peer{};
    socklen_t pl = sizeof peer;
    if (fd != client && ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) == 0 &&
        peer.sin_family == AF_INET && peer.sin_port == local.sin_port)
      return fd;
  }
  return -1;
}

// Sends the batch on `c` once its server end has a small send buffer, and
// returns when the rest's write is stuck: bytes queued on the server end,
// the rest not writable. False (with a failure recorded) otherwise.
bool stall_the_rest(Client& c) {
  int fd = -1;
  if (!eventually([&] { return (fd = server_end(c.fd())) >= 0; })) {
    ADD_FAILURE() << "no server end for the client's connection";
    return false;
  }
  const int small = 4096;
  EXPECT_EQ(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  if (!c.send(get("/plaintext") + get("/big"))) return false;
  int queued = 0;
  // The write is stuck once its bytes stop moving: queued, and unchanged.
  if (!eventually([&] {
        int before = 0;
        ::ioctl(fd, SIOCOUTQ, &before);
        std::this_thread::sleep_for(50ms);
        ::ioctl(fd, SIOCOUTQ, &queued);
        return queued > 0 && queued == before;
      })) {
    ADD_FAILURE() << "the server's write never stalled";
    return false;
  }
  return true;
}

void expect_the_batch(Client& c) {
  const auto first = c.read_response();
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.body, "Hello, World!");
  const auto second = c.read_response();
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.body.size(), kBigBody);
}

TEST(IdleRelease, ShutdownDuringTheRestsWriteDeliversTheBatch) {
  TestServer s(batch_routes(), {.idle_timeout = 30s, .idle_release_after = 20ms});
  Client c(s.port(), 15s, 2048);
  ASSERT_TRUE(stall_the_rest(c));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    s.stop(20s);
    stopped = true;
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(stopped.load()) << "shutdown did not wait for the rest's write";
  const auto start = std::chrono::steady_clock::now();
  expect_the_batch(c);
  EXPECT_TRUE(c.closed_by_peer()) << "a draining server kept the connection";
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "shutdown waited for its deadline";
}

TEST(IdleRelease, EvictionDuringTheRestsWriteSparesTheConnection) {
  TestServer s(batch_routes(),
               {.idle_timeout = 30s, .idle_release_after = 20ms, .max_connections = 1});
  Client c(s.port(), 15s, 2048);
  ASSERT_TRUE(stall_the_rest(c));
  // At the cap with the one connection active: refused, nothing evicted.
  Client b(s.port());
  ASSERT_TRUE(b.send(get("/plaintext")));
  EXPECT_EQ(b.read_response().status, 503);
  expect_the_batch(c);
  // The connection lives on and serves its next request.
  ASSERT_TRUE(c.send(get("/plaintext")));
  EXPECT_EQ(c.read_response().body, "Hello, World!");
}

}  // namespace
