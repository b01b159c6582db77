// locktrace/user_ring_fuzzer.cc: libFuzzer target: the kernel's take of a user-mode logger's ring
// (user_ring_take) against a thread that writes whatever it likes. The first bytes pick the
// session (logger mode, groups, start, may_wait, no session, buffer count); then each 12-byte
// step is one thing the thread or the kernel does: write a well-formed record (its stamp moved
// by a signed delta, or set outright), write raw bytes as a record, move head, change `full`,
// overwrite any byte of the ring (the kernel's part of the header too), or a take by the
// kernel, after which the host drains the CPU's buffers. Whatever the ring held, every buffer
// the CPU publishes passes the host's checks (take_buffer, parse_buffer) with spinlock events
// only, each with the kernel's header and a rule, stamped within [session start, now] and in
// order; and the CPU's accounting holds: events_written + events_lost == events_attempted,
// and the ring's written records are the events the host found.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "buffer_parser.h"
#include "drain.h"
#include "test_area.h"
#include "user_ring.h"

using namespace spinlab;
using namespace spinlab::locktrace;

namespace {
constexpr uint32_t kCap = 16;  // a small ring: the input fills and wraps it
constexpr uint64_t kNow = 1ull << 40;
uint64_t fuzz_clock() { return kNow; }

template <class T>
T take_bytes(const uint8_t* p) {
    T v;
    memcpy(&v, p, sizeof v);
    return v;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 8) return 0;
    const auto mode = TraceLoggerMode(data[0] % 3);
    const uint32_t groups = data[1];
    const uint64_t start = uint64_t(data[2]) << 20;
    const bool may_wait = data[3] & 1;
    const bool no_session = data[3] & 2;
    const uint32_t buffers = 2 + data[4] % 4;
    data += 8;
    size -= 8;
    auto a = testing::make_area(1, 4096, buffers, mode);
    Writer w;
    writer_arm(w, a.area(), 0);
    std::vector<uint8_t> mem(user_ring_bytes(kCap));
    UserRingCursor c;
    user_ring_init(c, mem.data(), kCap);
    TraceUserRing& r = *c.ring;
    TraceSpinlockEvent* records = user_ring_records(&r);
    UserRingTake t;
    t.writer = no_session ? nullptr : &w;
    t.groups = groups;
    t.cpu = 0;
    t.thread_id = 3;
    t.process_id = 4;
    t.session_start_tsc = start;
    t.clock = fuzz_clock;
    t.may_wait = may_wait;
    std::vector<uint8_t> dst(4096);
    uint64_t found = 0, last = 0, stamp = start;
    auto drain = [&] {
        for (;;) {
            uint32_t len = 0;
            const TakeResult res = take_buffer(a.area(), a.header(), 0, dst.data(), &len);
            if (res == TakeResult::kEmpty) return;
            if (res != TakeResult::kTaken) __builtin_trap();
            BufferView v;
            if (parse_buffer(dst.data(), len, &v) != BufferError::kNone) __builtin_trap();
            for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* p) {
                TraceSpinlockEvent e;
                if (h.type != uint16_t(TraceEventType::kSpinlock) || h.size != sizeof e) __builtin_trap();
                memcpy(&e, p, sizeof e);
                if (h.thread_id != 3 || h.process_id != 4 || h.cpu != 0 || e.rules == 0) __builtin_trap();
                if (h.tsc < start || h.tsc > kNow || h.tsc < last || e.release_tsc > h.tsc) __builtin_trap();
                last = h.tsc;
                found++;
            });
        }
    };
    for (size_t off = 0; off + 12 <= size; off += 12) {
        const uint8_t* s = data + off;
        const uint8_t op = s[0] % 7;
        TraceSpinlockEvent& slot = records[r.head % kCap];
        switch (op) {
            case 0: {  // a well-formed record, its stamp moved by a signed delta
                stamp += uint64_t(int64_t(take_bytes<int32_t>(s + 1)));
                TraceSpinlockEvent e{};
                fill_header(e.h, sizeof e, TraceEventType::kSpinlock, s[5], 9, 9, stamp);
                e.release_tsc = stamp;
                e.rules = s[6];
                e.class_id = take_bytes<uint32_t>(s + 7);
                e.lhp_class = s[11];
                slot = e;
                r.head++;
                break;
            }
            case 1: {  // a well-formed record stamped anything
                TraceSpinlockEvent e{};
                const uint64_t ts = take_bytes<uint64_t>(s + 1);
                fill_header(e.h, sizeof e, TraceEventType::kSpinlock, 0, 0, 0, ts);
                e.release_tsc = s[9] & 1 ? ts : ts + 1;
                e.rules = s[10];
                slot = e;
                r.head++;
                break;
            }
            case 2:  // raw bytes as a record
                for (size_t i = 0; i < sizeof slot; i++) reinterpret_cast<uint8_t*>(&slot)[i] = s[1 + i % 11];
                r.head++;
                break;
            case 3:  // head moved
                r.head += uint64_t(int64_t(int8_t(s[1])));
                if (s[2] == 0xff) r.head = take_bytes<uint64_t>(s + 3);
                break;
            case 4:  // full moved
                r.full += s[1];
                if (s[2] == 0xff) r.full = take_bytes<uint64_t>(s + 3);
                break;
            case 5:  // any byte of the ring
                mem[take_bytes<uint16_t>(s + 1) % mem.size()] = s[3];
                break;
            case 6:
                user_ring_take(c, t);
                drain();
                break;
        }
    }
    user_ring_take(c, t);
    flush(w, 0);
    drain();
    if (w.ctl->events_written + w.ctl->events_lost != w.ctl->events_attempted) __builtin_trap();
    if (c.written != found || c.written != w.ctl->events_written) __builtin_trap();
    if (no_session && w.ctl->events_attempted != 0) __builtin_trap();
    return 0;
}
