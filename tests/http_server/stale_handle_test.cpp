// A Request or ResponseWriter reference that outlives its handler (a leaked
// goroutine), or one used from another goroutine while the handler runs,
// gets errors and empty values: it never writes into the connection's next
// response and never reads another request's state or freed memory (run
// under ASan too). See HandlerSlot in framework/http/server/exchange.hpp.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <string>

#include "goro/chan.hpp"
#include "tests/http_server/test_util.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::get;
using goro_test::TestServer;
namespace http = goro::http;

// What a leaked goroutine saw when it used its handler's references.
struct Leak {
  goro::Chan<int> go_ahead;  // unbuffered: the leaker waits for a signal
  goro::Chan<int> done{1};
  std::mutex mu;
  std::string report;  // guarded by mu
};

// Uses every kind of operation on the references, and describes the results.
std::string use_stale(http::Request& req, http::ResponseWriter& w) {
  std::string out;
  const http::WriteResult wr = w.write("LEAKED");
  out += fmt::format("write={} ", wr ? "ok" : wr.error().message());
  w.header().set("X-Leaked", "1");
  w.write_header(299);
  const auto fl = w.flush();
  out += fmt::format("flush={} ", fl ? "ok" : fl.error().message());
  char buf[16];
  const auto rd = req.body().read(std::span<char>(buf));
  out += fmt::format("read={} ", rd ? "ok" : rd.error().message());
  const auto all = req.body().read_all();
  out += fmt::format("read_all={} ", all ? "ok" : all.error().message());
  out += fmt::format("method='{}' path='{}' header='{}' count={} status={} written={} ctx_done={}",
                     req.method(), req.path(), req.header("Host"), req.header_count(), w.status(),
                     w.bytes_written(), req.context().is_done());
  req.set_id("stolen");
  w.close_connection();
  w.abort();
  return out;
}

const std::string kStale =
    "write=http: request or response used after its handler returned, or off its goroutine "
    "flush=http: request or response used after its handler returned, or off its goroutine "
    "read=http: request or response used after its handler returned, or off its goroutine "
    "read_all=http: request or response used after its handler returned, or off its goroutine "
    "method='' path='' header='' count=0 status=0 written=0 ctx_done=true";

http::Router routes(const std::shared_ptr<Leak>& leak) {
  http::Router r;
  r.handle("GET /leak", [leak](http::Request& req, http::ResponseWriter& w) {
    goro::go([leak, &req, &w] {
      if (!leak->go_ahead.recv()) return;
      std::string seen = use_stale(req, w);
      {
        std::lock_guard lock(leak->mu);
        leak->report = std::move(seen);
      }
      (void)leak->done.send(1);
    });
    (void)w.write("armed");
  });
  // Releases the leaked goroutine while this request is in its handler, on
  // the same connection (the worst case: the same slot serves it), and
  // answers only after the leaker finished.
  r.handle("GET /release", [leak](http::Request& req, http::ResponseWriter& w) {
    w.header().set("X-Release", "1");
    (void)leak->go_ahead.send(1);
    (void)leak->done.recv();
    (void)w.write(fmt::format("release {} {}", req.method(), req.id().empty() ? "-" : "id"));
  });
  // A goroutine the handler waits for: not the handler's, so refused.
  r.handle("GET /fanout", [](http::Request& req, http::ResponseWriter& w) {
    goro::Chan<std::string> result(1);
    goro::go([&req, &w, result] { (void)result.send(use_stale(req, w)); });
    std::string seen = result.recv().value_or("none");
    (void)w.write(seen);
  });
  return r;
}

TEST(StaleHandles, LeakedReferencesCannotTouchTheNextResponse) {
  auto leak = std::make_shared<Leak>();
  TestServer s(routes(leak));
  Client c(s.port());
  ASSERT_TRUE(c.send(get("/leak")));
  auto r = c.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "armed");
  // Same connection: the leaked goroutine uses its references while the
  // next request's handler runs on the connection's goroutine.
  ASSERT_TRUE(c.send(get("/release")));
  r = c.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "release GET -");
  EXPECT_EQ(r.header("x-leaked"), "");
  EXPECT_EQ(r.header("connection"), "") << "the leaker's close_connection() did nothing";
  {
    std::lock_guard lock(leak->mu);
    EXPECT_EQ(leak->report, kStale);
  }
  // The connection is still good for more.
  ASSERT_TRUE(c.send(get("/fanout")));
  r = c.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kStale) << "a goroutine other than the handler's is refused";
}

// The handler itself keeps its references and the next request's handler,
// on the same connection and so the same goroutine, uses them: the two
// requests have different slots, so the kept ones are refused.
TEST(StaleHandles, KeptByTheHandlerAndUsedInTheNextRequestOnTheSameGoroutine) {
  struct Kept {
    http::Request* req = nullptr;
    http::ResponseWriter* w = nullptr;
  };
  auto kept = std::make_shared<Kept>();
  http::Router r;
  r.handle("GET /keep", [kept](http::Request& req, http::ResponseWriter& w) {
    kept->req = &req;
    kept->w = &w;
    (void)w.write("kept");
  });
  r.handle("GET /use", [kept](http::Request& req, http::ResponseWriter& w) {
    const bool same = kept->w == &w;
    const std::string seen = use_stale(*kept->req, *kept->w);
    (void)w.write(fmt::format("{}|{}|{}", same ? "same" : "other", req.method(), seen));
  });
  TestServer s(std::move(r));
  Client c(s.port());
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(c.send(get("/keep")));
    auto resp = c.read_response();
    ASSERT_EQ(resp.body, "kept");
    ASSERT_TRUE(c.send(get("/use")));
    resp = c.read_response();
    EXPECT_EQ(resp.status, 200) << "the kept writer's write_header(299) reached this response";
    EXPECT_EQ(resp.body, "other|GET|" + kStale) << round;
    EXPECT_EQ(resp.header("x-leaked"), "");
    EXPECT_EQ(resp.header("connection"), "") << "the kept writer's close_connection() did nothing";
  }
}

TEST(StaleHandles, ReferencesOutlivingTheirConnection) {
  auto leak = std::make_shared<Leak>();
  TestServer s(routes(leak));
  {
    Client c(s.port());
    ASSERT_TRUE(c.send(get("/leak", "Connection: close\r\n")));
    EXPECT_EQ(c.read_response().body, "armed");
    EXPECT_TRUE(c.closed_by_peer());
  }
  // The leaked references' connection, its goroutine and its Exchange are
  // gone; another connection's handler releases the leaker.
  for (int i = 0; i < 3; ++i) {
    Client other(s.port());
    ASSERT_TRUE(other.send(get("/fanout")));
    EXPECT_EQ(other.read_response().body, kStale);
  }
  Client c(s.port());
  ASSERT_TRUE(c.send(get("/release")));
  auto r = c.read_response();
  EXPECT_EQ(r.body, "release GET -");
  std::lock_guard lock(leak->mu);
  EXPECT_EQ(leak->report, kStale);
}

}  // namespace
