#define _GNU_SOURCE
/* What a page costs after a syscall (docs/DESIGN.md "The machine moves the
 * ratio"). On an instance whose kernel isolates its page tables (PTI) on a
 * CPU without PCID, every syscall's exit drops the user half of the TLB, so
 * code that touches N pages between two syscalls walks the page tables N
 * times more than it would without them. This measures that directly: a
 * loop of getppid() and then N reads, each in its own data page (at
 * different offsets, so no two share a cache set), and the same reads
 * without the syscall. What the refill costs is the growth with N after
 * the syscall less the growth without it.
 *
 *   goro-syscall-pages [ITERATIONS]     (pin it: taskset -c 0 ...)
 *
 * Prints nanoseconds per iteration for N = 0, 8, 16, 32 and 64, three
 * times over, on one line per N. (Code pages are not measured: functions
 * one per page sit at the same offset, share one instruction-cache set and
 * miss with or without the syscall; an instruction fetch's TLB refill is
 * the same page walk.) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kPages = 64, kPage = 4096 };

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double per_iteration(int with_syscall, int n, long iterations, const volatile char* data) {
  volatile int sink = 0;
  double t0 = now_ns();
  for (long it = 0; it < iterations; it++) {
    if (with_syscall) syscall(SYS_getppid);
    for (int i = 0; i < n; i++)
      sink += data[(size_t)i * kPage * 3 + (size_t)(i % 64) * 64];
  }
  (void)sink;
  return (now_ns() - t0) / (double)iterations;
}

int main(int argc, char** argv) {
  long iterations = argc > 1 ? atol(argv[1]) : 200000;
  if (iterations <= 0) {
    fprintf(stderr, "usage: goro-syscall-pages [ITERATIONS > 0]\n");
    return 2;
  }
  /* Pages three apart, so the prefetcher does not bring the next one in. */
  size_t size = (size_t)kPages * 3 * kPage;
  char* data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  for (size_t i = 0; i < size; i += kPage)
    data[i] = 1;
  static const int ns[] = {0, 8, 16, 32, 64};
  for (int with_syscall = 1; with_syscall >= 0; with_syscall--)
    for (int k = 0; k < 5; k++) {
      printf("%-25s N=%2d:", with_syscall ? "data pages after getppid" : "data pages, no syscall",
             ns[k]);
      for (int round = 0; round < 3; round++)
        printf(" %7.1f", per_iteration(with_syscall, ns[k], iterations, data));
      printf(" ns/iteration\n");
    }
  return 0;
}
