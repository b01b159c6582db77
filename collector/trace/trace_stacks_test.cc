// collector/trace/trace_stacks_test.cc: stacks rebuilt from a trace's events: references resolved
// through definitions, and through deletes and rundowns when the definition was lost; a
// reference nothing defines is lost, never resolved to another stack; pairing with the event
// before; and the symbolizer on the real kernel ELF (names checked against binutils' nm).
#include "trace_stacks.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "symbolizer.h"
#include "trace_stack_dump.h"

namespace spinlab::collect {
namespace {

using Frames = std::vector<uint64_t>;

struct Ev {
    TraceEventHeader h;
    std::vector<uint8_t> bytes;
};

Ev stack_event(TraceEventType t, uint16_t cpu, uint64_t tsc, uint64_t key, const Frames& f,
               uint16_t event_type = 0, uint64_t event_tsc = 0, uint16_t depth = 0) {
    const bool with_frames = t != TraceEventType::kStackReference;
    TraceStackEvent e{};
    const uint16_t n = with_frames ? uint16_t(f.size()) : 0;
    e.h = {uint16_t(sizeof e + 8 * n), uint16_t(t), cpu, 0, 1, 2, tsc};
    e.key = key;
    e.event_type = event_type;
    e.event_tsc = event_tsc;
    e.depth = depth ? depth : uint16_t(f.size());
    e.nframes = n;
    Ev out{e.h, std::vector<uint8_t>(e.h.size)};
    std::memcpy(out.bytes.data(), &e, sizeof e);
    if (n) std::memcpy(out.bytes.data() + sizeof e, f.data(), 8 * n);
    return out;
}

Ev profile_event(uint16_t cpu, uint64_t tsc) {
    TraceProfileEvent e{};
    e.h = {uint16_t(sizeof e), uint16_t(TraceEventType::kProfile), cpu, 0, 1, 2, tsc};
    Ev out{e.h, std::vector<uint8_t>(sizeof e)};
    std::memcpy(out.bytes.data(), &e, sizeof e);
    return out;
}

constexpr uint16_t kProfile = uint16_t(TraceEventType::kProfile);

TEST(StackDecoder, ReferencesResolveThroughDefinitionsDeletesAndRundowns) {
    const Frames a{0x1000, 0x2000}, b{0x3000}, c{0x4000, 0x5000, 0x6000};
    // Key 1's definition is in the trace; key 2's was lost but its delete is there; key 3's was
    // lost but the rundown has it; key 4 was never named by anything.
    std::vector<Ev> trace = {
        stack_event(TraceEventType::kStackDefinition, 0, 10, 1, a),
        stack_event(TraceEventType::kStackReference, 0, 10, 1, {}, kProfile, 10, 2),
        stack_event(TraceEventType::kStackReference, 0, 20, 2, {}, kProfile, 20, 1),
        stack_event(TraceEventType::kStackDelete, 0, 25, 2, b),
        stack_event(TraceEventType::kStackReference, 0, 30, 3, {}, kProfile, 30, 3),
        stack_event(TraceEventType::kStackReference, 0, 40, 4, {}, kProfile, 40, 5),
        stack_event(TraceEventType::kStackWalk, 0, 50, 0, c, kProfile, 50),
        stack_event(TraceEventType::kStackRundown, 0, 90, 3, c),
    };
    StackDecoder d;
    for (const Ev& e : trace) d.learn(e.h, e.bytes.data());
    EXPECT_EQ(d.keys(), 3u);
    std::vector<ResolvedStack> got;
    for (const Ev& e : trace)
        if (auto r = d.resolve(e.h, e.bytes.data())) got.push_back(*r);
    ASSERT_EQ(got.size(), 5u);
    EXPECT_EQ(got[0].kind, ResolvedStack::Kind::kResolved);
    EXPECT_EQ(got[0].frames, a);
    EXPECT_EQ(got[1].kind, ResolvedStack::Kind::kResolved) << "from the delete";
    EXPECT_EQ(got[1].frames, b);
    EXPECT_EQ(got[2].kind, ResolvedStack::Kind::kResolved) << "from the rundown";
    EXPECT_EQ(got[2].frames, c);
    EXPECT_EQ(got[3].kind, ResolvedStack::Kind::kLost) << "a lost definition stays lost";
    EXPECT_TRUE(got[3].frames.empty());
    EXPECT_EQ(got[3].depth, 5u);
    EXPECT_EQ(got[4].kind, ResolvedStack::Kind::kInline);
    EXPECT_EQ(got[4].frames, c);
    EXPECT_EQ(d.conflicts(), 0u);
}

TEST(StackDecoder, AKeyNamedWithOtherFramesIsAConflictAndKeepsTheFirst) {
    StackDecoder d;
    const Ev def = stack_event(TraceEventType::kStackDefinition, 0, 1, 7, {1, 2});
    const Ev bad = stack_event(TraceEventType::kStackRundown, 0, 2, 7, {9});
    const Ev same = stack_event(TraceEventType::kStackDelete, 0, 3, 7, {1, 2});
    d.learn(def.h, def.bytes.data());
    d.learn(bad.h, bad.bytes.data());
    d.learn(same.h, same.bytes.data());
    EXPECT_EQ(d.conflicts(), 1u);
    EXPECT_EQ(*d.frames_of(7), (Frames{1, 2}));
}

TEST(StackPairer, AStackBelongsToTheEventBeforeItOnItsCpu) {
    StackPairer p;
    const StackPairer::Owner* o = nullptr;
    const Ev ev0 = profile_event(0, 100), ev1 = profile_event(1, 100);
    const Ev def = stack_event(TraceEventType::kStackDefinition, 0, 100, 1, {5});
    const Ev ref0 = stack_event(TraceEventType::kStackReference, 0, 100, 1, {}, kProfile, 100, 1);
    const Ev stray = stack_event(TraceEventType::kStackReference, 1, 100, 1, {}, kProfile, 99, 1);
    EXPECT_FALSE(p.pair(ev0.h, ev0.bytes.data(), &o));
    EXPECT_FALSE(p.pair(ev1.h, ev1.bytes.data(), &o));
    EXPECT_FALSE(p.pair(def.h, def.bytes.data(), &o)) << "a definition between them is no event";
    ASSERT_TRUE(p.pair(ref0.h, ref0.bytes.data(), &o));
    EXPECT_EQ(o->header.cpu, 0u);
    EXPECT_EQ(o->header.tsc, 100u);
    EXPECT_FALSE(p.pair(stray.h, stray.bytes.data(), &o)) << "its event's TSC differs: lost";
    EXPECT_EQ(p.orphans(), 1u);
}

// Symbols of the real kernel, as binutils' nm sees them.
std::map<std::string, uint64_t> nm_symbols(const std::string& elf) {
    std::map<std::string, uint64_t> out;
    FILE* f = popen(("nm --defined-only " + elf).c_str(), "r");
    if (!f) return out;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        unsigned long long addr;
        char kind;
        char name[900];
        if (sscanf(line, "%llx %c %899s", &addr, &kind, name) == 3 && (kind == 'T' || kind == 't'))
            out[name] = addr;
    }
    pclose(f);
    return out;
}

TEST(Symbolizer, KernelAddressesBecomeFunctionOffsetAndLine) {
    const std::string elf = SPINLAB_KERNEL_DIR "/spinlab.elf";
    const auto syms = nm_symbols(SPINLAB_KERNEL_DIR "/spinlab64.elf");
    ASSERT_TRUE(syms.count("kmain")) << "build the kernel first (make kernel)";
    Symbolizer s;
    s.load_kernel(elf);
    ASSERT_TRUE(s.has_kernel());
    const uint64_t kmain = syms.at("kmain");
    const SymbolPlace at = s.kernel(kmain + 4, false);
    EXPECT_TRUE(at.known);
    EXPECT_EQ(at.function, "kmain");
    EXPECT_EQ(at.offset, 4u);
    EXPECT_NE(at.file.find("main.cc"), std::string::npos) << at.file;
    EXPECT_GT(at.line, 0);
    // A return address right after a function's last byte names the function it returns into
    // only when looked up as a return address (one byte back).
    const SymbolPlace ret = s.kernel(kmain, true);
    EXPECT_NE(ret.function, "kmain");
    EXPECT_EQ(Symbolizer::text(s.kernel(0x10, false)), "?");
    // A mangled name comes out demangled, without its parameters.
    const SymbolPlace lock = s.kernel(syms.at("_Z9spin_lockP8Spinlock") + 1, false);
    EXPECT_EQ(lock.function, "spin_lock");
}

TEST(Symbolizer, UserAddressesNeedTheirProgram) {
    Symbolizer s;
    s.load_initrd(SPINLAB_KERNEL_DIR "/initrd.tar");
    EXPECT_TRUE(s.has_program("lockbench"));
    EXPECT_TRUE(s.has_program("hello"));
    const auto syms = nm_symbols(SPINLAB_KERNEL_DIR "/user/bin/hello");
    ASSERT_TRUE(syms.count("main"));
    EXPECT_EQ(s.user("hello", syms.at("main") + 2, false).function, "main");
    EXPECT_FALSE(s.user("nosuch", syms.at("main"), false).known);
    StackDump d(s);
    EXPECT_NE(d.frame_text(syms.at("main"), false, 9).find("no program name"), std::string::npos);
}

}  // namespace
}  // namespace spinlab::collect
