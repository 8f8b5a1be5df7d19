// Context switch: the few instructions that move a thread from one stack to
// another. Design (docs/DESIGN.md "Context switch"):
//
// ctx_switch(save_sp, new_sp) saves what the ABI says a call preserves (the
// callee-saved registers, the MXCSR and x87 control words, or FPCR) on the
// current stack, stores the stack pointer to *save_sp, loads new_sp and
// restores the same from there. A suspended context is therefore nothing but
// a stack pointer.
//
// x86-64: the switch is inline asm, not a call. It declares every register
// but rsp and rbp clobbered, so the compiler saves (in the prologue of the
// function it is inlined into) exactly the callee-saved registers that
// function uses, and the asm itself keeps only rbp (it may be the frame
// pointer, which an asm may not clobber), a resume address and the FP
// control words. With an out-of-line switch the calling function saved five
// registers and the switch six more, on every switch. Measured on an AMD EPYC
// host (valgrind --tool=callgrind, goro-microbench --bench yield): 4
// instructions fewer per yield, and a yield ~4% faster (it won 20 of 27
// alternating pairs against the out-of-line switch).
// The asm resumes the other context with an indirect jump to the resume
// address it finds there: a label in the asm that saved that context (each
// inlined copy has its own), predicted per site. One lea moves rsp past the
// 128-byte red zone (which the enclosing function may use) and the 24-byte
// frame; the resuming side's one lea puts the other context's rsp back as it
// was, so the resume label needs no fix-up (two instructions fewer per
// switch than push/pop and a separate red-zone step).
// Frame, from the saved sp up: [MXCSR (4) | x87 CW (2) | pad] [rbp] [resume],
// then the 128 bytes of red zone.
//
// AArch64: goro_ctx_switch (context_aarch64.S), an out-of-line call; the
// compiler treats it as any call, so it saves x19-x28, x29, x30, d8-d15 and
// FPCR itself.
//
// ctx_make(top, entry) lays out a fake saved frame at the top of a fresh stack
// so that the first switch to it resumes in goro_ctx_trampoline, which calls
// entry() on a 16-byte aligned stack. entry must never return.
//
// Rejected: ucontext (swapcontext makes a sigprocmask syscall per switch);
// Boost.Context (a dependency for ~30 lines; and we want the sanitizer hooks
// in one place, see switch.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

extern "C" void goro_ctx_trampoline();
#if !defined(__x86_64__)
extern "C" void goro_ctx_switch(void** save_sp, void* new_sp);
#endif

namespace goro::detail {

using CtxEntry = void (*)();

#if defined(__x86_64__)
// Every register the other context may change, for the clobber list: all of
// them but rsp and rbp (saved by the asm). xmm16-31 and the mask registers
// exist (and may hold the compiler's values) only when AVX-512 is enabled.
#if defined(__AVX512F__)
#define GORO_CTX_AVX512_CLOBBERS                                                                \
  , "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25",   \
      "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4", "k5", "k6", \
      "k7"
#else
#define GORO_CTX_AVX512_CLOBBERS
#endif

inline void ctx_switch(void** save_sp, void* new_sp) {
  asm volatile(
      "leaq -152(%%rsp), %%rsp\n\t"  // the red zone (128) and the frame (24)
      "leaq 1f(%%rip), %%rax\n\t"
      "movq %%rax, 16(%%rsp)\n\t"  // resume address
      "movq %%rbp, 8(%%rsp)\n\t"
      // MXCSR is loaded unconditionally on the other side: on an AMD EPYC
      // (Zen 4) stmxcsr costs ~12 cycles and a load of its result waits ~5
      // more for its slow store, while ldmxcsr costs ~1.5 (a bare switch 6.7
      // -> 5.4 ns). fldcw is the slow one on Intel and fnstcw cheap
      // everywhere, so the x87 word keeps its compare-and-skip.
      "stmxcsr (%%rsp)\n\t"
      "fnstcw 4(%%rsp)\n\t"
      "movzwl 4(%%rsp), %%ecx\n\t"
      "movq %%rsp, (%0)\n\t"  // *save_sp = rsp
      "movq %1, %%rsp\n\t"    // switch stacks
      "ldmxcsr (%%rsp)\n\t"
      "cmpw 4(%%rsp), %%cx\n\t"
      "je 2f\n\t"
      "fldcw 4(%%rsp)\n"
      "2:\n\t"
      "movq 8(%%rsp), %%rbp\n\t"
      "movq 16(%%rsp), %%rax\n\t"
      "leaq 152(%%rsp), %%rsp\n\t"  // the other context's rsp before its switch
      "jmpq *%%rax\n"
      "1:"
      : "+D"(save_sp), "+S"(new_sp)
      :
      : "rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "xmm0",
        "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)",
        "st(6)", "st(7)", "memory", "cc" GORO_CTX_AVX512_CLOBBERS);
}
#undef GORO_CTX_AVX512_CLOBBERS
#else
inline void ctx_switch(void** save_sp, void* new_sp) {
  goro_ctx_switch(save_sp, new_sp);
}
#endif

// `p` rounded down to a multiple of `align` (a power of two) by pointer
// arithmetic: no integer-to-pointer cast, the result keeps p's provenance.
inline char* align_down(void* p, std::size_t align) {
  auto* c = static_cast<char*>(p);
  return c - (reinterpret_cast<std::uintptr_t>(c) & (align - 1));
}

inline void* ctx_make(void* stack_top, CtxEntry entry) {
  char* top = align_down(stack_top, 16);
#if defined(__x86_64__)
  // The frame ctx_switch reads: [fpu words][rbp][resume] at sp, and the
  // entry the trampoline calls at sp + 152, where the switch leaves rsp.
  auto* sp = reinterpret_cast<std::uint64_t*>(top) - 2 - 19;
  sp[19] = reinterpret_cast<std::uint64_t>(entry);                // read by the trampoline
  sp[20] = 0;                                                     // padding
  sp[2] = reinterpret_cast<std::uint64_t>(&goro_ctx_trampoline);  // resume address
  sp[1] = 0;                                                      // rbp
#if defined(GORO_ASAN)
  // The red zone's 128 bytes are never read; cleared so that LSan's scan of
  // a never-run goroutine's stack (galloc.cpp) finds no stale pointers there.
  std::memset(sp + 3, 0, 16 * sizeof *sp);
#endif
  // MXCSR default 0x1F80 (all exceptions masked, round to nearest), x87 CW 0x037F.
  sp[0] = 0x1F80ull | (0x037Full << 32);
  return sp;
#elif defined(__aarch64__)
  auto* sp = reinterpret_cast<std::uint64_t*>(top - 176);
  std::memset(sp, 0, 176);
  sp[0] = reinterpret_cast<std::uint64_t>(entry);                  // x19: entry
  sp[11] = reinterpret_cast<std::uint64_t>(&goro_ctx_trampoline);  // x30: resume address
  return sp;
#else
#error "goro supports x86-64 and AArch64"
#endif
}

}  // namespace goro::detail
