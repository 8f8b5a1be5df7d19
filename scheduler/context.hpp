// Context switch: the few instructions that move a thread from one stack to
// another. Design (DESIGN.md §3 "Context switch"):
//
// goro_ctx_switch(save_sp, new_sp) pushes the callee-saved registers and the
// floating-point control words onto the current stack, stores the stack
// pointer to *save_sp, loads new_sp and pops the same frame from there. A
// suspended context is therefore nothing but a stack pointer. Caller-saved
// registers need no saving: the compiler treats the call like any other.
//
// ctx_make(top, entry) lays out a fake saved frame at the top of a fresh stack
// so that the first switch to it "returns" into goro_ctx_trampoline, which
// calls entry() on a 16-byte aligned stack. entry must never return.
//
// Rejected: ucontext (swapcontext makes a sigprocmask syscall per switch);
// Boost.Context (a dependency for ~30 lines; and we want the sanitizer hooks
// in one place, see switch.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

extern "C" void goro_ctx_switch(void** save_sp, void* new_sp);
extern "C" void goro_ctx_trampoline();

namespace goro::detail {

using CtxEntry = void (*)();

inline void* ctx_make(void* stack_top, CtxEntry entry) {
  auto top = reinterpret_cast<std::uintptr_t>(stack_top) & ~std::uintptr_t{15};
#if defined(__x86_64__)
  // Frame popped by goro_ctx_switch: [fpu words][r15 r14 r13 r12 rbx rbp][ret].
  auto* sp = reinterpret_cast<std::uint64_t*>(top);
  *--sp = 0;                                                      // fake return of the trampoline
  *--sp = reinterpret_cast<std::uint64_t>(&goro_ctx_trampoline);  // ret target
  *--sp = 0;                                                      // rbp
  *--sp = 0;                                                      // rbx
  *--sp = reinterpret_cast<std::uint64_t>(entry);                 // r12: entry
  *--sp = 0;                                                      // r13
  *--sp = 0;                                                      // r14
  *--sp = 0;                                                      // r15
  // MXCSR default 0x1F80 (all exceptions masked, round to nearest), x87 CW 0x037F.
  *--sp = 0x1F80ull | (0x037Full << 32);
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
