// kern/stackprobe.h: a kernel thread with a known call chain, for the call-stack tests (boot
// option stackprobe=on): stackprobe_outer -> stackprobe_middle -> stackprobe_inner, which holds
// a lock of class `bench` for about 2 million TSC cycles (past the minimum hold threshold, so
// every release can be a hold event) and then sleeps a few ticks, over and over. A trace with
// stacks on spinlock (or profile) events then shows that chain, in that order, under
// locktrace_spin_release and spin_unlock.
#pragma once

void stackprobe_start();  // from the main thread when stackprobe=on
