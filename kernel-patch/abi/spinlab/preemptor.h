// spinlab/preemptor.h: who took a vCPU thread's host CPU. Each off-CPU interval of the host
// timeline (spinlab-load timeline, the results' timeline.csv column `preemptor`) is classed by
// the task the sched_switch that took the thread off handed the CPU to (its next_pid/next_comm),
// and the report (analysis/spinlab_report/preemptors.py) shares the spin behind a preempted
// holder out by these classes. The one table of their values and names (spinlab/enum_names.h):
#pragma once
#include <spinlab/enum_names.h>

namespace spinlab {

#define SPINLAB_PREEMPTOR_CLASSES(X)                                                            \
    /* not known: the timeline is not complete there (a switch neither the trace nor perf     */ \
    /* recorded, off since the window start, a timeline without the column)                   */ \
    X(kPreemptorUnknown, 0, "unknown")                                                          \
    /* another vCPU thread of the same VM (one of the timeline's own targets) */                \
    X(kPreemptorOwnVcpu, 1, "own-vcpu")                                                         \
    /* a vCPU thread of a neighbour VM (spinlab-load timeline --neighbour NAME:TID,...) */      \
    X(kPreemptorNeighbourVcpu, 2, "neighbour-vcpu")                                             \
    /* one of spinlab-load hog's processes (a process entry of a spinlab-load ledger) */        \
    X(kPreemptorHog, 3, "hog")                                                                  \
    /* the thread was frozen by spinlab-load freeze: inside a freeze's effective window */      \
    X(kPreemptorFreeze, 4, "freeze")                                                            \
    /* any other host task (the idle task, pid 0, included), named by pid and comm */           \
    X(kPreemptorHostTask, 5, "host-task")                                                       \
    /* nothing took it: the thread blocked (switched out sleeping, not runnable, outside a     */ \
    /* freeze). Under TCG: inside QEMU (its global lock, its clock's lock) or halted by the   */ \
    /* guest; under KVM: halted, or waiting in QEMU. The task that ran next is no preemptor.  */ \
    X(kPreemptorBlocked, 6, "blocked")
SPINLAB_DENSE_ENUM(PreemptorClass, uint32_t, SPINLAB_PREEMPTOR_CLASSES, kPreemptorClassNames,
                   preemptor_class_name);

}  // namespace spinlab
