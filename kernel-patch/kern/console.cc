// kern/console.cc: 16550 UART at COM1 (0x3f8). Output is polled under console_lock so lines
// from different CPUs do not interleave; input arrives by interrupt into a ring buffer.
#include "console.h"

#include <stdarg.h>

#include "../arch/x86.h"
#include "../lib/format.h"
#include "ioapic.h"
#include "lapic.h"
#include "sched.h"
#include "spinlock.h"

namespace {

constexpr uint16_t kCom1 = 0x3f8;
constexpr int kCom1Irq = 4;
Spinlock console_lock = SPINLOCK_INIT("console");

// console_lock must be held when using these:
char rx_ring[256];
uint32_t rx_head, rx_tail;   // head: next to read; tail: next to write

void uart_putc(char c) {
    for (int i = 0; i < 100000 && !(arch::inb(kCom1 + 5) & 0x20); i++) arch::pause();
    arch::outb(kCom1, uint8_t(c));
}

void write_locked(const char* s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n') uart_putc('\r');
        uart_putc(s[i]);
    }
}

}  // namespace

volatile bool g_panicked = false;

void uart_init(uint16_t port) {
    arch::outb(port + 1, 0x00);  // no interrupts yet
    arch::outb(port + 3, 0x80);  // DLAB: set the baud divisor
    arch::outb(port + 0, 0x01);  // 115200 baud (QEMU's chardevs ignore it)
    arch::outb(port + 1, 0x00);
    arch::outb(port + 3, 0x03);  // 8N1
    arch::outb(port + 2, 0xc7);  // FIFO on, cleared, 14-byte threshold
    arch::outb(port + 4, 0x0b);  // DTR, RTS, OUT2 (OUT2 gates the IRQ line)
}

void console_init() { uart_init(kCom1); }

void console_init_irq() {
    ioapic_route_isa(kCom1Irq, kVectorCom1, g_prcbs[0].apic_id);
    arch::outb(kCom1 + 1, 0x01);  // interrupt on received data
}

void console_write(const char* s, size_t n) {
    if (g_panicked) {  // the panicking CPU owns the port now
        write_locked(s, n);
        return;
    }
    SpinGuardIrq g(&console_lock);
    write_locked(s, n);
}

void console_write_unlocked(const char* s, size_t n) { write_locked(s, n); }

void kprintf(const char* fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vformat(buf, sizeof buf, fmt, ap);
    va_end(ap);
    console_write(buf, n < int(sizeof buf) ? size_t(n) : sizeof buf - 1);
}

void console_rx_interrupt() {
    SpinGuardIrq g(&console_lock);
    while (arch::inb(kCom1 + 5) & 0x01) {
        char c = char(arch::inb(kCom1));
        if (rx_tail - rx_head < sizeof rx_ring) rx_ring[rx_tail++ % sizeof rx_ring] = c;
    }
    wakeup(&rx_head);
}

int console_getc() {
    uint64_t flags = spin_lock_irqsave(&console_lock);
    while (rx_head == rx_tail) sleep_on(&rx_head, &console_lock);
    char c = rx_ring[rx_head++ % sizeof rx_ring];
    spin_unlock_irqrestore(&console_lock, flags);
    return (unsigned char)c;
}

size_t console_readline(char* buf, size_t size) {
    size_t n = 0;
    for (;;) {
        int c = console_getc();
        if (c == '\r' || c == '\n') {
            console_write("\n", 1);
            break;
        }
        if ((c == 0x7f || c == 0x08)) {
            if (n) {
                n--;
                console_write("\b \b", 3);
            }
            continue;
        }
        if (n + 1 < size) {
            buf[n++] = char(c);
            char ch = char(c);
            console_write(&ch, 1);
        }
    }
    buf[n] = '\0';
    return n;
}

void qemu_exit(uint32_t code) {
    arch::outl(0xf4, code);
    for (;;) {
        arch::cli();
        arch::hlt();
    }
}

void panic(const char* fmt, ...) {
    arch::cli();
    bool first = !__atomic_exchange_n(&g_panicked, true, __ATOMIC_SEQ_CST);
    if (!first) {
        for (;;) arch::hlt();  // another CPU is already reporting
    }
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vformat(buf, sizeof buf, fmt, ap);
    va_end(ap);
    kprintf("\nPANIC on cpu %u: %s\n", cpu_number(), buf);
    lapic_halt_others();
    qemu_exit(kExitFail);
}
