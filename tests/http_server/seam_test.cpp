// The seam between handlers, middleware and the server (in-process, through
// goro/http/test.hpp): a middleware wraps the ResponseWriter to transform
// or observe the body, nested Routers each see their own route values, and
// the 405 answer is the application's to choose.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "goro/goro.hpp"
#include "goro/http.hpp"
#include "goro/http/test.hpp"

namespace {

using goro::http::Handler;
using goro::http::Middleware;
using goro::http::Request;
using goro::http::ResponseWriter;
using goro::http::WriteResult;
namespace test = goro::http::test;

// Upper-cases the body; counts what passed through it.
class UpperWriter : public ResponseWriter {
 public:
  using ResponseWriter::ResponseWriter;
  using ResponseWriter::write;
  WriteResult write(std::string_view data) override {
    std::string up(data);
    for (char& c : up)
      c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    ++writes;
    return ResponseWriter::write(up);
  }
  int writes = 0;
};

Middleware upper_case(std::vector<int>* writes_seen) {
  return [writes_seen](Handler next) -> Handler {
    return [writes_seen, next = std::move(next)](Request& req, ResponseWriter& w) {
      UpperWriter u(&w);
      next(req, u);
      writes_seen->push_back(u.writes);
    };
  };
}

TEST(WriterWrap, MiddlewareTransformsTheBodyInBothFramings) {
  std::vector<int> writes;
  Handler small = [](Request&, ResponseWriter& w) {
    w.header().set("Content-Type", "text/plain");
    w.write("hello ");
    const char bytes[] = {'w', 'o', 'r', 'l', 'd'};
    w.write(std::as_bytes(std::span(bytes)));  // the span overload reaches the override
  };
  test::RecordedResponse r = test::serve(goro::http::chain(small, {upper_case(&writes)}), {});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "HELLO WORLD");
  EXPECT_EQ(r.header.get("Content-Length"), "11");
  EXPECT_NE(r.wire.find("\r\n\r\nHELLO WORLD"), std::string::npos);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0], 2);

  Handler streamed = [](Request&, ResponseWriter& w) {
    for (int i = 0; i < 2000; ++i)
      w.write("abc");  // 6000 bytes: past the 4 KiB buffer
    (void)w.flush();
    w.write("end");
  };
  test::RecordedResponse big = test::serve(goro::http::chain(streamed, {upper_case(&writes)}), {});
  EXPECT_EQ(big.header.get("Transfer-Encoding"), "chunked");
  std::string want;
  for (int i = 0; i < 2000; ++i)
    want += "ABC";
  EXPECT_EQ(big.body, want + "END");
  EXPECT_EQ(writes.back(), 2001);
}

TEST(WriterWrap, ObserverSeesStatusAndBytesAndOperationsPassThrough) {
  struct Seen {
    int status = 0;
    std::size_t bytes = 0;
    bool header_written = false;
  } seen;
  // A wrapper overriding nothing: every call goes to the server's writer.
  Middleware observe = [&seen](Handler next) -> Handler {
    return [&seen, next = std::move(next)](Request& req, ResponseWriter& w) {
      ResponseWriter plain(&w);
      next(req, plain);
      seen = {plain.status(), plain.bytes_written(), plain.header_written()};
    };
  };
  Handler h = [](Request&, ResponseWriter& w) {
    w.header().set("X-Kind", "teapot");
    w.write_header(418);
    w.write("short and stout");
    w.close_connection();
  };
  test::RecordedResponse r = test::serve(goro::http::chain(h, {observe}), {});
  EXPECT_EQ(r.status, 418);
  EXPECT_EQ(r.header.get("X-Kind"), "teapot");
  EXPECT_EQ(r.body, "short and stout");
  EXPECT_TRUE(r.close);
  EXPECT_EQ(seen.status, 418);
  EXPECT_EQ(seen.bytes, 15u);
  EXPECT_FALSE(seen.header_written);  // still buffered when the handler returned
}

TEST(WriterWrap, RecoverAnswers500ThroughAWrapper) {
  std::vector<int> writes;
  Handler boom = [](Request&, ResponseWriter&) { throw std::runtime_error("no"); };
  test::RecordedResponse r = test::serve(
      goro::http::chain(boom, {upper_case(&writes), goro::http::middleware::recover()}), {});
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "Internal Server Error\n");
  // recover answers on the server's writer (its header reset), not through
  // the wrapper: the 500 is not upper-cased and the wrapper saw no write.
  EXPECT_EQ(writes, std::vector<int>{0});
}

class FileThroughWrapper : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "goro-seam-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ / "page.txt") << content_;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::string content_ = std::string(100'000, 'q') + "tail";
};

TEST_F(FileThroughWrapper, FileServerBodyPassesTheWrapper) {
  std::vector<int> writes;
  Handler files = goro::http::chain(goro::http::file_server(dir_), {upper_case(&writes)});
  test::RecordedResponse r = test::serve(files, {.target = "/page.txt"});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header.get("Content-Length"), std::to_string(content_.size()));
  EXPECT_EQ(r.body, std::string(100'000, 'Q') + "TAIL");
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_GE(writes[0], 2);  // in pieces, not sendfile

  goro::http::Header range;
  range.set("Range", "bytes=99998-");
  test::RecordedResponse ranged = test::serve(files, {.target = "/page.txt", .header = range});
  EXPECT_EQ(ranged.status, 206);
  EXPECT_EQ(ranged.body, "QQTAIL");

  test::RecordedResponse head = test::serve(files, {.method = "HEAD", .target = "/page.txt"});
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header.get("Content-Length"), std::to_string(content_.size()));
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(writes.back(), 0);

  // Unwrapped, the same file goes out by sendfile with the same bytes.
  test::RecordedResponse direct =
      test::serve(goro::http::file_server(dir_), {.target = "/page.txt"});
  EXPECT_EQ(direct.body, content_);
}

// A file that shrinks while it is copied through a wrapper that streams
// (chunked: it dropped the length) is cut visibly: no final chunk.
TEST_F(FileThroughWrapper, FileShrinkingUnderACopyCutsTheResponse) {
  class Shrinker : public ResponseWriter {
   public:
    Shrinker(ResponseWriter* inner, std::filesystem::path file)
        : ResponseWriter(inner), file_(std::move(file)) {}
    void write_header(int status) override {
      header().del("Content-Length");  // as a length-changing wrapper does
      ResponseWriter::write_header(status);
    }
    using ResponseWriter::write;
    WriteResult write(std::string_view data) override {
      std::filesystem::resize_file(file_, 10);  // after the first piece
      return ResponseWriter::write(data);
    }

   private:
    std::filesystem::path file_;
  };
  const std::filesystem::path page = dir_ / "page.txt";
  Middleware shrink = [page](Handler next) -> Handler {
    return [page, next = std::move(next)](Request& req, ResponseWriter& w) {
      Shrinker s(&w, page);
      next(req, s);
    };
  };
  test::RecordedResponse r = test::serve(goro::http::chain(goro::http::file_server(dir_), {shrink}),
                                         {.target = "/page.txt"});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header.get("Transfer-Encoding"), "chunked");
  EXPECT_EQ(r.body, std::string(64 << 10, 'q'));  // the first piece only
  EXPECT_EQ(r.wire.find("\r\n0\r\n\r\n"), std::string::npos) << "a final chunk was sent";
  EXPECT_TRUE(r.close);
}

TEST(Abort, ACutResponseIsTellableFromAWholeOne) {
  // Streaming (chunked): what went out stays, the final chunk never comes.
  goro::Result<std::size_t> after{std::size_t{0}};
  Handler streamed = [&after](Request&, ResponseWriter& w) {
    w.write(std::string(5000, 'a'));  // past the 4 KiB buffer: the head goes out
    w.abort();
    after = w.write("more");
  };
  test::RecordedResponse cut = test::serve(streamed, {});
  EXPECT_EQ(cut.status, 200);
  EXPECT_EQ(cut.header.get("Transfer-Encoding"), "chunked");
  EXPECT_EQ(cut.body, std::string(5000, 'a'));
  EXPECT_EQ(cut.wire.find("\r\n0\r\n\r\n"), std::string::npos) << "a final chunk was sent";
  EXPECT_TRUE(cut.close);
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error(), goro::http::errc::aborted);

  // A declared length comes up short.
  Handler sized = [](Request&, ResponseWriter& w) {
    w.header().set("Content-Length", "100");
    w.write(std::string(10, 'b'));
    (void)w.flush();
    w.abort();
  };
  test::RecordedResponse shorted = test::serve(sized, {});
  EXPECT_EQ(shorted.header.get("Content-Length"), "100");
  EXPECT_EQ(shorted.body, std::string(10, 'b'));
  EXPECT_TRUE(shorted.close);

  // Nothing sent yet (the body was still buffered): no response at all, and
  // a pipelined request behind it is not served on the closing connection.
  Handler early = [](Request& req, ResponseWriter& w) {
    w.write("partial");
    if (req.path() == "/cut") w.abort();
  };
  std::vector<test::RecordedResponse> rs = test::serve_raw(
      early, "GET /cut HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, 0);
  EXPECT_EQ(rs[0].wire, "");
  EXPECT_TRUE(rs[0].close);

  // Through a wrapper, after a write that is still buffered, and the
  // request body failed (over the limit): nothing of the handler's response
  // went out, so the server answers the body's 413 in its place and closes,
  // rather than closing without a word.
  std::vector<int> writes;
  Handler drop_big = [](Request& req, ResponseWriter& w) {
    w.header().set("X-Handler", "yes");
    w.write("partial echo");
    if (!req.body().read_all()) w.abort();
  };
  goro::http::ServerOptions small_bodies;
  small_bodies.max_body_bytes = 10;
  goro::http::Header chunked;
  chunked.set("Transfer-Encoding", "chunked");
  test::RecordedResponse big = test::serve(
      goro::http::chain(drop_big, {upper_case(&writes)}),
      {.method = "POST", .header = chunked, .body = "14\r\n01234567890123456789\r\n0\r\n\r\n"},
      small_bodies);
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(big.header.get("X-Handler"), "") << "the handler's fields went with its response";
  EXPECT_EQ(big.body.find("ECHO"), std::string::npos);  // upper_case would have sent it so
  EXPECT_TRUE(big.close);

  // The same with a malformed chunk: 400.
  test::RecordedResponse bad = test::serve(
      drop_big, {.method = "POST", .header = chunked, .body = "5\r\nabcdeXX\r\n0\r\n\r\n"});
  EXPECT_EQ(bad.status, 400);
  EXPECT_TRUE(bad.close);

  // Once the handler's head went out, abort cuts it short whatever the body
  // did: the status on the wire stays the handler's.
  Handler streamed_then_big = [](Request& req, ResponseWriter& w) {
    w.write("partial echo");
    (void)w.flush();
    if (!req.body().read_all()) w.abort();
  };
  test::RecordedResponse cut_big = test::serve(
      streamed_then_big,
      {.method = "POST", .header = chunked, .body = "14\r\n01234567890123456789\r\n0\r\n\r\n"},
      small_bodies);
  EXPECT_EQ(cut_big.status, 200);
  EXPECT_EQ(cut_big.body, "partial echo");
  EXPECT_EQ(cut_big.wire.find("\r\n0\r\n\r\n"), std::string::npos) << "a final chunk was sent";
  EXPECT_TRUE(cut_big.close);
}

TEST(NestedRouters, EachSeesItsOwnValuesAndTheOuterOnesComeBack) {
  std::vector<std::string> log;
  goro::http::Router inner;
  inner.handle("GET /api/{tenant}/items/{id}", [&log](Request& req, ResponseWriter& w) {
    log.push_back(fmt::format("inner {} tenant={} id={}", req.pattern(), req.path_value("tenant"),
                              req.path_value("id")));
    w.write("ok");
  });
  inner.handle("GET /api/{tenant}/fail",
               [](Request&, ResponseWriter&) { throw std::runtime_error("inner failed"); });
  goro::http::Router outer;
  outer.handle("/api/{tenant}/", [&log, inner](Request& req, ResponseWriter& w) {
    log.push_back(
        fmt::format("outer before {} tenant={}", req.pattern(), req.path_value("tenant")));
    try {
      inner(req, w);
    } catch (const std::exception&) {
      log.push_back("caught");
    }
    log.push_back(fmt::format("outer after {} tenant={} id={}", req.pattern(),
                              req.path_value("tenant"), req.path_value("id")));
  });
  // Middleware around the outermost router sees its match after it returns.
  Middleware route_log = [&log](Handler next) -> Handler {
    return [&log, next = std::move(next)](Request& req, ResponseWriter& w) {
      log.push_back(fmt::format("mw before '{}'", req.pattern()));
      next(req, w);
      log.push_back(fmt::format("mw after '{}'", req.pattern()));
    };
  };
  Handler h = goro::http::chain(outer, {route_log});

  test::RecordedResponse r = test::serve(h, {.target = "/api/acme/items/7"});
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(log, (std::vector<std::string>{
                     "mw before ''",
                     "outer before /api/{tenant}/ tenant=acme",
                     "inner GET /api/{tenant}/items/{id} tenant=acme id=7",
                     "outer after /api/{tenant}/ tenant=acme id=",
                     "mw after '/api/{tenant}/'",
                 }));

  log.clear();
  (void)test::serve(h, {.target = "/api/acme/fail"});
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log[2], "caught");
  EXPECT_EQ(log[3], "outer after /api/{tenant}/ tenant=acme id=");  // restored on the throw

  // The inner router's own 404 for what it does not route; the outer's
  // values are still there afterwards.
  log.clear();
  test::RecordedResponse missing = test::serve(h, {.target = "/api/acme/other"});
  EXPECT_EQ(missing.status, 404);
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[2], "outer after /api/{tenant}/ tenant=acme id=");
}

TEST(RouterAnswers, MethodNotAllowedIsReplaceable) {
  goro::http::Router r;
  r.handle("GET /items/{id}", [](Request&, ResponseWriter& w) { w.write("item"); });
  r.handle("PUT /items/{id}", [](Request&, ResponseWriter& w) { w.write_header(204); });
  r.method_not_allowed([](Request& req, ResponseWriter& w) {
    w.header().set("Content-Type", "application/json");
    w.write_header(405);
    w.write(fmt::format(R"({{"error":"method {} not allowed","allow":"{}"}})", req.method(),
                        w.header().get("Allow")));
  });
  r.not_found([](Request&, ResponseWriter& w) {
    w.header().set("Content-Type", "application/json");
    w.write_header(404);
    w.write(R"({"error":"not found"})");
  });
  Handler h = r;
  test::RecordedResponse wrong = test::serve(h, {.method = "POST", .target = "/items/1"});
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.header.get("Allow"), "GET, HEAD, PUT");
  EXPECT_EQ(wrong.header.get("Content-Type"), "application/json");
  EXPECT_EQ(wrong.body, R"({"error":"method POST not allowed","allow":"GET, HEAD, PUT"})");
  test::RecordedResponse missing = test::serve(h, {.target = "/nope"});
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, R"({"error":"not found"})");
  EXPECT_EQ(test::serve(h, {.target = "/items/3"}).body, "item");
}

}  // namespace
