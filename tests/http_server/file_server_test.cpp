// http::file_server over loopback with a raw-socket client (the contract is
// include/goro/http/file_server.hpp): types, Last-Modified and conditionals,
// ranges, HEAD, directories and index, every way out of the root refused,
// pipelining with sendfile bodies; plus the pure helpers (Range and HTTP-date
// parsing, the extension table).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "framework/http/handlers/byte_range.hpp"
#include "framework/http/parser/http_date.hpp"
#include "framework/http/server/content_type.hpp"
#include "tests/http_server/test_util.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::Client;
using goro_test::get;
using goro_test::TestServer;
namespace http = goro::http;
namespace stdfs = std::filesystem;
using http::detail::ByteRange;

// <scratch>/secret.txt and <scratch>/root/... (see the constructor).
class Tree {
 public:
  Tree() {
    std::string tmpl = stdfs::temp_directory_path().string() + "/goro-files-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp");
    base_ = tmpl;
    root_ = base_ / "root";
    stdfs::create_directories(root_ / "sub");
    stdfs::create_directories(root_ / "site" / "docs");
    write("hello.txt", "hello world\n");
    write("empty.txt", "");
    write("style.CSS", "body{}");
    write("page", "<!DOCTYPE html><p>no extension</p>");
    write("blob", std::string("\x00\x01\x02"
                              "binary",
                              9));
    write(".hidden", "dot");
    write("sub/nested.json", "{}");
    write("site/index.html", "<html>index</html>");
    write("site/docs/readme.md", "# readme");
    write("with space.txt", "spaced");
    big_.resize(3 << 20);
    std::uint32_t x = 12345;
    for (char& c : big_) {
      x = x * 1664525u + 1013904223u;
      c = static_cast<char>(x >> 24);
    }
    write("big.bin", big_);
    std::ofstream(base_ / "secret.txt") << "TOP SECRET";
    stdfs::create_symlink("hello.txt", root_ / "link_in");
    stdfs::create_symlink("../secret.txt", root_ / "rel_out");
    stdfs::create_symlink(base_ / "secret.txt", root_ / "abs_out");
    stdfs::create_symlink("..", root_ / "dir_out");
    stdfs::create_symlink("/", root_ / "slash");
    ::mkfifo((root_ / "fifo").c_str(), 0644);
    // A fixed mtime, so Last-Modified is known.
    const timespec times[2] = {{kMtime, 0}, {kMtime, 0}};
    ::utimensat(AT_FDCWD, (root_ / "hello.txt").c_str(), times, 0);
  }
  ~Tree() {
    std::error_code ec;
    stdfs::remove_all(base_, ec);
  }
  const stdfs::path& root() const { return root_; }
  const std::string& big() const { return big_; }
  static constexpr time_t kMtime = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT

 private:
  void write(const std::string& rel, const std::string& data) {
    std::ofstream(root_ / rel, std::ios::binary) << data;
  }
  stdfs::path base_;
  stdfs::path root_;
  std::string big_;
};

constexpr const char* kHelloDate = "Sun, 06 Nov 1994 08:49:37 GMT";

class FileServer : public testing::Test {
 protected:
  Client::Response fetch(std::string_view path, std::string_view extra = "",
                         std::string_view method = "GET") {
    Client c(server_->port());
    EXPECT_TRUE(c.send(fmt::format("{} {} HTTP/1.1\r\nHost: t\r\n{}\r\n", method, path, extra)));
    return c.read_response(method == "HEAD");
  }
  void start(http::FileServerOptions opts = {}) {
    server_ = std::make_unique<TestServer>(http::file_server(tree_.root(), std::move(opts)));
  }
  Tree tree_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(FileServer, GetHasTypeLengthLastModified) {
  start();
  auto r = fetch("/hello.txt");
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello world\n");
  EXPECT_EQ(r.header("content-type"), "text/plain; charset=utf-8");
  EXPECT_EQ(r.header("content-length"), "12");
  EXPECT_EQ(r.header("last-modified"), kHelloDate);
  EXPECT_EQ(r.header("accept-ranges"), "bytes");
  EXPECT_EQ(fetch("/with%20space.txt").body, "spaced");
  EXPECT_EQ(fetch("/sub/nested.json").header("content-type"), "application/json");
  EXPECT_EQ(fetch("/style.CSS").header("content-type"), "text/css; charset=utf-8");
  EXPECT_EQ(fetch("/page").header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(fetch("/blob").header("content-type"), "application/octet-stream");
  EXPECT_EQ(fetch("/.hidden").body, "dot");
  auto empty = fetch("/empty.txt");
  EXPECT_EQ(empty.status, 200);
  EXPECT_EQ(empty.header("content-length"), "0");
}

TEST_F(FileServer, BigFileKeepAliveAndPipelined) {
  start();
  Client c(server_->port());
  // Three requests in one write: the sendfile bodies go out after the heads
  // (and the responses before them), in order.
  ASSERT_TRUE(c.send(get("/hello.txt") + get("/big.bin") + get("/hello.txt")));
  EXPECT_EQ(c.read_response().body, "hello world\n");
  auto big = c.read_response();
  EXPECT_EQ(big.status, 200);
  EXPECT_EQ(big.body.size(), tree_.big().size());
  EXPECT_TRUE(big.body == tree_.big());
  EXPECT_EQ(c.read_response().body, "hello world\n");
  ASSERT_TRUE(c.send(get("/sub/nested.json")));
  EXPECT_EQ(c.read_response().body, "{}");
}

TEST_F(FileServer, HeadSendsHeadersOnly) {
  start();
  Client c(server_->port());
  ASSERT_TRUE(c.send("HEAD /big.bin HTTP/1.1\r\nHost: t\r\n\r\n" + get("/hello.txt")));
  auto head = c.read_response(true);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-length"), std::to_string(tree_.big().size()));
  EXPECT_EQ(head.header("content-type"), "application/octet-stream");
  // The next response starts right after the head: no body bytes were sent.
  EXPECT_EQ(c.read_response().body, "hello world\n");
}

TEST_F(FileServer, ConditionalRequests) {
  start();
  auto not_modified = fetch("/hello.txt", fmt::format("If-Modified-Since: {}\r\n", kHelloDate));
  EXPECT_EQ(not_modified.status, 304);
  EXPECT_EQ(not_modified.body, "");
  EXPECT_EQ(not_modified.header("content-length"), "");
  EXPECT_EQ(not_modified.header("last-modified"), kHelloDate);
  // The obsolete forms parse too.
  EXPECT_EQ(fetch("/hello.txt", "If-Modified-Since: Sunday, 06-Nov-94 08:49:37 GMT\r\n").status,
            304);
  EXPECT_EQ(fetch("/hello.txt", "If-Modified-Since: Sun Nov  6 08:49:37 1994\r\n").status, 304);
  EXPECT_EQ(fetch("/hello.txt", "If-Modified-Since: Sun, 06 Nov 1994 08:49:36 GMT\r\n").status,
            200);
  EXPECT_EQ(fetch("/hello.txt", "If-Modified-Since: yesterday\r\n").status, 200);
  EXPECT_EQ(fetch("/hello.txt",
                  fmt::format("If-Modified-Since: {}\r\nIf-None-Match: \"x\"\r\n", kHelloDate))
                .status,
            200);
  EXPECT_EQ(fetch("/hello.txt", "If-Unmodified-Since: Sat, 05 Nov 1994 00:00:00 GMT\r\n").status,
            412);
  EXPECT_EQ(fetch("/hello.txt", fmt::format("If-Unmodified-Since: {}\r\n", kHelloDate)).status,
            200);
}

// A file's name followed by a slash names a directory that does not exist
// (issue 17), and "If-None-Match: *" matches any existing file.
TEST_F(FileServer, TrailingSlashOnAFileAndIfNoneMatchStar) {
  start();
  EXPECT_EQ(fetch("/hello.txt").status, 200);
  EXPECT_EQ(fetch("/hello.txt/").status, 404);
  EXPECT_EQ(fetch("/hello.txt%2f").status, 404);
  EXPECT_EQ(fetch("/hello.txt%2F").status, 404);
  EXPECT_EQ(fetch("/hello.txt", "If-None-Match: *\r\n").status, 304);
  EXPECT_EQ(fetch("/hello.txt", "If-None-Match: \"abc\"\r\n").status, 200);
  EXPECT_EQ(fetch("/missing.txt", "If-None-Match: *\r\n").status, 404);
}

TEST_F(FileServer, SingleRanges) {
  start();
  auto r = fetch("/hello.txt", "Range: bytes=0-4\r\n");
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.body, "hello");
  EXPECT_EQ(r.header("content-range"), "bytes 0-4/12");
  EXPECT_EQ(r.header("content-length"), "5");
  EXPECT_EQ(fetch("/hello.txt", "Range: bytes=6-\r\n").body, "world\n");
  EXPECT_EQ(fetch("/hello.txt", "Range: bytes=-3\r\n").body, "ld\n");
  EXPECT_EQ(fetch("/hello.txt", "Range: bytes=6-1000\r\n").header("content-range"),
            "bytes 6-11/12");
  auto mid = fetch("/big.bin", "Range: bytes=1000000-1999999\r\n");
  EXPECT_EQ(mid.status, 206);
  EXPECT_TRUE(mid.body == tree_.big().substr(1000000, 1000000));
  // If-Range: the range only if the date is the file's Last-Modified.
  EXPECT_EQ(
      fetch("/hello.txt", fmt::format("Range: bytes=0-4\r\nIf-Range: {}\r\n", kHelloDate)).status,
      206);
  auto stale =
      fetch("/hello.txt", "Range: bytes=0-4\r\nIf-Range: Mon, 07 Nov 1994 00:00:00 GMT\r\n");
  EXPECT_EQ(stale.status, 200);
  EXPECT_EQ(stale.body, "hello world\n");
}

TEST_F(FileServer, UnsatisfiableMultipleAndIgnoredRanges) {
  start();
  auto past = fetch("/hello.txt", "Range: bytes=12-\r\n");
  EXPECT_EQ(past.status, 416);
  EXPECT_EQ(past.header("content-range"), "bytes */12");
  EXPECT_EQ(fetch("/hello.txt", "Range: bytes=-0\r\n").status, 416);
  // Several ranges: the whole file, 200 (documented choice).
  auto multi = fetch("/hello.txt", "Range: bytes=0-1,4-5\r\n");
  EXPECT_EQ(multi.status, 200);
  EXPECT_EQ(multi.body, "hello world\n");
  EXPECT_EQ(multi.header("content-range"), "");
  EXPECT_EQ(fetch("/hello.txt", "Range: bytes=5-3\r\n").status, 200);
  EXPECT_EQ(fetch("/hello.txt", "Range: items=0-1\r\n").status, 200);
  EXPECT_EQ(fetch("/empty.txt", "Range: bytes=0-\r\n").status, 200);
  auto head = fetch("/hello.txt", "Range: bytes=0-4\r\n", "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-length"), "12");
}

TEST_F(FileServer, NoEscapeAboveTheRoot) {
  start();
  for (const char* path :
       {"/../secret.txt", "/%2e%2e/secret.txt", "/sub/..%2f..%2fsecret.txt",
        "/sub/%2E%2E/%2E%2E/secret.txt", "/rel_out", "/abs_out", "/dir_out/secret.txt",
        "/slash/etc/hostname", "/sub/../hello.txt", "/hello.txt%00.png"}) {
    SCOPED_TRACE(path);
    auto r = fetch(path);
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(r.body.find("SECRET"), std::string::npos);
  }
  // A symlink that stays inside is followed.
  EXPECT_EQ(fetch("/link_in").body, "hello world\n");
  EXPECT_EQ(fetch("/%zz").status, 400);
}

TEST_F(FileServer, DirectoriesAreNotFoundWithoutIndex) {
  start();
  EXPECT_EQ(fetch("/").status, 404);
  EXPECT_EQ(fetch("/site/").status, 404);
  EXPECT_EQ(fetch("/site").status, 404);
  // Non-regular files: 404 at once (the FIFO's open does not wait for a writer).
  EXPECT_EQ(fetch("/fifo").status, 404);
}

TEST_F(FileServer, IndexOption) {
  start({.index = true});
  auto r = fetch("/site/");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "<html>index</html>");
  EXPECT_EQ(r.header("content-type"), "text/html; charset=utf-8");
  auto redirect = fetch("/site?x=1");
  EXPECT_EQ(redirect.status, 301);
  EXPECT_EQ(redirect.header("location"), "site/?x=1");
  EXPECT_EQ(fetch("/site/docs/").status, 404);  // no index.html there; never a listing
  EXPECT_EQ(fetch("/").status, 404);
}

TEST_F(FileServer, MethodsAndPrefixBehindTheRouter) {
  http::Router r;
  r.handle("GET /static/", http::file_server(tree_.root(), {.strip_prefix = "/static"}));
  r.handle("POST /static/", http::file_server(tree_.root(), {.strip_prefix = "/static"}));
  server_ = std::make_unique<TestServer>(std::move(r));
  EXPECT_EQ(fetch("/static/hello.txt").body, "hello world\n");
  EXPECT_EQ(fetch("/static/sub/nested.json").body, "{}");
  EXPECT_EQ(fetch("/hello.txt").status, 404);
  auto head = fetch("/static/hello.txt", "", "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-length"), "12");
  auto post = fetch("/static/hello.txt", "Content-Length: 0\r\n", "POST");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.header("allow"), "GET, HEAD");
  // The Router cleans ".." before the file server sees it.
  EXPECT_EQ(fetch("/static/../secret.txt").status, 301);
}

TEST_F(FileServer, StripPrefixEndsAtASegment) {
  start({.strip_prefix = "/static"});
  EXPECT_EQ(fetch("/static/hello.txt").body, "hello world\n");
  EXPECT_EQ(fetch("/statichello.txt").status, 404);
  EXPECT_EQ(fetch("/other/hello.txt").status, 404);
  EXPECT_EQ(fetch("/static").status, 404);  // the root directory, no index
}

TEST_F(FileServer, UnreadableFileIs403) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file";
  ::chmod((tree_.root() / "hello.txt").c_str(), 0);
  start();
  EXPECT_EQ(fetch("/hello.txt").status, 403);
}

TEST(FileServerSetup, MissingRootThrows) {
  EXPECT_THROW(http::file_server("/nonexistent/goro/root"), std::system_error);
  EXPECT_THROW(http::file_server("/etc/hostname"), std::system_error);
}

TEST(ByteRangeParse, Shapes) {
  using K = ByteRange::Kind;
  auto p = [](std::string_view h, std::uint64_t size) {
    return http::detail::parse_byte_range(h, size);
  };
  auto r = p("bytes=0-4", 12);
  EXPECT_EQ(r.kind, K::kPartial);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.length, 5u);
  r = p(" bytes = 3 - ", 12);  // "bytes =" is not the unit: ignored
  EXPECT_EQ(r.kind, K::kWhole);
  r = p("BYTES= 3 - ", 12);
  EXPECT_EQ(r.kind, K::kPartial);
  EXPECT_EQ(r.first, 3u);
  EXPECT_EQ(r.length, 9u);
  r = p("bytes=-20", 12);
  EXPECT_EQ(r.kind, K::kPartial);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.length, 12u);
  EXPECT_EQ(p("bytes=12-", 12).kind, K::kUnsatisfiable);
  EXPECT_EQ(p("bytes=-0", 12).kind, K::kUnsatisfiable);
  EXPECT_EQ(p("bytes=0-0", 0).kind, K::kWhole);
  EXPECT_EQ(p("bytes=", 12).kind, K::kWhole);
  EXPECT_EQ(p("bytes=-", 12).kind, K::kWhole);
  EXPECT_EQ(p("bytes=a-b", 12).kind, K::kWhole);
  EXPECT_EQ(p("bytes=1-2,3-4", 12).kind, K::kWhole);
  EXPECT_EQ(p("bytes=99999999999999999999-", 12).kind, K::kWhole);
  r = p("bytes=0-18446744073709551615", 12);  // 20 digits: malformed here
  EXPECT_EQ(r.kind, K::kWhole);
  r = p("bytes=0-9223372036854775807", 12);
  EXPECT_EQ(r.kind, K::kPartial);
  EXPECT_EQ(r.length, 12u);
}

TEST(HttpDateParse, ThreeFormsAndRoundTrip) {
  using http::detail::format_http_date;
  using http::detail::parse_http_date;
  const auto want = std::chrono::system_clock::from_time_t(784111777);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), want);
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), want);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), want);
  EXPECT_EQ(parse_http_date(format_http_date(want).view()), want);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 UTC"), std::nullopt);
  EXPECT_EQ(parse_http_date("Sun, 31 Feb 1994 08:49:37 GMT"), std::nullopt);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 24:49:37 GMT"), std::nullopt);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT "), std::nullopt);
  EXPECT_EQ(parse_http_date(""), std::nullopt);
}

TEST(ContentTypeTable, Extensions) {
  using http::detail::content_type_by_extension;
  EXPECT_EQ(content_type_by_extension("a/b/index.HTML"), "text/html; charset=utf-8");
  EXPECT_EQ(content_type_by_extension("x.woff2"), "font/woff2");
  EXPECT_EQ(content_type_by_extension("app.mjs"), "text/javascript; charset=utf-8");
  EXPECT_EQ(content_type_by_extension("noext"), "");
  EXPECT_EQ(content_type_by_extension("dir.d/noext"), "");
  EXPECT_EQ(content_type_by_extension("weird.verylongextension"), "");
}

}  // namespace
