/*
 * common.bpf.h - the maps every compiled layer shares, and the first lines of every program.
 *
 * Each layer is its own object (io.bpf.o, ...), each declares these maps; the engine creates
 * them once (for common.bpf.o) and hands the same maps to every other object it loads, so a
 * layer's figures land in one `stats` and one `counts` and one traced set rules them all.
 *
 *   traced   tgid -> the layers counting in it, one bit per layer object (layer_bit): the
 *            processes of this recording. The engine puts the root in it with every bit
 *            set; common.bpf.c adds every process a traced one forks, with its parent's
 *            bits. A thread belongs to its process, so every thread of a traced JVM is
 *            traced, later ones too. The agent's engine for the host (probes/engine,
 *            host.go) sets a JVM's bits to its layers: a layer shed for one JVM is off for
 *            it alone, while its programs keep counting the others.
 *   control  [0]: counting on/off (the attach-mode start signal and the stop), set by the
 *            engine: nothing counts before the start or after the stop.
 *
 * Every program begins with jvmos_traced(): one hash lookup of the current tgid and one array
 * read, and it returns at once for every process that is not traced (a host-wide tracepoint
 * then costs an unrelated process only that).
 */
#ifndef COMMON_BPF_H
#define COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "jvmos.h"

#define JVMOS_MAX_PROCS		4096
#define JVMOS_MAX_ENTRIES	16384
#define JVMOS_MAX_THREADS	65536
/* counts holds, per traced process, a few keys per thread (context switches), two per
 * quarter-second of the growth timelines (4,800 in 10 minutes), and one per 2 MiB region a
 * page fault fell in (a heap of 8 GiB touched whole: 4,096) */
#define JVMOS_MAX_COUNTS	65536

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, JVMOS_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u8);
} traced SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jvmos_control);
} control SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, JVMOS_MAX_ENTRIES);
	__type(key, struct jvmos_stat_key);
	__type(value, struct jvmos_stat_val);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, JVMOS_MAX_COUNTS);
	__type(key, struct jvmos_count_key);
	__type(value, __u64);
} counts SEC(".maps");

/* Per thread: running totals of the on-CPU ns and the hits of the outermost allocator calls
 * (malloc, calloc, ...) that have returned on it. Written by mem.bpf.c, read by threads.bpf.c
 * as a span begins and ends (the difference is the allocator time to leave out of the span,
 * and the hits to report beside it); zero when the mem layer is not loaded. mem.bpf.c
 * forgets a thread's totals when the kernel frees the thread (sched_process_free). */
struct jvmos_alloc_totals {
	__u64 ns;
	__u64 hits;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, JVMOS_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct jvmos_alloc_totals);
} alloc_totals SEC(".maps");

/* The scheduler chain. A sched_switch program runs on every context switch of every task on
 * the host, traced or not, so the layers do not each attach one: common.bpf.c's jvmos_switch
 * is the only one attached. It returns at once unless counting is on and the task switched
 * out or in belongs to a traced process (two lookups in `traced`), and otherwise tail-calls
 * the layers' handlers (programs named chain_*, loaded but never attached) in the slots the
 * engine gave them, in load order. A handler knows its slot (switch_slot, set by the engine)
 * and hands on to the next filled one when it is done; a tail call does not return.
 * Measured reason (results/overhead): three attached programs cost a bystander that context
 * switches every few microseconds 3 times the filter, for nothing it is traced for. */
#define JVMOS_CHAIN_SLOTS	4

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, JVMOS_CHAIN_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} switch_chain SEC(".maps");

/* this object's slot in the chain, set by the engine as it loads a layer with a handler */
const volatile __u32 switch_slot = 0;

/* this object's bit in a traced process's value, set by the engine as it loads a layer;
 * common.bpf.o keeps all of them (a process is traced when any of its layers is on) */
const volatile __u8 layer_bit = 0xff;

/* the next handler from slot `from` on; returns only when none is left */
static __always_inline void jvmos_switch_next(void *ctx, __u32 from)
{
	for (__u32 i = from; i < JVMOS_CHAIN_SLOTS; i++)
		bpf_tail_call(ctx, &switch_chain, i);
}

static __always_inline __u32 jvmos_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

/* a traced process in which this object's layer is on */
static __always_inline int jvmos_layer_on(__u32 tgid)
{
	__u8 *bits = bpf_map_lookup_elem(&traced, &tgid);

	return bits && (*bits & layer_bit);
}

/* the filter: a traced process in which this layer is on, while counting */
static __always_inline int jvmos_traced(__u32 tgid)
{
	__u32 zero = 0;
	struct jvmos_control *c;

	if (!jvmos_layer_on(tgid))
		return 0;
	c = bpf_map_lookup_elem(&control, &zero);
	return c && c->counting;
}

/* What was lost, by JVMOS_LOST_* index: an array of its own, so a full counts or stats map
 * cannot also lose the count of what it lost. Atomic adds: uprobe programs run with
 * migration disabled, not preemption, so two threads can meet on one CPU's copy. */
#define JVMOS_LOST_SLOTS 16
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, JVMOS_LOST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline void jvmos_lost(__u32 what)
{
	__u64 *v = bpf_map_lookup_elem(&lost, &what);

	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline void jvmos_count_x(__u32 tgid, __u16 what, __u16 sub, __u32 x, __u64 n);

static __always_inline void jvmos_count(__u32 tgid, __u16 what, __u16 sub, __u64 n)
{
	if (what == JVMOS_WHAT_LOST) {
		jvmos_lost(sub);
		return;
	}
	jvmos_count_x(tgid, what, sub, 0, n);
}

static __always_inline struct jvmos_stat_val *jvmos_stat(__u32 tgid, __u16 cat, __u16 probe)
{
	struct jvmos_stat_key k = { .tgid = tgid, .cat = cat, .probe = probe };
	struct jvmos_stat_val *v = bpf_map_lookup_elem(&stats, &k);

	if (v)
		return v;
	struct jvmos_stat_val zero = {};
	/* another CPU may insert it first (EEXIST): the lookup below finds it either way */
	bpf_map_update_elem(&stats, &k, &zero, BPF_NOEXIST);
	v = bpf_map_lookup_elem(&stats, &k);
	if (!v)
		jvmos_count(0, JVMOS_WHAT_LOST, JVMOS_LOST_STATS_ENTRY, 1);
	return v;
}

/* counts[tgid, what, sub, x] += n (n may be a negative amount in two's complement: the sum
 * is then read back as a signed number) */
static __always_inline void jvmos_count_x(__u32 tgid, __u16 what, __u16 sub, __u32 x, __u64 n)
{
	struct jvmos_count_key k = { .tgid = tgid, .what = what, .sub = sub, .x = x };
	__u64 *v = bpf_map_lookup_elem(&counts, &k);

	if (v) {
		/* per-CPU, but atomic: a preempted program may share this CPU's copy */
		__sync_fetch_and_add(v, n);
		return;
	}
	if (bpf_map_update_elem(&counts, &k, &n, BPF_NOEXIST)) {
		v = bpf_map_lookup_elem(&counts, &k);	/* inserted meanwhile by another CPU */
		if (v)
			__sync_fetch_and_add(v, n);
		else
			jvmos_lost(JVMOS_LOST_STATS_ENTRY);	/* the map is full */
	}
}

char LICENSE[] SEC("license") = "GPL";

#endif
