// kern/bootopts.h: the kernel's boot options, parsed once from the multiboot command line.
#pragma once
#include <stdint.h>

struct BootOptions {
    const char* selftest;   // "" = none; "all" or a comma-separated list of suites
    uint32_t hz;            // timer interrupts per second per CPU
    uint32_t maxcpus;       // start at most this many CPUs
    const char* init;       // "" = none; else the first program and its arguments
};

extern BootOptions g_boot;

// Parses the command line; on any error prints the message and the list of known options and
// leaves QEMU with a failing status: never boots half-configured.
void bootopts_init(const char* cmdline);
