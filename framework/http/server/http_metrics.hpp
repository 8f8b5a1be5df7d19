// The process-wide HTTP counters behind /metrics (goro/http/metrics.hpp).
// Relaxed atomics: each is an independent statistic, read without any
// ordering promise between them (a scrape is a snapshot of each, not of all).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace goro::http::detail {

// Latency buckets (seconds), Prometheus' client defaults plus finer ones at
// the low end, where a hello server lives.
inline constexpr std::array<double, 14> kLatencyBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

struct HttpMetrics {
  std::atomic<std::int64_t> connections_open{0};
  // Open and idle with no goroutine (conn.cpp "Released while idle").
  std::atomic<std::int64_t> connections_released{0};
  std::atomic<std::uint64_t> connections_total{0};
  std::atomic<std::uint64_t> connections_rejected{0};  // over max_connections (503)
  std::atomic<std::uint64_t> connections_evicted{0};   // closed at rest to admit another
  std::atomic<std::uint64_t> requests_shed{0};         // 503 from middleware::memory_guard
  std::atomic<std::int64_t> in_flight{0};
  std::array<std::atomic<std::uint64_t>, 6> requests_by_class{};  // [1..5] = 1xx..5xx
  std::array<std::atomic<std::uint64_t>, kLatencyBuckets.size() + 1>
      latency_buckets{};  // +Inf last
  std::atomic<std::uint64_t> latency_sum_ns{0};

  void record(int status, std::chrono::nanoseconds latency);
};

HttpMetrics& http_metrics();

}  // namespace goro::http::detail
