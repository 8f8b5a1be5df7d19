// NetFd: a non-blocking socket registered with the netpoller, and the
// syscall-first I/O loops on it (Go's internal/poll.FD). Internal to goro::net.
//
// ## Lifetime (Go's fdMutex, reduced to a reference count)
// `state_` packs a closed bit and a count of references. The owner holds one
// reference from open() until close(); every operation holds one while it
// runs. close() sets the closed bit, evicts the poll descriptor (waking the
// operations parked in it with errc::closed) and drops the owner's reference;
// whoever drops the last reference deregisters the descriptor and close(2)s
// the fd, then sets the destroyed bit, its last touch of the object. So an fd
// number is never closed (and reused by the kernel) while a goroutine may
// still pass it to a syscall. The destructor waits for the destroyed bit:
// when a close() from another goroutine wakes the owner's parked read and
// the owner destroys the Conn at once, the closer may still be between its
// wake-up and its release() (a use after free before; caught by the debug
// preset's perturbed scheduling in tls_test). Only close() gets this grace:
// any other use still needs the Conn alive (goro/net.hpp). Unlike Go's fdMutex, operations
// in the same direction are not serialised: the wait slot allows one waiter.
//
// ## The read fast path (docs/DESIGN.md "The read fast path")
// Try the syscall first; park only on EAGAIN. A short read on a stream
// socket means the receive queue was empty at that instant, so the next read
// goes straight to poll_wait (`read_drained_`): if no edge arrived since, it
// parks without the read that would only return EAGAIN; if one did, the wait
// returns at once and the read runs. Before a read that does not follow a
// wait, poll_prepare drops a stale edge so that its EAGAIN parks at once.
// Exception: once the poller has reported a hang-up (RDHUP/HUP/ERR), a short
// read leaves the end of stream or error still to be read and no further
// edge will announce it, so the shortcut is off for that descriptor.
// Writes go straight to send(2) and wait only when the buffer is full.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <source_location>

#include "framework/net/slab.hpp"
#include "goro/detail/spawn.hpp"
#include "goro/net.hpp"
#include "goro/result.hpp"

namespace goro::detail {
struct G;
struct PollDesc;
}  // namespace goro::detail

namespace goro::net {

class NetFd {
 public:
  // Takes ownership of `fd` (must be O_NONBLOCK) and registers it. On failure
  // the fd is closed.
  static Result<std::unique_ptr<NetFd>> open(int fd);
  ~NetFd();
  // From a slab (slab.hpp): a connection's NetFd lives as long as the
  // connection and must not pin a page of the general heap.
  static void* operator new(std::size_t) {
    return slab::SlabPool<sizeof(NetFd), alignof(NetFd)>::instance().allocate();
  }
  static void operator delete(void* p) noexcept {
    slab::SlabPool<sizeof(NetFd), alignof(NetFd)>::instance().deallocate(p);
  }

  NetFd(const NetFd&) = delete;
  NetFd& operator=(const NetFd&) = delete;

  int sysfd() const { return fd_; }
  // The peer's address as accept(2) or the dial reported it (empty when
  // neither did). Set once, before the descriptor is shared; read-only
  // after, so any goroutine may read it. It outlives a reset, which
  // getpeername(2) does not.
  const Addr& peer() const { return peer_; }
  void set_peer(const Addr& a) { peer_ = a; }

  Result<std::size_t> read(void* buf, std::size_t n);
  // For a reader that needs its buffers only once bytes are there
  // (framework/http, conn.cpp "At rest without an Exchange"): true when the
  // last read drained the socket, so the next read() would begin by parking
  // ("The read fast path"). await_readable() parks that way now, without a
  // buffer: after a wait that ended in readiness the next read() goes
  // straight to the syscall, as it does after its own wait (the edge is
  // consumed: a deadline that passed meanwhile must not leave the bytes
  // unread with no edge to come); a deadline or a close that ended the wait
  // is left for that read() to report, exactly as it would have. The
  // reading goroutine only.
  bool read_would_park() const { return read_drained_; }
  void await_readable();
  // read(), except that where it would park it returns EAGAIN
  // (std::errc::resource_unavailable_try_again), the socket marked drained,
  // so the next wait (read(), await_readable(), go_when_readable()) parks
  // until a new edge. For a reader that has a cheaper way to wait: a
  // released connection's successor woken by an edge that only announced
  // bytes its predecessor had read already (conn.cpp "Woken for nothing").
  Result<std::size_t> read_if_ready(void* buf, std::size_t n);
  Result<std::size_t> write_all(const void* buf, std::size_t n);
  Result<std::size_t> writev_all(const iovec* iov, std::size_t count);
  // accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC; EAGAIN parks, ECONNABORTED
  // retries, everything else (EMFILE ...) is returned.
  Result<int> accept(Addr* peer);
  // Non-blocking connect; parks until connected, failed or the deadline
  // (absolute nanotime(), 0 none) passes.
  Result<void> connect(const sockaddr* sa, socklen_t len, std::int64_t deadline);
  Result<void> shutdown(int how);
  // One write-side syscall that NetFd does not wrap itself (sendfile(2) for
  // framework/fs), run with the fd kept alive and the netpoller's write wait:
  // `op(fd, arg)` must behave like send(2) on this non-blocking socket
  // (bytes written, or -1 with errno). EAGAIN parks until writable and runs
  // it again; EINTR runs it again; deadlines and close apply as for writes.
  // Returns the first non-negative result (0 included) or the error.
  using WriteOp = long (*)(int fd, void* arg);
  Result<std::size_t> write_op(WriteOp op, void* arg);

  // Spawns `fn` as a goroutine parked in this descriptor's read wait: it
  // runs once the socket is readable, its read deadline passes or it is
  // closed (its first read says which). Until then it holds no stack, only
  // a G (goro/detail/spawn.hpp spawn_parked): for a connection at rest
  // whose goroutine ends (framework/http "Released while idle"). `warm`:
  // up to 32 bytes of the caller's state that `fn` touches first, which
  // the poller prefetches with this NetFd's own when readiness comes
  // (netpoll.hpp poll_set_read_warm), or null. Nobody
  // may be reading, or read until `fn` runs; `fn` must keep this NetFd
  // alive. False, with `fn` not moved from, when the descriptor is closed
  // already. A reference is held until the goroutine is in the wait slot,
  // so a close() meanwhile cannot recycle the poll descriptor under it: the
  // close wakes it, or the slot's re-check sees the close and runs it.
  // Throws as goro::go (no stack credit, no memory), `fn` not moved from.
  template <class F>
  bool go_when_readable(F&& fn, const void* warm = nullptr,
                        const std::source_location& where = std::source_location::current()) {
    Ref ref(this);
    if (!ref.ok()) return false;
    set_read_warm(warm);
    read_drained_ = true;  // its first read waits: consumes the edge that woke it
    ::goro::detail::spawn_parked(std::forward<F>(fn), 0, where, ::goro::detail::WaitReason::kIOWait,
                                 &hand_to_poller, pd_);
    return true;
  }

  // `when` in nanotime(), 0 clears; mode: 1 read, 2 write, 3 both.
  Result<void> set_deadline(std::int64_t when, int mode);
  // A Conn deadline's nanotime() value (0 for none; a time before the
  // clock's epoch is 1: long past).
  static std::int64_t deadline_at(Clock::time_point t) noexcept {
    if (t == Clock::time_point{}) return 0;
    // steady_clock is CLOCK_MONOTONIC, the clock of detail::nanotime().
    const std::int64_t ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    return ns > 0 ? ns : 1;
  }

  // See "Lifetime". Idempotent: a second close returns errc::closed.
  Result<void> close();

  // For a layer that makes its own syscalls on sysfd() (framework/tls's
  // BIO, which runs inside OpenSSL and must never park there): it holds a
  // Ref while OpenSSL may touch the fd, asks check() before an operation
  // (deadlines and close win over available data, as above), calls
  // prepare_read() before a read that does not follow a wait, and parks in
  // wait() after its syscall said EAGAIN. mode: 1 read, 2 write.
  std::error_code check(int mode);
  std::error_code wait(int mode);
  void prepare_read();
  bool hangup_seen();

  // RAII reference for one operation; `ok()` is false after close().
  class Ref {
   public:
    explicit Ref(NetFd* f) : f_(f), ok_(f->acquire()) {}
    ~Ref() {
      if (ok_ && f_ != nullptr) f_->release();
    }
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    bool ok() const { return ok_; }

   private:
    friend class NetFd;
    struct Borrowed {};
    // An operation under the caller's held Ref: takes none of its own.
    explicit Ref(Borrowed /*unused*/) : f_(nullptr), ok_(true) {}
    NetFd* f_;
    bool ok_;
  };

  // # Held references
  // Each operation above takes a reference for its duration: two locked
  // instructions. A goroutine that makes many in a row on one socket (a
  // plain connection's loop in framework/http, a read, a write and a wait
  // per keep-alive request) may hold one Ref across them and call these,
  // which take none. `held` must be the caller's own ok() Ref on this NetFd
  // (checked), alive for the call. A close() meanwhile still wins: the
  // operation sees it in the poll descriptor (poll_check, the wait's
  // eviction), as one whose Ref was taken before the close does, and the
  // descriptor stays open until `held` goes. So a goroutine must let its
  // held Ref go before it waits for this NetFd's destruction (~NetFd waits
  // for every reference).
  Result<std::size_t> read(void* buf, std::size_t n, const Ref& held);
  Result<std::size_t> read_if_ready(void* buf, std::size_t n, const Ref& held);
  Result<std::size_t> write_all(const void* buf, std::size_t n, const Ref& held);
  void await_readable(const Ref& held);
  // set_deadline under `held`: a deadline that moved (a keep-alive
  // request's write deadline on its grid, a rest's release moment) takes no
  // reference of its own either.
  Result<void> set_deadline(std::int64_t when, int mode, const Ref& held);

 private:
  NetFd(int fd, ::goro::detail::PollDesc* pd) : fd_(fd), pd_(pd) {}

  bool acquire();
  void release();
  // netpoll's read-wake prefetch: this NetFd's first 32 bytes and `warm`.
  void set_read_warm(const void* warm) noexcept;
  void destroy();
  Result<std::size_t> read_impl(void* buf, std::size_t n, bool may_park, bool held);
  Result<std::size_t> write_all_impl(const void* buf, std::size_t n, bool held);
  void await_readable_impl(bool held);
  // set_deadline past its "unchanged" check: out of line, so the check
  // (most calls on a busy keep-alive connection) saves no registers.
  [[gnu::noinline]] Result<void> set_deadline_slow(std::int64_t when, int mode);
  void check_held(const Ref& held) const;
  static void hand_to_poller(::goro::detail::G* g, void* pd);

  static constexpr std::uint64_t kClosed = 1;
  static constexpr std::uint64_t kDestroyed = 2;
  static constexpr std::uint64_t kOneRef = 4;

  // Layout: fd_ to the read flags, the first 32 bytes, are what a request
  // touches; a released connection's wake-up prefetches them
  // (set_read_warm).
  const int fd_;
  ::goro::detail::PollDesc* const pd_;
  // closed bit | destroyed bit | references * kOneRef; see "Lifetime".
  // acq_rel on the decrement so the last releaser sees every other user's
  // accesses; destroy() stores the destroyed bit with release, the
  // destructor loads it with acquire before the memory is freed.
  std::atomic<std::uint64_t> state_{kOneRef};
  // Owned by the (single) reading goroutine; see "The read fast path".
  bool read_drained_ = false;
  bool read_waited_ = false;  // await_readable's wait ended in readiness
  bool accept_drained_ = false;
  Addr peer_;
};

}  // namespace goro::net

namespace goro::detail {
// The doorway from goro's own layers to a Conn's NetFd (framework/fs's
// sendfile); not for applications. nullptr for a default-constructed Conn.
struct NetConnAccess {
  static net::NetFd* netfd(net::Conn& c) { return c.fd_.get(); }
};
}  // namespace goro::detail
