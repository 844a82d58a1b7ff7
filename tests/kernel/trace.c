// SPDX-License-Identifier: GPL-2.0
/*
 * The shmem trace events: enable them through tracefs, run a workload whose
 * outcome is known, and check the fields of the events for that file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/udmabuf.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib.h"

void trace_start(void)
{
	sysfs_write(TRACING "/tracing_on", "0");
	sysfs_write(TRACING "/buffer_size_kb", "8192");
	sysfs_write(TRACING "/events/enable", "0");
	sysfs_write(TRACING "/events/shmem/enable", "1");
	close(open(TRACING "/trace", O_WRONLY | O_TRUNC));
	sysfs_write(TRACING "/tracing_on", "1");
}

unsigned long ino_of(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		die("fstat");
	return st.st_ino;
}

const char *field(const struct event *e, const char *key)
{
	for (int i = 0; i < e->nr; i++)
		if (!strcmp(e->key[i], key))
			return e->val[i];
	return NULL;
}

long num(const struct event *e, const char *key)
{
	const char *v = field(e, key);

	return v ? strtol(v, NULL, 0) : -999;
}

bool is(const struct event *e, const char *key, const char *value)
{
	const char *v = field(e, key);

	return v && !strcmp(v, value);
}

/* Parse "name: key value key value ... [flag]" into e. */
static void parse_event(const char *text, struct event *e)
{
	char *copy = strdup(text), *save, *tok, *colon = strchr(copy, ':');

	memset(e, 0, sizeof(*e));
	*colon = 0;
	snprintf(e->name, sizeof(e->name), "%s", copy);
	for (tok = strtok_r(colon + 1, " \n", &save); tok && e->nr < MAX_FIELDS;
	     tok = strtok_r(NULL, " \n", &save)) {
		char *v = strtok_r(NULL, " \n", &save);

		snprintf(e->key[e->nr], sizeof(e->key[0]), "%s", tok);
		snprintf(e->val[e->nr], sizeof(e->val[0]), "%s", v ? v : "1");
		e->nr++;
	}
	free(copy);
}

/* Stop tracing and collect the shmem events of inode ino. */
struct trace trace_stop(unsigned long ino)
{
	struct trace t = { NULL, 0 };
	char line[512], want[32];
	FILE *f;

	sysfs_write(TRACING "/tracing_on", "0");
	sysfs_write(TRACING "/events/shmem/enable", "0");
	snprintf(want, sizeof(want), " ino %lx ", ino);
	f = fopen(TRACING "/trace", "r");
	if (!f)
		die(TRACING "/trace");
	while (fgets(line, sizeof(line), f)) {
		char *ev = strstr(line, ": shmem_");

		if (line[0] == '#' || !ev || !strstr(line, want))
			continue;
		t.ev = realloc(t.ev, (t.nr + 1) * sizeof(*t.ev));
		parse_event(ev + 2, &t.ev[t.nr++]);
	}
	fclose(f);
	return t;
}

/* The events of t called name, in order; returns how many. */
int pick(const struct trace *t, const char *name, const struct event **out, int max)
{
	int n = 0;

	for (int i = 0; i < t->nr; i++)
		if (!strcmp(t->ev[i].name, name) && n < max)
			out[n++] = &t->ev[i];
	return n;
}

/* How many events of t are called name. */
int events(const struct trace *t, const char *name)
{
	int n = 0;

	for (int i = 0; i < t->nr; i++)
		n += !strcmp(t->ev[i].name, name);
	return n;
}

/* How many events of t called name have key set to value. */
int count(const struct trace *t, const char *name, const char *key, const char *value)
{
	int n = 0;

	for (int i = 0; i < t->nr; i++)
		n += !strcmp(t->ev[i].name, name) && is(&t->ev[i], key, value);
	return n;
}

static long monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void test_fallocate_events(const char *large)
{
	int fd = open_new(large, "t-falloc"), n, ok = 1;
	long start, elapsed, ns = 0;
	const struct event *a[8];
	struct trace t;

	trace_start();
	start = monotonic_ns();
	if (fallocate(fd, 0, 0, 8 * MB))
		die("fallocate");
	elapsed = monotonic_ns() - start;
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_alloc_folio", a, 8);
	for (int i = 0; i < n; i++)
		ok &= num(a[i], "order") == 9 && is(a[i], "path", "fallocate") &&
		      num(a[i], "index") == i * 512 && num(a[i], "write_end") == 8 * MB;
	check(n == 4 && ok, "fallocate 8M: four order-9 shmem_alloc_folio, path fallocate (%d)", n);
	n = pick(&t, "shmem_alloc_time", a, 8);
	ok = 1;
	for (int i = 0; i < n; i++) {
		ok &= num(a[i], "order") == 9 && num(a[i], "index") == i * 512 &&
		      num(a[i], "ns") >= 0;
		ns += num(a[i], "ns");
	}
	/* the kernel's clock is CLOCK_MONOTONIC: the four fit in the call */
	check(n == 4 && ok && ns <= elapsed,
	      "and four shmem_alloc_time, their times within the call's (%d, %ld <= %ld ns)",
	      n, ns, elapsed);
	check(pick(&t, "shmem_alloc_fallback", a, 8) == 0, "and no fallback");
	free(t.ev);
	close(fd);
}

static void test_write_events(const char *large)
{
	int fd = open_new(large, "t-write"), n;
	const struct event *a[32];
	struct trace t;

	trace_start();
	pwrite_pattern(fd, 0, 64 * KB, 1);
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_alloc_folio", a, 32);
	check(n == 1 && num(a[0], "order") == 4 && is(a[0], "path", "write") &&
	      is(a[0], "orders", "0x1e"),
	      "64K write: one order-4 shmem_alloc_folio, orders 1-4 allowed, path write");
	n = pick(&t, "shmem_block_uptodate", a, 32);
	check(n == 1 && num(a[0], "nr") == 16 && is(a[0], "uptodate", "16/16") && field(a[0], "full"),
	      "and one transition of all 16 blocks to fully uptodate");
	free(t.ev);
	close(fd);

	/* Block by block into a fallocated folio */
	fd = open_new(large, "t-blocks");
	if (fallocate(fd, 0, 0, 64 * KB))
		die("fallocate");
	trace_start();
	pwrite_pattern(fd, 32 * KB, PAGE, 2);
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_block_uptodate", a, 32);
	check(n == 1 && num(a[0], "first") == 8 && num(a[0], "nr") == 1 &&
	      is(a[0], "uptodate", "1/16") && !field(a[0], "full"),
	      "4K write into a fallocated 64K folio: one block uptodate, 1/16");
	free(t.ev);

	trace_start();
	for (long o = 0; o < 64 * KB; o += PAGE)
		if (o != 32 * KB)
			pwrite_pattern(fd, o, PAGE, o);
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_block_uptodate", a, 32);
	int full = 0;
	for (int i = 0; i < n; i++)
		full += !!field(a[i], "full");
	check(n == 15 && full == 1 && field(a[14], "full") && is(a[14], "uptodate", "16/16"),
	      "the other 15 blocks: 15 transitions, the last one to fully uptodate (%d, %d)",
	      n, full);
	free(t.ev);
	close(fd);
}

static void test_zero_events(const char *large)
{
	int fd = open_new(large, "t-zero"), n;
	const struct event *a[8];
	struct trace t;
	char *map;

	if (fallocate(fd, 0, 0, 64 * KB))
		die("fallocate");
	trace_start();
	pwrite_pattern(fd, 8 * KB + 100, 200, 3);
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_zero", a, 8);
	check(n == 2 && is(a[0], "reason", "partial") && num(a[0], "offset") == 8 * KB &&
	      num(a[0], "bytes") == 100 && num(a[1], "offset") == 8 * KB + 300 &&
	      num(a[1], "bytes") == PAGE - 300,
	      "200-byte write: zeroes the 100 bytes before and %ld after it in its block",
	      PAGE - 300);
	free(t.ev);

	trace_start();
	map = mmap(NULL, 64 * KB, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	(void)*(volatile char *)map;
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_zero", a, 8);
	check(n == 1 && is(a[0], "reason", "unwritten") && num(a[0], "bytes") == 15 * PAGE,
	      "fault on the partial folio zeroes its 15 unwritten blocks");
	n = pick(&t, "shmem_block_uptodate", a, 8);
	check(n == 1 && num(a[0], "nr") == 15 && field(a[0], "full"),
	      "and makes them uptodate");
	munmap(map, 64 * KB);
	free(t.ev);
	close(fd);
}

static int charge_fd;

/* The buffer is the parent's, charged before the child joins the cgroup */
static void write_2m(void *buf)
{
	if (pwrite(charge_fd, buf, 2 * MB, 0) != 2 * MB)
		die("pwrite");
}

static void test_charge_fallback(const char *large)
{
	const struct event *a[16];
	struct trace t;
	long swapped, before = mthp_stat_sum("shmem_fallback_charge");
	int n;

	char *buf = malloc(2 * MB);

	fill(buf, 2 * MB, 4);
	charge_fd = open_new(large, "t-charge");
	trace_start();
	check(run_in_memcg("1M", write_2m, buf, &swapped), "2M write in a 1M memory cgroup");
	free(buf);
	t = trace_stop(ino_of(charge_fd));
	n = pick(&t, "shmem_alloc_fallback", a, 16);
	check(n > 0 && num(a[0], "order") == 9 && num(a[0], "next_order") == 0 &&
	      is(a[0], "reason", "charge") && num(a[0], "index") == 0,
	      "the 2M folio falls back to order 0 for the memcg charge (next_order %ld)",
	      n > 0 ? num(a[0], "next_order") : -1);
	/*
	 * A charge that fails without reclaim ends the attempt: one charge
	 * fallback per large allocation attempt, each straight to order 0.
	 */
	int charges = 0, bad = 0;
	for (int i = 0; i < t.nr; i++) {
		const struct event *e = &t.ev[i];

		if (strcmp(e->name, "shmem_alloc_fallback") || !is(e, "reason", "charge"))
			continue;
		charges++;
		bad += num(e, "next_order") != 0;
		for (int j = 0; j < i; j++)
			bad += !strcmp(t.ev[j].name, "shmem_alloc_fallback") &&
			       is(&t.ev[j], "reason", "charge") &&
			       num(&t.ev[j], "index") == num(e, "index");
	}
	check(charges > 0 && !bad && charges == mthp_stat_sum("shmem_fallback_charge") - before,
	      "each charge fallback goes to order 0, one per index, as counted in "
	      "shmem_fallback_charge (%d events, %d not so, counter +%ld)", charges, bad,
	      mthp_stat_sum("shmem_fallback_charge") - before);
	int zero = 0;
	for (int i = 0; i < t.nr; i++)
		zero += !strcmp(t.ev[i].name, "shmem_alloc_folio") && num(&t.ev[i], "index") == 0 &&
			num(&t.ev[i], "order") == 0 && is(&t.ev[i], "path", "write");
	check(zero == 1, "and index 0 gets an order-0 folio (%d)", zero);
	free(t.ev);
	close(charge_fd);
}

/* The fallback event reports the index asked for, not the failed order's alignment */
static void write_64k_at_64k(void *buf)
{
	if (pwrite(charge_fd, buf, 64 * KB, 64 * KB) != 64 * KB) {
		printf("# in the memory cgroup: pwrite: %s\n", strerror(errno));
		_exit(1);
	}
}

static void test_charge_fallback_index(const char *hugelarge)
{
	const struct event *a[16];
	char *buf = malloc(64 * KB);
	struct trace t;
	long swapped;
	int n;

	memset(buf, 'A', 64 * KB);
	charge_fd = open_new(hugelarge, "t-charge-index");
	trace_start();
	check(run_in_memcg("1M", write_64k_at_64k, buf, &swapped),
	      "huge=always,large_folios: 64K write at 64K in a 1M memory cgroup");
	free(buf);
	t = trace_stop(ino_of(charge_fd));
	n = 0;
	for (int i = 0; i < t.nr && n < 16; i++)
		if (!strcmp(t.ev[i].name, "shmem_alloc_fallback") && is(&t.ev[i], "reason", "charge"))
			a[n++] = &t.ev[i];
	check(n == 1 && num(a[0], "order") == 9 &&
	      num(a[0], "index") == 16 && num(a[0], "next_order") == 0,
	      "one charge fallback: order 9 at index 16 (the index written), next order 0 "
	      "(%d events, index %ld, next_order %ld)", n, n ? num(a[0], "index") : -1,
	      n ? num(a[0], "next_order") : -1);
	free(t.ev);
	close(charge_fd);
}

static void test_punch_events(const char *large)
{
	int fd = open_new(large, "t-punch"), n;
	const struct event *a[8];
	struct trace t;

	pwrite_pattern(fd, 0, 64 * KB, 5);
	trace_start();
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 16 * KB, 16 * KB))
		die("punch");
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_folio_split", a, 8);
	check(n == 1 && num(a[0], "old_order") == 4 && num(a[0], "new_order") == 0 &&
	      is(a[0], "reason", "truncate") && num(a[0], "ret") == 0,
	      "punch in an uptodate 64K folio: split 4 -> 0, reason truncate");
	free(t.ev);
	close(fd);

	fd = open_new(large, "t-punch-partial");
	if (fallocate(fd, 0, 0, 64 * KB))
		die("fallocate");
	pwrite_pattern(fd, 0, 16 * KB, 6);
	pwrite_pattern(fd, 32 * KB, 16 * KB, 7);
	trace_start();
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4 * KB, 8 * KB))
		die("punch");
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_block_clear", a, 8);
	check(n == 1 && num(a[0], "first") == 1 && num(a[0], "nr") == 2 &&
	      is(a[0], "uptodate", "6/16"),
	      "punch in a partial folio: blocks 1-2 cleared, 6/16 left");
	n = pick(&t, "shmem_folio_split", a, 8);
	check(n == 1 && num(a[0], "old_order") == 4 && num(a[0], "new_order") == 0 &&
	      num(a[0], "ret") == 0 && is(a[0], "reason", "truncate"),
	      "and it is split 4 -> 0, its unwritten blocks zeroed first (ret %ld)",
	      n ? num(a[0], "ret") : -999);
	n = pick(&t, "shmem_zero", a, 8);
	check(n == 1 && is(a[0], "reason", "split") && num(a[0], "bytes") == 10 * PAGE,
	      "the zeroing before the split says so: reason split, its 10 unwritten blocks");
	free(t.ev);

	trace_start();
	if (ftruncate(fd, 34 * KB))
		die("ftruncate");
	t = trace_stop(ino_of(fd));
	check(pick(&t, "shmem_block_clear", a, 8) == 0 && pick(&t, "shmem_folio_split", a, 8) == 0,
	      "truncate to 34K: order-0 pages now, no block or split events");
	free(t.ev);
	close(fd);

	/* A split refused because a pipe holds a page: the folio stays whole, ret 1 */
	int p[2];
	loff_t off = 32 * KB;

	fd = open_new(large, "t-punch-pinned");
	pwrite_pattern(fd, 0, 64 * KB, 8);
	if (pipe(p) || splice(fd, &off, p[1], NULL, PAGE, 0) != PAGE)
		die("splice");
	trace_start();
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 16 * KB, PAGE))
		die("punch");
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_folio_split", a, 8);
	int ok = n > 0;
	for (int i = 0; i < n; i++)
		ok &= is(a[i], "reason", "truncate") && num(a[i], "ret") == 1 &&
		      num(a[i], "old_order") == 4;
	check(ok, "punch 4K in a 64K folio a pipe holds a page of: split event ret 1, "
	      "the folio stays whole (%d events, ret %ld)", n, n ? num(a[0], "ret") : -999);
	check(is_zero(fd, 16 * KB, PAGE) && has_pattern(fd, 0, 16 * KB, 0, 8) &&
	      has_pattern(fd, 20 * KB, 44 * KB, 0, 8), "and the hole reads zeroes, the rest the data");
	free(t.ev);
	close(p[0]);
	close(p[1]);
	close(fd);
}

/* `first` is the first block whose state changed */
static void test_block_first(const char *large)
{
	const struct event *a[8];
	struct trace t;
	int fd = open_new(large, "t-first"), n;

	if (fallocate(fd, 0, 0, 64 * KB))
		die("fallocate");
	trace_start();
	pwrite_pattern(fd, 0, PAGE, 9);
	pwrite_pattern(fd, 0, 16 * KB, 10);
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_block_uptodate", a, 8);
	check(n == 2 && num(a[0], "first") == 0 && num(a[0], "nr") == 1 &&
	      num(a[1], "first") == 1 && num(a[1], "nr") == 3 && is(a[1], "uptodate", "4/16"),
	      "write block 0, then blocks 0-3: the second event is first 1 nr 3, 4/16 "
	      "(%d events, first %ld nr %ld)", n, n > 1 ? num(a[1], "first") : -1,
	      n > 1 ? num(a[1], "nr") : -1);
	free(t.ev);
	close(fd);
}

static int swap_fd;

static void write_32m(void *arg)
{
	(void)arg;
	for (long o = 0; o < 32 * MB; o += 64 * KB)
		pwrite_pattern(swap_fd, o, 64 * KB, o);
}

/*
 * 6.12 swaps a large shmem folio out whole (CONFIG_THP_SWAP) unless it
 * crosses i_size: 64K folios inside the file are not split.
 */
static void test_swap_events(const char *large)
{
	struct trace t;
	long swapped;
	bool ok = true;
	int n;

	swap_fd = open_new(large, "t-swap");
	trace_start();
	bool wrote = run_in_memcg("12M", write_32m, NULL, &swapped);

	check(wrote && swapped > 0,
	      "32M of 64K folios written in a 12M memory cgroup went to swap (%ld KiB)",
	      swapped / KB);
	for (long o = 0; o < 32 * MB && ok; o += 64 * KB)
		ok = has_pattern(swap_fd, o, 64 * KB, o, o);
	t = trace_stop(ino_of(swap_fd));
	check(ok, "and reads back");
	n = count(&t, "shmem_folio_split", "reason", "swapout");
	check(n == 0, "no folio was split for swap-out: they went whole (%d splits)", n);
	n = count(&t, "shmem_alloc_folio", "path", "swapin");
	check(n > 0, "reading it back swapped folios in (%d)", n);
	n = events(&t, "shmem_alloc_folio") - n;
	check(events(&t, "shmem_alloc_time") == n,
	      "every other allocation has its shmem_alloc_time (%d of %d)",
	      events(&t, "shmem_alloc_time"), n);
	free(t.ev);
	close(swap_fd);
}

static void test_default_mount_events(const char *plain, const char *huge)
{
	const struct event *a[8];
	struct trace t;
	int fd, n;

	fd = open_new(plain, "t-default");
	trace_start();
	pwrite_pattern(fd, 0, 8 * KB, 8);
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_alloc_folio", a, 8);
	check(n == 2 && num(a[0], "order") == 0 && num(a[1], "order") == 0 &&
	      is(a[0], "orders", "0x0") && is(a[0], "path", "write"),
	      "default mount: an 8K write gives two order-0 shmem_alloc_folio");
	n = pick(&t, "shmem_block_uptodate", a, 8);
	check(n == 0, "and no shmem_block_uptodate: order-0 folios have no blocks (%d)", n);
	free(t.ev);
	close(fd);

	fd = open_new(huge, "t-huge");
	trace_start();
	pwrite_pattern(fd, 0, PAGE, 9);
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_alloc_folio", a, 8);
	check(n == 1 && num(a[0], "order") == 9 && is(a[0], "orders", "0x200") &&
	      is(a[0], "path", "write"),
	      "huge=always: a 4K write gives one order-9 shmem_alloc_folio");
	free(t.ev);
	close(fd);

	fd = memfd_create("t-fault", 0);
	if (fd < 0 || ftruncate(fd, PAGE))
		die("memfd");
	trace_start();
	char *map = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	map[0] = 1;
	t = trace_stop(ino_of(fd));
	n = pick(&t, "shmem_alloc_folio", a, 8);
	check(n == 1 && num(a[0], "order") == 0 && is(a[0], "path", "fault"),
	      "a fault on a memfd gives one order-0 shmem_alloc_folio, path fault");
	n = pick(&t, "shmem_alloc_time", a, 8);
	check(n == 1 && num(a[0], "index") == 0 && num(a[0], "ns") >= 0,
	      "and one shmem_alloc_time (%d)", n);
	munmap(map, PAGE);
	free(t.ev);
	close(fd);
}

/* Folios added by UFFDIO_COPY have an allocation event too */
static void test_userfault_events(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct uffdio_copy copy = { 0 };
	const struct event *a[8];
	struct trace t;
	char *map, *src;
	int uffd, fd, n;

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
		die("userfaultfd");
	fd = memfd_create("t-uffd", 0);
	if (fd < 0 || ftruncate(fd, PAGE))
		die("memfd");
	map = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	src = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || src == MAP_FAILED)
		die("mmap");
	fill(src, PAGE, 11);
	reg.range.start = (uintptr_t)map;
	reg.range.len = PAGE;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	copy.dst = (uintptr_t)map;
	copy.src = (uintptr_t)src;
	copy.len = PAGE;
	trace_start();
	int r = ioctl(uffd, UFFDIO_COPY, &copy);
	t = trace_stop(ino_of(fd));
	check(!r && copy.copy == PAGE && has_pattern(fd, 0, PAGE, 0, 11),
	      "UFFDIO_COPY of a page into a shmem mapping");
	n = pick(&t, "shmem_alloc_folio", a, 8);
	check(n == 1 && is(a[0], "path", "userfault") && num(a[0], "index") == 0 &&
	      num(a[0], "order") == 0,
	      "it fires one shmem_alloc_folio, path userfault (%d, path %s)", n,
	      n ? field(a[0], "path") : "-");
	n = pick(&t, "shmem_alloc_time", a, 8);
	check(n == 0, "and no shmem_alloc_time: it allocates outside shmem_get_folio (%d)", n);
	free(t.ev);
	munmap(map, PAGE);
	munmap(src, PAGE);
	close(fd);
	close(uffd);
}

/* A symlink too long to be inline takes a folio: path other */
static void test_symlink_events(const char *plain)
{
	char target[300], path[512];
	const struct event *a[8];
	struct stat st;
	struct trace t;
	int n;

	memset(target, 'l', sizeof(target) - 1);
	target[sizeof(target) - 1] = 0;
	snprintf(path, sizeof(path), "%s/t-symlink", plain);
	unlink(path);
	trace_start();
	if (symlink(target, path))
		die("symlink");
	if (lstat(path, &st))
		die("lstat");
	t = trace_stop(st.st_ino);
	n = pick(&t, "shmem_alloc_folio", a, 8);
	check(n == 1 && is(a[0], "path", "other"),
	      "a %zu-byte symlink fires one shmem_alloc_folio, path other (%d, path %s)",
	      strlen(target), n, n ? field(a[0], "path") : "-");
	free(t.ev);
	unlink(path);
}

/* In-kernel users of shmem_read_folio() (SGP_CACHE): path kernel */
static void test_kernel_path_events(void)
{
	struct udmabuf_create create = { 0 };
	const struct event *a[8];
	struct trace t;
	int dev, memfd, buf, n;

	dev = open("/dev/udmabuf", O_RDWR);
	if (!check(dev >= 0, "/dev/udmabuf for the kernel-path event (CONFIG_UDMABUF): %s",
		   dev >= 0 ? "yes" : strerror(errno)))
		return;
	memfd = memfd_create("t-kernel", MFD_ALLOW_SEALING);
	if (memfd < 0 || ftruncate(memfd, PAGE) || fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		die("memfd");
	create.memfd = memfd;
	create.flags = UDMABUF_FLAGS_CLOEXEC;
	create.size = PAGE;
	trace_start();
	buf = ioctl(dev, UDMABUF_CREATE, &create);
	t = trace_stop(ino_of(memfd));
	check(buf >= 0, "UDMABUF_CREATE on a memfd hole: %s", buf >= 0 ? "ok" : strerror(errno));
	n = pick(&t, "shmem_alloc_folio", a, 8);
	check(n == 1 && is(a[0], "path", "kernel"),
	      "pinning the hole (shmem_read_folio) fires shmem_alloc_folio, path kernel "
	      "(%d, path %s)", n, n ? field(a[0], "path") : "-");
	free(t.ev);
	if (buf >= 0)
		close(buf);
	close(memfd);
	close(dev);
}

/* Does the kernel have the shmem events?  A check that fails if not */
bool trace_available(void)
{
	return check(!access(TRACING "/events/shmem", F_OK), "the kernel has the shmem trace events");
}

void trace_tests(const char *large, const char *plain, const char *huge,
		 const char *hugelarge)
{
	if (!trace_available())
		return;
	test_fallocate_events(large);
	test_write_events(large);
	test_block_first(large);
	test_zero_events(large);
	test_charge_fallback(large);
	test_charge_fallback_index(hugelarge);
	test_punch_events(large);
	test_swap_events(large);
	test_default_mount_events(plain, huge);
	test_userfault_events();
	test_symlink_events(plain);
	test_kernel_path_events();
}
