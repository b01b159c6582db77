// kern/console.h: the kernel log on the 16550 serial port COM1, and console input.
#pragma once
#include <stddef.h>
#include <stdint.h>

void console_init();                    // boot CPU, before anything prints
void uart_init(uint16_t port);          // a 16550 at port: 115200 8N1, FIFO, no interrupts yet
void console_init_irq();                // route COM1's receive interrupt (after ioapic_init)
void kprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void console_write(const char* s, size_t n);
// Without console_lock, for reports made while that lock may be unavailable (the lockup
// detector waiting on it). Lines may interleave with other CPUs' output.
void console_write_unlocked(const char* s, size_t n);
int console_getc();                     // blocks (sleeps) until a character arrives
size_t console_readline(char* buf, size_t size);  // echoes; returns length without '\n'
void console_rx_interrupt();            // from the trap handler

[[noreturn]] void panic(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
extern volatile bool g_panicked;

// Leave QEMU with a status through the isa-debug-exit device (iobase 0xf4): QEMU exits with
// (code << 1) | 1. Harmless without the device (then we halt).
[[noreturn]] void qemu_exit(uint32_t code);
constexpr uint32_t kExitPass = 0x10;   // QEMU status 33
constexpr uint32_t kExitFail = 0x11;   // QEMU status 35
