// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded random sequence of write, read, truncate, fallocate, punch-hole,
 * mmap-write and msync on one long-lived file per mount, each operation
 * checked against a model of the file: contents and size match it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Mostly small writes, some aligned power-of-two ranges up to PMD size. */
static void random_range(long max, long *off, long *len)
{
	unsigned int kind = rnd() % 100;

	if (kind < 60) {
		*len = 1 + rnd() % (16 * KB);
		*off = rnd() % (max - *len);
	} else {
		int order = kind < 98 ? rnd() % 5 : 5 + rnd() % 5;

		*len = PAGE << order;
		*off = (rnd() % (max / *len)) * *len;
	}
}

/*
 * A seeded random sequence of write, read, truncate, fallocate, punch-hole,
 * mmap-write and msync, each checked against a model of the file.
 */
static void random_ops_test(const char *dir, const char *what, unsigned int seed, long ops)
{
	const long max = 4 * MB;
	char *model = calloc(1, max), *buf = malloc(max);
	int fd = open_new(dir, "random");
	long size = 0, i, off, len;
	const char *bad = NULL;

	rng_state = seed * 2654435761ULL + 1;
	for (i = 0; i < ops && !bad; i++) {
		unsigned int op = rnd() % 8;
		bool keep;
		char *map;

		random_range(max, &off, &len);
		switch (op) {
		case 0: case 1:	/* write */
			fill(buf, len, i);
			if (pwrite(fd, buf, len, off) != len)
				bad = "pwrite";
			memcpy(model + off, buf, len);
			if (off + len > size)
				size = off + len;
			break;
		case 2:		/* read */
			break;
		case 3:		/* truncate */
			off = rnd() % 4 ? off : off + len;
			if (ftruncate(fd, off))
				bad = "ftruncate";
			if (off < size)
				memset(model + off, 0, size - off);
			size = off;
			break;
		case 4:		/* fallocate, half of them keeping the size */
			keep = rnd() % 2;
			if (fallocate(fd, keep ? FALLOC_FL_KEEP_SIZE : 0, off, len))
				bad = "fallocate";
			else if (!keep && off + len > size)
				size = off + len;
			break;
		case 5:		/* punch a hole */
			if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len))
				bad = "punch";
			memset(model + off, 0, len);
			break;
		case 6: case 7:	/* store through a shared mapping, msync sometimes */
			if (off >= size)
				break;
			if (off + len > size)
				len = size - off;
			map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (map == MAP_FAILED) {
				bad = "mmap";
				break;
			}
			fill(map + off, len, ~i);
			fill(model + off, len, ~i);
			if (op == 7 && msync(map, size, MS_SYNC))
				bad = "msync";
			munmap(map, size);
			break;
		}
		if (bad)
			break;
		/* Check the range touched, and everything now and then */
		if (i % 1000 == 999) {
			off = 0;
			len = max;
		}
		if (off < size) {
			long n = (off + len > size ? size : off + len) - off;

			if (pread(fd, buf, n, off) != n || memcmp(buf, model + off, n))
				bad = "contents differ from the model";
		}
		if (lseek(fd, 0, SEEK_END) != size)
			bad = "size differs from the model";
	}
	if (bad)
		diag("%s: operation %ld (op at %ld+%ld): %s", what, i, off, len, bad);
	check(!bad, "%s: %ld random operations match the model (seed %u)", what, ops, seed);
	free(model);
	free(buf);
	close(fd);
}

void random_ops_tests(const char *large, const char *plain, const char *huge,
		      unsigned int seed, long ops)
{
	random_ops_test(large, "large_folios", seed, ops);
	random_ops_test(huge, "huge=always", seed, ops);
	random_ops_test(plain, "default", seed, ops);
}
