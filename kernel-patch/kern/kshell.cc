// kern/kshell.cc: reads commands from COM1 (interrupt-driven input) and answers them.
#include "kshell.h"

#include "console.h"
#include "lapic.h"
#include "mem.h"
#include "prcb.h"
#include "sched.h"
#include "selftest.h"

namespace {

bool is(const char* a, const char* b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

}  // namespace

void kshell_run() {
    kprintf("kshell: type 'help'\n");
    char line[128];
    for (;;) {
        kprintf("spinlab> ");
        console_readline(line, sizeof line);
        if (is(line, "")) continue;
        if (is(line, "help")) {
            kprintf("help      this text\ncpus      per-CPU ticks, switches, idle halts\n"
                    "mem       free frames and heap\nselftest  run every self-test (exits QEMU)\n"
                    "halt      leave QEMU\n");
        } else if (is(line, "cpus")) {
            for (uint32_t i = 0; i < g_ncpus; i++) {
                const Prcb& c = g_prcbs[i];
                kprintf("cpu %2u apic %2u ticks %8lu switches %8lu halts %8lu\n", i, c.apic_id,
                        c.ticks, c.ctx_switches, c.idle_halts);
            }
        } else if (is(line, "mem")) {
            kprintf("frames free %lu of %lu, heap free %zu bytes in use %zu blocks\n",
                    pmm_free_frames(), pmm_total_frames(), heap_free_bytes(), heap_live_blocks());
        } else if (is(line, "selftest")) {
            selftest_run("all");
        } else if (is(line, "halt")) {
            qemu_exit(kExitPass);
        } else {
            kprintf("unknown command '%s' (try help)\n", line);
        }
    }
}
