// dial(): non-blocking connect with a timeout, over every resolved address.
//
// ## Happy eyeballs, lite (Go's dialParallel / dialSerial)
// The resolved addresses split into primaries (the family of the first one)
// and fallbacks (the other family). Each list is tried serially, every attempt
// getting an equal share of the remaining time (at least 2 s, as Go's
// partialDeadline). The caller dials the primaries itself; if there are
// fallbacks, a goroutine starts them after 300 ms unless the primaries have
// finished (then it exits at once, or dials the fallbacks if they failed). The first connection
// wins: the winner closes the loser's in-flight socket (its connect wakes with errc::closed). If
// the primaries all fail before the fallback goroutine has started, the caller claims the fallbacks
// and dials them at once. Rejected: a goroutine per address and a channel (no goro::Chan at this
// layer yet, and two racers cover RFC 8305's common case of one IPv6 and one IPv4 path).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "framework/net/netfd.hpp"
#include "framework/net/resolve.hpp"
#include "goro/detail/park.hpp"
#include "goro/detail/thread_lock.hpp"
#include "goro/detail/timer.hpp"
#include "goro/runtime.hpp"

namespace goro::net {

namespace {

constexpr std::int64_t kFallbackDelay = 300'000'000;  // ns, RFC 8305's 300 ms
constexpr std::int64_t kMinAttempt = 2'000'000'000;   // ns, Go's partialDeadline floor

// One goroutine waits for one event (a minimal park/ready one-shot).
class OneShot {
 public:
  void fire() {
    std::uintptr_t old = state_.exchange(kFired);
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the state word holds the waiter's G*
    if (old > kFired) detail::ready(reinterpret_cast<detail::G*>(old));
  }
  void wait() {
    if (state_.load() == kFired) return;
    detail::park(detail::WaitReason::kIOWait, commit, this);
  }
  // Waits until fire() or `ns` have passed, whichever is first.
  void wait_for(std::int64_t ns) {
    detail::Timer t;
    t.when = detail::nanotime() + ns;
    t.fn = [](void* arg, std::uint64_t) { static_cast<OneShot*>(arg)->fire(); };
    t.arg = this;
    detail::timer_start(&t);
    wait();
    detail::timer_stop(&t);  // waits for a callback still running
  }

 private:
  static bool commit(detail::G* g, void* arg) {
    auto* self = static_cast<OneShot*>(arg);
    std::uintptr_t expected = 0;
    return self->state_.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(g));
  }
  static constexpr std::uintptr_t kFired = 1;
  std::atomic<std::uintptr_t> state_{0};  // 0, kFired, or the waiting G
};

struct Race {
  std::mutex mu;
  bool done = false;                                // a connection won (mu)
  bool fallback_claimed = false;                    // someone dials the fallbacks (mu)
  Result<Conn> fallback_result = errc::no_address;  // (mu), valid after fallback_done fires
  NetFd* inflight[2] = {nullptr, nullptr};          // [0] primary, [1] fallback (mu)
  OneShot fallback_done;
  OneShot primary_done;  // ends the fallback's 300 ms head start early
};

std::error_code sys_error(int e) {
  return {e, std::system_category()};
}

Result<Conn> dial_one(const Addr& a, std::int64_t deadline, Race* race, int side) {
  const int fd = ::socket(a.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error(errno);
  if (a.family() != AF_UNIX) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  auto nfd = NetFd::open(fd);
  if (!nfd) return nfd.error();
  if (race != nullptr) {
    goro::detail::ThreadLockGuard lock(race->mu);
    if (race->done) return errc::closed;
    race->inflight[side] = nfd->get();
  }
  auto r = (*nfd)->connect(a.sockaddr_ptr(), a.size(), deadline);
  if (race != nullptr) {
    goro::detail::ThreadLockGuard lock(race->mu);
    race->inflight[side] = nullptr;
  }
  if (!r) return r.error();
  (*nfd)->set_peer(a);
  return Conn(std::move(*nfd));
}

Result<Conn> dial_serial(const std::vector<Addr>& addrs, std::int64_t deadline, Race* race,
                         int side) {
  std::error_code first;
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    std::int64_t attempt = deadline;
    if (deadline != 0) {
      const std::int64_t now = detail::nanotime();
      const std::int64_t left = deadline - now;
      if (left <= 0) return first ? first : make_error_code(errc::timeout);
      std::int64_t share = left / static_cast<std::int64_t>(addrs.size() - i);
      share = std::min(left, std::max(share, kMinAttempt));
      attempt = now + share;
    }
    auto c = dial_one(addrs[i], attempt, race, side);
    if (c) return c;
    if (!first) first = c.error();
    if (race != nullptr && c.error() == errc::closed) break;  // lost the race
  }
  return first ? first : make_error_code(errc::no_address);
}

// Records a win under race->mu and cancels the other side's attempt.
void claim_win_locked(Race& race, int side) {
  race.done = true;
  if (NetFd* other = race.inflight[1 - side]) (void)other->close();
}

Result<Conn> dial_parallel(const std::vector<Addr>& primaries, const std::vector<Addr>& fallbacks,
                           std::int64_t deadline) {
  auto race = std::make_shared<Race>();
  goro::go([race, fallbacks, deadline] {
    race->primary_done.wait_for(kFallbackDelay);
    {
      goro::detail::ThreadLockGuard lock(race->mu);
      if (race->done || race->fallback_claimed) return;
      race->fallback_claimed = true;
    }
    auto r = dial_serial(fallbacks, deadline, race.get(), 1);
    {
      goro::detail::ThreadLockGuard lock(race->mu);
      if (r && !race->done) claim_win_locked(*race, 1);
      race->fallback_result = std::move(r);
    }
    race->fallback_done.fire();
  });
  auto r = dial_serial(primaries, deadline, race.get(), 0);
  race->primary_done.fire();  // the fallback goroutine stops waiting (and, if we won, exits)
  bool wait_fallback = false;
  {
    goro::detail::ThreadLockGuard lock(race->mu);
    if (r && !race->done) {
      claim_win_locked(*race, 0);
      return r;
    }
    if (!race->fallback_claimed) {
      race->fallback_claimed = true;  // the primaries failed first: dial the fallbacks now
    } else {
      wait_fallback = true;
    }
  }
  if (!wait_fallback) {
    auto f = dial_serial(fallbacks, deadline, nullptr, 1);
    if (f) return f;
    return r;
  }
  race->fallback_done.wait();
  goro::detail::ThreadLockGuard lock(race->mu);
  if (race->fallback_result) return std::move(race->fallback_result);
  return r;
}

}  // namespace

Result<Conn> dial(std::string_view network, std::string_view address,
                  std::chrono::nanoseconds timeout) {
  auto net = parse_network(network);
  if (!net) return net.error();
  const std::int64_t deadline = timeout.count() > 0 ? detail::nanotime() + timeout.count() : 0;
  if (*net == Network::kUnix) {
    auto a = unix_addr(address);
    if (!a) return a.error();
    return dial_one(*a, deadline, nullptr, 0);
  }
  std::string host, port;
  if (auto r = split_host_port(address, host, port); !r) return r.error();
  auto addrs = resolve(*net, host, port, /*passive=*/false);
  if (!addrs) return addrs.error();
  std::vector<Addr> primaries, fallbacks;
  for (const Addr& a : *addrs)
    (a.family() == addrs->front().family() ? primaries : fallbacks).push_back(a);
  if (fallbacks.empty()) return dial_serial(primaries, deadline, nullptr, 0);
  return dial_parallel(primaries, fallbacks, deadline);
}

}  // namespace goro::net
