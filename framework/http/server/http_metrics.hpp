// The process-wide HTTP counters behind /metrics (goro/http/metrics.hpp).
// Relaxed atomics: each is an independent statistic, read without any
// ordering promise between them (a scrape is a snapshot of each, not of all).
// Those every request moves are sharded per thread (MetricSlot below).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace goro::http::detail {

// Latency buckets (seconds), Prometheus' client defaults plus finer ones at
// the low end, where a hello server lives.
inline constexpr std::array<double, 14> kLatencyBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

// The counters every request moves: one shard per thread, each written only
// by its thread with a plain load and store (a keep-alive request moved
// seven of them, each a locked instruction when they were shared atomics),
// summed by a scrape. A goroutine may finish a request on another thread
// than it began it, so a gauge's shards go negative one by one; their sum
// is the gauge. A goroutine changes threads only where it parks, never
// between this_thread_metrics() and the add (the hog protocol moves the
// P, not the goroutine), so the shard a caller adds to is its own thread's.
// Shards are never freed: a thread's shard goes to the next new thread when
// it exits, counts and all, so the sums stay whole.
enum MetricSlot : std::size_t {
  kInFlight,
  kReleased,                 // open and idle with no goroutine (conn.cpp "Released while idle")
  kClass1xx,                 // kClass1xx + (status / 100 - 1) for 1xx..5xx
  kBucket0 = kClass1xx + 5,  // kBucket0 + i: latency_buckets[i], +Inf last
  kLatencySumNs = kBucket0 + kLatencyBuckets.size() + 1,
  kMetricSlots
};

struct alignas(64) MetricsShard {
  std::array<std::atomic<std::int64_t>, kMetricSlots> v{};
  MetricsShard* next = nullptr;    // every shard ever made; set before it is published
  std::atomic<bool> owned{false};  // a live thread adds to it
  void add(MetricSlot slot, std::int64_t d) noexcept {
    std::atomic<std::int64_t>& c = v[slot];
    c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  }
};

// The running thread's shard (made or adopted at its first use). Out of
// line and opaque to the optimiser, as current_m() (scheduler/current.cpp):
// computed afresh on whatever thread runs the caller. Never keep it across
// anything that may park.
MetricsShard& this_thread_metrics() noexcept;

// The sum of `slot` over every shard. A gauge's sum may dip below its true
// value for a moment (the shard of its rise read before the rise, the
// shard of its fall after the fall); /metrics exports gauges at zero or
// more.
std::int64_t metric_total(MetricSlot slot) noexcept;

// How many shards there are (every thread that ever counted, less those
// whose shards later threads took over): for tests.
std::size_t metric_shard_count() noexcept;

struct HttpMetrics {
  std::atomic<std::int64_t> connections_open{0};
  std::atomic<std::uint64_t> connections_total{0};
  std::atomic<std::uint64_t> connections_rejected{0};  // over max_connections (503)
  std::atomic<std::uint64_t> connections_evicted{0};   // closed at rest to admit another
  std::atomic<std::uint64_t> requests_shed{0};         // 503 from middleware::memory_guard

  // One request answered with `status` after `latency` (the sharded slots).
  static void record(int status, std::chrono::nanoseconds latency) noexcept;
};

HttpMetrics& http_metrics();

}  // namespace goro::http::detail
