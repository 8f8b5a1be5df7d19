// goro::select: wait on several channel operations at once (Go's select).
//
//   std::size_t i = goro::select(
//       goro::recv(jobs, [&](std::optional<Job> j) { ... }),   // j empty: jobs closed
//       goro::send(results, r, [&](bool sent) { ... }),        // sent false: results closed
//       goro::recv(ctx.done()),                                // no callback needed
//       goro::after_case(100ms, [&] { ... }),                  // or deadline_case(tp, f)
//       goro::default_case([&] { ... }));                      // don't block at all
//
// Contract
// - Returns the position (0-based, among select's arguments) of the case that
//   was chosen, after running that case's callback (if it has one); the other
//   callbacks do not run. Callbacks are optional for every kind of case.
// - A receive case completes with a value, or with an empty optional when the
//   channel is closed and drained. A send case completes when its value was
//   taken or buffered (callback gets `true`), or when the channel is closed
//   (`false`: goro does not panic there, see chan.hpp). A send case's value
//   is moved into the case when it is built; if another case wins, it is
//   destroyed unsent.
// - If several cases can proceed, one is chosen uniformly at random (Go's
//   fairness guarantee). Otherwise: with a default case, it is chosen at
//   once; else the goroutine parks until some case can proceed or the
//   deadline of an after_case/deadline_case passes.
// - At most one default case and at most one timer case per select (a
//   compile-time check). select() with no cases blocks forever. A case on a
//   nil channel (Chan<T>::nil()) never proceeds.
// - Channels passed as lvalues are referenced (they must outlive the select
//   call, as any argument does); rvalue channels (`ctx.done()`) are kept alive
//   by the case itself.
// - When select returns, the goroutine is queued on no channel and no timer
//   is left armed. Blocking selects must run on a goroutine; a select with a
//   default case may run anywhere.
//
// Mechanism: scheduler/sync/select.cpp (Go's selectgo: random poll order,
// locks in address order, one waiter per case, dequeue from all on wake).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "goro/chan.hpp"
#include "goro/runtime.hpp"

namespace goro::detail {

enum class CaseKind : std::uint8_t { kNone, kRecv, kSend };

// One case as the type-erased algorithm sees it.
struct SelectCase {
  ChanCore* chan = nullptr;  // nullptr: nil channel, default or timer case
  void* elem = nullptr;      // send: T*; receive: std::optional<T>*
  CaseKind kind = CaseKind::kNone;
  Waiter waiter;  // waiter.success: the operation's outcome (see Waiter)
};

inline constexpr std::int64_t kNoDeadline = std::numeric_limits<std::int64_t>::max();
inline constexpr std::size_t kSelectDefault = std::numeric_limits<std::size_t>::max();
inline constexpr std::size_t kSelectTimeout = kSelectDefault - 1;

// scheduler/sync/select.cpp. `scratch` holds 2*n entries. Returns the index
// of the completed case, kSelectDefault or kSelectTimeout.
std::size_t select_impl(SelectCase* cases, std::uint16_t* scratch, std::size_t n, bool has_default,
                        std::int64_t deadline);

struct NoCallback {};

struct SelectPlan {
  bool has_default = false;
  std::size_t default_index = 0;
  std::int64_t deadline = kNoDeadline;
  std::size_t timer_index = 0;
};

template <class F, class... Args>
void invoke_case_callback(F& f, Args&&... args) {
  if constexpr (std::is_same_v<F, NoCallback>) {
    // nothing to run
  } else if constexpr (std::is_invocable_v<F&, Args...>) {
    f(std::forward<Args>(args)...);
  } else {
    static_assert(std::is_invocable_v<F&>, "goro::select: a case callback has the wrong signature");
    f();
  }
}

inline std::int64_t to_nanotime(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace goro::detail

namespace goro {

template <class T, class F>
class RecvCase {
 public:
  RecvCase(const Chan<T>* ref, Chan<T> owned, F f) : owned_(std::move(owned)), f_(std::move(f)) {
    core_ = detail::ChanAccess::core(ref != nullptr ? *ref : owned_);
  }
  void plan(detail::SelectCase& sc, detail::SelectPlan&, std::size_t) {
    sc.chan = core_;
    sc.elem = &result_;
    sc.kind = detail::CaseKind::kRecv;
  }
  void complete(detail::SelectCase&) { detail::invoke_case_callback(f_, std::move(result_)); }

 private:
  Chan<T> owned_;
  detail::ChanCore* core_ = nullptr;
  F f_;
  std::optional<T> result_;
};

template <class T, class F>
class SendCase {
 public:
  SendCase(const Chan<T>* ref, Chan<T> owned, T value, F f)
      : owned_(std::move(owned)), value_(std::move(value)), f_(std::move(f)) {
    core_ = detail::ChanAccess::core(ref != nullptr ? *ref : owned_);
  }
  void plan(detail::SelectCase& sc, detail::SelectPlan&, std::size_t) {
    sc.chan = core_;
    sc.elem = &value_;
    sc.kind = detail::CaseKind::kSend;
  }
  void complete(detail::SelectCase& sc) {
    detail::invoke_case_callback(f_, static_cast<bool>(sc.waiter.success));
  }

 private:
  Chan<T> owned_;
  detail::ChanCore* core_ = nullptr;
  T value_;
  F f_;
};

template <class F>
class DefaultCase {
 public:
  explicit DefaultCase(F f) : f_(std::move(f)) {}
  void plan(detail::SelectCase&, detail::SelectPlan& p, std::size_t i) {
    p.has_default = true;
    p.default_index = i;
  }
  void complete(detail::SelectCase&) { detail::invoke_case_callback(f_); }

 private:
  F f_;
};

template <class F>
class TimerCase {
 public:
  TimerCase(std::int64_t when, F f) : when_(when), f_(std::move(f)) {}
  void plan(detail::SelectCase&, detail::SelectPlan& p, std::size_t i) {
    p.deadline = when_;
    p.timer_index = i;
  }
  void complete(detail::SelectCase&) { detail::invoke_case_callback(f_); }

 private:
  std::int64_t when_;
  F f_;
};

// Receive from `ch`; f(std::optional<T>) or f() runs if chosen.
template <class T, class F = detail::NoCallback>
[[nodiscard]] RecvCase<T, F> recv(const Chan<T>& ch, F f = {}) {
  return RecvCase<T, F>(&ch, Chan<T>::nil(), std::move(f));
}
template <class T, class F = detail::NoCallback>
[[nodiscard]] RecvCase<T, F> recv(Chan<T>&& ch, F f = {}) {
  return RecvCase<T, F>(nullptr, std::move(ch), std::move(f));
}

// Send `value` on `ch`; f(bool sent) or f() runs if chosen.
template <class T, class V, class F = detail::NoCallback>
[[nodiscard]] SendCase<T, F> send(const Chan<T>& ch, V&& value, F f = {}) {
  return SendCase<T, F>(&ch, Chan<T>::nil(), T(std::forward<V>(value)), std::move(f));
}
template <class T, class V, class F = detail::NoCallback>
[[nodiscard]] SendCase<T, F> send(Chan<T>&& ch, V&& value, F f = {}) {
  return SendCase<T, F>(nullptr, std::move(ch), T(std::forward<V>(value)), std::move(f));
}

// Chosen at once if no other case can proceed.
template <class F = detail::NoCallback>
[[nodiscard]] DefaultCase<F> default_case(F f = {}) {
  return DefaultCase<F>(std::move(f));
}

// Chosen when `d` has passed (measured from when the case is built) and no
// other case proceeded first.
template <class F = detail::NoCallback>
[[nodiscard]] TimerCase<F> after_case(std::chrono::nanoseconds d, F f = {}) {
  return TimerCase<F>(detail::nanotime() + std::max<std::int64_t>(0, d.count()), std::move(f));
}
// Chosen when steady_clock reaches `t` and no other case proceeded first.
template <class F = detail::NoCallback>
[[nodiscard]] TimerCase<F> deadline_case(std::chrono::steady_clock::time_point t, F f = {}) {
  return TimerCase<F>(detail::to_nanotime(t), std::move(f));
}

namespace detail {
template <class C>
struct IsDefaultCase : std::false_type {};
template <class F>
struct IsDefaultCase<DefaultCase<F>> : std::true_type {};
template <class C>
struct IsTimerCase : std::false_type {};
template <class F>
struct IsTimerCase<TimerCase<F>> : std::true_type {};
}  // namespace detail

// See the contract at the top of this file.
template <class... Cases>
std::size_t select(Cases&&... cases) {
  constexpr std::size_t n = sizeof...(Cases);
  static_assert((detail::IsDefaultCase<std::decay_t<Cases>>::value + ... + 0) <= 1,
                "goro::select: at most one default_case");
  static_assert((detail::IsTimerCase<std::decay_t<Cases>>::value + ... + 0) <= 1,
                "goro::select: at most one after_case/deadline_case");
  static_assert(n < 0x10000, "goro::select: too many cases");
  std::array<detail::SelectCase, n == 0 ? 1 : n> sc{};
  std::array<std::uint16_t, n == 0 ? 2 : 2 * n> scratch;
  detail::SelectPlan plan;
  {
    std::size_t i = 0;
    ((cases.plan(sc[i], plan, i), ++i), ...);
  }
  std::size_t chosen =
      detail::select_impl(sc.data(), scratch.data(), n, plan.has_default, plan.deadline);
  if (chosen == detail::kSelectDefault) chosen = plan.default_index;
  if (chosen == detail::kSelectTimeout) chosen = plan.timer_index;
  {
    std::size_t i = 0;
    ((i++ == chosen ? cases.complete(sc[chosen]) : void()), ...);
  }
  return chosen;
}

}  // namespace goro
