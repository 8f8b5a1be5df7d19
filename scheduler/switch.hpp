// The one place that switches stacks, with the sanitizer annotations that keep
// the ASan and TSan builds meaningful (docs/DESIGN.md "Context switch").
//
// ASan: __sanitizer_start_switch_fiber before the switch names the stack we
// go to (and saves our fake stack, or frees it when the goroutine is exiting);
// __sanitizer_finish_switch_fiber on the landing side restores ours and tells
// us the bounds of the stack we came from (that is how the bounds of each M's
// own thread stack, g0, are learnt on its first switch).
// TSan: each G has a fiber; __tsan_switch_to_fiber immediately before the
// switch. Happens-before between the Ms comes from the run queues' atomics.
#pragma once

#include "scheduler/context.hpp"
#include "scheduler/sched.hpp"

#if defined(GORO_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(GORO_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace goro::detail {

inline void switch_context([[maybe_unused]] M* m, Context* from, Context* to, bool from_exiting) {
#if defined(GORO_ASAN)
  m->switch_from = from;
  __sanitizer_start_switch_fiber(from_exiting ? nullptr : &from->asan_fake_stack, to->stack_bottom,
                                 to->stack_size);
#else
  (void)from_exiting;
#endif
#if defined(GORO_TSAN)
  __tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
  ctx_switch(&from->sp, to->sp);
}

// First thing on the landing side of every switch. `self` is the context now
// running; `m` must be re-read by the caller after the switch (current_m()).
inline void finish_switch_sanitizers([[maybe_unused]] M* m, [[maybe_unused]] Context* self) {
#if defined(GORO_ASAN)
  const void* bottom = nullptr;
  std::size_t size = 0;
  __sanitizer_finish_switch_fiber(self->asan_fake_stack, &bottom, &size);
  Context* from = m->switch_from;
  if (from != nullptr && from->stack_bottom == nullptr) {
    from->stack_bottom = bottom;
    from->stack_size = size;
  }
#endif
}

}  // namespace goro::detail
