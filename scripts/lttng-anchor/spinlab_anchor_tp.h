/* scripts/lttng-anchor/spinlab_anchor_tp.h: the LTTng-UST tracepoint provider of the anchor
 * (scripts/bench-lttng-anchor.sh). One event, spinlab_anchor:spinlock, whose payload is the
 * size of spinlab's spinlock event payload (TraceSpinlockEvent less its 24-byte header): ten
 * 64-bit integers, 80 bytes, copied from the caller's record. LTTng adds its own event header
 * (the compact header: event id and timestamp) and takes its own timestamp. LTTng-UST 2.13 API. */
#ifndef SPINLAB_ANCHOR_RECORD_H
#define SPINLAB_ANCHOR_RECORD_H
#include <stdint.h>
/* The payload, laid out as spinlab's: eight 64-bit fields, then what spinlab packs into the
 * last 16 bytes (class, holder CPUs, LHP class, rules, flags) as two 64-bit words. */
struct spinlab_anchor_record {
    uint64_t lock_address, call_site, acquire_tsc, release_tsc, wait_cycles, spin_count;
    uint64_t holder_steal_ns, waiter_steal_ns, class_and_cpus, lhp_rules_flags;
};
#endif

#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER spinlab_anchor

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./spinlab_anchor_tp.h"

#if !defined(SPINLAB_ANCHOR_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define SPINLAB_ANCHOR_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(
    spinlab_anchor, spinlock,
    LTTNG_UST_TP_ARGS(const struct spinlab_anchor_record *, r),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, lock_address, r->lock_address)
        lttng_ust_field_integer(uint64_t, call_site, r->call_site)
        lttng_ust_field_integer(uint64_t, acquire_tsc, r->acquire_tsc)
        lttng_ust_field_integer(uint64_t, release_tsc, r->release_tsc)
        lttng_ust_field_integer(uint64_t, wait_cycles, r->wait_cycles)
        lttng_ust_field_integer(uint64_t, spin_count, r->spin_count)
        lttng_ust_field_integer(uint64_t, holder_steal_ns, r->holder_steal_ns)
        lttng_ust_field_integer(uint64_t, waiter_steal_ns, r->waiter_steal_ns)
        lttng_ust_field_integer(uint64_t, class_and_cpus, r->class_and_cpus)
        lttng_ust_field_integer(uint64_t, lhp_rules_flags, r->lhp_rules_flags)
    )
)

#endif /* SPINLAB_ANCHOR_TP_H */

#include <lttng/tracepoint-event.h>
