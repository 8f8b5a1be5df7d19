// goro::net over loopback: echo round trips, partial I/O, half-close, reset,
// deadlines, close while parked, Unix sockets, dial. Every test runs the
// runtime with 4 Ps (more than the 2 cores here) and checks that no fd leaks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "framework/net/netfd.hpp"
#include "goro/detail/park.hpp"
#include "goro/goro.hpp"
#include "goro/net.hpp"
#include "goro/sync.hpp"
#include "tests/net/net_test_util.hpp"

using namespace std::chrono_literals;
using goro::net::Conn;
using goro::net::Listener;

namespace {

constexpr goro::Options kOpts{.maxprocs = 4};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Echo server goroutines: each accepted conn echoes until EOF, then closes.
void serve_echo(Listener& ln, goro::WaitGroup& wg) {
  wg.add(1);
  goro::go([&ln, &wg] {
    for (;;) {
      auto c = ln.accept();
      if (!c) break;
      wg.add(1);
      goro::go([c = std::move(*c), &wg]() mutable {
        std::vector<std::byte> buf(64 * 1024);
        for (;;) {
          auto n = c.read(buf);
          if (!n || *n == 0) break;
          if (!c.write(std::span<const std::byte>(buf.data(), *n))) break;
        }
        (void)c.close();
        wg.done();
      });
    }
    wg.done();
  });
}

// Runs `body(ln)` with an echo server on 127.0.0.1:0, then checks fds.
template <class F>
void with_echo_server(F body, const char* network = "tcp",
                      const std::string& addr = "127.0.0.1:0") {
  const int fds_before = goro_test::count_fds();
  goro::run(
      [&] {
        auto ln = goro::net::listen(network, addr);
        ASSERT_TRUE(ln) << ln.error().message();
        goro::WaitGroup wg;
        serve_echo(*ln, wg);
        body(*ln);
        (void)ln->close();
        wg.wait();
      },
      kOpts);
  EXPECT_EQ(goro_test::count_fds(), fds_before) << "fd leak";
}

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
  return v;
}

TEST(NetConn, EchoRoundTripsOneByteTo16MiB) {
  with_echo_server([](Listener& ln) {
    auto c = goro::net::dial("tcp", ln.addr().to_string());
    ASSERT_TRUE(c) << c.error().message();
    for (std::size_t size : {std::size_t{1}, std::size_t{63}, std::size_t{4096}, std::size_t{65537},
                             std::size_t{1} << 20, std::size_t{16} << 20}) {
      auto out = pattern(size, static_cast<unsigned>(size));
      std::vector<std::byte> in(size);
      goro::WaitGroup wg;
      wg.add(1);
      goro::go([&] {  // the writer: 16 MiB does not fit the socket buffers
        auto w = c->write(out);
        EXPECT_TRUE(w) << w.error().message();
        wg.done();
      });
      auto r = c->read_full(in);
      ASSERT_TRUE(r) << r.error().message();
      wg.wait();
      ASSERT_EQ(in, out) << "size " << size;
    }
  });
}

TEST(NetConn, PartialReadsAndWritev) {
  with_echo_server([](Listener& ln) {
    auto c = goro::net::dial("tcp4", ln.addr().to_string(), 1s);
    ASSERT_TRUE(c);
    std::string a = "hello, ", b = "partial ", d = "world";
    iovec iov[3] = {{a.data(), a.size()}, {b.data(), b.size()}, {d.data(), d.size()}};
    auto w = c->writev(iov);
    ASSERT_TRUE(w);
    EXPECT_EQ(*w, a.size() + b.size() + d.size());
    std::string got;
    char small[3];
    while (got.size() < *w) {
      auto n = c->read(std::span<char>(small));
      ASSERT_TRUE(n);
      ASSERT_GT(*n, 0u);
      ASSERT_LE(*n, sizeof small);
      got.append(small, *n);
    }
    EXPECT_EQ(got, "hello, partial world");
  });
}

TEST(NetConn, HalfCloseDeliversEofAfterData) {
  with_echo_server([](Listener& ln) {
    auto c = goro::net::dial("tcp", ln.addr().to_string());
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->write("last words"));
    ASSERT_TRUE(c->close_write());
    EXPECT_FALSE(c->write("more")) << "writing after close_write must fail";
    std::string got;
    char buf[64];
    for (;;) {
      auto n = c->read(std::span<char>(buf));
      ASSERT_TRUE(n) << n.error().message();
      if (*n == 0) break;  // the server echoed, saw our EOF and closed
      got.append(buf, *n);
    }
    EXPECT_EQ(got, "last words");
  });
}

TEST(NetConn, PeerResetIsReportedNotFatal) {
  const int fds_before = goro_test::count_fds();
  goro::run(
      [] {
        auto ln = goro::net::listen("tcp", "127.0.0.1:0");
        ASSERT_TRUE(ln);
        goro::WaitGroup wg;
        wg.add(1);
        goro::go([&] {
          auto s = ln->accept();
          ASSERT_TRUE(s);
          char buf[8];
          (void)s->read(std::span<char>(buf));  // wait for the client's byte
          linger lg{1, 0};                      // close with RST
          setsockopt(s->native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
          (void)s->close();
          wg.done();
        });
        auto c = goro::net::dial("tcp", ln->addr().to_string());
        ASSERT_TRUE(c);
        ASSERT_TRUE(c->write("x"));
        char buf[8];
        auto n = c->read(std::span<char>(buf));  // parks until the RST
        ASSERT_FALSE(n);
        EXPECT_EQ(n.error(), std::errc::connection_reset) << n.error().message();
        wg.wait();
      },
      kOpts);
  EXPECT_EQ(goro_test::count_fds(), fds_before);
}

TEST(NetConn, AddressesAreKeptPastAReset) {
  // The accepted side's remote address is accept(2)'s, the dialer's is the
  // address it dialed: both still read after the peer reset the connection
  // (getpeername(2) fails then; an access log line must not lose it).
  goro::run(
      [] {
        auto ln = goro::net::listen("tcp", "127.0.0.1:0");
        ASSERT_TRUE(ln);
        auto c = goro::net::dial("tcp", ln->addr().to_string());
        ASSERT_TRUE(c);
        auto s = ln->accept();
        ASSERT_TRUE(s);
        EXPECT_EQ(s->remote_addr().to_string(), c->local_addr().to_string());
        EXPECT_EQ(c->remote_addr().to_string(), ln->addr().to_string());
        linger lg{1, 0};
        setsockopt(c->native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        const std::string client = c->local_addr().to_string();
        (void)c->close();
        char buf[8];
        auto n = s->read(std::span<char>(buf));  // the RST
        EXPECT_FALSE(n);
        EXPECT_EQ(s->remote_addr().to_string(), client);
      },
      kOpts);
}

// A connection to a server goroutine that accepts and then only waits.
template <class F>
void with_silent_peer(F body) {
  const int fds_before = goro_test::count_fds();
  goro::run(
      [&] {
        auto ln = goro::net::listen("tcp", "127.0.0.1:0");
        ASSERT_TRUE(ln);
        auto c = goro::net::dial("tcp", ln->addr().to_string());
        ASSERT_TRUE(c);
        auto s = ln->accept();
        ASSERT_TRUE(s);
        body(*c, *s);
      },
      kOpts);
  EXPECT_EQ(goro_test::count_fds(), fds_before);
}

// Deadlines never fire early (the lower bounds); the upper bounds only tell a
// deadline that fired from one that did not, with room for a loaded machine
// (four busy loops on two cores stall a thread for tens of milliseconds).
TEST(NetDeadline, ReadTimesOutAfter50ms) {
  with_silent_peer([](Conn& c, Conn&) {
    const auto t0 = std::chrono::steady_clock::now();  // before: the deadline counts from here
    ASSERT_TRUE(c.set_read_deadline(50ms));
    char buf[8];
    auto n = c.read(std::span<char>(buf));
    const double ms = ms_since(t0);
    ASSERT_FALSE(n);
    EXPECT_EQ(n.error(), goro::errc::timeout);
    EXPECT_EQ(n.error(), std::errc::timed_out);
    EXPECT_GE(ms, 50.0);
    EXPECT_LE(ms, 2000.0);
    // Still expired: fails at once. Cleared: works again.
    EXPECT_EQ(c.read(std::span<char>(buf)).error(), goro::errc::timeout);
    ASSERT_TRUE(c.set_read_deadline(goro::net::Clock::time_point{}));
  });
}

TEST(NetDeadline, MovingTheDeadlineWhileParkedTakesEffect) {
  with_silent_peer([](Conn& c, Conn&) {
    char buf[8];
    // Each helper reports when its change was in place; the reader waits for
    // it, so no helper outlives the connection.
    goro::Chan<double> changed_at(1);
    // Shortened: 10 s -> 50 ms from 20 ms in. t0 is taken before the helper
    // exists, so the read cannot end before 20 + 50 ms however late the
    // threads run.
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.set_read_deadline(10s));
    goro::go([&c, changed_at, t0] {
      goro::sleep_for(20ms);
      (void)c.set_read_deadline(50ms);
      changed_at.send(ms_since(t0));
    });
    auto n = c.read(std::span<char>(buf));
    double ms = ms_since(t0);
    (void)changed_at.recv();
    EXPECT_EQ(n.error(), goro::errc::timeout);
    EXPECT_GE(ms, 65.0);
    EXPECT_LE(ms, 5000.0);  // the old deadline was 10 s

    // Extended: 500 ms -> 1.5 s from 20 ms in. Only an extension made before
    // the old deadline can be seen; on a machine so loaded that the helper
    // ran later than that, the read rightly ended at 500 ms and there is
    // nothing to check.
    t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.set_read_deadline(500ms));
    goro::go([&c, changed_at, t0] {
      goro::sleep_for(20ms);
      (void)c.set_read_deadline(1500ms);
      changed_at.send(ms_since(t0));
    });
    n = c.read(std::span<char>(buf));
    ms = ms_since(t0);
    const double extended_at = changed_at.recv().value_or(1e9);
    EXPECT_EQ(n.error(), goro::errc::timeout);
    if (extended_at < 450.0) {
      EXPECT_GE(ms, 1000.0) << "extended at " << extended_at << " ms";
    } else {
      std::fprintf(stderr, "extension at %.0f ms came after the old deadline: not checked\n",
                   extended_at);
    }
    EXPECT_LE(ms, 10000.0);
  });
}

// Deadlines moved later while their timer is armed are only recorded
// (netpoll/poll_desc.cpp, "Moving a deadline later"): the timer fires at
// the old time and re-arms for the new one. Whatever the path, a deadline
// never fires before its last value, and always fires.
TEST(NetDeadline, ManyExtensionsFireAtTheLastValue) {
  with_silent_peer([](Conn& c, Conn&) {
    char buf[8];
    goro::Chan<double> last_at(1);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.set_read_deadline(60ms));
    // 20 extensions, each to 60 ms from its own now, every 10 ms: the first
    // timer (at 60 ms) fires long before the deadline stops moving.
    goro::go([&c, last_at, t0] {
      double at = 0;
      for (int i = 0; i < 20; ++i) {
        goro::sleep_for(10ms);
        at = ms_since(t0);
        (void)c.set_read_deadline(60ms);
      }
      last_at.send(at);
    });
    auto n = c.read(std::span<char>(buf));
    const double ms = ms_since(t0);
    const double last = last_at.recv().value_or(0);
    ASSERT_FALSE(n);
    EXPECT_EQ(n.error(), goro::errc::timeout);
    // The extensions came every 10 ms, each 60 ms ahead, so the read can
    // only have timed out after the last one plus 60 ms ... unless the
    // machine stalled the extender for more than 60 ms between two of them,
    // when an earlier value rightly expired first.
    if (ms < last + 60.0) {
      EXPECT_GE(ms, 60.0);
      std::fprintf(stderr,
                   "timed out at %.0f ms, before the last extension at %.0f ms: the "
                   "extender stalled (a loaded machine)\n",
                   ms, last);
    }
    EXPECT_LE(ms, last + 5000.0);
    // Expired: stays so until moved.
    EXPECT_EQ(c.read(std::span<char>(buf)).error(), goro::errc::timeout);
    ASSERT_TRUE(c.set_read_deadline(goro::net::Clock::time_point{}));
  });
}

TEST(NetDeadline, ExtendedThenShortenedAndPassedWhileNobodyWaits) {
  with_silent_peer([](Conn& c, Conn& s) {
    char buf[8];
    // Extended (lazily) from 50 ms to 10 s, then shortened to 80 ms: the
    // short one wins.
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.set_read_deadline(50ms));
    ASSERT_TRUE(c.set_read_deadline(10s));
    ASSERT_TRUE(c.set_read_deadline(80ms));
    auto n = c.read(std::span<char>(buf));
    double ms = ms_since(t0);
    EXPECT_EQ(n.error(), goro::errc::timeout);
    EXPECT_GE(ms, 80.0);
    EXPECT_LE(ms, 5000.0);
    // Armed for 30 ms, moved to 100 ms, nobody reading: the 30 ms timer
    // fires with nobody to re-arm; the deadline still passes at 100 ms for
    // the next read, which fails at once.
    ASSERT_TRUE(c.set_read_deadline(goro::net::Clock::time_point{}));
    t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.set_read_deadline(30ms));
    ASSERT_TRUE(c.set_read_deadline(100ms));
    goro::sleep_for(60ms);  // past the first timer, before the deadline
    ASSERT_TRUE(s.write("x"));
    n = c.read(std::span<char>(buf));  // data, within the moved deadline
    if (ms_since(t0) < 95.0) {
      ASSERT_TRUE(n) << n.error().message();
      EXPECT_EQ(*n, 1u);
    }
    goro::sleep_for(150ms);  // now past it, nobody waiting
    ASSERT_TRUE(s.write("y"));
    goro::sleep_for(10ms);
    EXPECT_EQ(c.read(std::span<char>(buf)).error(), goro::errc::timeout);  // data or not
    ASSERT_TRUE(c.set_read_deadline(goro::net::Clock::time_point{}));
    n = c.read(std::span<char>(buf));
    ASSERT_TRUE(n);
  });
}

// A deadline set to the value it has is a no-op that takes no reference on
// the socket (netpoll/poll_desc.cpp "Setting a deadline again"; the HTTP
// server's keep-alive requests do it all the time). It must still fire at
// that value, whether the timer is armed for it or for an earlier value it
// was extended from; set again once expired, it fails the next read at
// once; and on a closed connection it still reports the close.
TEST(NetDeadline, TheSameDeadlineSetAgainKeepsItsTime) {
  with_silent_peer([](Conn& c, Conn&) {
    char buf[8];
    auto t0 = std::chrono::steady_clock::now();
    const auto at = t0 + 80ms;
    ASSERT_TRUE(c.set_read_deadline(at));
    ASSERT_TRUE(c.set_read_deadline(at));
    goro::Chan<int> done(1);
    goro::go([&c, at, done] {  // again and again while the reader is parked
      for (int i = 0; i < 5; ++i) {
        goro::sleep_for(10ms);
        (void)c.set_read_deadline(at);
      }
      done.send(0);
    });
    auto n = c.read(std::span<char>(buf));
    double ms = ms_since(t0);
    (void)done.recv();
    EXPECT_EQ(n.error(), goro::errc::timeout);
    EXPECT_GE(ms, 80.0);
    EXPECT_LE(ms, 5000.0);
    // Expired, then set to the same (past) time again: fails at once.
    ASSERT_TRUE(c.set_read_deadline(at));
    t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(c.read(std::span<char>(buf)).error(), goro::errc::timeout);
    EXPECT_LE(ms_since(t0), 2000.0);
    // Extended lazily (the timer stays armed for 30 ms), then the extended
    // value again: the read lasts until that value, not the timer's.
    ASSERT_TRUE(c.set_read_deadline(goro::net::Clock::time_point{}));
    t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.set_read_deadline(t0 + 30ms));
    ASSERT_TRUE(c.set_read_deadline(t0 + 150ms));
    ASSERT_TRUE(c.set_read_deadline(t0 + 150ms));
    n = c.read(std::span<char>(buf));
    ms = ms_since(t0);
    EXPECT_EQ(n.error(), goro::errc::timeout);
    EXPECT_GE(ms, 150.0);
    EXPECT_LE(ms, 5000.0);
    // Closed: the same value reports the close.
    const auto later = std::chrono::steady_clock::now() + 10s;
    ASSERT_TRUE(c.set_read_deadline(later));
    ASSERT_TRUE(c.close());
    EXPECT_EQ(c.set_read_deadline(later).error(), goro::errc::closed);
  });
}

// A socket kept open into the next goro::run keeps its read deadline: set
// in the first run (its timer armed there), then in the second either left
// alone or set again to the same time. The second run's poller never
// reports this socket (netpoll.cpp), so only the deadline can end the read.
// Before netpoll's "A new goro::run" both reads trusted the first run's
// timer, gone with its heap, and waited until the watchdog closed them.
TEST(NetDeadline, ADeadlineSetInAnEarlierRunStillFires) {
  std::optional<Conn> kept[2];  // kept[0]: left alone; kept[1]: set again
  std::optional<Conn> peers[2];
  goro::net::Clock::time_point at;
  std::chrono::steady_clock::time_point t0;
  goro::run(
      [&] {
        auto ln = goro::net::listen("tcp", "127.0.0.1:0");
        ASSERT_TRUE(ln);
        for (int i = 0; i < 2; ++i) {
          auto c = goro::net::dial("tcp", ln->addr().to_string());
          ASSERT_TRUE(c);
          auto s = ln->accept();
          ASSERT_TRUE(s);
          kept[i].emplace(std::move(*c));
          peers[i].emplace(std::move(*s));
        }
        t0 = std::chrono::steady_clock::now();
        at = goro::net::Clock::now() + 300ms;
        for (auto& c : kept)
          ASSERT_TRUE(c->set_read_deadline(at));
      },
      kOpts);
  ASSERT_TRUE(kept[0] && kept[1]);
  std::error_code got[2];
  double ms[2] = {0, 0};
  goro::run(
      [&] {
        ASSERT_TRUE(kept[1]->set_read_deadline(at));
        goro::WaitGroup wg;
        std::atomic<int> finished{0};
        for (int i = 0; i < 2; ++i) {
          wg.add(1);
          goro::go([&, i] {
            char buf[8];
            auto n = kept[i]->read(std::span<char>(buf));
            ms[i] = ms_since(t0);
            got[i] = n ? std::error_code{} : n.error();
            finished.fetch_add(1);
            wg.done();
          });
        }
        // The watchdog: a read still waiting after 5 s is ended by a close.
        for (int i = 0; i < 100 && finished.load() < 2; ++i)
          goro::sleep_for(50ms);
        if (finished.load() < 2) {
          for (auto& c : kept)
            (void)c->close();
        }
        wg.wait();
        for (auto& c : kept)
          (void)c->close();
        for (auto& c : peers)
          (void)c->close();
      },
      kOpts);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(got[i], goro::errc::timeout) << "read " << i << ": " << got[i].message();
    EXPECT_GE(ms[i], 300.0) << "read " << i;  // never early
  }
}

TEST(NetDeadline, PastDeadlineFailsImmediatelyEvenWithDataReady) {
  with_silent_peer([](Conn& c, Conn& s) {
    ASSERT_TRUE(s.write("data"));
    goro::sleep_for(10ms);
    ASSERT_TRUE(c.set_deadline(goro::net::Clock::now() - 1s));
    char buf[8];
    EXPECT_EQ(c.read(std::span<char>(buf)).error(), goro::errc::timeout);
    EXPECT_EQ(c.write("x").error(), goro::errc::timeout);
    ASSERT_TRUE(c.set_deadline(goro::net::Clock::time_point{}));
    auto n = c.read(std::span<char>(buf));
    ASSERT_TRUE(n);
    EXPECT_EQ(std::string(buf, *n), "data");
  });
}

// NetFd "Held references": a goroutine's one Ref across many operations.
// Under it they read, write and wait as the plain ones do; a close() from
// another goroutine still wins (the parked read wakes with the close, a
// write after it fails), and the descriptor number stays open, not reused,
// until the hold goes, then closes (what the plain operations' own Refs
// guarantee one operation at a time).
TEST(NetFdHeld, OperationsUnderAHeldRefSeeACloseAndKeepTheFdUntilItGoes) {
  with_silent_peer([](Conn& c, Conn& s) {
    goro::net::NetFd* fd = goro::detail::NetConnAccess::netfd(c);
    ASSERT_NE(fd, nullptr);
    const int sysfd = fd->sysfd();
    std::optional<goro::net::NetFd::Ref> hold;
    hold.emplace(fd);
    ASSERT_TRUE(hold->ok());
    char buf[16];
    ASSERT_TRUE(s.write("ping"));
    auto n = fd->read(buf, sizeof buf, *hold);
    ASSERT_TRUE(n);
    EXPECT_EQ(std::string(buf, *n), "ping");
    ASSERT_TRUE(fd->write_all("pong", 4, *hold));
    n = s.read(std::span<char>(buf));
    ASSERT_TRUE(n);
    EXPECT_EQ(std::string(buf, *n), "pong");
    // A deadline set under the hold bounds the next read (set, set again
    // unchanged, moved earlier), and a cleared one no longer does.
    const std::int64_t soon = goro::detail::nanotime() + 30'000'000;
    ASSERT_TRUE(fd->set_deadline(soon + 1'000'000'000, 1, *hold));
    ASSERT_TRUE(fd->set_deadline(soon + 1'000'000'000, 1, *hold));
    ASSERT_TRUE(fd->set_deadline(soon, 1, *hold));
    EXPECT_EQ(fd->read(buf, sizeof buf, *hold).error(), goro::errc::timeout);
    EXPECT_GE(goro::detail::nanotime(), soon) << "timed out before its deadline";
    ASSERT_TRUE(fd->set_deadline(0, 1, *hold));
    // Drained: the next read under the hold parks until the close.
    goro::Chan<int> closed(1);
    goro::go([&c, closed] {
      goro::sleep_for(20ms);
      EXPECT_TRUE(c.close());
      closed.send(0);
    });
    n = fd->read(buf, sizeof buf, *hold);
    EXPECT_EQ(n.error(), goro::errc::closed);
    (void)closed.recv();
    EXPECT_EQ(fd->write_all("x", 1, *hold).error(), goro::errc::closed);
    EXPECT_EQ(fd->set_deadline(0, 2, *hold).error(), goro::errc::closed);
    EXPECT_EQ(c.read(std::span<char>(buf)).error(), goro::errc::closed);
    // Closed, but held: the number is still this socket's.
    EXPECT_NE(::fcntl(sysfd, F_GETFD), -1) << "closed under a held Ref";
    hold.reset();
    EXPECT_EQ(::fcntl(sysfd, F_GETFD), -1) << "still open after the hold went";
    EXPECT_EQ(errno, EBADF);
  });
}

// NetFd::go_when_readable's `warm` (netpoll "Warming a batch") is a hint
// the poller only prefetches: it may name memory freed before readiness
// comes (a connection's state gone with it). Under ASan a wake-up that read
// through the name would be a heap use after free; everywhere, each parked
// goroutine still runs once, on its own bytes, many times over one socket
// (the names of each park replacing the last).
TEST(NetFdWarm, AWakeUpMayNameMemoryFreedBeforeItComes) {
  with_silent_peer([](Conn& c, Conn& s) {
    goro::net::NetFd* fd = goro::detail::NetConnAccess::netfd(c);
    ASSERT_NE(fd, nullptr);
    constexpr int kRounds = 50;
    goro::Chan<int> woke(1);
    for (int i = 0; i < kRounds; ++i) {
      auto* gone = new std::uint64_t[4]{1, 2, 3, 4};  // NOLINT(cppcoreguidelines-owning-memory)
      ASSERT_TRUE(fd->go_when_readable(
          [fd, woke, i] {
            char buf[8];
            auto n = fd->read(buf, sizeof buf);
            EXPECT_TRUE(n && *n == 1 && buf[0] == static_cast<char>('a' + i % 26));
            woke.send(i);
          },
          gone));
      delete[] gone;  // NOLINT(cppcoreguidelines-owning-memory)
      const char b = static_cast<char>('a' + i % 26);
      ASSERT_TRUE(s.write(std::string_view(&b, 1)));
      EXPECT_EQ(woke.recv(), i);
    }
  });
}

// The same names once more, as the run queue requests them one G ahead
// (scheduler/g.hpp prefetch_queued, from G::wake_hint): sixteen sockets
// made readable at once, so one epoll_wait readies all their parked
// goroutines and fifteen wait in the run queue behind the first, each
// naming memory freed before it. Under ASan a dispatch that read through
// a name would be a heap use after free (tried: a read added to
// prefetch_queued is reported here, and not by the test above, whose
// wake-ups each run alone); everywhere, each goroutine runs once, on its
// own socket's byte.
TEST(NetFdWarm, QueuedWakeUpsMayNameMemoryFreedBeforeTheyRun) {
  goro::run(
      [] {
        constexpr int kConns = 16;
        auto ln = goro::net::listen("tcp", "127.0.0.1:0");
        ASSERT_TRUE(ln);
        std::vector<Conn> cs;
        std::vector<Conn> ss;
        goro_test::connect_pairs(*ln, kConns, cs, ss);
        ASSERT_EQ(cs.size(), std::size_t{kConns});
        goro::Chan<int> woke(kConns);
        for (int round = 0; round < 20; ++round) {
          for (int i = 0; i < kConns; ++i) {
            goro::net::NetFd* fd =
                goro::detail::NetConnAccess::netfd(cs[static_cast<std::size_t>(i)]);
            ASSERT_NE(fd, nullptr);
            auto* gone =
                new std::uint64_t[4]{1, 2, 3, 4};  // NOLINT(cppcoreguidelines-owning-memory)
            ASSERT_TRUE(fd->go_when_readable(
                [fd, woke, i] {
                  char buf[8];
                  auto n = fd->read(buf, sizeof buf);
                  EXPECT_TRUE(n && *n == 1 && buf[0] == static_cast<char>('a' + i));
                  woke.send(i);
                },
                gone));
            delete[] gone;  // NOLINT(cppcoreguidelines-owning-memory)
          }
          // All bytes out before this goroutine blocks: the poller then
          // finds every socket ready in one wait.
          for (int i = 0; i < kConns; ++i) {
            const char b = static_cast<char>('a' + i);
            ASSERT_TRUE(ss[static_cast<std::size_t>(i)].write(std::string_view(&b, 1)));
          }
          std::vector<int> seen(kConns, 0);
          for (int i = 0; i < kConns; ++i) {
            const std::optional<int> w = woke.recv();
            ASSERT_TRUE(w.has_value());
            ++seen[static_cast<std::size_t>(*w)];
          }
          EXPECT_EQ(seen, std::vector<int>(kConns, 1)) << "round " << round;
        }
      },
      goro::Options{.maxprocs = 1});  // one run queue: the fifteen wait in it
}

// NetFd::await_readable (framework/http's rest without an Exchange): the
// wait a drained socket's next read would begin with, done ahead of it. A
// wait that ended in readiness consumed the edge, so the read after it gets
// the bytes even when the deadline passed in between (as a read after its
// own wait does); a wait the deadline ended leaves the timeout to the read.
TEST(NetDeadline, AwaitReadableThenReadGetsTheBytesPastTheDeadline) {
  with_silent_peer([](Conn& c, Conn& s) {
    goro::net::NetFd* fd = goro::detail::NetConnAccess::netfd(c);
    ASSERT_NE(fd, nullptr);
    char buf[16];
    ASSERT_TRUE(s.write("ping"));
    auto n = c.read(std::span<char>(buf));
    ASSERT_TRUE(n);
    EXPECT_EQ(std::string(buf, *n), "ping");
    ASSERT_TRUE(fd->read_would_park()) << "a short read drains the socket";

    // 1 s: the writer below must get there first, on a busy machine too.
    ASSERT_TRUE(c.set_read_deadline(1s));
    goro::WaitGroup wg;
    wg.add(1);
    goro::go([&] {
      goro::sleep_for(5ms);
      (void)s.write("next");
      wg.done();
    });
    fd->await_readable();
    wg.wait();
    EXPECT_FALSE(fd->read_would_park());
    goro::sleep_for(1050ms);  // the deadline passes between the wait and the read
    n = c.read(std::span<char>(buf));
    ASSERT_TRUE(n) << n.error().message();
    EXPECT_EQ(std::string(buf, *n), "next");
    // Only that one read: the next one reports the passed deadline.
    EXPECT_EQ(c.read(std::span<char>(buf)).error(), goro::errc::timeout);

    // A wait the deadline ends: the read after it times out, and the bytes
    // sent later are still there once the deadline is cleared.
    ASSERT_TRUE(c.set_read_deadline(30ms));
    ASSERT_TRUE(fd->read_would_park());
    fd->await_readable();
    EXPECT_EQ(c.read(std::span<char>(buf)).error(), goro::errc::timeout);
    ASSERT_TRUE(s.write("late"));
    ASSERT_TRUE(c.set_read_deadline(goro::net::Clock::time_point{}));
    n = c.read(std::span<char>(buf));
    ASSERT_TRUE(n);
    EXPECT_EQ(std::string(buf, *n), "late");
  });
}

TEST(NetDeadline, WriteTimesOutWhenThePeerDoesNotRead) {
  with_silent_peer([](Conn& c, Conn&) {
    ASSERT_TRUE(c.set_write_deadline(100ms));
    std::vector<std::byte> big(64 << 20);
    const auto t0 = std::chrono::steady_clock::now();
    auto w = c.write(big);
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error(), goro::errc::timeout);
    EXPECT_LE(ms_since(t0), 5000.0);
  });
}

TEST(NetClose, CloseWhileParkedWakesReaderAndAcceptor) {
  with_silent_peer([](Conn& c, Conn&) {
    goro::WaitGroup closer;  // c must outlive the closing goroutine
    closer.add(1);
    goro::go([&c, &closer] {
      goro::sleep_for(30ms);
      EXPECT_TRUE(c.close());
      closer.done();
    });
    char buf[8];
    const auto t0 = std::chrono::steady_clock::now();
    auto n = c.read(std::span<char>(buf));
    EXPECT_EQ(n.error(), goro::errc::closed);
    EXPECT_LE(ms_since(t0), 5000.0);
    EXPECT_EQ(c.close().error(), goro::errc::closed);
    EXPECT_EQ(c.write("x").error(), goro::errc::closed);
    closer.wait();
  });
  goro::run(
      [] {
        auto ln = goro::net::listen("tcp", "127.0.0.1:0");
        ASSERT_TRUE(ln);
        goro::WaitGroup closer;
        closer.add(1);
        goro::go([&] {
          goro::sleep_for(20ms);
          (void)ln->close();
          closer.done();
        });
        EXPECT_EQ(ln->accept().error(), goro::errc::closed);
        closer.wait();
      },
      kOpts);
}

TEST(NetUnix, EchoOverUnixSocket) {
  const std::string path = "/tmp/goro-net-test-" + std::to_string(getpid()) + ".sock";
  with_echo_server(
      [&](Listener& ln) {
        EXPECT_EQ(ln.addr().to_string(), path);
        auto c = goro::net::dial("unix", path);
        ASSERT_TRUE(c) << c.error().message();
        ASSERT_TRUE(c->write("over unix"));
        char buf[32];
        ASSERT_TRUE(c->read_full(std::span<char>(buf, 9)));
        EXPECT_EQ(std::string(buf, 9), "over unix");
      },
      "unix", path);
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "the socket file should be removed on close";
}

// A name that cannot be resolved here (.invalid is reserved; no network) is
// an error from getaddrinfo inside goro::blocking, not a hang or a crash.
TEST(NetDial, UnresolvableNameIsAnError) {
  goro::run([] {
    auto c = goro::net::dial("tcp", "no-such-host.invalid:80", 2s);
    ASSERT_FALSE(c);
    EXPECT_FALSE(c.error().message().empty());
  });
}

TEST(NetDial, ResolvesNamesAndReportsRefusal) {
  with_echo_server([](Listener& ln) {
    const std::string port = std::to_string(ln.addr().port());
    auto c = goro::net::dial("tcp", "localhost:" + port, 2s);  // getaddrinfo in goro::blocking
    ASSERT_TRUE(c) << c.error().message();
    ASSERT_TRUE(c->write("via name"));
    char buf[8];
    ASSERT_TRUE(c->read_full(std::span<char>(buf)));
    EXPECT_EQ(c->remote_addr().port(), ln.addr().port());
    EXPECT_NE(c->local_addr().port(), 0);
  });
  goro::run(
      [] {
        // A port nobody listens on: bind one, learn it, close it.
        auto ln = goro::net::listen("tcp4", "127.0.0.1:0");
        ASSERT_TRUE(ln);
        const std::string addr = ln->addr().to_string();
        (void)ln->close();
        auto c = goro::net::dial("tcp4", addr, 1s);
        ASSERT_FALSE(c);
        EXPECT_EQ(c.error(), std::errc::connection_refused) << c.error().message();
        EXPECT_FALSE(goro::net::dial("tcp", "no-such-host.invalid:80", 2s));
        EXPECT_FALSE(goro::net::listen("udp", ":0"));
      },
      kOpts);
}

}  // namespace
