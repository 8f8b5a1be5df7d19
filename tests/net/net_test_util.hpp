// Helpers shared by the goro::net tests: fd counting, child processes, CPU,
// connected pairs.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "goro/net.hpp"

namespace goro_test {

// Open descriptors of this process (/proc/self/fd, minus the DIR's own).
inline int count_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;
}

// utime + stime of `pid` in seconds (/proc/PID/stat fields 14 and 15).
inline double cpu_seconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// goro-echo as a child process on 127.0.0.1:0, optionally with a lowered
// RLIMIT_NOFILE. Reads the bound address from its first stdout line; stderr
// goes to `stderr_path` when given.
struct EchoChild {
  pid_t pid = -1;
  std::string addr;

  bool start(const char* path, rlim_t nofile = 0, const std::string& stderr_path = "") {
    int out[2];
    if (pipe(out) != 0) return false;
    pid = fork();
    if (pid == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      if (!stderr_path.empty()) {
        if (FILE* e = std::fopen(stderr_path.c_str(), "w")) dup2(fileno(e), 2);
      }
      if (nofile != 0) {
        rlimit rl{nofile, nofile};
        setrlimit(RLIMIT_NOFILE, &rl);
      }
      execl(path, path, "--addr", "127.0.0.1:0", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    char buf[128];
    std::string line;
    ssize_t n;
    while (line.find('\n') == std::string::npos && (n = read(out[0], buf, sizeof buf)) > 0)
      line.append(buf, static_cast<std::size_t>(n));
    close(out[0]);
    addr = line.substr(0, line.find('\n'));
    return !addr.empty();
  }

  // SIGTERM, then the exit status (0 = clean).
  int stop() {
    if (pid <= 0) return -1;
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ~EchoChild() {
    if (pid > 0) stop();
  }
};

// `n` connections over `ln`: the dialed ends appended to `clients`, the
// accepted ones to `servers`, pair by pair. Fewer on a failure (reported);
// callers check the sizes.
inline void connect_pairs(goro::net::Listener& ln, int n, std::vector<goro::net::Conn>& clients,
                          std::vector<goro::net::Conn>& servers) {
  for (int i = 0; i < n; ++i) {
    auto c = goro::net::dial("tcp", ln.addr().to_string());
    ASSERT_TRUE(c) << c.error().message();
    auto s = ln.accept();
    ASSERT_TRUE(s) << s.error().message();
    clients.push_back(std::move(*c));
    servers.push_back(std::move(*s));
  }
}

}  // namespace goro_test
