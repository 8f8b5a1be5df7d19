#define _GNU_SOURCE
/* What a page costs after a syscall (docs/DESIGN.md "The machine moves the
 * ratio"). On an instance whose kernel isolates its page tables (PTI) on a
 * CPU without PCID, every syscall's exit drops the user half of the TLB, so
 * code that touches N pages between two syscalls walks the page tables N
 * times more than it would without them. This measures that directly: a
 * loop of getppid() and then N reads, each in its own data page, or N
 * calls, each to a function on its own code page; and the same N calls
 * without the syscall. The cost of the refill is the growth with N with the
 * syscall less the growth without it.
 *
 *   goro-syscall-pages [ITERATIONS]     (pin it: taskset -c 0 ...)
 *
 * Prints nanoseconds per iteration for N = 0, 8, 16, 32 and 64, three
 * times over, on one line per N. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kPages = 64, kPage = 4096 };

/* kPages functions, each alone on its own page. */
// clang-format off
#define FN(i)                                                         \
  __attribute__((noinline, aligned(kPage))) static int fn##i(int x) { \
    return x * (i + 3) + 1;                                           \
  }
#define FN8(j) FN(j##0) FN(j##1) FN(j##2) FN(j##3) FN(j##4) FN(j##5) FN(j##6) FN(j##7)
FN8(1) FN8(2) FN8(3) FN8(4) FN8(5) FN8(6) FN8(7) FN8(8)
#define REF8(j) fn##j##0, fn##j##1, fn##j##2, fn##j##3, fn##j##4, fn##j##5, fn##j##6, fn##j##7
static int (*const fns[kPages])(int) = {REF8(1), REF8(2), REF8(3), REF8(4),
                                        REF8(5), REF8(6), REF8(7), REF8(8)};
// clang-format on

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* what: 0 data pages after a syscall, 1 code pages after a syscall,
 * 2 code pages alone. */
static double per_iteration(int what, int n, long iterations, const volatile char* data) {
  volatile int sink = 0;
  double t0 = now_ns();
  for (long it = 0; it < iterations; it++) {
    if (what != 2) syscall(SYS_getppid);
    for (int i = 0; i < n; i++) {
      if (what == 0)
        sink += data[(size_t)i * kPage * 3 + (size_t)(i % 64) * 64];
      else
        sink += fns[i](i);
    }
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
  /* Pages three apart, so no two share a page-table walk's last step
   * and the prefetcher does not bring the next one in. */
  size_t size = (size_t)kPages * 3 * kPage;
  char* data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  for (size_t i = 0; i < size; i += kPage)
    data[i] = 1;
  static const char* const names[] = {"data pages after getppid", "code pages after getppid",
                                      "code pages, no syscall"};
  static const int ns[] = {0, 8, 16, 32, 64};
  for (int what = 0; what < 3; what++)
    for (int k = 0; k < 5; k++) {
      printf("%-25s N=%2d:", names[what], ns[k]);
      for (int round = 0; round < 3; round++)
        printf(" %7.1f", per_iteration(what, ns[k], iterations, data));
      printf(" ns/iteration\n");
    }
  return 0;
}
