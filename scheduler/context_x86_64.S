// goro context switch, x86-64 System V. See context.hpp for the contract.
//
// Saved on the suspended stack, from the top down: the return address (pushed
// by the caller's `call`), rbp rbx r12 r13 r14 r15, then 8 bytes holding the
// SSE control/status word (MXCSR, 4 bytes) and the x87 control word (2 bytes).
// rcx is caller-saved scratch.
//
// The FP control words, measured on an AMD EPYC (Zen 4) host: stmxcsr costs
// ~12 cycles there, and reading its stored value back to compare with the
// incoming one added ~5 more (the load waits for stmxcsr's slow store), while
// ldmxcsr costs ~1.5. So MXCSR is loaded unconditionally: one switch costs
// 5.4 ns instead of 6.7 ns in a bare two-context ping-pong, and a goroutine
// yield 13.2 ns instead of 16.4 ns (medians; loadtest yield benchmark). On
// Intel cores ldmxcsr costs about what the compare did. fldcw, on the other
// hand, is slow on Intel and fnstcw cheap everywhere, so the x87 word keeps
// its compare-and-skip.
// Everything else is caller-saved under the ABI, so the compiler has already
// spilled it. The stack pointer is stored to *save_sp and the new one loaded.

#if defined(__x86_64__)
    .text
    .globl goro_ctx_switch
    .type goro_ctx_switch,@function
    .p2align 4
goro_ctx_switch:
    .cfi_startproc
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movzwl 4(%rsp), %ecx       // the current x87 control word
    movq %rsp, (%rdi)          // *save_sp = rsp
    movq %rsi, %rsp            // switch stacks
    ldmxcsr (%rsp)
    cmpw 4(%rsp), %cx
    je 2f
    fldcw 4(%rsp)
2:  addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .cfi_endproc
    .size goro_ctx_switch,.-goro_ctx_switch

// First code a new goroutine runs: goro_ctx_make left r12 = entry function.
// The frame is marked as the outermost (undefined return address) so
// unwinders, debuggers and exception propagation stop here.
    .globl goro_ctx_trampoline
    .type goro_ctx_trampoline,@function
    .p2align 4
goro_ctx_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    xorl %ebp, %ebp
    andq $-16, %rsp
    callq *%r12
    ud2
    .cfi_endproc
    .size goro_ctx_trampoline,.-goro_ctx_trampoline
#endif
    .section .note.GNU-stack,"",@progbits
