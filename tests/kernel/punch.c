// SPDX-License-Identifier: GPL-2.0
/*
 * Hole punching, truncation and fallocate inside large folios:
 * - a punch splits an uptodate folio and SEEK_HOLE/SEEK_DATA see exactly
 *   the hole; a punch into a partially written folio splits it, zeroing
 *   its unwritten blocks first, which makes them data (as in stock 6.12);
 *   a punch inside a block zeroes it and keeps it data;
 * - punch and truncate free what they remove: st_blocks and Shmem as
 *   stock shows them on every mount kind, and back to the baseline after
 *   unlink;
 * - a split bound to fail (a read holds the folio) leaves a partially
 *   written folio partial;
 * - fallocate over a partially written folio leaves its unwritten blocks
 *   holes (SEEK_HOLE, zeroes), as it leaves the pages around a written
 *   base page, and when it fails for ENOSPC its undo keeps the folio.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib.h"

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

/* ---- punch and truncate free what they remove ---- */

/*
 * Shmem of /proc/meminfo after folding the per-CPU counters: exact but
 * for other shmem users, and the guest has none while the tests run.
 */
static long shmem_kb(void)
{
	sysfs_write("/proc/sys/vm/stat_refresh", "1");
	return meminfo_kb("Shmem:");
}

/* Eight pages: slack for stray kernel use; below the 60K a 64K folio leaks. */
#define SHMEM_SLACK_KB 32

static void leak_case(const struct mnt *m, int how)
{
	static const char *const what[] = {
		"ftruncate 4M, write 4K at 0, punch 4K..2M",
		"ftruncate 4M, write 4K at 0, ftruncate 4K",
		"fallocate 64K, write 4K at 0, punch 4K..64K",
	};
	long base = shmem_kb(), grown, left;
	char path[512];
	int fd;

	fd = open_new(m->dir, "leak");
	if (how < 2 ? ftruncate(fd, 4 * MB) : fallocate(fd, 0, 0, 64 * KB))
		die("extend");
	pwrite_pattern(fd, 0, PAGE, 43 + how);
	if (how == 1 ? ftruncate(fd, PAGE) :
	    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, PAGE,
		      (how == 0 ? 2 * MB : 64 * KB) - PAGE))
		die("punch/truncate");
	check(blocks_of(fd) == 8, "%s: %s: st_blocks is 8 (%ld)", m->name, what[how], blocks_of(fd));
	grown = shmem_kb() - base;
	check(labs(grown - 4) <= SHMEM_SLACK_KB,
	      "%s: %s: Shmem grew by 4 kB (%ld kB)", m->name, what[how], grown);
	check(has_pattern(fd, 0, PAGE, 0, 43 + how), "%s: %s: the data reads back",
	      m->name, what[how]);
	close(fd);
	snprintf(path, sizeof(path), "%s/leak", m->dir);
	if (unlink(path))
		die("unlink");
	left = shmem_kb() - base;
	check(labs(left) <= SHMEM_SLACK_KB, "%s: %s: unlinked, Shmem back to its baseline (%+ld kB)",
	      m->name, what[how], left);
}

static void test_no_leak(const struct mnt *mounts, int n)
{
	for (int i = 0; i < n; i++)
		for (int how = 0; how < 3; how++)
			leak_case(&mounts[i], how);
}

/*
 * The deliberate consequence: a partially written folio that is split has
 * its unwritten blocks zeroed first, and they are data from then on.
 */
static void test_split_makes_data(const char *huge)
{
	int fd = open_new(huge, "split-data");

	if (ftruncate(fd, 4 * MB))
		die("ftruncate");
	pwrite_pattern(fd, 0, PAGE, 54);
	pwrite_pattern(fd, MB, PAGE, 55);
	check(seek(fd, 0, SEEK_HOLE) == PAGE && seek(fd, PAGE, SEEK_DATA) == MB,
	      "huge=always: 4K written at 0 and 1M of a 2M folio: exact holes before the split");
	check(!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 8 * KB, PAGE),
	      "punch 8K..12K");
	check(blocks_of(fd) == (2 * MB - PAGE) / 512,
	      "the split freed the punched page only (st_blocks %ld)", blocks_of(fd));
	check(seek(fd, 0, SEEK_HOLE) == 8 * KB && seek(fd, 8 * KB, SEEK_DATA) == 12 * KB &&
	      seek(fd, 12 * KB, SEEK_HOLE) == 2 * MB,
	      "after the split the unwritten pages are data: holes at 8K..12K and from 2M "
	      "(SEEK_HOLE from 0: %ld, from 12K: %ld)", seek(fd, 0, SEEK_HOLE),
	      seek(fd, 12 * KB, SEEK_HOLE));
	check(has_pattern(fd, 0, PAGE, 0, 54) && is_zero(fd, PAGE, MB - PAGE) &&
	      has_pattern(fd, MB, PAGE, MB, 55) && is_zero(fd, MB + PAGE, MB - PAGE),
	      "the data reads back, everything else zeroes");
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

/* 4K written at 0, i_size 2M, fallocate over the 2M: holes stay holes */
static void fallocate_over_partial(const char *dir, const char *name)
{
	int fd = open_new(dir, "falloc-partial");
	off_t hole;

	pwrite_pattern(fd, 0, PAGE, 95);
	if (ftruncate(fd, PMD) || fallocate(fd, 0, 0, PMD))
		die("fallocate");
	hole = seek(fd, 0, SEEK_HOLE);
	check(hole == PAGE && has_pattern(fd, 0, PAGE, 0, 95) && is_zero(fd, PAGE, PMD - PAGE),
	      "%s: pwrite 4K, ftruncate 2M, fallocate 0..2M: SEEK_HOLE(0) %lld (4096 on a "
	      "default mount), the rest reads zeroes", name, (long long)hole);
	close(fd);
}

/*
 * On a 4M mount, 4K written into a 2M folio; fallocate of 8M fails for
 * ENOSPC and undoes what it added: the written folio stays, its page data
 * and the rest a hole, and nothing else stays allocated.
 */
static void fallocate_undo_keeps_partial(void)
{
	const char *dir = mount_tmpfs("huge-4m", "huge=always,size=4M");
	int fd = open_new(dir, "falloc-undo");
	long before;
	int r;

	pwrite_pattern(fd, 0, PAGE, 96);
	before = blocks_of(fd);
	r = fallocate(fd, 0, 0, 8 * MB);
	check(r && errno == ENOSPC, "huge=always,size=4M: fallocate 8M fails with ENOSPC");
	check(has_pattern(fd, 0, PAGE, 0, 96) && seek(fd, 0, SEEK_HOLE) == PAGE &&
	      blocks_of(fd) == before && before == PMD / 512 && size_of(fd) == PAGE,
	      "its undo keeps the partially written 2M folio: 4K of data, then a hole, "
	      "st_blocks %ld as before (%ld)", blocks_of(fd), before);
	close(fd);
	umount2(dir, MNT_DETACH);
}

void punch_tests(const char *large, const char *plain, const char *huge,
		 const char *hugelarge, const struct mnt *mounts, int n)
{
	test_punch(large);
	test_no_leak(mounts, n);
	test_split_makes_data(huge);
	test_failed_split(huge);
	fallocate_over_partial(huge, "huge=always");
	fallocate_over_partial(hugelarge, "huge=always,large_folios");
	fallocate_over_partial(plain, "default mount");
	fallocate_undo_keeps_partial();
}
