// libFuzzer target for the config file layer (config/server/toml_file.cpp,
// through goro::config::Config::load): the input is the TOML file.
//
// The file reaches load() the way an app's does, by path (--config FILE):
// the bytes go into a memfd, named as /proc/self/fd/N, so no run touches the
// disk or leaves a file behind. The environment is empty, so only the
// defaults and the file decide. One setting of each kind is declared, with a
// range, a one_of and dotted keys (TOML tables), see declare().
//
// Oracles, beyond ASan/UBSan:
//   - load() returns; nothing escapes it (it documents no exception);
//   - it proceeds with exit code 0 and nothing to print, or fails with exit
//     code 2 and errors only, each naming the file and then a key or the
//     TOML syntax error (whose message carries the line);
//   - whatever happened, every bound variable satisfies its range and one_of,
//     and every setting's source is the default or the file;
//   - after a load that proceeds, --print-config's document (effective())
//     loads back to the same values: config.hpp promises it can be used as a
//     config file.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "goro/config.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using goro::config::Address;
using goro::config::Config;
using goro::config::LoadResult;
using goro::config::Size;
using goro::config::Source;

constexpr std::string_view kApp = "fuzz-config";

struct Settings {
  std::string name = "goro";
  std::string log_format = "text";  // one_of text, json, logfmt
  bool debug = false;
  int workers = 4;                 // range 1..256
  int backlog = 511;               // int's own bounds
  std::int64_t max_conns = 10000;  // range 0..1000000
  std::int64_t offset = 0;         // int64's own bounds
  Size max_body{1 << 20};
  Address addr{"", 8080};
  std::chrono::seconds idle_timeout{60};
  std::chrono::milliseconds read_timeout{5000};
  bool tls_enabled = false;

  bool operator==(const Settings&) const = default;
};

void declare(Config& config, Settings& s) {
  config.add("name", &s.name, "a string");
  config.add("log.format", &s.log_format, "a string from a list")
      .one_of({"text", "json", "logfmt"});
  config.add("debug", &s.debug, "a bool");
  config.add("workers", &s.workers, "an int in a range").range(1, 256);
  config.add("backlog", &s.backlog, "an int");
  config.add("max_conns", &s.max_conns, "an int64 in a range").range(0, 1000000);
  config.add("offset", &s.offset, "an int64");
  config.add("http.max_body", &s.max_body, "a size");
  config.add("http.addr", &s.addr, "an address");
  config.add("http.idle_timeout", &s.idle_timeout, "a duration in seconds");
  config.add("http.read_timeout", &s.read_timeout, "a duration in milliseconds");
  config.add("tls.enabled", &s.tls_enabled, "a bool in another table");
}

// The config file: one memfd for the whole run, rewritten per input.
class MemFile {
 public:
  MemFile() : fd_(memfd_create("goro-config-fuzz", MFD_CLOEXEC)) {
    FUZZ_CHECK(fd_ >= 0);
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  const std::string& path() const { return path_; }

  void replace(std::string_view text) {
    FUZZ_CHECK(ftruncate(fd_, 0) == 0);
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n =
          pwrite(fd_, text.data() + done, text.size() - done, static_cast<off_t>(done));
      FUZZ_CHECK(n > 0);
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  int fd_;
  std::string path_;
};

struct Fixture {
  Settings settings;
  Config config{std::string(kApp)};
  MemFile file;
  Fixture() { declare(config, settings); }

  LoadResult load(std::string_view text) {
    file.replace(text);
    try {
      return config.load({"--config", file.path()},
                         [](const char*) -> const char* { return nullptr; });
    } catch (...) {
      goro::fuzz::fail("Config::load threw", __FILE__, __LINE__);
    }
  }
};

// True when `s` is UTF-8 as RFC 3629 defines it: no overlong forms, no
// surrogates, nothing past U+10FFFF.
bool is_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0, min = 0;
    if (b < 0x80) {
      ++i;
      continue;
    } else if ((b & 0xE0) == 0xC0) {
      n = 1, cp = b & 0x1F, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      n = 2, cp = b & 0x0F, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      n = 3, cp = b & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = cp << 6 | (c & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

void check_errors(const LoadResult& r, const std::string& path) {
  FUZZ_CHECK(r.exit_code == 2 && r.out.empty() && !r.err.empty());
  const std::string prefix = std::string(kApp) + ": config file " + path + ": ";
  FUZZ_CHECK(r.err.starts_with(prefix));
  // Each error starts a line with the app's name; a TOML syntax error's
  // message continues over further lines (toml11 quotes the source there).
  std::string_view rest = r.err;
  while (!rest.empty()) {
    const std::string_view line = rest.substr(0, rest.find('\n'));
    rest.remove_prefix(std::min(line.size() + 1, rest.size()));
    if (!line.starts_with(kApp)) continue;
    FUZZ_CHECK(line.starts_with(prefix));
    const std::string_view what = line.substr(prefix.size());
    FUZZ_CHECK(what.starts_with("invalid TOML: ") || what.starts_with("key \"") ||
               what.starts_with("unknown key \"") ||
               (what.starts_with("line ") && what.find(": not valid UTF-8 (byte ") != what.npos));
  }
}

void check_constraints(const Fixture& f) {
  const Settings& s = f.settings;
  FUZZ_CHECK(s.log_format == "text" || s.log_format == "json" || s.log_format == "logfmt");
  FUZZ_CHECK(s.workers >= 1 && s.workers <= 256);
  FUZZ_CHECK(s.max_conns >= 0 && s.max_conns <= 1000000);
  for (std::string_view key :
       {"name", "log.format", "debug", "workers", "backlog", "max_conns", "offset", "http.max_body",
        "http.addr", "http.idle_timeout", "http.read_timeout", "tls.enabled"}) {
    const goro::config::Setting* setting = f.config.find(key);
    FUZZ_CHECK(setting != nullptr);
    FUZZ_CHECK(setting->source() == Source::kDefault || setting->source() == Source::kFile);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Fixture f;
  const std::string_view text = goro::fuzz::as_text(data, size);
  // Invalid UTF-8 once reached toml11 3.7.1, which reads out of bounds on
  // it inside a literal string (toml11 issue 199;
  // tests/fuzz/corpus/config_toml/regress_invalid_utf8_literal_string): goro now
  // refuses such a file first, naming the line.
  const LoadResult first = f.load(text);
  check_constraints(f);
  // Not UTF-8: refused, and said so (the file is never parsed).
  if (!is_utf8(text)) {
    FUZZ_CHECK(!first.proceed && first.err.find("not valid UTF-8") != std::string::npos);
  }
  if (!first.proceed) {
    check_errors(first, f.file.path());
    return 0;
  }
  FUZZ_CHECK(first.exit_code == 0 && first.out.empty() && first.err.empty());

  const Settings loaded = f.settings;
  const std::string printed = f.config.effective();
  const LoadResult again = f.load(printed);
  if (!again.proceed || f.settings != loaded) {
    std::fprintf(stderr, "--print-config gave:\n%s%s", printed.c_str(), again.err.c_str());
  }
  FUZZ_CHECK(again.proceed);
  FUZZ_CHECK(f.settings == loaded);
  return 0;
}
