// The head fast path (framework/http/parser/parser.cpp, "The head fast path")
// against llhttp alone: for every head, the two paths must report the same
// transcript. Every byte value is tried in each position class of a head
// (method, target, query, field name, field value, Host), each wire fed whole
// and a byte at a time; then the heads real clients send must take the fast
// path, and the heads it must leave to llhttp must not.
#include <gtest/gtest.h>

#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "parser_driver.hpp"

namespace goro::http::detail::testing {
namespace {

DriveOptions with_path(HeadPath path) {
  DriveOptions o;
  o.head_path = path;
  return o;
}

// Both paths, fed whole and a byte at a time, report the same.
void expect_same(const std::string& wire) {
  const Transcript fast = drive_whole(wire, with_path(HeadPath::kFastPath));
  const Transcript slow = drive_whole(wire, with_path(HeadPath::kLlhttpOnly));
  ASSERT_EQ(fast, slow) << "wire: " << ::testing::PrintToString(wire)
                        << "\nfast: " << fast.error_status << " " << fast.error_reason
                        << "\nllhttp: " << slow.error_status << " " << slow.error_reason;
  ASSERT_EQ(fast.unread, slow.unread) << ::testing::PrintToString(wire);
  ASSERT_EQ(drive_bytewise(wire, with_path(HeadPath::kFastPath)), slow)
      << ::testing::PrintToString(wire);
}

// The pieces joined: one piece per line keeps long wires readable.
std::string join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts)
    out.append(p);
  return out;
}

// Whether the parser's first head went the fast way.
bool takes_fast_path(const std::string& wire) {
  RequestParser p;
  const ParseResult r = p.parse(wire);
  return r.event == ParseEvent::kHead && p.head_took_fast_path();
}

struct Template {
  const char* name;
  std::string before;  // the byte under test goes between before and after
  std::string after;
};

void PrintTo(const Template& t, std::ostream* os) {
  *os << t.name;
}

// Each position class a byte can sit in, with a valid head around it.
const std::vector<Template>& templates() {
  static const std::vector<Template> t = {
      {"method", "G", "ET / HTTP/1.1\r\nHost: h\r\n\r\n"},
      {"target_start", "GET ", "/ HTTP/1.1\r\nHost: h\r\n\r\n"},
      {"path", "GET /a", "b HTTP/1.1\r\nHost: h\r\n\r\n"},
      {"query", "GET /a?x=", "y HTTP/1.1\r\nHost: h\r\n\r\n"},
      {"after_fragment", "GET /a#f", "g HTTP/1.1\r\nHost: h\r\n\r\n"},
      {"name_start", "GET / HTTP/1.1\r\nHost: h\r\n", "X: v\r\n\r\n"},
      {"name_middle", "GET / HTTP/1.1\r\nHost: h\r\nX-", "Y: v\r\n\r\n"},
      {"name_end", "GET / HTTP/1.1\r\nHost: h\r\nX", ": v\r\n\r\n"},
      {"value_start", "GET / HTTP/1.1\r\nHost: h\r\nX:", "v\r\n\r\n"},
      {"value_middle", "GET / HTTP/1.1\r\nHost: h\r\nX: a", "b\r\n\r\n"},
      {"value_end", "GET / HTTP/1.1\r\nHost: h\r\nX: v", "\r\n\r\n"},
      {"empty_value", "GET / HTTP/1.1\r\nHost: h\r\nX: ", "\r\n\r\n"},
      {"host_value", "GET / HTTP/1.1\r\nHost: h", "\r\n\r\n"},
      {"http10_value", "HEAD /x HTTP/1.0\r\nAccept: ", "\r\n\r\n"},
      {"expect_value", "GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continu", "\r\n\r\n"},
      {"before_next_request", "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
       "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"},
  };
  return t;
}

class FastPathEveryByte : public ::testing::TestWithParam<Template> {};

TEST_P(FastPathEveryByte, AgreesWithLlhttp) {
  const Template& t = GetParam();
  for (int b = 0; b < 256; ++b) {
    SCOPED_TRACE(::testing::Message() << "byte " << b);
    expect_same(t.before + static_cast<char>(b) + t.after);
    // Doubled too: some bytes mean something only next to themselves.
    expect_same(t.before + std::string(2, static_cast<char>(b)) + t.after);
  }
}

INSTANTIATE_TEST_SUITE_P(Positions, FastPathEveryByte, ::testing::ValuesIn(templates()),
                         [](const auto& info) { return std::string(info.param.name); });

// Fields llhttp gives meaning to, and names that only start like them.
TEST(FastPath, FieldsLlhttpInterpretsAgree) {
  const std::vector<std::string> fields = {
      "Content-Length: 0",
      "content-length: 5",
      "CONTENT-LENGTH: 00",
      "Content-Length: 1",
      "Content-Length: x",
      "Content-Lengthy: 1",
      "Transfer-Encoding: chunked",
      "transfer-encoding: gzip",
      "Connection: close",
      "connection: keep-alive",
      "Connection: upgrade",
      "Connection: close, upgrade",
      "Proxy-Connection: close",
      "Upgrade: websocket",
      "Connection-X: close",
      "Upgrade-Insecure-Requests: 1",
      "Expect: 100-continue",
      "Expect: other",
      "Host: second",
      "Keep-Alive: 5",
      "TE: trailers",
      "Trailer: X",
      "Content-Type: text/plain",
      "Connection: keep-alive\t,x",
      "Proxy-Connection: keep-alive",
  };
  for (const std::string method : {"GET", "HEAD", "POST", "OPTIONS"}) {
    for (const std::string version : {"1.1", "1.0"}) {
      for (const std::string& f : fields) {
        const std::string head =
            join({method, " /p HTTP/", version, "\r\nHost: h\r\n", f, "\r\n\r\n"});
        expect_same(head);
        expect_same(join({head, "hello", head}));
        expect_same(join({head, "0\r\n\r\n", head}));
        // A head the fast path takes after one llhttp parsed.
        expect_same(join({head, "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"}));
        expect_same(join({head, "hello", "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"}));
      }
    }
  }
}

TEST(FastPath, RefusalsAreLlhttpPathRefusals) {
  const std::vector<std::string> wires = {
      "GET / HTTP/1.1\r\n\r\n",                                    // missing Host
      "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",              // two Hosts
      "GET / HTTP/1.1\r\nHost: a b\r\n\r\n",                       // malformed Host
      "GET / HTTP/1.1\r\nHost: a\r\nX-Bad\r\n\r\n",                // no colon
      "GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n",                  // empty name
      "GET / HTTP/1.1\r\nHost: a\r\nX : v\r\n\r\n",                // space before colon
      "GET / HTTP/1.1\r\nHost: h\r\nHost: x\r\nX\x01: v\r\n\r\n",  // two Hosts, then a bad name
      "GET / HTTP/1.1\r\nHost: h\r\nHost: \x7f\r\n\r\n",           // second Host with a DEL
      "GET / HTTP/1.0\r\n\r\n",                                    // 1.0: no Host needed
      "GET http://h/ HTTP/1.1\r\nHost: x\r\n\r\n",                 // absolute form
      "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
      "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n",
      join({"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
            "GET /3 HTTP/1.1\r\nHost: h\r\n\r\n"}),
      join({"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "GET /2 HTTP/1.0\r\n\r\n",
            "GET /3 HTTP/1.0\r\n\r\n"}),
  };
  for (const std::string& w : wires)
    expect_same(w);
}

// The fast path checks the request-line and head limits itself when it
// judges a head in the caller's input: at each limit and one byte under it,
// fed whole, cut at every offset and a byte at a time, it must answer as
// llhttp (with the scanner) does, and a head that fits must take the path.
TEST(FastPath, LimitsAtTheirEdges) {
  const std::string line = "GET /limits?q=1 HTTP/1.1";
  const std::string head = line + "\r\nHost: h\r\nAccept: */*\r\n\r\n";
  const std::string wire = join({"\r\n", head, head});  // a blank line first, then two heads
  for (std::size_t under = 0; under <= 1; ++under) {
    for (const bool line_limit : {true, false}) {
      DriveOptions fast;
      if (line_limit) {
        fast.limits.max_request_line = line.size() - under;
      } else {
        fast.limits.max_header_bytes = head.size() - under;
      }
      DriveOptions slow = fast;
      slow.head_path = HeadPath::kLlhttpOnly;
      for (const std::string& w : {head, wire, join({head, head})}) {
        SCOPED_TRACE(::testing::Message() << "under " << under << " line " << line_limit << " "
                                          << ::testing::PrintToString(w));
        const Transcript expected = drive_whole(w, slow);
        EXPECT_EQ(drive_whole(w, fast), expected);
        EXPECT_EQ(drive_bytewise(w, fast), expected);
        for (std::size_t cut = 1; cut < w.size(); ++cut)
          EXPECT_EQ(drive(w, {cut}, fast), expected) << "cut at " << cut;
      }
      RequestParser p(fast.limits);
      const ParseResult r = p.parse(head);
      EXPECT_EQ(r.event == ParseEvent::kHead && p.head_took_fast_path(), under == 0);
    }
  }
}

// A bodiless request through llhttp, then one through the fast path, then
// llhttp again: llhttp's state between messages must be what it expects.
TEST(FastPath, InterleavesWithLlhttpHeads) {
  const std::string fast = "GET /f HTTP/1.1\r\nHost: h\r\n\r\n";
  const std::string post = "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc";
  const std::string chunked =
      join({"POST /c HTTP/1.1\r\nHost: h\r\n", "Transfer-Encoding: chunked\r\n\r\n",
            "3\r\nabc\r\n0\r\n", "T: v\r\n\r\n"});
  const std::string upgrade =
      "GET /u HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: x\r\n\r\n";
  const std::string close = "GET /z HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
  expect_same(join({fast, post, fast, chunked, fast, upgrade, fast, post, close, fast}));
  expect_same(join({post, fast, fast, chunked, chunked, fast, close}));
  const Transcript t = drive_whole(join({fast, post, fast, close, fast}));
  ASSERT_EQ(t.messages.size(), 4U);
  EXPECT_EQ(t.messages[1].body, "abc");
  EXPECT_EQ(t.messages[3].target, "/z");
  EXPECT_EQ(t.unread, fast);  // the driver stops reading after Connection: close
}

// What real clients send takes the fast path (so the fast path is not dead
// code), and what the fast path must leave alone does not.
TEST(FastPath, CoversWhatClientsSend) {
  const std::vector<std::string> fast = {
      // wrk
      "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
      // curl 7.88
      join({"GET /hello HTTP/1.1\r\n", "Host: 127.0.0.1:8080\r\n", "User-Agent: curl/7.88.1\r\n",
            "Accept: */*\r\n\r\n"}),
      // Python http.client
      "GET /x?y=1&z=%20 HTTP/1.1\r\nHost: localhost:1\r\nAccept-Encoding: identity\r\n\r\n",
      // Go's client
      join({"GET / HTTP/1.1\r\n", "Host: h\r\n", "User-Agent: Go-http-client/1.1\r\n",
            "Accept-Encoding: gzip\r\n\r\n"}),
      // a browser, less its Connection line
      join({"HEAD /a/b.css HTTP/1.1\r\n", "Host: example.com\r\n",
            "User-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\n", "Accept: text/css,*/*;q=0.1\r\n",
            "Accept-Language: en-US,en;q=0.5\r\n", "Cookie: a=b; c=\"d\"\r\n",
            "Sec-Fetch-Dest: style\r\n\r\n"}),
      "GET / HTTP/1.0\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n",
  };
  for (const std::string& w : fast) {
    EXPECT_TRUE(takes_fast_path(w)) << w;
    expect_same(w);
  }
  const std::vector<std::string> slow = {
      "POST / HTTP/1.1\r\nHost: h\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nX: caf\xc3\xa9\r\n\r\n",
      "GET /caf\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n",
      "GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n",
  };
  for (const std::string& w : slow) {
    EXPECT_FALSE(takes_fast_path(w)) << w;
    expect_same(w);
  }
}

}  // namespace
}  // namespace goro::http::detail::testing
