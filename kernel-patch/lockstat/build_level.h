// lockstat/build_level.h: the instrumentation level of this build, from the compiler flag
// -DSPINLAB_INSTRUMENT=N (the kernel Makefile's INSTRUMENT=N): 0 off (the baseline kernel),
// 1 full (the default), 2 counters only. Kernel code uses kBuildLevel with lock_acquire<>.
#pragma once

#include <spinlab/sysinfo.h>

#ifndef SPINLAB_INSTRUMENT
#define SPINLAB_INSTRUMENT 1
#endif

static_assert(SPINLAB_INSTRUMENT >= 0 && SPINLAB_INSTRUMENT <= 2,
              "SPINLAB_INSTRUMENT must be 0 (off), 1 (full) or 2 (counters)");

namespace spinlab::lockstat {
constexpr InstrumentLevel kBuildLevel = static_cast<InstrumentLevel>(SPINLAB_INSTRUMENT);
}  // namespace spinlab::lockstat
