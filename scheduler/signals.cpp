// Signals and the threads they land on.
//
// ## Signal stacks
// sysmon's hog signal (SIGURG, syscall.cpp "Hogs") is sent to a thread
// running a goroutine, so without more the kernel builds its signal frame on
// the goroutine's stack, just below the interrupted stack pointer. That frame
// holds the whole register state: ~3.4 KiB with AVX-512, ~11 KiB with AMX. A
// goroutine within that distance of its stack bottom would take the frame
// into its guard page (a SIGSEGV the kernel cannot deliver anywhere, so the
// process dies), or, on a canary-only stack, into its neighbour's stack. So,
// as in Go, every M gets a signal stack of its own (sigaltstack) when its
// thread starts, and the runtime's handlers are installed with SA_ONSTACK.
// The same stack is where a stack overflow is diagnosed (a fault on the
// guard page leaves no room on the goroutine's stack to run a handler).
//
// Size: max(4 * AT_MINSIGSTKSZ, 64 KiB), rounded to pages, with a guard page
// below. AT_MINSIGSTKSZ is the kernel's own figure for this CPU's signal
// frame (it grows with the register file, so a constant such as the old
// MINSIGSTKSZ = 2 KiB is wrong on AVX-512 hosts). Four frames leave room for
// nested signals (a fault inside a handler is delivered on the same stack,
// below the first frame); the 64 KiB floor is for handlers that are not
// ours but run here when we chain to them: a sanitizer's SEGV report, a
// user's SIGURG handler. It costs address space only: the pages a handler
// never touches are never committed, so in practice one or two pages per M.
// A thread that already has a signal stack (set by a sanitizer's thread
// start, or by the code that called goro::run) keeps it, as Go does: its
// owner may depend on it.
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>

#include "scheduler/proc.hpp"

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

namespace goro::detail {
namespace {

constexpr std::size_t kSignalStackFloor = 64 * 1024;
// Kernels before 5.14 (x86-64) do not report AT_MINSIGSTKSZ; assume a frame
// this large, enough for AVX-512 state with room to spare.
constexpr std::size_t kFrameFallback = 8 * 1024;

std::size_t page_size() {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

std::size_t signal_stack_size() {
  std::size_t frame = static_cast<std::size_t>(getauxval(AT_MINSIGSTKSZ));
  if (frame == 0) frame = kFrameFallback;
  const std::size_t page = page_size();
  const std::size_t size = std::max(4 * frame, kSignalStackFloor);
  return (size + page - 1) & ~(page - 1);
}

void signal_stack_install(M* m) {
  SignalStack& s = m->sigstack;
  stack_t cur{};
  if (sigaltstack(nullptr, &cur) == 0 && (cur.ss_flags & SS_DISABLE) == 0) return;  // keep theirs
  const std::size_t page = page_size();
  const std::size_t size = signal_stack_size();
  void* p = mmap(nullptr, size + page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) return;  // handlers then run on the interrupted stack, as before
  if (madvise(p, page, MADV_GUARD_INSTALL) != 0) mprotect(p, page, PROT_NONE);
  stack_t ss{};
  ss.ss_sp = static_cast<char*>(p) + page;
  ss.ss_size = size;
  ss.ss_flags = 0;
  if (sigaltstack(&ss, nullptr) != 0) {
    munmap(p, size + page);
    return;
  }
  s.mapping = p;
  s.bytes = size + page;
}

void signal_stack_release(M* m) {
  SignalStack& s = m->sigstack;
  if (s.mapping == nullptr) return;
  stack_t off{};
  off.ss_flags = SS_DISABLE;
  sigaltstack(&off, nullptr);
  munmap(s.mapping, s.bytes);
  s.mapping = nullptr;
  s.bytes = 0;
}

}  // namespace goro::detail
