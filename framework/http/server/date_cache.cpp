// The Date header, formatted at most once a second per thread.
//
// Each M keeps the last second it formatted; a response asks for the date
// with a clock read (vDSO, no syscall) and a compare. The clock is
// CLOCK_REALTIME_COARSE (~7 ns here against ~25 for the precise one): the
// header turns to the next second up to one kernel tick (4 ms here) late,
// as nginx's, whose time is cached per event-loop iteration. The cache is
// thread-local, so it is read and copied out within one call that cannot
// switch goroutines (runtime.hpp: no references to thread_locals across goro
// calls); the accessor is not inlined, so its address is never cached by a
// caller across a switch.
#include <time.h>

#include <chrono>
#include <cstring>

#include "framework/http/parser/http_date.hpp"
#include "framework/http/server/exchange.hpp"

namespace goro::http::detail {

namespace {

struct DateCache {
  std::int64_t second = -1;
  HttpDate date{};
};

}  // namespace

[[gnu::noinline]] std::string_view cached_http_date(char (&buf)[29]) {
  static thread_local DateCache cache;
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  const std::int64_t second = ts.tv_sec;
  if (second != cache.second) {
    const std::chrono::system_clock::time_point now{
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(ts.tv_sec))};
    cache.date = format_http_date(now);
    cache.second = second;
  }
  std::memcpy(buf, cache.date.bytes.data(), kHttpDateSize);
  return {buf, kHttpDateSize};
}

}  // namespace goro::http::detail
