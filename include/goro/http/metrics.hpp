// Prometheus text-format metrics (version 0.0.4): the runtime's counters
// (goro::stats()) and the HTTP layer's.
//
// HTTP metrics are process-wide (all servers together), lock-free relaxed
// counters: servers count connections and requests in flight; the metrics
// middleware counts requests by status class and their latency.
//
//   goro_goroutines, goro_threads, goro_maxprocs, goro_maxprocs_source{source=},
//   goro_memory_limit_bytes, goro_memory_cgroup_working_set_bytes,
//   process_resident_memory_bytes, goro_idle_procs,
//   goro_spinning_threads (gauges); goro_steals_total, goro_handoffs_total,
//   goro_netpoll_wakes_total, goro_parks_total, ... (counters);
//   goro_http_requests_total{code="2xx"}, goro_http_requests_in_flight,
//   goro_http_connections (open), goro_http_connections_total (accepted),
//   goro_http_connections_rejected_total, goro_http_connections_evicted_total,
//   goro_http_requests_shed_total,
//   goro_http_request_duration_seconds (histogram).
#pragma once

#include <string>

#include "goro/http/handler.hpp"

namespace goro::http {

// The current metrics in Prometheus text format.
std::string metrics_text();

// A handler answering metrics_text() as text/plain; version=0.0.4.
Handler metrics_handler();

}  // namespace goro::http
