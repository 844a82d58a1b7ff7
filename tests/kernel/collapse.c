// SPDX-License-Identifier: GPL-2.0
/*
 * khugepaged and MADV_COLLAPSE over partially written folios:
 * - MADV_COLLAPSE of a range whose 2M folio is partially written maps it
 *   with a PMD only after zeroing its unwritten blocks, which are data from
 *   then on: no stale memory shows, and a store through it stays;
 * - khugepaged, which only retracts page tables there, leaves a partially
 *   written folio partial;
 * - MADV_COLLAPSE over a partially written 1M folio (large_folios) fails
 *   with EINVAL and leaves its unwritten blocks holes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lib.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define THP "/sys/kernel/mm/transparent_hugepage/"
#define KHUGEPAGED THP "khugepaged/"

/*
 * MADV_COLLAPSE of a range whose 2M folio is already in the page cache,
 * written 4K of, maps that folio with a PMD: its unwritten blocks must be
 * zeroed first and count as data, so a store through the mapping stays.
 */
static void test_collapse_partial(const char *huge)
{
	size_t junk_len = 64 * MB;
	char *junk, *area, *p, *q, rb;
	int fd = open_new(huge, "collapse");
	bool stale = false;
	long i;
	int ret;

	/* Leave freed memory that is not zero for the folio to come from */
	junk = mmap(NULL, junk_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (junk == MAP_FAILED)
		die("mmap");
	memset(junk, 0x5a, junk_len);
	munmap(junk, junk_len);

	if (ftruncate(fd, 2 * PMD) || pwrite(fd, "A", 1, 0) != 1)
		die("collapse file");
	area = mmap(NULL, 3 * PMD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p = (char *)(((uintptr_t)area + PMD - 1) & ~(PMD - 1));
	p = mmap(p, 2 * PMD, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	if (area == MAP_FAILED || p == MAP_FAILED)
		die("mmap");
	/* A page table for the range, so that the collapse installs a PMD */
	rb = *(volatile char *)(p + PMD);
	ret = madvise(p, PMD, MADV_COLLAPSE);
	check(ret == 0, "MADV_COLLAPSE of the written 2M folio (%s)", ret ? strerror(errno) : "ok");
	for (i = PAGE; i < PMD; i++)
		stale |= p[i] != 0;
	check(!stale, "the mapping shows zeroes where nothing was written, no stale memory");
	p[2 * PAGE] = 'B';
	q = mmap(NULL, PMD, PROT_READ, MAP_SHARED, fd, 0);
	if (q == MAP_FAILED)
		die("mmap");
	rb = *(volatile char *)(q + 100);
	check(p[2 * PAGE] == 'B' && pread(fd, &rb, 1, 2 * PAGE) == 1 && rb == 'B',
	      "a store through it survives a fault through a second mapping, and read() sees it");
	check(seek(fd, 0, SEEK_HOLE) == 2 * PMD, "the whole folio is data now (SEEK_HOLE %lld)",
	      (long long)seek(fd, 0, SEEK_HOLE));
	munmap(q, PMD);
	munmap(area, 3 * PMD);
	close(fd);
}

/*
 * khugepaged finds a 2M folio already in a mapped file's page cache and
 * only retracts page tables (it maps nothing): it must leave a partially
 * written folio partial.  Zeroing it there made the unwritten pages read
 * as data (SEEK_DATA, mincore) at a time khugepaged chose: the random
 * tester's case 101089345 (seed 28268) saw page 512 turn resident.
 */
static void test_khugepaged_partial(const char *huge)
{
	char enabled[32], sleep_ms[32];
	int fd = open_new(huge, "khugepaged");
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	long scans, waited;
	char *area, *p;
	bool scanned;

	if (ftruncate(fd, 2 * PMD) || pwrite(fd, "A", 1, PMD) != 1)
		die("khugepaged file");
	thp_setting(THP "enabled", enabled, sizeof(enabled));
	snprintf(sleep_ms, sizeof(sleep_ms), "%ld", file_long(KHUGEPAGED "scan_sleep_millisecs"));
	sysfs_write(THP "enabled", "always");
	sysfs_write(KHUGEPAGED "scan_sleep_millisecs", "0");
	/* A PMD-aligned shared mapping of both folios, never touched */
	area = mmap(NULL, 3 * PMD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p = (char *)(((uintptr_t)area + PMD - 1) & ~(PMD - 1));
	if (area == MAP_FAILED ||
	    mmap(p, 2 * PMD, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
		die("mmap");
	/*
	 * Two full passes: one that starts after the mapping existed.  Polled
	 * every 10 ms; 30,000 polls (5 minutes) is a hang guard, not a bound.
	 */
	scans = file_long(KHUGEPAGED "full_scans");
	for (waited = 0; file_long(KHUGEPAGED "full_scans") < scans + 2 && waited < 30000; waited++)
		nanosleep(&tick, NULL);
	scanned = check(waited < 30000, "khugepaged made two full scans with the file mapped");
	if (scanned)
		check(seek(fd, PMD, SEEK_HOLE) == PMD + PAGE,
		      "the second folio, 1 byte written, still has holes after them (SEEK_HOLE %lld)",
		      (long long)seek(fd, PMD, SEEK_HOLE));
	munmap(area, 3 * PMD);
	close(fd);
	sysfs_write(KHUGEPAGED "scan_sleep_millisecs", sleep_ms);
	sysfs_write(THP "enabled", enabled);
}

/*
 * MADV_COLLAPSE of a range holding a partially written 1M folio
 * (large_folios): khugepaged's collapse leaves the folio alone rather than
 * zero its unwritten blocks into data before a collapse that may fail.
 */
static void test_collapse_leaves_partial(const char *large)
{
	int fd = open_new(large, "collapse-partial");
	char *area, *map;
	int ret;

	if (fallocate(fd, 0, 0, MB))
		die("fallocate");
	pwrite_pattern(fd, 0, PAGE, 65);
	if (ftruncate(fd, PMD))
		die("ftruncate");
	map = mmap_pmd(fd, &area);
	errno = 0;
	ret = madvise(map, PMD, MADV_COLLAPSE);
	check(ret < 0 && errno == EINVAL && seek(fd, 0, SEEK_HOLE) == PAGE,
	      "large_folios: MADV_COLLAPSE over a 1M folio written 4K fails (%d, %s) and "
	      "leaves its unwritten blocks holes (SEEK_HOLE %lld)",
	      ret, strerror(errno), (long long)seek(fd, 0, SEEK_HOLE));
	munmap(area, 2 * PMD);
	close(fd);
}

void collapse_tests(const char *large, const char *huge)
{
	test_collapse_partial(huge);
	test_khugepaged_partial(huge);
	test_collapse_leaves_partial(large);
}
