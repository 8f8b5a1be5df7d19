// The server survives exceptions outside a handler's own try (issue 16 item
// 6): running out of memory for a connection's goroutine stack in the accept
// loop, and bad_alloc while building a response head after the handler
// returned. Before, either ended the process (goroutine_panic, exit 2). Now
// the connection involved is dropped and logged, and the server goes on.
//
// Memory runs out for real: the child process lowers its own RLIMIT_AS. Each
// case runs in a death-test child (re-executed binary), so a regression
// shows as "exit 2" instead of killing the test runner. Address-space limits
// and the sanitizers' shadow memory do not mix: skipped under ASan and TSan.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <system_error>

#include "test_util.hpp"

namespace {

using goro_test::Client;
using goro_test::TestServer;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// The process's address space in use now (bytes), from /proc/self/statm.
std::size_t address_space_now() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

void limit_address_space(std::size_t bytes) {
  rlimit r{};
  getrlimit(RLIMIT_AS, &r);
  r.rlim_cur = bytes;
  setrlimit(RLIMIT_AS, &r);
}

void lift_address_space_limit() {
  rlimit r{};
  getrlimit(RLIMIT_AS, &r);
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_AS, &r);
}

// Waits (generously: the line may be written just after the close the client
// saw) for a log line containing `what`.
bool log_mentions(TestServer& srv, std::string_view what) {
  for (int i = 0; i < 500; ++i) {
    for (const std::string& line : srv.log())
      if (line.find(what) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A failed check in the child: its exit code says which. _Exit: the server's
// thread is still running, and exit() would run destructors under it.
[[noreturn]] void fail(int code) {
  std::fflush(stderr);
  std::_Exit(code);
}

std::string get_on(Client& c, std::string_view path) {
  std::string req = "GET ";
  req.append(path).append(" HTTP/1.1\r\nHost: t\r\n\r\n");
  if (!c.send(req)) return "send failed";
  Client::Response r = c.read_response();
  return r.ok ? r.body : "no response";
}

// --- goro::go fails for stack memory in the accept loop --------------------

void spawn_failure_child() {
  // Goroutines parked here hold every stack the pool can hand out.
  auto gate = std::make_shared<goro::WaitGroup>();
  gate->add(1);
  TestServer srv(
      [gate](const goro::http::Request& req, goro::http::ResponseWriter& w) {
        if (req.path() == "/fill") {
          // One P: its batch of stack credits is the only one (scheduler/galloc.cpp).
          // A P that a shrink retires keeps its credits until its goroutine
          // reaches a scheduling point; without this pause the accept loop,
          // still on P1, could spawn the next connection's goroutine on P1's
          // credits (1 run in 8 here).
          goro::set_maxprocs(1);
          goro::sleep_for(std::chrono::milliseconds(100));
          int n = 0;
          try {
            for (;; ++n)
              goro::go([gate] { gate->wait(); });
          } catch (const std::system_error&) {
          }
          (void)w.write(std::to_string(n));
        } else if (req.path() == "/release") {
          gate->done();
          (void)w.write("released");
        } else {
          (void)w.write("hello");
        }
      },
      // The filler's goroutine must keep its stack through its rest: released
      // when drained, it would give one back for the next connection.
      {.release_when_drained = false});
  Client filler(srv.port());
  // The stack arenas already mapped are all the stacks there will be.
  limit_address_space(address_space_now() + (48u << 20));
  const std::string filled = get_on(filler, "/fill");  // keep-alive: its goroutine stays
  if (filled == "no response" || std::atoi(filled.c_str()) <= 0) {
    std::fprintf(stderr, "could not fill the stack pool: %s\n", filled.c_str());
    fail(3);
  }
  // No stack for the next connection: dropped without a response.
  Client dropped(srv.port());
  dropped.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  const std::string got = dropped.read_all();
  if (!got.empty()) {
    std::fprintf(stderr, "a connection without a stack was answered: %s\n", got.c_str());
    fail(4);
  }
  if (!log_mentions(srv, "dropping connection")) fail(5);
  // Stacks come back: the server serves again.
  if (get_on(filler, "/release") != "released") fail(6);
  lift_address_space_limit();
  for (int attempt = 0;; ++attempt) {
    Client again(srv.port());
    if (get_on(again, "/") == "hello") break;
    if (attempt == 50) fail(7);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the accept loop's backoff
  }
  srv.stop();
  std::fprintf(stderr, "served after the drop\n");
  std::exit(0);  // NOLINT(concurrency-mt-unsafe): the death-test child's end
}

TEST(HttpResilience, AcceptLoopSurvivesRunningOutOfGoroutineStacks) {
  if (kSanitized) GTEST_SKIP() << "RLIMIT_AS and sanitizer shadow memory do not mix";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(spawn_failure_child(), testing::ExitedWithCode(0), "served after the drop");
}

// --- bad_alloc in commit_head, after the handler returned -------------------

constexpr std::size_t kBigHeader = 64u << 20;

void head_failure_child() {
  // Kept alive for the whole test: freeing it would give commit_head the
  // address space the test means to deny it.
  static std::string* big = new std::string(kBigHeader, 'x');
  TestServer srv([](const goro::http::Request& req, goro::http::ResponseWriter& w) {
    if (req.path() == "/big") {
      w.header().set("X-Big", *big);  // a copy: the handler succeeds
      // Building the head needs another kBigHeader bytes; half is left.
      limit_address_space(address_space_now() + kBigHeader / 2);
    }
    (void)w.write("hello");
  });
  {
    Client c(srv.port());
    c.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    const std::string got = c.read_all();
    lift_address_space_limit();
    if (!got.empty()) {
      std::fprintf(stderr, "unexpected answer of %zu bytes\n", got.size());
      fail(4);
    }
  }
  if (!log_mentions(srv, "dropping connection")) fail(5);
  Client again(srv.port());
  if (get_on(again, "/") != "hello") fail(6);
  srv.stop();
  std::fprintf(stderr, "served after the drop\n");
  std::exit(0);  // NOLINT(concurrency-mt-unsafe): the death-test child's end
}

TEST(HttpResilience, BadAllocBuildingTheHeadDropsOnlyThatConnection) {
  if (kSanitized) GTEST_SKIP() << "RLIMIT_AS and sanitizer shadow memory do not mix";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(head_failure_child(), testing::ExitedWithCode(0), "served after the drop");
}

}  // namespace
