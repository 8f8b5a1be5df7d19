// TestCgroup: a real, throwaway cgroup v1 `cpu` (or `memory`) cgroup for
// integration tests (root only). Reusable by any test that needs a process
// under a CPU or memory limit:
//
//   if (auto why = TestCgroup::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
//   TestCgroup parent("maxprocs");            // <cpu mount>/goro-test-<pid>-<n>-maxprocs
//   TestCgroup leaf(parent, "leaf");          // a child of it
//   parent.set_cpu_limit(1.2);                // cfs_quota_us = 120000, period 100000
//   std::string out = run_in_cgroup(leaf, [] { return std::string("..."); });
//
// The destructor moves any process still inside back to the mount root and
// removes the directory, so a failing test leaves nothing behind (children are
// destroyed before parents by C++'s reverse declaration order). A memory
// cgroup: TestCgroup("name", "memory"), set_memory_limit(bytes). Only v1
// hierarchies are supported: that is what the development host has; a v2
// variant would write cgroup.procs and cpu.max after enabling +cpu in the
// parent's cgroup.subtree_control.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace goro::testing {

class TestCgroup {
 public:
  // Where the v1 cpu hierarchy is mounted, from /proc/self/mountinfo ("" if none).
  static std::string v1_cpu_mount() { return v1_mount("cpu"); }
  // Where the v1 hierarchy of `controller` is mounted ("" if none).
  static std::string v1_mount(const std::string& controller) {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::vector<std::string> fields;
      for (std::string w; f >> w;)
        fields.push_back(w);
      for (std::size_t i = 6; i + 3 < fields.size(); ++i) {
        if (fields[i] != "-") continue;
        bool has = ("," + fields[i + 3] + ",").find("," + controller + ",") != std::string::npos;
        // Escaped mount points (\040) are not expected for these hierarchies.
        if (fields[i + 1] == "cgroup" && has && fields[3] == "/") return fields[4];
        break;
      }
    }
    return "";
  }

  // "" when the test can create cgroups here, else why not (for GTEST_SKIP).
  static std::string unavailable_reason(const std::string& controller = "cpu") {
    if (::geteuid() != 0) return "not root: cannot create cgroups";
    std::string mount = v1_mount(controller);
    if (mount.empty()) return "no cgroup v1 " + controller + " hierarchy mounted with root \"/\"";
    if (::access(mount.c_str(), W_OK) != 0) return mount + " is not writable";
    return "";
  }

  // A new cgroup directly under the mount point of `controller`.
  explicit TestCgroup(const std::string& name, const std::string& controller = "cpu")
      : TestCgroup(v1_mount(controller), name, v1_mount(controller)) {}
  // A new cgroup under `parent`.
  TestCgroup(const TestCgroup& parent, const std::string& name)
      : TestCgroup(parent.path_, name, parent.mount_) {}

  ~TestCgroup() {
    // Empty it, then remove it. Errors are ignored: there is nothing better
    // to do in a destructor, and a leftover empty directory is harmless.
    try {
      std::ifstream tasks(path_ + "/tasks");
      for (std::string pid; std::getline(tasks, pid);) {
        write_file(mount_ + "/tasks", pid, /*throw_on_error=*/false);
      }
    } catch (...) {
      // Out of memory for a path: leave the tasks where they are.
    }
    ::rmdir(path_.c_str());
  }
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;

  const std::string& path() const { return path_; }

  // Sets quota = cpus * period. The kernel refuses (EINVAL) a child quota
  // above its parent's on v1, so set parents' limits no lower than children's.
  void set_cpu_limit(double cpus, long period_us = 100000) {
    write_file(path_ + "/cpu.cfs_period_us", std::to_string(period_us));
    write_file(path_ + "/cpu.cfs_quota_us",
               std::to_string(std::lround(cpus * static_cast<double>(period_us))));
  }
  void clear_cpu_limit() { write_file(path_ + "/cpu.cfs_quota_us", "-1"); }

  // memory.limit_in_bytes (the hard limit; the OOM killer acts on it).
  void set_memory_limit(std::uint64_t bytes) {
    write_file(path_ + "/memory.limit_in_bytes", std::to_string(bytes));
  }
  // A file of this cgroup, whole ("" if unreadable).
  std::string read(const std::string& file) const {
    std::ifstream in(path_ + "/" + file);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // Moves the process (all its threads: cgroup.procs) into this cgroup.
  void add_process(pid_t pid) { write_file(path_ + "/cgroup.procs", std::to_string(pid)); }

 private:
  TestCgroup(const std::string& parent_dir, const std::string& name, std::string mount)
      : mount_(std::move(mount)) {
    static std::atomic<int> counter{0};
    path_ = parent_dir + "/goro-test-" + std::to_string(::getpid()) + "-" +
            std::to_string(counter.fetch_add(1)) + "-" + name;
    if (::mkdir(path_.c_str(), 0755) != 0) {
      throw std::runtime_error("mkdir " + path_ + ": " + std::generic_category().message(errno));
    }
  }

  static void write_file(const std::string& path, const std::string& value,
                         bool throw_on_error = true) {
    // One write(2) per value: cgroup files act on each write call.
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    bool ok =
        fd >= 0 && ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
    int err = errno;
    if (fd >= 0) ::close(fd);
    if (!ok && throw_on_error) {
      throw std::runtime_error("write " + value + " to " + path + ": " +
                               std::generic_category().message(err));
    }
  }

  std::string mount_;
  std::string path_;
};

// Forks a child, moves it into `cg`, runs `body` there and returns what it
// returned. The child does not return into the test framework: it _exits. The
// caller must be single-threaded (fork). Throws if the child fails or hangs.
inline std::string run_in_cgroup(TestCgroup& cg, const std::function<std::string()>& body,
                                 unsigned timeout_seconds = 30) {
  int go[2], result[2];
  if (::pipe2(go, O_CLOEXEC) != 0 || ::pipe2(result, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::alarm(timeout_seconds);
    ::close(go[1]);
    ::close(result[0]);
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(3);  // parent failed to move us
    std::string out = body();
    ssize_t n = ::write(result[1], out.data(), out.size());
    ::_exit(n == static_cast<ssize_t>(out.size()) ? 0 : 4);
  }
  ::close(go[0]);
  ::close(result[1]);
  std::string failure;
  try {
    cg.add_process(pid);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (failure.empty()) {
    if (::write(go[1], "g", 1) != 1) failure = "cannot signal the child";
  }
  ::close(go[1]);  // an unsignalled child sees EOF and exits 3
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(result[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(result[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!failure.empty()) throw std::runtime_error(failure);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("cgroup child failed, wait status " + std::to_string(status));
  }
  return out;
}

}  // namespace goro::testing
