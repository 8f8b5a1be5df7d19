// goro::config::Config: declaring settings and loading the four layers.
//
// Flags are parsed with CLI11 (Debian's libcli11-dev) into raw strings; every
// layer then goes through the same kind-specific parsers (kinds.cpp), so a
// duration means the same thing in a file, in GORO_IDLE_TIMEOUT and after
// --idle_timeout, and every error has the same shape. CLI11's own env support
// (Option::envname) is not used: it would bypass that shape and the
// "where did this value come from" record that --print-config shows.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "config/server/layers.hpp"
#include "goro/config.hpp"

namespace goro::config {
namespace {

// Keys are lower-case words of [a-z0-9_], joined by '.' for TOML tables.
bool is_valid_key(std::string_view key) {
  if (key.empty() || key.front() == '.' || key.back() == '.') return false;
  char prev = 0;
  for (char c : key) {
    bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!word && !(c == '.' && prev != '.')) return false;
    prev = c;
  }
  return true;
}

std::string env_name_for(std::string_view key) {
  std::string name = "GORO_";
  for (char c : key) {
    name += (c == '.' || c == '-') ? '_' : static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  }
  return name;
}

std::string dashed(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

template <class Int>
detail::Binding int_binding(Int* target) {
  return {detail::Kind::kInt,
          [target](const detail::Value& v) -> std::optional<std::string> {
            std::int64_t i = std::get<std::int64_t>(v);
            if (i < std::numeric_limits<Int>::min() || i > std::numeric_limits<Int>::max()) {
              return detail::integer_range_error(std::numeric_limits<Int>::min(),
                                                 std::numeric_limits<Int>::max());
            }
            *target = static_cast<Int>(i);
            return std::nullopt;
          },
          [target] { return detail::Value(static_cast<std::int64_t>(*target)); }};
}

// A binding for a type stored in Value as itself.
template <class T>
detail::Binding plain_binding(detail::Kind kind, T* target) {
  return {kind,
          [target](const detail::Value& v) -> std::optional<std::string> {
            *target = std::get<T>(v);
            return std::nullopt;
          },
          [target] { return detail::Value(*target); }};
}

std::string describe_source(Source source, const std::string& origin) {
  switch (source) {
    case Source::kFile:
      return "config file " + origin;
    case Source::kEnv:
      return "environment variable " + origin;
    case Source::kFlag:
      return "flag " + origin;
    case Source::kDefault:
      break;
  }
  return "default";
}

}  // namespace

Setting::Setting(std::string key, std::string help, detail::Binding binding)
    : key_(std::move(key)), help_(std::move(help)), binding_(std::move(binding)) {}

Setting& Setting::env(std::string name) {
  env_names_.push_back(std::move(name));
  return *this;
}

Setting& Setting::one_of(std::vector<std::string> choices) {
  binding_.set = [inner = std::move(binding_.set), choices = std::move(choices)](
                     const detail::Value& v) -> std::optional<std::string> {
    const auto* text = std::get_if<std::string>(&v);
    if (text != nullptr && std::find(choices.begin(), choices.end(), *text) == choices.end()) {
      return fmt::format("expected one of {}", fmt::join(choices, ", "));
    }
    return inner(v);
  };
  return *this;
}

Setting& Setting::range(std::int64_t min, std::int64_t max) {
  binding_.set = [inner = std::move(binding_.set), min,
                  max](const detail::Value& v) -> std::optional<std::string> {
    const auto* i = std::get_if<std::int64_t>(&v);
    if (i != nullptr && (*i < min || *i > max)) return detail::integer_range_error(min, max);
    return inner(v);
  };
  return *this;
}

Config::Config(std::string app_name, std::string description)
    : app_(std::move(app_name)), description_(std::move(description)) {}
Config::~Config() = default;

Setting& Config::add(std::string key, std::string* target, std::string help) {
  return declare(std::move(key), std::move(help), plain_binding(detail::Kind::kString, target));
}
Setting& Config::add(std::string key, bool* target, std::string help) {
  return declare(std::move(key), std::move(help), plain_binding(detail::Kind::kBool, target));
}
Setting& Config::add(std::string key, int* target, std::string help) {
  return declare(std::move(key), std::move(help), int_binding(target));
}
Setting& Config::add(std::string key, std::int64_t* target, std::string help) {
  return declare(std::move(key), std::move(help), int_binding(target));
}
Setting& Config::add(std::string key, Size* target, std::string help) {
  return declare(std::move(key), std::move(help), plain_binding(detail::Kind::kSize, target));
}
Setting& Config::add(std::string key, Address* target, std::string help) {
  return declare(std::move(key), std::move(help), plain_binding(detail::Kind::kAddress, target));
}

Setting& Config::declare(std::string key, std::string help, detail::Binding binding) {
  // Declaration mistakes are the app author's bugs: fail loudly at startup.
  if (!is_valid_key(key)) {
    throw std::logic_error(
        fmt::format("goro::config: invalid key \"{}\" (use [a-z0-9_], dots)", key));
  }
  for (const auto& s : settings_) {
    const std::string& a = s->key_;
    bool nested =
        (a.size() > key.size() && a.compare(0, key.size(), key) == 0 && a[key.size()] == '.') ||
        (key.size() > a.size() && key.compare(0, a.size(), a) == 0 && key[a.size()] == '.');
    if (a == key || nested) {
      throw std::logic_error(fmt::format("goro::config: key \"{}\" clashes with \"{}\"", key, a));
    }
  }
  auto setting = std::unique_ptr<Setting>(new Setting(key, std::move(help), std::move(binding)));
  setting->env_names_.push_back(env_name_for(key));
  setting->default_ = setting->binding_.get();
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): assigned on the line above
  setting->default_text_ = detail::toml_literal(*setting->default_);
  settings_.push_back(std::move(setting));
  return *settings_.back();
}

const Setting* Config::find(std::string_view key) const {
  for (const auto& s : settings_) {
    if (s->key_ == key) return s.get();
  }
  return nullptr;
}

void Config::assign(Setting& s, const std::optional<detail::Value>& value, const std::string& got,
                    Source source, const std::string& origin, std::vector<std::string>& errors) {
  std::string where = describe_source(source, origin);
  if (!value) {
    errors.push_back(fmt::format("{}: key {}: expected {}, got {}", where,
                                 detail::toml_quote(s.key_), detail::expected_text(s.binding_.kind),
                                 got));
    return;
  }
  if (auto problem = s.binding_.set(*value)) {
    errors.push_back(
        fmt::format("{}: key {}: {}, got {}", where, detail::toml_quote(s.key_), *problem, got));
    return;
  }
  s.source_ = source;
  s.origin_ = origin;
}

// NOLINTNEXTLINE(readability-function-size): the four layers in order, read top to bottom
LoadResult Config::load(const std::vector<std::string>& args, EnvLookup env) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read-only; goro never calls setenv
  if (!env) env = [](const char* name) -> const char* { return std::getenv(name); };
  for (const auto& s : settings_) {
    // Cannot fail: it came from the variable itself; declare() always sets default_.
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access)
    s->binding_.set(*s->default_);
    s->source_ = Source::kDefault;
    s->origin_.clear();
  }

  // Flags first, so --help and flag syntax errors win over everything else.
  CLI::App app(description_, app_);
  std::vector<std::string> raw(settings_.size());
  std::vector<CLI::Option*> options(settings_.size());
  for (std::size_t i = 0; i < settings_.size(); ++i) {
    const Setting& s = *settings_[i];
    std::string names = "--" + s.key_;
    if (dashed(s.key_) != s.key_) names += ",--" + dashed(s.key_);
    if (s.binding_.kind == detail::Kind::kBool) {
      // "--debug" alone means true; "--debug=false" is allowed too.
      options[i] = app.add_flag(names + "{true}", raw[i], s.help_);
    } else {
      options[i] = app.add_option(names, raw[i], s.help_);
    }
    options[i]->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  std::string config_path;
  app.add_option("--config", config_path, "TOML config file");
  bool print_config = false;
  app.add_flag("--print-config", print_config, "print the effective configuration");
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11's convention
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return {false, 0, help(), ""};
  } catch (const CLI::ParseError& e) {
    return {false, 2, "",
            fmt::format("{}: {}\nRun '{} --help' for usage.\n", app_, e.what(), app_)};
  }

  std::vector<std::string> errors;
  if (config_path.empty()) {
    const char* from_env = env("GORO_CONFIG");
    if (from_env != nullptr) config_path = from_env;
  }
  if (!config_path.empty()) {
    std::map<std::string, detail::Kind> declared;
    for (const auto& s : settings_)
      declared.emplace(s->key_, s->binding_.kind);
    for (const detail::Assignment& a : detail::read_toml_file(config_path, declared, errors)) {
      auto it = std::find_if(settings_.begin(), settings_.end(),
                             [&](const auto& s) { return s->key_ == a.key; });
      assign(**it, a.value, a.got, Source::kFile, config_path, errors);  // declared: found
    }
  }
  for (const auto& s : settings_) {
    for (const std::string& name : s->env_names_) {
      const char* text = env(name.c_str());
      if (text == nullptr || *text == '\0') continue;
      assign(*s, detail::value_from_text(s->binding_.kind, text), fmt::format("{:?}", text),
             Source::kEnv, name, errors);
      break;  // the first variable set wins: GORO_<KEY> before app-added names
    }
  }
  for (std::size_t i = 0; i < settings_.size(); ++i) {
    if (options[i]->count() == 0) continue;
    Setting& s = *settings_[i];
    assign(s, detail::value_from_text(s.binding_.kind, raw[i]), fmt::format("{:?}", raw[i]),
           Source::kFlag, "--" + s.key_, errors);
  }

  if (!errors.empty()) {
    std::string err;
    for (const std::string& e : errors)
      err += fmt::format("{}: {}\n", app_, e);
    return {false, 2, "", err};
  }
  if (print_config) return {false, 0, effective(), ""};
  return {true, 0, "", ""};
}

std::optional<int> Config::parse(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i)
    args.emplace_back(argv[i]);
  LoadResult r = load(args);
  std::fputs(r.out.c_str(), stdout);
  std::fputs(r.err.c_str(), stderr);
  if (r.proceed) return std::nullopt;
  return r.exit_code;
}

std::string Config::help() const {
  std::string out = description_.empty() ? fmt::format("{}\n\n", app_)
                                         : fmt::format("{}: {}\n\n", app_, description_);
  out += fmt::format("Usage: {} [--config FILE] [--print-config] [--KEY VALUE]...\n\n", app_);
  out += "Settings (later sources win: default < config file < environment < flag):\n";
  for (const auto& s : settings_) {
    if (s->binding_.kind == detail::Kind::kBool) {
      out += fmt::format("  --{}[=BOOL]\n", s->key_);
    } else {
      out += fmt::format("  --{} {}\n", s->key_, detail::type_name(s->binding_.kind));
    }
    if (!s->help_.empty()) out += fmt::format("      {}\n", s->help_);
    std::string envs;
    for (const std::string& name : s->env_names_)
      envs += (envs.empty() ? "" : ", ") + name;
    out += fmt::format("      default {}; env {}\n", s->default_text_, envs);
  }
  out += "\nOther flags:\n";
  out += "  --config FILE    read settings from this TOML file (else $GORO_CONFIG)\n";
  out += "  --print-config   print the effective settings and where each came from, then exit\n";
  out += "  -h, --help       print this help and exit\n";
  return out;
}

std::string Config::effective() const {
  std::vector<std::pair<std::string, std::string>> lines;
  std::size_t width = 0;
  for (const auto& s : settings_) {
    std::string assignment =
        fmt::format("{} = {}", s->key_, detail::toml_literal(s->binding_.get()));
    std::string from = s->source_ == Source::kDefault
                           ? std::string("default")
                           : fmt::format("{} {}", to_string(s->source_), s->origin_);
    width = std::max(width, assignment.size());
    lines.emplace_back(std::move(assignment), std::move(from));
  }
  std::string out =
      fmt::format("# {}: effective configuration; '#' says where each value came from\n", app_);
  for (const auto& [assignment, from] : lines) {
    out += fmt::format("{:<{}}  # {}\n", assignment, width, from);
  }
  return out;
}

}  // namespace goro::config
