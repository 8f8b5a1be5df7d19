// SIGTERM/SIGINT -> Server::shutdown, SIGHUP -> Server::reload_tls, through a self-pipe and a
// dedicated thread (the rationale is in goro/http/server.hpp, "Signals").
#pragma once

#include <functional>
#include <memory>

namespace goro::http::detail {

class SignalWatch {
 public:
  // Installs the handlers (SIGTERM, SIGINT, and SIGHUP when `hangup`);
  // `on_signal` runs on the watch thread, once per signal (the server: the
  // first SIGTERM/SIGINT starts a graceful shutdown, a second one makes it
  // immediate; SIGHUP reloads the TLS certificate).
  explicit SignalWatch(std::function<void(int signo)> on_signal, bool hangup = false);
  // Stops the thread and restores the previous dispositions.
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  bool ok() const { return ok_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool ok_ = false;
};

}  // namespace goro::http::detail
