// goro::fs::write_file: atomic replacement (a concurrent reader only ever sees
// a whole version), the mode, and no temporary file left behind on failure.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <atomic>
#include <string>
#include <thread>

#include "goro/fs.hpp"
#include "goro/sync.hpp"
#include "tests/fs/fs_test_util.hpp"

namespace fs = goro::fs;
using goro_test::run_goro;
using goro_test::ScratchDir;

namespace {

// Version v: 256 KiB of the letter 'a' + v % 26, so a torn or partial read
// shows up as a wrong size or a mixed letter.
constexpr std::size_t kVersionSize = 256 * 1024;
std::string version(int v) {
  return std::string(kVersionSize, static_cast<char>('a' + v % 26));
}

bool is_whole_version(const std::string& s) {
  if (s.size() != kVersionSize) return false;
  return s.find_first_not_of(s[0]) == std::string::npos;
}

std::vector<std::string> names_in(const ScratchDir& dir) {
  std::vector<std::string> names;
  auto list = fs::list_dir(dir.path());
  if (list) {
    for (auto& e : *list)
      names.push_back(e.name);
  }
  return names;
}

TEST(FsWriteFile, ConcurrentReadersNeverSeeAPartialFile) {
  ScratchDir dir;
  const auto path = dir / "state";
  ASSERT_TRUE(fs::write_file(path, version(0)));
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, torn{0};
  // One reader on a plain thread (truly parallel with the writer) ...
  std::thread outside([&] {
    while (!stop.load()) {
      auto s = fs::read_file(path);
      if (!s || !is_whole_version(*s)) torn.fetch_add(1);
      reads.fetch_add(1);
    }
  });
  run_goro([&] {
    goro::WaitGroup wg;
    // ... and two reader goroutines, all through the handoff.
    for (int r = 0; r < 2; ++r) {
      wg.add(1);
      goro::go([&] {
        while (!stop.load()) {
          auto s = fs::read_file(path);
          if (!s || !is_whole_version(*s)) torn.fetch_add(1);
          reads.fetch_add(1);
          goro::yield();
        }
        wg.done();
      });
    }
    for (int v = 1; v <= 60; ++v) {
      auto w = fs::write_file(path, version(v));
      ASSERT_TRUE(w) << w.error().message();
    }
    stop.store(true);
    wg.wait();
  });
  outside.join();
  EXPECT_EQ(torn.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_GT(reads.load(), 10);
  auto last = fs::read_file(path);
  ASSERT_TRUE(last);
  EXPECT_EQ(*last, version(60));
  // Only the file itself: no temporaries left.
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"state"});
}

TEST(FsWriteFile, ModeIsExactAndNotMaskedByUmask) {
  ScratchDir dir;
  const mode_t old = ::umask(077);
  run_goro([&] {
    ASSERT_TRUE(fs::write_file(dir / "m", "x", 0644));
    auto st = fs::stat(dir / "m");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->perm(), 0644u);
    ASSERT_TRUE(fs::write_file(dir / "m", "y", 0600));  // replacing changes it
    st = fs::stat(dir / "m");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->perm(), 0600u);
  });
  ::umask(old);
}

TEST(FsWriteFile, RelativePathInCurrentDirectory) {
  ScratchDir dir;
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  ASSERT_EQ(::chdir(dir.path().c_str()), 0);
  auto w = fs::write_file("rel.txt", "relative");
  auto back = fs::read_file("rel.txt");
  ASSERT_EQ(::chdir(cwd), 0);
  ASSERT_TRUE(w) << w.error().message();
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, "relative");
}

TEST(FsWriteFile, FailedRenameRemovesTheTemporary) {
  ScratchDir dir;
  run_goro([&] {
    // The target is a non-empty directory: everything succeeds up to the
    // rename, which fails (EISDIR); the temporary must go.
    ASSERT_TRUE(fs::mkdir(dir / "target"));
    ASSERT_TRUE(fs::write_file(dir / "target" / "inside", "keep"));
    auto w = fs::write_file(dir / "target", "data");
    EXPECT_EQ(w.error(), std::errc::is_a_directory);
    EXPECT_EQ(names_in(dir), std::vector<std::string>{"target"});
    // A missing directory fails at the open, leaving nothing.
    EXPECT_EQ(fs::write_file(dir / "nodir" / "f", "x").error(),
              std::errc::no_such_file_or_directory);
    EXPECT_EQ(fs::write_file(dir.path() / "", "x").error(), std::errc::is_a_directory);
  });
}

TEST(FsWriteFile, FailedWriteRemovesTheTemporaryAndKeepsTheOld) {
  ScratchDir dir;
  ASSERT_TRUE(fs::write_file(dir / "f", "old content"));
  // RLIMIT_FSIZE makes the write fail with EFBIG (SIGXFSZ ignored) half-way.
  struct sigaction ign {
  }, old_sa{};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ign, &old_sa), 0);
  rlimit old_lim{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_lim), 0);
  rlimit lim{4096, old_lim.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  goro::Result<void> w;
  run_goro([&] { w = fs::write_file(dir / "f", std::string(100000, 'n')); });
  ::setrlimit(RLIMIT_FSIZE, &old_lim);
  ::sigaction(SIGXFSZ, &old_sa, nullptr);
  EXPECT_EQ(w.error(), std::errc::file_too_large);
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"f"});
  auto back = fs::read_file(dir / "f");
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, "old content");
}

}  // namespace
