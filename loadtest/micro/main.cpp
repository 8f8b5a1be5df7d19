// goro-microbench: goro's scheduler and sync micro-benchmarks, the C++ half of
// a side-by-side comparison with the Go peer (loadtest/peers/gomicro).
// scripts/bench-micro.sh runs both alternately and prints the table;
// docs/benchmarks.md says what each benchmark measures.
//
//   goro-microbench --bench NAME --procs N [--n ITER] [--variant V] [--stack-size B]
//
// One line on stdout, the same format as gomicro:
//
//   bench=yield impl=goro procs=1 n=2000000 value=41.2 unit=ns/op variant=sched ...
//
// Exit status: 0 ok; 1 error (message on stderr); 2 unknown benchmark;
// 3 benchmark not built in this tree yet (the line then says status=not_built).
//
// Why a plain timing main and not Google Benchmark (docs/DESIGN.md "Dependencies" lists
// libbenchmark-dev for micro-benchmarks): the unit of measurement here is a
// whole goro::run with a fixed number of Ps -- one runtime per process, its
// P count fixed at start -- and the figure must be computed exactly as the Go
// peer computes it (same n, same clock points, same join) so that the ratio
// means something. Google Benchmark wants to own the timing loop on the
// calling thread, picks its own iteration counts, and would run its reporting
// and regex filtering on a 64 KiB goroutine stack; bending it to this shape
// would leave only its output format, which the runner does not need. The
// runner supplies what Google Benchmark would (repetitions, medians).
//
// Flags: Go's flag package accepts both -bench and --bench; CLI11 only the
// latter, so single-dash long flags are rewritten before parsing.
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <goro/runtime.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "bench.hpp"

namespace goro_micro {

std::int64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size_pages = 0;
  std::int64_t resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) {
    throw std::runtime_error("cannot read /proc/self/statm");
  }
  return resident_pages * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

bool is_power_of_10(std::int64_t n) {
  while (n > 1 && n % 10 == 0)
    n /= 10;
  return n == 1;
}

std::int64_t skynet_goroutines(std::int64_t n) {
  std::int64_t total = 0;
  for (; n >= 1; n /= 10)
    total += n;
  return total;
}

namespace {

// The benchmark to run: `variant` if given, else the sync version of `name`
// if built (same shape as Go), else the scheduler-only one.
const Bench* find_bench(const std::string& name, const std::string& variant) {
  for (auto set : {sync_benches(), sched_benches()}) {
    for (const Bench& b : set) {
      if (name == b.name && (variant.empty() || variant == b.variant)) return &b;
    }
  }
  return nullptr;
}

bool is_known_name(const std::string& name) {
  return std::any_of(std::begin(kAllBenchNames), std::end(kAllBenchNames),
                     [&](const char* n) { return name == n; });
}

std::vector<std::string> normalise_args(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = argc - 1; i > 0; --i) {  // CLI11 takes them reversed
    std::string a = argv[i];
    if (a.size() > 2 && a[0] == '-' && a[1] != '-') a.insert(0, "-");
    args.push_back(std::move(a));
  }
  return args;
}

void list_benches() {
  for (const char* name : kAllBenchNames) {
    std::string variants;
    for (auto set : {sync_benches(), sched_benches()}) {
      for (const Bench& b : set) {
        if (std::string_view(name) == b.name) {
          variants += variants.empty() ? "" : ",";
          variants += b.variant;
        }
      }
    }
    fmt::print("{} {}\n", name, variants.empty() ? "not_built" : variants);
  }
}

}  // namespace
}  // namespace goro_micro

int main(int argc, char** argv) {
  using namespace goro_micro;
  CLI::App app{"goro-microbench: goro scheduler/sync micro-benchmarks (see docs/benchmarks.md)"};
  std::string name;
  std::string variant;
  int procs = 1;
  int n = 0;
  std::size_t stack_size = 0;
  bool list = false;
  app.add_option("--bench", name, "benchmark to run (--list shows them)");
  app.add_option("--procs", procs, "number of Ps (goro::Options::maxprocs)")
      ->check(CLI::PositiveNumber);
  app.add_option("-n,--n", n, "iterations (0: the benchmark's default, the same as gomicro's)");
  app.add_option("--variant", variant, "pick an implementation variant (see --list)");
  app.add_option("--stack-size", stack_size, "goroutine stack size in bytes (0: runtime default)");
  app.add_flag("--list", list, "list benchmarks and their built variants");
  try {
    app.parse(normalise_args(argc, argv));
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (list) {
    list_benches();
    return 0;
  }

  const Bench* bench = find_bench(name, variant);
  if (bench == nullptr) {
    if (!is_known_name(name)) {
      fmt::print(stderr, "goro-microbench: unknown benchmark '{}' (try --list)\n", name);
      return 2;
    }
    fmt::print("bench={} impl=goro procs={} n={} status=not_built\n", name, procs, n);
    fmt::print(stderr, "goro-microbench: {}{} is not built in this tree (needs goro sync)\n", name,
               variant.empty() ? "" : " variant " + variant);
    return 3;
  }
  if (n <= 0) n = bench->default_n;

  std::optional<Result> result;
  std::string error;
  bool not_built = false;
  goro::run(
      [&] {
        try {
          result = bench->run(n);
        } catch (const NotBuilt& e) {
          not_built = true;
          error = e.reason;
        } catch (const std::exception& e) {
          error = e.what();
        }
      },
      goro::Options{.maxprocs = procs, .stack_size = stack_size});

  if (not_built) {
    fmt::print("bench={} impl=goro procs={} n={} status=not_built\n", name, procs, n);
    fmt::print(stderr, "goro-microbench: {}: {}\n", name, error);
    return 3;
  }
  if (!result) {
    fmt::print(stderr, "goro-microbench: {}: {}\n", name, error);
    return 1;
  }
  std::string line = fmt::format("bench={} impl=goro procs={} n={} value={:.6g} unit={} variant={}",
                                 name, procs, n, result->value, result->unit, bench->variant);
  for (const auto& [key, val] : result->extra)
    line += fmt::format(" {}={}", key, val);
  fmt::print("{}\n", line);
  return 0;
}
