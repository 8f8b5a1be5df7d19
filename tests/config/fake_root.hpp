// FakeRoot: a throwaway filesystem root for goro::gomaxprocs::Resolver, with
// /proc/self/cgroup, /proc/self/mountinfo and cgroup files written by the
// test. Removed with everything under it when the FakeRoot goes away.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace goro::testing {

class FakeRoot {
 public:
  FakeRoot() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "goro-maxprocs-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
  }
  ~FakeRoot() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  FakeRoot(const FakeRoot&) = delete;
  FakeRoot& operator=(const FakeRoot&) = delete;

  const std::string& dir() const { return dir_; }
  // The real path of `path` (absolute, as the process would see it).
  std::string real(const std::string& path) const { return dir_ + path; }

  // Writes `content` to `path` (absolute inside the root), creating parents.
  void write(const std::string& path, const std::string& content) const {
    std::filesystem::path p = real(path);
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::trunc) << content;
  }
  void mkdir(const std::string& path) const { std::filesystem::create_directories(real(path)); }
  void remove(const std::string& path) const { std::filesystem::remove_all(real(path)); }

  void proc_cgroup(const std::string& text) const { write("/proc/self/cgroup", text); }
  void mountinfo(const std::string& text) const { write("/proc/self/mountinfo", text); }

  // v2: cpu.max in `dir` ("max 100000" or "350000 100000").
  void cpu_max(const std::string& dir, const std::string& value) const {
    write(dir + "/cpu.max", value + "\n");
  }
  // v1: cpu.cfs_quota_us and cpu.cfs_period_us in `dir`.
  void cfs(const std::string& dir, long quota_us, long period_us = 100000) const {
    write(dir + "/cpu.cfs_quota_us", std::to_string(quota_us) + "\n");
    write(dir + "/cpu.cfs_period_us", std::to_string(period_us) + "\n");
  }

 private:
  std::string dir_;
};

// An environment for Resolver built from a map; unset names yield nullptr.
inline std::function<const char*(const char*)> fake_env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<const std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

}  // namespace goro::testing
