// LogRecord and Logger (goro/http/log.hpp): rendering one structured line in
// text, logfmt or JSON. A record renders once, on the goroutine that logs;
// the LogSink then only queues the finished string.
#include <fmt/format.h>

#include <chrono>
#include <ctime>

#include "goro/http/log.hpp"

namespace goro::http {

namespace {

std::string rfc3339_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

// The length of the valid UTF-8 sequence at s[i], or 0 when it is not one
// (overlong forms, surrogates and code points past U+10FFFF are invalid).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\t') {
      out.append("\\t");
    } else if (c == '\r') {
      out.append("\\r");
    } else if (c < 0x20 || c == 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
    } else if (c >= 0x80) {
      const std::size_t n = utf8_sequence(s, i);
      if (n == 0) {
        out.append("\\ufffd");
        ++i;
        continue;
      }
      out.append(s.substr(i, n));
      i += n;
      continue;
    } else {
      out.push_back(static_cast<char>(c));
    }
    ++i;
  }
  out.push_back('"');
}

bool logfmt_needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || c == '=' || c == '"') return true;
  }
  return false;
}

// logfmt (and text) values: bare when safe, else quoted with Go's escapes;
// bytes outside printable ASCII are escaped, so a line is always one line.
void append_logfmt_value(std::string& out, std::string_view s) {
  if (!logfmt_needs_quotes(s)) {
    out.append(s);
    return;
  }
  out.push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\t') {
      out.append("\\t");
    } else if (c < 0x20 || c >= 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
    } else {
      out.push_back(ch);
    }
  }
  out.push_back('"');
}

}  // namespace

std::optional<LogFormat> parse_log_format(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  if (name == "logfmt") return LogFormat::kLogfmt;
  return std::nullopt;
}

std::optional<LogLevel> parse_log_level(std::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn" || name == "warning") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  return std::nullopt;
}

std::string_view to_string(LogFormat f) {
  switch (f) {
    case LogFormat::kText:
      return "text";
    case LogFormat::kJson:
      return "json";
    case LogFormat::kLogfmt:
      return "logfmt";
  }
  return "text";
}

std::string_view to_string(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

LogRecord::LogRecord(LogLevel level, std::string_view msg)
    : level_(level), time_(rfc3339_now()), msg_(msg) {}

LogRecord& LogRecord::add(std::string_view key, std::string_view value) {
  fields_.push_back({std::string(key), std::string(value), true});
  return *this;
}

LogRecord& LogRecord::add_raw(std::string_view key, std::string_view literal) {
  fields_.push_back({std::string(key), std::string(literal), false});
  return *this;
}

LogRecord& LogRecord::add_int(std::string_view key, std::int64_t v) {
  return add_raw(key, fmt::format("{}", v));
}

LogRecord& LogRecord::add_uint(std::string_view key, std::uint64_t v) {
  return add_raw(key, fmt::format("{}", v));
}

LogRecord& LogRecord::add_double(std::string_view key, double v) {
  // JSON has no NaN or infinity: those become strings.
  if (v != v || v - v != 0) return add(key, fmt::format("{}", v));
  return add_raw(key, fmt::format("{}", v));
}

std::string LogRecord::render(LogFormat format) const {
  std::string out;
  out.reserve(64 + msg_.size() + fields_.size() * 24);
  // logfmt and text end alike: " key=value" per field.
  const auto append_logfmt_fields = [&](std::string& o) {
    for (const Field& f : fields_) {
      o.push_back(' ');
      o.append(f.key).push_back('=');
      append_logfmt_value(o, f.value);
    }
  };
  switch (format) {
    case LogFormat::kJson:
      out.append("{\"time\":\"").append(time_).append("\",\"level\":\"");
      out.append(to_string(level_)).append("\",\"msg\":");
      append_json_string(out, msg_);
      for (const Field& f : fields_) {
        out.push_back(',');
        append_json_string(out, f.key);
        out.push_back(':');
        if (f.is_string) {
          append_json_string(out, f.value);
        } else {
          out.append(f.value);
        }
      }
      out.push_back('}');
      break;
    case LogFormat::kLogfmt:
      out.append("time=").append(time_).append(" level=").append(to_string(level_));
      out.append(" msg=");
      append_logfmt_value(out, msg_);
      append_logfmt_fields(out);
      break;
    case LogFormat::kText: {
      std::string level(to_string(level_));
      for (char& c : level)
        c = static_cast<char>(c - 'a' + 'A');
      out.append(time_).push_back(' ');
      out.append(level).push_back(' ');
      // The message bare (spaces and all), quoted only if it would break
      // the line.
      bool plain = true;
      for (char ch : msg_) {
        const auto c = static_cast<unsigned char>(ch);
        plain = plain && c >= 0x20 && c != 0x7f;
      }
      if (plain) {
        out.append(msg_);
      } else {
        append_logfmt_value(out, msg_);
      }
      append_logfmt_fields(out);
      break;
    }
  }
  return out;
}

Logger::Logger(std::shared_ptr<LogSink> sink, LogFormat format, LogLevel min_level)
    : sink_(std::move(sink)), format_(format), min_level_(min_level) {}

void Logger::log(const LogRecord& record) {
  if (!enabled(record.level()) || !sink_) return;
  sink_->push(record.render(format_));
}

}  // namespace goro::http
