// A deterministic-interleaving checker for small models of the scheduler's
// protocols (in the spirit of Tokio's loom, without instrumenting the real
// atomics): a model is a handful of threads written as explicit state
// machines, each step one atomic action (a load, a store, a CAS, or a whole
// sched.lock critical section). explore() runs every interleaving of the
// steps, depth first, and remembers the states it has seen, so 2-3 threads
// of a few dozen steps each are covered exhaustively in milliseconds.
//
// The interleavings are sequentially consistent: each step sees every step
// before it. That is the guarantee the runtime's StoreLoad fences and seq_cst
// RMWs buy for the protocols modelled here (findrunnable.cpp essay); weaker
// orders are TSan's and the stress tests' business.
//
// A model provides:
//   struct State;                               // trivially copyable, no padding
//                                               // (compared and hashed by bytes)
//   static constexpr int kThreads;
//   bool enabled(const State&, int t) const;    // thread t can take a step
//   const char* step(State&, int t) const;      // takes it; returns its label
//   const char* check(const State&) const;      // a broken invariant, or nullptr
//   const char* check_final(const State&) const;  // same, where no thread can step
#pragma once

#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

namespace goro::test::interleave {

struct Result {
  bool violated = false;
  std::string what;                // the broken invariant
  std::vector<std::string> trace;  // the steps that led there, "T<i>: label"
  std::size_t states = 0;          // distinct states visited
  std::string describe() const {
    // Appends only: GCC 12's -Wrestrict misfires on chained operator+.
    std::string s = what;
    s.append(" after:\n");
    for (const std::string& step : trace) {
      s.append("  ").append(step).append("\n");
    }
    return s;
  }
};

template <class Model>
class Explorer {
  using State = typename Model::State;
  static_assert(std::is_trivially_copyable_v<State>);
  static_assert(std::has_unique_object_representations_v<State>,
                "State must have no padding: it is hashed by its bytes");

 public:
  explicit Explorer(const Model& model) : model_(model) {}

  Result run(const State& init) {
    result_ = Result{};
    seen_.clear();
    visit(init);
    result_.states = seen_.size();
    return result_;
  }

 private:
  bool visit(const State& s) {
    std::string key(reinterpret_cast<const char*>(&s), sizeof s);
    if (!seen_.insert(std::move(key)).second) return false;
    if (const char* bad = model_.check(s)) return fail(bad);
    bool any = false;
    for (int t = 0; t < Model::kThreads; ++t) {
      if (!model_.enabled(s, t)) continue;
      any = true;
      State next = s;
      const char* label = model_.step(next, t);
      std::string entry = "T";
      entry.append(std::to_string(t)).append(": ").append(label);
      path_.push_back(std::move(entry));
      if (visit(next)) return true;
      path_.pop_back();
    }
    if (!any) {
      if (const char* bad = model_.check_final(s)) return fail(bad);
    }
    return false;
  }

  bool fail(const char* what) {
    result_.violated = true;
    result_.what = what;
    result_.trace = path_;
    return true;
  }

  const Model& model_;
  Result result_;
  std::unordered_set<std::string> seen_;
  std::vector<std::string> path_;
};

template <class Model>
Result explore(const Model& model, const typename Model::State& init) {
  return Explorer<Model>(model).run(init);
}

}  // namespace goro::test::interleave
