// The per-request counters behind /metrics (framework/http/server/
// http_metrics.hpp): one shard per thread, written without locked
// instructions and summed by a scrape. What must hold: no count is ever
// lost, whether the adds come from many threads at once, from threads that
// exit (their shards go to later threads, counts and all), or from
// goroutines that begin a request on one thread and end it on another
// (GOMAXPROCS 4 on this machine's 2 cores; TSan runs it); a scrape's sum of
// a counter never goes backwards; and a gauge is never exported below
// zero. Then the same through a real server: K requests over loopback are
// K in goro_http_requests_total and in the latency histogram's count, and
// the in-flight gauge is back where it was.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "framework/http/server/http_metrics.hpp"
#include "goro/goro.hpp"
#include "tests/http_server/test_util.hpp"

using namespace std::chrono_literals;

namespace {

namespace http = goro::http;
using goro::http::detail::metric_shard_count;
using goro::http::detail::metric_total;
using goro::http::detail::this_thread_metrics;
using goro_test::Client;
using goro_test::get;
using goro_test::metric_in_process;
using goro_test::TestServer;

// Rounds of threads that add and exit, a reader summing all along.
TEST(Metrics, ShardedCountsSurviveThreadsThatComeAndGo) {
  constexpr auto kSlot = goro::http::detail::kLatencySumNs;
  constexpr int kRounds = 6;
  constexpr int kThreads = 8;
  constexpr int kAdds = 20000;
  const std::int64_t base = metric_total(kSlot);
  std::atomic<bool> stop{false};
  std::atomic<bool> went_back{false};
  std::thread reader([&] {
    std::int64_t last = metric_total(kSlot);
    while (!stop.load()) {
      const std::int64_t now = metric_total(kSlot);
      if (now < last) went_back.store(true);
      last = now;
    }
  });
  for (int r = 0; r < kRounds; ++r) {
    std::vector<std::thread> ts;
    ts.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([] {
        for (int i = 0; i < kAdds; ++i)
          this_thread_metrics().add(kSlot, 1);
      });
    for (auto& t : ts)
      t.join();
    EXPECT_EQ(metric_total(kSlot) - base, std::int64_t{kThreads} * kAdds * (r + 1))
        << "round " << r;
  }
  stop.store(true);
  reader.join();
  EXPECT_FALSE(went_back.load()) << "a scrape's sum went backwards";
  // The exited threads' shards were taken over, not added to: no more
  // shards than threads were ever alive at once (these 8, the reader, the
  // main thread).
  EXPECT_LE(metric_shard_count(), std::size_t{kThreads} + 2);
}

// A gauge raised on one thread and lowered on another: the sum is whole.
TEST(Metrics, AGaugeMovedAcrossThreadsSumsToWhereItWas) {
  constexpr auto kSlot = goro::http::detail::kInFlight;
  const std::int64_t base = metric_total(kSlot);
  constexpr int kGoroutines = 400;
  goro::run(
      [&] {
        goro::WaitGroup wg;
        for (int g = 0; g < kGoroutines; ++g) {
          wg.add(1);
          goro::go([&, g] {
            std::minstd_rand rng(static_cast<unsigned>(g));
            for (int i = 0; i < 50; ++i) {
              this_thread_metrics().add(kSlot, 1);
              if (rng() % 4 == 0) {
                goro::sleep_for(std::chrono::microseconds(rng() % 200));
              } else {
                goro::yield();
              }
              this_thread_metrics().add(kSlot, -1);
            }
            wg.done();
          });
        }
        wg.wait();
      },
      goro::Options{.maxprocs = 4});
  EXPECT_EQ(metric_total(kSlot), base);
}

TEST(Metrics, RequestsOverLoopbackAreCountedOnce) {
  http::Router r;
  r.handle("GET /hello", [](http::Request&, http::ResponseWriter& w) { (void)w.write("hi"); });
  r.handle("GET /nap", [](http::Request&, http::ResponseWriter& w) {
    goro::sleep_for(2ms);  // parks: the request may end on another thread
    (void)w.write("yawn");
  });
  const double ok_before = metric_in_process("goro_http_requests_total{code=\"2xx\"}");
  const double count_before = metric_in_process("goro_http_request_duration_seconds_count");
  const double sum_before = metric_in_process("goro_http_request_duration_seconds_sum");
  const double in_flight_before = metric_in_process("goro_http_requests_in_flight");
  ASSERT_GE(ok_before, 0) << "goro_http_requests_total missing from /metrics";
  constexpr int kConns = 8;
  constexpr int kPerConn = 25;
  {
    TestServer s(http::chain(r, {http::middleware::metrics()}), {});
    std::vector<std::thread> clients;
    clients.reserve(kConns);
    std::atomic<int> ok{0};
    for (int c = 0; c < kConns; ++c)
      clients.emplace_back([&, c] {
        Client cl(s.port());
        for (int i = 0; i < kPerConn; ++i) {
          if (!cl.send(get((i + c) % 5 == 0 ? "/nap" : "/hello"))) return;
          if (cl.read_response().status == 200) ok.fetch_add(1);
        }
      });
    for (auto& t : clients)
      t.join();
    ASSERT_EQ(ok.load(), kConns * kPerConn);
  }
  // Other tests in this process do not run at the same time: exact deltas.
  EXPECT_EQ(metric_in_process("goro_http_requests_total{code=\"2xx\"}") - ok_before,
            kConns * kPerConn);
  EXPECT_EQ(metric_in_process("goro_http_request_duration_seconds_count") - count_before,
            kConns * kPerConn);
  // The naps alone are 2 ms each: the latency sum grew by at least that.
  const int naps = kConns * kPerConn / 5;
  EXPECT_GE(metric_in_process("goro_http_request_duration_seconds_sum") - sum_before,
            naps * 0.002 * 0.999);
  EXPECT_EQ(metric_in_process("goro_http_requests_in_flight"), in_flight_before);
}

}  // namespace
