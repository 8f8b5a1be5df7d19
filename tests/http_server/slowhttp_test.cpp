// Debian's slowhttptest against goro-hello with its default settings: the
// three slow attacks (slowloris: heads sent a line at a time; slow body:
// uploads sent a few bytes at a time; slow read: responses read a few
// bytes at a time through a tiny window), 1,000 connections each, while
// this test measures normal requests on fresh connections beside them.
// The server must keep serving those: none fails, p99 under 100 ms.
// Skips when slowhttptest is not installed (scripts/deps.sh installs it).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "tests/http_server/test_util.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::get;
using Clock = std::chrono::steady_clock;

// Debian installs it in /usr/bin.
bool have_slowhttptest() {
  return ::access("/usr/bin/slowhttptest", X_OK) == 0 ||
         ::access("/usr/local/bin/slowhttptest", X_OK) == 0;
}

// Latencies of GET /plaintext on a fresh connection, one every 20 ms until
// `end`; failures counted, the first described.
struct Samples {
  std::vector<double> ms;
  int failed = 0;
  std::string first_failure;
};

// Stops early if the server exits (`exit_status` >= 0: its status, 128 +
// signal when killed), so a crash fails the test at once, with its cause.
Samples sample_until(goro_test::ChildServer& h, Clock::time_point end, int* exit_status) {
  const int port = h.port;
  Samples s;
  while (Clock::now() < end) {
    *exit_status = h.wait_exit(0ms);
    if (*exit_status >= 0) break;
    const auto t0 = Clock::now();
    Client c(port, 5000ms);
    Client::Response r;
    if (c.send(get("/plaintext"))) r = c.read_response();
    s.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!r.ok || r.status != 200) {
      if (s.failed++ == 0) s.first_failure = r.status_line.empty() ? "no response" : r.status_line;
    }
    std::this_thread::sleep_until(t0 + 20ms);
  }
  std::sort(s.ms.begin(), s.ms.end());
  return s;
}

// The server's open-connection gauge, as a /metrics line.
std::string connections_line(int port) {
  Client c(port);
  c.send(get("/metrics"));
  const std::string metrics = c.read_response().body;
  const std::size_t at = metrics.find("\ngoro_http_connections ");
  if (at == std::string::npos) return "?";
  return metrics.substr(at + 1, metrics.find('\n', at + 1) - at - 1);
}

// slowhttptest's report without its colour codes, NULs and runs of spaces.
std::string without_escapes(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      while (i < s.size() && s[i] != 'm')
        ++i;
      continue;
    }
    if (s[i] == '\0') continue;
    if (s[i] == ' ' && !out.empty() && out.back() == ' ') continue;
    out.push_back(s[i]);
  }
  return out;
}

struct Attack {
  const char* name;
  std::string args;  // slowhttptest's mode and its knobs
  const char* path;
};

// Runs `attack` for `seconds` against goro-hello while sampling GET
// /plaintext on a fresh connection every 20 ms.
void run_attack(const Attack& attack, int seconds) {
  if (!have_slowhttptest()) GTEST_SKIP() << "slowhttptest is not installed";
  goro_test::ChildServer h(GORO_HELLO_PATH, {});
  ASSERT_GT(h.port, 0);
  const std::string cmd = "slowhttptest " + attack.args + " -c 1000 -r 200 -p 3 -l " +
                          std::to_string(seconds) + " -u http://" + h.addr + attack.path + " 2>&1";
  FILE* tool = ::popen(cmd.c_str(), "r");
  ASSERT_NE(tool, nullptr);
  std::string out;
  std::thread reader([&] {
    char buf[512];
    while (std::fgets(buf, sizeof buf, tool) != nullptr)
      out += buf;
  });
  std::this_thread::sleep_for(3s);  // the attack's connections are up (200/s)
  int exit_status = -1;
  const Samples s = sample_until(h, Clock::now() + std::chrono::seconds(seconds - 5), &exit_status);
  EXPECT_LT(exit_status, 0) << "goro-hello exited (status " << exit_status
                            << ", 128 + N: signal N) under the attack; its stderr above says why";
  const std::string connections = exit_status < 0 ? connections_line(h.port) : "gone";
  // The reader ends at the tool's EOF (it exits after -l seconds); only then
  // may the FILE go: pclose frees it, and closing it under the reader's
  // fgets was a use-after-free in this process ("munmap_chunk(): invalid
  // pointer" or a SIGSEGV, the orphaned goro-hello then holding ctest's
  // output pipe open until the 300 s timeout).
  reader.join();
  ::pclose(tool);
  ASSERT_FALSE(s.ms.empty());
  const double p99 = s.ms[s.ms.size() * 99 / 100];
  std::printf(
      "%s: %zu normal requests beside it: p50 %.2f ms, p99 %.2f ms, max %.2f ms, %d "
      "failed; server %s\n",
      attack.name, s.ms.size(), s.ms[s.ms.size() / 2], p99, s.ms.back(), s.failed,
      connections.c_str());
  EXPECT_EQ(s.failed, 0) << s.first_failure;
  EXPECT_LT(p99, 100.0) << "p99 of the normal requests (ms)";
  EXPECT_LT(h.wait_exit(0ms), 0) << "alive";
  // The attack ran (its status lines count connected sockets).
  const std::string plain = without_escapes(out);
  EXPECT_NE(plain.find("connected: "), std::string::npos) << "the attack ran: " << plain;
}

TEST(SlowHttp, SlowlorisLeavesNormalRequestsServed) {
  // Heads a line every 5 s: each is closed by the header timeout (10 s
  // from accept), and the tool opens new ones.
  run_attack({"slowloris", "-H -i 5", "/plaintext"}, 20);
}

TEST(SlowHttp, SlowBodyLeavesNormalRequestsServed) {
  // 8 KiB uploads sent a few bytes every 5 s to /echo: 1,000 handlers
  // parked in body reads (read_timeout bounds each at 60 s).
  run_attack({"slow body", "-B -i 5 -s 8192 -t POST", "/echo"}, 20);
}

TEST(SlowHttp, SlowReadLeavesNormalRequestsServed) {
  // 10 pipelined requests per connection (the tool's most), answers read
  // 32 bytes every 5 s through a 512-1024 byte window.
  run_attack({"slow read", "-X -k 10 -w 512 -y 1024 -n 5 -z 32", "/plaintext"}, 20);
}

}  // namespace
