/* scripts/lttng-anchor/spinlab_anchor_tp.c: the provider's probes, linked statically into
 * lttng_anchor (LTTng-UST 2.13: CREATE_PROBES and DEFINE in one translation unit). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "spinlab_anchor_tp.h"
