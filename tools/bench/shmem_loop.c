// SPDX-License-Identifier: GPL-2.0
/*
 * shmem_loop: a tmpfs write loop and a shmem fault loop, timed; the
 * workloads of the disabled-tracepoint benchmark (tools/bench/tracepoints)
 * and of the append ramp's (tools/bench/ramp).
 *
 *   shmem_loop write DIR MIB      write MIB in 4K writes to a new file, 8 times
 *   shmem_loop fault MIB          fault in MIB of a memfd page by page, 8 times
 *   shmem_loop seq DIR MIB BYTES  write MIB to a new file in writes of BYTES,
 *                                 then read it back in 2M reads, 8 times
 *
 * write and fault print the nanoseconds per page, seq the MB/s of the
 * writes and of the reads: the best of the 8 rounds each.  The clock reads
 * nanoseconds, where fio's runtime is in milliseconds.
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

/* Time writing pages in writes of bs bytes to a new file; *read_ns, if
 * given, gets the time to read it back in 2M reads */
static double write_round(const char *dir, long pages, long bs, double *read_ns)
{
	static char buf[2 << 20];
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
	for (long i = 0; i < pages * PAGE / bs; i++)
		if (write(fd, buf, bs) != bs) {
			perror("write");
			exit(1);
		}
	start = now_ns() - start;
	if (read_ns) {
		*read_ns = now_ns();
		for (long off = 0; off < pages * PAGE; off += sizeof(buf))
			if (pread(fd, buf, sizeof(buf), off) <= 0) {
				perror("read");
				exit(1);
			}
		*read_ns = now_ns() - *read_ns;
	}
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
	int seq = argc == 5 && !strcmp(argv[1], "seq");
	long mib = fault ? atol(argv[2]) : write || seq ? atol(argv[3]) : 0;
	long bs = seq ? atol(argv[4]) : PAGE;
	long pages = mib * 256;
	double best = 0, best_read = 0;

	if (pages <= 0 || bs <= 0 || bs > 2 << 20 || (pages * PAGE) % bs) {
		fprintf(stderr, "usage: shmem_loop write DIR MIB | fault MIB | seq DIR MIB BYTES\n"
			"(BYTES up to 2M, dividing MIB)\n");
		return 2;
	}
	for (int r = 0; r < ROUNDS; r++) {
		double read_ns = 0;
		double t = fault ? fault_round(pages) :
			   write_round(argv[2], pages, bs, seq ? &read_ns : NULL);

		if (!r || t < best)
			best = t;
		if (!r || read_ns < best_read)
			best_read = read_ns;
	}
	if (seq)
		printf("%.1f %.1f\n", pages * PAGE / best * 1e3, pages * PAGE / best_read * 1e3);
	else
		printf("%.1f\n", best / pages);
	return 0;
}
