// collector/symbolizer.h: guest addresses to names, with elfutils' libdw (no DWARF parser of our
// own): a kernel address (below kUserBase) in the kernel ELF the guest booted, a user address in
// the program its process ran, taken out of the initrd the guest booted. Each address becomes
// function+offset and, where the line table has it, file:line.
//
// A return address is looked up one byte back (the call instruction), so a call that is the
// last instruction of a function is not named after the next one; the offset printed is the
// return address's own. All guest programs are linked at the same base (kUserBase), so a user
// address means nothing without its program: the caller names it (from the trace's process or
// thread names).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace spinlab::collect {

struct SymbolPlace {
    bool known = false;     // a symbol covers the address
    std::string function;   // demangled, without its parameter list
    uint64_t offset = 0;    // from the function's start
    std::string file;       // "" when the line table has nothing
    int line = 0;
};

class Symbolizer {
public:
    Symbolizer();
    ~Symbolizer();
    Symbolizer(const Symbolizer&) = delete;
    Symbolizer& operator=(const Symbolizer&) = delete;

    // The kernel's ELF: spinlab.elf (the 32-bit container QEMU loads; its DWARF describes the
    // 64-bit code) or spinlab64.elf. Throws CollectError(kExitFailure) naming the file.
    void load_kernel(const std::string& path);
    // Every program of a ustar initrd (bin/NAME), by NAME. Throws naming the file.
    void load_initrd(const std::string& path);
    // One program from a file, by name.
    void load_program(const std::string& name, const std::string& path);

    bool has_kernel() const;
    // Whether the kernel ELF holds this text (the build id a trace's configuration event names:
    // frames named from another build's ELF would be wrong names). The build id is git describe:
    // two builds of one dirty tree share it, so this catches another commit, not every rebuild.
    bool kernel_has_text(const std::string& text) const;
    bool has_program(const std::string& name) const;

    // return_address: frames after the first are return addresses (looked up at addr - 1).
    SymbolPlace kernel(uint64_t addr, bool return_address) const;
    SymbolPlace user(const std::string& program, uint64_t addr, bool return_address) const;

    // "name+0x1c (file.cc:12)", or "?" when nothing covers it.
    static std::string text(const SymbolPlace& p);

    struct Module;  // one ELF file under libdw (symbolizer.cc)

private:
    std::unique_ptr<Module> kernel_;
    std::string kernel_path_;
    std::map<std::string, std::unique_ptr<Module>> programs_;
};

}  // namespace spinlab::collect
