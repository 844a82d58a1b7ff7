// SPDX-License-Identifier: GPL-2.0
/*
 * Regression tests for the data bugs of issue 10, asserting the fixed
 * behaviour: charge fallback placement (1), memfd_pin_folios (2), no leak
 * after punch and truncate (3), splice of partial folios (4),
 * shmem_enabled=deny (6), mincore (8), st_blksize (10) and stale bytes
 * past EOF (14).  The trace-event items (1, 12) are in trace.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/udmabuf.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib.h"

#define SHMEM_ENABLED "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

struct mnt {
	const char *dir, *name;
};

static long st_blocks(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		die("fstat");
	return st.st_blocks;
}

static long st_size(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		die("fstat");
	return st.st_size;
}

/* Is [off, off + len) all byte c? */
static bool is_byte(int fd, off_t off, size_t len, char c)
{
	char *got = malloc(len);
	bool same = pread(fd, got, len, off) == (ssize_t)len;

	for (size_t i = 0; same && i < len; i++)
		same = got[i] == c;
	free(got);
	return same;
}

/* ---- 1: the memcg charge fallback places data where it was written ---- */

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
	check(st_size(fd) == MB + 64 * KB && is_byte(fd, MB, 64 * KB, 'A') &&
	      is_zero(fd, 0, MB) && seek(fd, 0, SEEK_DATA) == MB,
	      "the short copy's 64K reads back at 1M, [0,1M) is a hole (size %ld, SEEK_DATA %ld)",
	      st_size(fd), (long)seek(fd, 0, SEEK_DATA));
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
	check(st_size(fd) == 128 * KB, "the file is 128K (%ld)", st_size(fd));
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
	check(st_size(fd) == 128 * KB && st_blocks(fd) == 128,
	      "charge fallback: fallocate allocated exactly the 64K asked for (st_blocks %ld, size %ld)",
	      st_blocks(fd), st_size(fd));
	pwrite_pattern(fd, 64 * KB, 64 * KB, 40);
	check(st_blocks(fd) == 128 && seek(fd, 0, SEEK_DATA) == 64 * KB && is_zero(fd, 0, 64 * KB) &&
	      has_pattern(fd, 64 * KB, 64 * KB, 64 * KB, 40),
	      "writing the fallocated range allocates nothing more, [0,64K) stays a hole (st_blocks %ld)",
	      st_blocks(fd));
	close(fd);
	free(buf);
	test_charge_placement_order8(hugelarge);
}

/* ---- 2: memfd_pin_folios() (udmabuf) keeps written data ---- */

static void test_udmabuf(void)
{
	struct udmabuf_create create = { 0 };
	char saved[32];
	int dev, memfd, buf;
	long before;

	dev = open("/dev/udmabuf", O_RDWR);
	if (!check(dev >= 0, "/dev/udmabuf can be opened (CONFIG_UDMABUF): %s",
		   dev >= 0 ? "yes" : strerror(errno)))
		return;
	thp_setting(SHMEM_ENABLED, saved, sizeof(saved));
	sysfs_write(SHMEM_ENABLED, "always");
	before = shmem_allocs(2048);
	memfd = memfd_create("udmabuf", MFD_ALLOW_SEALING);
	if (memfd < 0 || ftruncate(memfd, 2 * MB))
		die("memfd");
	pwrite_pattern(memfd, 0, PAGE, 41);
	check(shmem_allocs(2048) - before == 1,
	      "memfd with shmem_enabled=always: a 4K write allocates a 2M folio");
	if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		die("F_ADD_SEALS");
	create.memfd = memfd;
	create.flags = UDMABUF_FLAGS_CLOEXEC;
	create.offset = 0;
	create.size = 2 * MB;
	buf = ioctl(dev, UDMABUF_CREATE, &create);
	check(buf >= 0, "UDMABUF_CREATE on [0,2M) of the memfd: %s",
	      buf >= 0 ? "ok" : strerror(errno));
	check(has_pattern(memfd, 0, PAGE, 0, 41),
	      "after pinning, the written 4K still reads back");
	check(is_zero(memfd, PAGE, 2 * MB - PAGE), "and the rest reads zeroes");
	pwrite_pattern(memfd, 8 * KB, PAGE, 42);
	if (buf >= 0)
		close(buf);
	check(has_pattern(memfd, 0, PAGE, 0, 41) && has_pattern(memfd, 8 * KB, PAGE, 8 * KB, 42),
	      "data written while pinned reads back after the unpin");
	close(memfd);
	close(dev);
	sysfs_write(SHMEM_ENABLED, saved);
}

/* ---- 3: punch and truncate free what they remove ---- */

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
	check(st_blocks(fd) == 8, "%s: %s: st_blocks is 8 (%ld)", m->name, what[how], st_blocks(fd));
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
	check(st_blocks(fd) == (2 * MB - PAGE) / 512,
	      "the split freed the punched page only (st_blocks %ld)", st_blocks(fd));
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

/* ---- 4: splice of partially uptodate folios copies ---- */

static bool read_pipe(int pfd, char *got, size_t len, const char **err)
{
	size_t n = 0;
	ssize_t r = 0;

	while (n < len && (r = read(pfd, got + n, len - n)) > 0)
		n += r;
	*err = r < 0 ? strerror(errno) : n < len ? "short read" : "ok";
	return n == len;
}

static void test_splice_partial(const char *huge, const char *large)
{
	char want[8 * KB], got[8 * KB];
	const char *err = "";
	loff_t off = 0;
	int fd, p[2];
	bool ok;

	fd = open_new(huge, "splice-punch");
	fill(want, sizeof(want), 45);
	if (pwrite(fd, want, sizeof(want), 0) != sizeof(want) || pipe2(p, O_NONBLOCK))
		die("splice-punch");
	check(splice(fd, &off, p[1], NULL, 8 * KB, 0) == 8 * KB,
	      "huge=always: splice 8K of a partially written 2M folio");
	check(!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PAGE), "punch 0..4K");
	ok = read_pipe(p[0], got, sizeof(got), &err);
	check(ok, "the pipe reads 8192 bytes (%s)", err);
	check(!memcmp(got, want, sizeof(got)),
	      "both 4K halves are the data as it was at splice time (a copy)");
	close(p[0]);
	close(p[1]);
	close(fd);

	fd = open_new(huge, "splice-truncate");
	off = 0;
	fill(want, sizeof(want), 46);
	if (pwrite(fd, want, sizeof(want), 0) != sizeof(want) || pipe2(p, O_NONBLOCK))
		die("splice-truncate");
	check(splice(fd, &off, p[1], NULL, 8 * KB, 0) == 8 * KB,
	      "huge=always: splice 8K of a partially written 2M folio");
	check(!ftruncate(fd, 0), "truncate the file to 0");
	ok = read_pipe(p[0], got, sizeof(got), &err);
	check(ok && !memcmp(got, want, sizeof(got)), "the pipe still reads the 8K of data (%s)", err);
	close(p[0]);
	close(p[1]);
	close(fd);

	/* Unchanged: a fully uptodate folio is spliced by reference */
	fd = open_new(large, "splice-ref");
	off = 0;
	pwrite_pattern(fd, 0, 64 * KB, 47);
	if (pipe2(p, O_NONBLOCK))
		die("pipe");
	check(splice(fd, &off, p[1], NULL, PAGE, 0) == PAGE,
	      "large_folios: splice 4K of a fully written 64K folio");
	fill(want, PAGE, 48);
	if (pwrite(fd, want, PAGE, 0) != PAGE)
		die("pwrite");
	ok = read_pipe(p[0], got, PAGE, &err);
	check(ok && !memcmp(got, want, PAGE),
	      "the pipe references the page: it reads what was written after the splice (%s)", err);
	close(p[0]);
	close(p[1]);
	close(fd);
}

/* ---- 6: shmem_enabled=deny turns large_folios off too ---- */

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

/* ---- 8: mincore() sees the written pages of a partial folio ---- */

static void test_mincore(const char *huge)
{
	long before = shmem_allocs(2048);
	int fd = open_new(huge, "mincore");
	unsigned char vec[3] = { 9, 9, 9 };
	char *map;

	pwrite_pattern(fd, 0, PAGE, 50);
	pwrite_pattern(fd, 8 * KB, PAGE, 51);
	check(shmem_allocs(2048) - before == 1, "huge=always: the two 4K writes share one 2M folio");
	map = mmap(NULL, 12 * KB, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	check(!mincore(map, 12 * KB, vec), "mincore");
	check((vec[0] & 1) == 1 && (vec[1] & 1) == 0 && (vec[2] & 1) == 1,
	      "mincore of written, unwritten, written page: [1,0,1] ([%d,%d,%d])",
	      vec[0] & 1, vec[1] & 1, vec[2] & 1);
	munmap(map, 12 * KB);
	close(fd);
}

/* ---- 10: st_blksize keeps the PMD hint on huge= mounts without large_folios ---- */

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

/* ---- 14: bytes stored past EOF through mmap read as zeroes once the file grows ---- */

static sigjmp_buf sigbus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(sigbus_jmp, 1);
}

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
	check(st_size(fd) == 8 * KB + (how == 0) && has_pattern(fd, 0, 100, 0, 52) &&
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

void regress_tests(const char *large, const char *plain, const char *huge,
		   const char *hugelarge)
{
	const struct mnt mounts[] = {
		{ plain, "default" },
		{ huge, "huge=always" },
		{ large, "large_folios" },
		{ hugelarge, "huge=always,large_folios" },
	};
	const long blksize[] = { PAGE, PMD, PAGE, PAGE };
	int n = sizeof(mounts) / sizeof(mounts[0]);

	test_charge_placement(hugelarge);
	test_udmabuf();
	test_no_leak(mounts, n);
	test_split_makes_data(huge);
	test_splice_partial(huge, large);
	test_deny(large);
	test_mincore(huge);
	test_blksize(mounts, n, blksize);
	test_stale(mounts, n, huge);
}
