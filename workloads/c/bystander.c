/*
 * bystander - an unrelated process on the same host, to see what tracing a JVM costs it.
 *
 *   bystander --loop write|malloc [--count N] [--rounds R] [--seconds S]
 *
 * Runs R rounds (or rounds until S seconds have passed, whichever ends first) of N calls:
 * write(2) of 10 bytes to /dev/null, or malloc(64) + free. Prints one JSON line per round,
 * {"loop": ..., "round": i, "count": N, "ns": wall ns of the round, "cpu_ns": the process's CPU
 * time in it (user + system: a trap into a probe is the process's own time, waiting for a
 * CPU another process holds is not), "start_ns"/"end_ns":
 * CLOCK_MONOTONIC at its ends, comparable with other processes' clocks}, and flushes it, so a
 * reader sees each round as it ends. It never opens a socket and runs for a bounded time.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long clock_ns(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

int main(int argc, char **argv)
{
	const char *loop = NULL;
	long count = 1000000, rounds = 1;
	double seconds = 0;
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc) {
			fprintf(stderr, "error: option %s needs a value\n", argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--loop"))
			loop = argv[++i];
		else if (!strcmp(argv[i], "--count"))
			count = atol(argv[++i]);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atol(argv[++i]);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[++i]);
		else {
			fprintf(stderr, "error: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (!loop || (strcmp(loop, "write") && strcmp(loop, "malloc")) || count <= 0 ||
	    rounds <= 0 || seconds < 0 || seconds > 3600) {
		fprintf(stderr, "usage: bystander --loop write|malloc [--count N>0] [--rounds R>0] "
			"[--seconds 0..3600]\n");
		return 2;
	}
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0) {
		perror("/dev/null");
		return 1;
	}
	char buf[10] = "bystander";
	long long start = now_ns();
	for (long r = 0; r < rounds; r++) {
		long long t0 = now_ns(), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
		if (loop[0] == 'w') {
			for (long i = 0; i < count; i++)
				if (write(fd, buf, sizeof buf) != sizeof buf)
					return 1;
		} else {
			for (long i = 0; i < count; i++) {
				void *volatile p = malloc(64);
				free(p);
			}
		}
		long long c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), t1 = now_ns();
		printf("{\"loop\": \"%s\", \"round\": %ld, \"count\": %ld, \"ns\": %lld, "
		       "\"cpu_ns\": %lld, \"start_ns\": %lld, \"end_ns\": %lld}\n", loop, r, count,
		       t1 - t0, c1 - c0, t0, t1);
		fflush(stdout);
		if (seconds > 0 && (t1 - start) / 1e9 >= seconds)
			break;
	}
	return 0;
}
