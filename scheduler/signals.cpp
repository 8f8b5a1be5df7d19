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
//
// ## Fatal faults
// goro cannot grow a stack (stack.hpp "Size"), so running past its bottom is
// fatal, as Go's "fatal error: stack overflow" is; but it must say so. SIGSEGV,
// SIGBUS and SIGABRT are caught on the signal stack while goro::run runs. A fault on
// the guard page below the running goroutine's stack (or, for a frame larger
// than a page that stepped over the guard, with the stack pointer itself
// below the stack), or with the goroutine's canary overwritten, prints
//   goro: fatal error: goroutine N: stack overflow (S KiB), spawned at F:L
// and exits with status 2. Anything else is not ours: it goes to the handler
// that was installed before goro::run, or, if that was the default action,
// the goroutine and a backtrace are printed (Go prints its tracebacks on
// SIGABRT too: glibc's heap checks abort, and without a core file the log
// must say where), the default is restored and the fault happens again when
// the handler returns (a signal sent with kill or raise is sent again), so a
// real crash still dumps core where it happened. Everything here is
// async-signal-safe: no allocation, no stdio, one write(2) per message
// (`Report`), so a line another thread logs meanwhile never splits it.
//
// ## The signal thread
// A process-directed signal (kill, Ctrl-C) goes to any thread that does not
// block it, and its handler interrupts whatever that thread was doing: a
// goroutine's blocking C call in goro::blocking (usleep, read, a database
// client's poll) would return EINTR, or short, because of a SIGTERM meant for
// the server's shutdown. So the process signals a runtime or a server
// handles (SIGTERM, SIGINT, SIGHUP, SIGQUIT) are blocked on every runtime
// thread: M0 blocks them when goro::run starts (every thread created from it
// inherits the mask), each M blocks them again when it starts (an M can be
// created from a foreign thread, by a ready() that wakes a P), and one
// dedicated thread leaves them unblocked and sleeps. The kernel delivers
// them there, where the handlers run (SignalWatch's self-pipe write, sysmon's
// SIGQUIT flag, a user's handler) and interrupt nothing.
// Rejected: sigwaitinfo or signalfd on that thread. Taking a signal that way
// bypasses its disposition, so the thread would have to re-implement each
// one: the default action (terminate, core dump for SIGQUIT), SIG_IGN, and
// whatever handler a user or a library installs at any time. Leaving the
// dispositions to the kernel keeps all of them as they were.
// A signal the caller of goro::run had blocked stays blocked on the signal
// thread too (the mask is restored when goro::run returns): a program that
// blocks SIGTERM in main to sigwait for it on a thread of its own (apps/echo)
// keeps receiving it there. A signal sent to one thread (pthread_kill,
// tgkill) still goes to that thread.
#include <execinfo.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <system_error>
#include <thread>

#include "scheduler/proc.hpp"
#include "scheduler/stack.hpp"

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
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

// A frame this much larger than the guard page can step over it (GCC probes
// no pages without -fstack-clash-protection); a stack pointer this far below
// a stack still counts as an overflow of it.
constexpr std::uintptr_t kStepOver = 1 << 20;

struct sigaction g_old_segv;
struct sigaction g_old_bus;
struct sigaction g_old_abrt;
bool g_faults_installed = false;

const int kProcessSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

sigset_t process_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kProcessSignals)
    sigaddset(&set, sig);
  return set;
}

// The signal thread and M0's mask from before goro::run (M0 only).
std::thread g_signal_thread;
Note g_signal_note;
std::atomic<bool> g_signal_stop{false};
sigset_t g_caller_mask;

void signal_thread_main(sigset_t take) {
  pthread_sigmask(SIG_UNBLOCK, &take, nullptr);
#if defined(GORO_TSAN)
  // ThreadSanitizer defers an asynchronous signal's handler until the thread
  // it landed on enters one of TSan's interceptors; a raw futex wait is not
  // one, so the handler never ran (SIGQUIT's dump hung). poll is: a signal
  // that arrives during it is handled at once. The 100 ms timeout only
  // bounds how late the stop flag is seen.
  while (!g_signal_stop.load(std::memory_order_acquire))
    ::poll(nullptr, 0, 100);
#else
  // Handlers interrupt the futex wait (EINTR); the Note sleeps again.
  while (!g_signal_stop.load(std::memory_order_acquire))
    g_signal_note.sleep();
#endif
}

// A fatal report, built on the stack it runs on (the M's signal stack, or
// the goroutine's own when switch_away finds its canary smashed: so a small
// buffer) and written with one write(2): another thread's log line
// (sysmon's "running without a scheduling point", which a deep recursion
// earns just before it overflows) then lands before or after it, never
// inside it. A write to a pipe of at most PIPE_BUF bytes is atomic, and so
// is one to a regular file (its position is locked for the call). A report
// longer than the buffer (a very long file name) goes out in pieces.
class Report {
 public:
  Report& operator<<(const char* s) { return add(s, std::strlen(s)); }
  Report& operator<<(std::uint64_t v) {
    char buf[24];
    char* p = buf + sizeof buf;
    do {
      *--p = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    return add(p, static_cast<std::size_t>(buf + sizeof buf - p));
  }
  // Writes what is buffered; the Report may be used again.
  void flush() {
    const char* s = buf_;
    std::size_t n = len_;
    while (n > 0) {
      const ssize_t w = ::write(STDERR_FILENO, s, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      s += w;
      n -= static_cast<std::size_t>(w);
    }
    len_ = 0;
  }

 private:
  Report& add(const char* s, std::size_t n) {
    while (n > 0) {
      if (len_ == sizeof buf_) flush();
      const std::size_t k = std::min(n, sizeof buf_ - len_);
      std::memcpy(buf_ + len_, s, k);
      len_ += k;
      s += k;
      n -= k;
    }
    return *this;
  }
  char buf_[512];
  std::size_t len_ = 0;
};

std::uintptr_t fault_sp(void* uctx) {
  const auto* uc = static_cast<const ucontext_t*>(uctx);
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.sp);
#else
  (void)uc;
  return 0;
#endif
}

bool is_overflow(const Stack& s, std::uintptr_t addr, std::uintptr_t sp) {
  const auto lo = reinterpret_cast<std::uintptr_t>(s.lo);
  if (addr >= lo - page_size() && addr < lo) return true;  // the guard page
  return sp < lo && lo - sp <= kStepOver && addr < lo && lo - addr <= kStepOver;
}

const struct sigaction& old_action(int sig) {
  if (sig == SIGSEGV) return g_old_segv;
  return sig == SIGBUS ? g_old_bus : g_old_abrt;
}

// What a crash that is not a stack overflow prints before the default action
// (core dump) takes over: the goroutine it happened on and the thread's
// backtrace, so a CI log shows where a heap corruption was detected (glibc's
// "free(): invalid pointer" aborts) without a core file. backtrace() was
// called once at install, so its unwinder is loaded and it does not
// allocate here; backtrace_symbols_fd writes without allocating.
void report_fatal_signal(int sig, const G* g) {
  Report line;
  line << "goro: fatal signal " << static_cast<std::uint64_t>(sig)
       << (sig == SIGABRT   ? " (SIGABRT)"
           : sig == SIGSEGV ? " (SIGSEGV)"
                            : " (SIGBUS)");
  if (g != nullptr) {
    const std::source_location at = g->spawned_at.load(std::memory_order_relaxed);
    line << " in goroutine " << g->id.load(std::memory_order_relaxed) << ", spawned at "
         << at.file_name() << ":" << std::uint64_t{at.line()};
  }
  line << "\n";
  line.flush();
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
}

void pass_on(int sig, siginfo_t* info, void* uctx) {
  const struct sigaction& old = old_action(sig);
  if ((old.sa_flags & SA_SIGINFO) != 0) {
    if (old.sa_sigaction != nullptr) {
      old.sa_sigaction(sig, info, uctx);
      return;
    }
  } else if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
    old.sa_handler(sig);
    return;
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  // Sent, not raised by an instruction: returning would not repeat it. It
  // stays blocked until this handler returns, then takes the default action.
  if (info->si_code <= 0) syscall(SYS_tgkill, getpid(), gettid(), sig);
}

void on_fault(int sig, siginfo_t* info, void* uctx) {
  M* m = current_m();
  const G* g = m != nullptr ? m->curg : nullptr;
  if (g != nullptr && g->stack.lo != nullptr) {
    // si_code > 0: raised by the faulting instruction, si_addr is meaningful.
    if (info->si_code > 0 &&
        is_overflow(g->stack, reinterpret_cast<std::uintptr_t>(info->si_addr), fault_sp(uctx))) {
      report_stack_overflow(g);
    }
    if (StackPool::canary_smashed(g->stack)) report_stack_overflow(g);
  }
  const struct sigaction& old = old_action(sig);
  if ((old.sa_flags & SA_SIGINFO) == 0 && old.sa_handler == SIG_DFL) report_fatal_signal(sig, g);
  pass_on(sig, info, uctx);
}

}  // namespace

void report_stack_overflow(const G* g) noexcept {
  const std::source_location at = g->spawned_at.load(std::memory_order_relaxed);
  Report line;
  line << "goro: fatal error: goroutine " << g->id.load(std::memory_order_relaxed)
       << ": stack overflow (" << std::uint64_t{g->stack.size / 1024} << " KiB), spawned at "
       << at.file_name() << ":" << std::uint64_t{at.line()}
       << "\ngoro: give it a larger stack: goro::SpawnOptions::stack_size, or for every "
          "goroutine goro::Options::stack_size or GORO_STACK_SIZE\n";
  line.flush();
  _exit(2);
}

void install_fault_handlers() {
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  void* warm[1];
  (void)backtrace(warm, 1);  // loads the unwinder now, not in a handler
  g_faults_installed = sigaction(SIGSEGV, &sa, &g_old_segv) == 0 &&
                       sigaction(SIGBUS, &sa, &g_old_bus) == 0 &&
                       sigaction(SIGABRT, &sa, &g_old_abrt) == 0;
}

void uninstall_fault_handlers() {
  if (!g_faults_installed) return;
  sigaction(SIGSEGV, &g_old_segv, nullptr);
  sigaction(SIGBUS, &g_old_bus, nullptr);
  sigaction(SIGABRT, &g_old_abrt, nullptr);
  g_faults_installed = false;
}

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

void block_process_signals() {
  const sigset_t set = process_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void signal_thread_start() {
  const sigset_t set = process_signals();
  pthread_sigmask(SIG_BLOCK, &set, &g_caller_mask);
  sigset_t take;
  sigemptyset(&take);
  for (int sig : kProcessSignals) {
    if (sigismember(&g_caller_mask, sig) == 0) sigaddset(&take, sig);
  }
  g_signal_stop.store(false, std::memory_order_relaxed);
  try {
    g_signal_thread = std::thread(signal_thread_main, take);
  } catch (const std::system_error&) {
    // No thread: the signals go back to M0, as before the signal thread.
    pthread_sigmask(SIG_SETMASK, &g_caller_mask, nullptr);
  }
}

void signal_thread_stop() {
  if (g_signal_thread.joinable()) {
    g_signal_stop.store(true, std::memory_order_release);
    g_signal_note.wake();
    g_signal_thread.join();
  }
  // Signals that came meanwhile are pending and are delivered here, now.
  pthread_sigmask(SIG_SETMASK, &g_caller_mask, nullptr);
}

}  // namespace goro::detail
