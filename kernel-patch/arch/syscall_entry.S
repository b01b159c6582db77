/*
 * arch/syscall_entry.S: the `syscall` instruction lands here (LSTAR) with interrupts masked
 * (FMASK), rcx = user rip, r11 = user rflags, still on the user stack and the user GS base.
 * We switch to the thread's kernel stack (PRCB field at %gs:8), build the same TrapFrame an
 * interrupt builds (vector 0x100 marks a system call) and leave through trap_return (iretq),
 * which is also correct for a non-canonical return address, where sysret is not.
 */
#define PRCB_SYSCALL_KSTACK 8
#define PRCB_SYSCALL_USTACK 16

.section .text
.code64
.globl syscall_entry
syscall_entry:
    swapgs
    mov %rsp, %gs:PRCB_SYSCALL_USTACK
    mov %gs:PRCB_SYSCALL_KSTACK, %rsp
    pushq $0x1b                  /* ss: user data */
    pushq %gs:PRCB_SYSCALL_USTACK /* rsp */
    push %r11                    /* rflags */
    pushq $0x23                  /* cs: user code */
    push %rcx                    /* rip */
    pushq $0                     /* error */
    pushq $0x100                 /* vector: system call */
    push %rax
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
    call syscall_dispatch
    cli
    jmp trap_return

.section .note.GNU-stack,"",@progbits
