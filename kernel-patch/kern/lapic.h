// kern/lapic.h: the local APIC: per-CPU timer, end-of-interrupt, inter-processor interrupts.
#pragma once
#include <stdint.h>

constexpr uint8_t kVectorTimer = 32;
constexpr uint8_t kVectorCom2 = 35;   // the host control channel (kern/channel_device.cc)
constexpr uint8_t kVectorCom1 = 36;
constexpr uint8_t kVectorResched = 0xf0;  // "look at the run queue": wakes an idle CPU
constexpr uint8_t kVectorHalt = 0xf1;     // panic on another CPU: stop here
constexpr uint8_t kVectorLockstatReset = 0xf2;  // zero this CPU's lockstat counters (sysinfo)
constexpr uint8_t kVectorSpurious = 0xff;

void lapic_init();                 // boot CPU: map, calibrate the timer against the PIT
void lapic_init_cpu();             // every CPU: enable, start the periodic timer
uint32_t lapic_id();
void lapic_eoi();
void lapic_send_ipi(uint32_t apic_id, uint8_t vector);
// An NMI to that CPU: it is taken even with the target's interrupts off, and wakes it from hlt
// (lock=pvqspin's kick without KVM's PV unhalt; kern/spinlock.cc handles it).
void lapic_send_nmi(uint32_t apic_id);
// This CPU's timer interrupt masked (true) or back on: for a self-test whose host side must see
// a vCPU thread do nothing but the test (no interrupt of its own for QEMU to look at).
void lapic_timer_mask(bool masked);
void lapic_send_init_sipi(uint32_t apic_id, uint8_t page);  // start an AP at page*4096
void lapic_halt_others();
void delay_us(uint64_t us);        // busy-wait on the TSC (after calibration)

extern uint64_t g_tsc_hz;          // measured at boot against the PIT
extern uint32_t g_timer_hz;        // timer interrupts per second per CPU (boot option hz=)
