// Timers as channels: goro::after and goro::Ticker (Go's time.After and
// time.Ticker).
//
// - after(d) returns a channel (capacity 1) that receives the current
//   steady_clock time once, when d has passed. The timer is stopped when the
//   last handle to the channel goes away. Inside a select, prefer
//   goro::after_case (select.hpp): no channel, no allocation.
// - Ticker(period) delivers the time on chan() every period. Its channel has
//   capacity 1 and ticks are dropped when nobody keeps up (Go's behaviour):
//   a slow receiver sees the latest pending tick, not a backlog. reset(p)
//   changes the period (the next tick comes p from now); stop() stops ticks
//   (no more are delivered; it does not close the channel); the destructor
//   stops it too. The ticker runs as a small goroutine parked in a select
//   between ticks (it shows in num_goroutines()); construct it on a goroutine.
//   A non-positive period throws std::invalid_argument.
// - Neither may outlive goro::run.
#pragma once

#include <chrono>

#include "goro/chan.hpp"

namespace goro {

Chan<std::chrono::steady_clock::time_point> after(std::chrono::nanoseconds d);

class Ticker {
 public:
  explicit Ticker(std::chrono::nanoseconds period);
  ~Ticker();
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  // The channel ticks arrive on (a handle: copy it if you like).
  const Chan<std::chrono::steady_clock::time_point>& chan() const { return c_; }
  void stop();
  void reset(std::chrono::nanoseconds period);

 private:
  Chan<std::chrono::steady_clock::time_point> c_{1};
  Chan<std::chrono::nanoseconds> control_{0};  // new period; closed: stop
  bool stopped_ = false;
};

}  // namespace goro
