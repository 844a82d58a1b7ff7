// SPDX-License-Identifier: GPL-2.0
/*
 * The huge page shrinker under memory cgroups: a group's reclaim splits
 * the huge folios its files hold past EOF, with kmem accounting and
 * without (cgroup.memory=nokmem), and leaves other groups' alone.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib.h"

#define GROUPS "/sys/fs/cgroup/shmem-shrink"

struct small_files {
	const char *dir;
	const char *prefix;
	int n;
	const char *plain;	/* and then 16M on this mount, unless NULL */
};

/* n files of one page each, the page's pattern seeded by the file's number */
static void write_small_files(void *arg)
{
	const struct small_files *f = arg;
	static char page[PAGE];

	for (int i = 0; i < f->n; i++) {
		char name[32];
		int fd;

		snprintf(name, sizeof(name), "%s%d", f->prefix, i);
		fd = open_new(f->dir, name);
		fill(page, PAGE, 40 + i);
		if (write(fd, page, PAGE) != PAGE)
			_exit(1);
		close(fd);
	}
	if (f->plain) {
		int fd = open_new(f->plain, "s-16m");

		for (long off = 0; off < 16 * MB; off += PAGE)
			if (write(fd, page, PAGE) != PAGE)
				_exit(1);
		close(fd);
	}
}

/* Every file reads back its page; how many still have a PMD folio */
static int check_small_files(const struct small_files *f, bool *data)
{
	int whole = 0;

	*data = true;
	for (int i = 0; i < f->n; i++) {
		char path[512];
		bool uptodate;
		int fd;

		snprintf(path, sizeof(path), "%s/%s%d", f->dir, f->prefix, i);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			die(path);
		*data &= has_pattern(fd, 0, PAGE, 0, 40 + i);
		whole += folio_order_at(fd, 0, &uptodate) == 9;
		close(fd);
		unlink(path);
	}
	return whole;
}

/*
 * Group a, without a limit, writes 8 files of 4K on huge=always: a 2M
 * folio each, nearly all past EOF.  Then its sibling b, 32M without swap,
 * writes 12 such files and 16M on a default mount: 40M, which fits only
 * if at least 5 of its PMD folios are split.  b's reclaim must split its
 * own folios, and only its own.
 */
static void test_group_splits_its_own(const char *plain, const char *huge)
{
	struct small_files a = { huge, "s-a", 8, NULL }, b = { huge, "s-b", 12, plain };
	bool wrote_a, wrote_b, data_a, data_b;
	char path[512];
	int whole_a, whole_b;

	cgroup_siblings(GROUPS, "a", "b");
	sysfs_write(GROUPS "/b/memory.max", "32M");
	sysfs_write(GROUPS "/b/memory.swap.max", "0");
	wrote_a = run_in_cgroup(GROUPS "/a", write_small_files, &a);
	wrote_b = run_in_cgroup(GROUPS "/b", write_small_files, &b);
	whole_a = check_small_files(&a, &data_a);
	whole_b = check_small_files(&b, &data_b);
	check(wrote_a && wrote_b,
	      "huge=always: 8 files of 4K in one group; 12 and 16M more in a 32M sibling "
	      "without swap: no OOM kill");
	check(data_a && data_b, "every small file reads back its page");
	check(whole_a == 8, "the first group's 8 PMD folios were not split (%d left)", whole_a);
	check(whole_b <= 7, "at least 5 of the second group's 12 were (%d left)", whole_b);
	snprintf(path, sizeof(path), "%s/s-16m", plain);
	unlink(path);
	cgroup_siblings_remove(GROUPS, "a", "b");
}

#define OTHERS 100000

/*
 * OTHERS files of 4K, each in an 8K folio whose second page lies past EOF
 * (a write of 8K from a buffer whose second page cannot be read stops
 * after 4K): slack on the shrinklist, charged to the writer's group.
 */
static void write_slack_files(void *dir)
{
	char *src = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (src == MAP_FAILED)
		_exit(1);
	fill(src, PAGE, 70);
	mprotect(src + PAGE, PAGE, PROT_NONE);
	for (int i = 0; i < OTHERS; i++) {
		char name[32];
		int fd;

		snprintf(name, sizeof(name), "o%d", i);
		fd = open_new(dir, name);
		if (pwrite(fd, src, 2 * PAGE, 0) != PAGE)
			_exit(1);
		close(fd);
	}
}

/*
 * A group's reclaim reaches its own slack whatever other groups hold: a
 * group without a limit leaves 100,000 files with 4K past EOF each, on
 * the shrinklist before anything of the next group's; then a 32M group
 * without swap runs the ramp's trim-slack workload (test_memcg_trims_slack:
 * it fits only once its own slack is split).  The others' slack stays.
 * Before each group had a list of its own, reclaim gave up after a batch
 * of others' files and the group was OOM-killed from 60,000 of them on.
 */
static void test_slack_behind_others(const char *large)
{
	long blocks = 0;
	bool wrote;

	cgroup_siblings(GROUPS, "others", "spare");
	wrote = run_in_cgroup(GROUPS "/others", write_slack_files, (void *)large);
	check(wrote, "100,000 files of 4K with 4K past EOF each in an unlimited group");
	test_memcg_trims_slack(large);
	for (int i = 0; i < OTHERS; i++) {
		char path[512];
		struct stat st;

		snprintf(path, sizeof(path), "%s/o%d", large, i);
		if (!stat(path, &st))
			blocks += st.st_blocks;
		unlink(path);
	}
	check(blocks == OTHERS * 2 * PAGE / 512,
	      "the other group's files keep their slack: st_blocks %ld in all (%ld)",
	      blocks, OTHERS * 2 * PAGE / 512);
	cgroup_siblings_remove(GROUPS, "others", "spare");
}

/* In the boot with cgroup.memory=nokmem: say so, so that it cannot go unnoticed */
static void check_nokmem(void)
{
	char cmdline[4096] = "";
	int fd = open("/proc/cmdline", O_RDONLY);

	if (fd < 0 || read(fd, cmdline, sizeof(cmdline) - 1) < 0)
		die("/proc/cmdline");
	close(fd);
	check(strstr(cmdline, "cgroup.memory=nokmem"), "booted with cgroup.memory=nokmem");
}

void shrink_tests(const char *large, const char *plain, const char *huge, bool nokmem)
{
	if (nokmem)
		check_nokmem();
	test_group_splits_its_own(plain, huge);
	ramp_slack_reclaim_tests(large, plain);
	test_slack_behind_others(large);
}
