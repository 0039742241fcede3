/*
 * copycal: calibrates the per-byte cost of copying data across the user/kernel boundary and
 * in user space, for the estimates jvmos cannot measure (the kernel's copyin/copyout are inline
 * and cannot be probed here; the paper approximated them the same way, section 3.1.1).
 *
 * For each size it times, in batches so the clock is read rarely:
 *   write: write(2) of SIZE bytes into a pipe (the kernel copies them in: copyin)
 *   read:  read(2) of SIZE bytes out of that pipe (the kernel copies them out: copyout)
 *   memcpy: a user-space memcpy of SIZE bytes between two buffers that stay in cache
 * and prints one JSON line per trial and size, ns per operation. The caller fits
 * ns = a + b * size over the sizes: b is the per-byte copy cost, a the fixed cost of a call.
 *
 *   copycal --trials 5 --millis 60 --sizes 64,256,1024,4096,16384,65536
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

#define PIPE_BYTES (1 << 20)

int main(int argc, char **argv)
{
	int trials = 5;
	double millis = 60;
	char sizes_arg[512] = "64,256,1024,4096,16384,65536";
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--trials"))
			trials = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--millis"))
			millis = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--sizes"))
			snprintf(sizes_arg, sizeof sizes_arg, "%s", argv[i + 1]);
		else {
			fprintf(stderr, "error: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (trials <= 0 || millis <= 0) {
		fprintf(stderr, "error: --trials and --millis must be positive\n");
		return 2;
	}
	long sizes[64];
	int nsizes = 0;
	for (char *tok = strtok(sizes_arg, ","); tok && nsizes < 64; tok = strtok(NULL, ",")) {
		sizes[nsizes] = atol(tok);
		if (sizes[nsizes] <= 0 || sizes[nsizes] > PIPE_BYTES / 4) {
			fprintf(stderr, "error: size %s out of range (1..%d)\n", tok, PIPE_BYTES / 4);
			return 2;
		}
		nsizes++;
	}
	int p[2];
	if (pipe(p) || fcntl(p[1], F_SETPIPE_SZ, PIPE_BYTES) < 0) {
		fprintf(stderr, "error: pipe: %s\n", strerror(errno));
		return 1;
	}
	long cap = fcntl(p[1], F_GETPIPE_SZ);
	char *src = malloc(PIPE_BYTES), *dst = malloc(PIPE_BYTES);
	memset(src, 'x', PIPE_BYTES);
	memset(dst, 0, PIPE_BYTES);
	volatile unsigned long sink = 0;
	for (int t = 0; t < trials; t++) {
		for (int s = 0; s < nsizes; s++) {
			long n = sizes[s];
			long batch = cap / n / 2;  /* half the pipe: writes never block */
			if (batch < 1)
				batch = 1;
			if (batch > 256)
				batch = 256;
			double wt = 0, rt = 0, mt = 0;
			long wops = 0, mops = 0;
			double until = now_ns() + millis * 1e6 / 2;
			while (now_ns() < until) {
				double a = now_ns();
				for (long b = 0; b < batch; b++)
					if (write(p[1], src, n) != n)
						return 1;
				double m = now_ns();
				for (long b = 0; b < batch; b++)
					if (read(p[0], dst, n) != n)
						return 1;
				double e = now_ns();
				wt += m - a;
				rt += e - m;
				wops += batch;
			}
			until = now_ns() + millis * 1e6 / 2;
			while (now_ns() < until) {
				double a = now_ns();
				for (int b = 0; b < 256; b++) {
					memcpy(dst, src + (b & 7), n);
					__asm__ volatile("" : : "r"(dst) : "memory");
				}
				mt += now_ns() - a;
				mops += 256;
				sink += dst[n - 1];
			}
			printf("{\"trial\":%d,\"size\":%ld,\"write_ns\":%.2f,\"read_ns\":%.2f,"
			       "\"memcpy_ns\":%.3f}\n", t, n, wt / wops, rt / wops, mt / mops);
		}
	}
	fprintf(stderr, "copycal: sink %lu\n", (unsigned long)sink);
	return 0;
}
