// lib/elf.cc: see elf.h. Layout from the System V ABI (ELF-64 object file format).
#include "elf.h"

namespace elf {
namespace {

template <class T>
T rd(const uint8_t* p) {
    T v = 0;
    for (int i = int(sizeof(T)) - 1; i >= 0; i--) v = T(v << 8 | p[i]);
    return v;
}

constexpr uint32_t kPtLoad = 1;
constexpr uint32_t kPfX = 1, kPfW = 2;

}  // namespace

const char* error_name(Error e) {
    switch (e) {
    case Error::kOk: return "ok";
    case Error::kTooSmall: return "file too small for an ELF header";
    case Error::kNotElf: return "not an ELF file";
    case Error::kNot64Bit: return "not a 64-bit ELF file";
    case Error::kNotLittleEndian: return "not little-endian";
    case Error::kNotX86_64: return "not an x86-64 program";
    case Error::kNotExecutable: return "not an executable (ET_EXEC)";
    case Error::kBadProgramHeaders: return "program headers outside the file";
    case Error::kTooManySegments: return "too many loadable segments";
    case Error::kSegmentOutsideFile: return "segment data outside the file";
    case Error::kSegmentOutsideRange: return "segment outside the user address range";
    case Error::kFileLargerThanMemory: return "segment file size exceeds its memory size";
    case Error::kEntryOutsideSegments: return "entry point not in an executable segment";
    }
    return "?";
}

Error parse(const uint8_t* f, size_t size, uint64_t lo, uint64_t hi, Image* out) {
    *out = Image{};
    if (size < 64) return Error::kTooSmall;
    if (f[0] != 0x7f || f[1] != 'E' || f[2] != 'L' || f[3] != 'F') return Error::kNotElf;
    if (f[4] != 2) return Error::kNot64Bit;
    if (f[5] != 1) return Error::kNotLittleEndian;
    if (rd<uint16_t>(f + 18) != 62) return Error::kNotX86_64;
    if (rd<uint16_t>(f + 16) != 2) return Error::kNotExecutable;
    uint64_t phoff = rd<uint64_t>(f + 32);
    uint16_t phentsize = rd<uint16_t>(f + 54), phnum = rd<uint16_t>(f + 56);
    if (phentsize < 56 || phoff > size || uint64_t(phnum) * phentsize > size - phoff)
        return Error::kBadProgramHeaders;
    out->entry = rd<uint64_t>(f + 24);
    bool entry_ok = false;
    for (int i = 0; i < phnum; i++) {
        const uint8_t* ph = f + phoff + uint64_t(i) * phentsize;
        if (rd<uint32_t>(ph) != kPtLoad) continue;
        if (out->nsegments == kMaxSegments) return Error::kTooManySegments;
        uint32_t flags = rd<uint32_t>(ph + 4);
        Segment s{rd<uint64_t>(ph + 16), rd<uint64_t>(ph + 40), rd<uint64_t>(ph + 8),
                  rd<uint64_t>(ph + 32), (flags & kPfW) != 0, (flags & kPfX) != 0};
        if (s.filesz > s.memsz) return Error::kFileLargerThanMemory;
        if (s.offset > size || s.filesz > size - s.offset) return Error::kSegmentOutsideFile;
        if (s.vaddr < lo || s.vaddr >= hi || s.memsz > hi - s.vaddr) return Error::kSegmentOutsideRange;
        if (s.executable && out->entry >= s.vaddr && out->entry < s.vaddr + s.memsz) entry_ok = true;
        out->segments[out->nsegments++] = s;
    }
    if (!entry_ok) return Error::kEntryOutsideSegments;
    return Error::kOk;
}

}  // namespace elf
