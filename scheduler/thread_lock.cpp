// The checked-build count behind goro/detail/thread_lock.hpp.
#include "goro/detail/thread_lock.hpp"

#include "scheduler/debug.hpp"
#include "scheduler/sched.hpp"

namespace goro::detail {

void thread_lock_count(int delta) noexcept {
#if GORO_CHECKS_ENABLED
  M* m = current_m();
  if (m == nullptr) return;  // a plain thread: no goroutine to switch
  m->thread_locks += delta;
  GORO_CHECK(m->thread_locks >= 0, "sched: thread mutex released twice");
#else
  (void)delta;
#endif
}

}  // namespace goro::detail
