// goro-hello as a container runs it: JSON logs that parse, a lame-duck
// SIGTERM under wrk load, maxprocs from a real CPU cgroup, and a real 64 MiB
// memory cgroup: the limit exported, load shed with 503 + Retry-After under a
// flood of /echo bodies, no OOM kill, and recovery afterwards. The cgroup
// tests need root and writable v1 hierarchies; elsewhere they skip.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/config/cgroup_fixture.hpp"
#include "tests/http_server/test_util.hpp"

namespace {

using namespace std::chrono_literals;
using goro::testing::TestCgroup;
using goro_test::Client;
using goro_test::get;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Hello : goro_test::ChildServer {
  explicit Hello(std::vector<std::string> args,
                 std::vector<std::string> env = {"GORO_LOG_FORMAT=json"},
                 std::function<void()> before_exec = {})
      : ChildServer(GORO_HELLO_PATH, std::move(args), std::move(env), std::move(before_exec)) {}

  // Every stdout line parsed as JSON (a line that does not parse fails).
  std::vector<json> records() const {
    std::vector<json> out;
    for (const std::string& l : lines()) {
      try {
        out.push_back(json::parse(l));
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not JSON: " << l << " (" << e.what() << ")";
      }
    }
    return out;
  }
  // The first record whose msg is `msg` (null if none).
  json record(const std::string& msg) const {
    for (const json& j : records()) {
      if (j.value("msg", "") == msg) return j;
    }
    return nullptr;
  }
  Client::Response fetch(const std::string& path) const {
    Client c(port);
    c.send(get(path));
    return c.read_response();
  }
};

// --- logs --------------------------------------------------------------------

TEST(Container, JsonLogLinesParseAndTellTheLifecycle) {
  Hello h({"--access_log"});
  ASSERT_GT(h.port, 0);
  EXPECT_EQ(h.fetch("/plaintext").status, 200);
  EXPECT_EQ(h.fetch("/nope").status, 404);
  {
    Client c(h.port);
    c.send(
        "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
        "X-Request-Id: id\"with\\quote\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    EXPECT_EQ(c.read_response().body, "hello");
  }
  ASSERT_TRUE(h.wait_for_line(
      [](const std::string& l) { return l.find("/echo") != std::string::npos; }, 5s));
  kill(h.pid, SIGTERM);
  EXPECT_EQ(h.wait_exit(10s), 0);
  const json listening = h.record("listening");
  ASSERT_FALSE(listening.is_null());
  EXPECT_EQ(h.records().front()["msg"], "listening") << "the first line says where it listens";
  EXPECT_EQ(listening["addr"], h.addr);
  EXPECT_EQ(listening["app"], "goro-hello");
  EXPECT_FALSE(listening["version"].get<std::string>().empty());
  EXPECT_GE(listening["maxprocs"].get<int>(), 1);
  EXPECT_TRUE(listening["maxprocs_source"].is_string());
  EXPECT_TRUE(listening["memory_limit_bytes"].is_number());
  EXPECT_EQ(listening["pid"], h.pid_at_start);
  int requests = 0;
  for (const json& j : h.records()) {
    if (j.value("msg", "") != "request") continue;
    ++requests;
    if (j["target"] == "/echo") {
      EXPECT_EQ(j["method"], "POST") << "the head outlives the chunked body";
      EXPECT_EQ(j["request_id"], "id\"with\\quote");
      EXPECT_EQ(j["status"], 200);
    }
  }
  EXPECT_EQ(requests, 3);
  EXPECT_FALSE(h.record("shutting down").is_null());
  const json stopped = h.record("stopped");
  ASSERT_FALSE(stopped.is_null());
  EXPECT_EQ(stopped["connections_forced"], 0);
  EXPECT_TRUE(stopped["requests_drained"].is_number());
}

TEST(Container, LogLevelWarnSilencesRequestsAndLogfmtIsKeyValue) {
  Hello h({"--access_log", "--log_level", "warn"}, {"GORO_LOG_FORMAT=logfmt"});
  ASSERT_GT(h.port, 0);
  EXPECT_EQ(h.fetch("/plaintext").status, 200);
  kill(h.pid, SIGTERM);
  EXPECT_EQ(h.wait_exit(10s), 0);
  const auto lines = h.lines();
  ASSERT_EQ(lines.size(), 1u) << "only the start-up line, which is always written";
  EXPECT_EQ(lines[0].rfind("time=", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(" level=info msg=listening app=goro-hello "), std::string::npos)
      << lines[0];
}

// --- SIGTERM under load ------------------------------------------------------

// Keep-alive GET /plaintext in a loop, reconnecting after Connection: close,
// until told to stop. A request that got no byte at all (connection refused
// or closed before the server read it) is "unanswered"; one that got
// anything but a whole 200 is a failure.
struct Prober {
  int port;
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, unanswered{0}, failed{0};
  std::string failure;  // the first one (written by the prober thread only)
  std::thread t;

  explicit Prober(int p) : port(p) {
    t = std::thread([this] { run(); });
  }
  ~Prober() {
    stop = true;
    t.join();
  }
  void run() {
    while (!stop) {
      Client c(port, 3000ms);
      if (!c.connected()) {
        ++unanswered;
        std::this_thread::sleep_for(5ms);
        continue;
      }
      while (!stop) {
        if (!c.send(get("/plaintext"))) {
          ++unanswered;
          break;
        }
        Client::Response r = c.read_response();
        if (!r.ok && r.status_line.empty()) {
          ++unanswered;
          break;
        }
        if (!r.ok || r.status != 200 || r.body != "Hello, World!") {
          if (failed++ == 0) failure = r.status_line + " body=" + r.body;
          break;
        }
        ++ok;
        if (r.header("connection") == "close") break;
      }
    }
  }
};

TEST(Container, SigtermUnderWrkLoadIsALameDuckThenADrain) {
  GORO_SKIP_SIGNAL_TIMING_UNDER_TSAN();
  Hello h({"--shutdown_delay", "1500ms", "--shutdown_timeout", "10s"});
  ASSERT_GT(h.port, 0);
  FILE* wrk = ::popen(("wrk -t1 -c16 -d5s http://" + h.addr + "/plaintext 2>&1").c_str(), "r");
  ASSERT_NE(wrk, nullptr);
  Prober probe(h.port);
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(h.fetch("/readyz").status, 200);
  const int ok_before = probe.ok.load();
  const auto sigterm = Clock::now();
  kill(h.pid, SIGTERM);
  // Readiness fails first, on a new connection: the listener is still open.
  int readyz = 0;
  while (Clock::now() - sigterm < 1s && (readyz = h.fetch("/readyz").status) != 503)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(readyz, 503);
  const Client::Response during = h.fetch("/plaintext");
  EXPECT_EQ(during.status, 200) << "still serving during the lame duck";
  EXPECT_EQ(during.header("connection"), "close");
  const int code = h.wait_exit(15s);
  const double took = std::chrono::duration<double>(Clock::now() - sigterm).count();
  EXPECT_EQ(code, 0);
  EXPECT_GE(took, 1.4) << "the lame duck lasts shutdown_delay";
  EXPECT_LT(took, 1.5 + 10 + 2) << "exit within the delay plus the deadline";
  probe.stop = true;
  std::string wrk_out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, wrk) != nullptr)
    wrk_out += buf;
  ::pclose(wrk);
  std::printf("wrk during the shutdown:\n%s", wrk_out.c_str());
  std::printf("prober: ok %d, unanswered %d, failed %d\n", probe.ok.load(), probe.unanswered.load(),
              probe.failed.load());
  EXPECT_GT(ok_before, 0);
  EXPECT_GT(probe.ok.load(), ok_before) << "requests were served after SIGTERM";
  EXPECT_EQ(probe.failed.load(), 0) << probe.failure;
  EXPECT_EQ(wrk_out.find("Non-2xx"), std::string::npos) << wrk_out;
  EXPECT_EQ(wrk_out.find(", timeout ") == std::string::npos ||
                wrk_out.find(", timeout 0") != std::string::npos,
            true)
      << wrk_out;
  const json stopped = h.record("stopped");
  ASSERT_FALSE(stopped.is_null());
  EXPECT_EQ(stopped["connections_forced"], 0) << "no request was cut";
  EXPECT_GT(stopped["requests_drained"].get<long>(), 0);
}

// --- cgroups -----------------------------------------------------------------

// Runs in the forked child before exec: joins `dir` (a cgroup directory).
std::function<void()> join_cgroup(const std::string& dir) {
  return [dir] {
    const std::string procs = dir + "/cgroup.procs";
    const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    const std::string pid = std::to_string(::getpid());
    if (fd < 0 || ::write(fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size())) {
      ::_exit(126);
    }
    ::close(fd);
  };
}

std::string metric_line(const std::string& metrics, const std::string& name) {
  const std::size_t at = metrics.find("\n" + name + " ");
  if (at == std::string::npos) return "";
  return metrics.substr(at + 1, metrics.find('\n', at + 1) - at - 1);
}

TEST(Container, CpuQuotaOfOneAndAHalfGivesMaxprocsTwo) {
  if (auto why = TestCgroup::unavailable_reason("cpu"); !why.empty()) GTEST_SKIP() << why;
  TestCgroup cg("hello-cpu");
  cg.set_cpu_limit(1.5);
  Hello h({}, {"GORO_LOG_FORMAT=json", "GORO_DEBUG=ncpu=8"}, join_cgroup(cg.path()));
  ASSERT_GT(h.port, 0);
  const json listening = h.record("listening");
  EXPECT_EQ(listening["maxprocs"], 2);
  EXPECT_EQ(listening["maxprocs_source"], "cgroup");
  const std::string metrics = h.fetch("/metrics").body;
  EXPECT_EQ(metric_line(metrics, "goro_maxprocs"), "goro_maxprocs 2");
  EXPECT_NE(metrics.find("goro_maxprocs_source{source=\"cgroup\"} 1"), std::string::npos);
}

std::size_t field(const std::string& text, const std::string& key) {
  const std::size_t at = text.find(key + " ");
  return at == std::string::npos ? 0 : std::stoul(text.substr(at + key.size() + 1));
}

TEST(Container, MemoryLimitIsExportedAndAFloodIsShedNotKilled) {
#if defined(GORO_ASAN)
  // ASan's allocator keeps freed memory in its quarantine (256 MiB by
  // default) and pads every block with redzones, its shadow adds an eighth:
  // under it the server's memory says nothing about what it holds, and the
  // flood here had it OOM-killed in the 64 MiB cgroup before the guard's
  // shedding could matter (tried: an oom_kill, then refused connections).
  // The release build checks the shedding; hostile_test skips its RSS bound
  // under ASan for the same reason.
  GTEST_SKIP() << "ASan build: memory accounting is ASan's, checked in release builds";
#endif
  if (auto why = TestCgroup::unavailable_reason("memory"); !why.empty()) GTEST_SKIP() << why;
  constexpr std::uint64_t kLimit = 64u << 20;
  TestCgroup cg("hello-mem", "memory");
  cg.set_memory_limit(kLimit);
  Hello h({"--max_connections", "0"}, {"GORO_LOG_FORMAT=json"}, join_cgroup(cg.path()));
  ASSERT_GT(h.port, 0);
  EXPECT_EQ(h.record("listening")["memory_limit_bytes"], kLimit);
  EXPECT_EQ(metric_line(h.fetch("/metrics").body, "goro_memory_limit_bytes"),
            "goro_memory_limit_bytes 67108864");

  // The flood: uploads that never finish, each holding a handler, its echo
  // and read buffers and its stack (~82 KiB), opened 20 every 40 ms (500/s).
  // A refused one costs its goroutine for the 500 ms lingering close, so a
  // much faster flood of connections can still exhaust 64 MiB on its own.
  const std::string head =
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 8388608\r\n\r\n" + std::string(65536, 'x');
  std::vector<int> fds;
  int shed = 0, shed_with_retry_after = 0, admitted = 0;
  auto classify = [&](int fd) {
    char buf[512];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT | MSG_PEEK);
    if (n <= 0) return 0;
    const std::string got(buf, static_cast<std::size_t>(n));
    if (got.rfind("HTTP/1.1 503", 0) == 0)
      return got.find("Retry-After: 1\r\n") != std::string::npos ? 2 : 1;
    if (got.rfind("HTTP/1.1 200", 0) == 0) return 3;
    return 0;
  };
  bool healthy_during = true;
  for (int batch = 0; batch < 60; ++batch) {
    for (int i = 0; i < 20; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(static_cast<std::uint16_t>(h.port));
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        ADD_FAILURE() << "connect failed: the server must keep accepting";
        if (fd >= 0) ::close(fd);
        break;
      }
      (void)::send(fd, head.data(), head.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      fds.push_back(fd);
    }
    std::this_thread::sleep_for(40ms);
    if (batch % 15 == 14 && h.fetch("/healthz").status != 200) healthy_during = false;
  }
  std::this_thread::sleep_for(300ms);
  for (int fd : fds) {
    switch (classify(fd)) {
      case 1:
        ++shed;
        break;
      case 2:
        ++shed;
        ++shed_with_retry_after;
        break;
      case 3:
        ++admitted;
        break;
      default:
        break;
    }
  }
  const std::string metrics = h.fetch("/metrics").body;
  const Client::Response readyz = h.fetch("/readyz");
  std::printf("flood: %zu connections, %d admitted, %d shed; rss %s; readyz %d\n", fds.size(),
              admitted, shed, metric_line(metrics, "process_resident_memory_bytes").c_str(),
              readyz.status);
  EXPECT_TRUE(healthy_during) << "/healthz is never shed";
  EXPECT_GT(admitted, 0);
  EXPECT_GT(shed, 0) << "past 90% of the limit new requests get 503";
  EXPECT_EQ(shed_with_retry_after, shed);
  EXPECT_EQ(readyz.status, 503) << "readiness fails while over the threshold";
  EXPECT_EQ(::kill(h.pid, 0), 0) << "alive";
  EXPECT_EQ(field(cg.read("memory.oom_control"), "oom_kill"), 0u) << cg.read("memory.oom_control");
  EXPECT_TRUE(h.wait_for_line(
      [](const std::string& l) { return l.find("shedding new requests") != std::string::npos; },
      2s));

  // The flood ends: memory comes back and so does service.
  for (int fd : fds)
    ::close(fd);
  int status = 0;
  const auto end = Clock::now() + 20s;
  while (Clock::now() < end && (status = h.fetch("/readyz").status) != 200)
    std::this_thread::sleep_for(200ms);
  EXPECT_EQ(status, 200) << "ready again once memory is back under the threshold; rss "
                         << metric_line(h.fetch("/metrics").body, "process_resident_memory_bytes");
  EXPECT_EQ(h.fetch("/plaintext").status, 200);
  EXPECT_EQ(::kill(h.pid, 0), 0);
  EXPECT_EQ(field(cg.read("memory.oom_control"), "oom_kill"), 0u);

  // The limit changes under the running server (an operator resizes the
  // container): sysmon re-reads it about once a second.
  cg.set_memory_limit(96u << 20);
  std::string seen;
  const auto until = Clock::now() + 10s;
  while (Clock::now() < until &&
         (seen = metric_line(h.fetch("/metrics").body, "goro_memory_limit_bytes")) !=
             "goro_memory_limit_bytes 100663296")
    std::this_thread::sleep_for(100ms);
  EXPECT_EQ(seen, "goro_memory_limit_bytes 100663296") << "the new limit, re-read";
  kill(h.pid, SIGTERM);
  EXPECT_EQ(h.wait_exit(10s), 0);
}

}  // namespace
