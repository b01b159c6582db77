/* user/lib/crt0.S: the kernel starts a program here with rdi = argc, rsi = argv and rsp
 * 16-byte aligned (lib/argpack.cc). */
.section .text.start, "ax"
.globl _start
_start:
    xor %ebp, %ebp
    call ulib_start
1:  hlt            /* not reached: ulib_start exits */
    jmp 1b
.section .note.GNU-stack,"",@progbits
