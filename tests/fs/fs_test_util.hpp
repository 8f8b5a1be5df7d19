// Helpers shared by the goro::fs tests: a scratch directory and a runtime.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "goro/goro.hpp"

namespace goro_test {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/goro-fs-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Runs `f` as the main goroutine of a runtime with `procs` Ps, so every fs
// call goes through the real syscall handoff; waits (up to 10 s) for the
// other goroutines before returning (goro::run abandons them otherwise).
template <class F>
void run_goro(F&& f, int procs = 4) {
  goro::run(
      [&f] {
        f();
        for (int i = 0; i < 100000 && goro::num_goroutines() > 1; ++i)
          goro::sleep_for(std::chrono::microseconds(100));
      },
      goro::Options{.maxprocs = procs});
}

inline std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

}  // namespace goro_test
