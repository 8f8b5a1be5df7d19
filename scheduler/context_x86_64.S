// goro context switch, x86-64 System V: the switch itself is inline asm
// (context.hpp ctx_switch); this file holds the first code a new goroutine
// runs.
//
// ctx_make left the entry function at (%rsp) when the switch jumps here. The
// frame is marked as the outermost (undefined return address) so unwinders,
// debuggers and exception propagation stop here.

#if defined(__x86_64__)
    .text
    .globl goro_ctx_trampoline
    .type goro_ctx_trampoline,@function
    .p2align 4
goro_ctx_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    movq (%rsp), %rax
    xorl %ebp, %ebp
    andq $-16, %rsp          // a no-op with ctx_make's layout; kept as a safeguard
    callq *%rax
    ud2
    .cfi_endproc
    .size goro_ctx_trampoline,.-goro_ctx_trampoline
#endif
    .section .note.GNU-stack,"",@progbits
