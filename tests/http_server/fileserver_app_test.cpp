// goro-fileserver as a child process, driven by curl and Python's
// http.client: GET/HEAD, ranges, If-Modified-Since, a 50 MiB file through
// sendfile, no escape above the root, --index and --prefix, configuration
// errors, graceful exit on SIGTERM.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/http_server/test_util.hpp"

namespace {

using namespace std::chrono_literals;
using goro_test::ChildServer;
using goro_test::Client;
using goro_test::run_command;
namespace stdfs = std::filesystem;

// <base>/secret.txt and <base>/www/{hello.txt, site/index.html, out -> ../secret.txt}
class Site {
 public:
  Site() {
    std::string tmpl = stdfs::temp_directory_path().string() + "/goro-fileserver-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp");
    base_ = tmpl;
    stdfs::create_directories(www() / "site");
    std::ofstream(www() / "hello.txt") << "hello world\n";
    std::ofstream(www() / "site" / "index.html") << "<html>index</html>";
    std::ofstream(base_ / "secret.txt") << "TOP SECRET";
    stdfs::create_symlink("../secret.txt", www() / "out");
    const timespec times[2] = {{784111777, 0}, {784111777, 0}};
    ::utimensat(AT_FDCWD, (www() / "hello.txt").c_str(), times, 0);
  }
  ~Site() {
    std::error_code ec;
    stdfs::remove_all(base_, ec);
  }
  stdfs::path www() const { return base_ / "www"; }
  stdfs::path base() const { return base_; }

 private:
  stdfs::path base_;
};

struct FileServerApp : ChildServer {
  explicit FileServerApp(std::vector<std::string> args)
      : ChildServer(GORO_FILESERVER_PATH, std::move(args)) {}
};

TEST(GoroFileServer, CurlGetHeadRangeConditional) {
  Site site;
  FileServerApp app({"--root", site.www().string()});
  ASSERT_GT(app.port, 0);
  const std::string url = "http://" + app.addr;
  EXPECT_EQ(run_command("curl -s -w ' %{http_code} %{content_type}' " + url + "/hello.txt"),
            "hello world\n 200 text/plain; charset=utf-8");
  const std::string head = run_command("curl -sI " + url + "/hello.txt");
  EXPECT_NE(head.find("HTTP/1.1 200 OK\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("Content-Length: 12\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\n"), std::string::npos);
  EXPECT_EQ(run_command("curl -s -r 6-10 -w ' %{http_code}' " + url + "/hello.txt"), "world 206");
  EXPECT_EQ(run_command("curl -s -r 100- -o /dev/null -w '%{http_code}' " + url + "/hello.txt"),
            "416");
  // curl -z DATE sends If-Modified-Since.
  EXPECT_EQ(run_command("curl -s -o /dev/null -w '%{http_code}' -z 'Sun, 06 Nov 1994 08:49:37 "
                        "GMT' " +
                        url + "/hello.txt"),
            "304");
  EXPECT_EQ(run_command("curl -s -o /dev/null -w '%{http_code}' -z 'Sat, 05 Nov 1994 08:49:37 "
                        "GMT' " +
                        url + "/hello.txt"),
            "200");
  // Directories: no index, no listing.
  EXPECT_EQ(run_command("curl -s -o /dev/null -w '%{http_code}' " + url + "/site/"), "404");
}

TEST(GoroFileServer, NoEscapeAboveTheRoot) {
  Site site;
  FileServerApp app({"--root", site.www().string()});
  ASSERT_GT(app.port, 0);
  const std::string curl = "curl -s --path-as-is -w ' %{http_code}' http://" + app.addr;
  // The Router redirects paths with dot segments (to the cleaned path, which
  // is inside the root); encoded ones reach the file server, which refuses
  // them; a symlink out of the root is refused by the kernel (openat2).
  const std::string dotdot = run_command(curl + "/../secret.txt");
  EXPECT_EQ(dotdot.find("SECRET"), std::string::npos);
  EXPECT_EQ(dotdot.substr(dotdot.size() - 3), "301");
  for (const char* path : {"/%2e%2e/secret.txt", "/site/%2e%2e%2f%2e%2e%2fsecret.txt", "/out"}) {
    SCOPED_TRACE(path);
    const std::string out = run_command(curl + path);
    EXPECT_EQ(out.find("SECRET"), std::string::npos) << out;
    EXPECT_EQ(out.substr(out.size() - 3), "404") << out;
  }
}

TEST(GoroFileServer, PythonHttpClient) {
  Site site;
  FileServerApp app({"--root", site.www().string(), "--index"});
  ASSERT_GT(app.port, 0);
  const std::string script = R"PY(
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
out = []
def req(method, path, headers={}):
    c.request(method, path, headers=headers)
    r = c.getresponse()
    body = r.read()
    return r, body
r, b = req("GET", "/hello.txt")
out.append("%d %r %s" % (r.status, b, r.getheader("Content-Type")))
r, b = req("HEAD", "/hello.txt")
out.append("HEAD %d %s %r" % (r.status, r.getheader("Content-Length"), b))
r, b = req("GET", "/hello.txt", {"Range": "bytes=-6"})
out.append("%d %r %s" % (r.status, b, r.getheader("Content-Range")))
r, b = req("GET", "/hello.txt", {"If-Modified-Since": r.getheader("Last-Modified")})
out.append("%d %r" % (r.status, b))
r, b = req("GET", "/site/")
out.append("%d %r" % (r.status, b))
r, b = req("GET", "/site")
out.append("%d %s" % (r.status, r.getheader("Location")))
r, b = req("GET", "/missing")
out.append("%d" % r.status)
print("|".join(out))
)PY";
  const std::string path = site.base() / "client.py";
  std::ofstream(path) << script;
  EXPECT_EQ(run_command("python3 " + path + " " + std::to_string(app.port)),
            "200 b'hello world\\n' text/plain; charset=utf-8|HEAD 200 12 b''|"
            "206 b'world\\n' bytes 6-11/12|304 b''|200 b'<html>index</html>'|301 site/|404\n");
}

TEST(GoroFileServer, FiftyMiBThroughSendfileAndPrefix) {
  Site site;
  const std::string file = (site.www() / "big.bin").string();
  run_command("head -c 52428800 /dev/urandom > " + file);
  FileServerApp app({"--root", site.www().string(), "--prefix", "/static"});
  ASSERT_GT(app.port, 0);
  const std::string want = run_command("sha256sum < " + file);
  EXPECT_EQ(run_command("curl -s http://" + app.addr + "/static/big.bin | sha256sum"), want);
  // A range in the middle, checked against dd.
  EXPECT_EQ(run_command("curl -s -r 10485760-20971519 http://" + app.addr +
                        "/static/big.bin | sha256sum"),
            run_command("dd if=" + file + " bs=1048576 skip=10 count=10 status=none | sha256sum"));
  EXPECT_EQ(run_command("curl -s -o /dev/null -w '%{http_code}' http://" + app.addr + "/big.bin"),
            "404");
}

TEST(GoroFileServer, ConfigurationErrorsAndSigterm) {
  // No --root: usage error, exit 2.
  EXPECT_NE(run_command(std::string(GORO_FILESERVER_PATH) + " 2>&1; echo \"exit=$?\"")
                .find("--root DIR is required"),
            std::string::npos);
  EXPECT_NE(run_command(std::string(GORO_FILESERVER_PATH) + " >/dev/null 2>&1; echo $?"), "0\n");
  const std::string missing =
      run_command(std::string(GORO_FILESERVER_PATH) +
                  " --root /nonexistent/goro --addr 127.0.0.1:0 2>&1; echo \"exit=$?\"");
  EXPECT_NE(missing.find("/nonexistent/goro"), std::string::npos) << missing;
  EXPECT_NE(missing.find("exit=1"), std::string::npos) << missing;

  Site site;
  FileServerApp app({"--root", site.www().string()});
  ASSERT_GT(app.port, 0);
  // One answered request first: the server is fully up.
  EXPECT_EQ(run_command("curl -s http://" + app.addr + "/hello.txt"), "hello world\n");
  ASSERT_EQ(kill(app.pid, SIGTERM), 0);
#if defined(GORO_TSAN)
  // The signal may sit on a parked goroutine's TSan fiber (test_util.hpp):
  // connection attempts run the accept goroutine until the server exits.
  int status = -1;
  for (int i = 0; i < 60 && status == -1; ++i) {
    Client poke(app.port, 100ms);
    status = app.wait_exit(50ms);
  }
  EXPECT_EQ(status, 0);
#else
  EXPECT_EQ(app.wait_exit(3000ms), 0);
#endif
}

}  // namespace
