// goro/http/log.hpp: LogRecord in text, logfmt and JSON (every JSON line
// parses whatever the strings hold), Logger's threshold, and the access log
// and recover middleware in each format: escaping, the request id, and the
// status the client actually got.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "goro/http/metrics.hpp"
#include "tests/http_server/test_util.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::get;
using goro_test::TestServer;
namespace http = goro::http;
using Clock = std::chrono::steady_clock;

// Strings a client or a handler can put into a log line.
const std::vector<std::string> kHostile = {
    "plain",
    "",
    "two words",
    "quote \" and backslash \\",
    "new\nline\r\ttab",
    std::string("nul \0 byte", 10),
    "\x01\x1f\x7f controls",
    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",  // valid UTF-8: kept as is
    "bad \xff\xfe utf8 \xc3",                     // invalid: U+FFFD
    "overlong \xc0\xaf surrogate \xed\xa0\x80",
    "k=v",
};

TEST(LogRecord, JsonLinesParseWhateverTheStringsHold) {
  for (const std::string& s : kHostile) {
    http::LogRecord r(http::LogLevel::kWarn, s);
    r.add("value", s).add("n", -3).add("u", std::uint64_t{18446744073709551615u}).add("b", true);
    r.add("d", 0.25);
    const std::string line = r.render(http::LogFormat::kJson);
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(line)) << line;
    EXPECT_EQ(j["level"], "warn");
    EXPECT_EQ(j["n"], -3);
    EXPECT_EQ(j["u"], 18446744073709551615u);
    EXPECT_EQ(j["b"], true);
    EXPECT_EQ(j["d"], 0.25);
    EXPECT_EQ(j["time"].get<std::string>().size(), 24u) << line;  // 2026-11-24T23:48:37.123Z
    const std::string back = j["value"];
    if (s.find('\xff') == std::string::npos && s.find('\xc0') == std::string::npos) {
      EXPECT_EQ(back, s) << "valid UTF-8 must round-trip: " << line;
      EXPECT_EQ(j["msg"].get<std::string>(), s);
    } else {
      EXPECT_NE(back.find("\xef\xbf\xbd"), std::string::npos) << line;  // U+FFFD
    }
  }
  // Key order: time, level, msg, then the fields as added.
  const std::string line = http::LogRecord(http::LogLevel::kInfo, "m")
                               .add("z", 1)
                               .add("a", 2)
                               .render(http::LogFormat::kJson);
  EXPECT_LT(line.find("\"msg\""), line.find("\"z\""));
  EXPECT_LT(line.find("\"z\""), line.find("\"a\""));
}

TEST(LogRecord, LogfmtQuotesOnlyWhatNeedsIt) {
  http::LogRecord r(http::LogLevel::kError, "request failed");
  r.add("path", "/a/b").add("empty", "").add("q", "say \"hi\"\n").add("eq", "a=b").add("n", 7);
  const std::string line = r.render(http::LogFormat::kLogfmt);
  EXPECT_EQ(line.rfind("time=", 0), 0u) << line;
  EXPECT_NE(line.find(" level=error msg=\"request failed\" path=/a/b empty=\"\" "
                      "q=\"say \\\"hi\\\"\\n\" eq=\"a=b\" n=7"),
            std::string::npos)
      << line;
  // A byte outside printable ASCII is escaped: one record, one line.
  const std::string bin = http::LogRecord(http::LogLevel::kInfo, "x")
                              .add("v", "\xff\r")
                              .render(http::LogFormat::kLogfmt);
  EXPECT_NE(bin.find("v=\"\\xff\\x0d\""), std::string::npos) << bin;
}

TEST(LogRecord, TextIsTimeLevelMessageFields) {
  const std::string line = http::LogRecord(http::LogLevel::kInfo, "listening on it")
                               .add("addr", "127.0.0.1:80")
                               .render(http::LogFormat::kText);
  ASSERT_GT(line.size(), 25u);
  EXPECT_EQ(line.substr(24), " INFO listening on it addr=127.0.0.1:80") << line;
  const std::string evil =
      http::LogRecord(http::LogLevel::kWarn, "a\nb").render(http::LogFormat::kText);
  EXPECT_EQ(evil.find('\n'), std::string::npos) << evil;
}

TEST(LogRecord, NamesParse) {
  EXPECT_EQ(http::parse_log_format("json"), http::LogFormat::kJson);
  EXPECT_EQ(http::parse_log_format("logfmt"), http::LogFormat::kLogfmt);
  EXPECT_EQ(http::parse_log_format("text"), http::LogFormat::kText);
  EXPECT_FALSE(http::parse_log_format("JSON"));
  EXPECT_EQ(http::parse_log_level("warning"), http::LogLevel::kWarn);
  EXPECT_EQ(http::parse_log_level("error"), http::LogLevel::kError);
  EXPECT_FALSE(http::parse_log_level("fatal"));
  EXPECT_EQ(http::to_string(http::LogLevel::kDebug), "debug");
}

// A temporary file a LogSink writes to; lines() waits for `n` of them.
struct LogFile {
  std::string path = testing::TempDir() + "goro_log_test_" + std::to_string(::getpid()) + "_" +
                     std::to_string(counter++) + ".log";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  static inline int counter = 0;
  ~LogFile() {
    ::close(fd);
    std::remove(path.c_str());
  }
  std::vector<std::string> lines(std::size_t n) const {
    std::vector<std::string> got;
    const auto end = Clock::now() + 5s;
    for (;;) {
      got.clear();
      std::ifstream in(path);
      for (std::string l; std::getline(in, l);)
        got.push_back(l);
      if (got.size() >= n || Clock::now() > end) return got;
      std::this_thread::sleep_for(2ms);
    }
  }
};

TEST(Logger, DropsRecordsBelowItsLevel) {
  LogFile f;
  {
    http::Logger log(std::make_shared<http::LogSink>(f.fd), http::LogFormat::kJson,
                     http::LogLevel::kWarn);
    EXPECT_FALSE(log.enabled(http::LogLevel::kInfo));
    log.log(http::LogLevel::kInfo, "hidden");
    log.log(http::LogLevel::kDebug, "hidden");
    log.log(http::LogLevel::kWarn, "shown");
    log.log(http::LogLevel::kError, "shown too");
  }
  const auto lines = f.lines(2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["msg"], "shown");
  EXPECT_EQ(nlohmann::json::parse(lines[1])["level"], "error");
}

// A server whose routes exercise the status the access log must report.
http::Handler routes() {
  http::Router r;
  r.handle("GET /silent", [](http::Request&, http::ResponseWriter&) {});  // client gets 200
  r.handle("GET /teapot", [](http::Request&, http::ResponseWriter& w) { w.write_header(418); });
  r.handle("GET /throw", [](http::Request&, http::ResponseWriter&) {
    throw std::runtime_error("boom \"quoted\"");
  });
  return r;
}

TEST(AccessLog, JsonLinesCarryTheStatusSentAndParse) {
  LogFile f;
  auto sink = std::make_shared<http::LogSink>(f.fd);
  {
    TestServer s(http::chain(routes(), {http::middleware::request_id(),
                                        http::middleware::access_log(sink, http::LogFormat::kJson),
                                        http::middleware::recover(sink, http::LogFormat::kJson)}));
    Client c(s.port());
    ASSERT_TRUE(c.send(get("/silent", "X-Request-Id: a\"b\\c\r\n")));
    EXPECT_EQ(c.read_response().status, 200);
    ASSERT_TRUE(c.send(get("/teapot")));
    EXPECT_EQ(c.read_response().status, 418);
    ASSERT_TRUE(c.send(get("/throw", "X-Request-Id: boom-1\r\n")));
    EXPECT_EQ(c.read_response().status, 500);
    ASSERT_EQ(f.lines(4).size(), 4u);
  }
  const auto lines = f.lines(4);
  ASSERT_EQ(lines.size(), 4u);
  std::vector<nlohmann::json> j;
  for (const std::string& l : lines) {
    ASSERT_NO_THROW(j.push_back(nlohmann::json::parse(l))) << l;
  }
  EXPECT_EQ(j[0]["msg"], "request");
  EXPECT_EQ(j[0]["status"], 200) << "a handler that wrote nothing sent 200";
  EXPECT_EQ(j[0]["request_id"], "a\"b\\c");
  EXPECT_EQ(j[0]["method"], "GET");
  EXPECT_EQ(j[0]["target"], "/silent");
  EXPECT_EQ(j[1]["status"], 418);
  // recover logs first (inside), then the access log sees its 500.
  EXPECT_EQ(j[2]["msg"], "panic");
  EXPECT_EQ(j[2]["level"], "error");
  EXPECT_EQ(j[2]["error"], "boom \"quoted\"");
  EXPECT_EQ(j[2]["request_id"], "boom-1");
  EXPECT_EQ(j[3]["status"], 500);
  EXPECT_EQ(j[3]["request_id"], "boom-1");
}

// A request body the server could not read, and a handler that said
// nothing about it: the server answers 413 (or 408, 400), and the access
// log says what the client got, not 200.
TEST(AccessLog, SilentHandlerWithAFailedBodyLogsTheServersAnswer) {
  LogFile f;
  auto sink = std::make_shared<http::LogSink>(f.fd);
  http::Router r;
  r.handle("POST /read", [](http::Request& req, http::ResponseWriter& w) {
    if (auto body = req.body().read_all()) (void)w.write(*body);
  });
  {
    TestServer s(http::chain(r, {http::middleware::access_log(sink, http::LogFormat::kJson)}),
                 {.max_body_bytes = 16});
    Client c(s.port());
    ASSERT_TRUE(
        c.send("POST /read HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
               "20\r\n0123456789abcdef0123456789abcdef\r\n0\r\n\r\n"));
    EXPECT_EQ(c.read_response().status, 413);
    ASSERT_EQ(f.lines(1).size(), 1u);
  }
  const auto j = nlohmann::json::parse(f.lines(1)[0]);
  EXPECT_EQ(j["status"], 413) << "what went on the wire";
}

// goro_http_requests_total{code="Nxx"} from /metrics' text (process-wide).
long requests_of_class(int c) {
  return static_cast<long>(
      goro_test::metric_in_process(fmt::format("goro_http_requests_total{{code=\"{}xx\"}}", c)));
}

// The access log and the metrics record the status that went on the wire:
// 200 for a handler that wrote nothing, the server's 413 for one whose body
// was too large, and the 413 that replaces a buffered echo aborted on that
// body (ResponseWriter::abort before anything went out).
TEST(AccessLog, LogAndMetricsRecordTheStatusSent) {
  LogFile f;
  auto sink = std::make_shared<http::LogSink>(f.fd);
  http::Router r;
  r.handle("GET /silent", [](http::Request&, http::ResponseWriter&) {});
  r.handle("POST /read",
           [](http::Request& req, http::ResponseWriter&) { (void)req.body().read_all(); });
  r.handle("POST /echo", [](http::Request& req, http::ResponseWriter& w) {
    (void)w.write("buffered, never sent");
    if (!req.body().read_all()) w.abort();
  });
  const long ok_before = requests_of_class(2);
  const long client_errors_before = requests_of_class(4);
  ASSERT_GE(ok_before, 0) << "goro_http_requests_total missing from /metrics";
  {
    TestServer s(http::chain(r, {http::middleware::metrics(),
                                 http::middleware::access_log(sink, http::LogFormat::kJson)}),
                 {.max_body_bytes = 16});
    const std::string big_chunked =
        "Transfer-Encoding: chunked\r\n\r\n20\r\n0123456789abcdef0123456789abcdef\r\n0\r\n\r\n";
    {
      Client c(s.port());
      ASSERT_TRUE(c.send(get("/silent")));
      EXPECT_EQ(c.read_response().status, 200);
    }
    for (const char* path : {"/read", "/echo"}) {
      Client c(s.port());
      ASSERT_TRUE(c.send(fmt::format("POST {} HTTP/1.1\r\nHost: t\r\n{}", path, big_chunked)));
      const auto resp = c.read_response();
      EXPECT_EQ(resp.status, 413) << path;
      EXPECT_EQ(resp.body.find("never sent"), std::string::npos) << path;
    }
    ASSERT_EQ(f.lines(3).size(), 3u);
  }
  const auto lines = f.lines(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["status"], 200);
  EXPECT_EQ(nlohmann::json::parse(lines[1])["status"], 413);
  EXPECT_EQ(nlohmann::json::parse(lines[2])["status"], 413);
  EXPECT_EQ(nlohmann::json::parse(lines[2])["bytes"], 0) << "the buffered echo never went out";
  // Other tests in this process do not run at the same time: exact deltas.
  EXPECT_EQ(requests_of_class(2) - ok_before, 1);
  EXPECT_EQ(requests_of_class(4) - client_errors_before, 2);
}

TEST(AccessLog, TextEscapesQuotesAndBackslashes) {
  LogFile f;
  auto sink = std::make_shared<http::LogSink>(f.fd);
  {
    TestServer s(
        http::chain(routes(), {http::middleware::request_id(), http::middleware::access_log(sink),
                               http::middleware::recover(sink)}));
    Client c(s.port());
    ASSERT_TRUE(c.send(get("/silent", "X-Request-Id: a\"b\\c\r\n")));
    EXPECT_EQ(c.read_response().status, 200);
    ASSERT_TRUE(c.send(get("/throw", "X-Request-Id: id-7\r\n")));
    EXPECT_EQ(c.read_response().status, 500);
    ASSERT_EQ(f.lines(3).size(), 3u);
  }
  const auto lines = f.lines(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("\"GET /silent HTTP/1.1\" 200 0 "), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].substr(lines[0].rfind(' ') + 1), "a\\x22b\\x5Cc") << lines[0];
  EXPECT_NE(lines[1].find("http: panic serving 127.0.0.1:"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("(request id id-7)"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("\" 500 "), std::string::npos) << lines[2];
}

// The server's own answers never reach a middleware: access_log_rejected
// logs them through ServerOptions::on_rejected, with what went on the wire.
TEST(AccessLog, TheServersOwnAnswersAreLogged) {
  LogFile f;
  auto sink = std::make_shared<http::LogSink>(f.fd);
  std::vector<std::size_t> sent;  // bytes each refused client received
  {
    TestServer s(http::chain(routes(), {http::middleware::access_log(sink)}),
                 {.read_header_timeout = 300ms,
                  .max_header_bytes = 4096,
                  .on_rejected = http::middleware::access_log_rejected(sink)});
    auto refused = [&](std::string_view wire, int status) {
      Client c(s.port());
      ASSERT_TRUE(c.send(wire));
      std::string got = c.read_all();
      ASSERT_EQ(got.rfind(fmt::format("HTTP/1.1 {} ", status), 0), 0u) << got;
      sent.push_back(got.size());
    };
    refused("GET /a\"b\\c HTTP/1.1\r\nHost: h\r\nBad Name: x\r\n\r\n", 400);
    refused("GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(5000, 'a') + "\r\n\r\n", 431);
    refused("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505);
    refused("POST /x HTTP/1.1\r\nHost: h\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\n", 417);
    {
      Client c(s.port());  // half a head, then silence: closed, nothing sent
      ASSERT_TRUE(c.send("GET /slow HTTP/1.1\r\nHost"));
      EXPECT_TRUE(c.closed_by_peer());
    }
    Client c(s.port());  // a silent new connection is not a request: no line
    ASSERT_TRUE(c.send(get("/silent")));
    EXPECT_EQ(c.read_response().status, 200);
    ASSERT_EQ(f.lines(6).size(), 6u);
  }
  const auto lines = f.lines(6);
  ASSERT_EQ(lines.size(), 6u);
  // Not understood: the raw request line, escaped, and the bytes sent.
  EXPECT_NE(lines[0].find(fmt::format("\"GET /a\\x22b\\x5Cc HTTP/1.1\" 400 {} ", sent[0])),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find(fmt::format("\"GET / HTTP/1.1\" 431 {} ", sent[1])), std::string::npos)
      << lines[1];
  EXPECT_NE(lines[2].find(fmt::format("\"GET / HTTP/2.0\" 505 {} ", sent[2])), std::string::npos)
      << lines[2];
  EXPECT_NE(lines[3].find(fmt::format("\"POST /x HTTP/1.1\" 417 {} ", sent[3])), std::string::npos)
      << lines[3];
  EXPECT_NE(lines[4].find("\"GET /slow HTTP/1.1\" 408 0 "), std::string::npos) << lines[4];
  EXPECT_NE(lines[5].find("\"GET /silent HTTP/1.1\" 200 0 "), std::string::npos) << lines[5];

  // JSON: the same, and it parses.
  LogFile g;
  auto jsink = std::make_shared<http::LogSink>(g.fd);
  {
    TestServer s(routes(), {.on_rejected = http::middleware::access_log_rejected(
                                jsink, http::LogFormat::kJson)});
    Client c(s.port());
    ASSERT_TRUE(c.send("GARBAGE\x01\r\n\r\n"));
    EXPECT_EQ(c.read_response().status, 400);
    ASSERT_EQ(g.lines(1).size(), 1u);
  }
  const auto j = nlohmann::json::parse(g.lines(1)[0]);
  EXPECT_EQ(j["msg"], "request");
  EXPECT_EQ(j["status"], 400);
  EXPECT_EQ(j["method"], "");
  EXPECT_EQ(j["request_line"], "GARBAGE\x01");
  EXPECT_GT(j["bytes"].get<int>(), 0);
}

// The refusals decided at the head from limits: a declared body over
// max_body_bytes (413) and a request line over max_request_line (414).
TEST(AccessLog, HeadTimeLimitRefusalsAreLogged) {
  LogFile f;
  auto sink = std::make_shared<http::LogSink>(f.fd);
  {
    TestServer s(routes(), {.max_request_line = 256,
                            .max_body_bytes = 100,
                            .on_rejected = http::middleware::access_log_rejected(sink)});
    {
      Client c(s.port());
      ASSERT_TRUE(c.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\n\r\n"));
      EXPECT_EQ(c.read_response().status, 413);
    }
    {
      Client c(s.port());
      ASSERT_TRUE(c.send("GET /" + std::string(300, 'p') + " HTTP/1.1\r\nHost: h\r\n\r\n"));
      EXPECT_EQ(c.read_response().status, 414);
    }
    ASSERT_EQ(f.lines(2).size(), 2u);
  }
  const auto lines = f.lines(2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("\"POST /x HTTP/1.1\" 413 "), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\" 414 "), std::string::npos) << lines[1];
}

}  // namespace
