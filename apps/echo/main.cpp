// goro-echo: a TCP echo server, one goroutine per connection.
//
//   goro-echo [--addr HOST:PORT]     default 127.0.0.1:9000; port 0 picks one
//
// The first line on stdout is the bound address ("127.0.0.1:41235"), flushed,
// so scripts and tests can start it on port 0 and read where it listens.
// GOMAXPROCS in the environment sets the number of Ps.
//
// ## Stopping
// SIGINT and SIGTERM are blocked in every thread (the mask is set before
// goro::run, and runtime threads inherit it) and taken by a dedicated thread
// in sigwait(2), which closes the listener; the blocked accept returns
// errc::closed, main waits for that close() to return (it deregisters the fd
// from the runtime's poller), returns, and the process exits with status 0, abandoning
// open connections as a Go program does at exit. Rejected: a signalfd read by
// a goroutine through the poller would need a public "wrap this fd" API that
// goro::net does not offer; a plain signal handler cannot close a listener
// (not async-signal-safe).
#include <getopt.h>
#include <pthread.h>
#include <signal.h>

#include <fmt/core.h>
#include <array>
#include <atomic>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include "goro/goro.hpp"
#include "goro/net.hpp"

namespace {

std::atomic<goro::net::Listener*> g_listener{nullptr};
std::atomic<bool> g_stop{false};
// Set by the signal thread once its close() has returned; main waits for it so
// the runtime (and its poller) outlives that close.
std::atomic<bool> g_stop_done{false};

void serve(goro::net::Conn conn) {
  std::array<std::byte, 16 * 1024> buf;
  for (;;) {
    auto n = conn.read(buf);
    if (!n || *n == 0) return;
    if (!conn.write(std::span<const std::byte>(buf.data(), *n))) return;
  }
}

void stop_listener() {
  if (goro::net::Listener* ln = g_listener.exchange(nullptr)) (void)ln->close();
}

int usage() {
  fmt::print(stderr, "usage: goro-echo [--addr HOST:PORT]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string addr = "127.0.0.1:9000";
  static const option kOptions[] = {{"addr", required_argument, nullptr, 'a'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  for (int c; (c = getopt_long(argc, argv, "a:h", kOptions, nullptr)) != -1;) {
    if (c == 'a') {
      addr = optarg;
    } else {
      return usage();
    }
  }
  if (optind != argc) return usage();

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::thread signal_thread([&stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    g_stop.store(true);
    stop_listener();
    g_stop_done.store(true);
  });

  std::optional<goro::net::Listener> listener;  // outlives the runtime: see stop_listener
  const int status = goro::run([&]() -> int {
    auto ln = goro::net::listen("tcp", addr);
    if (!ln) {
      fmt::print(stderr, "goro-echo: listen {}: {}\n", addr, ln.error().message());
      return 1;
    }
    listener.emplace(std::move(*ln));
    fmt::print("{}\n", listener->addr().to_string());
    std::fflush(stdout);
    g_listener.store(&*listener);
    if (g_stop.load()) stop_listener();
    for (;;) {
      auto conn = listener->accept();
      if (!conn) {
        if (conn.error() == goro::errc::closed) {
          while (g_stop.load() && !g_stop_done.load())
            goro::sleep_for(std::chrono::milliseconds(1));
          return 0;
        }
        fmt::print(stderr, "goro-echo: accept: {}\n", conn.error().message());
        return 1;
      }
      goro::go([c = std::move(*conn)]() mutable { serve(std::move(c)); });
    }
  });
  if (!g_stop.load()) pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  return status;
}
