// goro::Context: cancellation and deadlines across a tree of goroutines
// (Go's context package, without values).
//
// Example:
//   goro::Chan<int> results(1);
//   auto [ctx, cancel] = goro::with_timeout(goro::Context::background(), 2s);
//   goro::go([ctx = ctx, results] {
//     if (ctx.err()) return;  // canceled or past the deadline: give up
//     results.try_send(42);
//   });
//   int answer = -1;
//   goro::select(goro::recv(results, [&](std::optional<int> v) { answer = v.value_or(-1); }),
//                goro::recv(ctx.done(), [] {}));  // the deadline first: answer stays -1
//   cancel();  // releases the context's resources; call it when done
//
// Contract
// - Context is a cheap handle (shared ownership); copy it freely, across
//   goroutines. `Context{}` / `background()` is never canceled and has no
//   deadline; its done() is the nil channel (never ready in a select, as Go's
//   Background().Done() == nil).
// - A derived context is canceled when its CancelFunc is called, when its
//   deadline passes, or when its parent is canceled, whichever comes first;
//   cancellation flows down the tree, never up. Once canceled, done() is
//   closed (every receive and select case on it proceeds) and err() returns
//   ContextErrc::canceled or ContextErrc::deadline_exceeded (as a
//   std::error_code, category "goro.context"; "context canceled", "context
//   deadline exceeded"). Before that err() is empty.
// - A child's deadline is never later than its parent's.
// - CancelFunc is copyable; calling it more than once is harmless. Call it as
//   soon as the work is done: until then the parent keeps track of the child
//   and a pending deadline keeps its timer armed (Go's `defer cancel()`).
// - Everything here may be called from any goroutine; cancel also from any
//   thread. A Context with a pending deadline must not outlive goro::run.
//
// Mechanism: scheduler/sync/context.cpp.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>
#include <variant>

#include "goro/chan.hpp"

namespace goro {

enum class ContextErrc { canceled = 1, deadline_exceeded = 2 };
const std::error_category& context_category() noexcept;
inline std::error_code make_error_code(ContextErrc e) noexcept {
  return {static_cast<int>(e), context_category()};
}

}  // namespace goro

template <>
struct std::is_error_code_enum<goro::ContextErrc> : std::true_type {};

namespace goro {

namespace detail {
struct ContextState;
// Derived contexts alive in the process now (a leak check for tests).
std::int64_t context_states_alive() noexcept;
}  // namespace detail
class Context;
class CancelFunc;
std::pair<Context, CancelFunc> with_cancel(const Context& parent);
std::pair<Context, CancelFunc> with_deadline(const Context& parent,
                                             std::chrono::steady_clock::time_point deadline);

class Context {
 public:
  // The background context.
  Context() = default;
  static Context background() { return Context(); }

  // Closed when the context is canceled; nil for the background context.
  Chan<std::monostate> done() const;
  // Empty until canceled; then ContextErrc::canceled or ::deadline_exceeded.
  std::error_code err() const;
  bool is_done() const { return static_cast<bool>(err()); }
  // When the context will be canceled by its deadline, if it has one.
  std::optional<std::chrono::steady_clock::time_point> deadline() const;

 private:
  friend struct detail::ContextState;
  friend std::pair<Context, CancelFunc> with_cancel(const Context& parent);
  friend std::pair<Context, CancelFunc> with_deadline(const Context& parent,
                                                      std::chrono::steady_clock::time_point);
  explicit Context(std::shared_ptr<detail::ContextState> s) : s_(std::move(s)) {}
  std::shared_ptr<detail::ContextState> s_;
};

// Cancels the context it came with (and its descendants).
class CancelFunc {
 public:
  CancelFunc() = default;
  void operator()() const;

 private:
  friend struct detail::ContextState;
  explicit CancelFunc(std::shared_ptr<detail::ContextState> s) : s_(std::move(s)) {}
  std::shared_ptr<detail::ContextState> s_;
};

std::pair<Context, CancelFunc> with_cancel(const Context& parent);
std::pair<Context, CancelFunc> with_deadline(const Context& parent,
                                             std::chrono::steady_clock::time_point deadline);
std::pair<Context, CancelFunc> with_timeout(const Context& parent,
                                            std::chrono::nanoseconds timeout);

}  // namespace goro
