// maxprocs follows a real cgroup CPU limit, live (issue 7). A child process
// is put in a throwaway cgroup v1 `cpu` group, runs a goro runtime with
// GORO_DEBUG=ncpu=16 (so limits below 16 CPUs are observable on a small
// machine) and prints goro::maxprocs() every 50 ms; the parent changes the
// quotas and watches. Skips cleanly where cgroups are not writable.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "goro/goro.hpp"
#include "tests/config/cgroup_fixture.hpp"

using goro::testing::TestCgroup;
using namespace std::chrono_literals;

namespace {

class Probe {
 public:
  // Forks a child that waits until it is in `cg`, then reports maxprocs.
  Probe(TestCgroup& cg, const char* gomaxprocs_env) {
    int go[2], out[2];
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      close(go[1]);
      close(out[0]);
      char c;
      if (read(go[0], &c, 1) != 1) _exit(3);
      setenv("GORO_DEBUG", "ncpu=16", 1);
      if (gomaxprocs_env != nullptr) setenv("GOMAXPROCS", gomaxprocs_env, 1);
      const int fd = out[1];
      goro::run([fd] {
        auto until = std::chrono::steady_clock::now() + 20s;
        while (std::chrono::steady_clock::now() < until) {
          std::string line = "maxprocs=" + std::to_string(goro::maxprocs()) + "\n";
          if (write(fd, line.data(), line.size()) < 0) break;  // parent gone
          goro::sleep_for(50ms);
        }
      });
      _exit(0);
    }
    close(go[0]);
    close(out[1]);
    out_ = out[0];
    cg.add_process(pid_);
    char c = 'g';
    if (write(go[1], &c, 1) != 1) throw std::runtime_error("write");
    close(go[1]);
  }
  ~Probe() {
    close(out_);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  // Waits up to `within` for a report equal to `want`; returns the last seen.
  int wait_for(int want, std::chrono::milliseconds within) {
    auto deadline = std::chrono::steady_clock::now() + within;
    int last = -1;
    while (std::chrono::steady_clock::now() < deadline) {
      int line = next_line(deadline);
      if (line < 0) break;
      last = line;
      if (last == want) return last;
    }
    return last;
  }
  // Every report during `d` equals `want`.
  bool stays(int want, std::chrono::milliseconds d) {
    auto deadline = std::chrono::steady_clock::now() + d;
    int n = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      int line = next_line(deadline);
      if (line < 0) break;
      if (line != want) return false;
      ++n;
    }
    return n > 0;
  }

 private:
  int next_line(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return std::atoi(line.c_str() + line.find('=') + 1);
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return -1;
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return -1;
      char chunk[256];
      ssize_t n = read(out_, chunk, sizeof chunk);
      if (n <= 0) return -1;
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buf_;
};

TEST(MaxprocsCgroup, FollowsTheLimitLiveIncludingTheParent) {
  if (auto why = TestCgroup::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  TestCgroup parent("rt-resize");
  TestCgroup leaf(parent, "leaf");
  leaf.set_cpu_limit(3.5);
  Probe probe(leaf, nullptr);
  EXPECT_EQ(probe.wait_for(4, 3s), 4) << "ceil(3.5) of 16 CPUs";
  leaf.set_cpu_limit(1.2);
  EXPECT_EQ(probe.wait_for(2, 3s), 2) << "max(2, ceil(1.2)) within 3 s";
  leaf.clear_cpu_limit();
  parent.set_cpu_limit(2.5);
  EXPECT_EQ(probe.wait_for(3, 3s), 3) << "the parent's tighter limit is honoured";
  parent.clear_cpu_limit();
  EXPECT_EQ(probe.wait_for(16, 3s), 16) << "no limit: the (debug) CPU count";
}

TEST(MaxprocsCgroup, GomaxprocsEnvWinsAndStaysFixed) {
  if (auto why = TestCgroup::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  TestCgroup cg("rt-env");
  cg.set_cpu_limit(3.5);
  Probe probe(cg, "3");
  EXPECT_EQ(probe.wait_for(3, 3s), 3);
  cg.set_cpu_limit(1.2);
  EXPECT_TRUE(probe.stays(3, 2500ms)) << "GOMAXPROCS disables live updates";
}

}  // namespace
