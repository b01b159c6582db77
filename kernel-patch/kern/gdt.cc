// kern/gdt.cc: see gdt.h. In long mode segments are flat; the GDT matters for privilege levels
// (code descriptors' DPL), for syscall/sysret (STAR points at the pairs below) and for the TSS.
#include "gdt.h"

#include "prcb.h"

namespace {

constexpr int kFixed = 5;  // null, kernel code, kernel data, user data, user code
uint64_t gdt[kFixed + 2 * kMaxCpus] = {
    0,
    0x00af9a000000ffff,  // 0x08 kernel code: present, DPL 0, long mode
    0x00cf92000000ffff,  // 0x10 kernel data
    0x00cff2000000ffff,  // 0x18 user data, DPL 3
    0x00affa000000ffff,  // 0x20 user code, DPL 3, long mode
};
__attribute__((aligned(16))) uint8_t double_fault_stacks[kMaxCpus][4096];

}  // namespace

void gdt_init_cpu() {
    Prcb* c = this_cpu();
    c->tss.iomap_base = sizeof(Tss);  // no I/O permission bitmap: ring 3 gets no ports
    c->tss.ist[0] = uint64_t(double_fault_stacks[c->number]) + 4096;
    uint64_t base = uint64_t(&c->tss), limit = sizeof(Tss) - 1;
    int slot = kFixed + 2 * c->number;
    gdt[slot] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ull << 40) |
                (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
    gdt[slot + 1] = base >> 32;
    struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } p = {sizeof gdt - 1, uint64_t(gdt)};
    asm volatile("lgdt %0" ::"m"(p));
    asm volatile(
        "pushq $0x08; leaq 1f(%%rip), %%rax; pushq %%rax; lretq; 1:\n"
        "movw $0x10, %%ax; movw %%ax, %%ds; movw %%ax, %%es; movw %%ax, %%ss" ::: "rax", "memory");
    asm volatile("ltr %w0" ::"r"(uint16_t(slot * 8)));
}
