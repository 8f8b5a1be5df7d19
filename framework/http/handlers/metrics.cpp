// /metrics: Prometheus text exposition (format 0.0.4) of goro::stats() and
// the HTTP counters.
#include <fmt/format.h>

#include <algorithm>

#include "framework/http/server/http_metrics.hpp"
#include "goro/http/metrics.hpp"
#include "goro/runtime.hpp"
#include "goro/tls.hpp"

namespace goro::http {

namespace detail {

HttpMetrics& http_metrics() {
  static HttpMetrics m;
  return m;
}

namespace {

std::atomic<MetricsShard*> g_shards{nullptr};  // push-only list (MetricsShard::next)

// A free shard (its thread exited), else a new one on the list.
MetricsShard* adopt_shard() {
  for (MetricsShard* s = g_shards.load(std::memory_order_acquire); s != nullptr; s = s->next) {
    bool owned = false;
    // acquire: the last owner's counts, stored before it let go.
    if (!s->owned.load(std::memory_order_relaxed) &&
        s->owned.compare_exchange_strong(owned, true, std::memory_order_acquire))
      return s;
  }
  auto* s = new MetricsShard;  // NOLINT(cppcoreguidelines-owning-memory): never freed
  s->owned.store(true, std::memory_order_relaxed);
  MetricsShard* head = g_shards.load(std::memory_order_relaxed);
  do {
    s->next = head;
  } while (!g_shards.compare_exchange_weak(head, s, std::memory_order_release,
                                           std::memory_order_relaxed));
  return s;
}

// Lets the thread's shard go when the thread exits.
struct ShardOwner {
  MetricsShard* shard = nullptr;
  ~ShardOwner() {
    if (shard != nullptr) shard->owned.store(false, std::memory_order_release);
  }
};

// The shard, as a plain pointer (no TLS wrapper or guard to reach it); the
// owner with its destructor is touched once per thread.
thread_local MetricsShard* t_shard = nullptr;
thread_local ShardOwner t_owner;

[[gnu::noinline]] MetricsShard& first_shard() noexcept {
  // No memory for a thread's first shard: terminate (noexcept), as for
  // anything the runtime cannot do without.
  MetricsShard* s = adopt_shard();
  t_owner.shard = s;
  t_shard = s;
  return *s;
}

}  // namespace

#if defined(__clang__)
__attribute__((noinline))
#else
__attribute__((noipa))
#endif
MetricsShard&
this_thread_metrics() noexcept {
  MetricsShard** s = &t_shard;
  asm volatile("" : "+r"(s));
  if (*s == nullptr) [[unlikely]]
    return first_shard();
  return **s;
}

std::int64_t metric_total(MetricSlot slot) noexcept {
  std::int64_t sum = 0;
  for (MetricsShard* s = g_shards.load(std::memory_order_acquire); s != nullptr; s = s->next)
    sum += s->v[slot].load(std::memory_order_relaxed);
  return sum;
}

std::size_t metric_shard_count() noexcept {
  std::size_t n = 0;
  for (MetricsShard* s = g_shards.load(std::memory_order_acquire); s != nullptr; s = s->next)
    ++n;
  return n;
}

void HttpMetrics::record(int status, std::chrono::nanoseconds latency) noexcept {
  MetricsShard& m = this_thread_metrics();
  const int cls = status / 100;
  if (cls >= 1 && cls <= 5) m.add(static_cast<MetricSlot>(kClass1xx + cls - 1), 1);
  const double secs = std::chrono::duration<double>(latency).count();
  std::size_t i = 0;
  while (i < kLatencyBuckets.size() && secs > kLatencyBuckets[i])
    ++i;
  m.add(static_cast<MetricSlot>(kBucket0 + i), 1);
  m.add(kLatencySumNs, latency.count());
}

}  // namespace detail

namespace {

void metric(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            auto value) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name,
                 type, name, value);
}

}  // namespace

std::string metrics_text() {
  std::string out;
  out.reserve(4096);
  const RuntimeStats st = goro::stats();
  metric(out, "goro_goroutines", "gauge", "Live goroutines.", st.goroutines);
  metric(out, "goro_threads", "gauge", "OS threads (Ms) of the runtime.", st.threads);
  metric(out, "goro_maxprocs", "gauge", "Processors (Ps), GOMAXPROCS.", st.maxprocs);
  fmt::format_to(std::back_inserter(out),
                 "# HELP goro_maxprocs_source Where maxprocs came from (1 for the source).\n"
                 "# TYPE goro_maxprocs_source gauge\ngoro_maxprocs_source{{source=\"{}\"}} 1\n",
                 to_string(st.maxprocs_source));
  metric(out, "goro_memory_limit_bytes", "gauge",
         "The cgroup memory limit (smallest over the ancestry); 0: none.", st.memory_limit_bytes);
  metric(out, "goro_memory_cgroup_working_set_bytes", "gauge",
         "What the limiting cgroup holds against the limit (usage - inactive file).",
         st.memory_cgroup_bytes);
  metric(out, "process_resident_memory_bytes", "gauge", "Resident set size.", st.rss_bytes);
  metric(out, "goro_idle_procs", "gauge", "Idle Ps.", st.idle_procs);
  metric(out, "goro_spinning_threads", "gauge", "Ms spinning for work.", st.spinning_threads);
  metric(out, "goro_idle_threads", "gauge", "Ms parked idle.", st.idle_threads);
  metric(out, "goro_global_runq", "gauge", "Goroutines in the global run queue.", st.global_runq);
  metric(out, "goro_spawns_total", "counter", "Goroutines spawned.", st.spawns);
  metric(out, "goro_steals_total", "counter", "Successful steals.", st.steals);
  metric(out, "goro_stolen_goroutines_total", "counter", "Goroutines stolen.",
         st.stolen_goroutines);
  metric(out, "goro_handoffs_total", "counter", "Ps handed off (syscall, hog).", st.handoffs);
  metric(out, "goro_hog_handoffs_total", "counter",
         "Ps handed off from a goroutine running > 10ms without a scheduling point.",
         st.hog_handoffs);
  metric(out, "goro_netpoll_wakes_total", "counter", "Goroutines readied by the netpoller.",
         st.netpoll_wakes);
  metric(out, "goro_parks_total", "counter", "Goroutine parks.", st.parks);
  metric(out, "goro_thread_parks_total", "counter", "M futex sleeps.", st.m_parks);
  metric(out, "goro_preempt_requests_total", "counter", "Goroutines flagged for running > 10ms.",
         st.preempt_requests);
  metric(out, "goro_stacks_live", "gauge", "Goroutine stacks in use.", st.stacks_live);

  detail::HttpMetrics& m = detail::http_metrics();
  const auto rl = std::memory_order_relaxed;
  out.append(
      "# HELP goro_http_requests_total HTTP requests answered, by status class.\n"
      "# TYPE goro_http_requests_total counter\n");
  for (int c = 1; c <= 5; ++c)
    fmt::format_to(
        std::back_inserter(out), "goro_http_requests_total{{code=\"{}xx\"}} {}\n", c,
        detail::metric_total(static_cast<detail::MetricSlot>(detail::kClass1xx + c - 1)));
  metric(out, "goro_http_requests_in_flight", "gauge", "Requests being handled.",
         std::max<std::int64_t>(0, detail::metric_total(detail::kInFlight)));
  metric(out, "goro_http_connections", "gauge", "Open HTTP connections.",
         m.connections_open.load(rl));
  metric(out, "goro_http_connections_released", "gauge",
         "Idle keep-alive connections whose goroutine was released (idle_release_after).",
         std::max<std::int64_t>(0, detail::metric_total(detail::kReleased)));
  metric(out, "goro_http_connections_total", "counter", "Accepted HTTP connections.",
         m.connections_total.load(rl));
  metric(out, "goro_http_connections_rejected_total", "counter",
         "Connections answered 503 over max_connections.", m.connections_rejected.load(rl));
  metric(out, "goro_http_connections_evicted_total", "counter",
         "Connections at rest closed at max_connections to admit a new one.",
         m.connections_evicted.load(rl));
  metric(out, "goro_http_requests_shed_total", "counter",
         "Requests answered 503 by middleware::memory_guard.", m.requests_shed.load(rl));
  const tls::Stats ts = tls::stats();
  fmt::format_to(std::back_inserter(out),
                 "# HELP goro_tls_handshakes_total Server TLS handshakes, by outcome.\n"
                 "# TYPE goro_tls_handshakes_total counter\n"
                 "goro_tls_handshakes_total{{result=\"full\"}} {}\n"
                 "goro_tls_handshakes_total{{result=\"resumed\"}} {}\n"
                 "goro_tls_handshakes_total{{result=\"failed\"}} {}\n"
                 "# HELP goro_tls_connections_total Completed server TLS handshakes, by "
                 "version.\n"
                 "# TYPE goro_tls_connections_total counter\n"
                 "goro_tls_connections_total{{version=\"TLSv1.2\"}} {}\n"
                 "goro_tls_connections_total{{version=\"TLSv1.3\"}} {}\n",
                 ts.handshakes_full, ts.handshakes_resumed, ts.handshakes_failed, ts.tls12,
                 ts.tls13);
  out.append(
      "# HELP goro_http_request_duration_seconds Handler latency.\n"
      "# TYPE goro_http_request_duration_seconds histogram\n");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < detail::kLatencyBuckets.size(); ++i) {
    cumulative += static_cast<std::uint64_t>(
        detail::metric_total(static_cast<detail::MetricSlot>(detail::kBucket0 + i)));
    fmt::format_to(std::back_inserter(out),
                   "goro_http_request_duration_seconds_bucket{{le=\"{}\"}} {}\n",
                   detail::kLatencyBuckets[i], cumulative);
  }
  cumulative += static_cast<std::uint64_t>(detail::metric_total(
      static_cast<detail::MetricSlot>(detail::kBucket0 + detail::kLatencyBuckets.size())));
  fmt::format_to(std::back_inserter(out),
                 "goro_http_request_duration_seconds_bucket{{le=\"+Inf\"}} {}\n"
                 "goro_http_request_duration_seconds_sum {:.9f}\n"
                 "goro_http_request_duration_seconds_count {}\n",
                 cumulative, static_cast<double>(detail::metric_total(detail::kLatencySumNs)) / 1e9,
                 cumulative);
  return out;
}

Handler metrics_handler() {
  return [](Request&, ResponseWriter& w) {
    w.header().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    (void)w.write(metrics_text());
  };
}

}  // namespace goro::http
