// collector/trace/trace_text_test.cc: `trace dump`'s line speaks the ABI's field names.
#include "trace_text.h"

#include <gtest/gtest.h>
#include <spinlab/perfdata.h>

#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "trace_export_fields.h"

namespace spinlab::collect {
namespace {

template <class E>
std::string line(const E& e) {
    return trace_event_line(e.h, reinterpret_cast<const uint8_t*>(&e));
}

std::vector<std::string> keys(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string word; in >> word;)
        if (auto eq = word.find('='); eq != std::string::npos) out.push_back(word.substr(0, eq));
    return out;
}

TEST(TraceText, ASpinlockEventIsItsFieldsByTheirAbiNames) {
    TraceSpinlockEvent e{};
    e.h = {sizeof e, uint16_t(TraceEventType::kSpinlock), 1, 0, 21, 2, 14000};
    e.lock_address = 0x5000;
    e.call_site = 0x7000;
    e.acquire_tsc = 13000;
    e.release_tsc = 14000;
    e.wait_cycles = 2000;
    e.spin_count = 50;
    e.class_id = 9;
    e.holder_cpu_start = 0;
    e.holder_cpu_end = kNoCpu;
    e.lhp_class = uint8_t(LhpClass::kHolderPreempted);
    e.rules = kTraceRuleContention | kTraceRuleLongWait;
    e.flags = kTraceSpinContended;
    EXPECT_EQ(line(e),
              "14000 cpu=1 thread_id=21 process_id=2 spinlock lock_address=0x5000 call_site=0x7000 "
              "acquire_tsc=13000 release_tsc=14000 wait_cycles=2000 spin_count=50 holder_steal_ns=0 "
              "waiter_steal_ns=0 class_id=9 holder_cpu_start=0 holder_cpu_end=- "
              "lhp_class=holder-preempted rules=contention,long-wait flags=contended");
    // the count of the holds begun during the wait, only where the guest counted it
    e.flags |= kTraceSpinHandoversCounted;
    e.handovers = 0;
    EXPECT_EQ(line(e).substr(line(e).rfind(' ')), " handovers=0");
    // every flag by name
    e.flags |= kTraceSpinWaiterCpuTookNone | kTraceSpinWaitOverflow;
    EXPECT_NE(line(e).find(" flags=contended,wait-overflow,handovers-counted,waiter-cpu-took-none "),
              std::string::npos) << line(e);
    e.flags = 0;
    EXPECT_NE(line(e).find(" flags=none"), std::string::npos) << line(e);
}

TEST(TraceText, SignedArrayAndTextFieldsReadAsTheyWereWritten) {
    TraceSyscallExitEvent x{};
    x.h = {sizeof x, uint16_t(TraceEventType::kSyscallExit), 0, 0, 3, 1, 50};
    x.number = 7;
    x.result = -22;
    EXPECT_EQ(line(x), "50 cpu=0 thread_id=3 process_id=1 syscall-exit number=7 result=-22");
    TraceSyscallEnterEvent n{};
    n.h = {sizeof n, uint16_t(TraceEventType::kSyscallEnter), 0, 0, 3, 1, 40};
    n.number = 7;
    n.args[0] = 1, n.args[1] = 2, n.args[2] = 3;
    EXPECT_EQ(line(n), "40 cpu=0 thread_id=3 process_id=1 syscall-enter number=7 args=1,2,3");
    TraceThreadEvent t{};
    t.h = {sizeof t, uint16_t(TraceEventType::kThreadRundown), 0, 0, 0, 0, 0};
    t.thread_id = 11, t.process_id = 2, t.affinity_cpu = kNoCpu;
    std::strcpy(t.name, "worker");
    EXPECT_EQ(line(t), "0 cpu=0 thread_id=0 process_id=0 thread-rundown thread_id=11 process_id=2 "
                       "affinity_cpu=- name=worker");
}

TEST(TraceText, AStackEventEndsWithItsFrames) {
    struct {
        TraceStackEvent e;
        uint64_t frames[2];
    } s{};
    s.e.h = {sizeof s, uint16_t(TraceEventType::kStackDefinition), 0, 0, 0, 0, 9};
    s.e.key = 0xab, s.e.depth = 2, s.e.nframes = 2;
    s.frames[0] = 0xffffffff80100000, s.frames[1] = 0x401000;
    const std::string got = trace_event_line(s.e.h, reinterpret_cast<const uint8_t*>(&s));
    EXPECT_NE(got.find(" stack-def key=0xab depth=2 walk_end="), std::string::npos) << got;
    EXPECT_NE(got.find(" frames=0xffffffff80100000,0x401000"), std::string::npos) << got;
    EXPECT_EQ(got.find("event_type="), std::string::npos) << got;  // a definition names no event
}

// Every key of every event type is a field of the header or of that type's struct in trace.h
// (or the frames after a stack event): one vocabulary for the dump and the exports.
TEST(TraceText, EveryKeyIsAnAbiFieldName) {
    for (uint16_t type = 0; type < 64; type++) {
        const auto fields = payload_fields(type);
        if (fields.empty()) continue;
        std::vector<uint8_t> ev(512, 0);
        TraceEventHeader h{uint16_t(ev.size()), type, 0, 0, 1, 1, 1};
        std::memcpy(ev.data(), &h, sizeof h);
        std::set<std::string> names = {"cpu", "thread_id", "process_id", kStackFramesField};
        for (const auto& f : fields) names.insert(f.name);
        for (const auto& k : keys(trace_event_line(h, ev.data())))
            EXPECT_TRUE(names.count(k)) << trace_event_type_name(type) << ": '" << k << "' is no field of trace.h";
    }
}

}  // namespace
}  // namespace spinlab::collect
