/*
 * threads.h - the threads layer's ids (threads.bpf.c; mirrored by jvmos/enginelayers/threads.py).
 *
 * Almost every figure of this layer is keyed by a name, not by a probe (the analyzers'
 * @ncalls/@ntime/@nhits[pid, category, what]): JVMOS_NAME_* is the "what". A name that comes
 * in a java and an internal flavour has the java one first and the internal one right after
 * it (threads.bpf.c picks `name + !java`).
 */
#ifndef JVMOS_THREADS_H
#define JVMOS_THREADS_H

#include "jvmos.h"

/* stats: category */
#define JVMOS_CAT_THREAD_CREATE		(JVMOS_BASE_THREADS + 1)
#define JVMOS_CAT_THREAD_JVM		(JVMOS_BASE_THREADS + 2)
#define JVMOS_CAT_THREAD_WAIT		(JVMOS_BASE_THREADS + 3)
#define JVMOS_CAT_SYNC			(JVMOS_BASE_THREADS + 4)
#define JVMOS_CAT_RUNQ			(JVMOS_BASE_THREADS + 5)
#define JVMOS_CAT_THREAD_NESTED_ALLOC	(JVMOS_BASE_THREADS + 6)	/* @nhits */

/* stats: names (probe = JVMOS_NAMED(name)) */
/* thread_jvm */
#define JVMOS_NAME_START			(JVMOS_BASE_THREADS + 1)
#define JVMOS_NAME_EXIT_JAVA			(JVMOS_BASE_THREADS + 2)
#define JVMOS_NAME_EXIT_INTERNAL		(JVMOS_BASE_THREADS + 3)
/* thread_create */
#define JVMOS_NAME_PTHREAD_CREATE_JAVA		(JVMOS_BASE_THREADS + 4)
#define JVMOS_NAME_PTHREAD_CREATE_INTERNAL	(JVMOS_BASE_THREADS + 5)
#define JVMOS_NAME_LIBC_CREATE_JAVA		(JVMOS_BASE_THREADS + 6)
#define JVMOS_NAME_LIBC_CREATE_INTERNAL		(JVMOS_BASE_THREADS + 7)
#define JVMOS_NAME_LIBC_START_JAVA		(JVMOS_BASE_THREADS + 8)
#define JVMOS_NAME_LIBC_START_INTERNAL		(JVMOS_BASE_THREADS + 9)
#define JVMOS_NAME_LIBC_EXIT_JAVA		(JVMOS_BASE_THREADS + 10)
#define JVMOS_NAME_LIBC_EXIT_INTERNAL		(JVMOS_BASE_THREADS + 11)
#define JVMOS_NAME_KERNEL_EXIT_JAVA		(JVMOS_BASE_THREADS + 12)
#define JVMOS_NAME_KERNEL_EXIT_INTERNAL		(JVMOS_BASE_THREADS + 13)
#define JVMOS_NAME_KERNEL_IN_CREATE_JAVA	(JVMOS_BASE_THREADS + 14)
#define JVMOS_NAME_KERNEL_IN_CREATE_INTERNAL	(JVMOS_BASE_THREADS + 15)
#define JVMOS_NAME_KERNEL_IN_START_EXIT_JAVA	(JVMOS_BASE_THREADS + 16)
#define JVMOS_NAME_KERNEL_IN_START_EXIT_INTERNAL (JVMOS_BASE_THREADS + 17)
#define JVMOS_NAME_KERNEL_IN_JVM_START_JAVA	(JVMOS_BASE_THREADS + 18)
#define JVMOS_NAME_LIBC_START_ABANDONED		(JVMOS_BASE_THREADS + 19)
/* thread_wait */
#define JVMOS_NAME_FIRST_RUN_DELAY		(JVMOS_BASE_THREADS + 20)
#define JVMOS_NAME_FUTEX_IN_JVM_START		(JVMOS_BASE_THREADS + 21)
#define JVMOS_NAME_FUTEX_IN_SETUP_EXIT		(JVMOS_BASE_THREADS + 22)
#define JVMOS_NAME_OFFCPU_IN_SPAN		(JVMOS_BASE_THREADS + 23)
/* sync (in the order of threads.bpf.c's futex_op: 1 wait, 2 wake, 3 other) */
#define JVMOS_NAME_FUTEX_WAIT			(JVMOS_BASE_THREADS + 24)
#define JVMOS_NAME_FUTEX_WAKE			(JVMOS_BASE_THREADS + 25)
#define JVMOS_NAME_FUTEX_OTHER			(JVMOS_BASE_THREADS + 26)
/* runq (runq_why: 1 woken, 2 preempted) */
#define JVMOS_NAME_AFTER_WAKEUP			(JVMOS_BASE_THREADS + 27)
#define JVMOS_NAME_AFTER_PREEMPTION		(JVMOS_BASE_THREADS + 28)
/* thread_nested_alloc (@nhits: the allocator hits inside a span, in `calls`) */
#define JVMOS_NAME_NESTED_JVM_START		(JVMOS_BASE_THREADS + 29)
#define JVMOS_NAME_NESTED_LIBC_CREATE		(JVMOS_BASE_THREADS + 30)
#define JVMOS_NAME_NESTED_START_EXIT		(JVMOS_BASE_THREADS + 31)

/* counts: what */
#define JVMOS_WHAT_THR_INCL		(JVMOS_BASE_THREADS + 1)	/* sub 0: @thr_incl[pid] */
#define JVMOS_WHAT_CSW			(JVMOS_BASE_THREADS + 2)	/* sub JVMOS_CSW_*, x tid */
/* off-CPU time of traced threads: sub JVMOS_OFF_* (blocked, preempted, stopped), x the syscall
 * it was switched out in + 1 (0: none) */
#define JVMOS_WHAT_OFFCPU_NS		(JVMOS_BASE_THREADS + 3)
#define JVMOS_WHAT_OFFCPU_N		(JVMOS_BASE_THREADS + 4)
#define JVMOS_OFF_BLOCKED		1
#define JVMOS_OFF_PREEMPTED		2
#define JVMOS_OFF_STOPPED		3

#define JVMOS_CSW_VOLUNTARY		1
#define JVMOS_CSW_INVOLUNTARY		2

/* missed (sub of JVMOS_WHAT_MISSED): a return of JVM_StartThread, pthread_create or
 * JavaThread::exit whose entry was not seen (the call was in progress at the start) */
#define JVMOS_MISSED_THREAD_SPAN_NO_ENTRY	(JVMOS_BASE_THREADS + 1)

/* hits (sub of JVMOS_WHAT_HITS): the probes no other map counts */
#define JVMOS_HIT_THREADS_UPROBE		(JVMOS_BASE_THREADS + 1)
#define JVMOS_HIT_THREADS_URETPROBE		(JVMOS_BASE_THREADS + 2)
#define JVMOS_HIT_THREADS_SCHED_WAKEUP_NEW	(JVMOS_BASE_THREADS + 3)
#define JVMOS_HIT_THREADS_SYS_ENTER_EXIT	(JVMOS_BASE_THREADS + 4)
#define JVMOS_HIT_THREADS_SPAN_SYSCALL		(JVMOS_BASE_THREADS + 5)
#define JVMOS_HIT_THREADS_SCHED_WAKEUP		(JVMOS_BASE_THREADS + 6)
#define JVMOS_HIT_THREADS_SPAN_LIBC		(JVMOS_BASE_THREADS + 7)
#define JVMOS_HIT_THREADS_SCHED_PROCESS_EXIT	(JVMOS_BASE_THREADS + 8)

#endif
