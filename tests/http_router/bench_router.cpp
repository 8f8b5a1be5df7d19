// bench_router: the per-request cost of RouteTable::match on a 20-route table
// shaped like a small REST API. One MatchResult is reused across iterations,
// as a connection would reuse it, so the steady state allocates nothing.
//
//   build/h-router/tests/http_router/bench_router --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <string_view>

#include "framework/http/router/route_table.hpp"

namespace {

using goro::http::MatchResult;
using goro::http::RouteTable;

const RouteTable& api_table() {
  static const RouteTable table = [] {
    RouteTable t;
    for (const char* p : {
             "GET /{$}",
             "GET /health",
             "GET /metrics",
             "GET /users",
             "POST /users",
             "GET /users/{id}",
             "PUT /users/{id}",
             "DELETE /users/{id}",
             "GET /users/{id}/repos",
             "GET /repos/{owner}/{repo}",
             "GET /repos/{owner}/{repo}/issues",
             "POST /repos/{owner}/{repo}/issues",
             "GET /repos/{owner}/{repo}/issues/{number}",
             "GET /repos/{owner}/{repo}/pulls",
             "GET /orgs/{org}",
             "GET /orgs/{org}/members",
             "GET /search/code",
             "GET /search/issues",
             "GET /static/{path...}",
             "api.example.com/v1/",
         }) {
      t.add(p);
    }
    return t;
  }();
  return table;
}

void run(benchmark::State& state, std::string_view method, std::string_view path,
         MatchResult::Kind want) {
  const RouteTable& t = api_table();
  MatchResult r;
  t.match(method, "localhost:8080", path, r);
  if (r.kind != want) {
    state.SkipWithError("unexpected match result");
    return;
  }
  for (auto _ : state) {
    t.match(method, "localhost:8080", path, r);
    benchmark::DoNotOptimize(r.id);
    benchmark::DoNotOptimize(r.values.size());
  }
}

void BM_StaticHit(benchmark::State& s) {
  run(s, "GET", "/health", MatchResult::Kind::kFound);
}
void BM_OneParam(benchmark::State& s) {
  run(s, "GET", "/users/12345", MatchResult::Kind::kFound);
}
void BM_ThreeParams(benchmark::State& s) {
  run(s, "GET", "/repos/goro/goro/issues/42", MatchResult::Kind::kFound);
}
void BM_Backtrack(benchmark::State& s) {
  run(s, "POST", "/repos/goro/goro/issues", MatchResult::Kind::kFound);
}
void BM_RestWildcard(benchmark::State& s) {
  run(s, "GET", "/static/css/site/main.css", MatchResult::Kind::kFound);
}
void BM_EscapedParam(benchmark::State& s) {
  run(s, "GET", "/users/a%20b", MatchResult::Kind::kFound);
}
void BM_NotFound(benchmark::State& s) {
  run(s, "GET", "/nope/x", MatchResult::Kind::kNotFound);
}
void BM_MethodNotAllowed(benchmark::State& s) {
  run(s, "PATCH", "/users/7", MatchResult::Kind::kMethodNotAllowed);
}
void BM_CleanRedirect(benchmark::State& s) {
  run(s, "GET", "/users//7", MatchResult::Kind::kRedirect);
}

BENCHMARK(BM_StaticHit);
BENCHMARK(BM_OneParam);
BENCHMARK(BM_ThreeParams);
BENCHMARK(BM_Backtrack);
BENCHMARK(BM_RestWildcard);
BENCHMARK(BM_EscapedParam);
BENCHMARK(BM_NotFound);
BENCHMARK(BM_MethodNotAllowed);
BENCHMARK(BM_CleanRedirect);

}  // namespace

BENCHMARK_MAIN();
