// netpoll: the runtime's side of blocking-style sockets (Go's
// runtime/netpoll.go). Internal to goro; framework/net is its only user.
//
// A non-blocking fd is registered once (poll_open) and gets a PollDesc. The
// I/O layer always tries the syscall first; on EAGAIN it calls poll_wait,
// which parks the goroutine until the poller sees the fd ready, a deadline
// passes (errc::timeout) or another goroutine evicts the descriptor
// (errc::closed). Closing is two-phase, as Go's fdMutex + pollUnblock /
// pollClose: poll_evict wakes every waiter and refuses new waits; when the
// last user has left, poll_close deregisters the fd and recycles the
// descriptor, and only then may the caller close(2) the fd.
//
// Concurrency: at most one goroutine waits per direction (one reader and one
// writer at a time); a second waiter is a fatal "netpoll: double wait".
// Deadlines, eviction and waits may come from any goroutine.
#pragma once

#include <cstdint>
#include <system_error>

#include "goro/result.hpp"
#include "scheduler/poller.hpp"

namespace goro::detail {

struct PollDesc;

// What a wait or check found: nothing (success), errc::closed or
// errc::timeout. Not a std::error_code: a success would cost a call into
// libstdc++ (std::system_category, out of line) per check, and a keep-alive
// request makes five of them. `code()` feeds goro::Result's errc constructor.
class PollStatus {
 public:
  constexpr PollStatus() noexcept = default;
  constexpr PollStatus(errc e) noexcept : e_(e) {}  // NOLINT(google-explicit-constructor)
  explicit constexpr operator bool() const noexcept { return e_ != errc{}; }
  constexpr errc code() const noexcept { return e_; }
  std::error_code error_code() const noexcept {
    return e_ == errc{} ? std::error_code{} : make_error_code(e_);
  }

 private:
  errc e_{};
};
static_assert(static_cast<int>(errc::timeout) == 1, "goro::errc starts at 1: errc{} is no error");

enum class PollMode : std::uint8_t { kRead = 1, kWrite = 2, kReadWrite = 3 };

// Registers `fd` (already O_NONBLOCK) with the poller. The runtime must be
// running.
PollDesc* poll_open(int fd, std::error_code& ec);
// Wakes parked waiters with errc::closed and makes later waits fail the same
// way. Idempotent; callable from any thread.
void poll_evict(PollDesc* pd);
// Deregisters and recycles `pd` (after poll_evict, with no goroutine inside
// poll_wait). The caller closes the fd afterwards.
void poll_close(PollDesc* pd);

// Parks until `mode` (kRead or kWrite) is ready. Returns success (retry the
// syscall), errc::timeout or errc::closed. A readiness edge that arrived since
// the last wait or poll_prepare satisfies it at once.
PollStatus poll_wait(PollDesc* pd, PollMode mode);
// Parks `g`, a goroutine made by spawn_parked (goro/detail/spawn.hpp) that
// has not run, in `mode`'s wait as if it had called poll_wait: readiness, the
// deadline or eviction make it runnable (at once if an edge is already
// recorded, the deadline has passed or the descriptor is evicted). Its first
// wait or check on `pd` then reports which. The caller must not touch `g`
// afterwards. The slot must be free (no goroutine waiting in `mode`).
struct G;
void poll_wait_spawned(PollDesc* pd, PollMode mode, G* g);
// Names up to two addresses (up to 32 bytes at each) the goroutine that
// readiness wakes from `pd`'s read wait touches first: the poller prefetches
// them, with the G's lines, as it readies a batch ("Warming a batch" in
// poll_desc.cpp). A hint, nothing more: null names nothing, a stale address
// costs a useless prefetch. The reading goroutine only, before it parks (or
// hands a parked G to the slot).
void poll_set_read_warm(PollDesc* pd, const void* a, const void* b) noexcept;
// The first pass over a batch of events: prefetches the descriptor an
// event's tag names, so the batch's misses overlap. A hint: a stale tag is
// harmless (descriptors are never freed).
void poll_prefetch_tag(std::uint64_t tag) noexcept;
// The error a wait would return right now (closed, timeout), without parking.
PollStatus poll_check(PollDesc* pd, PollMode mode);
// Forgets a readiness edge recorded before this call. Called right before a
// syscall that will observe the fd's state itself, so that a later EAGAIN does
// not wake on the stale edge (one wasted syscall). Cheap when nothing is
// recorded (one load).
void poll_prepare(PollDesc* pd, PollMode mode);

// True once the poller has reported a hang-up or error for this fd: the peer
// shut down its side, so a short read does not mean the next read blocks
// (the end of stream is still to be read). Check after the read, since the
// flag is published before the readiness edge that the read consumed.
bool poll_hangup_seen(PollDesc* pd);

// Sets the deadline for `mode` to `when` (absolute, nanotime() clock).
// 0 clears it; a time in the past expires it at once and wakes the waiter with
// errc::timeout. Ignored after poll_evict.
void poll_set_deadline(PollDesc* pd, std::int64_t when, PollMode mode);

// True when poll_set_deadline(pd, when, mode) would change nothing: one
// direction's deadline is `when` already, its timer armed at or before it
// ("Setting a deadline again"). Takes no lock and writes nothing, so a
// caller may ask without holding the descriptor open: descriptors are never
// freed ("The cache"), and a reused one only makes the answer stale, as a
// close right after it would.
bool poll_deadline_unchanged(PollDesc* pd, std::int64_t when, PollMode mode);

// The backend interface netpoll/ implements per OS (Go's netpoll_epoll.go):
// the scheduler-facing Poller plus fd registration.
class NetPoller : public Poller {
 public:
  // Registers fd for read and write edges with `tag` as the event's cookie.
  virtual std::error_code add(int fd, std::uint64_t tag) = 0;
  virtual void remove(int fd) = 0;
};

// Defined by the backend file (epoll_poller.cpp on Linux).
NetPoller* make_platform_poller();

// For the backend: the poller saw `pd` (from the event cookie) ready. Appends
// the goroutines it readies to `out`; returns how many.
struct GQueue;
// `hangup`: the event carried EPOLLRDHUP/HUP/ERR or their equivalent.
int poll_ready_from_event(std::uint64_t tag, bool readable, bool writable, bool hangup,
                          GQueue& out);
// Records a readiness edge for `mode` as the poller does when it sees one
// (a parked waiter is readied). For tests that need an edge for bytes that
// were read already (FaultSite::kStaleEdge).
void poll_note_edge(PollDesc* pd, PollMode mode);
// Goroutines parked in poll_wait (Go's netpollWaiters); drives has_waiters().
bool poll_has_waiters() noexcept;
void poll_waiters_sub(std::int64_t n) noexcept;

}  // namespace goro::detail
