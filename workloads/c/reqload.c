/*
 * reqload - the client of jvmos's interventions (workloads/java/io Intervene): REQUESTS
 * requests, one after another, to 127.0.0.1:PORT, each one byte 'R' answered by a 16-byte
 * header and RESPONSE bytes; a new connection per request (per-request), one for all
 * (keep-alive), or a new one every K requests (every:K, K >= 1: the share of requests that
 * open a connection is 1/K, the dose of jvmos's in-place calibration). A client in C, apart from the JVM under test, so that the server's CPU time
 * holds the server's side only. Prints one JSON line: requests, bytes read, and an FNV-1a
 * checksum of every byte read (two arms that do the same work give the same one).
 *
 *   reqload PORT REQUESTS RESPONSE per-request|keep-alive|every:K [quit] [MAX_SECONDS]
 *
 * "quit" sends 'Q' at the end (the server stops). Bounded in count and in time (default 300 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int connect_to(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0) {
		perror("error: socket");
		exit(1);
	}
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("error: connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: reqload PORT REQUESTS RESPONSE "
				"per-request|keep-alive|every:K [quit] [MAX_SECONDS]\n");
		return 2;
	}
	int port = atoi(argv[1]);
	long requests = atol(argv[2]);
	long want = 16 + atol(argv[3]);
	/* every: requests per connection (0: one connection for all) */
	long every = -1;
	if (strcmp(argv[4], "keep-alive") == 0)
		every = 0;
	else if (strcmp(argv[4], "per-request") == 0)
		every = 1;
	else if (strncmp(argv[4], "every:", 6) == 0) {
		char *end;
		every = strtol(argv[4] + 6, &end, 10);
		if (*end || every < 1)
			every = -1;
	}
	int quit = argc > 5 && strcmp(argv[5], "quit") == 0;
	double max_s = argc > 6 ? atof(argv[6]) : 300.0;
	if (port <= 0 || port > 65535 || requests < 0 || want < 16 || every < 0 || max_s <= 0) {
		fprintf(stderr, "error: bad arguments\n");
		return 2;
	}
	static unsigned char buf[1 << 16];
	uint64_t fnv = 1469598103934665603ULL, bytes = 0;
	double t0 = now_s();
	int fd = -1;
	long i, connections = 0;

	for (i = 0; i < requests; i++) {
		if (now_s() - t0 > max_s) {
			fprintf(stderr, "error: %g s passed after %ld requests\n", max_s, i);
			return 1;
		}
		if (fd < 0) {
			fd = connect_to(port);
			connections++;
		}
		if (write(fd, "R", 1) != 1) {
			perror("error: write");
			return 1;
		}
		long got = 0;
		while (got < want) {
			size_t n = want - got < (long)sizeof(buf) ? (size_t)(want - got) : sizeof(buf);
			ssize_t r = read(fd, buf, n);
			if (r <= 0) {
				fprintf(stderr, "error: request %ld: %s\n", i,
					r == 0 ? "connection closed early" : strerror(errno));
				return 1;
			}
			for (ssize_t k = 0; k < r; k++)
				fnv = (fnv ^ buf[k]) * 1099511628211ULL;
			got += r;
		}
		bytes += got;
		if (every && (i + 1) % every == 0) {
			close(fd);
			fd = -1;
		}
	}
	if (quit) {
		if (fd < 0)
			fd = connect_to(port);
		if (write(fd, "Q", 1) != 1) {
			perror("error: write");
			return 1;
		}
	}
	if (fd >= 0)
		close(fd);
	printf("{\"requests\": %ld, \"connections\": %ld, \"bytes\": %llu, \"fnv\": \"%016llx\", "
	       "\"seconds\": %.6f}\n", i, connections, (unsigned long long)bytes,
	       (unsigned long long)fnv, now_s() - t0);
	return 0;
}
