// goro::Context (Go's context package: cancelCtx and timerCtx).
//
// ## The tree
// Each derived context is a ContextState holding a strong reference to its
// parent's state and a done channel. A cancellable parent keeps its live
// children in a map of *weak* references, so the tree never keeps a child
// alive on its own: a child lives as long as user handles (Context,
// CancelFunc) or its own armed timer do. cancel() sets err once, closes done,
// stops the timer, cancels the children it can still reach (outside its own
// lock), and unregisters from the parent; a child that dies uncanceled
// unregisters in its destructor.
//
// ## The deadline timer and its lifetime
// The runtime's timer contract says the Timer record is touched by the
// runtime after its callback returns (the `running` flag), and that
// timer_stop() must never be called from the timer's own callback. A
// context's last reference can, however, be dropped inside its own callback
// (the callback cancels it; nobody else holds it). So:
// - While the timer is armed it holds a strong reference (`timer_ref`).
//   Exactly one party takes that reference back: the callback when it fires,
//   or cancel() before stopping the timer (whoever swaps it out under the
//   lock first). The other party finds it empty and does nothing.
// - The Timer records come from a small process-wide pool and go back to it
//   when the state dies, never freed: a record whose callback is still
//   returning (running == true) is not handed out again until the runtime
//   has cleared `running`. So the destructor never needs timer_stop, and
//   a state destroyed inside its own callback is safe.
// - The timer is armed under the state's lock, after checking err: a cancel
//   racing with the arming either sees timer_ref set (and stops the timer)
//   or happened before (and the timer is never armed).
// Lock order: a context's lock, then (arming) the P's timer-heap lock. A
// callback runs with no heap lock held. Parent and child locks are never held
// together.
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "goro/context.hpp"
#include "goro/detail/timer.hpp"
#include "scheduler/sync/lock.hpp"

namespace goro {
namespace {

class ContextCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "goro.context"; }
  std::string message(int ev) const override {
    switch (static_cast<ContextErrc>(ev)) {
      case ContextErrc::canceled:
        return "context canceled";
      case ContextErrc::deadline_exceeded:
        return "context deadline exceeded";
    }
    return "unknown context error";
  }
};

}  // namespace

const std::error_category& context_category() noexcept {
  static const ContextCategory category;
  return category;
}

namespace detail {
namespace {

constexpr std::int64_t kNoDeadline = INT64_MAX;

// Timer records that may still be finishing a callback (see the essay).
// Never destroyed: the records stay reachable for LeakSanitizer after exit.
std::mutex g_pool_mu;
std::vector<Timer*>& g_pool = *new std::vector<Timer*>;

Timer* timer_pool_get() {
  {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    // Look at a few of the most recently returned; an older one is the most
    // likely to have finished, but any idle one will do.
    for (std::size_t tries = 0; tries < 4 && tries < g_pool.size(); ++tries) {
      std::size_t i = g_pool.size() - 1 - tries;
      Timer* t = g_pool[i];
      // acquire pairs with the runtime's release store of running = false.
      if (!t->running.load(std::memory_order_acquire) &&
          t->heap.load(std::memory_order_acquire) == nullptr) {
        g_pool[i] = g_pool.back();
        g_pool.pop_back();
        return t;
      }
    }
  }
  return new Timer;
}

void timer_pool_put(Timer* t) {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  g_pool.push_back(t);
}

// Derived contexts alive now (context_states_alive, for tests).
std::atomic<std::int64_t> g_states_alive{0};

}  // namespace

std::int64_t context_states_alive() noexcept {
  return g_states_alive.load(std::memory_order_relaxed);
}

struct ContextState {
  ContextState() { g_states_alive.fetch_add(1, std::memory_order_relaxed); }
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;

  std::shared_ptr<ContextState> parent;
  std::int64_t deadline = kNoDeadline;
  Chan<std::monostate> done{0};
  std::atomic<int> errc{0};  // ContextErrc, or 0; set once under lock_word
  std::atomic<std::uint32_t> lock_word{0};
  std::unordered_map<ContextState*, std::weak_ptr<ContextState>> children;  // (lock)
  Timer* timer = nullptr;                   // (lock) from the pool, if a deadline was armed
  std::shared_ptr<ContextState> timer_ref;  // (lock) set while the timer is armed

  ~ContextState() {
    g_states_alive.fetch_sub(1, std::memory_order_relaxed);
    if (timer != nullptr) timer_pool_put(timer);  // not armed: timer_ref would keep us alive
    if (parent != nullptr) {
      WordLock lock(parent->lock_word);
      parent->children.erase(this);
    }
  }

  void cancel(ContextErrc err, bool remove_from_parent) {
    std::unordered_map<ContextState*, std::weak_ptr<ContextState>> kids;
    std::shared_ptr<ContextState> armed;
    {
      WordLock lock(lock_word);
      if (errc.load(std::memory_order_relaxed) != 0) return;
      // release pairs with err()'s acquire: done is about to be closed.
      errc.store(static_cast<int>(err), std::memory_order_release);
      kids.swap(children);
      armed = std::move(timer_ref);
    }
    // Our caller holds a reference, so dropping `armed` below cannot be last.
    if (armed != nullptr) timer_stop(timer);
    done.close();
    for (auto& [raw, weak] : kids) {
      if (std::shared_ptr<ContextState> child = weak.lock()) child->cancel(err, false);
    }
    if (remove_from_parent && parent != nullptr) {
      WordLock lock(parent->lock_word);
      parent->children.erase(this);
    }
  }

  static void deadline_fired(void* arg, std::uint64_t) {
    auto* self = static_cast<ContextState*>(arg);
    std::shared_ptr<ContextState> keep;
    {
      WordLock lock(self->lock_word);
      keep = std::move(self->timer_ref);
    }
    // Empty: cancel() took the reference first and waits in timer_stop for us.
    if (keep != nullptr) keep->cancel(ContextErrc::deadline_exceeded, true);
    // Dropping `keep` may destroy the state here; its Timer is pooled, not freed.
  }

  // Links a new child under `parent` (Go's propagateCancel).
  static std::shared_ptr<ContextState> make_child(const std::shared_ptr<ContextState>& parent,
                                                  std::int64_t deadline) {
    auto s = std::make_shared<ContextState>();
    s->parent = parent;
    s->deadline = deadline;
    if (parent == nullptr) return s;  // background: never canceled
    int parent_err;
    {
      WordLock lock(parent->lock_word);
      parent_err = parent->errc.load(std::memory_order_relaxed);
      if (parent_err == 0) parent->children.emplace(s.get(), s);
    }
    if (parent_err != 0) s->cancel(static_cast<ContextErrc>(parent_err), false);
    return s;
  }

  static std::pair<goro::Context, CancelFunc> wrap(std::shared_ptr<ContextState> s) {
    return {goro::Context(s), CancelFunc(s)};
  }
};

}  // namespace detail

Chan<std::monostate> Context::done() const {
  return s_ != nullptr ? s_->done : Chan<std::monostate>::nil();
}

std::error_code Context::err() const {
  if (s_ == nullptr) return {};
  int e = s_->errc.load(std::memory_order_acquire);
  return e == 0 ? std::error_code() : make_error_code(static_cast<ContextErrc>(e));
}

std::optional<std::chrono::steady_clock::time_point> Context::deadline() const {
  if (s_ == nullptr || s_->deadline == detail::kNoDeadline) return std::nullopt;
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(s_->deadline));
}

void CancelFunc::operator()() const {
  if (s_ != nullptr) s_->cancel(ContextErrc::canceled, true);
}

std::pair<Context, CancelFunc> with_cancel(const Context& parent) {
  const std::int64_t deadline = parent.s_ != nullptr ? parent.s_->deadline : detail::kNoDeadline;
  return detail::ContextState::wrap(detail::ContextState::make_child(parent.s_, deadline));
}

std::pair<Context, CancelFunc> with_deadline(const Context& parent,
                                             std::chrono::steady_clock::time_point deadline) {
  using detail::ContextState;
  const std::int64_t when =
      std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
  if (parent.s_ != nullptr && parent.s_->deadline <= when) {
    return with_cancel(parent);  // the parent's deadline comes first anyway
  }
  std::shared_ptr<ContextState> s = ContextState::make_child(parent.s_, when);
  if (when <= detail::nanotime()) {
    s->cancel(ContextErrc::deadline_exceeded, true);
    return ContextState::wrap(std::move(s));
  }
  {
    detail::WordLock lock(s->lock_word);
    if (s->errc.load(std::memory_order_relaxed) == 0) {
      s->timer = detail::timer_pool_get();
      s->timer->when = when;
      s->timer->fn = &ContextState::deadline_fired;
      s->timer->arg = s.get();
      s->timer->seq = 0;
      s->timer_ref = s;
      detail::timer_start(s->timer);
    }
  }
  return ContextState::wrap(std::move(s));
}

std::pair<Context, CancelFunc> with_timeout(const Context& parent,
                                            std::chrono::nanoseconds timeout) {
  return with_deadline(parent, std::chrono::steady_clock::now() + timeout);
}

}  // namespace goro
