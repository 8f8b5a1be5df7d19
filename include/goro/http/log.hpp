// Logs: the asynchronous line writer (LogSink), structured lines in three
// formats (LogRecord) and a leveled logger over both (Logger).
//
// Example:
//   auto log = std::make_shared<goro::http::Logger>(
//       std::make_shared<goro::http::LogSink>(1), goro::http::LogFormat::kJson,
//       goro::http::LogLevel::kInfo);
//   log->log(goro::http::LogRecord(goro::http::LogLevel::kInfo, "started").add("port", 8080));
//   // {"time":"2026-11-24T23:48:37.123Z","level":"info","msg":"started","port":8080}
//
// Formats (what GORO_LOG_FORMAT selects in goro's apps):
//   text    time LEVEL msg key=value ...   (for a terminal; the access log
//                                            keeps Common Log Format)
//   logfmt  time=... level=info msg="..." key=value ...
//   json    one object per line: time, level, msg, then the fields in order
// Keys are written as given (use [a-z0-9_]). A logfmt value is quoted when
// it is empty or holds a space, '=', '"' or a byte outside printable ASCII,
// with Go's escapes (\", \\, \n, \t, \u00XX) inside the quotes. JSON
// strings escape '"', '\\' and control bytes; bytes that are not valid
// UTF-8 become U+FFFD, so every line parses with any JSON parser whatever a
// client put in its request line.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace goro::http {

enum class LogFormat { kText, kJson, kLogfmt };
enum class LogLevel { kDebug, kInfo, kWarn, kError };

// "text", "json", "logfmt"; nullopt otherwise.
std::optional<LogFormat> parse_log_format(std::string_view name);
// "debug", "info", "warn" (or "warning"), "error"; nullopt otherwise.
std::optional<LogLevel> parse_log_level(std::string_view name);
std::string_view to_string(LogFormat f);
std::string_view to_string(LogLevel l);  // "debug", "info", "warn", "error"

// One structured line: the time it was made (UTC, milliseconds), a level, a
// message and fields in the order added.
class LogRecord {
 public:
  LogRecord(LogLevel level, std::string_view msg);

  LogRecord& add(std::string_view key, std::string_view value);
  LogRecord& add(std::string_view key, const char* value) {
    return add(key, std::string_view(value));
  }
  LogRecord& add(std::string_view key, const std::string& value) {
    return add(key, std::string_view(value));
  }
  template <class T>
  requires std::is_arithmetic_v<T> LogRecord& add(std::string_view key, T value) {
    if constexpr (std::is_same_v<T, bool>) {
      return add_raw(key, value ? "true" : "false");
    } else if constexpr (std::is_floating_point_v<T>) {
      return add_double(key, static_cast<double>(value));
    } else if constexpr (std::is_signed_v<T>) {
      return add_int(key, static_cast<std::int64_t>(value));
    } else {
      return add_uint(key, static_cast<std::uint64_t>(value));
    }
  }

  LogLevel level() const { return level_; }
  // The line without its newline.
  std::string render(LogFormat format) const;

 private:
  struct Field {
    std::string key;
    std::string value;
    bool is_string = false;  // quoted in JSON, maybe in logfmt; numbers and bools are bare
  };
  LogRecord& add_raw(std::string_view key, std::string_view literal);
  LogRecord& add_int(std::string_view key, std::int64_t v);
  LogRecord& add_uint(std::string_view key, std::uint64_t v);
  LogRecord& add_double(std::string_view key, double v);

  LogLevel level_;
  std::string time_;  // RFC 3339, UTC, milliseconds: "2026-11-24T23:48:37.123Z"
  std::string msg_;
  std::vector<Field> fields_;
};

// An asynchronous line writer for access logs. Handlers hand it lines; a
// writer goroutine, started when lines are queued and ending when the queue
// is empty, writes them in batches, each write(2) inside goro::blocking: a
// slow disk or a full pipe parks a thread in a syscall while its P serves on,
// and no thread of its own exists. push() takes a std::mutex for a few
// instructions and never waits for I/O; when the queue holds `max_queued`
// lines, new lines are dropped and counted (a full disk must not stall
// request handling). push() from a thread that is not a goroutine writes the
// queue on that thread.
// The destructor, on a goroutine, returns once every queued line is written;
// on a plain thread it writes what is queued unless a writer goroutine is
// still at it (that one finishes on its own). The descriptor is not closed
// and must stay open until then.
class LogSink {
 public:
  explicit LogSink(int fd = 1, std::size_t max_queued = 65536);
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  void push(std::string line);  // a '\n' is appended
  std::uint64_t dropped() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with a running writer goroutine
};

// A LogSink, a format and a threshold: records below `min_level` are dropped.
// Thread-safe (the sink is); share one per process.
class Logger {
 public:
  Logger(std::shared_ptr<LogSink> sink, LogFormat format, LogLevel min_level = LogLevel::kInfo);

  bool enabled(LogLevel level) const { return level >= min_level_; }
  void log(const LogRecord& record);
  // A record of `level` with only a message.
  void log(LogLevel level, std::string_view msg) { log(LogRecord(level, msg)); }

  LogFormat format() const { return format_; }
  LogLevel min_level() const { return min_level_; }
  const std::shared_ptr<LogSink>& sink() const { return sink_; }

 private:
  std::shared_ptr<LogSink> sink_;
  LogFormat format_;
  LogLevel min_level_;
};

}  // namespace goro::http
