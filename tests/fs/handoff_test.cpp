// THE handoff test (issue 6): with maxprocs 1, a goroutine blocked in a read
// of a FIFO through goro::fs holds its thread inside a SyscallScope; sysmon
// must hand the only P to another thread so that a TCP echo goroutine keeps
// answering. Without the handoff the echo would be answered only after the
// FIFO is released (the writer thread gives up after 10 s), and the test
// fails instead of hanging.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "goro/fs.hpp"
#include "goro/net.hpp"
#include "goro/sync.hpp"
#include "tests/fs/fs_test_util.hpp"

namespace fs = goro::fs;
using namespace std::chrono_literals;
using goro_test::ScratchDir;

namespace {

TEST(FsHandoff, BlockedFifoReadDoesNotStopTcpEcho) {
  ScratchDir dir;
  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);

  // The writer: a plain thread that opens the FIFO (meeting the reader's
  // open) and writes one byte only when the echo has been answered, or after
  // 10 s so that a broken handoff fails the test rather than hangs it.
  std::mutex mu;
  std::condition_variable cv;
  bool echo_answered = false;
  std::atomic<bool> fifo_released{false};
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, 10s, [&] { return echo_answered; });
    }
    fifo_released.store(true);
    if (fd >= 0) {
      (void)!::write(fd, "x", 1);
      ::close(fd);
    }
  });

  std::atomic<bool> reader_in_read{false};
  bool echo_before_release = false;
  int echoes = 0;
  std::string fifo_got;
  goro::run(
      [&] {
        goro::WaitGroup wg;
        auto ln = goro::net::listen("tcp", "127.0.0.1:0");
        ASSERT_TRUE(ln);
        wg.add(1);
        goro::go([&] {  // the echo server
          auto c = ln->accept();
          if (c) {
            char buf[64];
            for (;;) {
              auto n = c->read(std::span<char>(buf));
              if (!n || *n == 0) break;
              if (!c->write(std::string_view(buf, *n))) break;
            }
          }
          wg.done();
        });

        // Handoffs of a P in a blocking call counted from here on can only
        // come from the reader: main only sleeps, the echo server waits in
        // accept, and neither enters a SyscallScope.
        const auto syscall_handoffs_before = goro::stats().syscall_handoffs;
        wg.add(1);
        goro::go([&] {  // the blocked reader
          auto f = fs::File::open(fifo);
          if (f) {
            reader_in_read.store(true);
            char c;
            auto n = f->read(std::span<char>(&c, 1));
            if (n && *n == 1) fifo_got.assign(1, c);
          }
          wg.done();
        });

        // Let the reader block: it holds the only P's thread in open(2) and
        // then read(2); this goroutine runs again only through a handoff.
        while (!reader_in_read.load())
          goro::sleep_for(1ms);
        goro::sleep_for(50ms);
        // The reader's P moved as a P in a blocking call (SyscallScope), not
        // through the hog protocol (sysmon flags a goroutine that has not
        // reached a scheduling point for 10 ms and signals its thread), which
        // would also rescue the echo but means the fs call never entered the
        // syscall state. The count is by cause: an earlier version checked
        // that no goroutine had been flagged as a hog, and failed when the
        // OS descheduled main's thread for 10 ms while the suite ran another
        // test beside this one (sysmon measures in wall time).
        EXPECT_GT(goro::stats().syscall_handoffs, syscall_handoffs_before)
            << "the blocked reader's P was not handed off as a P in a blocking call: is the fs "
               "read inside a SyscallScope?";

        auto c = goro::net::dial("tcp", ln->addr().to_string());
        ASSERT_TRUE(c);
        for (int i = 0; i < 20; ++i) {
          const std::string msg = "ping " + std::to_string(i);
          ASSERT_TRUE(c->write(msg));
          std::string back(msg.size(), '\0');
          ASSERT_TRUE(c->read_full(std::span<char>(back)));
          EXPECT_EQ(back, msg);
          ++echoes;
        }
        echo_before_release = !fifo_released.load();
        {
          std::lock_guard<std::mutex> lock(mu);
          echo_answered = true;
        }
        cv.notify_all();
        (void)c->close();
        wg.wait();
        EXPECT_GT(goro::stats().handoffs, 0u);
      },
      goro::Options{.maxprocs = 1});
  writer.join();
  EXPECT_EQ(echoes, 20);
  EXPECT_TRUE(echo_before_release) << "the echo was answered only after the FIFO read returned";
  EXPECT_EQ(fifo_got, "x");
}

}  // namespace
