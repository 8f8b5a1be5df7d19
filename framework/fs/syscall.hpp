// fs's one way into the kernel: a blocking syscall inside a SyscallScope
// (include/goro/fs.hpp, "Which calls hand off the P"). Internal to goro::fs.
#pragma once

#include <cerrno>
#include <system_error>

#include <goro/detail/syscall.hpp>

namespace goro::fs::detail {

// A syscall's return value and, when it is negative, its errno.
struct SysResult {
  long value;
  int error;
  bool ok() const { return value >= 0; }
  std::error_code error_code() const { return {error, std::system_category()}; }
};

// Runs `call` (one syscall returning -1 and setting errno on failure) with the
// P handed off, retrying EINTR. errno is read inside the scope, right after
// the call, on the thread that made it: leaving the scope may resume the
// goroutine on another thread, whose errno is not the call's.
template <class F>
SysResult blocking_syscall(const char* what, F&& call) {
  for (;;) {
    SysResult r{0, 0};
    {
      goro::detail::SyscallScope scope(what);
      r.value = static_cast<long>(call());
      if (r.value < 0) r.error = errno;
    }
    if (r.value >= 0 || r.error != EINTR) return r;
  }
}

inline std::error_code sys_error(int e) {
  return {e, std::system_category()};
}

}  // namespace goro::fs::detail
