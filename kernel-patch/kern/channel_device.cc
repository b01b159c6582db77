// kern/channel_device.cc: see channel_device.h. The receive interrupt only moves bytes into a ring; a kernel
// thread runs the decoder and the handler, so a large answer is never sent from an interrupt.
#include "channel_device.h"

#include "../arch/x86.h"
#include "channel/channel_server.h"
#include "console.h"
#include "ioapic.h"
#include "lapic.h"
#include "mem.h"
#include "region.h"
#include "sched.h"
#include "sysinfo/memory_buffer.h"
#include "sysinfo_glue.h"

namespace {

constexpr uint16_t kCom2 = 0x2f8;
constexpr int kCom2Irq = 3;
constexpr uint64_t kIdleUs = 200000;   // a frame not finished within this is dropped
// While a frame is unfinished the server looks for more bytes this often: a blind 200 ms sleep
// held every request behind a partial frame (hostile or cut short) for up to 200 ms, even when
// its bytes had long arrived (the soak measured valid queries answered after 1.2-2 s).
constexpr uint64_t kIdleStepUs = 5000;

Spinlock rx_lock = SPINLOCK_INIT("channel");  // lock class "channel" (kern/lockclass.h)
// rx_lock must be held when using these:
uint8_t rx_ring[16384];
uint32_t rx_head, rx_tail;   // head: next to read; tail: next to write
uint64_t rx_dropped;         // bytes lost to a full ring (the decoder resynchronises)

spinlab::ChannelServer server;          // the server thread only
spinlab::ChannelServerStats private_stats;

void tx(void*, const uint8_t* bytes, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        while (!(arch::inb(kCom2 + 5) & 0x20)) arch::pause();
        arch::outb(kCom2, bytes[i]);
    }
}

uint32_t handle(void*, spinlab::FrameOp op, uint32_t cls, uint32_t, uint8_t* buf, uint32_t len,
                uint32_t* ret_len) {
    spinlab::sysinfo::MemoryBufferState state{buf, len};
    spinlab::sysinfo::Buffer b = spinlab::sysinfo::memory_buffer(state);
    if (op == spinlab::FrameOp::kSet) return sysinfo_set(cls, b, /*privileged=*/true, ret_len);
    return sysinfo_query(cls, b, ret_len);
}

void server_main(void*) {
    uint8_t chunk[512];
    bool partial = false;   // bytes fed since the last complete frame
    for (;;) {
        uint32_t n = 0;
        {
            SpinGuardIrq g(&rx_lock);
            while (rx_head == rx_tail && !partial) sleep_on(&rx_head, &rx_lock);
            while (n < sizeof chunk && rx_head != rx_tail) chunk[n++] = rx_ring[rx_head++ % sizeof rx_ring];
        }
        if (n) {
            spinlab::channel_server_receive(&server, chunk, n);
            partial = server.decoder.fill > 0;
            if (n == sizeof chunk) continue;
        }
        if (partial) {
            // Wait for more of the frame; if none comes within kIdleUs, drop what we have.
            for (uint64_t waited = 0; waited < kIdleUs; waited += kIdleStepUs) {
                sleep_us(kIdleStepUs);
                SpinGuardIrq g(&rx_lock);
                if (rx_head != rx_tail) break;
                if (waited + kIdleStepUs >= kIdleUs) {
                    spinlab::channel_server_idle(&server);
                    partial = false;
                }
            }
        }
    }
}

}  // namespace

void channel_init() {
    uint32_t in_cap = spinlab::kFrameHeaderSize + spinlab::kMaxRequestPayload;
    uint32_t out_cap = spinlab::kFrameHeaderSize + spinlab::kMaxPayload;
    auto* in = reinterpret_cast<uint8_t*>(pages_alloc((in_cap + 4095) / 4096));
    auto* out = reinterpret_cast<uint8_t*>(pages_alloc((out_cap + 4095) / 4096));
    spinlab::ChannelServerStats* stats = region_channel_stats();
    if (!in || !out ||
        !spinlab::channel_server_init(&server, in, in_cap, out, out_cap, handle, nullptr, tx,
                                      nullptr, stats ? stats : &private_stats))
        panic("channel: cannot set up the server");
    uart_init(kCom2);
    if (arch::inb(kCom2 + 5) == 0xff) return;  // no second UART: no channel
    while (arch::inb(kCom2 + 5) & 1) (void)arch::inb(kCom2);  // drop stale input
    ioapic_route_isa(kCom2Irq, kVectorCom2, g_prcbs[0].apic_id);
    arch::outb(kCom2 + 1, 0x01);
    Thread* t = thread_create("channel", server_main, nullptr);
    if (!t) panic("channel: cannot start its thread");
    thread_wake_first(t);  // an answer does not wait behind the workload's threads
    thread_start(t);
}

void channel_rx_interrupt() {
    SpinGuardIrq g(&rx_lock);
    while (arch::inb(kCom2 + 5) & 0x01) {
        uint8_t c = arch::inb(kCom2);
        if (rx_tail - rx_head < sizeof rx_ring) rx_ring[rx_tail++ % sizeof rx_ring] = c;
        else rx_dropped++;
    }
    wakeup(&rx_head);
}
