// What each kind of setting looks like in messages, in --help, as text (env
// and flags) and as a TOML literal (--print-config).
#include <charconv>

#include <fmt/format.h>

#include "config/server/layers.hpp"

namespace goro::config::detail {

std::string_view expected_text(Kind kind) {
  switch (kind) {
    case Kind::kString:
      return "a string";
    case Kind::kBool:
      return "a boolean (true or false)";
    case Kind::kInt:
      return "an integer";
    case Kind::kDuration:
      return "a duration like \"10s\"";
    case Kind::kSize:
      return "a size like \"1MiB\" or 512";
    case Kind::kAddress:
      return "an address like \":8080\" or \"host:port\"";
  }
  return "a value";
}

std::string_view type_name(Kind kind) {
  switch (kind) {
    case Kind::kString:
      return "STRING";
    case Kind::kBool:
      return "BOOL";
    case Kind::kInt:
      return "INT";
    case Kind::kDuration:
      return "DURATION";
    case Kind::kSize:
      return "SIZE";
    case Kind::kAddress:
      return "ADDRESS";
  }
  return "VALUE";
}

std::optional<Value> value_from_text(Kind kind, std::string_view text) {
  switch (kind) {
    case Kind::kString:
      return Value(std::string(text));
    case Kind::kBool:
      if (auto b = parse_bool(text)) return Value(*b);
      return std::nullopt;
    case Kind::kInt: {
      std::int64_t v = 0;
      const char* end = text.data() + text.size();
      auto [ptr, ec] = std::from_chars(text.data(), end, v);
      if (text.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
      return Value(v);
    }
    case Kind::kDuration:
      if (auto d = parse_duration(text)) return Value(*d);
      return std::nullopt;
    case Kind::kSize:
      if (auto s = parse_size(text)) return Value(*s);
      return std::nullopt;
    case Kind::kAddress:
      if (auto a = parse_address(text)) return Value(*a);
      return std::nullopt;
  }
  return std::nullopt;
}

std::string toml_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04X}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string toml_literal(const Value& value) {
  struct Visitor {
    std::string operator()(const std::string& s) const { return toml_quote(s); }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return fmt::format("{}", i); }
    std::string operator()(std::chrono::nanoseconds d) const {
      return toml_quote(format_duration(d));
    }
    std::string operator()(Size s) const { return toml_quote(format_size(s)); }
    std::string operator()(const Address& a) const { return toml_quote(a.str()); }
  };
  return std::visit(Visitor{}, value);
}

std::string integer_range_error(std::int64_t min, std::int64_t max) {
  return fmt::format("expected an integer from {} to {}", min, max);
}

std::string duration_unit_error(std::string_view unit) {
  return fmt::format("expected a whole number of {}", unit);
}

}  // namespace goro::config::detail
