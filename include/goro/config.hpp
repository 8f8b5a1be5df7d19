// goro::config: server configuration for apps — declared once, layered from
// four sources, explained on demand.
//
// # Layers (later wins)
//
//   1. default   the bound variable's value when it was declared
//   2. file      TOML, named by --config FILE or else GORO_CONFIG
//   3. env       GORO_<KEY> (upper-cased, '.' and '-' become '_'), then any
//                names the app adds with .env("PORT"); empty values are unset
//   4. flag      --key value, --key=value (also --key-with-dashes); a bool
//                flag alone means true (--debug, --debug=false)
//
// Unknown keys in the file, unknown flags and bad values from any source are
// errors; every error names the source and the key:
//   config file hello.toml: key "read_header_timeout": expected a duration like "10s", got 5
// All errors are reported together, not just the first.
//
// --help prints the settings with their types, defaults and env names;
// --print-config prints the effective values, each with where it came from,
// as a TOML document that can itself be used as a config file.
//
// # Types
//
//   string      any string
//   bool        true/false (env and flags also 1/0, yes/no, on/off)
//   integers    int, std::int64_t — range-checked
//   duration    any std::chrono::duration: Go syntax, "10s", "250ms", "1m30s",
//               "1.5h", "0"; negative durations are rejected
//   Size        "512", "64KiB", "1MiB", "10MB" (IEC powers of 1024, SI of
//               1000; unit case-insensitive), or a TOML integer of bytes
//   Address     "host:port", ":port" (all interfaces), "[::1]:port", or a
//               bare port "8080" (so PORT=8080 works)
//
// # Use
//
// Example:
//   struct Options { goro::config::Address addr{"", 8080}; std::chrono::seconds idle{60}; };
//   Options o;
//   goro::config::Config cfg("goro-hello", "Says hello over HTTP.");
//   cfg.add("addr", &o.addr, "listen address").env("PORT");
//   cfg.add("idle_timeout", &o.idle, "close idle keep-alive connections after this");
//   if (auto exit_code = cfg.parse(argc, argv)) return *exit_code;
//
// A Config is not thread-safe. Bound variables must outlive it.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace goro::config {

// A byte count ("1MiB").
struct Size {
  std::uint64_t bytes = 0;
  friend auto operator<=>(const Size&, const Size&) = default;
};

// A listen or dial address. An empty host means all interfaces.
struct Address {
  std::string host;
  std::uint16_t port = 0;
  std::string str() const;  // "host:port", "[v6]:port" or ":port"
  friend bool operator==(const Address&, const Address&) = default;
};

// Where a setting's effective value came from.
enum class Source { kDefault, kFile, kEnv, kFlag };
std::string_view to_string(Source s);

// The value parsers and formatters behind every source, for apps that take
// these types from elsewhere. Parsers return nullopt on bad input.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);
std::optional<Size> parse_size(std::string_view text);
std::optional<Address> parse_address(std::string_view text);
std::optional<bool> parse_bool(std::string_view text);
std::string format_duration(std::chrono::nanoseconds d);  // "10s", "250ms", "90s"
std::string format_size(Size s);                          // "1MiB", "10MB", "512"

namespace detail {
// A setting's value on its way to the bound variable.
using Value =
    std::variant<std::string, bool, std::int64_t, std::chrono::nanoseconds, Size, Address>;
enum class Kind { kString, kBool, kInt, kDuration, kSize, kAddress };

// The type-erased binding: `set` stores a value or explains why it cannot
// ("expected an integer from 0 to 65535"); `get` reads the current value.
struct Binding {
  Kind kind;
  std::function<std::optional<std::string>(const Value&)> set;
  std::function<Value()> get;
};

std::string integer_range_error(std::int64_t min, std::int64_t max);
std::string duration_unit_error(std::string_view unit);

template <class Rep, class Period>
std::string_view duration_unit_name() {
  using P = Period;
  if constexpr (std::is_same_v<P, std::ratio<3600>>)
    return "hours";
  else if constexpr (std::is_same_v<P, std::ratio<60>>)
    return "minutes";
  else if constexpr (std::is_same_v<P, std::ratio<1>>)
    return "seconds";
  else if constexpr (std::is_same_v<P, std::milli>)
    return "milliseconds";
  else if constexpr (std::is_same_v<P, std::micro>)
    return "microseconds";
  else
    return "the setting's unit";
}
}  // namespace detail

// One declared setting; add() returns it for further options.
class Setting {
 public:
  // Also read this environment variable (after GORO_<KEY>), e.g. "PORT".
  Setting& env(std::string name);
  // A string setting accepts only these values from any source ("expected
  // one of text, json, logfmt"); the declared default is not checked.
  Setting& one_of(std::vector<std::string> choices);
  // An integer setting accepts only values in [min, max].
  Setting& range(std::int64_t min, std::int64_t max);

  const std::string& key() const { return key_; }
  Source source() const { return source_; }
  // The file path, variable name or flag that set it ("" for the default).
  const std::string& origin() const { return origin_; }

 private:
  friend class Config;
  Setting(std::string key, std::string help, detail::Binding binding);

  std::string key_;
  std::string help_;
  detail::Binding binding_;
  std::vector<std::string> env_names_;    // GORO_<KEY> first, then .env() names
  std::optional<detail::Value> default_;  // captured at declaration; restored by each load()
  std::string default_text_;
  Source source_ = Source::kDefault;
  std::string origin_;
};

// The result of load(): run the app, or exit with `exit_code` after printing
// `out` to stdout and `err` to stderr.
struct LoadResult {
  bool proceed = false;
  int exit_code = 0;  // 0 after --help/--print-config, 2 on errors
  std::string out;
  std::string err;
};

class Config {
 public:
  using EnvLookup = std::function<const char*(const char*)>;

  Config(std::string app_name, std::string description = "");
  ~Config();
  Config(const Config&) = delete;
  Config& operator=(const Config&) = delete;

  // Declares setting `key` bound to `*target`, whose current value is the
  // default. Keys are [a-z0-9_] words, optionally dotted ("http.idle_timeout":
  // a [http] table in the file). Declaring a key twice throws std::logic_error.
  Setting& add(std::string key, std::string* target, std::string help);
  Setting& add(std::string key, bool* target, std::string help);
  Setting& add(std::string key, int* target, std::string help);
  Setting& add(std::string key, std::int64_t* target, std::string help);
  Setting& add(std::string key, Size* target, std::string help);
  Setting& add(std::string key, Address* target, std::string help);
  template <class Rep, class Period>
  Setting& add(std::string key, std::chrono::duration<Rep, Period>* target, std::string help);

  // Loads every layer into the bound variables, starting again from the
  // defaults each time. `args` excludes the program name; env defaults to
  // std::getenv.
  LoadResult load(const std::vector<std::string>& args, EnvLookup env = nullptr);

  // load() from main's arguments, printing as needed: nullopt means "run",
  // a value is the exit code main should return.
  std::optional<int> parse(int argc, const char* const* argv);

  const Setting* find(std::string_view key) const;
  std::string help() const;
  std::string effective() const;  // what --print-config prints

 private:
  Setting& declare(std::string key, std::string help, detail::Binding binding);
  // Stores `value` (nullopt: the source's text was not of the setting's kind)
  // and records where it came from, or appends an error naming both.
  static void assign(Setting& s, const std::optional<detail::Value>& value, const std::string& got,
                     Source source, const std::string& origin, std::vector<std::string>& errors);

  std::string app_;
  std::string description_;
  std::vector<std::unique_ptr<Setting>> settings_;  // declaration order
};

template <class Rep, class Period>
Setting& Config::add(std::string key, std::chrono::duration<Rep, Period>* target,
                     std::string help) {
  using D = std::chrono::duration<Rep, Period>;
  detail::Binding b{
      detail::Kind::kDuration,
      [target](const detail::Value& v) -> std::optional<std::string> {
        auto ns = std::get<std::chrono::nanoseconds>(v);
        auto d = std::chrono::duration_cast<D>(ns);
        if (std::chrono::duration_cast<std::chrono::nanoseconds>(d) != ns) {
          return detail::duration_unit_error(detail::duration_unit_name<Rep, Period>());
        }
        *target = d;
        return std::nullopt;
      },
      [target]() -> detail::Value {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(*target);
      }};
  return declare(std::move(key), std::move(help), std::move(b));
}

}  // namespace goro::config
