/*
 * memcal: calibrates the two memory costs jvmos estimates instead of timing each event.
 *
 *   malloc, free: one malloc (16 B .. 4 KiB, JVM-like sizes) and one free, in batches of 256,
 *           so that jvmos can cost allocator calls it counted but did not time (free always;
 *           every call in --mode count);
 *   fault:  the first touch of a fresh anonymous page (a user page fault: the kernel zeroes
 *           and maps a page), over a new 64 MiB mapping per trial; a page fault has no exit
 *           event to time it by, so jvmos multiplies the faults it counts by this cost.
 *
 * Prints one JSON line per trial: {"trial":T,"malloc_ns":N,"free_ns":N,"fault_ns":N,"page":B}.
 *
 *   memcal --trials 5
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

#define REGION (64UL << 20)
#define BATCH 256

int main(int argc, char **argv)
{
	int trials = 5;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--trials")) {
			trials = atoi(argv[i + 1]);
		} else {
			fprintf(stderr, "error: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (trials < 1) {
		fprintf(stderr, "error: --trials must be positive\n");
		return 2;
	}
	static const size_t sizes[] = {16, 24, 48, 64, 128, 256, 512, 1024, 4096};
	const int nsizes = sizeof sizes / sizeof sizes[0];
	long page = sysconf(_SC_PAGESIZE);
	void *ptrs[BATCH];
	volatile char sink = 0;
	for (int t = 0; t < trials; t++) {
		/* allocate a batch, then free it: the JVM's arenas and chunk lists grow and shrink;
		 * each half is timed apart (the clock is read once per batch) */
		long calls = 0;
		double malloc_total = 0, free_total = 0;
		for (int rep = 0; rep < 400; rep++) {
			double t0 = now_ns();
			for (int i = 0; i < BATCH; i++) {
				ptrs[i] = malloc(sizes[(i + rep) % nsizes]);
				if (!ptrs[i]) {
					fprintf(stderr, "error: malloc failed\n");
					return 1;
				}
			}
			double t1 = now_ns();
			for (int i = 0; i < BATCH; i++)
				free(ptrs[i]);
			free_total += now_ns() - t1;
			malloc_total += t1 - t0;
			calls += BATCH;
		}
		double malloc_ns = malloc_total / calls, free_ns = free_total / calls;
		double t0;

		char *region = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (region == MAP_FAILED) {
			perror("error: mmap");
			return 1;
		}
		long pages = REGION / page;
		t0 = now_ns();
		for (long p = 0; p < pages; p++)
			region[p * page] = 1;
		double fault_ns = (now_ns() - t0) / pages;
		sink += region[page];
		munmap(region, REGION);
		printf("{\"trial\":%d,\"malloc_ns\":%.2f,\"free_ns\":%.2f,\"fault_ns\":%.2f,"
		       "\"page\":%ld}\n", t, malloc_ns, free_ns, fault_ns, page);
	}
	return sink == 42;
}
