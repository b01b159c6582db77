/* vm-images/linux/guest/channel.h: the agent's end of spinlab's control channel (with
 * spinlab.region=1): the kernel's own channel server and sysinfo handler
 * (kernel-patch/channel/channel_server.cc, sysinfo/sysinfo_handler.cc) on the virtio-serial
 * port org.spinlab.control, whose host end is the socket the host's tools connect to as they
 * connect to spinlab's kernel's COM2. It answers the configuration, the lock class table (one
 * class: every kernel spinlock's slow-path waits) and the per-CPU perf data, and resets the
 * counters, and serves trace sessions of the long-wait group (trace.h); sampling parameters
 * and call-stack settings, which a Linux guest does not have, are refused as classes it does not
 * serve. channel.cc. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct channel_facts {
    uint64_t tsc_hz;            /* the kernel's calibration */
    const char *lock;           /* the ABI's name of the lock the kernel runs: "mcs" (Linux's
                                   native queued spinlock), "tas" (virt_spin_lock) or "pvqspin" */
    const char *build_id;       /* "linux <release>" */
    uint64_t long_wait_threshold;  /* what the agent calls a long wait */
};

/* The agent's workload and its operations so far (agent.c), for the channel's workload query
 * (kSpinlabWorkloadInformation): name the workload (spinlab.workload=), unit what one operation
 * is (NULL before the workload starts), ops and failed its counts. */
struct channel_workload {
    const char *name;
    const char *unit;
    uint64_t ops, failed;
};
void agent_workload(struct channel_workload *out);

/* Starts the server's thread on the port's open file descriptor `fd` (the region must be
 * open). 0 on success; -1 with `why` filled. */
int channel_start(int fd, const struct channel_facts *facts, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif
