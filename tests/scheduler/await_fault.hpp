// Test helper for death tests whose child is to die of a fault (an overflow,
// a signal, a panic) in a goroutine other than main.
#pragma once

#include <chrono>

#include "goro/goro.hpp"

namespace goro::test {

// The main goroutine's wait. It must not return first: a returning main
// stops the runtime, and then a goroutine not yet run is abandoned (the
// child exits 0), or the fault comes during teardown, with Ms finished and
// not yet joined, which TSan's exit checks report as a thread leak (status
// 66). That happened with a one-second wait under TSan beside busy loops,
// where an overflow beside a logging thread took longer than a second.
inline void await_the_fault() {
  goro::sleep_for(std::chrono::seconds(60));
}

}  // namespace goro::test
