/*
 * jvmos.h - what the compiled probes hand over to user space: the one place where the layout
 * of their maps is declared (libbpf-tools' NAME.h habit).
 *
 * Every figure the kernel side keeps is a sum in one of two per-CPU hash maps:
 *   stats  [tgid, category, probe] -> calls, bytes, time_ns   (bpftrace's @calls/@bytes/@time)
 *   counts [tgid, what, sub]       -> value                   (@path_bytes, @missed, @hits, ...)
 * `probe` is the BPF cookie the engine gave the attach point (low 16 bits); the engine's
 * ready line says which function, library, offset and instruction each id stands for.
 * The numbers below are mirrored by jvmos/engine.py (CATEGORY_IDS, WHAT_IDS, SUB_IDS), and
 * tests/unit/test_engine_catalogue.py reads this file to keep the two equal.
 */
#ifndef JVMOS_H
#define JVMOS_H

/* stats: category */
#define JVMOS_CAT_JNI_COPY		1
#define JVMOS_CAT_UNSAFE_COPY_OUT	2
#define JVMOS_CAT_UNSAFE_COPY_ETC	3
#define JVMOS_CAT_NIO_NATIVE		4
#define JVMOS_CAT_IO_SYSCALL		5

/* counts: what, and its subs */
#define JVMOS_WHAT_PATH_BYTES		1	/* sub: JVMOS_PATH_* */
#define JVMOS_WHAT_PATH_CALLS		2	/* sub: JVMOS_PATH_* */
#define JVMOS_WHAT_NIO_CONFIRMED	3	/* sub: 0 */
#define JVMOS_WHAT_MISSED		4	/* sub: JVMOS_MISSED_* */
#define JVMOS_WHAT_HITS			5	/* sub: JVMOS_HIT_* */
#define JVMOS_WHAT_LOST			6	/* sub: JVMOS_LOST_*; tgid 0 */
#define JVMOS_WHAT_CALIB		7	/* sub: probe id; calib.bpf.c's minimal probes */

#define JVMOS_PATH_JNI_IN		1
#define JVMOS_PATH_JNI_OUT		2
#define JVMOS_PATH_NIO_ANY		3

#define JVMOS_MISSED_JNI_COPY_NO_ENTRY	1
#define JVMOS_MISSED_SYSCALL_NO_ENTRY	2

#define JVMOS_HIT_TASK_NEWTASK		1
#define JVMOS_HIT_PROCESS_EXEC		2
#define JVMOS_HIT_PROCESS_EXIT		3

#define JVMOS_LOST_PROC_EVENT		1	/* ring buffer full: a fork/exec not reported */
#define JVMOS_LOST_THREAD_STATE		2	/* per-thread state map full: a span not timed */
#define JVMOS_LOST_STATS_ENTRY		3	/* stats/counts map full: a sum not kept */

/* the cookie of an attach point: probe id, and a value for its program (a JNI Region copy's
 * element size) */
#define JVMOS_COOKIE_PROBE(c)		((c) & 0xffff)
#define JVMOS_COOKIE_VALUE(c)		(((c) >> 16) & 0xffff)

struct jvmos_stat_key {
	__u32 tgid;
	__u16 cat;
	__u16 probe;
};

struct jvmos_stat_val {
	__u64 calls;
	__u64 bytes;
	__u64 time_ns;
};

struct jvmos_count_key {
	__u32 tgid;
	__u16 what;
	__u16 sub;
};

/* control[0]: written by the engine, read by every program */
struct jvmos_control {
	__u32 counting;		/* 1 between the start and the stop of the recording */
	__u32 stopped;		/* 1 once the stop came: no process is held at exec any more */
	__u64 start_ns;		/* bpf_ktime_get_ns() clock (CLOCK_MONOTONIC) */
	__u64 stop_ns;
};

/* proc[tgid]: what common.bpf.c saw of a traced process */
#define JVMOS_EXEC_LEN 128
struct jvmos_proc {
	__u64 exec_ns;
	__u64 exit_ns;
	__u32 held;		/* stopped at its exec until the engine opened its uprobes */
	__u32 pad;
	char exec[JVMOS_EXEC_LEN];
};

/* ring buffer events (common.bpf.c -> engine): a traced process forked a process, or a
 * traced child started a new program (then it is stopped until the engine sends SIGCONT) */
#define JVMOS_EV_FORK	1
#define JVMOS_EV_EXEC	2
struct jvmos_proc_event {
	__u32 kind;
	__u32 tgid;
	__u32 parent;
	__u32 held;
	__u64 ns;
};

#endif
