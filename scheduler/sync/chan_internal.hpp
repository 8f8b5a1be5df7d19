// Channel internals shared by chan.cpp and select.cpp. Every function here
// runs with the channel's lock held (except the lock functions themselves).
#pragma once

#include "goro/chan.hpp"
#include "scheduler/sync/lock.hpp"

namespace goro::detail {

// Inline: a channel round trip takes four of each.
inline void chan_lock(ChanCore* c) noexcept {
  lock_word_acquire(c->lock_word);
}
inline void chan_unlock(ChanCore* c) noexcept {
  lock_word_release(c->lock_word);
}

inline unsigned char* chan_slot(ChanCore* c, std::size_t i) noexcept {
  return c->buf + i * c->ops->size;
}

// Completes a parked receiver `w` (dequeued) with the value at src.
void chan_send_to_waiter(ChanCore* c, Waiter* w, void* src) noexcept;
// Completes a parked sender `w` (dequeued), delivering into dst.
void chan_recv_from_waiter(ChanCore* c, Waiter* w, void* dst) noexcept;
// Buffer push (count < cap) and pop (count > 0).
void chan_buffer_put(ChanCore* c, void* src) noexcept;
void chan_buffer_take(ChanCore* c, void* dst) noexcept;

}  // namespace goro::detail
