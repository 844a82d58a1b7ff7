// SPDX-License-Identifier: GPL-2.0
/*
 * The end of a file, as a mapping and fallocate see it:
 * - a load past EOF gets SIGBUS on a large_folios mount however a folio
 *   came to span EOF (fallocate then a write, a short copy, the truncation
 *   of a folio a pipe holds, MADV_COLLAPSE), as on a default mount; a
 *   huge=always mount without large_folios still maps its PMD-sized folio
 *   across EOF, as stock 6.12 does;
 * - fallocate over a partially written folio leaves its unwritten blocks
 *   holes (SEEK_HOLE, zeroes), as it leaves the pages around a written
 *   base page, and when it fails for ENOSPC its undo keeps the folio.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

static sigjmp_buf sigbus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(sigbus_jmp, 1);
}

/* Does a load at p raise SIGBUS? */
static bool load_sigbus(const volatile char *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	volatile bool bus = false;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(sigbus_jmp, 1))
		bus = true;
	else
		(void)*p;
	sigaction(SIGBUS, &old, NULL);
	return bus;
}

/*
 * The file's first 2M mapped at a PMD-aligned address, its first page
 * loaded (which maps the folio there, with a PMD where one may): does a
 * load at 1.5M, past EOF, raise SIGBUS?
 */
static bool sigbus_past_eof(int fd)
{
	char *area, *map = mmap_pmd(fd, &area);
	bool bus;

	(void)*(volatile char *)map;
	bus = load_sigbus(map + MB + MB / 2);
	munmap(area, 2 * PMD);
	return bus;
}

static long size_of(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		die("fstat");
	return st.st_size;
}

/* fallocate(KEEP_SIZE) 2M, then 4K written: a 2M folio, i_size 4K */
static void fallocated_folio(const char *dir, const char *name, bool expect_bus)
{
	int fd = open_new(dir, name);
	bool bus;

	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, PMD))
		die("fallocate");
	pwrite_pattern(fd, 0, PAGE, 90);
	bus = sigbus_past_eof(fd);
	check(folio_order_at(fd, 0, NULL) == 9 && bus == expect_bus,
	      "%s: fallocate 2M, pwrite 4K: a load at 1.5M past EOF %s", name,
	      bus ? "raises SIGBUS" : "reads the PMD-mapped folio (stock's exception)");
	close(fd);
}

/* A 2M write whose source's second MiB is PROT_NONE: 1M written */
static void short_copy_folio(const char *dir)
{
	int fd = open_new(dir, "eof-short");
	char *src = mmap(NULL, PMD, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ssize_t n;

	if (src == MAP_FAILED)
		die("mmap");
	fill(src, MB, 91);
	mprotect(src + MB, MB, PROT_NONE);
	n = pwrite(fd, src, PMD, 0);
	check(n == MB && size_of(fd) == MB && has_pattern(fd, 0, MB, 0, 91),
	      "large_folios: a 2M write from a source whose second MiB is PROT_NONE writes 1M (%zd)",
	      n);
	check(folio_order_at(fd, 0, NULL) == 9 && sigbus_past_eof(fd),
	      "large_folios: its 2M folio spans EOF, and a load at 1.5M raises SIGBUS");
	munmap(src, PMD);
	close(fd);
}

/* 2M written, 4K of it spliced into a pipe that holds the folio, truncated to 1M */
static void held_folio_truncated(const char *dir)
{
	int fd = open_new(dir, "eof-held");
	int pipefd[2];
	loff_t off = 0;

	pwrite_pattern(fd, 0, PMD, 92);
	if (pipe(pipefd) || splice(fd, &off, pipefd[1], NULL, PAGE, 0) != PAGE)
		die("splice");
	if (ftruncate(fd, MB))
		die("ftruncate");
	check(folio_order_at(fd, 0, NULL) == 9 && sigbus_past_eof(fd),
	      "large_folios: 2M written, a pipe holding its folio, truncated to 1M: the folio "
	      "stays whole, and a load at 1.5M raises SIGBUS");
	close(pipefd[0]);
	close(pipefd[1]);
	close(fd);
}

/* 1M written, its 2M range collapsed by MADV_COLLAPSE */
static void collapsed_folio(const char *dir)
{
	int fd = open_new(dir, "eof-collapse");
	char *area, *map;
	int r;
	bool bus;

	pwrite_pattern(fd, 0, MB, 93);
	map = mmap_pmd(fd, &area);
	(void)*(volatile char *)map;
	r = madvise(map, PMD, MADV_COLLAPSE);
	bus = load_sigbus(map + MB + MB / 2);
	munmap(area, 2 * PMD);
	if (r)
		diag("MADV_COLLAPSE failed: %m");
	check(!r && folio_order_at(fd, 0, NULL) == 9 && bus && has_pattern(fd, 0, MB, 0, 93),
	      "large_folios: 1M written, MADV_COLLAPSE of its 2M: one 2M folio, and a load "
	      "at 1.5M raises SIGBUS");
	close(fd);
}

static void test_sigbus_past_eof(const char *large, const char *plain, const char *huge,
				 const char *hugelarge)
{
	int fd = open_new(plain, "eof-plain");

	pwrite_pattern(fd, 0, PAGE, 94);
	check(sigbus_past_eof(fd), "default mount: pwrite 4K: a load at 1.5M raises SIGBUS");
	close(fd);
	fallocated_folio(large, "large_folios", true);
	fallocated_folio(hugelarge, "huge=always,large_folios", true);
	fallocated_folio(huge, "huge=always", false);
	short_copy_folio(large);
	held_folio_truncated(large);
	collapsed_folio(large);
}

static long blocks_of(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		die("fstat");
	return st.st_blocks;
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

void eof_tests(const char *large, const char *plain, const char *huge, const char *hugelarge)
{
	test_sigbus_past_eof(large, plain, huge, hugelarge);
	fallocate_over_partial(huge, "huge=always");
	fallocate_over_partial(hugelarge, "huge=always,large_folios");
	fallocate_over_partial(plain, "default mount");
	fallocate_undo_keeps_partial();
}
