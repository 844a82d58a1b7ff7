// SPDX-License-Identifier: GPL-2.0
/*
 * The append ramp of large_folios mounts: the folio orders that known
 * workloads get, from the shmem_alloc_folio events, against the rule of
 * Documentation/filesystems/tmpfs.rst; the memory held past EOF, and
 * what memory pressure and unlink give back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib.h"

/* Half of PMD size: a PMD could map a PMD-sized folio across EOF */
#define RAMP_MAX_ORDER 8

/*
 * The rule: a write that continues a run of appends that began at page
 * @start may use, at page @index, the order of an eighth of the run so
 * far, up to RAMP_MAX_ORDER, aligned at @index.
 */
static int ramp_order(long index, long start)
{
	long eighth = (index - start) / 8;
	int order = 0;

	while (order < RAMP_MAX_ORDER && (2L << order) <= eighth)
		order++;
	while (order && (index & ((1L << order) - 1)))
		order--;
	return order;
}

struct folio_rec {
	long index;
	int order;
	bool ramp;
};

/* The folios write() added to pages [from, to), in the order added */
static int written_folios(const struct trace *t, long from, long to,
			  struct folio_rec *out, int max)
{
	int n = 0;

	for (int i = 0; i < t->nr && n < max; i++) {
		const struct event *e = &t->ev[i];
		long index = num(e, "index");

		if (strcmp(e->name, "shmem_alloc_folio") || !is(e, "path", "write") ||
		    index < from || index >= to)
			continue;
		out[n].index = index;
		out[n].order = num(e, "order");
		out[n].ramp = field(e, "ramp") != NULL;
		n++;
	}
	return n;
}

/* How many of the n folios write() added to pages [from, to) are base pages, none the ramp's */
static int base_pages(const struct trace *t, long from, long to, int *n)
{
	struct folio_rec *rec = calloc(to - from, sizeof(*rec));
	int base = 0;

	*n = written_folios(t, from, to, rec, to - from);
	for (int i = 0; i < *n; i++)
		base += rec[i].order == 0 && !rec[i].ramp;
	free(rec);
	return base;
}

/*
 * Do 4K appends to pages [from, to), in a run that began at page start,
 * get the folios the rule gives, every one larger than a page marked as
 * the ramp's?
 */
static void check_run(const struct trace *t, long from, long to, long start,
		      const char *what)
{
	int max = to - from, n, want = 0, bad = -1;
	struct folio_rec *got = calloc(max, sizeof(*got));

	n = written_folios(t, from, to, got, max);
	for (long index = from; index < to; want++) {
		int order = ramp_order(index, start);

		if (bad < 0 && (want >= n || got[want].index != index ||
				got[want].order != order || got[want].ramp != (order > 0)))
			bad = want;
		index += 1L << order;
	}
	if (bad < 0 && n != want)
		bad = want;
	if (!check(bad < 0, "%s: %d folios, each of the rule's order", what, n) && bad < n)
		diag("folio %d: index %ld order %d%s", bad, got[bad].index, got[bad].order,
		     got[bad].ramp ? " ramp" : "");
	free(got);
}

/* 4K appends with write() of pages [from, to) of the pattern of seed */
static void append_pages(int fd, long from, long to, unsigned int seed)
{
	char *buf = malloc((to - from) * PAGE);

	fill(buf, (to - from) * PAGE, seed);
	for (long p = 0; p < to - from; p++)
		if (write(fd, buf + p * PAGE, PAGE) != PAGE)
			die("write");
	free(buf);
}

static void test_appends(const char *large)
{
	int fd = open_new(large, "r-append");
	long pages = 20 * MB / PAGE;
	struct folio_rec first[64];
	struct trace t;
	int n, order1 = -1;

	trace_start();
	append_pages(fd, 0, pages, 1);
	t = trace_stop(ino_of(fd));
	check_run(&t, 0, pages, 0, "4K appends to 20M");
	/* The first MiB, as the documentation has it */
	n = written_folios(&t, 0, 256, first, 64);
	for (int i = 0; i < n && order1 < 0; i++)
		if (first[i].order)
			order1 = i;
	check(n == 48 && order1 == 16 && first[order1].index == 16 &&
	      first[order1].order == 1 && first[n - 1].order == 4,
	      "the first MiB: 16 pages, then 8K folios from 64K on, 48 folios (%d, "
	      "the first larger one the %dth)", n, order1);
	int pmd_sized = 0;

	n = 0;
	for (int i = 0; i < t.nr; i++) {
		bool alloc = !strcmp(t.ev[i].name, "shmem_alloc_folio");

		n += alloc && num(&t.ev[i], "order") == 8 && num(&t.ev[i], "index") == 2048;
		pmd_sized += alloc && num(&t.ev[i], "order") >= 9;
	}
	check(n == 1 && !pmd_sized, "the first 1M folio at 8M, no PMD-sized folio (%d)", pmd_sized);
	check(has_pattern(fd, 0, pages * PAGE, 0, 1), "20M of appends read back");
	check(blocks_of(fd) == pages * PAGE / 512, "st_blocks is the file's 20M: nothing past EOF (%ld)",
	      blocks_of(fd));
	check(folio_order_at(fd, 19 * MB, NULL) == 8, "/proc/kpageflags: a 1M folio at 19M");
	free(t.ev);
	close(fd);
}

/* A write past EOF starts a new run there, a rewrite leaves the run alone */
static void test_hole_and_rewrite(const char *large)
{
	int fd = open_new(large, "r-hole");
	struct trace t;

	trace_start();
	append_pages(fd, 0, 64, 2);
	lseek(fd, MB, SEEK_SET);
	append_pages(fd, 256, 320, 3);
	t = trace_stop(ino_of(fd));
	check_run(&t, 0, 64, 0, "appends from 0");
	check_run(&t, 256, 320, 256, "after a seek to 1M, a new run from there");
	check(has_pattern(fd, 0, 64 * PAGE, 0, 2) && is_zero(fd, 64 * PAGE, MB - 64 * PAGE) &&
	      has_pattern(fd, MB, 64 * PAGE, MB, 3), "the data and the hole read back");
	free(t.ev);
	close(fd);

	fd = open_new(large, "r-rewrite");
	trace_start();
	append_pages(fd, 0, 32, 4);
	pwrite_pattern(fd, 8 * PAGE, PAGE, 4);
	pwrite_pattern(fd, 8 * PAGE + 100, 1000, 5);
	lseek(fd, 0, SEEK_END);
	append_pages(fd, 32, 128, 6);
	t = trace_stop(ino_of(fd));
	check_run(&t, 0, 128, 0, "rewrites in the middle do not break the run");
	free(t.ev);
	close(fd);
}

/* Each file keeps its own run; a second stream in a file is sized by its writes */
static void test_two_files_two_streams(const char *large)
{
	int a = open_new(large, "r-file-a"), b = open_new(large, "r-file-b");
	struct trace ta, tb;
	int n, small;

	trace_start();
	for (long p = 0; p < 128; p++) {
		append_pages(a, p, p + 1, 7 + p);
		append_pages(b, p, p + 1, 9 + p);
	}
	tb = trace_stop(ino_of(b));
	ta = trace_stop(ino_of(a));
	check_run(&ta, 0, 128, 0, "two files appended in turn: the first");
	check_run(&tb, 0, 128, 0, "two files appended in turn: the second");
	free(ta.ev);
	free(tb.ev);
	close(a);
	close(b);

	a = open_new(large, "r-streams");
	trace_start();
	append_pages(a, 0, 64, 11);
	for (long p = 0; p < 64; p++) {
		pwrite_pattern(a, 8 * MB + p * PAGE, PAGE, 12);
		pwrite_pattern(a, (64 + p) * PAGE, PAGE, 13);
	}
	ta = trace_stop(ino_of(a));
	check_run(&ta, 0, 64, 0, "one file, two streams: the first alone");
	small = base_pages(&ta, 64, 128, &n);
	check(n == 64 && small == 64,
	      "once the second stream is at EOF, the first's writes get base pages (%d of %d)",
	      small, n);
	check_run(&ta, 2048, 2112, 2048, "the stream at EOF ramps from where it began");
	free(ta.ev);
	close(a);
}

/* Two processes appending with O_APPEND, in turn, continue one run */
static void test_o_append(const char *large)
{
	int fd = open_new(large, "r-o-append"), turn[2][2];
	char path[512];
	struct trace t;
	pid_t child;
	bool same = true;
	char c = 0;

	snprintf(path, sizeof(path), "%s/r-o-append", large);
	if (pipe(turn[0]) || pipe(turn[1]))
		die("pipe");
	trace_start();
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		int own = open(path, O_WRONLY | O_APPEND);
		char page[PAGE];

		for (int i = 0; i < 64; i++) {
			if (read(turn[1][0], &c, 1) != 1)
				_exit(1);
			fill(page, PAGE, 2 * i + 1);
			if (write(own, page, PAGE) != PAGE || write(turn[0][1], &c, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	int own = open(path, O_WRONLY | O_APPEND);
	char page[PAGE];
	int status;

	for (int i = 0; i < 64; i++) {
		fill(page, PAGE, 2 * i);
		if (write(own, page, PAGE) != PAGE || write(turn[1][1], &c, 1) != 1 ||
		    read(turn[0][0], &c, 1) != 1)
			die("O_APPEND write");
	}
	waitpid(child, &status, 0);
	t = trace_stop(ino_of(fd));
	check(WIFEXITED(status) && !WEXITSTATUS(status), "the second O_APPEND writer finished");
	check_run(&t, 0, 128, 0, "O_APPEND from two processes in turn: one run");
	for (int i = 0; i < 128; i++)
		same &= has_pattern(fd, i * PAGE, PAGE, i * PAGE, i);
	check(same, "each writer's pages where O_APPEND put them");
	free(t.ev);
	close(own);
	close(fd);
	for (int i = 0; i < 2; i++) {
		close(turn[i][0]);
		close(turn[i][1]);
	}
}

/* write, pwrite, writev, sendfile and splice at EOF all continue the run */
static void test_write_family(const char *large)
{
	int fd = open_new(large, "r-family"), src = open_new(large, "r-source"), pipefd[2];
	char *buf = malloc(128 * PAGE);
	struct trace t;

	fill(buf, 128 * PAGE, 14);
	if (pwrite(src, buf, 128 * PAGE, 0) != 128 * PAGE || pipe(pipefd))
		die("source");
	trace_start();
	for (long p = 0; p < 128; p++) {
		char *page = buf + p * PAGE;
		off_t in = p * PAGE;
		struct iovec iov[2] = { { page, 1000 }, { page + 1000, PAGE - 1000 } };
		ssize_t done;

		switch (p % 5) {
		case 0: done = write(fd, page, PAGE); break;
		case 1: done = pwrite(fd, page, PAGE, p * PAGE); lseek(fd, PAGE, SEEK_CUR); break;
		case 2: done = writev(fd, iov, 2); break;
		case 3: done = sendfile(fd, src, &in, PAGE); break;
		default:
			done = write(pipefd[1], page, PAGE) == PAGE ?
			       splice(pipefd[0], NULL, fd, NULL, PAGE, 0) : -1;
		}
		if (done != PAGE)
			die("write family");
	}
	t = trace_stop(ino_of(fd));
	check_run(&t, 0, 128, 0, "write, pwrite, writev, sendfile and splice at EOF: one run");
	check(has_pattern(fd, 0, 128 * PAGE, 0, 14), "and the data read back");
	free(t.ev);
	free(buf);
	close(pipefd[0]);
	close(pipefd[1]);
	close(src);
	close(fd);
}

/* A truncation ends the run; so does fallocate() past EOF, a hole to a write */
static void test_truncate_ends_run(const char *large)
{
	int fd = open_new(large, "r-truncate");
	struct trace t;

	append_pages(fd, 0, 64, 15);
	if (ftruncate(fd, 32 * PAGE))
		die("ftruncate");
	lseek(fd, 0, SEEK_END);
	trace_start();
	append_pages(fd, 32, 160, 16);
	t = trace_stop(ino_of(fd));
	check_run(&t, 32, 160, 32, "after truncating down, a new run from the new EOF");
	free(t.ev);
	if (ftruncate(fd, 256 * PAGE))
		die("ftruncate");
	lseek(fd, 0, SEEK_END);
	trace_start();
	append_pages(fd, 256, 320, 17);
	if (fallocate(fd, 0, 320 * PAGE, 16 * PAGE))
		die("fallocate");
	lseek(fd, 0, SEEK_END);
	append_pages(fd, 336, 400, 18);
	t = trace_stop(ino_of(fd));
	check_run(&t, 256, 320, 256, "after truncating up, a new run from the new EOF");
	check_run(&t, 336, 400, 336, "after fallocate() past EOF, a new run from the new EOF");
	check(has_pattern(fd, 32 * PAGE, 128 * PAGE, 32 * PAGE, 16) &&
	      is_zero(fd, 160 * PAGE, 96 * PAGE) && has_pattern(fd, 256 * PAGE, 64 * PAGE, 256 * PAGE, 17) &&
	      is_zero(fd, 320 * PAGE, 16 * PAGE) && has_pattern(fd, 336 * PAGE, 64 * PAGE, 336 * PAGE, 18),
	      "the data and the holes read back");
	free(t.ev);
	close(fd);
}

/*
 * What a punch or truncation frees is what it frees on a default mount:
 * punched, the files differ by the ramp's pages past EOF alone; truncated,
 * by nothing.
 */
static void test_punch_truncate_blocks(const char *large, const char *plain)
{
	const char *dirs[2] = { plain, large };
	long full[2], punched[2], cut[2];

	for (int k = 0; k < 2; k++) {
		int fd = open_new(dirs[k], "r-blocks");

		append_pages(fd, 0, 75, 22);
		full[k] = blocks_of(fd);
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 64 * KB, 128 * KB))
			die("punch");
		punched[k] = blocks_of(fd);
		if (ftruncate(fd, 50 * KB))
			die("ftruncate");
		cut[k] = blocks_of(fd);
		close(fd);
	}
	/* 75 pages: the ramp's 8-page folio at page 72 reaches 5 pages past EOF */
	check(full[0] == 75 * 8 && full[1] == 80 * 8,
	      "75 pages appended: st_blocks %ld on a default mount, %ld on large_folios",
	      full[0], full[1]);
	check(punched[0] == full[0] - 32 * 8 && punched[1] == full[1] - 32 * 8,
	      "a 128K hole punched frees 32 pages on both (%ld, %ld)", punched[0], punched[1]);
	check(cut[0] == 13 * 8 && cut[1] == cut[0],
	      "truncated to 50K: 13 pages on both, nothing past EOF (%ld, %ld)", cut[0], cut[1]);
}

/* No ramp without large_folios, nor with shmem_enabled=deny */
static void test_no_ramp(const char *large, const char *plain)
{
	char saved[64];
	const char *enabled = "/sys/kernel/mm/transparent_hugepage/shmem_enabled";
	const char *what[2] = { "a default mount: 4K appends get base pages",
				"shmem_enabled=deny: no ramp on large_folios" };
	const char *dirs[2] = { plain, large };

	thp_setting(enabled, saved, sizeof(saved));
	for (int k = 0; k < 2; k++) {
		int fd = open_new(dirs[k], "r-no-ramp"), n, small;
		struct trace t;

		sysfs_write(enabled, k ? "deny" : saved);
		trace_start();
		append_pages(fd, 0, 256, 19);
		t = trace_stop(ino_of(fd));
		small = base_pages(&t, 0, 256, &n);
		check(n == 256 && small == 256, "%s (%d of %d)", what[k], small, n);
		free(t.ev);
		close(fd);
	}
	sysfs_write(enabled, saved);
}

static int memcg_fd;

static void append_8m(void *buf)
{
	for (long p = 0; p < 8 * MB / PAGE; p++)
		if (write(memcg_fd, (char *)buf + p * PAGE, PAGE) != PAGE)
			_exit(1);
}

/* A memcg that refuses the ramp's orders: fall back to a base page */
static void test_memcg_refuses(const char *large)
{
	char *buf = malloc(8 * MB);
	int ramped = 0, bad = 0;
	long swapped;
	struct trace t;

	fill(buf, 8 * MB, 21);
	memcg_fd = open_new(large, "r-memcg");
	trace_start();
	check(run_in_memcg("2M", append_8m, buf, &swapped),
	      "8M of 4K appends in a 2M memory cgroup, on swap");
	t = trace_stop(ino_of(memcg_fd));
	for (int i = 0; i < t.nr; i++) {
		const struct event *e = &t.ev[i];
		bool base = false;

		if (strcmp(e->name, "shmem_alloc_fallback") || !is(e, "reason", "charge"))
			continue;
		ramped += field(e, "ramp") != NULL;
		for (int j = i + 1; j < t.nr && !base; j++)
			base = !strcmp(t.ev[j].name, "shmem_alloc_folio") &&
			       num(&t.ev[j], "index") == num(e, "index") &&
			       num(&t.ev[j], "order") == 0;
		bad += !base || num(e, "next_order") != 0 || !field(e, "ramp");
	}
	check(ramped > 0 && !bad,
	      "charges the ramp's orders fail fall back to a base page, marked ramp (%d, %d not so)",
	      ramped, bad);
	check(has_pattern(memcg_fd, 0, 8 * MB, 0, 21), "and every byte reads back");
	free(t.ev);
	free(buf);
	close(memcg_fd);
}

/*
 * A PMD may map a PMD-sized folio across EOF: the ramp never makes one, so
 * a shared mapping of a file of appends still faults past EOF (SIGBUS).
 */
static void test_sigbus_past_eof(const char *large)
{
	int fd = open_new(large, "r-sigbus"), status;
	pid_t child;

	append_pages(fd, 0, 17 * MB / PAGE, 23);
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		char *map = mmap(NULL, 18 * MB, PROT_READ, MAP_SHARED, fd, 0);
		volatile char c;

		if (map == MAP_FAILED)
			_exit(2);
		c = map[17 * MB - 1];
		c = map[17 * MB + 8 * KB];
		(void)c;
		_exit(0);
	}
	waitpid(child, &status, 0);
	check(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS,
	      "17M of appends, mapped: a load 8K past EOF is SIGBUS, as on a default mount (%#x)",
	      status);
	close(fd);
}

static int slack_fds[3];
static void (*slack_before)(const char *dir);
static long slack_big;

/*
 * Three files with the ramp's slack past EOF, then more than fits with it;
 * from one page of memory of its own (each page of the files is the
 * pattern of its seed from the page's start).  slack_before, if set, runs
 * first in the group, on the files' directory; the last file has
 * slack_big bytes.
 */
static void fill_past_slack(void *path)
{
	static char page[PAGE];
	int big = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (slack_before) {
		char dir[512];

		snprintf(dir, sizeof(dir), "%s", (char *)path);
		*strrchr(dir, '/') = '\0';
		slack_before(dir);
	}

	for (int i = 0; i < 3; i++) {
		fill(page, PAGE, 24 + i);
		for (long p = 0; p <= 8 * MB / PAGE; p++)
			if (write(slack_fds[i], page, PAGE) != PAGE)
				_exit(1);
	}
	for (long p = 0; big >= 0 && p < slack_big / PAGE; p++)
		if (write(big, page, PAGE) != PAGE)
			_exit(1);
	_exit(big < 0);
}

/*
 * A memory cgroup at its limit, without swap, gets back what its files
 * hold past EOF: memcg reclaim reaches the huge page shrinker.  @before,
 * if not NULL, runs in the group first (on @large), and keeps @kept bytes
 * of the group's memory, which the last file leaves out of its 6M: @what
 * says what it does.
 */
void test_memcg_trims_slack(const char *large, void (*before)(const char *dir),
			    long kept, const char *what)
{
	char path[512];
	long swapped;
	bool exact = true;

	slack_before = before;
	slack_big = 6 * MB - kept;
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "r-slack%d", i);
		slack_fds[i] = open_new(large, path);
	}
	snprintf(path, sizeof(path), "%s/r-slack-big", large);
	check(run_in_memcg_swap("32M", "0", fill_past_slack, path, &swapped),
	      "%sthree files of 8M + 4K in 4K appends and one of %ldK in a 32M memory cgroup "
	      "without swap: no OOM kill", what, slack_big / KB);
	for (int i = 0; i < 3; i++) {
		exact &= blocks_of(slack_fds[i]) == (8 * MB + PAGE) / 512;
		for (long off = 0; off <= 8 * MB; off += PAGE)
			exact &= has_pattern(slack_fds[i], off, PAGE, off, 24 + i);
		close(slack_fds[i]);
	}
	check(exact, "memcg reclaim split what the three held past EOF; their data reads back");
	unlink(path);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/r-slack%d", large, i);
		unlink(path);
	}
}

#define PARENT "/sys/fs/cgroup/shmem-ramp-parent"

static void two_appended_16m(void *dir)
{
	static char page[PAGE];

	for (int i = 0; i < 2; i++) {
		char name[16];
		int fd;

		snprintf(name, sizeof(name), "r-gone%d", i);
		fd = open_new(dir, name);
		for (long p = 0; p <= 16 * MB / PAGE; p++)
			if (write(fd, page, PAGE) != PAGE)
				_exit(1);
		close(fd);
	}
}

static void write_18m(void *dir)
{
	static char chunk[MB];
	int fd = open_new(dir, "r-gone-big");

	for (long off = 0; off < 18 * MB; off += MB)
		if (pwrite(fd, chunk, MB, off) != MB)
			_exit(1);
	close(fd);
}

/*
 * A removed group's slack past EOF is split when its parent reaches its
 * limit: the parent's reclaim skips the offline group.
 */
static void test_removed_group_slack(const char *large, const char *plain)
{
	char path[512];
	bool appended, wrote;

	cgroup_siblings(PARENT, "child", "other");
	sysfs_write(PARENT "/memory.max", "52736K");
	sysfs_write(PARENT "/memory.swap.max", "0");
	appended = run_in_cgroup(PARENT "/child", two_appended_16m, (void *)large);
	rmdir(PARENT "/child");
	wrote = run_in_cgroup(PARENT "/other", write_18m, (void *)plain);
	check(appended && wrote,
	      "a group appends two files of 16M + 4K and is removed; another writes 18M "
	      "under their 52M parent without swap: no OOM kill");
	cgroup_siblings_remove(PARENT, "child", "other");
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/r-gone%d", large, i);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/r-gone-big", plain);
	unlink(path);
}

/* A file of 17M + 4K in 4K appends: a 1M folio at EOF, 1M - 4K past it */
static void appended_17m(const char *dir, const char *name)
{
	static char page[PAGE];
	int fd = open_new(dir, name);

	for (long p = 0; p <= 17 * MB / PAGE; p++)
		if (write(fd, page, PAGE) != PAGE)
			die("append");
	close(fd);
}

/*
 * UFFDIO_COPY on a mount full only because of what a file holds past EOF
 * makes room as a write does (it failed with ENOMEM).
 */
static void test_uffd_copy_full_mount(void)
{
	const char *dir = mount_tmpfs("ramp-full", "size=20M,large_folios");
	static char src[PAGE] __attribute__((aligned(PAGE)));
	int fd, uffd;
	char *map;
	long r;

	appended_17m(dir, "a");
	fd = open_new(dir, "b");
	pwrite_pattern(fd, 0, 2 * MB, 28);
	close(fd);
	fd = open_new(dir, "c");
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0 || ftruncate(fd, MB))
		die("userfaultfd");
	map = mmap(NULL, MB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .range = { (unsigned long)map, MB },
				       .mode = UFFDIO_REGISTER_MODE_MISSING };
	if (map == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api) ||
	    ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	memset(src, 'c', PAGE);
	struct uffdio_copy copy = { .dst = (unsigned long)map, .src = (unsigned long)src,
				    .len = PAGE };
	r = ioctl(uffd, UFFDIO_COPY, &copy);
	check(r == 0 && copy.copy == PAGE && map[0] == 'c',
	      "size=20M, 17M + 4K appended, 2M written: UFFDIO_COPY of a page gets room "
	      "(%s)", r ? strerror(errno) : "ok");
	munmap(map, MB);
	close(uffd);
	close(fd);
	umount2(dir, MNT_DETACH);
}

/*
 * A user at its quota gets room from its own files' folios past EOF, not
 * only from the first files on the shrinker's list.
 */
/*
 * The user's second file, 2.5M: with user-a's 17M + 4K of appends, within
 * a 20M quota only once user-a's slack goes.  Did every write succeed?
 */
static bool write_user_b(const char *dir)
{
	static char half[MB / 2];
	int fd = open_new(dir, "user-b");
	bool ok = true;

	for (long off = 0; ok && off < 5 * MB / 2; off += MB / 2)
		ok = pwrite(fd, half, MB / 2, off) == MB / 2;
	close(fd);
	return ok;
}

static void test_quota_slack(void)
{
	const char *dir = mount_tmpfs("ramp-quota",
				      "size=400M,large_folios,usrquota,usrquota_block_hardlimit=20M");
	char name[32];
	int status;
	pid_t child;

	chmod(dir, 01777);
	for (int pass = 0; pass < 2; pass++) {
		child = fork();
		if (child < 0)
			die("fork");
		if (child == 0) {
			if (setgid(1000) || setuid(1000))
				_exit(2);
			if (!pass) {
				appended_17m(dir, "user-a");
				_exit(0);
			}
			_exit(!write_user_b(dir));
		}
		waitpid(child, &status, 0);
		if (pass)
			break;
		/* root's files, with their slack, after the user's on the list */
		for (int i = 0; i < 12; i++) {
			snprintf(name, sizeof(name), "root%d", i);
			appended_17m(dir, name);
		}
	}
	check(WIFEXITED(status) && !WEXITSTATUS(status),
	      "a user with a 20M quota and 17M + 4K in appends writes 2.5M more (%#x)", status);
	umount2(dir, MNT_DETACH);
}

/*
 * Root's 300 files of 17 appends of 4K: 68K written, a 4K page past EOF
 * each; in the user's group, which a user quota does not count
 */
static void root_files_with_slack(const char *dir, int n)
{
	for (int i = 0; i < n; i++) {
		char name[32];
		int fd;

		snprintf(name, sizeof(name), "root-x%d", i);
		fd = open_new(dir, name);
		if (fchown(fd, 0, 1000))
			die("fchown");
		append_pages(fd, 0, 17, 30);
		close(fd);
	}
}

#define QUOTA_GROUPS "/sys/fs/cgroup/shmem-quota"

/* As uid 1000: 17M + 4K of appends, then 2.5M more */
static void user_a_then_b(void *dir)
{
	if (setgid(1000) || setuid(1000))
		_exit(2);
	appended_17m(dir, "user-a");
	_exit(!write_user_b(dir));
}

/*
 * A user's own slack behind @n of root's files on the lists: a user
 * quota's refusal splits the user's files, not the first ones listed,
 * nor those of the user's group (it got EDQUOT and split root's).  A
 * refusal passes over at most 1024 others' files under the list's lock,
 * and the next goes on from there: behind 2000, a write's refusals at
 * its large order and at order 0 reach the user's slack between them.
 * @in_group: the user writes in a memory cgroup, so that its files are
 * on the group's list behind root's on the superblock's (a refusal that
 * ran out of passes there started again at the superblock's list, and
 * the user got EDQUOT on every retry).
 */
static void test_quota_slack_behind_others(int n, bool in_group)
{
	const char *dir = mount_tmpfs("ramp-quota2",
				      "size=400M,large_folios,usrquota,usrquota_block_hardlimit=20M");
	int kept = 0;
	bool wrote;

	chmod(dir, 01777);
	root_files_with_slack(dir, n);
	if (in_group)
		cgroup_siblings(QUOTA_GROUPS, "user", "spare");
	wrote = run_in_cgroup(in_group ? QUOTA_GROUPS "/user" : "/sys/fs/cgroup",
			      user_a_then_b, (void *)dir);
	for (int i = 0; i < n; i++) {
		char path[512];
		struct stat st;

		snprintf(path, sizeof(path), "%s/root-x%d", dir, i);
		kept += !stat(path, &st) && st.st_blocks * 512 > 68 * KB;
	}
	check(wrote, "behind %d of root's files with slack, a user %swith a 20M quota and "
	      "17M + 4K in appends writes 2.5M more", n, in_group ? "in a memory cgroup " : "");
	check(kept == n, "and root's files keep their slack (%d of %d)", kept, n);
	umount2(dir, MNT_DETACH);
	if (in_group)
		cgroup_siblings_remove(QUOTA_GROUPS, "user", "spare");
}

/* Shmem in KiB, the CPUs' pending updates folded in */
static long shmem_kb(void)
{
	sysfs_write("/proc/sys/vm/stat_refresh", "1");
	return meminfo_kb("Shmem:");
}

/* Shmem's growth, in KiB, while fn(dir) runs */
static long shmem_growth(void (*fn)(const char *), const char *dir)
{
	long before = shmem_kb();

	fn(dir);
	return shmem_kb() - before;
}

static int *bound_fds;

static void small_files(const char *dir)
{
	char name[32];

	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		int fd = open_new(dir, name);

		pwrite_pattern(fd, 0, 8 * KB, i);
		close(fd);
	}
}

static void appended_files(const char *dir)
{
	char name[32], page[PAGE];

	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "a%d", i);
		bound_fds[i] = open_new(dir, name);
	}
	for (int round = 0; round < 25; round++)
		for (int i = 0; i < 500; i++) {
			fill(page, PAGE, i + round);
			if (write(bound_fds[i], page, PAGE) != PAGE)
				die("append");
		}
}

static void sparse_file(const char *dir)
{
	int fd = open_new(dir, "sparse0");
	unsigned long x = 26405;

	for (int i = 0; i < 2048; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		pwrite_pattern(fd, (x >> 33) % (64 * MB / PAGE) * PAGE, PAGE, i);
	}
	bound_fds[0] = fd;
}

static void remove_files(const char *dir, const char *prefix, int n)
{
	char path[512];

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s%d", dir, prefix, i);
		unlink(path);
	}
}

static void drop_caches(void)
{
	sysfs_write("/proc/sys/vm/drop_caches", "2");
}

/*
 * The memory goals, on a large_folios mount against a default one:
 * small files stay small, appends hold at most an eighth past EOF until
 * memory pressure, random writes into a sparse file are as on stock.
 */
static void test_memory_bounds(const char *large, const char *plain)
{
	const char *dirs[2] = { plain, large };
	long grown[2], written[2], pressed[2], blocks[2], base;
	bool exact[2] = { true, true };

	/* Other mounts' folios past EOF go first: only ours are split below */
	drop_caches();
	base = shmem_kb();
	bound_fds = calloc(500, sizeof(int));
	for (int k = 0; k < 2; k++) {
		grown[k] = shmem_growth(small_files, dirs[k]);
		remove_files(dirs[k], "s", 2000);
	}
	check(grown[1] <= grown[0] * 1.02,
	      "2000 files of 8K: Shmem grows %ld KiB on large_folios, %ld on a default mount",
	      grown[1], grown[0]);

	for (int k = 0; k < 2; k++) {
		written[k] = shmem_growth(appended_files, dirs[k]);
		for (int i = 0; i < 500; i++)
			exact[k] &= blocks_of(bound_fds[i]) == (k ? 26 : 25) * PAGE / 512;
		drop_caches();
		pressed[k] = shmem_kb() - base;
		for (int i = 0; i < 500; i++) {
			exact[k] &= blocks_of(bound_fds[i]) == 25 * PAGE / 512 &&
				    has_pattern(bound_fds[i], 24 * PAGE, PAGE, 24 * PAGE, i + 24);
			close(bound_fds[i]);
		}
		remove_files(dirs[k], "a", 500);
	}
	check(written[1] <= written[0] * 1.15,
	      "500 files of 25 4K appends: Shmem grows %ld KiB on large_folios, %ld on a default mount",
	      written[1], written[0]);
	check(pressed[1] <= pressed[0] * 1.02,
	      "after drop_caches, %ld KiB against %ld: the pages past EOF are gone", pressed[1],
	      pressed[0]);
	check(exact[0] && exact[1],
	      "st_blocks of each: 26 pages on large_folios (a 2-page folio at EOF), 25 on a default "
	      "mount, 25 on both after drop_caches, and the last page reads back");

	for (int k = 0; k < 2; k++) {
		grown[k] = shmem_growth(sparse_file, dirs[k]);
		blocks[k] = blocks_of(bound_fds[0]);
		close(bound_fds[0]);
		remove_files(dirs[k], "sparse", 1);
	}
	check(grown[1] <= grown[0] * 1.02 && blocks[1] == blocks[0],
	      "2048 random 4K writes into a sparse 64M file: Shmem %ld KiB against %ld, "
	      "st_blocks %ld against %ld", grown[1], grown[0], blocks[1], blocks[0]);
	pressed[0] = shmem_kb() - base;
	check(pressed[0] == 0, "after unlink, Shmem is back where it was (%+ld KiB)", pressed[0]);
	free(bound_fds);
}

/* Memcg reclaim splits off the slack: shrink_tests() runs these, also without kmem */
void ramp_slack_reclaim_tests(const char *large, const char *plain)
{
	test_memcg_trims_slack(large, NULL, 0, "");
	test_removed_group_slack(large, plain);
}

void ramp_tests(const char *large, const char *plain)
{
	if (!trace_available())
		return;
	test_appends(large);
	test_hole_and_rewrite(large);
	test_two_files_two_streams(large);
	test_o_append(large);
	test_write_family(large);
	test_truncate_ends_run(large);
	test_punch_truncate_blocks(large, plain);
	test_no_ramp(large, plain);
	test_memcg_refuses(large);
	test_sigbus_past_eof(large);
	test_uffd_copy_full_mount();
	test_quota_slack();
	test_quota_slack_behind_others(300, false);
	test_quota_slack_behind_others(2000, false);
	test_quota_slack_behind_others(1100, true);
	test_memory_bounds(large, plain);
}
