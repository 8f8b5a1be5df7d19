// goro::http::test (goro/http/test.hpp): handlers, a router and a middleware
// chain served in-process, no socket anywhere. Each test also checks the
// recorded bytes, so the harness cannot pass by reporting what was asked for.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "goro/goro.hpp"
#include "goro/http.hpp"
#include "goro/http/json.hpp"
#include "goro/http/test.hpp"

namespace {

using goro::http::Request;
using goro::http::ResponseWriter;
namespace test = goro::http::test;

TEST(Recorder, StatusHeaderAndBodyAsSent) {
  goro::http::Handler h = [](Request& req, ResponseWriter& w) {
    w.header().set("X-Method", std::string(req.method()));
    w.write_header(201);
    w.write(fmt::format("path={} q={}\n", req.path(), req.query("q")));
  };
  test::RecordedResponse r = test::serve(h, {.method = "PUT", .target = "/a/b?q=x%20y"});
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.header.get("X-Method"), "PUT");
  EXPECT_EQ(r.body, "path=/a/b q=x y\n");
  EXPECT_EQ(r.header.get("Content-Length"), std::to_string(r.body.size()));
  EXPECT_FALSE(r.header.get("Date").empty());
  EXPECT_EQ(r.header.get("Content-Type"), "text/plain; charset=utf-8");  // sniffed
  EXPECT_EQ(r.wire.rfind("HTTP/1.1 201 Created\r\n", 0), 0u) << r.wire;
  EXPECT_FALSE(r.close);
}

TEST(Recorder, LargeBodyIsChunkedOnTheWireAndWholeInBody) {
  const std::string big(100'000, 'z');
  goro::http::Handler h = [&](Request&, ResponseWriter& w) {
    for (std::size_t i = 0; i < big.size(); i += 1000)
      w.write(std::string_view(big).substr(i, 1000));
  };
  test::RecordedResponse r = test::serve(h, {});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header.get("Transfer-Encoding"), "chunked");
  EXPECT_TRUE(r.header.get("Content-Length").empty());
  EXPECT_EQ(r.body, big);
  EXPECT_GT(r.wire.size(), big.size());
  EXPECT_NE(r.wire.find("\r\n0\r\n\r\n"), std::string::npos);
}

// A name that is not a token, or a value with a line break, would let a
// handler's input split the response: such fields are dropped; NUL bytes are
// removed from values.
TEST(Recorder, ResponseHeaderNamesAreTokensAndValuesLoseNul) {
  goro::http::Handler h = [](Request&, ResponseWriter& w) {
    w.header().set("X-Good", std::string("a\0b", 3));
    w.header().set("X Space", "1");
    w.header().set("X-Colon:", "2");
    w.header().set("", "3");
    w.header().set("X-Split\r\nInjected", "4");
    w.header().set("X-Value", "5\r\nInjected: yes");
    w.header().add("X-Tab", "a\tb");
    w.write("ok");
  };
  test::RecordedResponse r = test::serve(h, {});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header.get("X-Good"), "ab");
  EXPECT_EQ(r.header.get("X-Tab"), "a\tb");
  EXPECT_EQ(r.wire.find("Injected"), std::string::npos) << r.wire;
  EXPECT_EQ(r.wire.find("X Space"), std::string::npos) << r.wire;
  EXPECT_EQ(r.wire.find("X-Colon"), std::string::npos) << r.wire;
  EXPECT_EQ(r.wire.find("X-Value"), std::string::npos) << r.wire;
  EXPECT_EQ(r.wire.find(std::string(1, '\0')), std::string::npos);
  EXPECT_EQ(r.wire.find("\r\n: 3"), std::string::npos) << r.wire;
  EXPECT_EQ(r.body, "ok");
}

// Header::add reuses a kept field (from before clear()) without checking it
// again only when its name and value are the very bytes asked for: a name
// in another case is still written canonical, and a refused name or value
// never becomes sendable by being asked for twice.
TEST(Header, AKeptFieldIsReusedOnlyForTheSameCheckedBytes) {
  goro::http::Header h;
  auto names = [&h] {
    std::string all;
    for (const auto& f : h)
      all += f.name + "=" + f.value + ";";
    return all;
  };
  h.set("Content-Type", "text/plain");
  h.clear();
  h.set("Content-Type", "text/plain");  // the shortcut
  EXPECT_EQ(names(), "Content-Type=text/plain;");
  h.clear();
  h.set("content-type", "text/plain");  // same value, name not canonical
  EXPECT_EQ(names(), "Content-Type=text/plain;");
  h.clear();
  h.set("Content-Type", "text/html");  // same name, another value
  EXPECT_EQ(names(), "Content-Type=text/html;");
  h.clear();
  h.set("X Bad", "text/html");  // refused: the kept slot's name is dropped
  EXPECT_EQ(names(), "");
  h.set("X Bad", "text/html");
  EXPECT_EQ(names(), "");
  h.set("", "text/html");  // an empty name never matches a kept one
  EXPECT_EQ(names(), "");
  h.set("X-Ok", std::string("a\0b", 3));  // NUL dropped; the kept value is "ab"
  h.clear();
  h.set("X-Ok", std::string("a\0b", 3));
  EXPECT_EQ(names(), "X-Ok=ab;");
  h.clear();
  h.set("X-Ok", "ab\r\nInjected: 1");  // a line break is refused every time
  EXPECT_EQ(names(), "");
}

// A moved-from Header is empty and takes new fields (its count was left
// behind by the implicit move: the next add() indexed past the moved vector).
TEST(Header, AMovedFromHeaderIsEmptyAndUsable) {
  goro::http::Header a;
  a.set("X-One", "1");
  goro::http::Header b(std::move(a));
  EXPECT_EQ(b.get("X-One"), "1");
  EXPECT_EQ(a.size(), 0U);  // NOLINT(bugprone-use-after-move): the point of the test
  a.add("X-Two", "2");
  EXPECT_EQ(a.size(), 1U);
  EXPECT_EQ(a.get("X-Two"), "2");
  goro::http::Header c;
  c = std::move(b);
  EXPECT_EQ(c.get("X-One"), "1");
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  b.set("X-Three", "3");
  EXPECT_EQ(b.get("X-Three"), "3");
}

// Go: a handler that declares a Content-Length and writes less keeps its
// header, and the connection closes (the client would wait for the rest).
TEST(Recorder, DeclaredLengthWithNothingWrittenIsKeptAndCloses) {
  goro::http::Handler h = [](Request&, ResponseWriter& w) {
    w.header().set("Content-Length", "5");
  };
  test::RecordedResponse r = test::serve(h, {});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header.get("Content-Length"), "5") << r.wire;
  EXPECT_TRUE(r.close) << r.wire;
  EXPECT_NE(r.wire.find("Connection: close\r\n"), std::string::npos) << r.wire;

  // HEAD: the declared length describes the GET; nothing is missing.
  r = test::serve(h, {.method = "HEAD"});
  EXPECT_EQ(r.header.get("Content-Length"), "5") << r.wire;
  EXPECT_FALSE(r.close) << r.wire;

  // Declared and written in full: kept, the connection stays open.
  goro::http::Handler whole = [](Request&, ResponseWriter& w) {
    w.header().set("Content-Length", "5");
    w.write("hello");
  };
  r = test::serve(whole, {});
  EXPECT_EQ(r.body, "hello");
  EXPECT_FALSE(r.close) << r.wire;

  // An invalid declared length is dropped and the real one sent.
  goro::http::Handler bad = [](Request&, ResponseWriter& w) {
    w.header().set("Content-Length", "5x");
    w.write("abc");
  };
  r = test::serve(bad, {});
  EXPECT_EQ(r.header.get("Content-Length"), "3") << r.wire;
  EXPECT_EQ(r.body, "abc");
}

TEST(Recorder, RequestBodyAndTheBodyLimit) {
  goro::http::Handler echo = [](Request& req, ResponseWriter& w) {
    auto body = req.body().read_all();
    if (!body) return;  // the server answers the body's error itself
    w.write(*body);
  };
  test::RecordedResponse ok = test::serve(echo, {.method = "POST", .body = "hello"});
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "hello");

  test::RecordedResponse big = test::serve(echo, {.method = "POST", .body = std::string(2000, 'x')},
                                           {.max_body_bytes = 1000});
  EXPECT_EQ(big.status, 413);
  EXPECT_TRUE(big.close);
}

TEST(Recorder, RouterPathValuesNotFoundAndMethodNotAllowed) {
  goro::http::Router r;
  r.handle("GET /items/{id}", [](Request& req, ResponseWriter& w) {
    w.write(fmt::format("item {}", req.path_value("id")));
  });
  goro::http::Handler h = r;
  EXPECT_EQ(test::serve(h, {.target = "/items/42"}).body, "item 42");
  test::RecordedResponse missing = test::serve(h, {.target = "/nothing"});
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "404 page not found\n");
  test::RecordedResponse wrong = test::serve(h, {.method = "DELETE", .target = "/items/1"});
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.header.get("Allow"), "GET, HEAD");
  test::RecordedResponse head = test::serve(h, {.method = "HEAD", .target = "/items/7"});
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
}

TEST(Recorder, MiddlewareChainRecoversAndTagsRequests) {
  goro::http::Handler boom = [](Request& req, ResponseWriter&) {
    if (req.path() == "/boom") throw std::runtime_error("kaboom");
  };
  std::vector<std::string> order;
  goro::http::Middleware trace = [&](goro::http::Handler next) -> goro::http::Handler {
    return [&order, next = std::move(next)](Request& req, ResponseWriter& w) {
      order.push_back("in " + std::string(req.path()));
      next(req, w);
      order.push_back(fmt::format("out {}", w.status()));
    };
  };
  goro::http::Handler h = goro::http::chain(
      boom, {goro::http::middleware::request_id(), trace, goro::http::middleware::recover()});

  test::RecordedResponse fine = test::serve(h, {.target = "/fine"});
  EXPECT_EQ(fine.status, 200);
  EXPECT_FALSE(fine.header.get("X-Request-Id").empty());

  test::RecordedResponse r = test::serve(h, {.target = "/boom"});
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "Internal Server Error\n");
  EXPECT_FALSE(r.header.get("X-Request-Id").empty());
  EXPECT_TRUE(r.close);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0], "in /fine");
  EXPECT_EQ(order[2], "in /boom");
  EXPECT_EQ(order[3], "out 500");  // recover sits inside trace
}

// Every request field reads the same after the handler drained the body,
// chunked or fixed-length, of many sizes, and with a pipelined request
// behind it (the head's storage outlives the body's reads).
TEST(Recorder, RequestFieldsSurviveDrainingTheBody) {
  goro::http::Handler h = [](Request& req, ResponseWriter& w) {
    auto body = req.body().read_all();
    if (!body) return;
    w.write(fmt::format("{} {} {} {} {} {} {} {}", req.method(), req.target(), req.path(),
                        req.query("q"), req.host(), req.header("X-Tag"), req.proto(),
                        body->size()));
  };
  for (std::size_t size : {0, 1, 5, 4095, 4096, 70'000}) {
    const std::string body(size, 'b');
    std::string chunked;
    for (std::size_t at = 0; at < size; at += 1000) {
      const std::size_t n = std::min<std::size_t>(1000, size - at);
      chunked += fmt::format("{:x}\r\n{}\r\n", n, body.substr(at, n));
    }
    chunked += "0\r\nX-Trailer: t\r\n\r\n";
    const std::string want = fmt::format("POST /p/a?q=v /p/a v h.example tag HTTP/1.1 {}", size);
    const std::string head = "POST /p/a?q=v HTTP/1.1\r\nHost: h.example\r\nX-Tag: tag\r\n";
    const std::string next = "GET /next HTTP/1.1\r\nHost: h.example\r\nX-Tag: n\r\n\r\n";
    for (bool is_chunked : {true, false}) {
      SCOPED_TRACE(fmt::format("size {} chunked {}", size, is_chunked));
      const std::string wire =
          is_chunked ? fmt::format("{}Transfer-Encoding: chunked\r\n\r\n{}{}", head, chunked, next)
                     : fmt::format("{}Content-Length: {}\r\n\r\n{}{}", head, size, body, next);
      std::vector<test::RecordedResponse> rs = test::serve_raw(h, wire);
      ASSERT_EQ(rs.size(), 2u);
      EXPECT_EQ(rs[0].body, want);
      EXPECT_EQ(rs[1].body, "GET /next /next  h.example n HTTP/1.1 0");
    }
  }
}

TEST(Recorder, RawBytesPipelinedAndMalformed) {
  goro::http::Handler h = [](Request& req, ResponseWriter& w) { w.write(req.path()); };
  std::vector<test::RecordedResponse> rs = test::serve_raw(
      h, "GET /one HTTP/1.1\r\nHost: a\r\n\r\nGET /two HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].body, "/one");
  EXPECT_EQ(rs[1].body, "/two");

  // A request smuggling shape: both framings. The parser's 400, then close.
  rs = test::serve_raw(h,
                       "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, 400);
  EXPECT_TRUE(rs[0].close);

  // Incomplete: no answer, as a server waiting for the rest would give none.
  rs = test::serve_raw(h, "GET / HTTP/1.1\r\nHost:");
  EXPECT_TRUE(rs.empty());
}

TEST(Recorder, ExpectContinueIsOnTheWire) {
  goro::http::Handler echo = [](Request& req, ResponseWriter& w) {
    auto body = req.body().read_all();
    w.write(body ? *body : std::string("error"));
  };
  test::RequestSpec spec{.method = "POST", .body = "data"};
  spec.header.set("Expect", "100-continue");
  test::RecordedResponse r = test::serve(echo, spec);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "data");
  EXPECT_EQ(r.wire.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << r.wire;

  // A handler that refuses without reading never invites the body.
  goro::http::Handler refuse = [](Request&, ResponseWriter& w) { w.write_header(417); };
  test::RecordedResponse no = test::serve(refuse, spec);
  EXPECT_EQ(no.status, 417);
  EXPECT_EQ(no.wire.find("100 Continue"), std::string::npos) << no.wire;
}

TEST(Recorder, ReadJsonLimitsAndErrors) {
  goro::http::Handler sum = [](Request& req, ResponseWriter& w) {
    goro::Result<nlohmann::json> in = goro::http::read_json(req, 64);
    if (!in) {
      goro::http::error(w, in.error().message(), goro::http::json_error_status(in.error()));
      return;
    }
    int total = 0;
    for (const auto& v : (*in)["values"])
      total += v.get<int>();
    goro::http::write_json(w, {{"sum", total}});
  };
  test::RecordedResponse ok =
      test::serve(sum, {.method = "POST", .body = R"({"values":[1,2,39]})"});
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.header.get("Content-Type"), "application/json");
  EXPECT_EQ(ok.body, R"({"sum":42})");

  test::RecordedResponse bad = test::serve(sum, {.method = "POST", .body = R"({"values":[1,)"});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body, "http: request body is not valid JSON\n");
  EXPECT_EQ(test::serve(sum, {.method = "POST"}).status, 400);  // empty is not JSON

  // Past the handler's 64-byte limit: declared, and chunked (no length known).
  const std::string big = R"({"values":[)" + std::string(100, ' ') + "1]}";
  EXPECT_EQ(test::serve(sum, {.method = "POST", .body = big}).status, 413);
  test::RequestSpec chunked{.method = "POST",
                            .body = fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", big.size(), big)};
  chunked.header.set("Transfer-Encoding", "chunked");
  test::RecordedResponse r = test::serve(sum, chunked);
  EXPECT_EQ(r.status, 413) << r.wire;
}

TEST(Recorder, BlockingHandlerInsideRun) {
  // A handler that parks (a channel round trip through another goroutine)
  // served from a goroutine, as the header asks.
  const int rc = goro::run([] {
    goro::http::Handler h = [](Request&, ResponseWriter& w) {
      goro::Chan<int> c(0);
      goro::go([c] { c.send(7); });
      w.write(fmt::format("got {}", *c.recv()));
    };
    return test::serve(h, {}).body == "got 7" ? 0 : 1;
  });
  EXPECT_EQ(rc, 0);
}

}  // namespace

namespace {

// Runs `body` on one P beside a goroutine that counts its turns (it yields
// after each): `body` reads the count to see whether it let that goroutine
// run.
void beside_a_ticker(const std::function<void(const std::atomic<int>& ticks)>& body) {
  goro::run(
      [&] {
        std::atomic<bool> done{false};
        std::atomic<int> ticks{0};
        goro::WaitGroup wg;
        wg.add(1);
        goro::go([&] {
          while (!done.load()) {
            ticks.fetch_add(1);
            goro::yield();
          }
          wg.done();
        });
        goro::yield();
        body(ticks);
        done.store(true);
        wg.wait();
      },
      {.maxprocs = 1});
}

// Reading a large body whose bytes are all there (a fast client) is a loop
// that never parks: it must still give other goroutines of its P a turn
// (issue 17: a 64 MiB chunked upload held a P for 61 ms). At maxprocs 1 a
// goroutine that yields in a loop counts how often it got the P while the
// handler read 16 MiB; the reader yields every 256 KiB (64 times).
TEST(Recorder, ReadingABigBodyLetsOtherGoroutinesRun) {
  const std::string body(16 << 20, 'x');
  for (const bool chunked : {false, true}) {
    SCOPED_TRACE(chunked ? "chunked" : "content-length");
    int turns = -1;
    std::size_t got = 0;
    beside_a_ticker([&](const std::atomic<int>& ticks) {
      goro::http::Handler h = [&](Request& req, ResponseWriter& w) {
        const int before = ticks.load();
        auto b = req.body().read_all();
        turns = ticks.load() - before;
        got = b ? b->size() : 0;
        (void)w.write("ok");
      };
      test::RequestSpec spec{.method = "POST", .target = "/up", .body = body};
      if (chunked) {
        spec.header.set("Transfer-Encoding", "chunked");
        std::string wire;
        for (std::size_t at = 0; at < body.size(); at += 32 << 10)
          wire += fmt::format("{:x}\r\n{}\r\n", 32 << 10, body.substr(at, 32 << 10));
        spec.body = wire + "0\r\n\r\n";
      }
      const auto res = test::serve(h, spec, {.max_body_bytes = 32 << 20});
      EXPECT_EQ(res.status, 200);
    });
    EXPECT_EQ(got, body.size());
    EXPECT_GE(turns, 32) << "the other goroutine ran while the body was read";
  }
}

// Pipelined requests that are all there already never make a read wait: the
// connection's goroutine yields every 64 requests, so another goroutine on
// the same P runs at least that often while 4,096 of them are answered.
TEST(Recorder, ServingPipelinedRequestsLetsOtherGoroutinesRun) {
  std::string wire;
  for (int i = 0; i < 4096; ++i)
    wire += "GET /p HTTP/1.1\r\nHost: t\r\n\r\n";
  int longest_run = 0;  // most requests answered with no turn of the other goroutine
  std::size_t answered = 0;
  beside_a_ticker([&](const std::atomic<int>& ticks) {
    int last_ticks = -1;
    int run = 0;
    goro::http::Handler h = [&](Request&, ResponseWriter& w) {
      const int now = ticks.load();
      run = now == last_ticks ? run + 1 : 1;
      last_ticks = now;
      longest_run = std::max(longest_run, run);
      (void)w.write("ok");
    };
    answered = test::serve_raw(h, wire).size();
  });
  EXPECT_EQ(answered, 4096u);
  std::printf("longest run of requests without the other goroutine: %d\n", longest_run);
  // 64 plus slack; with no yield it is the 10 ms of sysmon's preemption,
  // thousands of requests.
  EXPECT_LE(longest_run, 128) << "requests answered while the other goroutine waited";
}

}  // namespace
