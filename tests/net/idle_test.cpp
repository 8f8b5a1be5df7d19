// 10,000 idle connections to goro-echo cost the server < 1% of a core over
// 10 s: parked goroutines cost nothing, and nothing polls in a loop.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "goro/goro.hpp"
#include "goro/net.hpp"
#include "tests/net/net_test_util.hpp"

using namespace std::chrono_literals;

// ThreadSanitizer makes each goroutine a fiber and dies past 8,128 threads
// and fibers in one process: the TSan build holds 6,000 connections.
#if defined(GORO_TSAN)
constexpr int kConns = 6000;
#else
constexpr int kConns = 10000;
#endif

TEST(NetIdle, TenThousandIdleConnectionsCostUnderOnePercent) {
  goro_test::EchoChild echo;
  ASSERT_TRUE(echo.start(GORO_ECHO_PATH));
  goro::run(
      [&] {
        std::vector<goro::net::Conn> conns;
        conns.reserve(kConns);
        for (int i = 0; i < kConns; ++i) {
          auto c = goro::net::dial("tcp", echo.addr, 10s);
          ASSERT_TRUE(c) << i << ": " << c.error().message();
          conns.push_back(std::move(*c));
        }
        // One echo on every connection: each one has been accepted and its
        // goroutine has run before the window opens. An echo on the last
        // one alone did not show that: a connection whose handshake's last
        // ACK finds the accept queue (somaxconn) full is established at the
        // client and accepted only when the server's SYN-ACK retransmission
        // (1 s, then 2 s, 4 s later) brings the ACK again, which would fall
        // inside the window. (One CI run, with two other tests beside it,
        // measured 110 ms there; 0-20 ms otherwise, loaded or not.)
        for (auto& c : conns)
          ASSERT_TRUE(c.write("x"));
        for (int i = 0; i < kConns; ++i) {
          (void)conns[i].set_deadline(30s);
          char b;
          ASSERT_TRUE(conns[i].read_full(std::span<char>(&b, 1))) << "connection " << i;
        }
        goro::sleep_for(500ms);
        const double cpu0 = goro_test::cpu_seconds(echo.pid);
        goro::sleep_for(10s);
        const double cpu = goro_test::cpu_seconds(echo.pid) - cpu0;
        EXPECT_LT(cpu, 0.10) << "server CPU over 10 s with " << kConns
                             << " idle connections: " << cpu << " s";
        std::printf("goro-echo CPU over 10 s with %d idle connections: %.3f s\n", kConns, cpu);
      },
      goro::Options{.maxprocs = 4});
  EXPECT_EQ(echo.stop(), 0);
}
