// goro::detail syscall handoff: the doorway for code that makes a blocking
// call on a goroutine's behalf (file I/O, getaddrinfo, goro::blocking).
// Internal, installed for the public goro::blocking template.
//
//   { goro::detail::SyscallScope scope("fs::read"); n = ::read(fd, buf, len); }
//
// Entering releases the P into a syscall state (cheap: a few stores); if the
// call lasts longer than a sysmon tick (20 µs to 10 ms) and there is other
// work, sysmon hands the P to another thread. Leaving takes the P back if it
// is still free (one CAS), else any idle P, else queues the goroutine and
// parks the thread. Inside the scope the code must not call into goro (no
// channel operations, no spawns, no goro I/O): that is a fatal error.
#pragma once

#include <source_location>

namespace goro::detail {

void enter_syscall(const char* what) noexcept;
void exit_syscall() noexcept;

class SyscallScope {
 public:
  explicit SyscallScope(const char* what) noexcept { enter_syscall(what); }
  ~SyscallScope() { exit_syscall(); }
  SyscallScope(const SyscallScope&) = delete;
  SyscallScope& operator=(const SyscallScope&) = delete;
};

}  // namespace goro::detail
