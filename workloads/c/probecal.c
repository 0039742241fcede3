/*
 * probecal: the target jvmos measures its own probe effect on (`jvmos calibrate --probes`).
 *
 * jvmos_probe_target() has the signature of a JNI Region copy (env, array, start, len, buf) and
 * copies len bytes, like jni_GetByteArrayRegion does; jvmos attaches the very probe blocks of
 * probes/io.bt to it, so what is measured is the real bookkeeping, not a toy probe.
 *
 *   probecal --mode call  --iterations N   N calls of jvmos_probe_target (a uprobe site)
 *   probecal --mode write --iterations N   N write(2) of 10 bytes to /dev/null (tracepoints)
 *   probecal --mode getpid --iterations N  N getpid(2) (a syscall no jvmos probe watches)
 *
 * Prints one JSON line: {"mode":..., "iterations":N, "elapsed_ns":T}.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	if (n <= 0 || (strcmp(mode, "call") && strcmp(mode, "write") && strcmp(mode, "getpid"))) {
		fprintf(stderr, "error: --mode call|write|getpid and --iterations > 0\n");
		return 2;
	}
	char buf[64] = {0};
	int fd = open("/dev/null", O_WRONLY);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!strcmp(mode, "call"))
		for (long i = 0; i < n; i++)
			jvmos_probe_target(NULL, NULL, (int)i, 10, buf);
	else if (!strcmp(mode, "write"))
		for (long i = 0; i < n; i++) {
			if (write(fd, buf, 10) != 10)
				return 1;
		}
	else
		for (long i = 0; i < n; i++)
			syscall(SYS_getpid);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("{\"mode\":\"%s\",\"iterations\":%ld,\"elapsed_ns\":%lld}\n", mode, n,
	       (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	return 0;
}
