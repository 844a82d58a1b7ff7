// SPDX-License-Identifier: GPL-2.0
/*
 * shmem_loop: a tmpfs write loop and a shmem fault loop, timed; the
 * workloads of the disabled-tracepoint benchmark (tools/bench/tracepoints).
 *
 *   shmem_loop write DIR MIB   write MIB in 4K writes to a new file, 8 times
 *   shmem_loop fault MIB       fault in MIB of a memfd page by page, 8 times
 *
 * Prints the nanoseconds per page, the best of the 8 rounds.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096L
#define ROUNDS 8

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double write_round(const char *dir, long pages)
{
	static char buf[PAGE];
	char path[512];
	double start;
	int fd;

	snprintf(path, sizeof(path), "%s/shmem_loop", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	memset(buf, 1, sizeof(buf));
	start = now_ns();
	for (long i = 0; i < pages; i++)
		if (write(fd, buf, PAGE) != PAGE) {
			perror("write");
			exit(1);
		}
	start = now_ns() - start;
	close(fd);
	unlink(path);
	return start;
}

static double fault_round(long pages)
{
	int fd = memfd_create("shmem_loop", 0);
	char *map;
	double start;

	if (fd < 0 || ftruncate(fd, pages * PAGE)) {
		perror("memfd");
		exit(1);
	}
	map = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	start = now_ns();
	for (long i = 0; i < pages; i++)
		map[i * PAGE] = 1;
	start = now_ns() - start;
	munmap(map, pages * PAGE);
	close(fd);
	return start;
}

int main(int argc, char **argv)
{
	int fault = argc == 3 && !strcmp(argv[1], "fault");
	int write = argc == 4 && !strcmp(argv[1], "write");
	long mib = write || fault ? atol(argv[argc - 1]) : 0;
	long pages = mib * 256;
	double best = 0;

	if (pages <= 0) {
		fprintf(stderr, "usage: shmem_loop write DIR MIB | fault MIB\n");
		return 2;
	}
	for (int r = 0; r < ROUNDS; r++) {
		double t = write ? write_round(argv[2], pages) : fault_round(pages);

		if (!r || t < best)
			best = t;
	}
	printf("%.1f\n", best / pages);
	return 0;
}
