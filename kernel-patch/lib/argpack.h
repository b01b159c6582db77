// lib/argpack.h: lay out argv on a new program's stack, as the kernel hands it to _start:
// the strings at the top, below them the argv pointer array (NULL-terminated), rsp 16-byte
// aligned at the array. Pure: the host tests check the layout byte by byte.
#pragma once
#include <stddef.h>
#include <stdint.h>

struct ArgPack {
    uint64_t rsp;      // initial stack pointer (== argv)
    uint64_t argv;     // user address of argv[0]
    size_t used;       // bytes at the top of buf that hold the image
};

// buf stands for user memory [stack_top - size, stack_top). Returns false when the arguments
// do not fit.
bool argpack(const char* const* argv, int argc, uint64_t stack_top, uint8_t* buf, size_t size,
             ArgPack* out);
