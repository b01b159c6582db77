// SPDX-License-Identifier: GPL-2.0
/*
 * spinlab_gt: a lock whose holder is known independently, for the ground truth of spinlab's
 * Linux guest (vm-images/linux/README.md, "The ground-truth module").
 *
 * One kthread pinned on holder_cpu loops { spin_lock(&gt_lock); acquire TSC; busy-hold hold_us
 * (preemption is off under a spinlock); release TSC; spin_unlock; busy gap of gap_us }. One
 * kthread pinned on each other online CPU loops { spin_lock(&gt_lock); a tiny hold;
 * spin_unlock; a busy gap of waiter_gap_us }. The other CPUs' slow-path waits on gt_lock are
 * what the agent's kprobe records; this module records every acquisition of gt_lock itself
 * (cpu, acquire TSC, release TSC, whether by the holder thread), written under gt_lock into a
 * fixed array (max_holds; beyond it only counted as dropped), so the array is in lock order and
 * its holds never overlap. The TSC is rdtsc_ordered(), the clock of the agent's x86-tsc trace.
 *
 * debugfs spinlab_gt/:
 *   lock    the lock's address, "0x...\n" (what the slow path's %di holds)
 *   stop    write anything: the threads stop (idempotent; rmmod stops them too)
 *   stats   "key value" lines, after stop complete (holds, dropped, acquisitions per CPU, ...)
 *   holds   after stop: the holds, 24-byte records <u32 cpu, u32 flags, u64 acquire_tsc,
 *           u64 release_tsc>, flags bit 0 set for the holder thread's holds
 *
 * Parameters: holder_cpu, hold_us, gap_us, seconds (0: until stop or rmmod), waiter_gap_us,
 * max_holds. The threads run at nice 19 and call cond_resched() between acquisitions, so the
 * agent, the watchdogs and RCU still get their turns.
 */
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <asm/msr.h>
#include <asm/tsc.h>

static int holder_cpu = 1;
module_param(holder_cpu, int, 0444);
MODULE_PARM_DESC(holder_cpu, "the CPU whose thread holds gt_lock for hold_us at a time");
static uint hold_us = 2000;
module_param(hold_us, uint, 0444);
MODULE_PARM_DESC(hold_us, "how long the holder thread holds gt_lock, microseconds (TSC)");
static uint gap_us = 100;
module_param(gap_us, uint, 0444);
MODULE_PARM_DESC(gap_us, "the holder thread's busy gap between holds, microseconds");
static uint seconds;
module_param(seconds, uint, 0444);
MODULE_PARM_DESC(seconds, "stop after this long (TSC); 0: run until stop or rmmod");
static uint waiter_gap_us = 20;
module_param(waiter_gap_us, uint, 0444);
MODULE_PARM_DESC(waiter_gap_us, "the other CPUs' busy gap between acquisitions, microseconds");
static uint max_holds = 262144;
module_param(max_holds, uint, 0444);
MODULE_PARM_DESC(max_holds, "holds kept; later ones are only counted (dropped)");

#define HOLD_HOLDER 1u
#define WAITER_HOLD_RELAX 16

struct gt_hold {          /* 24 bytes, little-endian, as the agent sends them (HOLDS) */
	u32 cpu;
	u32 flags;
	u64 acquire;
	u64 release;
} __packed;

static DEFINE_SPINLOCK(gt_lock);
static struct gt_hold *holds;     /* written under gt_lock */
static u32 nholds;                /* under gt_lock */
static u64 dropped;               /* under gt_lock */
static u64 *acquisitions;         /* per CPU, each written by its own thread only */
static struct task_struct **threads;
static u64 hold_cycles, gap_cycles, waiter_gap_cycles, deadline_tsc, start_tsc, stop_tsc;
static bool stopping;             /* READ_ONCE in the loops */
static bool stopped;              /* under ctl */
static DEFINE_MUTEX(ctl);
static struct dentry *dir;

static void busy_until(u64 from, u64 cycles)
{
	while (rdtsc_ordered() - from < cycles)
		cpu_relax();
}

static bool should_end(void)
{
	return kthread_should_stop() || READ_ONCE(stopping) ||
	       (deadline_tsc && rdtsc_ordered() >= deadline_tsc);
}

/* With gt_lock held, just before spin_unlock: the release TSC and the record. */
static void record_hold(u32 flags, u64 acquire)
{
	u64 release = rdtsc_ordered();

	if (nholds < max_holds) {
		holds[nholds].cpu = smp_processor_id();
		holds[nholds].flags = flags;
		holds[nholds].acquire = acquire;
		holds[nholds].release = release;
		nholds++;
	} else {
		dropped++;
	}
}

static int gt_thread(void *arg)
{
	int cpu = (int)(long)arg;
	bool holder = cpu == holder_cpu;
	u64 a;
	int i;

	while (!should_end()) {
		spin_lock(&gt_lock);
		a = rdtsc_ordered();
		if (holder)
			busy_until(a, hold_cycles);
		else
			for (i = 0; i < WAITER_HOLD_RELAX; i++)
				cpu_relax();
		record_hold(holder ? HOLD_HOLDER : 0, a);
		spin_unlock(&gt_lock);
		acquisitions[cpu]++;
		busy_until(rdtsc_ordered(), holder ? gap_cycles : waiter_gap_cycles);
		cond_resched();
	}
	/* kthread_stop() needs the task alive: wait for it */
	set_current_state(TASK_INTERRUPTIBLE);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_INTERRUPTIBLE);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

static void stop_threads(void)
{
	int cpu;

	mutex_lock(&ctl);
	if (!stopped) {
		WRITE_ONCE(stopping, true);
		for_each_possible_cpu(cpu) {
			if (threads[cpu])
				kthread_stop(threads[cpu]);
			threads[cpu] = NULL;
		}
		stop_tsc = rdtsc_ordered();
		stopped = true;
	}
	mutex_unlock(&ctl);
}

static ssize_t lock_read(struct file *f, char __user *buf, size_t n, loff_t *pos)
{
	char s[32];
	int len = scnprintf(s, sizeof(s), "0x%lx\n", (unsigned long)&gt_lock);

	return simple_read_from_buffer(buf, n, pos, s, len);
}

static ssize_t stop_write(struct file *f, const char __user *buf, size_t n, loff_t *pos)
{
	stop_threads();
	return n;
}

static ssize_t holds_read(struct file *f, char __user *buf, size_t n, loff_t *pos)
{
	bool done;

	mutex_lock(&ctl);
	done = stopped;
	mutex_unlock(&ctl);
	if (!done)
		return -EBUSY;     /* the array is still being written */
	return simple_read_from_buffer(buf, n, pos, holds, (size_t)nholds * sizeof(*holds));
}

static ssize_t stats_read(struct file *f, char __user *buf, size_t n, loff_t *pos)
{
	size_t cap = 1024 + 48 * (size_t)nr_cpu_ids, len = 0;
	char *s;
	ssize_t r;
	int cpu;

	mutex_lock(&ctl);
	if (!stopped) {
		mutex_unlock(&ctl);
		return -EBUSY;
	}
	mutex_unlock(&ctl);
	s = kvmalloc(cap, GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	len += scnprintf(s + len, cap - len,
			 "lock 0x%lx\nholder_cpu %d\nhold_us %u\ngap_us %u\nwaiter_gap_us %u\n"
			 "seconds %u\ntsc_khz %u\nhold_cycles %llu\ngap_cycles %llu\n"
			 "start_tsc %llu\nstop_tsc %llu\nholds %u\ndropped %llu\nmax_holds %u\n",
			 (unsigned long)&gt_lock, holder_cpu, hold_us, gap_us, waiter_gap_us,
			 seconds, tsc_khz, hold_cycles, gap_cycles, start_tsc, stop_tsc, nholds,
			 dropped, max_holds);
	for_each_possible_cpu(cpu)
		if (acquisitions[cpu])
			len += scnprintf(s + len, cap - len, "acquisitions %d %llu\n", cpu,
					 acquisitions[cpu]);
	r = simple_read_from_buffer(buf, n, pos, s, len);
	kvfree(s);
	return r;
}

static const struct file_operations lock_fops = { .owner = THIS_MODULE, .read = lock_read };
static const struct file_operations stop_fops = { .owner = THIS_MODULE, .write = stop_write };
static const struct file_operations holds_fops = { .owner = THIS_MODULE, .read = holds_read };
static const struct file_operations stats_fops = { .owner = THIS_MODULE, .read = stats_read };

static void free_all(void)
{
	vfree(holds);
	kfree(acquisitions);
	kfree(threads);
}

static int __init gt_init(void)
{
	int cpu, err;

	if (holder_cpu < 0 || holder_cpu >= nr_cpu_ids || !cpu_online(holder_cpu)) {
		pr_err("spinlab_gt: holder_cpu=%d is not an online CPU\n", holder_cpu);
		return -EINVAL;
	}
	if (num_online_cpus() < 2) {
		pr_err("spinlab_gt: needs 2 online CPUs or more (a holder and a waiter)\n");
		return -EINVAL;
	}
	if (!hold_us || hold_us > 1000000 || gap_us > 1000000 || waiter_gap_us > 1000000 ||
	    !max_holds || max_holds > (1u << 24)) {
		pr_err("spinlab_gt: hold_us 1..1000000, gap_us and waiter_gap_us 0..1000000, "
		       "max_holds 1..16777216\n");
		return -EINVAL;
	}
	if (!tsc_khz) {
		pr_err("spinlab_gt: the kernel has no TSC frequency\n");
		return -ENODEV;
	}
	hold_cycles = (u64)hold_us * tsc_khz / 1000;
	gap_cycles = (u64)gap_us * tsc_khz / 1000;
	waiter_gap_cycles = (u64)waiter_gap_us * tsc_khz / 1000;
	holds = vzalloc(array_size(max_holds, sizeof(*holds)));
	acquisitions = kcalloc(nr_cpu_ids, sizeof(*acquisitions), GFP_KERNEL);
	threads = kcalloc(nr_cpu_ids, sizeof(*threads), GFP_KERNEL);
	if (!holds || !acquisitions || !threads) {
		free_all();
		return -ENOMEM;
	}
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		struct task_struct *t = kthread_create_on_node(gt_thread, (void *)(long)cpu,
							       cpu_to_node(cpu), "spinlab_gt/%d", cpu);
		if (IS_ERR(t)) {
			err = PTR_ERR(t);
			cpus_read_unlock();
			stop_threads();    /* never woken: they end without running gt_thread */
			free_all();
			return err;
		}
		kthread_bind(t, cpu);
		set_user_nice(t, MAX_NICE);
		threads[cpu] = t;
	}
	cpus_read_unlock();
	dir = debugfs_create_dir("spinlab_gt", NULL);
	debugfs_create_file("lock", 0444, dir, NULL, &lock_fops);
	debugfs_create_file("stop", 0200, dir, NULL, &stop_fops);
	debugfs_create_file("holds", 0400, dir, NULL, &holds_fops);
	debugfs_create_file("stats", 0444, dir, NULL, &stats_fops);
	start_tsc = rdtsc_ordered();
	if (seconds)
		deadline_tsc = start_tsc + (u64)seconds * tsc_khz * 1000;
	for_each_possible_cpu(cpu)
		if (threads[cpu])
			wake_up_process(threads[cpu]);
	pr_info("spinlab_gt: lock 0x%lx, holder cpu %d holds %u us, gap %u us, %u threads\n",
		(unsigned long)&gt_lock, holder_cpu, hold_us, gap_us, num_online_cpus());
	return 0;
}

static void __exit gt_exit(void)
{
	debugfs_remove_recursive(dir);
	stop_threads();
	free_all();
}

module_init(gt_init);
module_exit(gt_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("spinlab ground truth: a spinlock held on a chosen CPU, every hold recorded");
