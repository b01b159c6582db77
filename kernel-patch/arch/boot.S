/*
 * arch/boot.S: multiboot entry. The loader (QEMU -kernel or GRUB) enters _start in 32-bit
 * protected mode with paging off, EAX = multiboot magic, EBX = physical address of the
 * multiboot info. We build an identity map of the low 4 GiB with 2 MiB pages, switch to long
 * mode and call kmain(magic, info) on the boot stack.
 */
#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0x00000003 /* page-align modules, give us the memory map */

.section .multiboot, "a"
.align 4
.long MB_MAGIC
.long MB_FLAGS
.long -(MB_MAGIC + MB_FLAGS)

.section .bss
.align 4096
.globl boot_pml4
boot_pml4: .skip 4096
boot_pdpt: .skip 4096
boot_pd:   .skip 4096 * 4
.align 16
boot_stack: .skip 16384
.globl boot_stack_top
boot_stack_top:

.section .rodata
.align 16
.globl gdt64
gdt64:
    .quad 0                      /* 0x00 null */
    .quad 0x00af9a000000ffff     /* 0x08 kernel code, 64-bit */
    .quad 0x00cf92000000ffff     /* 0x10 kernel data */
gdt64_end:
.globl gdt64_ptr
gdt64_ptr:
    .word gdt64_end - gdt64 - 1
    .quad gdt64

.section .text
.code32
.globl _start
_start:
    cli
    mov %eax, %edi               /* kmain's first argument: multiboot magic */
    mov %ebx, %esi               /* second: multiboot info (physical = virtual) */
    mov $boot_stack_top, %esp

    /* PML4[0] -> PDPT; PDPT[0..3] -> four page directories; each PD entry maps 2 MiB. */
    mov $boot_pdpt, %eax
    or $3, %eax
    mov %eax, boot_pml4
    xor %ecx, %ecx
1:  mov %ecx, %eax
    shl $12, %eax
    add $boot_pd, %eax
    or $3, %eax
    mov %eax, boot_pdpt(,%ecx,8)
    inc %ecx
    cmp $4, %ecx
    jne 1b

    /* 2048 PD entries: address | PS | RW | P; the top GiB (MMIO: LAPIC, IOAPIC, PCI BARs)
     * is also uncached (PCD | PWT). */
    xor %ecx, %ecx
2:  mov %ecx, %eax
    shl $21, %eax
    or $0x83, %eax
    cmp $1536, %ecx
    jb 3f
    or $0x18, %eax
3:  mov %eax, boot_pd(,%ecx,8)
    inc %ecx
    cmp $2048, %ecx
    jne 2b

.globl enter_long_mode32
enter_long_mode32:              /* shared with the AP trampoline: expects nothing but a stack */
    mov %cr4, %eax
    or $(1 << 5), %eax           /* PAE */
    mov %eax, %cr4
    mov $boot_pml4, %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx        /* EFER */
    rdmsr
    or $((1 << 8) | (1 << 11)), %eax /* LME, NXE */
    wrmsr
    mov %cr0, %eax
    or $((1 << 31) | (1 << 16) | 1), %eax /* PG, WP, PE */
    mov %eax, %cr0
    lgdt gdt64_ptr
    ljmp $0x08, $long_entry

.code64
long_entry:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    xor %ax, %ax
    mov %ax, %fs
    mov %ax, %gs
    mov $boot_stack_top, %rsp
    xor %ebp, %ebp
    call kmain
4:  cli
    hlt
    jmp 4b
.section .note.GNU-stack,"",@progbits
