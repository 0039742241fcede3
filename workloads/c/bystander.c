/*
 * bystander - an unrelated process on the same host, to see what tracing a JVM costs it.
 *
 *   bystander --loop write|malloc|pingpong [--count N] [--rounds R] [--seconds S]
 *
 * Runs R rounds (or rounds until S seconds have passed, whichever ends first) of N calls:
 * write(2) of 10 bytes to /dev/null, malloc(64) + free, or a pipe ping-pong with a child
 * process forked for the round (N round trips of one byte each way: each blocks both
 * processes in turn, so every round trip is at least two context switches, and meets the
 * scheduler's hooks, which are host-wide). Prints one JSON line per round,
 * {"loop": ..., "round": i, "count": N, "ns": wall ns of the round, "cpu_ns": the process's CPU
 * time in it (user + system: a trap into a probe is the process's own time, waiting for a
 * CPU another process holds is not; pingpong: the parent's and the child's), "start_ns"/"end_ns":
 * CLOCK_MONOTONIC at its ends, comparable with other processes' clocks}, and flushes it, so a
 * reader sees each round as it ends. It never opens a socket and runs for a bounded time.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
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

/* one round of the ping-pong: N round trips with a child forked for it; returns the child's
 * CPU time (user + system, from wait4), or -1 on an error */
static long long pingpong(long n)
{
	int to_child[2], to_parent[2];
	char b = 'p';
	if (pipe(to_child) || pipe(to_parent))
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		for (long i = 0; i < n; i++)
			if (read(to_child[0], &b, 1) != 1 || write(to_parent[1], &b, 1) != 1)
				_exit(1);
		_exit(0);
	}
	close(to_child[0]);
	close(to_parent[1]);
	int ok = 1;
	for (long i = 0; i < n && ok; i++)
		ok = write(to_child[1], &b, 1) == 1 && read(to_parent[0], &b, 1) == 1;
	close(to_child[1]);
	close(to_parent[0]);
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid || !ok || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
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
	if (!loop || (strcmp(loop, "write") && strcmp(loop, "malloc") && strcmp(loop, "pingpong")) ||
	    count <= 0 || rounds <= 0 || seconds < 0 || seconds > 3600) {
		fprintf(stderr, "usage: bystander --loop write|malloc|pingpong [--count N>0] "
			"[--rounds R>0] [--seconds 0..3600]\n");
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
		long long t0 = now_ns(), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), child = 0;
		if (loop[0] == 'p') {
			if ((child = pingpong(count)) < 0) {
				fprintf(stderr, "error: the ping-pong failed\n");
				return 1;
			}
		} else if (loop[0] == 'w') {
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
		       t1 - t0, c1 - c0 + child, t0, t1);
		fflush(stdout);
		if (seconds > 0 && (t1 - start) / 1e9 >= seconds)
			break;
	}
	return 0;
}
