// kern/bootopts.cc: the table of every boot option the kernel accepts.
#include "bootopts.h"

#include "../lib/boot_options.h"
#include "console.h"

BootOptions g_boot;

namespace {

using bootopt::Kind;
const bootopt::Spec kSpecs[] = {
    {"selftest", Kind::kString, nullptr, 0, 0, "run in-kernel self-tests: all, or suites a,b,c"},
    {"hz", Kind::kUint, nullptr, 10, 1000, "timer interrupts per second per CPU (default 100)"},
    {"maxcpus", Kind::kUint, nullptr, 1, 64, "start at most this many CPUs"},
    // init= takes the rest of the line, so it must come last.
    {"init", Kind::kRest, nullptr, 0, 0, "first program and its arguments (rest of the line)"},
};
constexpr int kCount = sizeof kSpecs / sizeof kSpecs[0];
bootopt::Value values[kCount];

}  // namespace

void bootopts_init(const char* cmdline) {
    // Multiboot loaders (QEMU -kernel, GRUB) put the image's path first: skip it.
    const char* p = cmdline;
    while (*p == ' ') p++;
    const char* w = p;
    while (*w && *w != ' ' && *w != '=') w++;
    if (*w != '=') cmdline = w;
    bootopt::Error e = bootopt::parse(cmdline, kSpecs, kCount, values);
    if (!e.ok) {
        kprintf("boot: %s\nboot: known options:\n", e.message);
        for (const auto& s : kSpecs) kprintf("  %-10s %s\n", s.key, s.help);
        kprintf("boot: refusing to boot with a bad command line\n");
        qemu_exit(kExitFail);
    }
    g_boot.selftest = values[0].set ? values[0].str : "";
    g_boot.hz = values[1].set ? uint32_t(values[1].num) : 100;
    g_boot.maxcpus = values[2].set ? uint32_t(values[2].num) : 64;
    g_boot.init = values[3].set ? values[3].str : "";
}
