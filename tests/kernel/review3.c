// SPDX-License-Identifier: GPL-2.0
/*
 * Regression tests for what the third review of the series found: a write
 * that a seal or ENOSPC refused still zeroed the bytes a mapping stored
 * past EOF; extending a file read back from swap a page lying wholly past
 * the old EOF; and a split that was bound to fail zeroed a partially
 * written folio first, leaving it whole with its unwritten blocks made
 * data.  Then what the review of those fixes found: pages past EOF that a
 * split cut off from a PMD-mapped folio kept the stored bytes when the
 * file grew, and a collapse zeroed a partially written folio before it
 * could fail.  Each fails on the series before its fix.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* ---- A refused write changes nothing ---- */

/*
 * A file of 100 bytes whose page holds 'X' in bytes 100-299, stored
 * through a shared mapping (past EOF, so not file data).
 */
static void store_past_eof(int fd)
{
	char *map;

	pwrite_pattern(fd, 0, 100, 61);
	map = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	memset(map + 100, 'X', 200);
	munmap(map, PAGE);
}

/* A read-only view of the page, to look at the bytes past EOF */
static char *map_readonly(int fd)
{
	char *map = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);

	if (map == MAP_FAILED)
		die("mmap");
	return map;
}

static bool tail_kept(const char *map)
{
	for (int i = 100; i < 300; i++)
		if (map[i] != 'X')
			return false;
	return true;
}

static void sealed_case(unsigned int seal, const char *name)
{
	int fd = memfd_create("sealed", MFD_ALLOW_SEALING);
	char *map;
	ssize_t ret;

	if (fd < 0)
		die("memfd_create");
	store_past_eof(fd);
	if (fcntl(fd, F_ADD_SEALS, seal))
		die(name);
	map = map_readonly(fd);
	errno = 0;
	ret = pwrite(fd, "x", 1, 5000);
	check(ret < 0 && errno == EPERM && tail_kept(map),
	      "memfd sealed with %s: pwrite past EOF fails with EPERM (%zd, %s) and the "
	      "bytes stored past EOF stay as they were", name, ret, strerror(errno));
	munmap(map, PAGE);
	close(fd);
}

/* A write past EOF on a full mount fails with ENOSPC and changes nothing */
static void nospc_case(const char *opts)
{
	const char *dir = mount_tmpfs("full", opts);
	int fd = open_new(dir, "file"), filler = open_new(dir, "filler");
	char *map, page[PAGE] = "";
	ssize_t ret;

	store_past_eof(fd);
	map = map_readonly(fd);

	while (write(filler, page, PAGE) == PAGE)
		;
	errno = 0;
	ret = pwrite(fd, "x", 1, 2 * PAGE);
	check(ret < 0 && errno == ENOSPC && tail_kept(map),
	      "%s, full: pwrite past EOF fails with ENOSPC (%zd, %s) and the bytes "
	      "stored past EOF stay as they were", opts, ret, strerror(errno));
	munmap(map, PAGE);
	close(filler);
	close(fd);
}

/*
 * A source buffer of one readable page, then one that is not: a write of
 * both past EOF copies the first (a short write that extends the file:
 * the gap reads zeroes); a write from the second alone copies nothing
 * (EFAULT) and changes nothing.
 */
static void fault_cases(const char *dir, const char *name)
{
	int fd = open_new(dir, "efault");
	char *map;
	char *src = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ssize_t ret;

	if (src == MAP_FAILED || mprotect(src + PAGE, PAGE, PROT_NONE))
		die("source buffer");
	store_past_eof(fd);
	map = map_readonly(fd);
	memset(src, 'y', PAGE);
	errno = 0;
	ret = pwrite(fd, src + PAGE, PAGE, 5000);
	check(ret < 0 && errno == EFAULT && tail_kept(map),
	      "%s: pwrite past EOF from an unreadable buffer fails with EFAULT (%zd, %s) "
	      "and the bytes stored past EOF stay as they were", name, ret, strerror(errno));
	ret = pwrite(fd, src, 2 * PAGE, 5000);
	check(ret == PAGE && is_zero(fd, 100, 4900) && map[150] == 0,
	      "%s: a short copy past EOF (%zd of 8K) extends the file: the gap reads zeroes",
	      name, ret);
	munmap(src, 2 * PAGE);
	munmap(map, PAGE);
	close(fd);
}

static void test_refused_write(const char *plain, const char *large)
{
	sealed_case(F_SEAL_WRITE, "F_SEAL_WRITE");
	sealed_case(F_SEAL_GROW, "F_SEAL_GROW");
	sealed_case(F_SEAL_FUTURE_WRITE, "F_SEAL_FUTURE_WRITE");
	nospc_case("size=64k");
	nospc_case("size=64k,large_folios");
	fault_cases(plain, "default");
	fault_cases(large, "large_folios");
}

/* ---- No swap-in for a page past the old EOF ---- */

/* 8K written, the page after it fallocated past EOF, all pushed to swap */
static void swapped_past_eof(void *arg)
{
	int fd = *(int *)arg;

	pwrite_pattern(fd, 0, 2 * PAGE, 62);
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 2 * PAGE, PAGE))
		die("fallocate");
	memcg_reclaim_all();
}

static long pswpin(void)
{
	char line[128];
	long n = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		die("/proc/vmstat");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "pswpin %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

static void swapin_case(const char *dir, const char *name, int how)
{
	static const char *const what[] = { "ftruncate to 16K", "pwrite 1 byte at 20K" };
	int fd = open_new(dir, "swapin-eof");
	long swapped, before, after;
	bool ran = run_in_memcg("max", swapped_past_eof, &fd, &swapped);

	before = pswpin();
	if (how == 0 ? ftruncate(fd, 4 * PAGE) : pwrite(fd, "z", 1, 5 * PAGE) != 1)
		die(what[how]);
	after = pswpin();
	check(ran && swapped >= 3 * PAGE && after == before,
	      "%s: 8K written and the next page fallocated past EOF, all on swap (%ld K), "
	      "%s reads nothing back from swap (pswpin +%ld)",
	      name, swapped / KB, what[how], after - before);
	check(has_pattern(fd, 0, 2 * PAGE, 0, 62) && is_zero(fd, 2 * PAGE, 2 * PAGE),
	      "%s: and the file reads its 8K, then zeroes", name);
	close(fd);
}

static void test_swapin_past_eof(const char *plain, const char *large)
{
	for (int how = 0; how < 2; how++) {
		swapin_case(plain, "default", how);
		swapin_case(large, "large_folios", how);
	}
}

/* ---- Pages a split cut off past EOF are zeroed when the file grows ---- */

/*
 * huge=always: 2M fallocated past EOF, 100 bytes written, the folio
 * PMD-mapped and 4K stored at 1M (past EOF) through the mapping; a page
 * punched at 8K splits the folio, which keeps its pages up to the
 * fallocated end.  Growing the file over 1M must read zeroes there.
 */
static void split_eof_case(const char *huge, int how)
{
	static const char *const what[] = {
		"pwrite 1 byte at 1.5M", "ftruncate to 1.5M", "fallocate to 1.5M",
	};
	int fd = open_new(huge, "split-eof"), order = 0;
	char *area, *map;

	/* Earlier tests leave memory fragmented: compact once if need be */
	for (int tries = 0; tries < 2 && order != 9; tries++) {
		if (tries)
			sysfs_write("/proc/sys/vm/compact_memory", "1");
		if (ftruncate(fd, 0) || fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, PMD))
			die("fallocate");
		pwrite_pattern(fd, 0, 100, 64);
		order = folio_order_at(fd, 0, NULL);
	}
	/* Without a 2M folio there is no PMD mapping, and a store past EOF raises SIGBUS */
	if (!check(order == 9, "huge=always: a 2M folio for the file (order %d)", order)) {
		close(fd);
		return;
	}
	map = mmap_pmd(fd, &area);
	(void)*(volatile char *)map;
	memset(map + MB, 'X', PAGE);
	munmap(area, 2 * PMD);
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2 * PAGE, PAGE))
		die("punch");
	if (how == 0 ? pwrite(fd, "Y", 1, 3 * MB / 2) != 1 :
	    how == 1 ? ftruncate(fd, 3 * MB / 2) : fallocate(fd, 0, 0, 3 * MB / 2))
		die(what[how]);
	check(has_pattern(fd, 0, 100, 0, 64) && is_zero(fd, 100, 3 * MB / 2 - 100),
	      "huge=always: 4K stored at 1M past EOF through a PMD mapping, the folio split by a "
	      "punch, then %s: the gap reads zeroes", what[how]);
	close(fd);
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

/* ---- A split bound to fail leaves a partial folio partial ---- */

struct reader {
	int fd;
	char *buf;
	ssize_t ret;
};

/* Reads page 0 into a buffer whose first touch waits on userfaultfd */
static void *read_page0(void *arg)
{
	struct reader *r = arg;

	r->ret = pread(r->fd, r->buf, PAGE, 0);
	return NULL;
}

/*
 * 4K written into a 2M folio on huge=always; a hole punched at page 100
 * while a read of page 0 holds a reference to the folio (it waits in the
 * copy to user space, on a userfaultfd page).  The split cannot succeed:
 * the folio must stay partial, so SEEK_HOLE from 4K still answers 4K.
 */
static void test_failed_split(const char *huge)
{
	int fd = open_new(huge, "failed-split");
	long uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct uffdio_zeropage zero = { 0 };
	struct uffd_msg msg;
	struct reader r = { .fd = fd };
	struct pollfd pfd = { .fd = (int)uffd, .events = POLLIN };
	pthread_t thread;
	char want[PAGE];
	off_t hole;

	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
		die("userfaultfd");
	r.buf = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r.buf == MAP_FAILED)
		die("mmap");
	reg.range.start = (uintptr_t)r.buf;
	reg.range.len = PAGE;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	if (ftruncate(fd, PMD))
		die("ftruncate");
	pwrite_pattern(fd, 0, PAGE, 63);
	check(seek(fd, PAGE, SEEK_HOLE) == PAGE, "huge=always: 4K written into a 2M folio");

	if (pthread_create(&thread, NULL, read_page0, &r))
		die("pthread_create");
	/* The reader is in its copy, holding the folio, once its fault arrives */
	if (poll(&pfd, 1, 60000) != 1 || read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		die("userfaultfd fault");
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100 * PAGE, PAGE))
		die("punch");
	hole = seek(fd, PAGE, SEEK_HOLE);
	zero.range = reg.range;
	if (ioctl(uffd, UFFDIO_ZEROPAGE, &zero) || pthread_join(thread, NULL))
		die("UFFDIO_ZEROPAGE");
	check(hole == PAGE,
	      "a hole punched at page 100 while a read holds the folio: the split fails and "
	      "the unwritten blocks stay holes (SEEK_HOLE from 4K %lld)", (long long)hole);
	fill(want, PAGE, 63);
	check(r.ret == PAGE && !memcmp(r.buf, want, PAGE) &&
	      has_pattern(fd, 0, PAGE, 0, 63) && is_zero(fd, PAGE, PMD - PAGE),
	      "the read gets its page (%zd), and the file reads its 4K, then zeroes", r.ret);
	munmap(r.buf, PAGE);
	close((int)uffd);
	close(fd);
}

void review3_tests(const char *large, const char *plain, const char *huge)
{
	test_refused_write(plain, large);
	test_swapin_past_eof(plain, large);
	for (int how = 0; how < 3; how++)
		split_eof_case(huge, how);
	test_failed_split(huge);
	test_collapse_leaves_partial(large);
}
