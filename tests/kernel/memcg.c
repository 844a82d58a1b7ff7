// SPDX-License-Identifier: GPL-2.0
/*
 * Memory cgroups:
 * - a charge that fails falls back to a smaller folio that holds the data
 *   where it was written: after a failed 2M charge without reclaim the
 *   next order is 0, and with THP defrag=always (a charge that may
 *   reclaim) shmem steps down one order, to a 1M folio at 1M, also for a
 *   short copy; fallocate allocates exactly what was asked for;
 * - the huge page shrinker: a group's reclaim splits the huge folios its
 *   files hold past EOF, with kmem accounting and without
 *   (cgroup.memory=nokmem), and leaves other groups' alone; so it does
 *   with the append ramp's slack (ramp.c), also behind 100,000 files of
 *   another group's slack on the shrinklist, and behind 160 of its own
 *   files whose folios cannot be split.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib.h"

#define GROUPS "/sys/fs/cgroup/shmem-shrink"

/* ---- the memcg charge fallback places data where it was written ---- */

struct memcg_op {
	int fd;
	const char *buf;	/* filled by the parent: charged outside */
	off_t off;
	size_t len;
	bool falloc;
	size_t short_ok;	/* the bytes a short copy writes, else 0 */
};

static void memcg_op(void *arg)
{
	struct memcg_op *op = arg;
	size_t want = op->short_ok ? op->short_ok : op->len;

	if (op->falloc ? fallocate(op->fd, 0, op->off, op->len) :
	    pwrite(op->fd, op->buf, op->len, op->off) != (ssize_t)want) {
		printf("# in the memory cgroup: %s: %s\n",
		       op->falloc ? "fallocate" : "pwrite", strerror(errno));
		_exit(1);
	}
}

/*
 * A charge that may reclaim (defrag=always) steps down one order at a
 * time: after the 2M charge fails in a 1536K cgroup, the 1M folio for a
 * write at 1M must sit at 1M.  (With defrag's default the charge may not
 * reclaim and shmem goes straight to order 0, so the cases above never
 * reach an order-8 folio.)  The write's source has 64K readable and then
 * PROT_NONE: a short copy, which leaves the folio partially uptodate.  The
 * first series put that folio at 0: the write returned 64K and the data
 * read back at 0, zeroes at 1M; KASAN saw nothing, since every block
 * number it set was inside the folio (docs/kasan-misplaced-folio.md).
 */
static void test_charge_placement_order8(const char *hugelarge)
{
	const char *defrag = "/sys/kernel/mm/transparent_hugepage/defrag";
	long alloc1m = mthp_stat(1024, "shmem_alloc");
	long charge2m = mthp_stat(2048, "shmem_fallback_charge");
	char saved[32], *buf;
	struct memcg_op op;
	long swapped;
	int fd;

	buf = mmap(NULL, MB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	memset(buf, 'A', 64 * KB);
	if (mprotect(buf + 64 * KB, MB - 64 * KB, PROT_NONE))
		die("mprotect");
	thp_setting(defrag, saved, sizeof(saved));
	sysfs_write(defrag, "always");
	fd = open_new(hugelarge, "charge-order8");
	op = (struct memcg_op){ .fd = fd, .buf = buf, .off = MB, .len = MB,
			       .short_ok = 64 * KB };
	check(run_in_memcg("1536K", memcg_op, &op, &swapped),
	      "defrag=always: 1M write at 1M, 64K of its source readable, in a 1536K memory cgroup");
	sysfs_write(defrag, saved);
	check(mthp_stat(2048, "shmem_fallback_charge") - charge2m == 1 &&
	      mthp_stat(1024, "shmem_alloc") - alloc1m == 1,
	      "the 2M charge fails, a 1M folio takes the write (2M charge fallbacks %ld, 1M allocations %ld)",
	      mthp_stat(2048, "shmem_fallback_charge") - charge2m,
	      mthp_stat(1024, "shmem_alloc") - alloc1m);
	check(size_of(fd) == MB + 64 * KB && is_byte(fd, MB, 64 * KB, 'A') &&
	      is_zero(fd, 0, MB) && seek(fd, 0, SEEK_DATA) == MB,
	      "the short copy's 64K reads back at 1M, [0,1M) is a hole (size %ld, SEEK_DATA %ld)",
	      size_of(fd), (long)seek(fd, 0, SEEK_DATA));
	close(fd);
	munmap(buf, MB);
}

static void test_charge_placement(const char *hugelarge)
{
	char *buf = malloc(128 * KB);
	struct memcg_op op;
	long swapped, charge = mthp_stat_sum("shmem_fallback_charge");
	long charge2m = mthp_stat(2048, "shmem_fallback_charge");
	int fd;

	memset(buf, 'A', 128 * KB);
	fd = open_new(hugelarge, "charge-write");
	op = (struct memcg_op){ .fd = fd, .buf = buf, .off = 64 * KB, .len = 64 * KB };
	check(run_in_memcg("1M", memcg_op, &op, &swapped),
	      "huge=always,large_folios: 64K write at 64K in a 1M memory cgroup");
	check(size_of(fd) == 128 * KB, "the file is 128K (%ld)", size_of(fd));
	check(is_zero(fd, 0, 64 * KB), "charge fallback: [0,64K) reads zeroes");
	check(is_byte(fd, 64 * KB, 64 * KB, 'A'), "charge fallback: [64K,128K) reads the 'A's");
	check(mthp_stat(2048, "shmem_fallback_charge") - charge2m == 1 &&
	      mthp_stat_sum("shmem_fallback_charge") - charge == 1,
	      "one charge fallback, for the 2M folio (2M: %ld, all sizes: %ld)",
	      mthp_stat(2048, "shmem_fallback_charge") - charge2m,
	      mthp_stat_sum("shmem_fallback_charge") - charge);
	close(fd);

	/* After a failed charge without reclaim the next order is 0 */
	long alloc128 = shmem_allocs(128);

	charge = mthp_stat_sum("shmem_fallback_charge");
	charge2m = mthp_stat(2048, "shmem_fallback_charge");
	fd = open_new(hugelarge, "charge-rule");
	op = (struct memcg_op){ .fd = fd, .buf = buf, .len = 128 * KB };
	check(run_in_memcg("1M", memcg_op, &op, &swapped),
	      "huge=always,large_folios: 128K write at 0 in a 1M memory cgroup");
	check(is_byte(fd, 0, 128 * KB, 'A'), "it reads back");
	check(mthp_stat(2048, "shmem_fallback_charge") - charge2m == 1 &&
	      mthp_stat_sum("shmem_fallback_charge") - charge == 1,
	      "one charge fallback, for the 2M folio (2M: %ld, all sizes: %ld)",
	      mthp_stat(2048, "shmem_fallback_charge") - charge2m,
	      mthp_stat_sum("shmem_fallback_charge") - charge);
	check(shmem_allocs(128) - alloc128 == 0,
	      "after the failed 2M charge no 128K folio is tried: the next order is 0 (%ld)",
	      shmem_allocs(128) - alloc128);
	close(fd);

	fd = open_new(hugelarge, "charge-falloc");
	op = (struct memcg_op){ .fd = fd, .off = 64 * KB, .len = 64 * KB, .falloc = true };
	check(run_in_memcg("1M", memcg_op, &op, &swapped),
	      "huge=always,large_folios: fallocate 64K at 64K in a 1M memory cgroup");
	check(size_of(fd) == 128 * KB && blocks_of(fd) == 128,
	      "charge fallback: fallocate allocated exactly the 64K asked for (st_blocks %ld, size %ld)",
	      blocks_of(fd), size_of(fd));
	pwrite_pattern(fd, 64 * KB, 64 * KB, 40);
	check(blocks_of(fd) == 128 && seek(fd, 0, SEEK_DATA) == 64 * KB && is_zero(fd, 0, 64 * KB) &&
	      has_pattern(fd, 64 * KB, 64 * KB, 64 * KB, 40),
	      "writing the fallocated range allocates nothing more, [0,64K) stays a hole (st_blocks %ld)",
	      blocks_of(fd));
	close(fd);
	free(buf);
	test_charge_placement_order8(hugelarge);
}

/* ---- the huge page shrinker under memory cgroups ---- */

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

/*
 * A positive count from the environment variable @name, or @fallback if
 * it is not set; anything else ends the tests (a count of 0 from a typo
 * would run nothing, and a test that runs nothing cannot fail).
 */
static long env_count(const char *name, long fallback)
{
	const char *env = getenv(name);
	char *end;
	long n;

	if (!env)
		return fallback;
	errno = 0;
	n = strtol(env, &end, 10);
	if (errno || end == env || *end || n <= 0) {
		fprintf(stderr, "%s='%s' is not a positive count\n", name, env);
		exit(2);
	}
	return n;
}

/*
 * The other group's files: 100,000, or SLACK_OTHERS from the environment
 * (make test-debug, where KASAN and lockdep make 100,000 files take
 * most of the guest's time: it looks for splats, make test checks scale).
 */
static long slack_others(void)
{
	return env_count("SLACK_OTHERS", 100000);
}

/*
 * @n files of 4K, each in an 8K folio whose second page lies past EOF (a
 * write of 8K from a buffer whose second page cannot be read stops after
 * 4K): slack on the shrinklist, charged to the writer's group.
 */
static bool write_slack_files_n(const char *dir, long n)
{
	char *src = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok = src != MAP_FAILED;

	if (ok) {
		fill(src, PAGE, 70);
		mprotect(src + PAGE, PAGE, PROT_NONE);
	}
	for (long i = 0; ok && i < n; i++) {
		char name[32];
		int fd;

		snprintf(name, sizeof(name), "o%ld", i);
		fd = open_new(dir, name);
		ok = pwrite(fd, src, 2 * PAGE, 0) == PAGE;
		close(fd);
	}
	return ok;
}

static void write_slack_files(void *dir)
{
	if (!write_slack_files_n(dir, slack_others()))
		_exit(1);
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
	long blocks = 0, others = slack_others();
	bool wrote;

	cgroup_siblings(GROUPS, "others", "spare");
	wrote = run_in_cgroup(GROUPS "/others", write_slack_files, (void *)large);
	check(wrote, "%ld files of 4K with 4K past EOF each in an unlimited group", others);
	test_memcg_trims_slack(large, NULL, 0, "");
	for (long i = 0; i < others; i++) {
		char path[512];
		struct stat st;

		snprintf(path, sizeof(path), "%s/o%ld", large, i);
		if (!stat(path, &st))
			blocks += st.st_blocks;
		unlink(path);
	}
	check(blocks == others * 2 * PAGE / 512,
	      "the other group's files keep their slack: st_blocks %ld in all (%ld)",
	      blocks, others * 2 * PAGE / 512);
	cgroup_siblings_remove(GROUPS, "others", "spare");
}

#define HELD 160

/*
 * HELD files of 4K in 8K folios (as write_slack_files), each folio held
 * by a pipe that its first page was vmspliced into from a mapping (splice
 * would copy from a folio that is uptodate in part); the pipes stay open
 * while the caller runs.
 */
static void hold_slack_files(const char *dir)
{
	char *src = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (src == MAP_FAILED)
		_exit(1);
	fill(src, PAGE, 71);
	mprotect(src + PAGE, PAGE, PROT_NONE);
	for (int i = 0; i < HELD; i++) {
		char name[32];
		struct iovec iov = { .iov_len = PAGE };
		int fd, pipefd[2];

		snprintf(name, sizeof(name), "h%d", i);
		fd = open_new(dir, name);
		iov.iov_base = MAP_FAILED;
		if (pwrite(fd, src, 2 * PAGE, 0) != PAGE || pipe(pipefd) ||
		    (iov.iov_base = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0)) ==
		    MAP_FAILED || vmsplice(pipefd[1], &iov, 1, 0) != PAGE) {
			diag("held file %d: %s", i, strerror(errno));
			_exit(1);
		}
		munmap(iov.iov_base, PAGE);
		close(fd);
	}
}

/*
 * Files that the shrinker cannot split do not keep the rest out of
 * reach: HELD files of the group with 4K past EOF, their folios held by
 * pipes, ahead of the trim-slack workload's files on the group's list
 * (whose last file is smaller by the held files' 1.25M, which fit only
 * with that much less: with KASAN's larger kernel objects the group was
 * OOM-killed otherwise).
 * When the files tried and not split went back to the head of the list,
 * every batch of 128 took the same held files and the group was
 * OOM-killed.
 */
static void test_slack_behind_held(const char *large)
{
	test_memcg_trims_slack(large, hold_slack_files, HELD * 2 * PAGE,
			       "160 files whose folio past EOF a pipe holds (vmsplice), then ");
	for (int i = 0; i < HELD; i++) {
		char path[512];

		snprintf(path, sizeof(path), "%s/h%d", large, i);
		unlink(path);
	}
}

#define FULL_GROUPS "/sys/fs/cgroup/shmem-full"

/* 17M + 4K of 4K appends to "a", then 2.5M more in 512K writes to "b" */
static void appends_then_more(void *dir)
{
	static char page[PAGE], half[MB / 2];
	int fd = open_new(dir, "a");

	for (long p = 0; p <= 17 * MB / PAGE; p++)
		if (write(fd, page, PAGE) != PAGE) {
			diag("append at %ldK: %s", p * 4, strerror(errno));
			_exit(1);
		}
	close(fd);
	fd = open_new(dir, "b");
	for (long off = 0; off < 5 * MB / 2; off += MB / 2)
		if (pwrite(fd, half, MB / 2, off) != MB / 2) {
			diag("pwrite 512K at %ldK: %s", off / KB, strerror(errno));
			_exit(1);
		}
	close(fd);
}

/* In the root group: the held files, then the writer in a memory cgroup */
static void held_then_writer(void *dir)
{
	hold_slack_files(dir);
	if (!run_in_cgroup(FULL_GROUPS "/writer", appends_then_more, dir))
		_exit(1);
}

/*
 * A full mount makes room from a memory cgroup's slack behind HELD files
 * of the root group (on the superblock's list) that the shrinker cannot
 * split: the mount has room for everything but the appended file's
 * slack past EOF.  The walk over all the lists filled its batch from the
 * superblock's list every time, and the writer got ENOSPC.
 */
static void test_full_mount_behind_held(void)
{
	const char *dir = mount_tmpfs("full-held", "size=21760k,large_folios");
	char path[512];
	struct stat st = { 0 };
	bool wrote;

	cgroup_siblings(FULL_GROUPS, "writer", "spare");
	wrote = run_in_cgroup("/sys/fs/cgroup", held_then_writer, (void *)dir);
	snprintf(path, sizeof(path), "%s/a", dir);
	stat(path, &st);
	check(wrote && st.st_blocks == (17 * MB + PAGE) / 512,
	      "a full mount splits a memory cgroup's slack behind 160 held files of the root "
	      "group: 17M + 4K of appends and 2.5M more fit, the appended file's st_blocks %ld "
	      "(%ld)", (long)st.st_blocks, (17 * MB + PAGE) / 512);
	umount2(dir, MNT_DETACH);
	cgroup_siblings_remove(FULL_GROUPS, "writer", "spare");
}

#define EVICT_GROUPS "/sys/fs/cgroup/shmem-evict"
#define EVICT_PAGES (64 * MB / PAGE)

/*
 * In the group: "f", 64M of base pages by faults and then 17 4K appends
 * (a 2-page folio 4K past EOF: the group's list's only file), that
 * folio held by a pipe so that no walk splits it off; then close it and
 * wait until the parent has removed the file.
 */
static void evicted_file(void *dir)
{
	static char page[PAGE];
	char path[512], *map;
	struct iovec iov = { .iov_len = PAGE };
	int fd, pipefd[2];

	snprintf(path, sizeof(path), "%s/f", (char *)dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, EVICT_PAGES * PAGE))
		_exit(1);
	map = mmap(NULL, EVICT_PAGES * PAGE, PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		_exit(1);
	for (long p = 0; p < EVICT_PAGES; p++)
		map[p * PAGE] = 1;
	munmap(map, EVICT_PAGES * PAGE);
	for (int p = 0; p < 17; p++)
		if (pwrite(fd, page, PAGE, (EVICT_PAGES + p) * PAGE) != PAGE)
			_exit(1);
	iov.iov_base = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd,
			    (EVICT_PAGES + 16) * PAGE);
	if (iov.iov_base == MAP_FAILED || pipe(pipefd) ||
	    vmsplice(pipefd[1], &iov, 1, 0) != PAGE)
		_exit(1);
	munmap(iov.iov_base, PAGE);
	close(fd);
	close(open_new(dir, "ready"));
	/* the parent unlinks it, which evicts it (64M to truncate) */
	while (!access(path, F_OK))
		usleep(1000);
}

/*
 * 10 rounds, or EVICT_ROUNDS from the environment (make test-debug: under
 * KASAN and lockdep a round takes minutes; it looks for splats, make test
 * for the hang)
 */
static int evict_rounds(void)
{
	return env_count("EVICT_ROUNDS", 10);
}

/*
 * A walk over all the lists (drop_caches) that starts at a group's list
 * whose only file is being evicted: the file leaves the list as the walk
 * meets it and takes the list with it.  The walk went round until it
 * came back to that list's key and, with the list gone, never ended,
 * spinning under the lock (a review's reproducer hung the kernel in 7
 * rounds).  200 files of the root group with slack first, and one
 * drop_caches that takes a batch from the superblock's list, so that
 * the next walks start at the group's list.
 */
static void test_walk_while_evicting(void)
{
	const char *dir = mount_tmpfs("evict", "large_folios");
	char path[512];
	int rounds = evict_rounds(), done = 0, status;

	cgroup_siblings(EVICT_GROUPS, "g", "spare");
	if (!write_slack_files_n(dir, 200))
		die("200 files with slack");
	sysfs_write("/proc/sys/vm/drop_caches", "2");
	for (int round = 0; round < rounds; round++) {
		pid_t hammer = fork(), holder;

		if (hammer < 0)
			die("fork");
		if (hammer == 0)
			for (;;)
				sysfs_write("/proc/sys/vm/drop_caches", "2");
		holder = fork();
		if (holder < 0)
			die("fork");
		if (holder == 0)
			_exit(!run_in_cgroup(EVICT_GROUPS "/g", evicted_file, (void *)dir));
		/* once the holder has closed it: unlink evicts it at once */
		snprintf(path, sizeof(path), "%s/ready", dir);
		while (access(path, F_OK) && !waitpid(holder, NULL, WNOHANG))
			usleep(1000);
		unlink(path);
		snprintf(path, sizeof(path), "%s/f", dir);
		unlink(path);
		kill(hammer, SIGKILL);
		waitpid(hammer, NULL, 0);
		done += waitpid(holder, &status, 0) == holder && WIFEXITED(status) &&
			!WEXITSTATUS(status);
	}
	check(done == rounds, "drop_caches in a loop while a group's only listed file is "
	      "evicted: every walk ends, %d rounds of %d", done, rounds);
	umount2(dir, MNT_DETACH);
	cgroup_siblings_remove(EVICT_GROUPS, "g", "spare");
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

/* One page written from the cgroup at path: a 2M folio on huge=always */
static void write_one_page(void *path)
{
	static char page[PAGE];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	fill(page, PAGE, 71);
	_exit(fd < 0 || write(fd, page, PAGE) != PAGE);
}

static long dying_groups(const char *dir)
{
	char path[256], line[128];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.stat", dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		sscanf(line, "nr_dying_descendants %ld", &n);
	if (f)
		fclose(f);
	return n;
}

/* 4M of the group at DIR reclaimed, three times: did each write succeed? */
static bool reclaim_thrice(const char *dir)
{
	char path[256];
	bool ok = true;

	snprintf(path, sizeof(path), "%s/memory.reclaim", dir);
	for (int i = 0; i < 3; i++) {
		int fd = open(path, O_WRONLY);

		/* EAGAIN when less than asked could be reclaimed: not a failure */
		ok &= fd >= 0 && (write(fd, "4M", 2) == 2 || errno == EAGAIN);
		if (fd >= 0)
			close(fd);
	}
	return ok;
}

/* DIR's dying groups once the kernel has freed what it can: a bounded wait */
static long dying_groups_after_wait(const char *dir)
{
	long dying = dying_groups(dir);

	for (int tries = 0; tries < 600 && dying != 0; tries++) {
		usleep(100000);
		dying = dying_groups(dir);
	}
	return dying;
}

/* The path of the first swap device in /proc/swaps into dev: is there one? */
static bool first_swap_device(char dev[256])
{
	char line[512];
	FILE *f = fopen("/proc/swaps", "r");

	dev[0] = 0;
	if (!f)
		die("/proc/swaps");
	/* a header line, then one line per device, its path first */
	if (fgets(line, sizeof(line), f) && fgets(line, sizeof(line), f))
		sscanf(line, "%255s", dev);
	fclose(f);
	return dev[0];
}

/*
 * Frees the swap entries the per-CPU swap slot caches hold back (stock
 * 6.12 behaviour): free_swap_slot() parks a freed entry in its CPU's
 * slots_ret until 64 have gathered, and the entry's swap charge, with
 * the reference on its memory cgroup's id, goes only then.  A group
 * whose page went to swap while it was online stays dying after the
 * page is read back and the file unlinked, until a swapoff drains
 * every CPU's cache; nothing drains it on a timer.  Swapping the first
 * swap device off and on again is that drain; without swap nothing is
 * parked.
 */
static bool drain_swap_slot_caches(void)
{
	char dev[256];

	return !first_swap_device(dev) || (!swapoff(dev) && !swapon(dev, 0));
}

/*
 * A group is freed once nothing of it is left.  A group writes a page
 * of a file on huge=always (a 2M folio on the group's list of files
 * with slack); its own memory.reclaim, while it is online, sends the
 * page to swap (when there is swap: not in the nokmem boot); the page
 * is read back, the file unlinked, the group removed and the swap slot
 * caches drained: the group does not stay dying, so nothing of the
 * series' (the list, the list's reference on the group) outlives it.
 * Without the drain the group stays dying here, on stock 6.12 too.
 */
static void test_swapped_group_freed(const char *huge)
{
	char path[512], dev[256];
	bool wrote, back, drained, reclaimed;
	bool swap = first_swap_device(dev);
	long swapped, dying;
	int fd;

	cgroup_siblings(GROUPS, "swapped", "spare");
	snprintf(path, sizeof(path), "%s/g-swapped", huge);
	wrote = run_in_cgroup(GROUPS "/swapped", write_one_page, path);
	reclaimed = reclaim_thrice(GROUPS "/swapped");
	swapped = file_long(GROUPS "/swapped/memory.swap.current");
	fd = open(path, O_RDONLY);
	back = fd >= 0 && has_pattern(fd, 0, PAGE, 0, 71);
	if (fd >= 0)
		close(fd);
	unlink(path);
	if (rmdir(GROUPS "/swapped"))
		die("rmdir swapped");
	drained = drain_swap_slot_caches();
	dying = dying_groups_after_wait(GROUPS);
	check(wrote && reclaimed && back && drained && swapped == (swap ? PAGE : 0) &&
	      dying == 0,
	      "a group's page of a huge=always file sent to swap by the group's reclaim "
	      "(%ld bytes, %ld expected), read back, the file unlinked, the group "
	      "removed, the swap slot caches drained: the group is freed (%ld dying)",
	      swapped, swap ? PAGE : 0L, dying);
	cgroup_siblings_remove(GROUPS, "swapped", "spare");
}

/*
 * A group's list of files with huge folios past EOF outlives neither the
 * group nor its files.  A file written from a child group on huge=always
 * (a 2M folio, nearly all past EOF), the child removed, the parent's
 * memory.reclaim three times: the file's slack is the parent's to split
 * (the series before the fix freed the child's list and kept it in its
 * xarray: a use-after-free in that reclaim).  Then five groups write a
 * file each, the files and the groups go: no group stays dying for a
 * list of the tmpfs (the series before kept them until umount).
 */
static void test_removed_groups(const char *huge)
{
	char path[512], group[256];
	bool wrote, reclaimed;
	long dying;
	int fd;

	cgroup_siblings(GROUPS, "child", "spare");
	snprintf(path, sizeof(path), "%s/g-child", huge);
	wrote = run_in_cgroup(GROUPS "/child", write_one_page, path);
	if (rmdir(GROUPS "/child"))
		die("rmdir child");
	reclaimed = reclaim_thrice(GROUPS);
	fd = open(path, O_RDONLY);
	check(wrote && reclaimed && fd >= 0 && has_pattern(fd, 0, PAGE, 0, 71),
	      "a child group's file on huge=always, the child removed: its parent's "
	      "memory.reclaim three times, and the file reads back its page");
	if (fd >= 0)
		close(fd);
	unlink(path);
	cgroup_siblings_remove(GROUPS, "child", "spare");
	/*
	 * A parent of their own: the child may stay dying, if its page went
	 * to swap before it went offline (drain_swap_slot_caches())
	 */
	cgroup_siblings(GROUPS, "g0", "g1");
	for (int i = 0; i < 5; i++) {
		snprintf(group, sizeof(group), GROUPS "/g%d", i);
		if (i > 1 && mkdir(group, 0755))
			die(group);
		snprintf(path, sizeof(path), "%s/g-file%d", huge, i);
		wrote &= run_in_cgroup(group, write_one_page, path);
		unlink(path);
		rmdir(group);
	}
	dying = dying_groups_after_wait(GROUPS);
	check(wrote && dying == 0,
	      "five groups each wrote a file on huge=always, files and groups removed: "
	      "no group left dying (%ld)", dying);
	rmdir(GROUPS);
}

void memcg_tests(const char *large, const char *plain, const char *huge,
		 const char *hugelarge, bool nokmem)
{
	if (nokmem)
		check_nokmem();
	else	/* the charge tests once, in the boot with kmem accounting */
		test_charge_placement(hugelarge);
	test_group_splits_its_own(plain, huge);
	ramp_slack_reclaim_tests(large, plain);
	test_slack_behind_others(large);
	test_slack_behind_held(large);
	test_full_mount_behind_held();
	test_walk_while_evicting();
	test_removed_groups(huge);
	test_swapped_group_freed(huge);
}
