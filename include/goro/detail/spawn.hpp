// goro::detail spawn glue: type-erases a goroutine's callable without a heap
// allocation. A callable of up to 64 bytes is move-constructed into the G
// itself (the goroutine gets its stack when it first runs); a larger one into
// the top of the new goroutine's own stack, bound at spawn (the runtime
// reserves room above the first frame), so spawning costs no malloc whatever
// the callable's size, up to a quarter of the stack; larger callables fall
// back to the heap. Internal: not part of the API.
#pragma once

#include <cstddef>
#include <functional>
#include <new>
#include <source_location>
#include <type_traits>
#include <utility>

#include "goro/detail/park.hpp"

namespace goro::detail {

struct G;

// The goroutine body as the runtime sees it: `invoke` runs the callable stored
// at `storage`, then `destroy` ends its lifetime. Both run on the goroutine.
struct TaskVTable {
  void (*invoke)(void* storage);
  void (*destroy)(void* storage);
};

// Allocates a G with a stack of `stack_size` (0: default) and room for a
// callable of `fn_size`/`fn_align`; *storage receives where to construct it.
// Throws goro::SpawnError when no stack can be mapped.
G* new_g(std::size_t stack_size, std::size_t fn_size, std::size_t fn_align, void** storage,
         const std::source_location& where);
// Frees a G whose callable failed to construct.
void abandon_g(G* g) noexcept;
// Sets the body and makes the G runnable (runnext of the current P, Go's newproc).
void start_g(G* g, const TaskVTable* vt) noexcept;

// Sets the body and leaves the G parked (kWaiting, `why`) instead of
// runnable: the caller hands it at once to whoever will ready() it (a wait
// slot of the netpoller: spawn_parked below).
void start_g_parked(G* g, const TaskVTable* vt, WaitReason why) noexcept;
int run_main(std::function<int()> body, int maxprocs, std::size_t stack_size, int max_threads);

template <class Fn>
struct TaskOps {
  static void invoke(void* p) { std::invoke(*static_cast<Fn*>(p)); }
  static void destroy(void* p) { static_cast<Fn*>(p)->~Fn(); }
  static constexpr TaskVTable vtable{&invoke, &destroy};
};

// A G holding `fn` (moved in), not yet started; the body's vtable goes to
// start_g or start_g_parked. Throws as goro::go; `fn` is then left as it was
// unless its own move constructor threw.
template <class F>
G* make_g(F&& fn, std::size_t stack_size, const std::source_location& where) {
  using Fn = std::decay_t<F>;
  static_assert(std::is_invocable_v<Fn&>, "goro::go needs a callable taking no arguments");
  void* storage = nullptr;
  G* g = new_g(stack_size, sizeof(Fn), alignof(Fn), &storage, where);
  try {
    ::new (storage) Fn(std::forward<F>(fn));
  } catch (...) {
    abandon_g(g);
    throw;
  }
  return g;
}

template <class F>
void spawn(F&& fn, std::size_t stack_size, const std::source_location& where) {
  G* g = make_g(std::forward<F>(fn), stack_size, where);
  start_g(g, &TaskOps<std::decay_t<F>>::vtable);
}

// A goroutine born parked: `fn` runs once whatever `hand_off(g, arg)` gave
// the G to readies it (NetFd::go_when_readable: the netpoller, when the
// socket is readable). With a callable of up to 64 bytes and the default
// stack size it holds no stack until then (late stack binding): a G and a
// stack credit. `hand_off` runs on the spawning goroutine and must not park.
template <class F>
void spawn_parked(F&& fn, std::size_t stack_size, const std::source_location& where, WaitReason why,
                  void (*hand_off)(G* g, void* arg), void* arg) {
  G* g = make_g(std::forward<F>(fn), stack_size, where);
  start_g_parked(g, &TaskOps<std::decay_t<F>>::vtable, why);
  hand_off(g, arg);
}

}  // namespace goro::detail
