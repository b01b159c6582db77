// kern/hpet.h: the HPET's main counter, a reference clock for the host's clock correlation.
//
// Under QEMU the HPET counts QEMU's virtual clock, which is the host's CLOCK_MONOTONIC plus an
// offset that stays put while the VM runs (TCG without icount, and KVM). The guest's TSC under
// TCG does not: QEMU moves its offset forward whenever two vCPU threads read it out of order
// (issue 52). So each clock publication carries an HPET reading taken between two TSC reads,
// and the host maps the guest's TSC through it (collector/clock_reference.h).
#pragma once
#include <stdint.h>

// Finds the HPET at its conventional address (0xfed00000, where QEMU's pc and q35 machines put
// it), checks its capabilities (a sane tick, a 64-bit counter) and starts its counter if it is
// stopped. Boot CPU, once. Without one, hpet_present() is false and nothing reads it.
void hpet_init();
bool hpet_present();
uint64_t hpet_read();          // the main counter (hpet_present() must be true)
uint32_t hpet_period_fs();     // femtoseconds per tick (QEMU: 10,000,000, 100 MHz)
