/*
 * arch/ap_trampoline.S: where an application processor starts after INIT-SIPI-SIPI.
 * The SIPI vector 0x08 starts it in real mode at 0x8000; smp.cc copies this code there and
 * fills the parameter block at its end (page table root, stack, PRCB) before each SIPI.
 * Real mode -> 32-bit protected mode -> long mode (same page tables and GDT as the boot CPU).
 */
#define TRAMP_BASE 0x8000
#define REL(x) ((x) - ap_trampoline_start + TRAMP_BASE)

.section .rodata
.code16
.globl ap_trampoline_start
ap_trampoline_start:
    cli
    cld
    xor %ax, %ax
    mov %ax, %ds
    lgdtl REL(tramp_gdt_ptr)
    mov %cr0, %eax
    or $1, %eax
    mov %eax, %cr0
    ljmpl $0x08, $REL(tramp_32)

.code32
tramp_32:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov %cr4, %eax
    or $(1 << 5), %eax
    mov %eax, %cr4
    mov REL(tramp_cr3), %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx
    rdmsr
    or $((1 << 8) | (1 << 11)), %eax
    wrmsr
    mov %cr0, %eax
    or $((1 << 31) | (1 << 16)), %eax
    mov %eax, %cr0
    lgdt REL(tramp_gdt64_ptr)
    ljmp $0x08, $REL(tramp_64)

.code64
tramp_64:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov REL(tramp_stack), %rsp
    mov REL(tramp_arg), %rdi
    mov REL(tramp_entry), %rax
    xor %ebp, %ebp
    call *%rax
1:  hlt
    jmp 1b

.align 16
tramp_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff     /* 32-bit code */
    .quad 0x00cf92000000ffff     /* data */
tramp_gdt_ptr:
    .word 23
    .long REL(tramp_gdt)
.align 16
tramp_gdt64:
    .quad 0
    .quad 0x00af9a000000ffff
    .quad 0x00cf92000000ffff
tramp_gdt64_ptr:
    .word 23
    .quad REL(tramp_gdt64)

/* Parameter block, filled by smp.cc (offsets exported below). */
.align 8
.globl ap_tramp_params
ap_tramp_params:
tramp_cr3:   .quad 0
tramp_stack: .quad 0
tramp_entry: .quad 0
tramp_arg:   .quad 0
.globl ap_trampoline_end
ap_trampoline_end:
.section .note.GNU-stack,"",@progbits
