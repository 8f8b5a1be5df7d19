// goro::fs::sendfile from a File to a net::Conn over loopback: 1 byte,
// 10 MiB (the socket buffer fills, so the sender parks on writability),
// offset + count ranges, a file that ends early, closed ends.
#include <gtest/gtest.h>

#include <string>

#include "goro/fs.hpp"
#include "goro/net.hpp"
#include "goro/sync.hpp"
#include "tests/fs/fs_test_util.hpp"

namespace fs = goro::fs;
using goro_test::pattern;
using goro_test::run_goro;
using goro_test::ScratchDir;

namespace {

// Serves one connection with sendfile(file, offset, count), closes it, and
// returns what a client read until end of stream; `sent` gets the result.
std::string transfer(const fs::Path& path, std::uint64_t offset, std::size_t count,
                     goro::Result<std::size_t>& sent) {
  auto ln = goro::net::listen("tcp", "127.0.0.1:0");
  EXPECT_TRUE(ln);
  if (!ln) return {};
  goro::WaitGroup wg;
  wg.add(1);
  goro::go([&] {
    auto c = ln->accept();
    EXPECT_TRUE(c);
    auto f = fs::File::open(path);
    EXPECT_TRUE(f);
    if (c && f) {
      sent = fs::sendfile(*c, *f, offset, count);
      (void)c->close();
    }
    wg.done();
  });
  auto c = goro::net::dial("tcp", ln->addr().to_string());
  EXPECT_TRUE(c);
  std::string got;
  if (c) {
    std::string buf(256 * 1024, '\0');
    for (;;) {
      auto n = c->read(std::span<char>(buf));
      if (!n || *n == 0) break;
      got.append(buf.data(), *n);
      // Read slowly at first so the sender really fills the socket buffer.
      if (got.size() < (1u << 20)) goro::sleep_for(std::chrono::microseconds(200));
    }
  }
  wg.wait();
  return got;
}

class FsSendfile : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs::write_file(dir_ / "data", data_)); }
  fs::Path path() const { return dir_ / "data"; }

  ScratchDir dir_;
  const std::string data_ = pattern(10 * 1024 * 1024, 3);  // 10 MiB
};

TEST_F(FsSendfile, OneByte) {
  run_goro([&] {
    goro::Result<std::size_t> sent = goro::errc::closed;
    EXPECT_EQ(transfer(path(), 0, 1, sent), data_.substr(0, 1));
    ASSERT_TRUE(sent) << sent.error().message();
    EXPECT_EQ(*sent, 1u);
  });
}

TEST_F(FsSendfile, TenMebibytes) {
  run_goro([&] {
    goro::Result<std::size_t> sent = goro::errc::closed;
    const std::string got = transfer(path(), 0, data_.size(), sent);
    ASSERT_TRUE(sent) << sent.error().message();
    EXPECT_EQ(*sent, data_.size());
    EXPECT_EQ(got.size(), data_.size());
    EXPECT_TRUE(got == data_);
  });
}

TEST_F(FsSendfile, OffsetAndCountRanges) {
  run_goro([&] {
    const std::pair<std::uint64_t, std::size_t> ranges[] = {
        {1, 1}, {4095, 2}, {1000000, 3000000}, {data_.size() - 10, 10}, {12345, 0},
    };
    for (auto [off, count] : ranges) {
      goro::Result<std::size_t> sent = goro::errc::closed;
      const std::string got = transfer(path(), off, count, sent);
      ASSERT_TRUE(sent) << off << "+" << count << ": " << sent.error().message();
      EXPECT_EQ(*sent, count);
      EXPECT_TRUE(got == data_.substr(off, count)) << off << "+" << count;
    }
  });
}

TEST_F(FsSendfile, FileEndingEarlyIsEof) {
  run_goro([&] {
    goro::Result<std::size_t> sent = 0;
    const std::string got = transfer(path(), data_.size() - 5, 100, sent);
    EXPECT_EQ(sent.error(), goro::errc::eof);
    EXPECT_EQ(got, data_.substr(data_.size() - 5));  // what there was got sent
  });
}

TEST_F(FsSendfile, ClosedEnds) {
  run_goro([&] {
    auto f = fs::File::open(path());
    ASSERT_TRUE(f);
    goro::net::Conn none;
    EXPECT_EQ(fs::sendfile(none, *f, 0, 1).error(), goro::errc::closed);

    auto ln = goro::net::listen("tcp", "127.0.0.1:0");
    ASSERT_TRUE(ln);
    auto c = goro::net::dial("tcp", ln->addr().to_string());
    ASSERT_TRUE(c);
    auto peer = ln->accept();
    ASSERT_TRUE(peer);
    fs::File closed;
    EXPECT_EQ(fs::sendfile(*c, closed, 0, 1).error(), goro::errc::closed);
    ASSERT_TRUE(c->close());
    EXPECT_EQ(fs::sendfile(*c, *f, 0, 1).error(), goro::errc::closed);
  });
}

TEST_F(FsSendfile, WriteDeadlineApplies) {
  run_goro([&] {
    auto ln = goro::net::listen("tcp", "127.0.0.1:0");
    ASSERT_TRUE(ln);
    auto c = goro::net::dial("tcp", ln->addr().to_string());
    ASSERT_TRUE(c);
    auto peer = ln->accept();  // never reads: the buffers fill up
    ASSERT_TRUE(peer);
    auto f = fs::File::open(path());
    ASSERT_TRUE(f);
    ASSERT_TRUE(peer->set_write_deadline(std::chrono::milliseconds(100)));
    // Loopback buffers can hold several MiB: send until they are full.
    goro::Result<std::size_t> sent = 0;
    for (int i = 0; i < 50 && sent; ++i)
      sent = fs::sendfile(*peer, *f, 0, data_.size());
    EXPECT_EQ(sent.error(), goro::errc::timeout);
  });
}

}  // namespace
