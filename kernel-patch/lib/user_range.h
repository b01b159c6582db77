// lib/user_range.h: is [addr, addr + len) inside the user half of the address space? Every
// pointer a guest program passes goes through this before the kernel walks its page tables.
#pragma once
#include <stdint.h>

#include "spinlab/syscall.h"

inline bool user_range_ok(uint64_t addr, uint64_t len) {
    if (addr < spinlab::kUserBase || addr >= spinlab::kUserLimit) return false;
    return len <= spinlab::kUserLimit - addr;   // no overflow: checked as a difference
}
