// The Date header, formatted at most once a second per thread.
//
// Each M keeps the last second it formatted; a response asks for the date
// with a clock read (vDSO, no syscall) and a compare. The cache is
// thread-local, so it is read and copied out within one call that cannot
// switch goroutines (runtime.hpp: no references to thread_locals across goro
// calls); the accessor is not inlined, so its address is never cached by a
// caller across a switch.
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
  const auto now = std::chrono::system_clock::now();
  const std::int64_t second =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  if (second != cache.second) {
    cache.date = format_http_date(now);
    cache.second = second;
  }
  std::memcpy(buf, cache.date.bytes.data(), kHttpDateSize);
  return {buf, kHttpDateSize};
}

}  // namespace goro::http::detail
