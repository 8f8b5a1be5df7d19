// The context switch alone: ctx_make, ctx_switch and the trampoline, without
// the scheduler (scheduler/context.hpp, context_x86_64.S, context_aarch64.S).
//
// Built natively, and on an x86-64 host that has an AArch64 cross compiler
// and qemu-user also for AArch64 and run under emulation
// (tests/scheduler/CMakeLists.txt): that is the only test of the AArch64
// switch on this project's machines. A plain main, no gtest: the cross build
// has no AArch64 gtest. Exit status 0 when every check holds; each failed
// check prints a line naming it.
//
// Checks:
//  1. Three contexts hand control round in a fixed order, many times; each
//     resumes exactly where it left off, with its locals.
//  2. Callee-saved registers. A context loads patterns into them, switches
//     away to a context that loads other patterns into the same registers,
//     and finds its own on return. On AArch64 the switch is an out-of-line
//     call, so this checks the assembly's saves (x19-x28, d8-d15); on x86-64
//     it is inline asm that declares them clobbered, so it checks that
//     contract (rbx, r12-r15).
//  3. Floating-point control is per context: each context sets its own
//     rounding mode (fesetround: MXCSR and the x87 control word, or FPCR)
//     and still has it after switching round; a new context starts with the
//     default mode.
//  4. A new context starts on a 16-byte aligned stack (checked by an aligned
//     vector store on x86-64, by the hardware's SP alignment check on
//     AArch64) and on its own stack.
#include <cfenv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "scheduler/context.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using goro::detail::ctx_make;
using goro::detail::ctx_switch;

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    if (failures < 20) std::fprintf(stderr, "FAIL: %s\n", what);  // the first few only
    ++failures;
  }
}

// Out of line, so every test switches through the same code the scheduler
// inlines ctx_switch into: a function whose caller expects the ABI. noipa:
// GCC's interprocedural analysis would otherwise conclude that this function
// (whose asm clobbers "memory", but which calls nothing) cannot change this
// file's static variables, and keep them in registers across it; the
// scheduler's own switch paths reach shared state through pointers and
// opaque calls for the same reason (scheduler/current.cpp).
__attribute__((noipa)) void do_switch(void** save_sp, void* to) {
  ctx_switch(save_sp, to);
}

alignas(64) char stack_a[64 * 1024];
alignas(64) char stack_b[64 * 1024];
void* main_sp = nullptr;
void* a_sp = nullptr;
void* b_sp = nullptr;

// --- 1. round robin ---------------------------------------------------------
constexpr int kRounds = 100000;
int trail[3] = {0, 0, 0};  // per context: how many turns it has had
int last = -1;             // who ran last

void turn(int who) {
  check(last == (who + 2) % 3, "round robin: contexts ran out of order");
  last = who;
  ++trail[who];
}

[[noreturn]] void entry_a_round() {
  for (int i = 0;; ++i) {
    turn(1);
    check(trail[1] == i + 1, "round robin: context A lost its local");
    do_switch(&a_sp, b_sp);
  }
}

[[noreturn]] void entry_b_round() {
  for (int i = 0;; ++i) {
    turn(2);
    check(trail[2] == i + 1, "round robin: context B lost its local");
    do_switch(&b_sp, main_sp);
  }
}

void test_round_robin() {
  a_sp = ctx_make(stack_a + sizeof stack_a, &entry_a_round);
  b_sp = ctx_make(stack_b + sizeof stack_b, &entry_b_round);
  last = 2;
  for (int i = 0; i < kRounds; ++i) {
    turn(0);
    do_switch(&main_sp, a_sp);
  }
  check(trail[0] == kRounds && trail[1] == kRounds && trail[2] == kRounds,
        "round robin: wrong number of turns");
}

// --- 2. callee-saved registers ----------------------------------------------
#if defined(__aarch64__)
#define GORO_TEST_GPRS(X) X(x19) X(x20) X(x21) X(x22) X(x23) X(x24) X(x25) X(x26) X(x27) X(x28)
#define GORO_TEST_FPRS(X) X(d8) X(d9) X(d10) X(d11) X(d12) X(d13) X(d14) X(d15)
#else
#define GORO_TEST_GPRS(X) X(rbx) X(r12) X(r13) X(r14) X(r15)
#define GORO_TEST_FPRS(X)
#endif

// Loads `base + k` into the k-th callee-saved register, switches, and
// returns how many registers came back changed. The empty asm statements pin
// the values in their registers across the switch (GCC local register
// variables), as a caller's live values would be.
__attribute__((noinline)) int registers_survive(std::uint64_t base, void** save_sp, void* to) {
  int k = 0;
#define GORO_DECL_GPR(r) register std::uint64_t v_##r asm(#r) = base + static_cast<unsigned>(k++);
#define GORO_DECL_FPR(r) \
  register double v_##r asm(#r) = static_cast<double>(base) + static_cast<double>(k++);
  GORO_TEST_GPRS(GORO_DECL_GPR)
  GORO_TEST_FPRS(GORO_DECL_FPR)
#define GORO_PIN_GPR(r) asm volatile("" : "+r"(v_##r));
#define GORO_PIN_FPR(r) asm volatile("" : "+w"(v_##r));
  GORO_TEST_GPRS(GORO_PIN_GPR)
  GORO_TEST_FPRS(GORO_PIN_FPR)
  do_switch(save_sp, to);
  GORO_TEST_GPRS(GORO_PIN_GPR)
  GORO_TEST_FPRS(GORO_PIN_FPR)
  int changed = 0;
  k = 0;
#define GORO_CMP_GPR(r) changed += v_##r != base + static_cast<unsigned>(k++);
#define GORO_CMP_FPR(r) changed += v_##r != static_cast<double>(base) + static_cast<double>(k++);
  GORO_TEST_GPRS(GORO_CMP_GPR)
  GORO_TEST_FPRS(GORO_CMP_FPR)
  return changed;
}

constexpr int kRegisterRounds = 1000;

[[noreturn]] void entry_a_registers() {
  for (int i = 0;; ++i) {
    const int changed =
        registers_survive(0xA0000000u + static_cast<unsigned>(i) * 64, &a_sp, main_sp);
    check(changed == 0, "callee-saved registers: context A's changed across a switch");
  }
}

void test_registers() {
  a_sp = ctx_make(stack_a + sizeof stack_a, &entry_a_registers);
  for (int i = 0; i < kRegisterRounds; ++i) {
    const int changed =
        registers_survive(0x50000000u + static_cast<unsigned>(i) * 64, &main_sp, a_sp);
    check(changed == 0, "callee-saved registers: main's changed across a switch");
  }
}

// --- 3. floating-point control ----------------------------------------------
// The rounding mode as each control register holds it.
struct FpMode {
  unsigned sse_or_fpcr;  // MXCSR RC bits, or FPCR RMode bits
  unsigned x87;          // x87 CW RC bits (0 on AArch64)
};

FpMode fp_mode() {
#if defined(__x86_64__)
  std::uint16_t cw = 0;
  asm volatile("fnstcw %0" : "=m"(cw));
  return {_mm_getcsr() & 0x6000u, cw & 0x0C00u};
#else
  std::uint64_t fpcr = 0;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  return {static_cast<unsigned>(fpcr >> 22) & 3u, 0};
#endif
}

bool same(FpMode a, FpMode b) {
  return a.sse_or_fpcr == b.sse_or_fpcr && a.x87 == b.x87;
}

FpMode nearest{}, upward{}, downward{};

[[noreturn]] void entry_a_fp() {
  check(same(fp_mode(), nearest), "fp control: a new context does not start at the default");
  std::fesetround(FE_DOWNWARD);
  for (;;) {
    do_switch(&a_sp, main_sp);
    check(same(fp_mode(), downward), "fp control: context A lost its rounding mode");
  }
}

void test_fp_control() {
  nearest = fp_mode();
  std::fesetround(FE_UPWARD);
  upward = fp_mode();
  std::fesetround(FE_DOWNWARD);
  downward = fp_mode();
  check(!same(nearest, upward) && !same(upward, downward),
        "fp control: fesetround did not change the control registers");
  std::fesetround(FE_UPWARD);
  a_sp = ctx_make(stack_a + sizeof stack_a, &entry_a_fp);
  for (int i = 0; i < 1000; ++i) {
    do_switch(&main_sp, a_sp);
    check(same(fp_mode(), upward), "fp control: main lost its rounding mode");
  }
  std::fesetround(FE_TONEAREST);
}

// --- 4. the first frame -------------------------------------------------------
bool entry_ran = false;
bool entry_on_its_stack = false;

__attribute__((noinline)) void aligned_store(double x) {
#if defined(__x86_64__)
  // movaps/movapd fault on a misaligned address: a stack slot the compiler
  // believes 16-aligned is only truly so if the entry's stack was.
  alignas(16) double slot[2];
  _mm_store_pd(slot, _mm_set1_pd(x));
  asm volatile("" : : "r"(slot) : "memory");
#else
  (void)x;  // AArch64 faults on any sp-relative access with a misaligned sp
#endif
}

[[noreturn]] void entry_b_frame() {
  char here = 0;
  // As integers, through an opaque asm: the compiler may otherwise fold the
  // comparison of a local's address with a global array's to false.
  auto at = reinterpret_cast<std::uintptr_t>(&here);
  asm volatile("" : "+r"(at));
  const auto lo = reinterpret_cast<std::uintptr_t>(stack_b);
  entry_on_its_stack = at >= lo && at < lo + sizeof stack_b;
  aligned_store(1.5);
  entry_ran = true;
  for (;;)
    do_switch(&b_sp, main_sp);
}

void test_first_frame() {
  // An unaligned top: ctx_make must align it down itself.
  b_sp = ctx_make(stack_b + sizeof stack_b - 24, &entry_b_frame);
  do_switch(&main_sp, b_sp);
  check(entry_ran, "first frame: the entry did not run");
  check(entry_on_its_stack, "first frame: the entry did not run on its own stack");
}

}  // namespace

int main() {
  test_round_robin();
  test_registers();
  test_fp_control();
  test_first_frame();
#if defined(__aarch64__)
  const char* arch = "aarch64";
#else
  const char* arch = "x86-64";
#endif
  if (failures != 0) {
    std::fprintf(stderr, "context_test (%s): %d check(s) failed\n", arch, failures);
    return 1;
  }
  std::printf(
      "context_test (%s): round robin, callee-saved registers, fp control, first frame: ok\n",
      arch);
  return 0;
}
