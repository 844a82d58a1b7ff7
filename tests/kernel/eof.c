// SPDX-License-Identifier: GPL-2.0
/*
 * The end of a file, as a mapping sees it:
 * - bytes stored past EOF through a mapping read as zeroes once a write,
 *   ftruncate or fallocate grows the file over them, on every mount kind,
 *   also through a PMD mapping, and also in the pages past EOF that a
 *   punch split off a PMD-mapped folio;
 * - a load past EOF gets SIGBUS on a large_folios mount however a folio
 *   came to span EOF (fallocate then a write, a short copy, the truncation
 *   of a folio a pipe holds, MADV_COLLAPSE), as on a default mount; a
 *   huge=always mount without large_folios still maps its PMD-sized folio
 *   across EOF, as stock 6.12 does.
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

/* ---- bytes stored past EOF through mmap read as zeroes once the file grows ---- */

static void stale_case(const struct mnt *m, int how)
{
	static const char *const what[] = {
		"pwrite 1 byte at 8K", "ftruncate 8K", "fallocate 0..8K",
	};
	int fd = open_new(m->dir, "stale");
	char *map;

	pwrite_pattern(fd, 0, 100, 52);
	map = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	memset(map + 200, 'X', PAGE - 200);
	munmap(map, PAGE);
	if (how == 0 ? pwrite(fd, "Y", 1, 8 * KB) != 1 :
	    how == 1 ? ftruncate(fd, 8 * KB) : fallocate(fd, 0, 0, 8 * KB))
		die(what[how]);
	check(size_of(fd) == 8 * KB + (how == 0) && has_pattern(fd, 0, 100, 0, 52) &&
	      is_zero(fd, 100, 8 * KB - 100) && (how || is_byte(fd, 8 * KB, 1, 'Y')),
	      "%s: 100-byte file, 'X' stored past EOF through mmap, %s: the gap reads zeroes",
	      m->name, what[how]);
	close(fd);
}

static void test_stale_pmd(const char *huge)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int fd = open_new(huge, "stale-pmd");
	char *area, *map;
	volatile bool bus = false;

	pwrite_pattern(fd, 0, 100, 53);
	map = mmap_pmd(fd, &area);
	(void)*(volatile char *)map;
	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(sigbus_jmp, 1))
		bus = true;
	else
		memset(map + MB, 'X', PAGE);
	sigaction(SIGBUS, &old, NULL);
	munmap(area, 2 * PMD);
	if (bus)
		diag("huge=always: the store at 1M past EOF raised SIGBUS: not PMD-mapped");
	check(!ftruncate(fd, 2 * MB), "ftruncate to 2M");
	check(is_zero(fd, 100, 2 * MB - 100) && has_pattern(fd, 0, 100, 0, 53),
	      "huge=always: a store at 1M past EOF through a %s mapping reads zero after ftruncate 2M",
	      bus ? "(SIGBUS: not PMD)" : "PMD");
	close(fd);
}

static void test_stale(const struct mnt *mounts, int n, const char *huge)
{
	for (int i = 0; i < n; i++)
		for (int how = 0; how < 3; how++)
			stale_case(&mounts[i], how);
	test_stale_pmd(huge);
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

void eof_zeroing_tests(const struct mnt *mounts, int n, const char *huge)
{
	test_stale(mounts, n, huge);
	for (int how = 0; how < 3; how++)
		split_eof_case(huge, how);
}

/* ---- SIGBUS past EOF ---- */

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

void eof_sigbus_tests(const char *large, const char *plain, const char *huge,
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
