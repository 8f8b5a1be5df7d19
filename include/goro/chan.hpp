// goro::Chan<T>: Go's channel, for goroutines.
//
// Contract
// - `Chan<T> ch(n)` makes a channel with a buffer of n elements (0, the
//   default: unbuffered, every send meets a receive). A Chan is a *handle*:
//   copying it copies a reference to the same channel (a shared_ptr to the
//   channel state), like passing a Go `chan T` around; the channel lives as
//   long as its last handle. `==` compares identity.
// - `send(v) -> bool` blocks (parks the goroutine, never the thread) until a
//   receiver takes the value or there is room in the buffer; it returns false
//   if the channel is or becomes closed, and then the value was not taken
//   (an rvalue argument is left untouched). Go panics on a send to a closed
//   channel; goro returns false (docs/DESIGN.md "The public contract").
// - `recv() -> std::optional<T>` blocks until a value arrives; it is empty
//   once the channel is closed and its buffer drained.
// - `close()` wakes every blocked receiver (they get an empty optional) and
//   every blocked sender (their send returns false). Closing a closed (or nil)
//   channel is a program error: it throws std::logic_error, which, escaping a
//   goroutine, ends the process with status 2 like Go's panic.
// - `try_send` / `try_recv` never block: false / empty when the operation
//   would block (or the channel is closed; use is_closed() to tell apart).
// - `for (T v : ch)` receives until the channel is closed and drained.
// - `Chan<T>::nil()` is the nil channel: send and recv on it block forever,
//   and in a select its case is never chosen (a way to disable a case).
//   A moved-from Chan is nil.
// - Operations are const: they act on the channel, not on the handle (as
//   with a shared_ptr), so a lambda capturing a Chan by value can use it.
// - T needs only to be move-constructible (move-only types are fine); its
//   move constructor must not throw (a throw there terminates). Every value
//   sent is destroyed exactly once: by the receiver that got it, or by the
//   channel's destructor if it is still buffered when the last handle goes.
// - Blocking operations must be called from a goroutine. try_send/try_recv
//   and close may be called from anywhere (another thread, a timer).
//
// Mechanism (scheduler/sync/chan.cpp): Go's hchan. One lock per channel, a
// ring buffer, and two queues of parked waiters (Go's sudogs). A sender that
// finds a parked receiver moves its value straight into the receiver's slot
// and readies it (runnext), so an unbuffered hand-off costs one switch. The
// element type is erased behind a small table of move/destroy functions, so
// the algorithm (and select) is compiled once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "goro/detail/park.hpp"

namespace goro {
template <class T>
class Chan;
}

namespace goro::detail {

// How the channel core moves elements of a T it does not know.
struct ElemOps {
  std::size_t size;
  // new (slot) T(std::move(*src))
  void (*to_slot)(void* slot, void* src) noexcept;
  // dst (a std::optional<T>*)->emplace(std::move(*src))
  void (*to_result)(void* dst, void* src) noexcept;
  // slot->~T()
  void (*destroy)(void* slot) noexcept;
};

template <class T>
struct ElemOpsFor {
  static void to_slot(void* slot, void* src) noexcept {
    ::new (slot) T(std::move(*static_cast<T*>(src)));
  }
  static void to_result(void* dst, void* src) noexcept {
    static_cast<std::optional<T>*>(dst)->emplace(std::move(*std::launder(static_cast<T*>(src))));
  }
  static void destroy(void* slot) noexcept { std::launder(static_cast<T*>(slot))->~T(); }
  static constexpr ElemOps ops{sizeof(T), &to_slot, &to_result, &destroy};
};

struct SelectSync;

// A goroutine parked on a channel or a semaphore (Go's sudog). Lives in the
// parked goroutine's frame; linked into a wait queue under that queue's lock.
// Whoever dequeues it owns it until it readies `g`; after ready() it must not
// touch it again.
struct Waiter {
  G* g = nullptr;
  Waiter* next = nullptr;
  Waiter* prev = nullptr;
  // Channel: a sender's T* (the value to move out), or a receiver's
  // std::optional<T>* (where the value goes).
  void* elem = nullptr;
  // Non-null when the waiter belongs to a select: the first channel to win
  // sel->done (0 -> 1) completes the select; the others skip this waiter.
  SelectSync* sel = nullptr;
  // Select: the case index. Cond: the ticket.
  std::uint32_t index = 0;
  // Channel: true if a value was exchanged, false if close() woke us.
  // Semaphore: true if the releaser handed us the count directly (Go's ticket).
  bool success = false;
};

// Intrusive FIFO of waiters. Operations are in scheduler/sync/waitq.hpp.
struct WaitQueue {
  Waiter* first = nullptr;
  Waiter* last = nullptr;
};

// The type-erased channel (Go's hchan). Every field but `ops`/`cap`/`buf`
// is guarded by `lock_word`.
struct ChanCore {
  ChanCore(const ElemOps* o, std::size_t c, unsigned char* b) : ops(o), cap(c), buf(b) {}
  ChanCore(const ChanCore&) = delete;
  ChanCore& operator=(const ChanCore&) = delete;

  std::atomic<std::uint32_t> lock_word{0};  // 0 free, 1 held, 2 held with sleepers
  const ElemOps* ops;
  const std::size_t cap;
  unsigned char* const buf;  // cap slots of ops->size bytes; nullptr if unbuffered
  std::size_t count = 0;     // buffered elements
  std::size_t recvx = 0;     // next slot to receive from
  std::size_t sendx = 0;     // next slot to send into
  bool closed = false;
  WaitQueue recvq;  // parked receivers
  WaitQueue sendq;  // parked senders
};

template <class T>
struct ChanState : ChanCore {
  explicit ChanState(std::size_t c)
      : ChanCore(&ElemOpsFor<T>::ops, c,
                 c == 0 ? nullptr
                        : static_cast<unsigned char*>(
                              ::operator new (c * sizeof(T), std::align_val_t{alignof(T)}))) {}
  ~ChanState() {
    if (buf == nullptr) return;
    for (std::size_t i = 0, at = recvx; i < count; ++i, at = at + 1 == cap ? 0 : at + 1)
      ElemOpsFor<T>::destroy(buf + at * sizeof(T));
    ::operator delete (buf, std::align_val_t{alignof(T)});
  }
};

enum class ChanResult : std::uint8_t { kOk, kClosed, kWouldBlock };

// The channel algorithm (scheduler/sync/chan.cpp). `c` may be nullptr (the
// nil channel). `src` is a T* (moved from only on kOk); `dst` a
// std::optional<T>* (emplaced only on kOk).
ChanResult chan_send(ChanCore* c, void* src, bool block);
ChanResult chan_recv(ChanCore* c, void* dst, bool block);
void chan_close(ChanCore* c);  // throws std::logic_error if closed or nil
std::size_t chan_len(ChanCore* c);
bool chan_is_closed(ChanCore* c);

// Doorway for goro's own layers (time.hpp's after()) to wrap a state of a
// derived type in a handle.
struct ChanAccess {
  template <class T>
  static Chan<T> adopt(std::shared_ptr<ChanState<T>> s);
  template <class T>
  static ChanCore* core(const Chan<T>& ch) {
    return ch.s_.get();
  }
};

}  // namespace goro::detail

namespace goro {

template <class T>
class Chan {
  static_assert(std::is_move_constructible_v<T>, "goro::Chan<T> needs a move-constructible T");
  static_assert(!std::is_reference_v<T> && !std::is_const_v<T>,
                "goro::Chan<T>: T must be a value type");

 public:
  using value_type = T;

  // An unbuffered channel.
  Chan() : Chan(0) {}
  // A channel with room for `capacity` buffered values (0: unbuffered).
  explicit Chan(std::size_t capacity) : s_(std::make_shared<detail::ChanState<T>>(capacity)) {}
  // The nil channel (see the contract above).
  static Chan nil() { return Chan(Nil{}); }

  // Blocks until the value is taken or buffered; false if the channel is
  // closed (the value is then not taken).
  bool send(T&& v) const {
    return detail::chan_send(s_.get(), &v, true) == detail::ChanResult::kOk;
  }
  bool send(const T& v) const requires std::is_copy_constructible_v<T> {
    T copy(v);
    return send(std::move(copy));
  }

  // Blocks until a value arrives; empty once closed and drained.
  std::optional<T> recv() const {
    std::optional<T> out;
    detail::chan_recv(s_.get(), &out, true);
    return out;
  }

  // Non-blocking: false if the send would block or the channel is closed.
  bool try_send(T&& v) const {
    return detail::chan_send(s_.get(), &v, false) == detail::ChanResult::kOk;
  }
  bool try_send(const T& v) const requires std::is_copy_constructible_v<T> {
    T copy(v);
    return try_send(std::move(copy));
  }

  // Non-blocking: empty if no value is ready (or closed and drained).
  std::optional<T> try_recv() const {
    std::optional<T> out;
    detail::chan_recv(s_.get(), &out, false);
    return out;
  }

  void close() const { detail::chan_close(s_.get()); }

  std::size_t len() const { return s_ ? detail::chan_len(s_.get()) : 0; }
  std::size_t cap() const { return s_ ? s_->cap : 0; }
  bool is_closed() const { return s_ && detail::chan_is_closed(s_.get()); }
  bool is_nil() const { return s_ == nullptr; }

  friend bool operator==(const Chan& a, const Chan& b) { return a.s_ == b.s_; }

  // Range-style receive: `for (T v : ch)` (or `for (auto&& v : ch)`).
  class iterator {
   public:
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    T&& operator*() const { return std::move(*cur_); }
    iterator& operator++() {
      cur_ = ch_->recv();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) { return !it.cur_; }

   private:
    friend class Chan;
    explicit iterator(const Chan* ch) : ch_(ch), cur_(ch->recv()) {}
    const Chan* ch_ = nullptr;
    mutable std::optional<T> cur_;
  };
  iterator begin() const { return iterator(this); }
  std::default_sentinel_t end() const { return {}; }

 private:
  friend struct detail::ChanAccess;
  struct Nil {};
  explicit Chan(Nil) {}
  explicit Chan(std::shared_ptr<detail::ChanState<T>> s) : s_(std::move(s)) {}

  std::shared_ptr<detail::ChanState<T>> s_;
};

template <class T>
Chan<T> detail::ChanAccess::adopt(std::shared_ptr<ChanState<T>> s) {
  return Chan<T>(std::move(s));
}

}  // namespace goro
