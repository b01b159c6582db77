/* vm-images/linux/guest/trace.h: trace sessions of a Linux guest (with spinlab.region=1 and the
 * control channel): the long waits of Linux's spinlock slow path, written into the region's
 * trace section as spinlab's kernel writes its own (kernel-patch/kern/locktrace.cc), with the
 * kernel's writer and session code (locktrace/writer.cc, trace_session.cc), so that the host's
 * unchanged tools (spinlab-collect trace ..., spinlab-run's trace recorder) record them.
 *
 * Only the long-wait group (kTraceGroupLongWait) is served: the agent sees slow-path waits, not
 * holds. Each wait of at least the long-wait threshold (2^20 cycles) becomes one
 * TraceSpinlockEvent with kTraceSpinWaitOnly (trace.h): acquire_tsc == release_tsc == the wait's
 * end, wait_cycles, the lock, no holder, LHP class unknown.
 *
 * Threads (as the kernel's CPUs): CPU n's reader thread (agent.c's live_thread) is the only
 * writer of CPU n's buffers; it calls trace_tick() at every loop turn (the kernel's timer tick:
 * arm on a new session, disarm with its final buffer on a stop, carry out flush requests, the
 * FlushTimer) and trace_record_wait() for each paired wait. The control channel's thread
 * (channel.cc) calls trace_control()/trace_query() (C++, below) and shares only published words
 * with the readers. trace.cc. */
#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CPU `cpu`'s reader thread, at each loop turn. last_ts: the stamp of the last event it has
 * read (begin or end); pipe_empty: this turn's read found its trace_pipe empty (everything the
 * CPU stamped before the read has been read: the reader runs on that CPU). */
void trace_tick(int cpu, uint64_t last_ts, int pipe_empty);

/* One paired wait on CPU `cpu` (its reader thread only): written when a session is armed on
 * this CPU, end - start >= the long-wait threshold and the end lies inside the session. */
void trace_record_wait(int cpu, uint64_t lock, uint64_t start, uint64_t end);

/* CPU `cpu`'s reader thread is about to exit (the workload is over): disarms with its final
 * buffer; a start from here on is refused, and a stop or flush does not wait for it. */
void trace_reader_exit(int cpu);

/* CPU `cpu`'s reader thread starts ticking. A start before a CPU's reader started is accepted
 * (tracing is not on yet: it has missed no wait; it arms at its first turn); a start after a
 * reader exited is refused (the workload is over). */
void trace_reader_started(int cpu);

#ifdef __cplusplus
}

#include <spinlab/status.h>
#include <spinlab/sysinfo.h>
#include <spinlab/trace.h>

/* For channel.cc: the trace area (the region's trace section) and the configuration the stop's
 * TraceSystemConfigEvent carries. Returns false (no trace sessions) when the region has no
 * room for the smallest session. */
bool trace_init(const spinlab::SystemConfiguration* config, uint32_t cpu_count);
spinlab::Status trace_control(const spinlab::TraceSessionInformation& in);
void trace_query(spinlab::TraceSessionInformation* out);
#endif
