/*
 * probecal: the target jvmos measures its own probe effect on (`jvmos calibrate --probes`).
 *
 * jvmos_probe_target() has the signature of a JNI Region copy (env, array, start, len, buf) and
 * copies len bytes, like jni_GetByteArrayRegion does; jvmos attaches the very programs of
 * probes/io.bpf.c to it, so what is measured is the real bookkeeping, not a toy probe.
 *
 *   probecal --mode call  --iterations N   N calls of jvmos_probe_target (a uprobe site)
 *   probecal --mode write --iterations N   N write(2) of 10 bytes to /dev/null (tracepoints)
 *   probecal --mode getpid --iterations N  N getpid(2) (a syscall no jvmos probe watches)
 *   probecal --mode yield --iterations N   two threads on one CPU, N sched_yield(2) each: about
 *                                          2N context switches (sched:sched_switch)
 *   probecal --mode futex --iterations N   N FUTEX_WAKE with no waiter (the threads layer's futex)
 *   probecal --mode lockwait --iterations N N calls of glibc's __lll_lock_wait_private on a free
 *                                          lock: it takes the lock with no syscall (the threads
 *                                          layer's futex wait at --scope process, a uprobe pair
 *                                          on glibc's function; looked up with dlsym)
 *   probecal --mode madvise --iterations N N madvise(MADV_NORMAL) of one page (a memory syscall)
 *   probecal --mode mmap --iterations N    N mmap of one anonymous page, each unmapped at once
 *                                          (the threads layer's libc mmap at --scope process)
 *   probecal --mode close --iterations N   N close(-1), failing with EBADF (the links layer)
 *   probecal --mode fault --iterations N   N first touches of fresh anonymous pages (page faults;
 *                                          one madvise(MADV_DONTNEED) per 16,384 pages)
 *   probecal --mode thread --iterations N  N pthread_create + pthread_join of an empty thread
 *
 * Prints one JSON line: {"mode":..., "iterations":N, "elapsed_ns":T, "cpu_ns":C, "switches":S}:
 * T the loop's wall time, C the CPU time the process used meanwhile (all its threads, the
 * kernel's work and the probes' included: a probe runs in the context of the task it hits,
 * while the waits for a CPU that other processes cause are left out), S the context switches
 * of the process's threads during the loop (getrusage: voluntary + involuntary; in yield mode
 * those of the two yielding threads).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* optimize("O0"): the function must begin with push %rbp like the JVM functions jvmos probes:
 * the kernel emulates that instruction for a uprobe, but single-steps most others (~20x dearer) */
__attribute__((noinline, used, optimize("O0"))) void jvmos_probe_target(void *env, void *array, int start,
							 int len, char *buf)
{
	static char heap[64];
	(void)env;
	(void)array;
	memcpy(buf, heap + (start & 31), len > 32 ? 32 : len);
	__asm__ volatile("" : : "r"(buf) : "memory");
}

static long yields;
static long thread_switches[2];

static long switches_of(int who)
{
	struct rusage ru;
	getrusage(who, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static void *yielder(void *arg)
{
	long before = switches_of(RUSAGE_THREAD);
	for (long i = 0; i < yields; i++)
		sched_yield();
	thread_switches[(long)arg] = switches_of(RUSAGE_THREAD) - before;
	return NULL;
}

static void *empty(void *arg)
{
	return arg;
}

static const char *MODES[] = {"call", "write", "getpid", "yield", "futex", "lockwait", "madvise", "mmap",
			      "close", "fault", "thread", NULL};

int main(int argc, char **argv)
{
	const char *mode = "call";
	long n = 1000000;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--mode"))
			mode = argv[i + 1];
		else if (!strcmp(argv[i], "--iterations"))
			n = atol(argv[i + 1]);
		else {
			fprintf(stderr, "error: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	int known = 0;
	for (const char **m = MODES; *m; m++)
		known |= !strcmp(mode, *m);
	if (n <= 0 || !known) {
		fprintf(stderr, "error: --mode call|write|getpid|yield|futex|lockwait|madvise|mmap|close|fault|"
				"thread "
				"and --iterations > 0\n");
		return 2;
	}
	char buf[64] = {0};
	int fd = open("/dev/null", O_WRONLY);
	/* set-up outside the timed loop */
	const long region_pages = 16384, page = 4096;
	char *region = NULL;
	if (!strcmp(mode, "madvise") || !strcmp(mode, "fault")) {
		region = mmap(NULL, region_pages * page, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (region == MAP_FAILED)
			return 1;
		madvise(region, region_pages * page, MADV_NOHUGEPAGE);	/* one fault per page */
	}
	if (!strcmp(mode, "yield")) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(sched_getcpu(), &one);
		if (sched_setaffinity(0, sizeof(one), &one))	/* both threads inherit it */
			return 1;
	}
	int word = 0;
	/* glibc's contended-lock wait (GLIBC_PRIVATE): on a lock word of 0 it takes the lock
	 * (stores 2) and returns without a syscall */
	void (*lock_wait)(int *, int) = NULL;
	if (!strcmp(mode, "lockwait") &&
	    !(lock_wait = (void (*)(int *, int))dlsym(RTLD_DEFAULT, "__lll_lock_wait_private"))) {
		fprintf(stderr, "error: this libc has no __lll_lock_wait_private\n");
		return 2;
	}
	long sw0 = switches_of(RUSAGE_SELF), sw = 0;
	struct timespec t0, t1, c0, c1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!strcmp(mode, "call"))
		for (long i = 0; i < n; i++)
			jvmos_probe_target(NULL, NULL, (int)i, 10, buf);
	else if (!strcmp(mode, "write"))
		for (long i = 0; i < n; i++) {
			if (write(fd, buf, 10) != 10)
				return 1;
		}
	else if (!strcmp(mode, "getpid"))
		for (long i = 0; i < n; i++)
			syscall(SYS_getpid);
	else if (!strcmp(mode, "yield")) {
		pthread_t t[2];
		yields = n;
		for (long i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, yielder, (void *)i))
				return 1;
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		sw = thread_switches[0] + thread_switches[1];
	} else if (!strcmp(mode, "futex"))
		for (long i = 0; i < n; i++)
			syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	else if (!strcmp(mode, "lockwait"))
		for (long i = 0; i < n; i++) {
			word = 0;
			lock_wait(&word, 0);
		}
	else if (!strcmp(mode, "mmap"))
		for (long i = 0; i < n; i++) {
			void *m = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED || munmap(m, page))
				return 1;
		}
	else if (!strcmp(mode, "madvise"))
		for (long i = 0; i < n; i++)
			madvise(region, page, MADV_NORMAL);
	else if (!strcmp(mode, "close"))
		for (long i = 0; i < n; i++)
			close(-1);
	else if (!strcmp(mode, "fault"))
		for (long i = 0; i < n; i++) {
			long k = i % region_pages;
			if (k == 0 && i)
				madvise(region, region_pages * page, MADV_DONTNEED);
			region[k * page] = 1;
		}
	else
		for (long i = 0; i < n; i++) {
			pthread_t t;
			if (pthread_create(&t, NULL, empty, NULL) || pthread_join(t, NULL))
				return 1;
		}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	if (strcmp(mode, "yield"))
		sw = switches_of(RUSAGE_SELF) - sw0;
	printf("{\"mode\":\"%s\",\"iterations\":%ld,\"elapsed_ns\":%lld,\"cpu_ns\":%lld,"
	       "\"switches\":%ld}\n", mode, n,
	       (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec),
	       (c1.tv_sec - c0.tv_sec) * 1000000000LL + (c1.tv_nsec - c0.tv_nsec), sw);
	return 0;
}
