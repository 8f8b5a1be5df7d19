// goro::maxprocs inside real cgroup v1 `cpu` cgroups (root only; skipped
// elsewhere): a forked child is moved into a throwaway cgroup and resolves.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "config/maxprocs/maxprocs.hpp"
#include "tests/config/cgroup_fixture.hpp"
#include "tests/config/fake_root.hpp"

namespace goro::gomaxprocs {
namespace {

using goro::testing::fake_env;
using goro::testing::run_in_cgroup;
using goro::testing::TestCgroup;

constexpr int kCpus = 16;

class RealCgroup : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = TestCgroup::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  }

  // Resolves inside `cg` with GORO_DEBUG=ncpu=16 (plus `extra` env) and
  // returns "procs from_env cgroup_path".
  static std::string resolve_in(TestCgroup& cg, std::map<std::string, std::string> extra = {}) {
    return run_in_cgroup(cg, [extra]() mutable {
      extra.emplace("GORO_DEBUG", fmt::format("ncpu={}", kCpus));
      Resolution r = Resolver("/", fake_env(extra)).resolve();
      return fmt::format("{} {} {}", r.procs, r.from_env, r.cgroup_path);
    });
  }
  static std::string want(int procs, const TestCgroup* at, bool from_env = false) {
    return fmt::format("{} {} {}", procs, from_env, at ? at->path() : "");
  }
};

TEST_F(RealCgroup, LeafQuota) {
  TestCgroup cg("leaf");
  cg.set_cpu_limit(3.5);
  EXPECT_EQ(resolve_in(cg), want(4, &cg));
  cg.set_cpu_limit(1.2);
  EXPECT_EQ(resolve_in(cg), want(2, &cg));
  cg.clear_cpu_limit();
  EXPECT_EQ(resolve_in(cg), want(kCpus, nullptr));
}

TEST_F(RealCgroup, ParentQuotaIsHonoured) {
  TestCgroup parent("parent");
  TestCgroup leaf(parent, "leaf");
  parent.set_cpu_limit(1.2);  // the leaf stays unlimited: Go 1.25 would say 16
  EXPECT_EQ(resolve_in(leaf), want(2, &parent));
  parent.set_cpu_limit(3.5);
  EXPECT_EQ(resolve_in(leaf), want(4, &parent));
  leaf.set_cpu_limit(2.5);  // now the leaf is the tighter one
  EXPECT_EQ(resolve_in(leaf), want(3, &leaf));
}

TEST_F(RealCgroup, GomaxprocsEnvOverridesTheQuota) {
  TestCgroup cg("env");
  cg.set_cpu_limit(1.2);
  EXPECT_EQ(resolve_in(cg, {{"GOMAXPROCS", "3"}}), want(3, nullptr, true));
}

TEST_F(RealCgroup, FixtureCleansUp) {
  std::string path;
  {
    TestCgroup cg("cleanup");
    path = cg.path();
    cg.set_cpu_limit(2);
    resolve_in(cg);
    EXPECT_EQ(::access(path.c_str(), F_OK), 0);
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << path << " was left behind";
}

}  // namespace
}  // namespace goro::gomaxprocs
