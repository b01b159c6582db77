// kern/sysinfo_glue.h: the kernel's system-information calls: the transport-free
// handler of sysinfo/ (query/set, shaped like Windows' NtQuerySystemInformation) bound to this
// kernel's CPUs, lock classes, configuration and live parameters.
//
// The two entry points, for the system call and for the host channel server:
//
//   uint32_t sysinfo_query(uint32_t info_class, const spinlab::sysinfo::Buffer& buf,
//                          uint32_t* ret_len);
//   uint32_t sysinfo_set(uint32_t info_class, const spinlab::sysinfo::Buffer& buf,
//                        bool privileged, uint32_t* ret_len);
//
//   info_class  spinlab::InfoClass (abi/spinlab/sysinfo.h)
//   buf         the caller's buffer behind copy functions that may fail: the syscall passes a
//               Buffer whose copies check the user range (a failure is kAccessViolation); the
//               channel server and kernel callers use sysinfo::memory_buffer()
//               (sysinfo/memory_buffer.h) over memory they own
//   privileged  set only: whether the caller may change state (a user process: its
//               Process::privileged, fixed at spawn; the host channel: true)
//   ret_len     may be null; bytes written, or the length needed on
//               STATUS_INFO_LENGTH_MISMATCH
//   returns     a spinlab::Status as uint32 (abi/spinlab/status.h)
//
// Both may be called from any kernel thread, on any CPU, with interrupts enabled and no
// spinlock held (a reset waits for other CPUs to answer an IPI). They never sleep; sets are
// serialised among themselves, queries run concurrently with everything and copy live
// counters (readers accept skew, perfdata.h).
#pragma once
#include <stdint.h>

#include "../sysinfo/sysinfo_handler.h"

void sysinfo_init();   // boot CPU, after smp_init(): build the Context (CPUs online, config)

uint32_t sysinfo_query(uint32_t info_class, const spinlab::sysinfo::Buffer& buf, uint32_t* ret_len);
uint32_t sysinfo_set(uint32_t info_class, const spinlab::sysinfo::Buffer& buf, bool privileged,
                     uint32_t* ret_len);

// The configuration the kernel reports (filled by sysinfo_init; for tests and the bench line).
const spinlab::SystemConfiguration& sysinfo_config();

// Trap handler for kVectorLockstatReset: zero this CPU's counters as asked (interrupts off).
void sysinfo_reset_ipi();
