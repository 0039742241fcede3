/*
 * jvmos.h - what the compiled probes hand over to user space, the part every layer shares
 * (libbpf-tools' NAME.h habit); each layer's own ids are in its header (io.h, ...).
 *
 * Every figure the kernel side keeps is a sum in one of two per-CPU hash maps:
 *   stats  [tgid, category, probe] -> calls, bytes, time_ns, wall_ns, untimed
 *          probe is the BPF cookie the engine gave the attach point (its low 16 bits; the
 *          engine's ready line says which function, library, offset and instruction it is),
 *          or JVMOS_NAMED(name id) for a figure no one probe names (the analyzers'
 *          ncalls/ntime[pid, category, name])
 *   counts [tgid, what, sub, x] -> value  (path_bytes, missed, hits, csw, ...)
 * Ids are u16 and each layer owns a block of 64 of every kind (JVMOS_BASE_*), so a layer adds
 * ids without touching another's. jvmos/enginelayers/<layer>.py mirrors each header, and
 * tests/unit/test_engine_catalogue.py reads the headers to keep the two equal.
 */
#ifndef JVMOS_H
#define JVMOS_H

/* each layer's block of ids (categories, names, whats, missed, hits) */
#define JVMOS_BASE_COMMON	0
#define JVMOS_BASE_IO		64
#define JVMOS_BASE_LINKS	128
#define JVMOS_BASE_MEM		192
#define JVMOS_BASE_THREADS	256
#define JVMOS_BASE_JNI		320

/* a stats entry keyed by a name instead of a probe */
#define JVMOS_NAMED(id)		(0x8000 | (id))

/* counts: what, shared by every layer */
#define JVMOS_WHAT_MISSED	(JVMOS_BASE_COMMON + 1)	/* sub: a layer's JVMOS_MISSED_* */
#define JVMOS_WHAT_HITS		(JVMOS_BASE_COMMON + 2)	/* sub: a layer's JVMOS_HIT_* */
#define JVMOS_WHAT_LOST		(JVMOS_BASE_COMMON + 3)	/* sub: JVMOS_LOST_*; tgid 0 */
#define JVMOS_WHAT_CALIB	(JVMOS_BASE_COMMON + 4)	/* sub: probe id; calib.bpf.c only */

/* hits of common.bpf.c's programs */
#define JVMOS_HIT_TASK_NEWTASK		(JVMOS_BASE_COMMON + 1)
#define JVMOS_HIT_PROCESS_EXEC		(JVMOS_BASE_COMMON + 2)
#define JVMOS_HIT_PROCESS_EXIT		(JVMOS_BASE_COMMON + 3)

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
	__u64 time_ns;		/* the time the layer reports (on-CPU, or the whole span) */
	__u64 wall_ns;		/* the whole span, where time_ns leaves waits out (@wall) */
	__u64 untimed;		/* calls counted whose time is not known (@untimed) */
};

struct jvmos_count_key {
	__u32 tgid;
	__u16 what;
	__u16 sub;
	__u32 x;		/* a further key where a map needs one: a thread id (@csw), a
				 * quarter-second bucket (@grow_vm), a 2 MiB region of
				 * addresses (@fault_region); 0 otherwise */
	__u32 pad;
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
enum jvmos_ev_kind {
	JVMOS_EV_FORK = 1,
	JVMOS_EV_EXEC = 2,
};
struct jvmos_proc_event {
	__u32 kind;		/* enum jvmos_ev_kind */
	__u32 tgid;
	__u32 parent;
	__u32 held;
	__u64 ns;
};

#endif
