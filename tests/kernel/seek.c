// SPDX-License-Identifier: GPL-2.0
/*
 * The per-block uptodate state of a large folio, as SEEK_DATA/SEEK_HOLE,
 * read(), mmap and mincore() see it: a block is data once written
 * (also by a sub-block write, which zeroes the rest of its block, or by a
 * short copy, which marks only what it copied), a hole until then, and
 * reads as zeroes; a fully written folio is uptodate; a mapping shows the
 * data and zeroes and makes the folio uptodate (all data, as documented);
 * mincore() calls the written pages of a partial folio resident and the
 * unwritten ones not, also while another process takes the folio lock
 * over and over.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib.h"

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

/* ---- mincore() sees the written pages of a partial folio ---- */

static void test_mincore(const char *huge)
{
	long before = shmem_allocs(2048);
	int fd = open_new(huge, "mincore");
	unsigned char vec[3] = { 9, 9, 9 };
	char *map;

	pwrite_pattern(fd, 0, PAGE, 50);
	pwrite_pattern(fd, 8 * KB, PAGE, 51);
	check(shmem_allocs(2048) - before == 1, "huge=always: the two 4K writes share one 2M folio");
	map = mmap(NULL, 12 * KB, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	check(!mincore(map, 12 * KB, vec), "mincore");
	check((vec[0] & 1) == 1 && (vec[1] & 1) == 0 && (vec[2] & 1) == 1,
	      "mincore of written, unwritten, written page: [1,0,1] ([%d,%d,%d])",
	      vec[0] & 1, vec[1] & 1, vec[2] & 1);
	munmap(map, 12 * KB);
	close(fd);
}

/*
 * mincore() of a written and an unwritten page of a partially uptodate
 * folio while another process takes the folio lock over and over
 * (lseek(SEEK_DATA) scans the folio's blocks under it, read() takes it for
 * the page): resident and not resident every time.  mincore() may not
 * take the lock; trying it and calling the folio resident while it was
 * busy made the unwritten page read resident at random, and calling it not
 * resident instead made the written page read not resident (an
 * independent review: 1.4 million of 2 million calls on huge=always).
 */
static void test_mincore_contended(const char *huge)
{
	int fd = open_new(huge, "mincore-busy");
	long calls, written_out = 0, unwritten_in = 0;
	volatile long *turns;
	unsigned char vec[2];
	char *map, buf[PAGE];
	pid_t child;

	if (ftruncate(fd, PMD))
		die("ftruncate");
	pwrite_pattern(fd, 0, PAGE, 60);
	check(seek(fd, 0, SEEK_HOLE) == PAGE, "huge=always: 4K written into a 2M folio (SEEK_HOLE %lld)",
	      (long long)seek(fd, 0, SEEK_HOLE));
	/* Mapped, never touched: a fault would make the folio uptodate */
	map = mmap(NULL, PMD, PROT_READ, MAP_SHARED, fd, 0);
	turns = mmap(NULL, sizeof(*turns), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || turns == MAP_FAILED)
		die("mmap");
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		for (;;) {
			lseek(fd, PAGE, SEEK_DATA);
			if (pread(fd, buf, PAGE, 0) != PAGE)
				_exit(1);
			(*turns)++;
		}
	}
	/* Until the other process has taken the lock 5,000 times over */
	for (calls = 0; *turns < 5000 && calls < 2000000; calls++) {
		if (mincore(map, 2 * PAGE, vec))
			die("mincore");
		written_out += !(vec[0] & 1);
		unwritten_in += vec[1] & 1;
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	check(*turns >= 5000 && written_out == 0 && unwritten_in == 0,
	      "mincore while another process locks the folio %ld times: the written page resident "
	      "and the unwritten one not, in all %ld calls (%ld and %ld not so)",
	      *turns, calls, written_out, unwritten_in);
	munmap((void *)turns, sizeof(*turns));
	munmap(map, PMD);
	close(fd);
}

void seek_tests(const char *large, const char *huge)
{
	test_partial_block(large);
	test_short_copy(large);
	test_mmap(large);
	test_mincore(huge);
	test_mincore_contended(huge);
}
