// SPDX-License-Identifier: GPL-2.0
/*
 * Regression tests for what an independent review of the series found
 * after the issue-10 fixes: a partially uptodate folio taken for a pin by
 * F_SEAL_WRITE, and MADV_COLLAPSE mapping a folio that is not uptodate;
 * khugepaged zeroing such a folio without mapping it (random tester); and
 * mincore() answering by who held the folio lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define THP "/sys/kernel/mm/transparent_hugepage/"
#define SHMEM_ENABLED THP "shmem_enabled"
#define KHUGEPAGED THP "khugepaged/"

/*
 * A memfd (internal mount, huge pages per shmem_enabled) written 4K into
 * a 2M folio: the block bitmap holds a folio reference that is not a pin.
 */
static void test_seal_partial(void)
{
	char saved[32], buf[PAGE];
	int fd, ret;

	thp_setting(SHMEM_ENABLED, saved, sizeof(saved));
	sysfs_write(SHMEM_ENABLED, "always");
	fd = memfd_create("seal", MFD_ALLOW_SEALING);
	memset(buf, 'A', sizeof(buf));
	if (fd < 0 || ftruncate(fd, PMD) || pwrite(fd, buf, PAGE, 0) != PAGE)
		die("memfd");
	/* Not mapped to look at it: a fault would make the folio uptodate */
	check(seek(fd, 0, SEEK_HOLE) == PAGE,
	      "memfd: 4K written into a 2M folio, the rest a hole (SEEK_HOLE %lld)",
	      (long long)seek(fd, 0, SEEK_HOLE));
	ret = fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE);
	check(ret == 0, "F_SEAL_WRITE on it succeeds: the bitmap's reference is no pin (%s)",
	      ret ? strerror(errno) : "ok");
	check(pwrite(fd, buf, PAGE, PAGE) < 0, "and the seal holds: a write fails");
	close(fd);
	sysfs_write(SHMEM_ENABLED, saved);
}

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

void review_tests(const char *huge)
{
	test_seal_partial();
	test_collapse_partial(huge);
	test_khugepaged_partial(huge);
	test_mincore_contended(huge);
}
