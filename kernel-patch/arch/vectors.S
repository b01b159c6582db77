/*
 * arch/vectors.S: the 256 interrupt entry stubs and the common path to trap_dispatch().
 * Each stub pushes an error code (a dummy 0 where the CPU pushes none) and its vector, so every
 * trap reaches C++ with the same TrapFrame layout (kern/trap.h). Entries from ring 3 swap the GS
 * base so %gs always points at this CPU's PRCB inside the kernel.
 */
.macro STUB n
    .align 16
vec\n:
    .if (\n == 8) || (\n == 10) || (\n == 11) || (\n == 12) || (\n == 13) || (\n == 14) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
    .else
    pushq $0
    .endif
    pushq $\n
    jmp trap_common
.endm

.section .text
.code64
.altmacro
vectors_start:
.set i, 0
.rept 256
    STUB %i
    .set i, i+1
.endr

trap_common:
    /* frame: ..., ss, rsp, rflags, cs, rip, err, vector  <- rsp */
    testb $3, 24(%rsp)             /* cs of the interrupted context */
    jz 1f
    swapgs
1:  push %rax
    push %rbx
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %rbp
    push %r8
    push %r9
    push %r10
    push %r11
    push %r12
    push %r13
    push %r14
    push %r15
    mov %rsp, %rdi
    cld
    testb $3, 144(%rsp)            /* cs again, above the 15 registers, vector and error */
    jz 3f
    xor %ebp, %ebp                 /* from ring 3: the kernel's frame chain ends here (stack walks) */
3:  call trap_dispatch
.globl trap_return
trap_return:
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rbp
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rbx
    pop %rax
    testb $3, 24(%rsp)
    jz 2f
    swapgs
2:  add $16, %rsp
    iretq

/* void enter_user_frame(TrapFrame* tf): leave for ring 3 through the common return path.
 * Interrupts must be disabled; tf lies on the thread's kernel stack. */
.globl enter_user_frame
enter_user_frame:
    mov %rdi, %rsp
    jmp trap_return

/* The table of stub addresses, for idt.cc. */
.section .rodata
.align 8
.globl trap_vectors
trap_vectors:
.set i, 0
.rept 256
    .quad vectors_start + i * 16
    .set i, i+1
.endr
.section .note.GNU-stack,"",@progbits
