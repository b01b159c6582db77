// selftest/mem_test.cc: the frame allocator and the heap neither leak nor hand out a block
// twice under load from every CPU.
#include "../arch/x86.h"
#include "../kern/lapic.h"
#include "../kern/mem.h"
#include "../kern/prcb.h"
#include "../kern/selftest.h"

namespace {

constexpr int kSlots = 64;
constexpr int kRounds = 3000;
// Each churn stops early at this TSC deadline: with a fair spinlock (lock=ticket, mcs) and more
// vCPUs than host cores, every handover of the heap or frame lock can wait for a host time
// slice, and the checks below do not depend on how many rounds ran.
uint64_t deadline;
void start_clock() { deadline = arch::rdtsc_lfence() + g_tsc_hz * 3; }
bool in_time() { return arch::rdtsc_lfence() < deadline; }

uint64_t xorshift(uint64_t& s) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

// Each thread keeps kSlots allocations filled with a byte pattern of its own and checks the
// pattern before freeing: two threads given the same memory would overwrite each other.
void heap_churn(int i, void*) {
    uint8_t* slot[kSlots] = {};
    size_t len[kSlots] = {};
    uint64_t seed = 0x9e3779b97f4a7c15ull * uint64_t(i + 1);
    uint8_t tag = uint8_t(i * 37 + 1);
    for (int r = 0; r < kRounds && (r < 16 || in_time()); r++) {
        int k = int(xorshift(seed) % kSlots);
        if (slot[k]) {
            for (size_t b = 0; b < len[k]; b++)
                if (slot[k][b] != uint8_t(tag + b)) {
                    selftest_fail(__FILE__, __LINE__, "heap block overwritten by another owner");
                    break;
                }
            kfree(slot[k]);
            slot[k] = nullptr;
        } else {
            len[k] = 1 + xorshift(seed) % 700;
            slot[k] = static_cast<uint8_t*>(kmalloc(len[k]));
            if (!slot[k]) {
                selftest_fail(__FILE__, __LINE__, "kmalloc(%zu) failed", len[k]);
                continue;
            }
            for (size_t b = 0; b < len[k]; b++) slot[k][b] = uint8_t(tag + b);
        }
    }
    for (int k = 0; k < kSlots; k++)
        if (slot[k]) kfree(slot[k]);
}

void heap_no_leak_under_load() {
    size_t free0 = heap_free_bytes(), live0 = heap_live_blocks();
    start_clock();
    run_on_cpus(int(g_ncpus) * 2, heap_churn, nullptr);
    TEST_CHECK_EQ(heap_free_bytes(), free0);
    TEST_CHECK_EQ(heap_live_blocks(), live0);
}

void page_churn(int i, void*) {
    uint64_t pages[32] = {};
    for (int r = 0; r < 200 && (r < 2 || in_time()); r++) {
        for (auto& p : pages) {
            p = page_alloc();
            if (!p) {
                selftest_fail(__FILE__, __LINE__, "page_alloc failed");
                return;
            }
            *reinterpret_cast<uint64_t*>(p) = uint64_t(i);
        }
        for (auto& p : pages) {
            if (*reinterpret_cast<uint64_t*>(p) != uint64_t(i))
                selftest_fail(__FILE__, __LINE__, "frame handed to two owners");
            page_free(p);
        }
    }
}

void frames_no_leak_under_load() {
    uint64_t free0 = pmm_free_frames();
    start_clock();
    run_on_cpus(int(g_ncpus) * 2, page_churn, nullptr);
    // Threads' stacks were freed at join, so the count must be back where it started.
    TEST_CHECK_EQ(pmm_free_frames(), free0);
}

void pages_are_zeroed() {
    uint64_t p = page_alloc();
    TEST_CHECK(p != 0);
    auto* w = reinterpret_cast<uint64_t*>(p);
    for (int i = 0; i < 512; i++) w[i] = ~0ull;
    page_free(p);
    uint64_t q = page_alloc();
    auto* v = reinterpret_cast<uint64_t*>(q);
    bool zero = true;
    for (int i = 0; i < 512; i++) zero &= v[i] == 0;
    TEST_CHECK(zero);
    page_free(q);
}

const SelfTest kTests[] = {
    {"heap_no_leak_under_load", heap_no_leak_under_load},
    {"frames_no_leak_under_load", frames_no_leak_under_load},
    {"pages_are_zeroed", pages_are_zeroed},
};

}  // namespace

extern const SelfTestSuite kSuiteMem = {"mem", kTests, sizeof kTests / sizeof kTests[0]};
