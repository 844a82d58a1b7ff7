// SPDX-License-Identifier: GPL-2.0
/*
 * Swap: large-folio files, fully and partially written, pushed to swap on
 * zram by a memory cgroup smaller than the data, read back byte for byte
 * with every written block data and every unwritten one zeroes; and
 * extending a file (truncate or write) over a swapped page that lies
 * wholly past the old EOF reads nothing back from swap.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "lib.h"

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

static void swapin_case(const char *dir, const char *name, int how)
{
	static const char *const what[] = { "ftruncate to 16K", "pwrite 1 byte at 20K" };
	int fd = open_new(dir, "swapin-eof");
	long swapped, before, after;
	bool ran = run_in_memcg("max", swapped_past_eof, &fd, &swapped);

	before = vmstat_sum("pswpin");
	if (how == 0 ? ftruncate(fd, 4 * PAGE) : pwrite(fd, "z", 1, 5 * PAGE) != 1)
		die(what[how]);
	after = vmstat_sum("pswpin");
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

void swap_tests(const char *large, const char *plain)
{
	swap_test(large);
	test_swapin_past_eof(plain, large);
}
