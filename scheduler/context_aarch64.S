// goro context switch, AArch64 (AAPCS64). See context.hpp for the contract.
//
// Saved frame (176 bytes, 16-aligned), from the new sp upward:
//   [0]   x19 x20   [16]  x21 x22   [32]  x23 x24   [48]  x25 x26
//   [64]  x27 x28   [80]  x29 x30   [96]  d8 d9     [112] d10 d11
//   [128] d12 d13   [144] d14 d15   [160] fpcr (8 bytes) + pad
// x30 (lr) is the resume address: `ret` jumps to it after the restore.

#if defined(__aarch64__)
    .text
    .globl goro_ctx_switch
    .type goro_ctx_switch,%function
    .p2align 4
goro_ctx_switch:
    sub sp, sp, #176
    stp x19, x20, [sp, #0]
    stp x21, x22, [sp, #16]
    stp x23, x24, [sp, #32]
    stp x25, x26, [sp, #48]
    stp x27, x28, [sp, #64]
    stp x29, x30, [sp, #80]
    stp d8, d9, [sp, #96]
    stp d10, d11, [sp, #112]
    stp d12, d13, [sp, #128]
    stp d14, d15, [sp, #144]
    mrs x9, fpcr
    str x9, [sp, #160]
    mov x9, sp
    str x9, [x0]               // *save_sp = sp
    mov sp, x1                 // switch stacks
    ldr x9, [sp, #160]
    msr fpcr, x9
    ldp x19, x20, [sp, #0]
    ldp x21, x22, [sp, #16]
    ldp x23, x24, [sp, #32]
    ldp x25, x26, [sp, #48]
    ldp x27, x28, [sp, #64]
    ldp x29, x30, [sp, #80]
    ldp d8, d9, [sp, #96]
    ldp d10, d11, [sp, #112]
    ldp d12, d13, [sp, #128]
    ldp d14, d15, [sp, #144]
    add sp, sp, #176
    ret
    .size goro_ctx_switch,.-goro_ctx_switch

// First code a new goroutine runs: goro_ctx_make left x19 = entry function.
    .globl goro_ctx_trampoline
    .type goro_ctx_trampoline,%function
    .p2align 4
goro_ctx_trampoline:
    .cfi_startproc
    .cfi_undefined x30
    mov x29, #0
    mov x30, #0
    blr x19
    brk #0
    .cfi_endproc
    .size goro_ctx_trampoline,.-goro_ctx_trampoline
#endif
    .section .note.GNU-stack,"",%progbits
