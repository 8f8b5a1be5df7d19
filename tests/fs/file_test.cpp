// goro::fs::File and the path functions, run inside the runtime (4 Ps) so
// every call goes through the syscall handoff: round trips, offsets, errors
// as values, read_file's limit, list_dir.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "goro/fs.hpp"
#include "tests/fs/fs_test_util.hpp"

namespace fs = goro::fs;
using goro_test::pattern;
using goro_test::run_goro;
using goro_test::ScratchDir;

namespace {

TEST(FsFile, WriteThenReadSmall) {
  ScratchDir dir;
  run_goro([&] {
    auto f = fs::File::create(dir / "small");
    ASSERT_TRUE(f) << f.error().message();
    auto w = f->write("hello, goro");
    ASSERT_TRUE(w);
    EXPECT_EQ(*w, 11u);
    ASSERT_TRUE(f->close());

    auto r = fs::File::open(dir / "small");
    ASSERT_TRUE(r);
    char buf[64];
    auto n = r->read(std::span<char>(buf));
    ASSERT_TRUE(n);
    EXPECT_EQ(std::string(buf, *n), "hello, goro");
    auto eof = r->read(std::span<char>(buf));
    ASSERT_TRUE(eof);
    EXPECT_EQ(*eof, 0u);
  });
}

TEST(FsFile, LargeRoundTrip) {
  ScratchDir dir;
  const std::string data = pattern(9 * 1024 * 1024 + 123, 7);
  run_goro([&] {
    auto f = fs::File::open(dir / "large", O_WRONLY | O_CREAT | O_EXCL, 0600);
    ASSERT_TRUE(f);
    ASSERT_TRUE(f->write(data));
    ASSERT_TRUE(f->fsync());
    ASSERT_TRUE(f->fdatasync());
    auto info = f->stat();
    ASSERT_TRUE(info);
    EXPECT_EQ(info->size, data.size());
    EXPECT_TRUE(info->is_regular());
    EXPECT_EQ(info->perm(), 0600u);
    ASSERT_TRUE(f->close());

    auto back = fs::read_file(dir / "large");
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_TRUE(*back == data);
  });
}

TEST(FsFile, PreadPwriteAtOffsets) {
  ScratchDir dir;
  run_goro([&] {
    auto f = fs::File::open(dir / "offsets", O_RDWR | O_CREAT, 0644);
    ASSERT_TRUE(f);
    ASSERT_TRUE(f->pwrite("world", 6));
    ASSERT_TRUE(f->pwrite("hello ", 0));
    ASSERT_TRUE(f->pwrite("!", 1 << 20));  // a hole up to 1 MiB
    // The file offset did not move.
    auto pos = f->seek(0, SEEK_CUR);
    ASSERT_TRUE(pos);
    EXPECT_EQ(*pos, 0u);

    char buf[11];
    ASSERT_TRUE(f->pread_full(std::as_writable_bytes(std::span<char>(buf)), 0));
    EXPECT_EQ(std::string(buf, 11), "hello world");
    char mid[3];
    auto n = f->pread(std::span<char>(mid), 8);
    ASSERT_TRUE(n);
    EXPECT_EQ(std::string(mid, *n), "rld");
    char hole[4];
    ASSERT_TRUE(f->pread_full(std::as_writable_bytes(std::span<char>(hole)), 1000));
    EXPECT_EQ(std::string(hole, 4), std::string(4, '\0'));
    char last[2];
    auto tail = f->pread(std::span<char>(last), 1 << 20);
    ASSERT_TRUE(tail);
    EXPECT_EQ(std::string(last, *tail), "!");
    auto past = f->pread_full(std::as_writable_bytes(std::span<char>(last)), 1 << 20);
    EXPECT_EQ(past.error(), goro::errc::eof);

    ASSERT_TRUE(f->truncate(5));
    auto info = f->stat();
    ASSERT_TRUE(info);
    EXPECT_EQ(info->size, 5u);
  });
}

TEST(FsFile, ReadAdvancesOffsetAndSeek) {
  ScratchDir dir;
  run_goro([&] {
    ASSERT_TRUE(fs::write_file(dir / "abc", "abcdef"));
    auto f = fs::File::open(dir / "abc");
    ASSERT_TRUE(f);
    char two[2];
    ASSERT_TRUE(f->read(std::span<char>(two)));
    EXPECT_EQ(std::string(two, 2), "ab");
    ASSERT_TRUE(f->seek(4));
    auto n = f->read(std::span<char>(two));
    ASSERT_TRUE(n);
    EXPECT_EQ(std::string(two, *n), "ef");
  });
}

TEST(FsFile, ErrorsAreValues) {
  ScratchDir dir;
  run_goro([&] {
    auto missing = fs::File::open(dir / "nope");
    EXPECT_EQ(missing.error(), std::errc::no_such_file_or_directory);

    // Opening a directory for writing: EISDIR. Reading one: EISDIR too.
    auto wdir = fs::File::open(dir.path(), O_WRONLY);
    EXPECT_EQ(wdir.error(), std::errc::is_a_directory);
    auto rdir = fs::read_file(dir.path());
    EXPECT_EQ(rdir.error(), std::errc::is_a_directory);

    ASSERT_TRUE(fs::write_file(dir / "plain", "x"));
    auto under_file = fs::File::open(dir / "plain" / "child");
    EXPECT_EQ(under_file.error(), std::errc::not_a_directory);
    EXPECT_EQ(fs::list_dir(dir / "plain").error(), std::errc::not_a_directory);
    EXPECT_EQ(fs::stat(dir / "nope").error(), std::errc::no_such_file_or_directory);

    auto excl = fs::File::open(dir / "plain", O_WRONLY | O_CREAT | O_EXCL);
    EXPECT_EQ(excl.error(), std::errc::file_exists);

    // A read-only descriptor refuses writes (EBADF).
    auto ro = fs::File::open(dir / "plain");
    ASSERT_TRUE(ro);
    EXPECT_EQ(ro->write("y").error(), std::errc::bad_file_descriptor);

    // Use after close.
    ASSERT_TRUE(ro->close());
    EXPECT_EQ(ro->close().error(), goro::errc::closed);
    char b[1];
    EXPECT_EQ(ro->read(std::span<char>(b)).error(), goro::errc::closed);
    fs::File none;
    EXPECT_FALSE(none.is_open());
    EXPECT_EQ(none.stat().error(), goro::errc::closed);

    // value() on an error throws, as for every goro::Result.
    EXPECT_THROW((void)fs::stat(dir / "nope").value(), std::system_error);
  });
}

TEST(FsFile, MoveTransfersOwnership) {
  ScratchDir dir;
  run_goro([&] {
    auto f = fs::File::create(dir / "m");
    ASSERT_TRUE(f);
    fs::File a = std::move(*f);
    EXPECT_FALSE(f->is_open());
    EXPECT_TRUE(a.is_open());
    fs::File b;
    b = std::move(a);
    // NOLINTNEXTLINE(bugprone-use-after-move): the moved-from state is the point
    EXPECT_FALSE(a.is_open());
    ASSERT_TRUE(b.write("z"));
    // O_CLOEXEC is always set.
    EXPECT_NE(::fcntl(b.native_handle(), F_GETFD) & FD_CLOEXEC, 0);
  });
}

TEST(FsReadFile, SizeLimit) {
  ScratchDir dir;
  run_goro([&] {
    ASSERT_TRUE(fs::write_file(dir / "ten", "0123456789"));
    auto exact = fs::read_file(dir / "ten", 10);
    ASSERT_TRUE(exact);
    EXPECT_EQ(*exact, "0123456789");
    auto over = fs::read_file(dir / "ten", 9);
    EXPECT_EQ(over.error(), std::errc::file_too_large);
    EXPECT_EQ(fs::read_file(dir / "ten", 0).error(), std::errc::file_too_large);

    // A file with no size: /dev/zero never ends; the limit stops it.
    auto zero = fs::read_file("/dev/zero", 100000);
    EXPECT_EQ(zero.error(), std::errc::file_too_large);
    // /proc files report size 0 but have content.
    auto status = fs::read_file("/proc/self/status");
    ASSERT_TRUE(status);
    EXPECT_NE(status->find("Pid:"), std::string::npos);

    ASSERT_TRUE(fs::write_file(dir / "empty", ""));
    auto empty = fs::read_file(dir / "empty", 0);
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->empty());
  });
}

TEST(FsPaths, StatMkdirRenameRemove) {
  ScratchDir dir;
  run_goro([&] {
    ASSERT_TRUE(fs::mkdir(dir / "sub", 0750));
    EXPECT_EQ(fs::mkdir(dir / "sub").error(), std::errc::file_exists);
    auto st = fs::stat(dir / "sub");
    ASSERT_TRUE(st);
    EXPECT_TRUE(st->is_dir());
    EXPECT_EQ(st->type, fs::FileType::kDirectory);

    ASSERT_TRUE(fs::write_file(dir / "sub" / "f", "data"));
    ASSERT_EQ(::symlink("sub/f", (dir / "link").c_str()), 0);
    auto followed = fs::stat(dir / "link");
    ASSERT_TRUE(followed);
    EXPECT_TRUE(followed->is_regular());
    EXPECT_EQ(followed->size, 4u);
    auto not_followed = fs::lstat(dir / "link");
    ASSERT_TRUE(not_followed);
    EXPECT_TRUE(not_followed->is_symlink());

    // mtime is close to now.
    auto age = std::chrono::system_clock::now() - followed->mtime;
    EXPECT_LT(std::chrono::abs(age), std::chrono::minutes(5));

    EXPECT_EQ(fs::remove(dir / "sub").error(), std::errc::directory_not_empty);
    ASSERT_TRUE(fs::rename(dir / "sub" / "f", dir / "g"));
    EXPECT_EQ(fs::stat(dir / "sub" / "f").error(), std::errc::no_such_file_or_directory);
    ASSERT_TRUE(fs::remove(dir / "sub"));  // now empty: rmdir
    ASSERT_TRUE(fs::remove(dir / "g"));    // a file: unlink
    ASSERT_TRUE(fs::remove(dir / "link"));
    EXPECT_EQ(fs::remove(dir / "g").error(), std::errc::no_such_file_or_directory);
    EXPECT_EQ(fs::rename(dir / "g", dir / "h").error(), std::errc::no_such_file_or_directory);
  });
}

TEST(FsListDir, EntriesSortedWithTypes) {
  ScratchDir dir;
  run_goro([&] {
    ASSERT_TRUE(fs::write_file(dir / "b.txt", "b"));
    ASSERT_TRUE(fs::write_file(dir / "a.txt", "a"));
    ASSERT_TRUE(fs::mkdir(dir / "c"));
    ASSERT_EQ(::symlink("a.txt", (dir / "d").c_str()), 0);
    ASSERT_EQ(::mkfifo((dir / "e").c_str(), 0600), 0);
    auto list = fs::list_dir(dir.path());
    ASSERT_TRUE(list) << list.error().message();
    ASSERT_EQ(list->size(), 5u);
    const std::vector<std::pair<std::string, fs::FileType>> want{
        {"a.txt", fs::FileType::kRegular}, {"b.txt", fs::FileType::kRegular},
        {"c", fs::FileType::kDirectory},   {"d", fs::FileType::kSymlink},
        {"e", fs::FileType::kFifo},
    };
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ((*list)[i].name, want[i].first);
      EXPECT_EQ((*list)[i].type, want[i].second) << fs::file_type_string((*list)[i].type);
    }
    auto empty = fs::list_dir(dir / "c");
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->empty());
    EXPECT_EQ(fs::list_dir(dir / "missing").error(), std::errc::no_such_file_or_directory);
  });
}

TEST(FsListDir, ManyEntriesSpanSeveralGetdentsBatches) {
  ScratchDir dir;
  constexpr int kFiles = 3000;  // ~100 KiB of dirents: several 32 KiB batches
  for (int i = 0; i < kFiles; ++i) {
    char name[48];  // room for any int: -O1 cannot prove i < 100000
    std::snprintf(name, sizeof name, "file-%05d-with-a-longish-name", i);
    ASSERT_TRUE(fs::File::create(dir / name));  // outside the runtime: plain calls
  }
  run_goro([&] {
    auto list = fs::list_dir(dir.path());
    ASSERT_TRUE(list);
    ASSERT_EQ(list->size(), static_cast<std::size_t>(kFiles));
    EXPECT_EQ(list->front().name, "file-00000-with-a-longish-name");
    EXPECT_EQ(list->back().name, "file-02999-with-a-longish-name");
  });
}

TEST(FsOutsideRuntime, PlainThreadCallsWork) {
  ScratchDir dir;
  ASSERT_TRUE(fs::write_file(dir / "x", "outside"));
  auto back = fs::read_file(dir / "x");
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, "outside");
}

}  // namespace
