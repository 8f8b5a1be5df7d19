// Connections at rest without an Exchange (framework/http/server/conn.cpp
// "At rest without an Exchange"): between two requests a connection gives
// its working state back to its thread's cache, and its next request is
// served with whichever Exchange the cache holds, most often one another
// connection was just served with. What must never happen is that anything
// of one connection's state reaches another: a response on the wrong
// socket, a half-parsed head or body, unread bytes, a header of the last
// response. Many clients here run a random mix of request shapes (the head
// fast path, llhttp's path, Content-Length and chunked bodies, HEAD,
// pipelined pairs, heads split across writes, a Connection: close now and
// then) with pauses that let their sockets drain, so Exchanges change hands
// between connections thousands of times; every answer is checked against
// what that client asked. GOMAXPROCS 4 on this machine's 2 cores: the
// per-thread caches and goroutines moving between threads are exercised
// too (TSan runs it).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/http_server/test_util.hpp"

namespace {

using goro_test::Client;
using goro_test::TestServer;
namespace http = goro::http;

http::Router routes() {
  http::Router r;
  r.handle("GET /plaintext", [](http::Request&, http::ResponseWriter& w) {
    w.header().set("Content-Type", "text/plain");
    (void)w.write("Hello, World!");
  });
  // Answers with the request's own identity: the client's tag from the
  // query and a header, so a response given to the wrong connection, or
  // built from another request's head, shows.
  r.handle("GET /who", [](http::Request& req, http::ResponseWriter& w) {
    w.header().set("X-Tag", std::string(req.header("X-Tag")));
    (void)w.write(fmt::format("{}|{}", req.raw_query(), req.header("X-Tag")));
  });
  r.handle("POST /echo", [](http::Request& req, http::ResponseWriter& w) {
    auto body = req.body().read_all();
    if (!body) return;
    (void)w.write(*body);
  });
  return r;
}

struct Step {
  std::string bytes;   // what the client sends
  std::size_t split;   // send bytes[0, split) first, pause, then the rest (0: whole)
  int responses;       // 1, or 2 for a pipelined pair
  bool head_request;   // the (first) request is a HEAD
  bool closes;         // the server closes after it
  std::string expect;  // the (last) response's body
};

Step make_step(std::mt19937& rng, int client, int i) {
  const std::string tag = fmt::format("c{}-{}", client, i);
  const std::string who =
      fmt::format("GET /who?{} HTTP/1.1\r\nHost: t\r\nX-Tag: {}\r\n\r\n", tag, tag);
  switch (rng() % 8) {
    case 0:
      return {"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n", 0, 1, false, false, "Hello, World!"};
    case 1:  // the head fast path
      return {who, 0, 1, false, false, tag + "|" + tag};
    case 2:  // a Connection line: llhttp parses this head
      return {fmt::format("GET /who?{} HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n"
                          "X-Tag: {}\r\n\r\n",
                          tag, tag),
              0,
              1,
              false,
              false,
              tag + "|" + tag};
    case 3:  // Content-Length body
      return {fmt::format("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{}",
                          tag.size(), tag),
              0,
              1,
              false,
              false,
              tag};
    case 4: {  // chunked body, split mid-chunk
      std::string b = fmt::format(
          "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: "
          "chunked\r\n\r\n{:x}\r\n{}\r\n0\r\n\r\n",
          tag.size(), tag);
      const std::size_t split = b.size() - 7;
      return {std::move(b), split, 1, false, false, tag};
    }
    case 5:  // a head split across two writes
      return {who, who.size() / 2, 1, false, false, tag + "|" + tag};
    case 6:  // a pipelined pair: a HEAD, then the tagged GET
      return {
          "HEAD /plaintext HTTP/1.1\r\nHost: t\r\n\r\n" + who, 0, 2, true, false, tag + "|" + tag};
    default:  // now and then the client asks the server to close
      if (rng() % 4 == 0) {
        return {fmt::format("GET /who?{} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nX-Tag: "
                            "{}\r\n\r\n",
                            tag, tag),
                0,
                1,
                false,
                true,
                tag + "|" + tag};
      }
      return {who, 0, 1, false, false, tag + "|" + tag};
  }
}

TEST(ExchangeCache, ConnectionsSharingExchangesKeepTheirOwnState) {
  // Read once, by the runtime as TestServer starts it (the constructor
  // returns once the server listens); nothing reads it after that.
  ::setenv("GOMAXPROCS", "4", 1);  // NOLINT(concurrency-mt-unsafe)
  TestServer s(routes());
  ::unsetenv("GOMAXPROCS");  // NOLINT(concurrency-mt-unsafe)
  constexpr int kClients = 16;
  constexpr int kSteps = 150;
  std::atomic<int> bad{0};
  std::atomic<int> closes{0};
  std::vector<std::string> first_errors(kClients);
  std::vector<std::thread> ts;
  ts.reserve(kClients);
  for (int t = 0; t < kClients; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) * 7919U + 1U);
      auto c = std::make_unique<Client>(s.port());
      for (int i = 0; i < kSteps; ++i) {
        const Step step = make_step(rng, t, i);
        bool sent = false;
        if (step.split == 0) {
          sent = c->send(step.bytes);
        } else {
          sent = c->send(std::string_view(step.bytes).substr(0, step.split));
          std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 800));
          sent = sent && c->send(std::string_view(step.bytes).substr(step.split));
        }
        Client::Response r;
        try {  // a garbled response throws in the client's parser: a failure, not a crash
          if (step.responses == 2) {
            Client::Response first = c->read_response(step.head_request);
            if (first.status != 200 || !first.body.empty()) sent = false;
          }
          r = c->read_response(false);
        } catch (const std::exception&) {
          sent = false;
        }
        const bool tag_ok = step.expect.find('|') == std::string::npos ||
                            r.header("x-tag") == step.expect.substr(0, step.expect.find('|'));
        if (!sent || r.status != 200 || r.body != step.expect || !tag_ok) {
          if (bad.fetch_add(1) == 0 || first_errors[t].empty()) {
            first_errors[t] =
                fmt::format("client {} step {}: sent {} status {} body '{}' want '{}'", t, i, sent,
                            r.status, r.body, step.expect);
          }
          break;  // this connection's stream is out of step now
        }
        if (step.closes) {
          ++closes;
          if (!c->closed_by_peer()) ++bad;
          c = std::make_unique<Client>(s.port());
        }
        // A pause now and then: the socket drains and the connection rests
        // without its Exchange while the others are served.
        if (rng() % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
      }
    });
  }
  for (auto& t : ts)
    t.join();
  for (const std::string& e : first_errors)
    EXPECT_TRUE(e.empty()) << e;
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(closes.load(), 0);  // the mix did include closed connections
}

}  // namespace
