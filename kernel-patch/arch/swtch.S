/*
 * arch/swtch.S: void swtch(Context** save, Context* load)
 * Saves the callee-saved registers on the current stack, stores the stack pointer in *save,
 * switches to load's stack and restores its registers. Everything else is caller-saved, so the
 * C++ caller has already spilled it. Interrupts must be disabled (the scheduler lock is held).
 */
.section .text
.code64
.globl swtch
swtch:
    push %rbp
    push %rbx
    push %r12
    push %r13
    push %r14
    push %r15
    mov %rsp, (%rdi)
    mov %rsi, %rsp
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbx
    pop %rbp
    ret
.section .note.GNU-stack,"",@progbits
