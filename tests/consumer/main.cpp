// A small outside service, written from the README and the public headers:
// a config setting, a JSON route on goro::http served over HTTPS (the
// certificate files check.sh made with the openssl CLI), a request to
// itself over loopback through goro::tls::dial, and a goroutine fan-in.
// check.sh builds it with -Wall -Wextra -Werror against goro both through
// add_subdirectory and through an installed find_package(goro), and
// compares the last line it prints.
#include <goro/config.hpp>
#include <goro/goro.hpp>
#include <goro/http.hpp>
#include <goro/http/json.hpp>
#include <goro/net.hpp>
#include <goro/tls.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  std::string greeting = "hello";
  std::string cert, key;
  goro::config::Config cfg("consumer", "goro's outside-project check.");
  cfg.add("greeting", &greeting, "what the JSON route says");
  cfg.add("cert", &cert, "certificate PEM file (self-signed, CN localhost)");
  cfg.add("key", &key, "its key");
  if (auto exit_code = cfg.parse(argc, argv)) return *exit_code;

  return goro::run([&] {
    goro::http::Router r;
    r.handle("GET /greet/{name}", [&](goro::http::Request& req, goro::http::ResponseWriter& w) {
      goro::http::write_json(w, {{"greeting", greeting}, {"name", req.path_value("name")}});
    });
    goro::http::ServerOptions opts;
    opts.addr = "127.0.0.1:0";
    opts.handle_signals = false;
    opts.tls = goro::tls::Config{.certificates = {{.cert_file = cert, .key_file = key}}};
    goro::http::Server srv(opts, r);
    if (!srv.listen()) return 1;
    goro::WaitGroup served;
    served.go([&] { (void)srv.serve(); });

    std::string reply;
    // The certificate is its own CA; the name verified is "localhost".
    auto client = goro::tls::Context::client({.ca_file = cert});
    if (!client) return 1;
    const std::string port = srv.addr().substr(srv.addr().rfind(':'));
    if (auto c = goro::tls::dial("tcp", "localhost" + port, client.context)) {
      (void)c->write("GET /greet/gopher HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      char buf[4096];
      for (;;) {
        auto n = c->read(std::span<char>(buf));
        if (!n || *n == 0) break;
        reply.append(buf, *n);
      }
    }
    srv.shutdown();
    served.wait();
    const std::string body = reply.substr(reply.find("\r\n\r\n") + 4);

    goro::Chan<int> results(0);
    for (int i = 1; i <= 10; ++i)
      goro::go([results, i]() mutable { results.send(i * i); });
    int sum = 0;
    for (int i = 0; i < 10; ++i)
      sum += *results.recv();
    std::printf("%s\nconsumer sum=%d\n", body.c_str(), sum);
    return sum == 385 && body.find("\"gopher\"") != std::string::npos ? 0 : 1;
  });
}
