// goro::after and goro::Ticker (time.hpp).
//
// after(d): the channel state itself carries the Timer (a ChanState
// subclass). The callback holds no reference to it: it only does a
// non-blocking send, and the state's destructor stops the timer, which waits
// for a callback still running elsewhere. The callback never drops a
// reference, so the destructor never runs inside it (the runtime forbids
// timer_stop from a timer's own callback).
//
// Ticker: a goroutine looping on a select between its control channel and a
// deadline. Re-arming a runtime Timer from inside its own callback would race
// with the runtime's bookkeeping of that same Timer (it clears `running`
// after the callback returns, possibly after the re-armed timer already fired
// elsewhere), so the periodic part lives in a goroutine instead, where the
// select's own timer handles each period.
#include "goro/time.hpp"

#include <stdexcept>

#include "goro/detail/timer.hpp"
#include "goro/runtime.hpp"
#include "goro/select.hpp"

namespace goro {
namespace {

using Clock = std::chrono::steady_clock;

struct AfterState final : detail::ChanState<Clock::time_point> {
  AfterState() : detail::ChanState<Clock::time_point>(1) {}
  ~AfterState() { detail::timer_stop(&timer); }
  detail::Timer timer;

  static void fired(void* arg, std::uint64_t) {
    Clock::time_point now = Clock::now();
    detail::chan_send(static_cast<AfterState*>(arg), &now, false);
  }
};

void ticker_loop(Chan<Clock::time_point> out, Chan<std::chrono::nanoseconds> control,
                 std::int64_t period) {
  std::int64_t next = detail::nanotime() + period;
  for (;;) {
    bool stop = false;
    goro::select(goro::recv(control,
                            [&](std::optional<std::chrono::nanoseconds> p) {
                              if (!p) {
                                stop = true;
                                return;
                              }
                              period = p->count();
                              next = detail::nanotime() + period;
                            }),
                 goro::deadline_case(Clock::time_point(std::chrono::nanoseconds(next)), [&] {
                   out.try_send(Clock::now());  // dropped if the last tick is unread
                   // Skip the ticks we are late for, keeping the phase.
                   std::int64_t now = detail::nanotime();
                   next += period;
                   if (next <= now) next += period * ((now - next) / period + 1);
                 }));
    if (stop) return;
  }
}

}  // namespace

Chan<Clock::time_point> after(std::chrono::nanoseconds d) {
  auto s = std::make_shared<AfterState>();
  s->timer.when = detail::nanotime() + std::max<std::int64_t>(0, d.count());
  s->timer.fn = &AfterState::fired;
  s->timer.arg = s.get();
  detail::timer_start(&s->timer);
  return detail::ChanAccess::adopt<Clock::time_point>(std::move(s));
}

Ticker::Ticker(std::chrono::nanoseconds period) {
  if (period.count() <= 0) throw std::invalid_argument("goro::Ticker: non-positive period");
  goro::go([out = c_, control = control_, p = period.count()]() mutable {
    ticker_loop(std::move(out), std::move(control), p);
  });
}

Ticker::~Ticker() {
  stop();
}

void Ticker::stop() {
  if (stopped_) return;
  stopped_ = true;
  control_.close();
}

void Ticker::reset(std::chrono::nanoseconds period) {
  if (period.count() <= 0) throw std::invalid_argument("goro::Ticker::reset: non-positive period");
  if (stopped_) throw std::logic_error("goro::Ticker::reset after stop");
  control_.send(period);
}

}  // namespace goro
