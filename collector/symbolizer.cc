// collector/symbolizer.cc: see symbolizer.h.
#include "symbolizer.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "hostlib/error.h"
#include "lib/ustar.h"

namespace spinlab::collect {

namespace {

const Dwfl_Callbacks kOffline = {
    .find_elf = nullptr,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

// "void ns::f<int>(int, char) [clone .isra.0]" -> "ns::f": the name a person looks for, without
// the return type, template arguments, parameters or the compiler's clone suffixes. Names that
// are not mangled stay as they are.
std::string demangle(const char* name) {
    int status = 0;
    char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    const std::string full = status == 0 && d ? d : name;
    std::free(d);
    std::string s = full.substr(0, full.find(" [clone"));
    // Keep only the parts outside <...> and (...), except "(anonymous namespace)".
    std::string out;
    int angle = 0, paren = 0;
    for (size_t i = 0; i < s.size(); i++) {
        const char ch = s[i];
        if (paren == 0 && angle == 0 && s.compare(i, 21, "(anonymous namespace)") == 0) {
            out += "(anonymous namespace)";
            i += 20;
            continue;
        }
        if (ch == '<' && paren == 0 && !(i > 8 && s.compare(i - 8, 8, "operator") == 0)) angle++;
        else if (ch == '>' && angle > 0 && paren == 0) angle--;
        else if (ch == '(' && angle == 0) paren++;
        else if (ch == ')' && angle == 0 && paren > 0) paren--;
        else if (angle == 0 && paren == 0) out += ch;
    }
    // A template function's return type comes first: "void ns::f" -> "ns::f".
    if (const size_t sp = out.rfind(' '); sp != std::string::npos && out.find("(anonymous namespace)") == std::string::npos)
        out = out.substr(sp + 1);
    else if (sp != std::string::npos && out.compare(0, 21, "(anonymous namespace)") != 0 &&
             out.find(' ') < out.find("(anonymous namespace)"))
        out = out.substr(out.find(' ') + 1);
    return out.empty() ? full : out;
}

}  // namespace

struct Symbolizer::Module {
    Dwfl* dwfl = nullptr;
    Dwfl_Module* mod = nullptr;
    ~Module() {
        if (dwfl) dwfl_end(dwfl);
    }
};

namespace {

// An ELF through an fd (libdw reads it from there; the fd is its to close).
std::unique_ptr<Symbolizer::Module> open_module(const std::string& name, const std::string& what, int fd) {
    auto m = std::make_unique<Symbolizer::Module>();
    m->dwfl = dwfl_begin(&kOffline);
    if (!m->dwfl) throw CollectError(kExitFailure, "libdw: " + std::string(dwfl_errmsg(-1)));
    dwfl_report_begin(m->dwfl);
    m->mod = dwfl_report_offline(m->dwfl, name.c_str(), what.c_str(), fd);
    if (!m->mod || dwfl_report_end(m->dwfl, nullptr, nullptr) != 0)
        throw CollectError(kExitFailure, what + ": not an ELF file libdw can read (" + dwfl_errmsg(-1) + ")");
    return m;
}

SymbolPlace lookup(const Symbolizer::Module& m, uint64_t addr, bool return_address) {
    SymbolPlace p;
    const Dwarf_Addr pc = return_address && addr ? addr - 1 : addr;
    Dwfl_Module* mod = dwfl_addrmodule(m.dwfl, pc);
    if (!mod) return p;
    GElf_Off off = 0;
    GElf_Sym sym;
    const char* name = dwfl_module_addrinfo(mod, pc, &off, &sym, nullptr, nullptr, nullptr);
    if (!name) return p;
    p.known = true;
    p.function = demangle(name);
    p.offset = off + (pc != addr ? 1 : 0);
    if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc)) {
        int lineno = 0;
        if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
            p.file = file;
            p.line = lineno;
        }
    }
    return p;
}

}  // namespace

Symbolizer::Symbolizer() = default;
Symbolizer::~Symbolizer() = default;

void Symbolizer::load_kernel(const std::string& path) {
    // QEMU boots the 32-bit container; its 64-bit twin beside it has the same code and symbols.
    std::string use = path;
    if (path.ends_with("spinlab.elf")) {
        const std::string twin = path.substr(0, path.size() - 4) + "64.elf";
        if (access(twin.c_str(), R_OK) == 0) use = twin;
    }
    const int fd = open(use.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw CollectError(kExitFailure, "cannot read the kernel ELF " + use + ": " + std::strerror(errno));
    kernel_ = open_module("kernel", use, fd);
    kernel_path_ = use;
}

bool Symbolizer::kernel_has_text(const std::string& text) const {
    std::ifstream in(kernel_path_, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    return !text.empty() && bytes.find(text) != std::string::npos;
}

void Symbolizer::load_program(const std::string& name, const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw CollectError(kExitFailure, "cannot read the program " + path + ": " + std::strerror(errno));
    programs_[name] = open_module(name, path, fd);
}

void Symbolizer::load_initrd(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw CollectError(kExitFailure, "cannot read the initrd " + path);
    const std::vector<uint8_t> tar((std::istreambuf_iterator<char>(in)), {});
    ustar::Reader r(tar.data(), tar.size());
    ustar::File f;
    size_t n = 0;
    while (r.next(&f)) {
        std::string name = f.name;
        if (name.rfind("./", 0) == 0) name = name.substr(2);
        if (name.rfind("bin/", 0) != 0) continue;
        name = name.substr(4);
        // libdw reads from an fd: the program goes into an anonymous memory file.
        const int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
        if (fd < 0 || write(fd, f.data, f.size) != ssize_t(f.size) || lseek(fd, 0, SEEK_SET) != 0) {
            if (fd >= 0) close(fd);
            throw CollectError(kExitFailure, "cannot stage " + name + " from " + path + ": " + std::strerror(errno));
        }
        programs_[name] = open_module(name, path + ":bin/" + name, fd);
        n++;
    }
    if (r.damaged()) throw CollectError(kExitFailure, path + ": a damaged ustar header");
    if (n == 0) throw CollectError(kExitFailure, path + ": no bin/ programs in it");
}

bool Symbolizer::has_kernel() const { return kernel_ != nullptr; }
bool Symbolizer::has_program(const std::string& name) const { return programs_.count(name) != 0; }

SymbolPlace Symbolizer::kernel(uint64_t addr, bool return_address) const {
    return kernel_ ? lookup(*kernel_, addr, return_address) : SymbolPlace{};
}

SymbolPlace Symbolizer::user(const std::string& program, uint64_t addr, bool return_address) const {
    auto it = programs_.find(program);
    return it == programs_.end() ? SymbolPlace{} : lookup(*it->second, addr, return_address);
}

std::string Symbolizer::text(const SymbolPlace& p) {
    if (!p.known) return "?";
    std::ostringstream o;
    o << p.function << "+0x" << std::hex << p.offset << std::dec;
    if (!p.file.empty()) {
        const size_t slash = p.file.rfind('/');
        o << " (" << (slash == std::string::npos ? p.file : p.file.substr(slash + 1)) << ":" << p.line << ")";
    }
    return o.str();
}

}  // namespace spinlab::collect
