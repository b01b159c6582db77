// sysinfo/sysinfo_handler_test.cc: every status path of the query/set handler.
#include "sysinfo_handler.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "../lockstat/perf_record.h"
#include "../locktrace/trace_session.h"
#include "memory_buffer.h"

namespace spinlab::sysinfo {
namespace {

using lockstat::SpinlockParams;

constexpr uint32_t kTrace = static_cast<uint32_t>(InfoClass::kSystemPerformanceTraceInformation);
constexpr uint32_t kPerf = static_cast<uint32_t>(InfoClass::kSpinlabSpinlockPerfData);
constexpr uint32_t kTable = static_cast<uint32_t>(InfoClass::kSpinlabLockClassTable);
constexpr uint32_t kReset = static_cast<uint32_t>(InfoClass::kSpinlabResetCounters);
constexpr uint32_t kConfig = static_cast<uint32_t>(InfoClass::kSpinlabSystemConfiguration);
constexpr uint32_t kFormerLongWaits = 0x5305;  // the long-wait ring's class, gone
constexpr uint32_t kSub =
    static_cast<uint32_t>(EventTraceInformationClass::kEventTraceSpinlockInformation);

// A caller's buffer whose copies can be made to fail, as a bad user pointer would.
struct TestBuffer {
    std::vector<uint8_t> bytes;
    MemoryBufferState mem{};
    bool fail_in = false;
    bool fail_out = false;
    explicit TestBuffer(size_t n) : bytes(n, 0xAB) { mem = {bytes.data(), uint32_t(n)}; }
    Buffer buffer() {
        return Buffer{mem.length, this,
                      [](void* c, uint32_t off, void* dst, uint32_t n) {
                          auto* t = static_cast<TestBuffer*>(c);
                          return !t->fail_in && memory_copy_in(&t->mem, off, dst, n);
                      },
                      [](void* c, uint32_t off, const void* src, uint32_t n) {
                          auto* t = static_cast<TestBuffer*>(c);
                          return !t->fail_out && memory_copy_out(&t->mem, off, src, n);
                      }};
    }
    template <class T>
    T at(size_t off) const {
        T v;
        std::memcpy(&v, bytes.data() + off, sizeof v);
        return v;
    }
    template <class T>
    void put(size_t off, const T& v) {
        std::memcpy(bytes.data() + off, &v, sizeof v);
    }
};

class SysinfoTest : public ::testing::Test {
  protected:
    static constexpr uint32_t kCpus = 2;
    static constexpr uint32_t kClasses = 3;

    void SetUp() override {
        for (uint32_t i = 0; i < kCpus; i++) {
            perf_.push_back(std::make_unique<CpuPerfData>());
            lockstat::init_cpu_perf(*perf_[i], i, 1000);
            ptrs_.push_back(perf_[i].get());
        }
        const char* names[kClasses] = {"sched", "alloc", "console"};
        for (uint32_t i = 0; i < kClasses; i++) {
            classes_[i] = LockClassEntry{i, i + 1, {}};
            std::strncpy(classes_[i].name, names[i], kLockClassNameLen - 1);
        }
        std::memset(&config_, 0, sizeof config_);
        config_.tsc_hz = 2600000000ull;
        config_.lock_algorithm = static_cast<uint32_t>(LockAlgorithm::kTicket);
        std::memcpy(config_.hypervisor_signature, "TCGTCGTCGTCG", 12);
        std::strcpy(config_.build_id, "test-build");
        ctx_ = Context{ptrs_.data(),
                       kCpus,
                       classes_,
                       kClasses,
                       &config_,
                       &params_,
                       [](void* arg, uint32_t cpu, uint32_t cls) {
                           auto* self = static_cast<SysinfoTest*>(arg);
                           self->resets_.push_back({cpu, cls});
                           lockstat::reset_cpu_perf(*self->perf_[cpu], cls);
                       },
                       this,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr};
        // CPU 0: class 0 two uncontended, class 1 one 300-cycle wait; CPU 1: class 1 one
        // 5000-cycle wait and an overflow.
        lockstat::record_uncontended(perf_[0]->classes[0]);
        lockstat::record_uncontended(perf_[0]->classes[0]);
        lockstat::record_wait(perf_[0]->classes[1], 0, 300, LhpClass::kUnknown);
        lockstat::record_wait(perf_[1]->classes[1], 0, 5000, LhpClass::kUnknown);
        lockstat::record_wait(perf_[1]->classes[1], 9, 1, LhpClass::kUnknown);
    }

    Status query(uint32_t cls, TestBuffer& b, uint32_t* rl) {
        *rl = 0xDEADBEEF;
        return query_system_information(cls, b.buffer(), ctx_, rl);
    }
    Status set(uint32_t cls, TestBuffer& b, bool privileged, uint32_t* rl = nullptr) {
        return set_system_information(cls, b.buffer(), privileged, ctx_, rl);
    }
    static TestBuffer trace_buffer(uint32_t spin, uint32_t acq, uint32_t cont, uint32_t hold) {
        TestBuffer b(sizeof(EventTraceSpinlockInformation));
        b.put(0, EventTraceSpinlockInformation{kSub, spin, acq, cont, hold});
        return b;
    }
    static TestBuffer perf_request(uint32_t cpu, uint32_t cls, uint32_t flags, size_t len) {
        TestBuffer b(len);
        b.put(0, SpinlockPerfRequest{cpu, cls, flags, 0, 0, {}});
        return b;
    }
    bool params_are_defaults() const {
        return params_.spin_threshold == 1 && params_.acquire_sample_rate == 1000 &&
               params_.contention_sample_rate == 1 && params_.hold_threshold == 1000000;
    }

    std::vector<std::unique_ptr<CpuPerfData>> perf_;
    std::vector<CpuPerfData*> ptrs_;
    LockClassEntry classes_[kClasses];
    SystemConfiguration config_;
    SpinlockParams params_ = lockstat::kDefaultSpinlockParams;
    std::vector<std::pair<uint32_t, uint32_t>> resets_;
    Context ctx_;
};

TEST_F(SysinfoTest, UnknownClassIsInvalidInfoClass) {
    TestBuffer b(64);
    uint32_t rl;
    EXPECT_EQ(query(0x1234, b, &rl), Status::kInvalidInfoClass);
    EXPECT_EQ(rl, 0u);
    EXPECT_EQ(set(0x1234, b, true, &rl), Status::kInvalidInfoClass);
    EXPECT_EQ(b.at<uint8_t>(0), 0xAB);  // nothing written
}

TEST_F(SysinfoTest, WrongDirectionIsInvalidInfoClass) {
    TestBuffer b(sizeof(ResetRequest));
    uint32_t rl;
    EXPECT_EQ(query(kReset, b, &rl), Status::kInvalidInfoClass);
    TestBuffer c(sizeof(SystemConfiguration));
    EXPECT_EQ(set(kConfig, c, true), Status::kInvalidInfoClass);
    EXPECT_EQ(set(kPerf, c, true), Status::kInvalidInfoClass);
}

TEST_F(SysinfoTest, TraceQueryReturnsTheDefaults) {
    TestBuffer b(sizeof(EventTraceSpinlockInformation));
    b.put<uint32_t>(0, kSub);
    uint32_t rl;
    ASSERT_EQ(query(kTrace, b, &rl), Status::kSuccess);
    EXPECT_EQ(rl, 0x14u);
    auto q = b.at<EventTraceSpinlockInformation>(0);
    EXPECT_EQ(q.event_trace_information_class, kSub);
    EXPECT_EQ(q.spin_threshold, 1u);
    EXPECT_EQ(q.acquire_sample_rate, 1000u);
    EXPECT_EQ(q.contention_sample_rate, 1u);
    EXPECT_EQ(q.hold_threshold, 1000000u);
}

TEST_F(SysinfoTest, TraceShortBufferReturnsNeededLength) {
    uint32_t rl;
    TestBuffer tiny(3);
    EXPECT_EQ(query(kTrace, tiny, &rl), Status::kInfoLengthMismatch);
    EXPECT_EQ(rl, 4u);    // first the sub-class
    TestBuffer v1(0x10);  // the Windows 6.1 layout
    v1.put<uint32_t>(0, kSub);
    EXPECT_EQ(query(kTrace, v1, &rl), Status::kInfoLengthMismatch);
    EXPECT_EQ(rl, 0x14u);
    TestBuffer big(0x18);
    big.put<uint32_t>(0, kSub);
    EXPECT_EQ(set(kTrace, big, true, &rl), Status::kInfoLengthMismatch);
    EXPECT_EQ(rl, 0x14u);
}

TEST_F(SysinfoTest, TraceUnknownSubClassIsInvalidInfoClass) {
    TestBuffer b(0x14);
    b.put<uint32_t>(0, 4);
    uint32_t rl;
    EXPECT_EQ(query(kTrace, b, &rl), Status::kInvalidInfoClass);
    EXPECT_EQ(set(kTrace, b, true), Status::kInvalidInfoClass);
}

TEST_F(SysinfoTest, SetRoundTrip) {
    TestBuffer in = trace_buffer(64, 5000, 10, 2000000);
    uint32_t rl = 77;
    ASSERT_EQ(set(kTrace, in, true, &rl), Status::kSuccess);
    EXPECT_EQ(rl, 0u);
    TestBuffer out(0x14);
    out.put<uint32_t>(0, kSub);
    ASSERT_EQ(query(kTrace, out, &rl), Status::kSuccess);
    auto q = out.at<EventTraceSpinlockInformation>(0);
    EXPECT_EQ(q.spin_threshold, 64u);
    EXPECT_EQ(q.acquire_sample_rate, 5000u);
    EXPECT_EQ(q.contention_sample_rate, 10u);
    EXPECT_EQ(q.hold_threshold, 2000000u);
}

TEST_F(SysinfoTest, UnprivilegedSetIsDeniedAndChangesNothing) {
    TestBuffer in = trace_buffer(64, 5000, 10, 2000000);
    EXPECT_EQ(set(kTrace, in, false), Status::kAccessDenied);
    EXPECT_TRUE(params_are_defaults());
    TestBuffer r(sizeof(ResetRequest));
    r.put(0, ResetRequest{kAllCpus, kAllLockClasses});
    EXPECT_EQ(set(kReset, r, false), Status::kAccessDenied);
    EXPECT_TRUE(resets_.empty());
    EXPECT_EQ(perf_[0]->classes[0].acquisitions, 2u);
}

TEST_F(SysinfoTest, SetBelowAMinimumIsInvalidParameterAndChangesNothing) {
    for (auto in : {trace_buffer(0, 5000, 10, 2000000), trace_buffer(64, 999, 10, 2000000),
                    trace_buffer(64, 5000, 0, 2000000), trace_buffer(64, 5000, 10, 999999)}) {
        EXPECT_EQ(set(kTrace, in, true), Status::kInvalidParameter);
        EXPECT_TRUE(params_are_defaults());
    }
}

TEST_F(SysinfoTest, CopyFailuresAreAccessViolation) {
    TestBuffer in = trace_buffer(64, 5000, 10, 2000000);
    in.fail_in = true;
    EXPECT_EQ(set(kTrace, in, true), Status::kAccessViolation);
    EXPECT_TRUE(params_are_defaults());
    uint32_t rl;
    TestBuffer q(0x14);
    q.put<uint32_t>(0, kSub);
    q.fail_out = true;
    EXPECT_EQ(query(kTrace, q, &rl), Status::kAccessViolation);
    EXPECT_EQ(rl, 0u);
    TestBuffer p = perf_request(kAllCpus, kAllLockClasses, kPerfMergeCpus, 4096);
    p.fail_in = true;
    EXPECT_EQ(query(kPerf, p, &rl), Status::kAccessViolation);
    p.fail_in = false;
    p.fail_out = true;
    EXPECT_EQ(query(kPerf, p, &rl), Status::kAccessViolation);
    TestBuffer c(sizeof(SystemConfiguration));
    c.fail_out = true;
    EXPECT_EQ(query(kConfig, c, &rl), Status::kAccessViolation);
    TestBuffer t(1024);
    t.fail_out = true;
    EXPECT_EQ(query(kTable, t, &rl), Status::kAccessViolation);
}

TEST_F(SysinfoTest, PerfShortBufferReturnsNeededLength) {
    uint32_t rl;
    TestBuffer head(16);
    EXPECT_EQ(query(kPerf, head, &rl), Status::kInfoLengthMismatch);
    EXPECT_EQ(rl, sizeof(SpinlockPerfRequest));
    const uint32_t needed = 32 + kCpus * kClasses * sizeof(SpinlockPerfRecord);
    TestBuffer shy = perf_request(kAllCpus, kAllLockClasses, 0, needed - 1);
    EXPECT_EQ(query(kPerf, shy, &rl), Status::kInfoLengthMismatch);
    EXPECT_EQ(rl, needed);
    EXPECT_EQ(shy.at<uint32_t>(sizeof(SpinlockPerfRequest)), 0xABABABABu);  // untouched
}

TEST_F(SysinfoTest, PerfPerCpuAllClasses) {
    const uint32_t needed = 32 + kCpus * kClasses * sizeof(SpinlockPerfRecord);
    TestBuffer b = perf_request(kAllCpus, kAllLockClasses, 0, needed + 100);
    uint32_t rl;
    ASSERT_EQ(query(kPerf, b, &rl), Status::kSuccess);
    EXPECT_EQ(rl, needed);
    auto head = b.at<SpinlockPerfReply>(0);
    EXPECT_EQ(head.record_count, kCpus * kClasses);
    EXPECT_EQ(head.record_size, sizeof(SpinlockPerfRecord));
    // CPU-major order.
    auto r = [&](uint32_t i) {
        return b.at<SpinlockPerfRecord>(32 + i * sizeof(SpinlockPerfRecord));
    };
    EXPECT_EQ(r(0).cpu, 0u);
    EXPECT_EQ(r(0).class_id, 0u);
    EXPECT_EQ(r(0).perf.uncontended, 2u);
    EXPECT_EQ(r(1).perf.wait_hist[8], 1u);
    EXPECT_EQ(r(4).cpu, 1u);
    EXPECT_EQ(r(4).class_id, 1u);
    EXPECT_EQ(r(4).perf.wait_overflow, 1u);
    EXPECT_EQ(r(4).perf.wait_hist[12], 1u);
}

TEST_F(SysinfoTest, PerfMergedOverCpusAndClasses) {
    uint32_t rl;
    TestBuffer one = perf_request(kAllCpus, 1, kPerfMergeCpus, 4096);
    ASSERT_EQ(query(kPerf, one, &rl), Status::kSuccess);
    EXPECT_EQ(rl, 32 + sizeof(SpinlockPerfRecord));
    auto r = one.at<SpinlockPerfRecord>(32);
    EXPECT_EQ(r.cpu, kAllCpus);
    EXPECT_EQ(r.class_id, 1u);
    EXPECT_EQ(r.perf.acquisitions, 3u);
    EXPECT_EQ(r.perf.wait_cycles_max, 5000u);
    EXPECT_TRUE(lockstat::wait_invariant_holds(r.perf));

    TestBuffer all =
        perf_request(kAllCpus, kAllLockClasses, kPerfMergeCpus | kPerfMergeClasses, 4096);
    ASSERT_EQ(query(kPerf, all, &rl), Status::kSuccess);
    r = all.at<SpinlockPerfRecord>(32);
    EXPECT_EQ(r.cpu, kAllCpus);
    EXPECT_EQ(r.class_id, kAllLockClasses);
    EXPECT_EQ(r.perf.acquisitions, 5u);
    EXPECT_EQ(r.perf.uncontended, 2u);

    TestBuffer cpu1 = perf_request(1, kAllLockClasses, kPerfMergeClasses, 4096);
    ASSERT_EQ(query(kPerf, cpu1, &rl), Status::kSuccess);
    r = cpu1.at<SpinlockPerfRecord>(32);
    EXPECT_EQ(r.cpu, 1u);
    EXPECT_EQ(r.perf.acquisitions, 2u);
}

TEST_F(SysinfoTest, PerfBadSelectorsAreInvalidParameter) {
    uint32_t rl;
    for (auto b : {perf_request(kCpus, 0, 0, 4096), perf_request(0, kClasses, 0, 4096),
                   perf_request(0, 0, 1u << 7, 4096)}) {
        EXPECT_EQ(query(kPerf, b, &rl), Status::kInvalidParameter);
        EXPECT_EQ(rl, 0u);
    }
}

TEST_F(SysinfoTest, LockClassTable) {
    uint32_t rl;
    TestBuffer small(8 + 2 * 32);
    EXPECT_EQ(query(kTable, small, &rl), Status::kInfoLengthMismatch);
    EXPECT_EQ(rl, 8u + kClasses * 32);
    TestBuffer b(rl);
    ASSERT_EQ(query(kTable, b, &rl), Status::kSuccess);
    auto head = b.at<LockClassTableReply>(0);
    EXPECT_EQ(head.count, kClasses);
    EXPECT_EQ(head.entry_size, sizeof(LockClassEntry));
    auto e = b.at<LockClassEntry>(8 + 2 * 32);
    EXPECT_EQ(e.id, 2u);
    EXPECT_STREQ(e.name, "console");
}

TEST_F(SysinfoTest, ResetOneCpuOneClassThenEverything) {
    TestBuffer r(sizeof(ResetRequest));
    r.put(0, ResetRequest{1, 1});
    ASSERT_EQ(set(kReset, r, true), Status::kSuccess);
    EXPECT_EQ(resets_.size(), 1u);
    EXPECT_EQ(perf_[1]->classes[1].acquisitions, 0u);
    EXPECT_EQ(perf_[0]->classes[1].acquisitions, 1u);
    r.put(0, ResetRequest{kAllCpus, kAllLockClasses});
    ASSERT_EQ(set(kReset, r, true), Status::kSuccess);
    EXPECT_EQ(resets_.size(), 3u);  // once per CPU, on that CPU in the kernel
    EXPECT_EQ(perf_[0]->classes[0].acquisitions, 0u);
    r.put(0, ResetRequest{kCpus, kAllLockClasses});
    EXPECT_EQ(set(kReset, r, true), Status::kInvalidParameter);
    r.put(0, ResetRequest{0, kClasses});
    EXPECT_EQ(set(kReset, r, true), Status::kInvalidParameter);
    EXPECT_EQ(resets_.size(), 3u);
    TestBuffer longer(12);
    uint32_t rl;
    EXPECT_EQ(set(kReset, longer, true, &rl), Status::kInfoLengthMismatch);
    EXPECT_EQ(rl, 8u);
}

TEST_F(SysinfoTest, SystemConfiguration) {
    uint32_t rl;
    TestBuffer small(100);
    EXPECT_EQ(query(kConfig, small, &rl), Status::kInfoLengthMismatch);
    EXPECT_EQ(rl, sizeof(SystemConfiguration));
    TestBuffer b(sizeof(SystemConfiguration));
    ASSERT_EQ(query(kConfig, b, &rl), Status::kSuccess);
    auto c = b.at<SystemConfiguration>(0);
    EXPECT_EQ(c.abi_version, kSysinfoAbiVersion);
    EXPECT_EQ(c.cpu_count, kCpus);
    EXPECT_EQ(c.tsc_hz, 2600000000ull);
    EXPECT_EQ(c.lock_algorithm, static_cast<uint32_t>(LockAlgorithm::kTicket));
    EXPECT_EQ(c.max_lock_classes, kMaxLockClasses);
    EXPECT_EQ(c.hist_buckets, kHistBuckets);
    EXPECT_EQ(c.lock_class_count, kClasses);
    EXPECT_STREQ(c.hypervisor_signature, "TCGTCGTCGTCG");
    EXPECT_STREQ(c.build_id, "test-build");
}

TEST_F(SysinfoTest, WorkloadInformationNeedsItsHookThenAnswersWhatItFills) {
    constexpr uint32_t kWorkload = static_cast<uint32_t>(InfoClass::kSpinlabWorkloadInformation);
    TestBuffer b(sizeof(WorkloadInformation));
    uint32_t rl;
    EXPECT_EQ(query(kWorkload, b, &rl), Status::kInvalidInfoClass);  // spinlab's kernel: no hook
    ctx_.workload_query = [](void*, WorkloadInformation* out) {
        std::memset(out->name, 'x', sizeof out->name);  // unterminated: the handler ends it
        std::strcpy(out->unit, "hackbench runs");
        out->ops = 42;
        out->failed = 1;
    };
    EXPECT_EQ(query(kWorkload, b, &rl), Status::kSuccess);
    EXPECT_EQ(rl, sizeof(WorkloadInformation));
    const auto w = b.at<WorkloadInformation>(0);
    EXPECT_EQ(w.ops, 42u);
    EXPECT_EQ(w.failed, 1u);
    EXPECT_STREQ(w.unit, "hackbench runs");
    EXPECT_EQ(std::strlen(w.name), kWorkloadNameLen - 1);
    TestBuffer short_buf(sizeof(WorkloadInformation) - 8);
    EXPECT_EQ(query(kWorkload, short_buf, &rl), Status::kInfoLengthMismatch);
    EXPECT_EQ(rl, sizeof(WorkloadInformation));
    TestBuffer s(sizeof(WorkloadInformation));
    EXPECT_EQ(set(kWorkload, s, true), Status::kInvalidInfoClass);  // query only
}

TEST_F(SysinfoTest, TheLongWaitRingsClassIsGone) {
    // Long waits are trace events (the long-wait group); the ring and its class went.
    uint32_t rl;
    TestBuffer b(1056);
    b.put<uint32_t>(0, 1);
    EXPECT_EQ(query(kFormerLongWaits, b, &rl), Status::kInvalidInfoClass);
}

// Trace sessions: the sub-class is served only by a context with the hooks; a start's
// parameters are checked before the hook sees them; the hook's status is the answer.
struct SessionHooks {
    std::vector<TraceSessionInformation> calls;
    Status answer = Status::kSuccess;
};

TEST_F(SysinfoTest, TraceSessionNeedsTheHooks) {
    TestBuffer b(sizeof(TraceSessionInformation));
    TraceSessionInformation s = locktrace::default_session_params();
    b.put(0, s);
    uint32_t rl;
    EXPECT_EQ(query(uint32_t(InfoClass::kSystemPerformanceTraceInformation), b, &rl),
              Status::kInvalidInfoClass);
    EXPECT_EQ(set(uint32_t(InfoClass::kSystemPerformanceTraceInformation), b, true),
              Status::kInvalidInfoClass);
}

TEST_F(SysinfoTest, TraceSessionStartIsCheckedThenHandedToTheHook) {
    SessionHooks hooks;
    ctx_.trace_arg = &hooks;
    ctx_.trace_control = [](void* arg, const TraceSessionInformation& in) {
        auto* h = static_cast<SessionHooks*>(arg);
        h->calls.push_back(in);
        return h->answer;
    };
    ctx_.trace_query = [](void*, TraceSessionInformation* out) {
        *out = locktrace::default_session_params();
        out->state = uint32_t(TraceState::kRunning);
        out->session_id = 77;
    };
    const uint32_t cls = uint32_t(InfoClass::kSystemPerformanceTraceInformation);
    TraceSessionInformation s = locktrace::default_session_params();
    s.command = uint32_t(TraceCommand::kStart);
    s.buffer_size = 5000;  // not whole pages: refused here, the hook never sees it
    TestBuffer bad(sizeof s);
    bad.put(0, s);
    EXPECT_EQ(set(cls, bad, true), Status::kInvalidParameter);
    EXPECT_TRUE(hooks.calls.empty());
    s.buffer_size = 8192;
    TestBuffer good(sizeof s);
    good.put(0, s);
    EXPECT_EQ(set(cls, good, false), Status::kAccessDenied);
    EXPECT_TRUE(hooks.calls.empty());
    EXPECT_EQ(set(cls, good, true), Status::kSuccess);
    ASSERT_EQ(hooks.calls.size(), 1u);
    EXPECT_EQ(hooks.calls[0].buffer_size, 8192u);
    hooks.answer = Status::kInvalidParameter;  // e.g. already running
    EXPECT_EQ(set(cls, good, true), Status::kInvalidParameter);
    TestBuffer shorter(sizeof s - 4);
    shorter.put(0, kSpinlabTraceSession);
    uint32_t rl;
    EXPECT_EQ(query(cls, shorter, &rl), Status::kInfoLengthMismatch);
    EXPECT_EQ(rl, sizeof(TraceSessionInformation));
    TestBuffer q(sizeof s);
    q.put(0, kSpinlabTraceSession);
    EXPECT_EQ(query(cls, q, &rl), Status::kSuccess);
    EXPECT_EQ(rl, sizeof s);
    EXPECT_EQ(q.at<TraceSessionInformation>(0).session_id, 77u);
}

TEST(StatusName, EveryCodeAndUnknown) {
    EXPECT_STREQ(status_name(Status::kSuccess), "STATUS_SUCCESS");
    EXPECT_STREQ(status_name(Status::kInvalidInfoClass), "STATUS_INVALID_INFO_CLASS");
    EXPECT_STREQ(status_name(Status::kInfoLengthMismatch), "STATUS_INFO_LENGTH_MISMATCH");
    EXPECT_STREQ(status_name(Status::kAccessViolation), "STATUS_ACCESS_VIOLATION");
    EXPECT_STREQ(status_name(Status::kInvalidParameter), "STATUS_INVALID_PARAMETER");
    EXPECT_STREQ(status_name(Status::kAccessDenied), "STATUS_ACCESS_DENIED");
    EXPECT_STREQ(status_name(0xC000000Du), "STATUS_INVALID_PARAMETER");
    EXPECT_STREQ(status_name(0x12345678u), "STATUS_UNKNOWN");
}

}  // namespace
}  // namespace spinlab::sysinfo
