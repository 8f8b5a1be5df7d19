// Helpers for the goro::http server tests: an in-process server on its own
// runtime thread, and a blocking POSIX client that speaks raw bytes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "goro/goro.hpp"
#include "goro/http.hpp"
#include "goro/http/metrics.hpp"

namespace goro_test {

namespace http = goro::http;

// A server running in goro::run on a background thread, on 127.0.0.1:0.
class TestServer {
 public:
  TestServer(http::Handler h, http::ServerOptions opts = {}) {
    opts.addr = "127.0.0.1:0";
    opts.handle_signals = false;
    opts.error_log = [this](std::string_view line) {
      std::lock_guard lock(log_mu_);
      log_.emplace_back(line);
    };
    std::promise<std::string> ready;
    auto addr = ready.get_future();
    thread_ = std::thread([this, h = std::move(h), opts = std::move(opts), &ready]() mutable {
      goro::run([&] {
        http::Server srv(std::move(opts), std::move(h));
        if (!srv.listen()) {
          ready.set_value("");
          return;
        }
        server_.store(&srv);
        ready.set_value(srv.addr());
        (void)srv.serve();
        server_.store(nullptr);
      });
    });
    addr_ = addr.get();
    port_ = std::stoi(addr_.substr(addr_.rfind(':') + 1));
  }
  ~TestServer() { stop(); }

  void stop(std::chrono::nanoseconds timeout = std::chrono::seconds(2)) {
    if (!thread_.joinable()) return;
    if (http::Server* s = server_.load()) s->shutdown(timeout);
    thread_.join();
  }
  http::Server* server() { return server_.load(); }
  const std::string& addr() const { return addr_; }
  int port() const { return port_; }
  std::vector<std::string> log() {
    std::lock_guard lock(log_mu_);
    return log_;
  }

 private:
  std::thread thread_;
  std::atomic<http::Server*> server_{nullptr};
  std::string addr_;
  int port_ = 0;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

// A blocking client socket with a receive timeout.
class Client {
 public:
  // rcvbuf: SO_RCVBUF before connect (the window the server sees), or 0.
  explicit Client(int port, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000),
                  int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    // Bounds connect() too (Linux): a server that hangs with its backlog
    // full must fail the test, not block it for the kernel's SYN retries.
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  ~Client() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  Client(Client&& o) noexcept
      : fd_(o.fd_), connected_(o.connected_), ssl_(o.ssl_), buf_(std::move(o.buf_)) {
    o.fd_ = -1;
    o.ssl_ = nullptr;
  }

  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  // Speaks TLS from here on (blocking OpenSSL on this socket, under the
  // same receive timeout), as a client of `ctx` sending `server_name` as
  // SNI; false if the handshake failed (ERR_* says why).
  bool start_tls(SSL_CTX* ctx, const std::string& server_name = "localhost") {
    ssl_ = SSL_new(ctx);
    SSL_set_fd(ssl_, fd_);
    if (!server_name.empty()) SSL_set_tlsext_host_name(ssl_, server_name.c_str());
    return SSL_connect(ssl_) == 1;
  }
  SSL* ssl() const { return ssl_; }

  bool send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = send_some(data);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Reads until end of stream (or timeout); returns everything unread.
  std::string read_all() {
    std::string out = std::move(buf_);
    buf_.clear();
    char tmp[65536];
    for (;;) {
      ssize_t n = recv_some(tmp, sizeof tmp);
      if (n <= 0) break;
      out.append(tmp, static_cast<std::size_t>(n));
    }
    return out;
  }

  // True if the server closed the connection (EOF or reset) within the timeout.
  bool closed_by_peer() {
    if (!buf_.empty()) return false;
    char c;
    ssize_t n = recv_some(&c, 1);
    if (n == 1) buf_.push_back(c);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

  struct Response {
    bool ok = false;
    std::string status_line;
    int status = 0;
    std::multimap<std::string, std::string> headers;  // lower-cased names
    std::string body;
    std::string header(const std::string& lower) const {
      auto it = headers.find(lower);
      return it == headers.end() ? "" : it->second;
    }
  };

  // Reads one response (Content-Length, chunked, or to EOF). `head_request`:
  // no body follows.
  Response read_response(bool head_request = false) {
    Response r;
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return r;
    }
    std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    std::size_t eol = head.find("\r\n");
    r.status_line = head.substr(0, eol);
    if (r.status_line.size() >= 12) r.status = std::stoi(r.status_line.substr(9, 3));
    std::size_t pos = eol == std::string::npos ? head.size() : eol + 2;
    while (pos < head.size()) {
      std::size_t next = head.find("\r\n", pos);
      if (next == std::string::npos) next = head.size();
      std::string line = head.substr(pos, next - pos);
      std::size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ')
        value.erase(0, 1);
      r.headers.emplace(name, value);
      pos = next + 2;
    }
    if (r.status == 100) {
      r.ok = true;
      return r;
    }
    const bool no_body = head_request || r.status == 204 || r.status == 304;
    if (no_body) {
    } else if (r.header("transfer-encoding") == "chunked") {
      for (;;) {
        std::size_t le;
        while ((le = buf_.find("\r\n")) == std::string::npos) {
          if (!fill()) return r;
        }
        std::size_t size = std::stoul(buf_.substr(0, le), nullptr, 16);
        buf_.erase(0, le + 2);
        if (size == 0) {
          while ((le = buf_.find("\r\n")) == std::string::npos) {
            if (!fill()) return r;
          }
          buf_.erase(0, le + 2);  // no trailers expected from goro
          break;
        }
        while (buf_.size() < size + 2) {
          if (!fill()) return r;
        }
        r.body.append(buf_, 0, size);
        buf_.erase(0, size + 2);
      }
    } else if (!r.header("content-length").empty()) {
      std::size_t len = std::stoul(r.header("content-length"));
      while (buf_.size() < len) {
        if (!fill()) return r;
      }
      r.body = buf_.substr(0, len);
      buf_.erase(0, len);
    } else {
      while (fill()) {
      }
      r.body = std::move(buf_);
      buf_.clear();
    }
    r.ok = true;
    return r;
  }

 private:
  // One recv(2) or SSL_read: > 0 bytes, 0 at the end, < 0 on error.
  ssize_t recv_some(char* buf, std::size_t n) {
    if (ssl_ == nullptr) return ::recv(fd_, buf, n, 0);
    std::size_t got = 0;
    if (SSL_read_ex(ssl_, buf, n, &got) == 1) return static_cast<ssize_t>(got);
    return SSL_get_error(ssl_, 0) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
  }
  ssize_t send_some(std::string_view data) {
    if (ssl_ == nullptr) return ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    std::size_t put = 0;
    return SSL_write_ex(ssl_, data.data(), data.size(), &put) == 1 ? static_cast<ssize_t>(put) : -1;
  }

  bool fill() {
    char tmp[65536];
    ssize_t n = recv_some(tmp, sizeof tmp);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  SSL* ssl_ = nullptr;
  std::string buf_;
};

// A server binary as a child process (goro-hello, goro-fileserver): started
// with `args` plus "--addr 127.0.0.1:0" (and `env`, "K=V" entries, set in
// the child; `before_exec` runs there too, e.g. to join a cgroup), its
// first stdout line read as the bound address (the bare address, or the
// addr field of a json/logfmt "listening" record). A thread keeps reading
// stdout, so the child never writes into a closed pipe, and keeps every
// line for the test (lines(), wait_for_line()). SIGKILLed on destruction if
// still running.
struct ChildServer {
  pid_t pid = -1;
  pid_t pid_at_start = -1;  // `pid` stays valid after wait_exit() resets pid
  std::string addr;
  int port = 0;

  ChildServer(const std::string& binary, std::vector<std::string> args,
              std::vector<std::string> env = {}, std::function<void()> before_exec = {}) {
    int out[2];
    if (pipe(out) != 0) return;
    const pid_t parent = getpid();
    pid = fork();
    if (pid == 0) {
      // Dies with the test: a test process that crashes must not leave the
      // server running, holding ctest's output pipe open (ctest then waits
      // for it until the test's timeout and reports a timeout, not the crash).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);  // it died before the prctl
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      for (std::string& kv : env)
        putenv(kv.data());
      if (before_exec) before_exec();
      std::vector<std::string> all = {binary, "--addr", "127.0.0.1:0"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(out[1]);
    pid_at_start = pid;
    fd_ = out[0];
    reader_ = std::thread([this] { read_lines(); });
    std::string first;
    if (!wait_for_line([](const std::string&) { return true; }, std::chrono::seconds(60), &first)) {
      return;
    }
    addr = address_in(first);
    if (auto colon = addr.rfind(':'); colon != std::string::npos)
      port = std::stoi(addr.substr(colon + 1));
  }
  ~ChildServer() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (reader_.joinable()) reader_.join();  // EOF once the child is gone
    if (fd_ >= 0) close(fd_);
  }
  ChildServer(const ChildServer&) = delete;
  ChildServer& operator=(const ChildServer&) = delete;

  // Every complete stdout line so far.
  std::vector<std::string> lines() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  // Waits up to `limit` for a line matching `pred` (earlier lines count);
  // true and the line in `*found` if one came.
  template <class Pred>
  bool wait_for_line(Pred pred, std::chrono::milliseconds limit, std::string* found = nullptr) {
    std::unique_lock<std::mutex> lock(mu_);
    std::size_t seen = 0;
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      for (; seen < lines_.size(); ++seen) {
        if (pred(lines_[seen])) {
          if (found != nullptr) *found = lines_[seen];
          return true;
        }
      }
      if (eof_ || cv_.wait_until(lock, end) == std::cv_status::timeout) {
        for (; seen < lines_.size(); ++seen) {
          if (pred(lines_[seen])) {
            if (found != nullptr) *found = lines_[seen];
            return true;
          }
        }
        return false;
      }
    }
  }

  // Waits up to `limit` (0: only looks) for exit; the exit status (128 + N
  // when killed by signal N), or -1 while it runs. Once reaped, the status
  // is kept (pid is -1 then: waitpid(-1) would reap any child).
  int wait_exit(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (pid <= 0) return exit_status_;
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_status_;
      }
      if (std::chrono::steady_clock::now() >= end) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  // The address a start-up line names: the line itself, or the value of
  // "addr":"..." (json) or addr=... (logfmt).
  static std::string address_in(const std::string& line) {
    if (auto at = line.find("\"addr\":\""); at != std::string::npos) {
      const std::size_t from = at + 8;
      return line.substr(from, line.find('"', from) - from);
    }
    if (auto at = line.find(" addr="); at != std::string::npos) {
      const std::size_t from = at + 6;
      return line.substr(from, line.find(' ', from) - from);
    }
    return line;
  }

  void read_lines() {
    std::string partial;
    char buf[4096];
    for (;;) {
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      partial.append(buf, static_cast<std::size_t>(n));
      std::size_t nl = 0;
      while ((nl = partial.find('\n')) != std::string::npos) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          lines_.push_back(partial.substr(0, nl));
        }
        partial.erase(0, nl + 1);
        cv_.notify_all();
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    eof_ = true;
    cv_.notify_all();
  }

  int fd_ = -1;
  std::thread reader_;
  int exit_status_ = -1;  // wait_exit's, once reaped
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;  // guarded by mu_
  bool eof_ = false;                // guarded by mu_
};

// Tests whose point is how fast a server reacts to SIGTERM skip under
// ThreadSanitizer: TSan keeps pending asynchronous signals per thread state,
// each goroutine runs on its own TSan fiber (its own thread state), and a
// signal that lands while a goroutine runs is handled only when that
// goroutine next enters a TSan interceptor -- which, for a parked goroutine,
// may be never. Release and ASan builds run the handler at once and run these
// tests; the TSan build still checks the shutdown code for races through the
// tests that do not depend on signal timing.
#if defined(GORO_TSAN)
#define GORO_SKIP_SIGNAL_TIMING_UNDER_TSAN() \
  GTEST_SKIP() << "signal delivery timing is not reliable under TSan fibers (test_util.hpp)"
#else
#define GORO_SKIP_SIGNAL_TIMING_UNDER_TSAN() \
  do {                                       \
  } while (0)
#endif

// Runs a shell command; its stdout.
inline std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  pclose(p);
  return out;
}

// A series' value in a /metrics text, e.g. "goro_http_connections" or
// "goro_http_requests_total{code=\"2xx\"}"; -1 when it is absent.
inline double metric_in(const std::string& text, std::string_view series) {
  // Appended, not concatenated: GCC 12 at -O3 warns (-Wrestrict) about the
  // memcpy in "\n" + std::string(series) once this is inlined.
  std::string key(1, '\n');
  key.append(series).push_back(' ');
  const std::size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + key.size()));
}

// The same in this process's /metrics text (goro::http::metrics_text,
// process-wide).
inline double metric_in_process(std::string_view series) {
  return metric_in(http::metrics_text(), series);
}

// Polls until `pred` holds or `limit` passes; the last value of pred.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

inline std::string get(std::string_view path, std::string_view extra = "") {
  return std::string("GET ") + std::string(path) + " HTTP/1.1\r\nHost: t\r\n" + std::string(extra) +
         "\r\n";
}

}  // namespace goro_test
