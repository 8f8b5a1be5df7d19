// The config file layer: TOML through toml11 (Debian's libtoml11-dev), kept
// behind this file so the public header does not drag toml11 into apps.
//
// Tables map to dotted keys: [http] idle_timeout = "60s" sets the setting
// "http.idle_timeout", as does a top-level http.idle_timeout = "60s". A table
// whose name is not a prefix of any declared key is reported as one unknown
// key rather than one error per entry inside it.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <toml.hpp>

#include "config/server/layers.hpp"

namespace goro::config::detail {
namespace {

using TomlValue = toml::basic_value<toml::discard_comments, std::map, std::vector>;

// "5", "\"abc\"", "a table": the offending value in a message.
std::string describe(const TomlValue& v) {
  switch (v.type()) {
    case toml::value_t::string:
      return toml_quote(v.as_string().str);
    case toml::value_t::integer:
      return fmt::format("{}", v.as_integer());
    case toml::value_t::floating:
      return fmt::format("{}", v.as_floating());
    case toml::value_t::boolean:
      return v.as_boolean() ? "true" : "false";
    case toml::value_t::array:
      return "an array";
    case toml::value_t::table:
      return "a table";
    default:
      return "a date/time";
  }
}

std::optional<Value> convert(Kind kind, const TomlValue& v) {
  switch (kind) {
    case Kind::kString:
      if (v.is_string()) return Value(v.as_string().str);
      return std::nullopt;
    case Kind::kBool:
      if (v.is_boolean()) return Value(v.as_boolean());
      return std::nullopt;
    case Kind::kInt:
      if (v.is_integer()) return Value(static_cast<std::int64_t>(v.as_integer()));
      return std::nullopt;
    case Kind::kSize:
      // An integer is a byte count, so max_body = 1048576 reads naturally.
      if (v.is_integer() && v.as_integer() >= 0) {
        return Value(Size{static_cast<std::uint64_t>(v.as_integer())});
      }
      [[fallthrough]];
    case Kind::kDuration:
    case Kind::kAddress:
      if (v.is_string()) return value_from_text(kind, v.as_string().str);
      return std::nullopt;
  }
  return std::nullopt;
}

// True when some declared key lies under table `prefix` ("http" for "http.x").
bool is_table_of_declared_keys(const std::string& prefix,
                               const std::map<std::string, Kind>& declared) {
  std::string under = prefix + ".";
  auto it = declared.lower_bound(under);
  return it != declared.end() && it->first.compare(0, under.size(), under) == 0;
}

// The offset of the first byte that is not part of well-formed UTF-8
// (overlong forms, surrogates and code points past U+10FFFF included), or
// npos.
std::size_t first_invalid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    std::uint32_t min = 0;
    if (b < 0x80) {
      ++i;
      continue;
    }
    if ((b & 0xE0) == 0xC0) {
      n = 1, cp = b & 0x1Fu, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      n = 2, cp = b & 0x0Fu, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      n = 3, cp = b & 0x07u, min = 0x10000;
    } else {
      return i;
    }
    if (n >= s.size() - i) return i;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return i;
      cp = cp << 6 | (c & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

}  // namespace

std::vector<Assignment> read_toml_file(const std::string& path,
                                       const std::map<std::string, Kind>& declared,
                                       std::vector<std::string>& errors) {
  std::vector<Assignment> out;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errors.push_back(fmt::format("config file {}: cannot open it: {}", path, std::strerror(errno)));
    return out;
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // TOML files are UTF-8 (TOML 1.0 "Spec"). Checked here, before toml11:
  // Debian 12's toml11 3.7.1 reads out of bounds on invalid UTF-8 inside a
  // literal string (toml11 issue 199; found by tests/fuzz/config_toml_fuzzer.cpp).
  if (std::size_t bad = first_invalid_utf8(text); bad != std::string::npos) {
    const auto line =
        1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    errors.push_back(
        fmt::format("config file {}: line {}: not valid UTF-8 (byte {})", path, line, bad + 1));
    return out;
  }
  TomlValue doc;
  try {
    std::istringstream stream(std::move(text));
    doc = toml::parse<toml::discard_comments, std::map, std::vector>(stream, path);
  } catch (const toml::syntax_error& e) {
    errors.push_back(fmt::format("config file {}: invalid TOML: {}", path, e.what()));
    return out;
  } catch (const std::exception& e) {
    errors.push_back(fmt::format("config file {}: {}", path, e.what()));
    return out;
  }

  std::function<void(const std::string&, const TomlValue&)> walk;
  walk = [&](const std::string& prefix, const TomlValue& table) {
    for (const auto& [name, value] : table.as_table()) {
      std::string key = prefix.empty() ? name : prefix + "." + name;
      if (auto it = declared.find(key); it != declared.end()) {
        out.push_back(Assignment{key, convert(it->second, value), describe(value)});
      } else if (value.is_table() && is_table_of_declared_keys(key, declared)) {
        walk(key, value);
      } else {
        errors.push_back(fmt::format("config file {}: unknown key {}", path, toml_quote(key)));
      }
    }
  };
  walk("", doc);
  return out;
}

}  // namespace goro::config::detail
