// SPDX-License-Identifier: GPL-2.0
/*
 * Folio sizes: the orders write() and fallocate() get on a large_folios
 * mount (aligned, unaligned and short ranges; fallocate of 2M and 8M),
 * stock's orders on default and huge=always mounts, anonymous shmem mTHP
 * from the per-size shmem_enabled, shmem_enabled=deny turning
 * large_folios off too, and st_blksize: PAGE_SIZE on large_folios mounts,
 * the PMD hint on huge= mounts without large_folios.  Orders are read
 * from /proc/kpageflags and the per-size shmem_alloc counters.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib.h"

#define SHMEM_ENABLED "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

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

/* ---- shmem_enabled=deny turns large_folios off too ---- */

static void test_deny(const char *large)
{
	long before = mthp_stat_sum("shmem_alloc");
	char saved[32];
	int fd;

	thp_setting(SHMEM_ENABLED, saved, sizeof(saved));
	sysfs_write(SHMEM_ENABLED, "deny");
	fd = open_new(large, "deny");
	pwrite_pattern(fd, 0, 2 * MB, 49);
	check(mthp_stat_sum("shmem_alloc") - before == 0,
	      "shmem_enabled=deny: a 2M write on large_folios allocates no large folio (%ld)",
	      mthp_stat_sum("shmem_alloc") - before);
	check(folio_order_at(fd, 0, NULL) == 0 && folio_order_at(fd, MB, NULL) == 0,
	      "shmem_enabled=deny: order-0 folios at 0 and 1M");
	close(fd);
	sysfs_write(SHMEM_ENABLED, saved);
	before = shmem_allocs(2048);
	fd = open_new(large, "deny");
	pwrite_pattern(fd, 0, 2 * MB, 49);
	check(shmem_allocs(2048) - before == 1, "shmem_enabled=%s again: a 2M folio", saved);
	close(fd);
}

/* ---- st_blksize keeps the PMD hint on huge= mounts without large_folios ---- */

static void test_blksize(const struct mnt *mounts, int n, const long *want)
{
	for (int i = 0; i < n; i++) {
		int fd = open_new(mounts[i].dir, "blksize");
		struct stat st;

		if (fstat(fd, &st))
			die("fstat");
		check(st.st_blksize == want[i], "%s: st_blksize is %ld (%ld)", mounts[i].name,
		      want[i], (long)st.st_blksize);
		close(fd);
	}
}

void orders_tests(const char *large, const char *plain, const char *huge,
		  const struct mnt *mounts, int n)
{
	const long blksize[] = { PAGE, PMD, PAGE, PAGE };	/* main()'s mounts, in order */

	test_orders(large);
	test_default_orders(plain, "default mount", 0);
	test_huge_always(huge);
	test_anon_mthp();
	test_deny(large);
	test_blksize(mounts, n, blksize);
}
