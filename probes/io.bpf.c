/*
 * io.bpf.c - the I/O layer of jvmos, compiled: what it costs a JVM to move bytes across the
 * JVM-OS boundary. Kept by BPF programs that the engine loads and attaches itself
 * (probes/engine), so that only the traced JVM pays for them. The analyzers read the figures
 * as @calls/@bytes/@time[pid, category, probe], @path_bytes/@path_calls[pid, path, direction],
 * @nio_confirmed[pid] and @missed[pid, what] (io.h lists the ids).
 *
 * Run through `jvmos record --engine bpf --layers io`. Which function each program is
 * attached to comes from the engine's plan (jvmos/engine.py): the programs here do not name
 * libraries. Each uprobe carries a BPF cookie: the probe id the figures are keyed by (the
 * engine's ready line says which function, library and offset an id is) and, for the Region
 * copies, the element size (JVMOS_COOKIE_VALUE), so one program serves every element type.
 *
 * What it measures, and why these attach points:
 *  - JNI copies (category jni_copy): entry probes (and, in --mode time, return probes) on
 *    libjvm's JNI functions that copy between the Java heap and native memory (paper section
 *    3, Table 2). Get/Set<T>ArrayRegion(env, array, start, len, buf) and
 *    GetString[UTF]Region(env, str, start, len, buf): bytes = len x element size.
 *    GetStringUTFRegion's len counts UTF-16 chars, and the modified UTF-8 it writes takes at
 *    least one byte per char, so its bytes (len x 1) are a lower bound. Elements, Critical and
 *    String*Chars do not say how much they copy: calls and time only. On a stripped
 *    libjvm.so, HotSpot's USDT probes of the same functions stand in (below).
 *  - NIO path (nio_native, unsafe_copy_*): since JDK 11 Socket streams and NIO channels with
 *    heap buffers copy into a temporary direct buffer in Java and then call libnio's
 *    read/write natives. That copy is an Unsafe copy, which the JIT intrinsifies after
 *    warm-up, out of every uprobe's sight; so an entry probe on the natives marks the thread,
 *    and the thread's next I/O call is the NIO path. Unsafe_CopyMemory0 (the copy while it is
 *    still interpreted or C1-compiled) is counted with its size, its 7th argument, on the
 *    stack; when its destination is the buffer that the next NIO write sends, the copy is
 *    "confirmed" (@nio_confirmed).
 *  - I/O calls (io_syscall): read, write, pread64, pwrite64, readv, writev, sendto, recvfrom,
 *    sendmsg, recvmsg, sendfile (and libc's send and recv: wrappers of their own around the
 *    sendto and recvfrom syscalls). With --scope process (default) on libc's wrappers, as
 *    uprobe pairs opened for the traced processes only: an enabled syscall tracepoint sends
 *    every syscall of every process on the host through the kernel's slow path, where a
 *    uprobe traps in the probed process only. With --scope host on the syscall tracepoints,
 *    which return at once for every process that is not traced. Bytes are what the call
 *    returned (what the kernel really moved; an error, a wrapper's -1 or a negative ret,
 *    counts 0); time includes blocking.
 *  - JNI path attribution: a write whose buffer the same thread's last Get<T>ArrayRegion
 *    filled, or a read whose buffer the thread next copies back with Set<T>ArrayRegion, took
 *    the JNI path (libjava's io_util.c does exactly this).
 *  - Nesting: one per-thread depth covers JNI copies and I/O calls; only the outermost is
 *    timed (exclusive time, paper section 5.1), so a write made inside a JNI copy counts its
 *    calls and bytes but not its time. Entry programs read the clock last, return programs
 *    first: as little of the probes' own work as possible falls inside a span.
 *  - --mode count: the JNI copies' return probes are not attached (the plan) and their entries
 *    open no span (timing = 0), so a copy costs one uprobe instead of a pair, and jvmos
 *    prices its time with a calibrated cost model instead of the clock. The I/O calls keep
 *    both ends (their bytes are the return value) and stay timed.
 *
 * Per-thread state is one struct in a hash keyed by thread id, deleted when the thread
 * exits. A full map loses a span, counted as JVMOS_LOST_THREAD_STATE; sums are atomic adds.
 *
 * What breaks when the JDK or kernel changes: the JNI signatures (stable since JNI 1.1), the
 * libnio native names (FileDispatcherImpl became UnixFileDispatcherImpl in JDK 20; both are
 * in the plan), Unsafe_CopyMemory0's argument order, and the syscall tracepoints' layout
 * (struct trace_event_raw_sys_enter/exit: nr, then six 8-byte arguments / ret).
 */
#include "common.bpf.h"
#include "io.h"

#ifndef PT_REGS_PARM6		/* libbpf 1.1's bpf_tracing.h stops at the fifth (x86-64: r9) */
#define PT_REGS_PARM6(x) ((x)->r9)
#endif

const volatile __u32 timing = 1;	/* 0 in --mode count: JNI copies are counted, not timed */

struct io_thread {
	__u32 depth;		/* timed functions the thread is inside */
	__u32 path;		/* the I/O call in progress: 1 JNI, 2 NIO */
	__u64 start_ns;		/* clock at the entry of the outermost */
	__u64 jni_get_buf;	/* native buffer the last Get<T>Region filled */
	__u64 unsafe_out_buf;	/* native destination of the last heap -> native Unsafe copy */
	__u64 read_buf;		/* buffer of the last read, until the next other I/O call */
	__u64 read_len;		/* bytes that read returned */
	__u32 nio_pending;	/* 1 from a libnio native to the next I/O call */
	__u32 pad;
};

/* A plain hash, not an LRU: a thread's entry goes when the thread exits (io_thread_exit
 * below), and an insert into a full map fails and is counted (JVMOS_LOST_THREAD_STATE),
 * where an LRU would evict a thread in the middle of its span without a word. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, JVMOS_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct io_thread);
} io_threads SEC(".maps");

SEC("tp_btf/sched_process_exit")
int BPF_PROG(io_thread_exit, struct task_struct *p)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	bpf_map_delete_elem(&io_threads, &tid);
	return 0;
}

static __always_inline struct io_thread *thread_state(__u32 tgid)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct io_thread *t = bpf_map_lookup_elem(&io_threads, &tid);

	if (t)
		return t;
	struct io_thread zero = {};
	bpf_map_update_elem(&io_threads, &tid, &zero, BPF_NOEXIST);
	t = bpf_map_lookup_elem(&io_threads, &tid);
	if (!t)
		jvmos_count(0, JVMOS_WHAT_LOST, JVMOS_LOST_THREAD_STATE, 1);
	return t;
}

static __always_inline void span_enter(struct io_thread *t)
{
	t->depth++;
	if (t->depth == 1)
		t->start_ns = bpf_ktime_get_ns();	/* the clock is read last */
}

/* the end of a timed span; returns the ns to add, 0 when nested or missed */
static __always_inline __u64 span_exit(struct io_thread *t, __u64 now, __u32 tgid, __u16 missed)
{
	if (t->depth == 0) {
		jvmos_count(tgid, JVMOS_WHAT_MISSED, missed, 1);
		return 0;
	}
	t->depth--;
	return t->depth == 0 ? now - t->start_ns : 0;
}

/* ---- JNI copies ---- */

/* len and buf: the 4th and 5th arguments; have_args 0 (a USDT site whose arguments could not
 * be read): the call is counted, its bytes not, and the miss is counted */
static __always_inline int jni_region_of(struct pt_regs *ctx, __u32 tgid, int set, __s32 len,
					 __u64 buf, int have_args)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct jvmos_stat_val *s;
	struct io_thread *t;

	s = jvmos_stat(tgid, JVMOS_CAT_JNI_COPY, JVMOS_COOKIE_PROBE(cookie));
	if (s) {
		__sync_fetch_and_add(&s->calls, 1);
		if (have_args)
			__sync_fetch_and_add(&s->bytes, (__u64)len * JVMOS_COOKIE_VALUE(cookie));
	}
	if (!have_args)
		jvmos_count(tgid, JVMOS_WHAT_MISSED, JVMOS_MISSED_USDT_ARGS, 1);
	t = thread_state(tgid);
	if (!t)
		return 0;
	if (set) {
		/* a read() into this very buffer just before: that read took the JNI path */
		if (t->read_buf == buf && t->read_len > 0) {
			jvmos_count(tgid, JVMOS_WHAT_PATH_BYTES, JVMOS_PATH_JNI_IN, t->read_len);
			jvmos_count(tgid, JVMOS_WHAT_PATH_CALLS, JVMOS_PATH_JNI_IN, 1);
		}
		t->read_buf = 0;
		t->read_len = 0;
	} else {
		t->jni_get_buf = buf;
	}
	if (timing)
		span_enter(t);
	return 0;
}

static __always_inline int jni_region(struct pt_regs *ctx, int set)
{
	__u32 tgid = jvmos_tgid();

	if (!jvmos_traced(tgid))
		return 0;
	return jni_region_of(ctx, tgid, set, (__s32)PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx), 1);
}

SEC("uprobe.multi")
int jni_get_region(struct pt_regs *ctx)
{
	return jni_region(ctx, 0);
}

SEC("uprobe.multi")
int jni_set_region(struct pt_regs *ctx)
{
	return jni_region(ctx, 1);
}

/* ---- the same copies on a stripped libjvm.so: HotSpot's hotspot_jni:<Function>__entry USDT
 * probes (their notes survive strip), whose arguments are where the note says (a register,
 * or memory relative to one), not in the calling convention's registers. The engine writes
 * each site's argument specs into usdt_args[probe id]; __return sites get jni_ret. ---- */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct jvmos_usdt_args);
} usdt_args SEC(".maps");

/* the value of one argument; 0 when it cannot be read */
static __always_inline int usdt_arg(struct pt_regs *ctx, const struct jvmos_usdt_arg *a,
				    __u64 *out)
{
	__u64 v = 0;
	int shift;

	if (a->kind == JVMOS_USDT_ARG_CONST) {
		v = a->disp;
	} else if (a->kind == JVMOS_USDT_ARG_REG || a->kind == JVMOS_USDT_ARG_MEM) {
		/* the register, saved in pt_regs at a byte offset the plan gives (a variable
		 * offset into the context is read as kernel memory, as libbpf's usdt.bpf.h does) */
		if (a->reg > sizeof(struct pt_regs) - sizeof(v))
			return 0;
		if (bpf_probe_read_kernel(&v, sizeof(v), (void *)ctx + a->reg))
			return 0;
		if (a->kind == JVMOS_USDT_ARG_MEM &&
		    bpf_probe_read_user(&v, sizeof(v), (void *)(v + a->disp)))
			return 0;
	} else {
		return 0;
	}
	/* the low |size| bytes, sign- or zero-extended (reading 8 bytes of memory for a smaller
	 * argument reads beyond it, and the shift drops those bytes: x86-64 is little-endian) */
	switch (a->size) {
	case 1: case -1: shift = 56; break;
	case 2: case -2: shift = 48; break;
	case 4: case -4: shift = 32; break;
	default: shift = 0;
	}
	v <<= shift;
	v = a->size < 0 ? (__u64)((__s64)v >> shift) : v >> shift;
	*out = v;
	return 1;
}

static __always_inline int jni_region_usdt(struct pt_regs *ctx, int set)
{
	__u32 tgid = jvmos_tgid();
	__u32 probe;
	struct jvmos_usdt_args *spec;
	__u64 len = 0, buf = 0;
	int ok;

	if (!jvmos_traced(tgid))
		return 0;
	probe = JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx));
	spec = bpf_map_lookup_elem(&usdt_args, &probe);
	/* Get/Set<T>ArrayRegion__entry(env, array, start, len, buf) */
	ok = spec && usdt_arg(ctx, &spec->arg[3], &len) && usdt_arg(ctx, &spec->arg[4], &buf);
	return jni_region_of(ctx, tgid, set, (__s32)len, buf, ok);
}

SEC("uprobe.multi")
int jni_get_region_usdt(struct pt_regs *ctx)
{
	return jni_region_usdt(ctx, 0);
}

SEC("uprobe.multi")
int jni_set_region_usdt(struct pt_regs *ctx)
{
	return jni_region_usdt(ctx, 1);
}

/* Elements, Critical, String*Chars: the arguments do not say how much is copied */
SEC("uprobe.multi")
int jni_other(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();
	struct jvmos_stat_val *s;
	struct io_thread *t;

	if (!jvmos_traced(tgid))
		return 0;
	s = jvmos_stat(tgid, JVMOS_CAT_JNI_COPY, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)));
	if (s)
		__sync_fetch_and_add(&s->calls, 1);
	if (timing && (t = thread_state(tgid)))
		span_enter(t);
	return 0;
}

/* the return of every JNI copy function (attached in --mode time only) */
SEC("uretprobe.multi")
int jni_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();	/* first: what follows is not the copy's time */
	__u32 tgid = jvmos_tgid();
	struct jvmos_stat_val *s;
	struct io_thread *t;
	__u64 ns;

	if (!jvmos_traced(tgid))
		return 0;
	t = thread_state(tgid);
	if (!t)
		return 0;
	ns = span_exit(t, now, tgid, JVMOS_MISSED_JNI_COPY_NO_ENTRY);
	if (ns) {
		s = jvmos_stat(tgid, JVMOS_CAT_JNI_COPY,
			       JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)));
		if (s)
			__sync_fetch_and_add(&s->time_ns, ns);
	}
	return 0;
}

/* ---- Unsafe_CopyMemory0(env, unsafe, srcObj, srcOff, dstObj, dstOff, size): srcObj set and
 * dstObj null is heap -> native (the NIO copy out) ---- */
SEC("uprobe.multi")
int unsafe_copy(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();
	__u16 probe = JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx));
	struct jvmos_stat_val *s;
	struct io_thread *t;
	__u64 size = 0;
	int out;

	if (!jvmos_traced(tgid))
		return 0;
	bpf_probe_read_user(&size, sizeof(size), (void *)(PT_REGS_SP(ctx) + 8));
	out = PT_REGS_PARM3(ctx) != 0 && PT_REGS_PARM5(ctx) == 0;
	s = jvmos_stat(tgid, out ? JVMOS_CAT_UNSAFE_COPY_OUT : JVMOS_CAT_UNSAFE_COPY_ETC, probe);
	if (s) {
		__sync_fetch_and_add(&s->calls, 1);
		__sync_fetch_and_add(&s->bytes, size);
	}
	if (out && (t = thread_state(tgid)))
		t->unsafe_out_buf = PT_REGS_PARM6(ctx);
	return 0;
}

/* ---- libnio's read/write natives: the thread's next I/O call is the NIO path ---- */
SEC("uprobe.multi")
int nio_native(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();
	struct jvmos_stat_val *s;
	struct io_thread *t;

	if (!jvmos_traced(tgid))
		return 0;
	s = jvmos_stat(tgid, JVMOS_CAT_NIO_NATIVE, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)));
	if (s)
		__sync_fetch_and_add(&s->calls, 1);
	if ((t = thread_state(tgid)))
		t->nio_pending = 1;
	return 0;
}

/* ---- I/O calls: the bookkeeping shared by the libc uprobes and the syscall tracepoints ---- */

#define IO_WRITE 1	/* write, pwrite64: may send what a JNI or Unsafe copy filled */
#define IO_READ 2	/* read, pread64: may fill what Set<T>ArrayRegion copies back */
#define IO_OTHER 3

static __always_inline int io_enter(__u32 tgid, int kind, __u64 buf)
{
	struct io_thread *t = thread_state(tgid);

	if (!t)
		return 0;
	if (t->nio_pending) {
		t->path = 2;
		if (kind == IO_WRITE && buf == t->unsafe_out_buf)
			jvmos_count(tgid, JVMOS_WHAT_NIO_CONFIRMED, 0, 1);
	} else if (kind == IO_WRITE && buf == t->jni_get_buf) {
		t->path = 1;
	}
	t->nio_pending = 0;
	if (kind == IO_WRITE) {
		t->jni_get_buf = 0;
		t->unsafe_out_buf = 0;
	}
	t->read_buf = kind == IO_READ ? buf : 0;
	span_enter(t);
	return 0;
}

static __always_inline int io_exit(__u64 now, __u32 tgid, __u16 probe, __s64 ret)
{
	__u64 bytes = ret > 0 ? (__u64)ret : 0;
	struct jvmos_stat_val *s = jvmos_stat(tgid, JVMOS_CAT_IO_SYSCALL, probe);
	struct io_thread *t;
	__u64 ns;

	if (s) {
		__sync_fetch_and_add(&s->calls, 1);
		__sync_fetch_and_add(&s->bytes, bytes);
	}
	t = thread_state(tgid);
	if (!t)
		return 0;
	if (t->path == 1) {
		jvmos_count(tgid, JVMOS_WHAT_PATH_BYTES, JVMOS_PATH_JNI_OUT, bytes);
		jvmos_count(tgid, JVMOS_WHAT_PATH_CALLS, JVMOS_PATH_JNI_OUT, 1);
	} else if (t->path == 2) {
		jvmos_count(tgid, JVMOS_WHAT_PATH_BYTES, JVMOS_PATH_NIO_ANY, bytes);
		jvmos_count(tgid, JVMOS_WHAT_PATH_CALLS, JVMOS_PATH_NIO_ANY, 1);
	}
	t->path = 0;
	if (t->read_buf)
		t->read_len = bytes;
	ns = span_exit(t, now, tgid, JVMOS_MISSED_SYSCALL_NO_ENTRY);
	if (ns && s)
		__sync_fetch_and_add(&s->time_ns, ns);
	return 0;
}

/* --scope process: libc's wrappers, in the traced processes only (arg1 = buf) */
SEC("uprobe.multi")
int libc_write(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();

	return jvmos_traced(tgid) ? io_enter(tgid, IO_WRITE, PT_REGS_PARM2(ctx)) : 0;
}

SEC("uprobe.multi")
int libc_read(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();

	return jvmos_traced(tgid) ? io_enter(tgid, IO_READ, PT_REGS_PARM2(ctx)) : 0;
}

SEC("uprobe.multi")
int libc_other(struct pt_regs *ctx)
{
	__u32 tgid = jvmos_tgid();

	return jvmos_traced(tgid) ? io_enter(tgid, IO_OTHER, 0) : 0;
}

/* kept in --mode count: the bytes are the return value */
SEC("uretprobe.multi")
int libc_ret(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();	/* first: the bookkeeping is not the call's time */
	__u32 tgid = jvmos_tgid();

	if (!jvmos_traced(tgid))
		return 0;
	return io_exit(now, tgid, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)),
		       (__s64)PT_REGS_RC(ctx));
}

/* --scope host: the syscall tracepoints (every process runs them; the untraced return at
 * the first line) */
SEC("tracepoint")
int sys_write(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = jvmos_tgid();

	return jvmos_traced(tgid) ? io_enter(tgid, IO_WRITE, ctx->args[1]) : 0;
}

SEC("tracepoint")
int sys_read(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = jvmos_tgid();

	return jvmos_traced(tgid) ? io_enter(tgid, IO_READ, ctx->args[1]) : 0;
}

SEC("tracepoint")
int sys_other(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = jvmos_tgid();

	return jvmos_traced(tgid) ? io_enter(tgid, IO_OTHER, 0) : 0;
}

SEC("tracepoint")
int sys_io_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = jvmos_tgid();

	if (!jvmos_traced(tgid))
		return 0;
	return io_exit(now, tgid, JVMOS_COOKIE_PROBE(bpf_get_attach_cookie(ctx)), ctx->ret);
}
