// File::open_beneath: inside the directory everything opens (symlinks that
// stay inside included); every way out is refused with EXDEV. Both
// mechanisms: openat2 RESOLVE_BENEATH and the realpath fallback.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "framework/fs/beneath.hpp"
#include "goro/fs.hpp"
#include "tests/fs/fs_test_util.hpp"

namespace {

namespace fs = goro::fs;
using goro_test::run_goro;
using goro_test::ScratchDir;

class OpenBeneath : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override { fs::detail::force_open_beneath_fallback(GetParam()); }
  void TearDown() override { fs::detail::force_open_beneath_fallback(false); }

  // <scratch>/root/{a.txt, sub/b.txt, sub/up -> ../a.txt, sub/abs -> <root>/a.txt,
  //                 out -> ../outside.txt, abs_out -> <scratch>/outside.txt,
  //                 outdir -> .., proc -> /proc/self/root}
  // <scratch>/outside.txt
  void make_tree() {
    namespace stdfs = std::filesystem;
    root_ = scratch_.path() / "root";
    stdfs::create_directories(root_ / "sub");
    std::ofstream(root_ / "a.txt") << "inside";
    std::ofstream(root_ / "sub" / "b.txt") << "deeper";
    std::ofstream(scratch_.path() / "outside.txt") << "secret";
    stdfs::create_symlink("../a.txt", root_ / "sub" / "up");
    stdfs::create_symlink(root_ / "a.txt", root_ / "sub" / "abs");
    stdfs::create_symlink("../outside.txt", root_ / "out");
    stdfs::create_symlink(scratch_.path() / "outside.txt", root_ / "abs_out");
    stdfs::create_symlink("..", root_ / "outdir");
    stdfs::create_symlink("/proc/self/root", root_ / "proc");
  }

  static std::string content(fs::File& f) {
    char buf[64];
    auto n = f.pread(std::span<char>(buf), 0);
    return n ? std::string(buf, *n) : "<error>";
  }

  ScratchDir scratch_;
  std::filesystem::path root_;
};

TEST_P(OpenBeneath, InsideOpensAndEscapesAreRefused) {
  make_tree();
  run_goro([&] {
    auto dir = fs::File::open(root_, O_PATH | O_DIRECTORY);
    ASSERT_TRUE(dir);
    for (auto [path, want] : std::vector<std::pair<const char*, const char*>>{
             {"a.txt", "inside"},
             {"sub/b.txt", "deeper"},
             {"sub/../a.txt", "inside"},
             {"./sub/./b.txt", "deeper"},
             {"sub/up", "inside"},
         }) {
      SCOPED_TRACE(path);
      auto f = fs::File::open_beneath(*dir, path);
      ASSERT_TRUE(f) << f.error().message();
      EXPECT_EQ(content(*f), want);
    }
    for (const char* path : {"../outside.txt", "sub/../../outside.txt", "out", "abs_out",
                             "outdir/outside.txt", "/etc/hostname"}) {
      SCOPED_TRACE(path);
      auto f = fs::File::open_beneath(*dir, path);
      ASSERT_FALSE(f);
      EXPECT_EQ(f.error(), std::errc::cross_device_link) << f.error().message();
    }
    // An absolute symlink back into the root is an escape by its letter: the
    // kernel refuses it (RESOLVE_BENEATH never starts over from "/"); the
    // fallback, which sees only where it lands, lets it through.
    auto abs_in = fs::File::open_beneath(*dir, "sub/abs");
    if (GetParam()) {
      ASSERT_TRUE(abs_in);
      EXPECT_EQ(content(*abs_in), "inside");
    } else {
      EXPECT_FALSE(abs_in);
    }
    // /proc/self/root is a magic link to "/": refused either way.
    EXPECT_FALSE(fs::File::open_beneath(*dir, "proc/etc/hostname"));
    auto missing = fs::File::open_beneath(*dir, "nope.txt");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error(), std::errc::no_such_file_or_directory);
  });
}

TEST_P(OpenBeneath, CreateInsideOnly) {
  make_tree();
  run_goro([&] {
    auto dir = fs::File::open(root_, O_RDONLY | O_DIRECTORY);
    ASSERT_TRUE(dir);
    auto f = fs::File::open_beneath(*dir, "sub/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0600);
    ASSERT_TRUE(f) << f.error().message();
    ASSERT_TRUE(f->write("made"));
    EXPECT_TRUE(std::filesystem::exists(root_ / "sub" / "new.txt"));
    auto out = fs::File::open_beneath(*dir, "../made-outside.txt", O_WRONLY | O_CREAT, 0600);
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error(), std::errc::cross_device_link);
    EXPECT_FALSE(std::filesystem::exists(scratch_.path() / "made-outside.txt"));
    auto via_link =
        fs::File::open_beneath(*dir, "outdir/made-outside.txt", O_WRONLY | O_CREAT, 0600);
    EXPECT_FALSE(via_link);
    EXPECT_FALSE(std::filesystem::exists(scratch_.path() / "made-outside.txt"));
  });
}

TEST_P(OpenBeneath, ReadFileBeneath) {
  make_tree();
  run_goro([&] {
    auto dir = fs::File::open(root_, O_PATH | O_DIRECTORY);
    ASSERT_TRUE(dir);
    auto inside = fs::read_file_beneath(*dir, "sub/up");
    ASSERT_TRUE(inside) << inside.error().message();
    EXPECT_EQ(*inside, "inside");
    for (const char* path : {"../outside.txt", "out", "outdir/outside.txt", "/etc/hostname"}) {
      SCOPED_TRACE(path);
      auto escaped = fs::read_file_beneath(*dir, path);
      ASSERT_FALSE(escaped);
      EXPECT_EQ(escaped.error(), std::errc::cross_device_link);
    }
    auto too_big = fs::read_file_beneath(*dir, "a.txt", 3);  // "inside" is 6 bytes
    ASSERT_FALSE(too_big);
    EXPECT_EQ(too_big.error(), std::errc::file_too_large);
    auto missing = fs::read_file_beneath(*dir, "sub/none.txt");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error(), std::errc::no_such_file_or_directory);
  });
}

TEST_P(OpenBeneath, ClosedDirectory) {
  run_goro([&] {
    fs::File none;
    auto f = fs::File::open_beneath(none, "x");
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error(), goro::errc::closed);
  });
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, OpenBeneath, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& i) {
                           return i.param ? "RealpathFallback" : "Openat2";
                         });

}  // namespace
