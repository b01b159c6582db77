// lib/elf.h: check an ELF64 executable and list what to load. Pure: the kernel maps the
// segments, the host tests feed it the real guest programs and damaged copies of them.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace elf {

constexpr int kMaxSegments = 8;

struct Segment {
    uint64_t vaddr, memsz;     // [vaddr, vaddr + memsz) in the program's address space
    uint64_t offset, filesz;   // bytes [offset, offset + filesz) of the file go at vaddr
    bool writable, executable;
};

struct Image {
    uint64_t entry;
    int nsegments;
    Segment segments[kMaxSegments];
};

enum class Error {
    kOk, kTooSmall, kNotElf, kNot64Bit, kNotLittleEndian, kNotX86_64, kNotExecutable,
    kBadProgramHeaders, kTooManySegments, kSegmentOutsideFile, kSegmentOutsideRange,
    kFileLargerThanMemory, kEntryOutsideSegments,
};
const char* error_name(Error e);

// Segments must lie inside [lo, hi); entry must lie in an executable segment.
Error parse(const uint8_t* file, size_t size, uint64_t lo, uint64_t hi, Image* out);

}  // namespace elf
