// http::LogSink and middleware::access_log: lines reach the descriptor in
// order, a descriptor that blocks (a full pipe nobody reads) stalls neither
// the handlers nor the only P (the write(2) runs inside goro::blocking and the
// P is handed on), the sink has no thread of its own, and a full queue drops
// and counts.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <dirent.h>

#include <fstream>
#include <sstream>

#include "tests/http_server/test_util.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::get;
using goro_test::TestServer;
namespace http = goro::http;
using Clock = std::chrono::steady_clock;

std::size_t thread_count() {
  std::size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): this DIR is ours alone
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

// Reads from `fd` until `want` bytes came or `limit` passed.
std::size_t drain_pipe(int fd, std::size_t want, std::chrono::milliseconds limit) {
  ::fcntl(fd, F_SETFL, O_NONBLOCK);
  std::size_t got = 0;
  char buf[65536];
  const auto end = Clock::now() + limit;
  while (got < want && Clock::now() < end) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else {
      std::this_thread::sleep_for(1ms);
    }
  }
  return got;
}

TEST(LogSink, AccessLogLinesReachTheDescriptorInOrder) {
  const std::string path =
      testing::TempDir() + "goro_access_log_" + std::to_string(::getpid()) + ".log";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  const std::size_t threads_before = thread_count();
  auto sink = std::make_shared<http::LogSink>(fd);
  EXPECT_EQ(thread_count(), threads_before) << "a LogSink must not start a thread";
  http::Router r;
  r.handle("GET /n/{i}",
           [](http::Request& req, http::ResponseWriter& w) { (void)w.write(req.path_value("i")); });
  constexpr int kRequests = 200;
  {
    TestServer s(
        http::chain(r, {http::middleware::request_id(), http::middleware::access_log(sink)}));
    Client c(s.port());
    for (int i = 0; i < kRequests; ++i) {
      ASSERT_TRUE(c.send(
          get("/n/" + std::to_string(i), "X-Request-Id: req-" + std::to_string(i) + "\r\n")));
      ASSERT_EQ(c.read_response().body, std::to_string(i));
    }
    // Written asynchronously, but promptly.
    const auto end = Clock::now() + 3s;
    while (read_lines(path).size() < kRequests && Clock::now() < end)
      std::this_thread::sleep_for(2ms);
  }
  const std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kRequests));
  for (int i = 0; i < kRequests; ++i) {
    const std::string& l = lines[static_cast<std::size_t>(i)];
    EXPECT_EQ(l.rfind("127.0.0.1:", 0), 0u) << l;
    EXPECT_NE(l.find("\"GET /n/" + std::to_string(i) + " HTTP/1.1\" 200 "), std::string::npos) << l;
    EXPECT_EQ(l.substr(l.rfind(' ') + 1), "req-" + std::to_string(i)) << l;
  }
  EXPECT_EQ(sink->dropped(), 0u);
  sink.reset();
  ::close(fd);
  std::remove(path.c_str());
}

TEST(LogSink, BlockedDescriptorStallsNeitherHandlersNorTheOnlyP) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ::fcntl(p[1], F_SETPIPE_SZ, 4096);  // one page: full after a few lines
  constexpr int kLines = 64;
  const std::string line(1023, 'x');  // 1 KiB with the '\n'
  std::atomic<bool> served_while_blocked{false};
  std::atomic<std::uint64_t> handoffs{0};
  std::thread runtime([&] {
    goro::Options opts;
    opts.maxprocs = 1;
    goro::run(
        [&] {
          auto sink = std::make_shared<http::LogSink>(p[1]);
          for (int i = 0; i < kLines; ++i)
            sink->push(line);
          // The writer goroutine is now stuck in write(2) on the full pipe.
          // The only P must still run timers, channel ping-pong and spawns.
          goro::Chan<int> ping(0);
          goro::go([&] {
            for (int i = 0; i < 20; ++i)
              ping.send(i);
          });
          int sum = 0;
          for (int i = 0; i < 20; ++i) {
            sum += *ping.recv();
            goro::sleep_for(2ms);
          }
          // handoffs first: the test thread reads it as soon as it sees the
          // flag (stored the other way round, it could read 0 under load).
          handoffs.store(goro::stats().handoffs);
          served_while_blocked.store(sum == 190);
          sink.reset();  // returns once the test thread has drained the pipe
        },
        opts);
  });
  const auto end = Clock::now() + 10s;
  while (!served_while_blocked.load() && Clock::now() < end)
    std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(served_while_blocked.load()) << "the blocked log writer stalled the P";
  EXPECT_GE(handoffs.load(), 1u) << "the write did not go through the syscall handoff";
  EXPECT_EQ(drain_pipe(p[0], kLines * line.size() + kLines, 10s), kLines * (line.size() + 1));
  runtime.join();
  ::close(p[0]);
  ::close(p[1]);
}

TEST(LogSink, FullQueueDropsAndCounts) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ::fcntl(p[1], F_SETPIPE_SZ, 4096);
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<bool> pushed{false};
  std::thread runtime([&] {
    goro::Options opts;
    opts.maxprocs = 1;  // the writer runs only when main parks: one batch of 8
    goro::run(
        [&] {
          auto sink = std::make_shared<http::LogSink>(p[1], /*max_queued=*/10);
          // The first line's writer blocks on the full pipe once a few KiB went;
          // then the queue fills at 10 lines and the rest are dropped.
          for (int i = 0; i < 8; ++i)
            sink->push(std::string(1023, 'a'));
          // The writer takes that batch and blocks in write(2) once the pipe
          // is full; on a busy machine its M may get there late.
          const auto limit = Clock::now() + 5s;
          int queued = 0;
          do {
            goro::sleep_for(5ms);
            if (::ioctl(p[0], FIONREAD, &queued) != 0) queued = 0;
          } while (queued < 4096 && Clock::now() < limit);
          for (int i = 0; i < 100; ++i)
            sink->push("b");
          dropped.store(sink->dropped());
          pushed.store(true);
          sink.reset();
        },
        opts);
  });
  const auto end = Clock::now() + 10s;
  while (!pushed.load() && Clock::now() < end)
    std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(pushed.load()) << "push() waited for the blocked writer";
  EXPECT_EQ(dropped.load(), 90u);
  EXPECT_EQ(drain_pipe(p[0], 8 * 1024 + 10 * 2, 10s), 8u * 1024 + 10 * 2);
  runtime.join();
  ::close(p[0]);
  ::close(p[1]);
}

TEST(LogSink, PlainThreadPushWritesInline) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  {
    http::LogSink sink(p[1]);
    sink.push("from a plain thread");
  }
  char buf[64] = {};
  ASSERT_EQ(::read(p[0], buf, sizeof buf), 20);
  EXPECT_STREQ(buf, "from a plain thread\n");
  ::close(p[0]);
  ::close(p[1]);
}

}  // namespace
