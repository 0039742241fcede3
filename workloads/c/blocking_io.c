/*
 * blocking_io: the C half of the paper's blocking-I/O experiment (section 3.1.1, Table 3).
 * Writes a SIZE-byte buffer to TARGET (default /dev/null) ITERATIONS times with write(2),
 * nothing else in the loop, and prints one JSON line with the loop's elapsed time.
 *
 *   blocking_io --iterations 1000000 --size 10 --target /dev/null
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long parse_long(const char *opt, const char *v)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || *end || x <= 0) {
		fprintf(stderr, "error: %s needs a positive integer, got '%s'\n", opt, v);
		exit(2);
	}
	return x;
}

int main(int argc, char **argv)
{
	long iterations = 1000000, size = 10;
	const char *target = "/dev/null";
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc) {
			fprintf(stderr, "error: option %s needs a value\n", argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--iterations"))
			iterations = parse_long(argv[i], argv[i + 1]);
		else if (!strcmp(argv[i], "--size"))
			size = parse_long(argv[i], argv[i + 1]);
		else if (!strcmp(argv[i], "--target"))
			target = argv[i + 1];
		else {
			fprintf(stderr, "error: unknown option %s\n", argv[i]);
			return 2;
		}
		i++;
	}
	char *buf = calloc(1, size);
	int fd = open(target, O_WRONLY);
	if (!buf || fd < 0) {
		fprintf(stderr, "error: cannot open %s: %s\n", target, strerror(errno));
		return 1;
	}
	struct timespec t0, t1;
	long bytes = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < iterations; i++) {
		ssize_t n = write(fd, buf, size);
		if (n < 0) {
			fprintf(stderr, "error: write: %s\n", strerror(errno));
			return 1;
		}
		bytes += n;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long long ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
	printf("{\"workload\":\"blocking-io\",\"language\":\"c\",\"ops\":%ld,\"bytes\":%ld,"
	       "\"elapsed_ns\":%lld}\n", iterations, bytes, ns);
	close(fd);
	free(buf);
	return 0;
}
