// Internals shared by config.cpp and toml_file.cpp: turning text and TOML
// values into typed values, and describing kinds in messages.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "goro/config.hpp"

namespace goro::config::detail {

// "a duration like \"10s\"": what a value of `kind` should have looked like.
std::string_view expected_text(Kind kind);
// "DURATION": the placeholder in --help.
std::string_view type_name(Kind kind);
// Parses env and flag text; nullopt when it is not a value of `kind`.
std::optional<Value> value_from_text(Kind kind, std::string_view text);
// A TOML literal for --print-config: "10s" (quoted), true, 42.
std::string toml_literal(const Value& value);
// A TOML basic string with escapes, quotes included.
std::string toml_quote(std::string_view s);

// One value found in a source, not yet stored.
struct Assignment {
  std::string key;
  std::optional<Value> value;  // nullopt: not a value of the key's kind
  std::string got;             // how the source spelled it, for messages
};

// Reads the TOML file at `path` against the declared keys (dotted) and their
// kinds. Values of declared keys are returned in key order; unknown keys and
// unreadable or invalid files add to `errors` (full messages).
std::vector<Assignment> read_toml_file(const std::string& path,
                                       const std::map<std::string, Kind>& declared,
                                       std::vector<std::string>& errors);

}  // namespace goro::config::detail
