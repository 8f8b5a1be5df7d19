// The config file layer: TOML through toml11 (Debian's libtoml11-dev), kept
// behind this file so the public header does not drag toml11 into apps.
//
// Tables map to dotted keys: [http] idle_timeout = "60s" sets the setting
// "http.idle_timeout", as does a top-level http.idle_timeout = "60s". A table
// whose name is not a prefix of any declared key is reported as one unknown
// key rather than one error per entry inside it.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
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

}  // namespace

std::vector<Assignment> read_toml_file(const std::string& path,
                                       const std::map<std::string, Kind>& declared,
                                       std::vector<std::string>& errors) {
  std::vector<Assignment> out;
  if (std::ifstream probe(path); !probe) {
    errors.push_back(fmt::format("config file {}: cannot open it: {}", path, std::strerror(errno)));
    return out;
  }
  TomlValue doc;
  try {
    doc = toml::parse<toml::discard_comments, std::map, std::vector>(path);
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
