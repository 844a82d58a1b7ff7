// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel behaviour of the series: folio orders chosen by write() and
 * fallocate(), per-block uptodate state seen through read, SEEK_DATA/
 * SEEK_HOLE, splice, sendfile and mmap, hole punching, swap, and a seeded
 * random operation sequence checked against a model of the file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "lib.h"

static void test_orders(const char *dir)
{
	static const struct { off_t off; size_t len; int order; } writes[] = {
		{ 0, 16 * KB, 2 },
		{ 64 * KB, 64 * KB, 4 },
		{ 256 * KB, 256 * KB, 6 },
		{ 2 * MB, 2 * MB, 9 },
	};
	bool uptodate;
	int fd;

	for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
		fd = open_new(dir, "orders");
		pwrite_pattern(fd, writes[i].off, writes[i].len, i);
		for (off_t o = writes[i].off; o < writes[i].off + (off_t)writes[i].len;
		     o += writes[i].len / 2)
			check(folio_order_at(fd, o, &uptodate) == writes[i].order &&
			      uptodate, "write of %zuK at %ldK: uptodate order-%d folio at %ldK",
			      writes[i].len / KB, writes[i].off / KB, writes[i].order, o / KB);
		close(fd);
	}

	fd = open_new(dir, "falloc");
	check(!fallocate(fd, 0, 0, 2 * MB), "fallocate 2M");
	pwrite_pattern(fd, 0, 2 * MB, 1);	/* uptodate, so it can be mapped */
	check(folio_order_at(fd, 0, NULL) == 9, "fallocate 2M: order-9 folio");
	close(fd);

	fd = open_new(dir, "falloc8");
	long before = shmem_allocs(2048);
	check(!fallocate(fd, 0, 0, 8 * MB), "fallocate 8M");
	check(shmem_allocs(2048) - before == 4, "fallocate 8M: four 2M folios (%ld)",
	      shmem_allocs(2048) - before);
	pwrite_pattern(fd, 0, 8 * MB, 2);
	for (off_t o = 0; o < 8 * MB; o += 2 * MB)
		check(folio_order_at(fd, o, NULL) == 9, "fallocate 8M: order 9 at %ldM", o / MB);
	close(fd);

	/* Unaligned: 16K at 4K is 4K + 8K + 4K; short: 12K at 0 is 8K + 4K */
	fd = open_new(dir, "unaligned");
	pwrite_pattern(fd, 4 * KB, 16 * KB, 3);
	check(folio_order_at(fd, 4 * KB, NULL) == 0 &&
	      folio_order_at(fd, 8 * KB, NULL) == 1 &&
	      folio_order_at(fd, 16 * KB, NULL) == 0,
	      "write of 16K at 4K: orders 0, 1, 0");
	close(fd);
	fd = open_new(dir, "short");
	pwrite_pattern(fd, 0, 12 * KB, 4);
	check(folio_order_at(fd, 0, NULL) == 1 && folio_order_at(fd, 8 * KB, NULL) == 0,
	      "write of 12K at 0: orders 1, 0");
	close(fd);
}

static void test_default_orders(const char *dir, const char *what, int order)
{
	int fd = open_new(dir, "default");

	pwrite_pattern(fd, 0, 2 * MB, 5);
	check(folio_order_at(fd, 0, NULL) == order &&
	      folio_order_at(fd, 64 * KB, NULL) == order,
	      "%s: write of 2M gets order %d, as stock", what, order);
	close(fd);
}

/* One 4K write into the middle of a fallocated 64K folio. */
static void test_partial_block(const char *dir)
{
	long before = shmem_allocs(64);
	int fd = open_new(dir, "partial");
	struct stat st;

	check(!fallocate(fd, 0, 0, 64 * KB), "fallocate 64K");
	check(shmem_allocs(64) - before == 1, "fallocate 64K: one 64K folio");
	pwrite_pattern(fd, 32 * KB, 4 * KB, 7);
	check(seek(fd, 0, SEEK_DATA) == 32 * KB, "SEEK_DATA from 0 finds the written block (%ld)",
	      seek(fd, 0, SEEK_DATA));
	check(seek(fd, 32 * KB, SEEK_HOLE) == 36 * KB, "SEEK_HOLE after it is the next block (%ld)",
	      seek(fd, 32 * KB, SEEK_HOLE));
	check(seek(fd, 0, SEEK_HOLE) == 0, "SEEK_HOLE from 0 is 0");
	check(seek(fd, 36 * KB, SEEK_DATA) == -ENXIO, "no data after the block");
	check(is_zero(fd, 0, 32 * KB) && is_zero(fd, 36 * KB, 28 * KB),
	      "the unwritten blocks read as zeroes");
	check(has_pattern(fd, 32 * KB, 4 * KB, 32 * KB, 7), "the written block reads back");

	/* A sub-block write: the rest of its block reads as zeroes */
	pwrite_pattern(fd, 8 * KB + 100, 200, 8);
	check(is_zero(fd, 8 * KB, 100) && has_pattern(fd, 8 * KB + 100, 200, 8 * KB + 100, 8) &&
	      is_zero(fd, 8 * KB + 300, PAGE - 300), "a 200-byte write zeroes the rest of its block");
	check(seek(fd, 0, SEEK_DATA) == 8 * KB && seek(fd, 8 * KB, SEEK_HOLE) == 12 * KB,
	      "and makes that block data");

	for (off_t o = 0; o < 64 * KB; o += PAGE)
		if (o != 32 * KB)
			pwrite_pattern(fd, o, PAGE, 9 + o);
	check(seek(fd, 0, SEEK_HOLE) == 64 * KB, "all blocks written: no hole before EOF");
	bool uptodate;
	check(folio_order_at(fd, 0, &uptodate) == 4 && uptodate,
	      "all blocks written: one uptodate order-4 folio");
	if (fstat(fd, &st))
		die("fstat");
	check(st.st_blksize == PAGE, "st_blksize is PAGE_SIZE (%ld)", (long)st.st_blksize);
	close(fd);
}

/* A write whose copy from user space stops short marks only what it copied */
static void test_short_copy(const char *dir)
{
	long before = shmem_allocs(64);
	int fd = open_new(dir, "shortcopy");
	char *buf = mmap(NULL, 64 * KB, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	fill(buf, PAGE, 11);
	mprotect(buf + PAGE, 64 * KB - PAGE, PROT_NONE);
	check(pwrite(fd, buf, 64 * KB, 0) == PAGE, "64K write from a buffer with 4K readable copies 4K");
	check(shmem_allocs(64) - before == 1, "it allocated one 64K folio");
	check(!ftruncate(fd, 64 * KB), "extend to 64K");
	check(seek(fd, 0, SEEK_HOLE) == PAGE, "SEEK_HOLE: only the copied block is data (%ld)",
	      seek(fd, 0, SEEK_HOLE));
	check(has_pattern(fd, 0, PAGE, 0, 11) && is_zero(fd, PAGE, 60 * KB),
	      "copied block reads back, the rest zeroes");
	munmap(buf, 64 * KB);
	close(fd);
}

static void test_punch(const char *dir)
{
	int fd = open_new(dir, "punch");

	/* An uptodate folio: the punch splits it */
	pwrite_pattern(fd, 0, 64 * KB, 12);
	check(!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 16 * KB, 16 * KB),
	      "punch 16K..32K in a written 64K folio");
	check(seek(fd, 0, SEEK_HOLE) == 16 * KB && seek(fd, 16 * KB, SEEK_DATA) == 32 * KB,
	      "SEEK_HOLE/SEEK_DATA see exactly the hole");
	check(is_zero(fd, 16 * KB, 16 * KB), "the hole reads zeroes");
	check(has_pattern(fd, 0, 16 * KB, 0, 12) && has_pattern(fd, 32 * KB, 32 * KB, 0, 12),
	      "the data around the hole is intact");
	close(fd);

	/*
	 * A partially uptodate folio: the punch splits it, zeroing its
	 * unwritten blocks first, which makes them data (as in stock 6.12)
	 */
	fd = open_new(dir, "punch-partial");
	check(!fallocate(fd, 0, 0, 64 * KB), "fallocate 64K");
	pwrite_pattern(fd, 0, 16 * KB, 13);
	pwrite_pattern(fd, 32 * KB, 16 * KB, 14);
	check(!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4 * KB, 8 * KB),
	      "punch 4K..12K in a partially written 64K folio");
	check(seek(fd, 0, SEEK_HOLE) == 4 * KB && seek(fd, 4 * KB, SEEK_DATA) == 12 * KB &&
	      seek(fd, 12 * KB, SEEK_HOLE) == 64 * KB,
	      "SEEK sees the hole 4-12K only: the split made the unwritten blocks data (%ld)",
	      seek(fd, 12 * KB, SEEK_HOLE));
	check(folio_order_at(fd, 0, NULL) == 0 && folio_order_at(fd, 32 * KB, NULL) == 0,
	      "the folio was split to order 0");
	check(is_zero(fd, 4 * KB, 8 * KB) && is_zero(fd, 16 * KB, 16 * KB) &&
	      is_zero(fd, 48 * KB, 16 * KB), "hole and unwritten blocks read zeroes");
	check(has_pattern(fd, 0, 4 * KB, 0, 13) && has_pattern(fd, 12 * KB, 4 * KB, 0, 13) &&
	      has_pattern(fd, 32 * KB, 16 * KB, 32 * KB, 14), "data intact");
	/* Punching part of a block zeroes it but keeps it data */
	check(!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 33 * KB, 2 * KB),
	      "punch 2K inside a block");
	check(seek(fd, 32 * KB, SEEK_HOLE) == 64 * KB && is_zero(fd, 33 * KB, 2 * KB) &&
	      has_pattern(fd, 35 * KB, 13 * KB, 32 * KB, 14), "the block stays data, zeroed in part");
	/* Truncating into the (now order-0) pages */
	check(!ftruncate(fd, 34 * KB) && !ftruncate(fd, 64 * KB), "truncate to 34K and extend");
	check(seek(fd, 32 * KB, SEEK_HOLE) == 36 * KB && is_zero(fd, 34 * KB, 30 * KB),
	      "truncation zeroed past 34K and left 36K.. a hole (%ld)", seek(fd, 32 * KB, SEEK_HOLE));
	close(fd);
}

static bool pipe_matches(int pfd, const char *want, size_t len)
{
	char *got = malloc(len);
	size_t n = 0;
	ssize_t r;
	bool same;

	while (n < len && (r = read(pfd, got + n, len - n)) > 0)
		n += r;
	same = n == len && !memcmp(got, want, len);
	free(got);
	return same;
}

static void test_splice(const char *dir)
{
	int fd = open_new(dir, "splice"), out, p[2];
	char *want = calloc(1, 64 * KB);
	loff_t off = 0;

	check(!fallocate(fd, 0, 0, 64 * KB), "fallocate 64K");
	fill(want + 16 * KB, 4 * KB, 15);
	pwrite_pattern(fd, 16 * KB, 4 * KB, 15);
	if (pipe(p) || fcntl(p[1], F_SETPIPE_SZ, 128 * KB) < 0)
		die("pipe");
	check(splice(fd, &off, p[1], NULL, 64 * KB, 0) == 64 * KB, "splice 64K of a partial folio");
	check(pipe_matches(p[0], want, 64 * KB), "the pipe holds the data and zeroes for the holes");

	out = open_new(dir, "sendfile-out");
	off = 0;
	check(sendfile(out, fd, &off, 64 * KB) == 64 * KB, "sendfile 64K of a partial folio");
	char *got = malloc(64 * KB);
	check(pread(out, got, 64 * KB, 0) == 64 * KB && !memcmp(got, want, 64 * KB),
	      "the copy holds the data and zeroes for the holes");
	free(got);
	free(want);
	close(out);
	close(p[0]);
	close(p[1]);
	close(fd);
}

static void test_mmap(const char *dir)
{
	int fd = open_new(dir, "mmap");
	char *map;

	check(!fallocate(fd, 0, 0, 64 * KB), "fallocate 64K");
	pwrite_pattern(fd, 8 * KB, 4 * KB, 16);
	map = mmap(NULL, 64 * KB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	bool zeroes = true;
	for (long i = 0; i < 64 * KB; i++)
		if ((i < 8 * KB || i >= 12 * KB) && map[i])
			zeroes = false;
	char want[PAGE];
	fill(want, PAGE, 16);
	check(zeroes && !memcmp(map + 8 * KB, want, PAGE),
	      "a mapping of a partial folio shows the data and zeroes");
	fill(want, PAGE, 17);
	memcpy(map + 40 * KB, want, PAGE);
	check(has_pattern(fd, 40 * KB, PAGE, 40 * KB, 17), "a store through the mapping is seen by read()");
	pwrite_pattern(fd, 48 * KB, PAGE, 18);
	fill(want, PAGE, 18);
	check(!memcmp(map + 48 * KB, want, PAGE), "a write() is seen through the mapping");
	check(!msync(map, 64 * KB, MS_SYNC), "msync");
	check(seek(fd, 0, SEEK_HOLE) == 64 * KB,
	      "once mapped, the folio is uptodate: all data, as documented");
	munmap(map, 64 * KB);
	close(fd);
}

/* huge=always: PMD folios, and the per-block state makes SEEK exact there */
static void test_huge_always(const char *dir)
{
	long before = shmem_allocs(2048);
	int fd = open_new(dir, "huge");
	struct stat st;

	pwrite_pattern(fd, 0, PAGE, 19);
	check(shmem_allocs(2048) - before == 1, "huge=always: a 4K write allocates a 2M folio");
	check(!ftruncate(fd, 2 * MB), "extend to 2M");
	check(seek(fd, 0, SEEK_HOLE) == PAGE, "SEEK_HOLE is exact inside the PMD folio (%ld)",
	      seek(fd, 0, SEEK_HOLE));
	check(is_zero(fd, PAGE, 2 * MB - PAGE), "the rest reads zeroes");
	if (fstat(fd, &st))
		die("fstat");
	check(st.st_blksize == PMD, "huge=always without large_folios: st_blksize is 2M, as stock (%ld)",
	      (long)st.st_blksize);
	close(fd);
}

/*
 * read() copies a wholly uptodate large folio in one step, and anything
 * else a page at a time: reads across pages and folios, to an EOF inside
 * a folio, into a buffer that faults part way, of a partially uptodate
 * folio, and of a PMD folio with a poisoned page that cannot be split.
 */
static void test_read_folios(const char *huge, const char *large)
{
	int fd = open_new(huge, "read"), p[2];
	long size = 2 * PMD + 100;
	char *want = malloc(size), *buf;
	loff_t off = 0;
	bool uptodate;
	ssize_t r;

	fill(want, size, 21);
	check(pwrite(fd, want, size, 0) == size, "write 4M and 100 bytes");
	check(folio_order_at(fd, 0, &uptodate) == 9 && uptodate, "into uptodate PMD folios");
	check(has_pattern(fd, PMD - PAGE - 7, 3 * PAGE + 11, 0, 21),
	      "a read across pages and a folio boundary, at unaligned ends, reads back");
	buf = mmap(NULL, PMD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	r = pread(fd, buf, MB, 2 * PMD - 50);
	check(r == 150 && !memcmp(buf, want + 2 * PMD - 50, 150),
	      "a read past EOF stops there, inside the last folio (%zd)", r);
	mprotect(buf + PMD - PAGE, PAGE, PROT_NONE);
	r = pread(fd, buf, PMD, 100);
	check(r == PMD - PAGE && !memcmp(buf, want + 100, r),
	      "a 2M read into a buffer whose last 4K is unwritable returns 2M - 4K (%zd)", r);
	munmap(buf, PMD);

	/* A pipe holds a reference, so memory failure cannot split the folio */
	if (pipe(p))
		die("pipe");
	check(splice(fd, &off, p[1], NULL, PAGE, 0) == PAGE, "splice the first page into a pipe");
	pid_t pid = fork();

	if (!pid) {	/* memory failure kills the processes that map the page */
		char *map = mmap(NULL, PMD, PROT_READ, MAP_SHARED, fd, 0);

		_exit(map == MAP_FAILED || madvise(map + 5 * PAGE, PAGE, MADV_HWPOISON));
	}
	int status = 0;

	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	check(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS,
	      "MADV_HWPOISON on page 5 of the folio kills its mapper with SIGBUS (status %#x)",
	      status);
	check(folio_order_at(fd, 0, &uptodate) == 9, "the folio stays whole");
	buf = malloc(PMD);
	r = pread(fd, buf, PMD, 0);
	check(r == 5 * PAGE && !memcmp(buf, want, r),
	      "a read of the folio stops before the poisoned page (%zd)", r);
	r = pread(fd, buf, PAGE, 5 * PAGE);
	check(r < 0 && errno == EIO, "a read of the poisoned page fails with EIO (%zd)", r);
	r = pread(fd, buf, PMD - 6 * PAGE, 6 * PAGE);
	check(r == PMD - 6 * PAGE && !memcmp(buf, want + 6 * PAGE, r),
	      "the pages after it read back (%zd)", r);
	close(p[0]);
	close(p[1]);
	close(fd);
	free(want);

	/* Only the page read is known to be uptodate in a partial folio */
	fd = open_new(large, "read-partial");
	want = calloc(1, 3 * PAGE);
	check(!fallocate(fd, 0, 0, 64 * KB), "fallocate 64K");
	fill(want, PAGE, 22);
	fill(want + 2 * PAGE, PAGE, 23);
	check(pwrite(fd, want, PAGE, 0) == PAGE && pwrite(fd, want + 2 * PAGE, PAGE, 2 * PAGE) == PAGE,
	      "write blocks 0 and 2 of a 64K folio");
	r = pread(fd, buf, 3 * PAGE, 0);
	check(r == 3 * PAGE && !memcmp(buf, want, r),
	      "one read of blocks 0 to 2 returns the data and zeroes for block 1");
	free(buf);
	free(want);
	close(fd);
}

static void test_anon_mthp(void)
{
	const char *ctl = "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/shmem_enabled";
	long before;
	char *map, *aligned;

	sysfs_write(ctl, "always");
	before = shmem_allocs(64);
	map = mmap(NULL, 2 * MB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		die("mmap");
	aligned = (char *)(((uintptr_t)map + 64 * KB - 1) & ~(64 * KB - 1));
	for (long i = 0; i < MB; i += PAGE)
		aligned[i] = 1;
	check(shmem_allocs(64) - before == 16,
	      "anon shmem mTHP: faulting 1M allocates sixteen 64K folios (%ld)",
	      shmem_allocs(64) - before);
	munmap(map, 2 * MB);
	sysfs_write(ctl, "never");
}

/* Last: it turns large_folios off on the mount. */
void mount_option_tests(const char *dir)
{
	char line[512];
	bool shown = false;
	FILE *f = fopen("/proc/mounts", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, dir) && strstr(line, "large_folios"))
			shown = true;
	if (f)
		fclose(f);
	check(shown, "/proc/mounts shows large_folios");
	check(mount("tmpfs", dir, "tmpfs", MS_REMOUNT, "nolarge_folios") == 0, "remount nolarge_folios");
	f = fopen("/proc/mounts", "r");
	shown = false;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, dir) && strstr(line, "large_folios"))
			shown = true;
	if (f)
		fclose(f);
	check(!shown, "the option is gone from /proc/mounts");
	errno = 0;
	check(mount("tmpfs", dir, "tmpfs", 0, "large_folios=1") < 0 && errno == EINVAL,
	      "large_folios=1 is refused with EINVAL");
	errno = 0;
	check(mount("tmpfs", dir, "tmpfs", 0, "large_folioz") < 0 && errno == EINVAL,
	      "an unknown option is refused with EINVAL");
}

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

struct swap_files {
	int full, partial;
};

#define SWAP_FULL (48 * MB)
#define SWAP_PARTIAL (16 * MB)

static void write_swap_files(void *arg)
{
	struct swap_files *f = arg;

	for (long o = 0; o < SWAP_FULL; o += 64 * KB)
		pwrite_pattern(f->full, o, 64 * KB, o);
	if (fallocate(f->partial, 0, 0, SWAP_PARTIAL))
		die("fallocate");
	for (long o = 0; o < SWAP_PARTIAL; o += 8 * KB)
		pwrite_pattern(f->partial, o, PAGE, o);
}

/*
 * Large-folio files, full and partially written, pushed to swap on zram by
 * a memory cgroup smaller than the data, then read back.
 */
static void swap_test(const char *dir)
{
	struct swap_files f;
	long swapped;
	bool ok = true;

	if (!check(meminfo_kb("SwapTotal:") > 0, "swap is configured"))
		return;
	f.full = open_new(dir, "swap-full");
	f.partial = open_new(dir, "swap-partial");
	check(run_in_memcg("24M", write_swap_files, &f, &swapped),
	      "writer in a 24M memory cgroup wrote 64M");
	check(swapped > 0, "the cgroup pushed %ld KiB to swap", swapped / KB);

	for (long o = 0; o < SWAP_FULL && ok; o += 64 * KB)
		ok = has_pattern(f.full, o, 64 * KB, o, o);
	check(ok, "fully written file reads back byte for byte");
	check(seek(f.full, 0, SEEK_HOLE) == SWAP_FULL, "and SEEK_HOLE finds no hole in it");
	ok = true;
	for (long o = 0; o < SWAP_PARTIAL && ok; o += 8 * KB)
		ok = has_pattern(f.partial, o, PAGE, o, o) && is_zero(f.partial, o + PAGE, PAGE) &&
		     seek(f.partial, o, SEEK_DATA) == o;
	check(ok, "partially written file: every written block is data and reads back, "
	      "every unwritten one reads zeroes");
	close(f.full);
	close(f.partial);
}

void folio_tests(const char *large, const char *plain, const char *huge,
		 unsigned int seed, long ops)
{
	test_orders(large);
	test_default_orders(plain, "default mount", 0);
	test_partial_block(large);
	test_short_copy(large);
	test_punch(large);
	test_splice(large);
	test_mmap(large);
	test_huge_always(huge);
	test_read_folios(huge, large);
	test_anon_mthp();
	swap_test(large);
	random_ops_test(large, "large_folios", seed, ops);
	random_ops_test(huge, "huge=always", seed, ops);
	random_ops_test(plain, "default", seed, ops);
}
