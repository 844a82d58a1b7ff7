// SPDX-License-Identifier: GPL-2.0
/*
 * shmem_seek: the cost of SEEK_DATA and SEEK_HOLE over a fallocated tmpfs
 * file, where every folio is a hole (tools/bench/seek).
 *
 *   shmem_seek DIR MIB   fallocate MIB in DIR, then time lseek() from 0
 *
 * Prints "SEEK_DATA_ns SEEK_HOLE_ns", each the best of 5 calls.  SEEK_DATA
 * walks the whole file and fails with ENXIO; SEEK_HOLE returns 0 at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CALLS 5

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Best time of CALLS lseek(fd, 0, whence) calls; dies on a wrong answer */
static double best_seek(int fd, int whence, off_t want, int want_errno)
{
	double best = 0;
	int i;

	for (i = 0; i < CALLS; i++) {
		double start = now_ns(), t;
		off_t got = lseek(fd, 0, whence);

		t = now_ns() - start;
		if (got != want || (got < 0 && errno != want_errno)) {
			fprintf(stderr, "shmem_seek: lseek(%s) = %lld (%m), want %lld\n",
				whence == SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE",
				(long long)got, (long long)want);
			exit(1);
		}
		if (!i || t < best)
			best = t;
	}
	return best;
}

int main(int argc, char **argv)
{
	char path[4096];
	long mib;
	int fd;

	if (argc != 3 || (mib = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: shmem_seek DIR MIB\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/shmem_seek", argv[1]);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || fallocate(fd, 0, 0, mib << 20)) {
		fprintf(stderr, "shmem_seek: %s: %m\n", path);
		return 1;
	}
	printf("%.0f %.0f\n", best_seek(fd, SEEK_DATA, -1, ENXIO),
	       best_seek(fd, SEEK_HOLE, 0, 0));
	unlink(path);
	return 0;
}
