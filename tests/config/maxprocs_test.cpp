// goro::maxprocs against fixture trees: discovery (v1, v2, hybrid, mount roots,
// escapes), the ancestry walk, value parsing, the env rules and re-discovery.
#include <sched.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/maxprocs/cgroup.hpp"
#include "config/maxprocs/maxprocs.hpp"
#include "tests/config/fake_root.hpp"

namespace goro::gomaxprocs {
namespace {

using goro::testing::fake_env;
using goro::testing::FakeRoot;

// mountinfo lines as the kernel writes them (with an optional field on v1).
std::string v1_mount(const std::string& mount_point, const std::string& controllers,
                     const std::string& root = "/") {
  return "32 31 0:29 " + root + " " + mount_point +
         " rw,nosuid,relatime shared:12 - cgroup cgroup rw," + controllers + "\n";
}
std::string v2_mount(const std::string& mount_point, const std::string& root = "/") {
  return "41 31 0:38 " + root + " " + mount_point + " rw,nosuid,relatime - cgroup2 cgroup2 rw\n";
}
const std::string kRootMount = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n";

constexpr int kCpus = 16;  // the GORO_DEBUG ncpu every fixture test pretends to have

class MaxprocsFixture : public ::testing::Test {
 protected:
  Resolution resolve(std::map<std::string, std::string> env = {}) {
    env.emplace("GORO_DEBUG", "ncpu=" + std::to_string(kCpus));
    Resolver r(root.dir(), fake_env(env));
    r.set_log_sink([this](std::string_view line) { logs.emplace_back(line); });
    return r.resolve();
  }
  // A v1 host whose cpu hierarchy is mounted at /sys/fs/cgroup/cpu,cpuacct.
  void v1_host(const std::string& cgroup) {
    root.proc_cgroup("5:memory:/x\n3:cpu,cpuacct:" + cgroup + "\n2:cpuset:/\n1:name=systemd:/\n");
    root.mountinfo(kRootMount + v1_mount("/sys/fs/cgroup/cpu,cpuacct", "cpu,cpuacct") +
                   v1_mount("/sys/fs/cgroup/cpuset", "cpuset"));
  }
  // A pure v2 host, unified hierarchy at /sys/fs/cgroup.
  void v2_host(const std::string& cgroup) {
    root.proc_cgroup("0::" + cgroup + "\n");
    root.mountinfo(kRootMount + v2_mount("/sys/fs/cgroup"));
  }

  static constexpr const char* kV1 = "/sys/fs/cgroup/cpu,cpuacct";
  static constexpr const char* kV2 = "/sys/fs/cgroup";
  FakeRoot root;
  std::vector<std::string> logs;
};

TEST_F(MaxprocsFixture, V1LeafLimit) {
  v1_host("/app");
  root.cfs(std::string(kV1) + "/app", 350000);
  Resolution r = resolve();
  EXPECT_EQ(r.procs, 4);
  EXPECT_FALSE(r.from_env);
  EXPECT_EQ(r.affinity, kCpus);
  EXPECT_DOUBLE_EQ(r.cgroup_limit, 3.5);
  EXPECT_EQ(r.cgroup_version, 1);
  EXPECT_EQ(r.cgroup_path, root.real(std::string(kV1) + "/app"));
  EXPECT_EQ(r.explain(), "maxprocs=4 (affinity 16 from GORO_DEBUG ncpu, cgroup v1 limit 3.50 at " +
                             r.cgroup_path + ")");
}

TEST_F(MaxprocsFixture, V2LeafLimit) {
  v2_host("/app.slice/app.service");
  root.cpu_max(std::string(kV2) + "/app.slice/app.service", "350000 100000");
  Resolution r = resolve();
  EXPECT_EQ(r.procs, 4);
  EXPECT_EQ(r.cgroup_version, 2);
  EXPECT_EQ(r.cgroup_path, root.real(std::string(kV2) + "/app.slice/app.service"));
}

TEST_F(MaxprocsFixture, HybridV1CpuWinsOverV2Line) {
  // The 0:: line comes first and its (unusable) cpu.max says 1 CPU: v1 must win.
  root.proc_cgroup("0::/svc\n4:memory:/svc\n1:cpu:/svc\n");
  root.mountinfo(kRootMount + v2_mount("/sys/fs/cgroup/unified") +
                 v1_mount("/sys/fs/cgroup/cpu", "cpu"));
  root.cpu_max("/sys/fs/cgroup/unified/svc", "100000 100000");
  root.cfs("/sys/fs/cgroup/cpu/svc", 600000);
  Resolution r = resolve();
  EXPECT_EQ(r.cgroup_version, 1);
  EXPECT_EQ(r.procs, 6);
}

TEST_F(MaxprocsFixture, ParentTighterThanLeafV1) {
  v1_host("/pod/ctr");
  root.cfs(std::string(kV1) + "/pod", 120000);
  root.cfs(std::string(kV1) + "/pod/ctr", -1);
  Resolution r = resolve();
  EXPECT_EQ(r.procs, 2);  // Go 1.25 would answer 16 here (golang/go#81180).
  EXPECT_EQ(r.cgroup_path, root.real(std::string(kV1) + "/pod"));
}

TEST_F(MaxprocsFixture, ParentTighterThanLeafV2) {
  v2_host("/kubepods.slice/pod/ctr");
  root.cpu_max(std::string(kV2) + "/kubepods.slice", "max 100000");
  root.cpu_max(std::string(kV2) + "/kubepods.slice/pod", "250000 100000");
  root.cpu_max(std::string(kV2) + "/kubepods.slice/pod/ctr", "800000 100000");
  Resolution r = resolve();
  EXPECT_EQ(r.procs, 3);
  EXPECT_DOUBLE_EQ(r.cgroup_limit, 2.5);
  EXPECT_EQ(r.cgroup_path, root.real(std::string(kV2) + "/kubepods.slice/pod"));
}

TEST_F(MaxprocsFixture, LeafTighterThanParent) {
  v2_host("/a/b");
  root.cpu_max(std::string(kV2) + "/a", "800000 100000");
  root.cpu_max(std::string(kV2) + "/a/b", "350000 100000");
  EXPECT_EQ(resolve().procs, 4);
}

TEST_F(MaxprocsFixture, MountRootLevelCountsToo) {
  // The limit sits on the mount point itself (a container's own cgroup).
  v2_host("/");
  root.cpu_max(kV2, "300000 100000");
  EXPECT_EQ(resolve().procs, 3);
}

TEST_F(MaxprocsFixture, ComparesFractionsAcrossPeriods) {
  // 150000/100000 = 1.5 vs 100000/50000 = 2: the leaf is tighter although its
  // quota number is larger.
  v1_host("/a/b");
  root.cfs(std::string(kV1) + "/a", 100000, 50000);
  root.cfs(std::string(kV1) + "/a/b", 150000, 100000);
  Resolution r = resolve();
  EXPECT_DOUBLE_EQ(r.cgroup_limit, 1.5);
  EXPECT_EQ(r.cgroup_path, root.real(std::string(kV1) + "/a/b"));
}

TEST_F(MaxprocsFixture, MaxMeansNoLimit) {
  v2_host("/app");
  root.cpu_max(std::string(kV2) + "/app", "max 100000");
  Resolution r = resolve();
  EXPECT_EQ(r.procs, kCpus);
  EXPECT_LT(r.cgroup_limit, 0);
  EXPECT_EQ(r.cgroup_path, "");
  EXPECT_EQ(r.explain(), "maxprocs=16 (affinity 16 from GORO_DEBUG ncpu, no cgroup cpu limit)");
}

TEST_F(MaxprocsFixture, QuotaMinusOneMeansNoLimit) {
  v1_host("/app");
  root.cfs(std::string(kV1) + "/app", -1);
  EXPECT_EQ(resolve().procs, kCpus);
}

TEST_F(MaxprocsFixture, LimitAboveAffinityKeepsAffinity) {
  v1_host("/app");
  root.cfs(std::string(kV1) + "/app", 100000L * (kCpus + 8));
  Resolution r = resolve();
  EXPECT_EQ(r.procs, kCpus);
  EXPECT_GT(r.cgroup_limit, kCpus);
}

struct FractionCase {
  long quota_us;
  long period_us;
  int want;
};
class FractionalLimit : public MaxprocsFixture,
                        public ::testing::WithParamInterface<FractionCase> {};

TEST_P(FractionalLimit, RoundsUpWithAFloorOfTwo) {
  v1_host("/app");
  root.cfs(std::string(kV1) + "/app", GetParam().quota_us, GetParam().period_us);
  EXPECT_EQ(resolve().procs, GetParam().want);
}
INSTANTIATE_TEST_SUITE_P(Go125, FractionalLimit,
                         ::testing::Values(FractionCase{210000, 100000, 3},   // 2.1 -> 3
                                           FractionCase{25000, 100000, 2},    // 0.25 -> 2
                                           FractionCase{100000, 100000, 2},   // 1 -> 2 (floor)
                                           FractionCase{200000, 100000, 2},   // exact 2
                                           FractionCase{200001, 100000, 3},   // just above 2
                                           FractionCase{1000000, 1000000, 2}  // 1 s period
                                           ));

struct MalformedCase {
  const char* name;
  const char* quota;   // nullptr: file missing
  const char* period;  // nullptr: file missing
};
class MalformedV1 : public MaxprocsFixture, public ::testing::WithParamInterface<MalformedCase> {};

TEST_P(MalformedV1, MeansNoLimitAtThatLevel) {
  v1_host("/a/b");
  std::string leaf = std::string(kV1) + "/a/b";
  root.mkdir(leaf);
  if (GetParam().quota) root.write(leaf + "/cpu.cfs_quota_us", GetParam().quota);
  if (GetParam().period) root.write(leaf + "/cpu.cfs_period_us", GetParam().period);
  EXPECT_EQ(resolve().procs, kCpus);
  // A bad leaf must not hide a good parent.
  root.cfs(std::string(kV1) + "/a", 300000);
  EXPECT_EQ(resolve().procs, 3);
}
INSTANTIATE_TEST_SUITE_P(Files, MalformedV1,
                         ::testing::Values(MalformedCase{"garbage", "lots\n", "100000\n"},
                                           MalformedCase{"empty", "", "100000\n"},
                                           MalformedCase{"quota_missing", nullptr, "100000\n"},
                                           MalformedCase{"period_missing", "350000\n", nullptr},
                                           MalformedCase{"period_zero", "350000\n", "0\n"},
                                           MalformedCase{"quota_zero", "0\n", "100000\n"},
                                           MalformedCase{"trailing_junk", "350000x\n", "100000\n"},
                                           MalformedCase{"huge", "99999999999999999999999\n",
                                                         "100000\n"}),
                         [](const auto& info) { return std::string(info.param.name); });

class MalformedV2 : public MaxprocsFixture, public ::testing::WithParamInterface<const char*> {};

TEST_P(MalformedV2, MeansNoLimit) {
  v2_host("/app");
  root.write(std::string(kV2) + "/app/cpu.max", GetParam());
  EXPECT_EQ(resolve().procs, kCpus);
}
INSTANTIATE_TEST_SUITE_P(Files, MalformedV2,
                         ::testing::Values("", "garbage\n", "max\n", "350000\n", "350000 0\n",
                                           "-5 100000\n", "350000 100000 7\n", "max max\n"));

TEST_F(MaxprocsFixture, MissingProcFilesMeanNoLimit) {
  EXPECT_EQ(resolve().procs, kCpus);  // nothing at all
  root.proc_cgroup("1:cpu:/app\n");   // no mountinfo
  root.cfs("/sys/fs/cgroup/cpu/app", 100000);
  EXPECT_EQ(resolve().procs, kCpus);
  root.mountinfo(kRootMount);  // mountinfo without a cgroup mount
  EXPECT_EQ(resolve().procs, kCpus);
  root.mountinfo(kRootMount + v1_mount("/sys/fs/cgroup/cpu", "cpu"));
  EXPECT_EQ(resolve().procs, 2);  // and the same tree becomes readable
}

TEST_F(MaxprocsFixture, GarbageProcFilesMeanNoLimit) {
  root.proc_cgroup("this is not\na cgroup file\n::\n1:cpu:relative\n");
  root.mountinfo("garbage\n1 2 3\n - - -\n");
  EXPECT_EQ(resolve().procs, kCpus);
  v1_host("/app");
  root.mountinfo("short line - cgroup\n" + v1_mount("/sys/fs/cgroup/cpu,cpuacct", "cpu,cpuacct"));
  root.cfs(std::string(kV1) + "/app", 100000);
  EXPECT_EQ(resolve().procs, 2);
}

TEST_F(MaxprocsFixture, CpusetAndCpuacctAreNotCpu) {
  root.proc_cgroup("3:cpuset:/app\n2:cpuacct:/app\n");
  root.mountinfo(kRootMount + v1_mount("/sys/fs/cgroup/cpuset", "cpuset") +
                 v1_mount("/sys/fs/cgroup/cpuacct", "cpuacct"));
  root.cfs("/sys/fs/cgroup/cpuset/app", 100000);
  root.cfs("/sys/fs/cgroup/cpuacct/app", 100000);
  EXPECT_EQ(resolve().procs, kCpus);
}

TEST_F(MaxprocsFixture, EscapedMountPoint) {
  root.proc_cgroup("1:cpu:/app\n");
  root.mountinfo(kRootMount + v1_mount("/mnt/cgroup\\040cpu\\011x\\134y", "cpu"));
  root.cfs("/mnt/cgroup cpu\tx\\y/app", 350000);
  Resolution r = resolve();
  EXPECT_EQ(r.procs, 4);
  EXPECT_EQ(r.cgroup_path, root.real("/mnt/cgroup cpu\tx\\y/app"));
}

TEST_F(MaxprocsFixture, MountRootNotSlash) {
  // A container without its own cgroup namespace sees the host path in
  // /proc/self/cgroup, while its mount shows only its own subtree: the walk
  // stops at the mount point (the host's ancestors are not visible).
  root.proc_cgroup("0::/kubepods/pod1/ctr\n");
  root.mountinfo(kRootMount + v2_mount("/sys/fs/cgroup", "/kubepods/pod1"));
  root.cpu_max(std::string(kV2) + "/ctr", "max 100000");
  root.cpu_max(kV2, "150000 100000");
  Resolution r = resolve();
  EXPECT_EQ(r.procs, 2);
  EXPECT_EQ(r.cgroup_path, root.real(kV2));
}

TEST_F(MaxprocsFixture, PathOutsideEveryMountRootMeansNoLimit) {
  // Moved out of the namespace's subtree after it was created.
  root.proc_cgroup("0::/../other\n");
  root.mountinfo(kRootMount + v2_mount("/sys/fs/cgroup"));
  root.cpu_max(kV2, "150000 100000");
  EXPECT_EQ(resolve().procs, kCpus);
  // A root that is a string prefix but not a path prefix does not match.
  root.proc_cgroup("0::/podx/ctr\n");
  root.mountinfo(kRootMount + v2_mount("/sys/fs/cgroup", "/pod"));
  EXPECT_EQ(resolve().procs, kCpus);
}

TEST_F(MaxprocsFixture, PrefersTheMountWhoseRootHoldsThePath) {
  root.proc_cgroup("1:cpu:/b/ctr\n");
  root.mountinfo(kRootMount + v1_mount("/mnt/a", "cpu", "/a") + v1_mount("/mnt/all", "cpu") +
                 v1_mount("/mnt/b", "cpu", "/b"));
  root.cfs("/mnt/all/b/ctr", 500000);
  root.cfs("/mnt/b/ctr", 300000);
  Resolution r = resolve();
  EXPECT_EQ(r.procs, 3);
  EXPECT_EQ(r.cgroup_path, root.real("/mnt/b/ctr"));
}

TEST_F(MaxprocsFixture, GomaxprocsEnvWins) {
  v1_host("/app");
  root.cfs(std::string(kV1) + "/app", 100000);
  Resolution r = resolve({{"GOMAXPROCS", "3"}});
  EXPECT_EQ(r.procs, 3);
  EXPECT_TRUE(r.from_env);
  EXPECT_LT(r.cgroup_limit, 0);  // explicit: cgroups are not consulted
  EXPECT_EQ(r.explain(), "maxprocs=3 (GOMAXPROCS from the environment)");
  EXPECT_TRUE(logs.empty());
  // Above the CPU count is allowed, as in Go.
  EXPECT_EQ(resolve({{"GOMAXPROCS", std::to_string(kCpus * 4)}}).procs, kCpus * 4);
}

class BadGomaxprocs : public MaxprocsFixture, public ::testing::WithParamInterface<const char*> {};

TEST_P(BadGomaxprocs, IsIgnoredWithAWarning) {
  v1_host("/app");
  root.cfs(std::string(kV1) + "/app", 350000);
  Resolution r = resolve({{"GOMAXPROCS", GetParam()}});
  EXPECT_FALSE(r.from_env);
  EXPECT_EQ(r.procs, 4);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("GOMAXPROCS"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("ignored"), std::string::npos) << logs[0];
}
INSTANTIATE_TEST_SUITE_P(Values, BadGomaxprocs,
                         ::testing::Values("0", "-2", "abc", " 4", "4 ", "4x", "+4", "1.5",
                                           "99999999999999999999"));

TEST_F(MaxprocsFixture, EmptyGomaxprocsIsUnsetWithoutWarning) {
  Resolution r = resolve({{"GOMAXPROCS", ""}});
  EXPECT_FALSE(r.from_env);
  EXPECT_EQ(r.procs, kCpus);
  EXPECT_TRUE(logs.empty());
}

TEST_F(MaxprocsFixture, WarnsOncePerDistinctProblem) {
  Resolver r(root.dir(), fake_env({{"GOMAXPROCS", "zero"}}));
  r.set_log_sink([this](std::string_view line) { logs.emplace_back(line); });
  r.resolve();
  r.resolve();
  EXPECT_EQ(logs.size(), 1u);
}

TEST_F(MaxprocsFixture, WarnsAgainWhenAProblemComesBack) {
  auto value = std::make_shared<std::string>("zero");
  Resolver r(root.dir(), [value](const char* name) -> const char* {
    return std::string_view(name) == "GOMAXPROCS" ? value->c_str() : nullptr;
  });
  r.set_log_sink([this](std::string_view line) { logs.emplace_back(line); });
  r.resolve();
  *value = "2";
  EXPECT_TRUE(r.resolve().from_env);
  *value = "zero";
  r.resolve();
  EXPECT_EQ(logs.size(), 2u);
}

TEST_F(MaxprocsFixture, BadGomaxprocsAndBadNcpuShareOneLine) {
  Resolution r = resolve({{"GOMAXPROCS", "x"}, {"GORO_DEBUG", "ncpu=-1"}});
  EXPECT_FALSE(r.affinity_overridden);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("ncpu"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("GOMAXPROCS"), std::string::npos) << logs[0];
}

TEST_F(MaxprocsFixture, NcpuOverrideAmongOtherDebugKnobs) {
  Resolver r(root.dir(), fake_env({{"GORO_DEBUG", "schedtrace=1000,ncpu=7,scheddetail=1"}}));
  Resolution res = r.resolve();
  EXPECT_EQ(res.affinity, 7);
  EXPECT_TRUE(res.affinity_overridden);
  EXPECT_EQ(res.procs, 7);
}

TEST_F(MaxprocsFixture, BadNcpuFallsBackToAffinityWithAWarning) {
  Resolver r(root.dir(), fake_env({{"GORO_DEBUG", "ncpu=lots"}}));
  r.set_log_sink([this](std::string_view line) { logs.emplace_back(line); });
  Resolution res = r.resolve();
  EXPECT_FALSE(res.affinity_overridden);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("ncpu"), std::string::npos);
}

TEST_F(MaxprocsFixture, AffinityOfOneYieldsOne) {
  v1_host("/app");
  root.cfs(std::string(kV1) + "/app", 350000);
  Resolver r(root.dir(), fake_env({{"GORO_DEBUG", "ncpu=1"}}));
  Resolution res = r.resolve();
  EXPECT_EQ(res.procs, 1);  // the floor of 2 is for the cgroup limit only
  EXPECT_DOUBLE_EQ(res.cgroup_limit, 3.5);
}

TEST_F(MaxprocsFixture, RealAffinityIsTheSchedGetaffinityCount) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  Resolver r(root.dir(), fake_env({}));
  Resolution res = r.resolve();
  EXPECT_EQ(res.affinity, CPU_COUNT(&set));
  EXPECT_FALSE(res.affinity_overridden);
  EXPECT_EQ(res.procs, CPU_COUNT(&set));
}

TEST_F(MaxprocsFixture, ContainermaxprocsZeroIgnoresCgroups) {
  v1_host("/app");
  root.cfs(std::string(kV1) + "/app", 100000);
  Resolver r(root.dir(), fake_env({{"GORO_DEBUG", "ncpu=16,containermaxprocs=0"}}));
  EXPECT_EQ(r.resolve().procs, 16);
}

TEST_F(MaxprocsFixture, ValuesAreReReadEveryCall) {
  v1_host("/app");
  std::string dir = std::string(kV1) + "/app";
  root.cfs(dir, 350000);
  Resolver r(root.dir(), fake_env({{"GORO_DEBUG", "ncpu=16"}}));
  EXPECT_EQ(r.resolve().procs, 4);
  root.cfs(dir, 120000);
  EXPECT_EQ(r.resolve().procs, 2);
  root.cfs(dir, -1);
  EXPECT_EQ(r.resolve().procs, 16);
}

TEST_F(MaxprocsFixture, FollowsAMoveToAnotherCgroup) {
  v2_host("/a");
  root.cpu_max(std::string(kV2) + "/a", "350000 100000");
  root.cpu_max(std::string(kV2) + "/b", "600000 100000");
  Resolver r(root.dir(), fake_env({{"GORO_DEBUG", "ncpu=16"}}));
  EXPECT_EQ(r.resolve().procs, 4);
  root.proc_cgroup("0::/b\n");
  Resolution res = r.resolve();
  EXPECT_EQ(res.procs, 6);
  EXPECT_EQ(res.cgroup_path, root.real(std::string(kV2) + "/b"));
}

TEST_F(MaxprocsFixture, RediscoversWhenTheLeafVanishes) {
  // The cgroup hierarchy is re-mounted elsewhere while /proc/self/cgroup is
  // unchanged: the cached directory disappears and discovery runs again.
  root.proc_cgroup("1:cpu:/app\n");
  root.mountinfo(kRootMount + v1_mount("/old", "cpu"));
  root.cfs("/old/app", 350000);
  Resolver r(root.dir(), fake_env({{"GORO_DEBUG", "ncpu=16"}}));
  EXPECT_EQ(r.resolve().procs, 4);
  root.remove("/old");
  root.mountinfo(kRootMount + v1_mount("/new", "cpu"));
  root.cfs("/new/app", 250000);
  EXPECT_EQ(r.resolve().procs, 3);
}

TEST_F(MaxprocsFixture, DebugLoggingOnlyWhenAskedAndOnlyOnChange) {
  v1_host("/app");
  root.cfs(std::string(kV1) + "/app", 350000);
  EXPECT_EQ(resolve().procs, 4);
  EXPECT_TRUE(logs.empty());

  Resolver r(root.dir(), fake_env({{"GORO_DEBUG", "ncpu=16,maxprocsdebug=1"}}));
  r.set_log_sink([this](std::string_view line) { logs.emplace_back(line); });
  Resolution first = r.resolve();
  ASSERT_FALSE(logs.empty());
  EXPECT_EQ(logs.back(), first.explain());
  std::size_t after_first = logs.size();
  r.resolve();
  EXPECT_EQ(logs.size(), after_first);  // nothing changed, nothing printed
}

// The parsers, directly.
TEST(MaxprocsParse, UnescapeMountField) {
  EXPECT_EQ(detail::unescape_mount_field("/a\\040b"), "/a b");
  EXPECT_EQ(detail::unescape_mount_field("/a\\134"), "/a\\");
  EXPECT_EQ(detail::unescape_mount_field("/a\\04"), "/a\\04");  // truncated escape kept
  EXPECT_EQ(detail::unescape_mount_field("/a\\x41"), "/a\\x41");
}

TEST(MaxprocsParse, CgroupDirectoriesLeafFirst) {
  detail::Mount m{"/sys/fs/cgroup/cpu", "/"};
  EXPECT_EQ(detail::cgroup_directories(m, "/a/b"),
            (std::vector<std::string>{"/sys/fs/cgroup/cpu/a/b", "/sys/fs/cgroup/cpu/a",
                                      "/sys/fs/cgroup/cpu"}));
  EXPECT_EQ(detail::cgroup_directories(m, "/"), (std::vector<std::string>{"/sys/fs/cgroup/cpu"}));
  EXPECT_TRUE(detail::cgroup_directories(m, "/a/../../etc").empty());
  detail::Mount rooted{"/sys/fs/cgroup", "/k/p"};
  EXPECT_EQ(detail::cgroup_directories(rooted, "/k/p/c"),
            (std::vector<std::string>{"/sys/fs/cgroup/c", "/sys/fs/cgroup"}));
  EXPECT_TRUE(detail::cgroup_directories(rooted, "/k/px/c").empty());
  // A malformed mountinfo line with an empty mount point (found by
  // tests/fuzz/cgroup_fuzzer.cpp): no directory, not a crash.
  EXPECT_TRUE(detail::cgroup_directories(detail::Mount{"", "/"}, "/a").empty());
}

TEST(MaxprocsParse, ProcCgroup) {
  auto v1 = detail::parse_proc_cgroup("0::/u\n2:cpu,cpuacct:/with:colon\n");
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1.value_or(detail::Membership{}).version, detail::CgroupVersion::kV1);
  EXPECT_EQ(v1.value_or(detail::Membership{}).path, "/with:colon");
  auto v2 = detail::parse_proc_cgroup("0::/u");  // no trailing newline
  ASSERT_TRUE(v2);
  EXPECT_EQ(v2.value_or(detail::Membership{}).version, detail::CgroupVersion::kV2);
  EXPECT_FALSE(detail::parse_proc_cgroup("1:name=systemd:/\n3:cpuset:/\n"));
}

}  // namespace
}  // namespace goro::gomaxprocs

namespace goro::gomaxprocs {
namespace {

using goro::testing::FakeRoot;

// --- the memory limit (MemoryLimitReader) -----------------------------------

class MemoryLimitFixture : public ::testing::Test {
 protected:
  // A v1 host: the memory hierarchy mounted apart from cpu, the process in
  // different cgroups of each (as on this project's development host).
  void v1_host(const std::string& memory_cgroup) {
    root.proc_cgroup("5:memory:" + memory_cgroup +
                     "\n3:cpu,cpuacct:/elsewhere\n1:name=systemd:/\n");
    root.mountinfo(kRootMount + v1_mount("/sys/fs/cgroup/cpu,cpuacct", "cpu,cpuacct") +
                   v1_mount("/sys/fs/cgroup/memory", "memory"));
  }
  void v2_host(const std::string& cgroup) {
    root.proc_cgroup("0::" + cgroup + "\n");
    root.mountinfo(kRootMount + v2_mount("/sys/fs/cgroup"));
  }
  std::uint64_t read() {
    MemoryLimitReader r(root.dir());
    std::uint64_t v = r.read();
    directory = r.directory();
    return v;
  }
  static constexpr const char* kV1 = "/sys/fs/cgroup/memory";
  static constexpr const char* kV2 = "/sys/fs/cgroup";
  static constexpr const char* kUnlimitedV1 = "9223372036854771712\n";
  FakeRoot root;
  std::string directory;
};

TEST_F(MemoryLimitFixture, V1LeafLimit) {
  v1_host("/pod/app");
  root.write(std::string(kV1) + "/memory.limit_in_bytes", kUnlimitedV1);
  root.write(std::string(kV1) + "/pod/memory.limit_in_bytes", kUnlimitedV1);
  root.write(std::string(kV1) + "/pod/app/memory.limit_in_bytes", "67108864\n");
  EXPECT_EQ(read(), 64u << 20);
  EXPECT_EQ(directory, root.real(std::string(kV1) + "/pod/app"));
}

TEST_F(MemoryLimitFixture, V1ParentTighterThanLeafWins) {
  v1_host("/pod/app");
  root.write(std::string(kV1) + "/pod/memory.limit_in_bytes", "33554432\n");
  root.write(std::string(kV1) + "/pod/app/memory.limit_in_bytes", "67108864\n");
  EXPECT_EQ(read(), 32u << 20);
  EXPECT_EQ(directory, root.real(std::string(kV1) + "/pod"));
}

TEST_F(MemoryLimitFixture, V1UnlimitedEverywhereIsZero) {
  v1_host("/pod/app");
  root.write(std::string(kV1) + "/memory.limit_in_bytes", kUnlimitedV1);
  root.write(std::string(kV1) + "/pod/app/memory.limit_in_bytes", kUnlimitedV1);
  EXPECT_EQ(read(), 0u);
  EXPECT_EQ(directory, "");
}

TEST_F(MemoryLimitFixture, V2MemoryMaxOverTheAncestry) {
  v2_host("/kubepods/pod1/c1");
  root.write(std::string(kV2) + "/kubepods/memory.max", "max\n");
  root.write(std::string(kV2) + "/kubepods/pod1/memory.max", "134217728\n");
  root.write(std::string(kV2) + "/kubepods/pod1/c1/memory.max", "max\n");
  EXPECT_EQ(read(), 128u << 20);  // the v2 root has no memory.max at all
}

TEST_F(MemoryLimitFixture, MalformedLevelsAreIgnored) {
  v2_host("/a/b");
  root.write(std::string(kV2) + "/a/memory.max", "lots\n");
  root.write(std::string(kV2) + "/a/b/memory.max", "-5\n");
  EXPECT_EQ(read(), 0u);
  root.write(std::string(kV2) + "/a/b/memory.max", "1048576\n");
  EXPECT_EQ(read(), 1u << 20);
}

TEST_F(MemoryLimitFixture, MissingFilesMeanNoLimit) {
  EXPECT_EQ(read(), 0u);  // no /proc at all
  v1_host("/pod/app");    // no limit files
  EXPECT_EQ(read(), 0u);
}

TEST_F(MemoryLimitFixture, TheCpuLineDoesNotStandForMemory) {
  // Only a cpu line (no memory controller, no v2 line): no memory limit,
  // even with a limit file where the cpu cgroup would be.
  root.proc_cgroup("3:cpu,cpuacct:/pod/app\n");
  root.mountinfo(kRootMount + v1_mount("/sys/fs/cgroup/cpu,cpuacct", "cpu,cpuacct"));
  root.write("/sys/fs/cgroup/cpu,cpuacct/pod/app/memory.limit_in_bytes", "1048576\n");
  EXPECT_EQ(read(), 0u);
}

TEST(MemoryLimitParse, Values) {
  using detail::LevelStatus;
  EXPECT_EQ(detail::parse_memory_max("max\n").status, LevelStatus::kUnlimited);
  EXPECT_EQ(detail::parse_memory_max("4096\n").bytes, 4096u);
  EXPECT_EQ(detail::parse_memory_max("").status, LevelStatus::kMalformed);
  EXPECT_EQ(detail::parse_memory_max("12k").status, LevelStatus::kMalformed);
  EXPECT_EQ(detail::parse_memory_limit_in_bytes("9223372036854771712").status,
            LevelStatus::kUnlimited);
  EXPECT_EQ(detail::parse_memory_limit_in_bytes("4611686018427387904").status,
            LevelStatus::kUnlimited);  // 2^62
  EXPECT_EQ(detail::parse_memory_limit_in_bytes("4611686018427387903").status,
            LevelStatus::kLimited);
  EXPECT_EQ(detail::parse_memory_limit_in_bytes("-1").status, LevelStatus::kMalformed);
}

TEST(MemoryLimitParse, ProcCgroupPicksTheNamedController) {
  const char* text = "5:memory:/m\n3:cpu,cpuacct:/c\n0::/u\n";
  const detail::Membership none;
  EXPECT_EQ(detail::parse_proc_cgroup(text, "memory").value_or(none).path, "/m");
  EXPECT_EQ(detail::parse_proc_cgroup(text, "cpu").value_or(none).path, "/c");
  EXPECT_EQ(detail::parse_proc_cgroup("3:cpu:/c\n0::/u\n", "memory").value_or(none).path,
            "/u");  // the v2 line
}

}  // namespace
}  // namespace goro::gomaxprocs
