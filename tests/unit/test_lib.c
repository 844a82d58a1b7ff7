// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the tools' library: parsing, names, sysfs mTHP
 * counters, snapshot subtraction and sorting, JSON and histogram output.
 * Snapshots are built by hand; no BPF and no privileges needed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include "lib.h"
#include "shmem_tools.h"

static void test_parse_long(void)
{
	long v = -1;

	check(!shmem_parse_long("42", 1, 100, &v) && v == 42, "parse 42");
	check(shmem_parse_long("0", 1, 100, &v), "0 is below the minimum");
	check(shmem_parse_long("101", 1, 100, &v), "101 is above the maximum");
	check(shmem_parse_long("4x", 1, 100, &v), "trailing junk is refused");
	check(shmem_parse_long("", 1, 100, &v), "an empty string is refused");
	check(shmem_parse_long("99999999999999999999", 1, 100, &v),
	      "overflow is refused");
}

static void test_names(void)
{
	char buf[64];

	shmem_order_size(0, buf, sizeof(buf));
	check(!strcmp(buf, "4K"), "order 0 is 4K (%s)", buf);
	shmem_order_size(4, buf, sizeof(buf));
	check(!strcmp(buf, "64K"), "order 4 is 64K (%s)", buf);
	shmem_order_size(9, buf, sizeof(buf));
	check(!strcmp(buf, "2M"), "order 9 is 2M (%s)", buf);
	shmem_dev_name((8U << 20) | 3, buf, sizeof(buf));
	check(!strcmp(buf, "8:3"), "kernel dev_t 8:3 (%s)", buf);
	check(!strcmp(shmem_fallback_name(SHMEM_STAT_FB_CHARGE), "charge") &&
	      !strcmp(shmem_split_name(SHMEM_STAT_SPLIT_TRUNCATE), "truncate") &&
	      !strcmp(shmem_path_name(SHMEM_STAT_PATH_FALLOC), "fallocate") &&
	      !strcmp(shmem_path_name(SHMEM_STAT_PATH_USERFAULT), "userfault") &&
	      !strcmp(shmem_path_name(99), "?"),
	      "enum names, and ? out of range");
}

static void test_missing(void)
{
	char buf[512];
	struct shmem_info fallback_mode = {
		.signals = SHMEM_SIG_ALLOCS | SHMEM_SIG_FALLBACKS |
			   SHMEM_SIG_LATENCY,
	};
	struct shmem_info all = { .signals = (1U << SHMEM_NR_SIGNALS) - 1 };
	struct shmem_info no_latency = {
		.signals = all.signals & ~SHMEM_SIG_LATENCY,
		.disabled = SHMEM_SIG_LATENCY,
	};

	shmem_missing_signals(&fallback_mode, buf, sizeof(buf));
	check(!strcmp(buf, "exact allocation paths, fallback reasons, block-uptodate transitions, bytes zeroed, splits, swap-in allocations, append ramp"),
	      "missing signals of the fallback mode: %s", buf);
	shmem_missing_signals(&all, buf, sizeof(buf));
	check(!*buf, "nothing missing with every signal");
	shmem_missing_signals(&no_latency, buf, sizeof(buf));
	check(!*buf, "latency turned off is not missing");
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f))
		die(path);
}

static void test_mthp_read(void)
{
	char dir[] = "/tmp/shmem-unit-XXXXXX", path[256];
	struct shmem_snapshot s = {};
	static const struct {
		const char *size, *alloc, *fallback;
	} sizes[] = { { "2048", "7", "1" }, { "64", "12", "0" } };

	if (!mkdtemp(dir))
		die("mkdtemp");
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/hugepages-%skB", dir, sizes[i].size);
		mkdir(path, 0755);
		strcat(path, "/stats");
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/hugepages-%skB/stats/shmem_alloc",
			 dir, sizes[i].size);
		write_file(path, sizes[i].alloc);
		snprintf(path, sizeof(path), "%s/hugepages-%skB/stats/shmem_fallback",
			 dir, sizes[i].size);
		write_file(path, sizes[i].fallback);
	}
	snprintf(path, sizeof(path), "%s/enabled", dir);
	write_file(path, "never");
	check(!shmem_mthp_read(dir, &s), "read a fake mTHP sysfs tree");
	check(s.nr_mthp == 2 && s.mthp[0].kb == 64 && s.mthp[0].alloc == 12 &&
	      s.mthp[1].kb == 2048 && s.mthp[1].alloc == 7 &&
	      s.mthp[1].fallback == 1 && s.mthp[1].split == 0,
	      "two sizes, sorted, missing counters read as 0");
	check(shmem_mthp_read("/nonexistent", &s) && s.nr_mthp == 0,
	      "no mTHP directory: no sizes");
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	if (system(path))
		die("rm");
}

static struct shmem_row_entry *add_row(struct shmem_snapshot *s,
				       enum shmem_row_kind kind, __u64 id,
				       const char *name)
{
	struct shmem_row_entry *e;

	s->rows[kind] = realloc(s->rows[kind],
				(s->nr_rows[kind] + 1) * sizeof(*e));
	e = &s->rows[kind][s->nr_rows[kind]++];
	memset(e, 0, sizeof(*e));
	e->id = id;
	snprintf(e->row.name, sizeof(e->row.name), "%s", name);
	snprintf(e->name, sizeof(e->name), "%s", name);
	return e;
}

static void test_delta(void)
{
	struct shmem_snapshot prev = {}, now = {}, d;
	struct shmem_row_entry *e;

	add_row(&prev, SHMEM_ROWS_FILES, 5, "old")->row.allocs[9] = 2;
	add_row(&now, SHMEM_ROWS_FILES, 6, "new")->row.allocs[0] = 3;
	add_row(&now, SHMEM_ROWS_FILES, 5, "old")->row.allocs[9] = 6;
	/*
	 * dropped by the LRU map and inserted again (another stamp): fewer
	 * than before, or grown back past its old counts
	 */
	e = add_row(&prev, SHMEM_ROWS_FILES, 9, "again");
	e->row.inserted_ns = 100;
	e->row.allocs[0] = 50;
	e = add_row(&now, SHMEM_ROWS_FILES, 9, "again");
	e->row.inserted_ns = 300;
	e->row.allocs[0] = 7;
	e = add_row(&prev, SHMEM_ROWS_FILES, 10, "grown");
	e->row.inserted_ns = 100;
	e->row.allocs[0] = 50;
	e->row.fallbacks = 2;
	e = add_row(&now, SHMEM_ROWS_FILES, 10, "grown");
	e->row.inserted_ns = 300;
	e->row.allocs[0] = 60;
	e->row.fallbacks = 2;
	/* read between its insertion and its stamp: the same row */
	add_row(&prev, SHMEM_ROWS_FILES, 11, "stamped")->row.allocs[0] = 1;
	e = add_row(&now, SHMEM_ROWS_FILES, 11, "stamped");
	e->row.inserted_ns = 200;
	e->row.allocs[0] = 4;
	/*
	 * Review suspicion (b): read before its stamp with 5, then dropped
	 * and inserted again with 2: not 2 - 5 (a wrapped count), but 2
	 */
	add_row(&prev, SHMEM_ROWS_FILES, 12, "unstamped")->row.allocs[0] = 5;
	e = add_row(&now, SHMEM_ROWS_FILES, 12, "unstamped");
	e->row.inserted_ns = 400;
	e->row.allocs[0] = 2;
	e->row.fallbacks = 1;
	/* a reused PID: same tgid, another start time */
	e = add_row(&prev, SHMEM_ROWS_PROCS, 100, "first");
	e->start_ns = 1000;
	e->row.allocs[0] = 10;
	e = add_row(&now, SHMEM_ROWS_PROCS, 100, "first");
	e->start_ns = 1000;
	e->row.allocs[0] = 12;
	e = add_row(&now, SHMEM_ROWS_PROCS, 100, "second");
	e->start_ns = 2000;
	e->row.allocs[0] = 5;
	prev.totals.allocs[9][SHMEM_STAT_PATH_FALLOC] = 2;
	now.totals.allocs[9][SHMEM_STAT_PATH_FALLOC] = 6;
	now.totals.allocs[0][SHMEM_STAT_PATH_WRITE] = 3;
	prev.totals.fallbacks[9][SHMEM_STAT_FB_CHARGE] = 1;
	now.totals.fallbacks[9][SHMEM_STAT_FB_CHARGE] = 4;
	now.hists[SHMEM_HIST_ALLOC].slots[12] = 5;
	prev.dropped[SHMEM_ROWS_FILES] = 10;
	now.dropped[SHMEM_ROWS_FILES] = 25;
	prev.mthp[0].kb = now.mthp[0].kb = 2048;
	prev.nr_mthp = now.nr_mthp = 1;
	prev.mthp[0].alloc = 10;
	now.mthp[0].alloc = 14;

	check(!shmem_snapshot_delta(&now, &prev, &d), "subtract two snapshots");
	check(d.nr_rows[SHMEM_ROWS_FILES] == 6 &&
	      d.rows[SHMEM_ROWS_FILES][0].row.allocs[0] == 3 &&
	      d.rows[SHMEM_ROWS_FILES][1].row.allocs[9] == 4 &&
	      d.rows[SHMEM_ROWS_FILES][2].row.allocs[0] == 7,
	      "rows: an old one by difference, a new one and one inserted again from zero");
	check(d.rows[SHMEM_ROWS_FILES][3].row.allocs[0] == 60 &&
	      d.rows[SHMEM_ROWS_FILES][3].row.fallbacks == 2,
	      "a row inserted again and grown past its old counts: all of them (60, 2; got %llu, %llu)",
	      (unsigned long long)d.rows[SHMEM_ROWS_FILES][3].row.allocs[0],
	      (unsigned long long)d.rows[SHMEM_ROWS_FILES][3].row.fallbacks);
	check(d.rows[SHMEM_ROWS_FILES][4].row.allocs[0] == 3,
	      "a row read before its stamp, then stamped: by difference (3)");
	check(d.rows[SHMEM_ROWS_FILES][5].row.allocs[0] == 2 &&
	      d.rows[SHMEM_ROWS_FILES][5].row.fallbacks == 1,
	      "a row read before its stamp, then dropped and inserted again with "
	      "fewer: from zero, no wrap (2, 1; got %llu, %llu)",
	      (unsigned long long)d.rows[SHMEM_ROWS_FILES][5].row.allocs[0],
	      (unsigned long long)d.rows[SHMEM_ROWS_FILES][5].row.fallbacks);
	check(d.rows[SHMEM_ROWS_PROCS][0].row.allocs[0] == 2 &&
	      d.rows[SHMEM_ROWS_PROCS][1].row.allocs[0] == 5,
	      "a reused PID is another process (2 and 5)");
	check(shmem_order_allocs(&d, 9) == 4 && shmem_order_allocs(&d, 0) == 3 &&
	      shmem_path_allocs(&d, SHMEM_STAT_PATH_FALLOC) == 4,
	      "allocations by order and path");
	check(d.totals.fallbacks[9][SHMEM_STAT_FB_CHARGE] == 3 &&
	      d.hists[SHMEM_HIST_ALLOC].slots[12] == 5 && d.mthp[0].alloc == 4 &&
	      d.dropped[SHMEM_ROWS_FILES] == 15,
	      "fallbacks, histograms, mTHP counters and dropped rows");

	shmem_rows_sort(&d, SHMEM_ROWS_FILES, SHMEM_SORT_NAME);
	check(!strcmp(d.rows[SHMEM_ROWS_FILES][0].name, "again"),
	      "sort by name");
	shmem_rows_sort(&d, SHMEM_ROWS_FILES, SHMEM_SORT_LARGE);
	check(!strcmp(d.rows[SHMEM_ROWS_FILES][0].name, "old"),
	      "sort by large folios");
	shmem_rows_sort(&d, SHMEM_ROWS_FILES, SHMEM_SORT_ALLOCS);
	check(!strcmp(d.rows[SHMEM_ROWS_FILES][0].name, "grown") &&
	      !strcmp(d.rows[SHMEM_ROWS_FILES][1].name, "again") &&
	      !strcmp(d.rows[SHMEM_ROWS_FILES][2].name, "old"),
	      "sort by allocations: 60, 7, then 4");
	shmem_snapshot_free(&d);
	shmem_snapshot_free(&prev);
	shmem_snapshot_free(&now);
}

/*
 * Issue 30: fio fallocates its files first, so the block size did not
 * choose the folio size: the reports say so when most folios of theirs
 * were allocated by fallocate(2), not at half, and JSON as a flag
 */
static void test_fallocate_note(void)
{
	struct shmem_snapshot s = {};
	json_object *o;

	check(!shmem_fallocate_note(&s), "no allocations: no fallocate note");
	s.totals.allocs[9][SHMEM_STAT_PATH_FALLOC] = 2;
	s.totals.allocs[0][SHMEM_STAT_PATH_WRITE] = 2;
	check(!shmem_fallocate_note(&s), "half of them by fallocate: no note");
	o = shmem_snapshot_json(&s, 1.0, 0);
	check(!json_object_get_boolean(json_object_object_get(o, "mostly_fallocated")) &&
	      json_object_object_get_ex(o, "mostly_fallocated", NULL),
	      "JSON: mostly_fallocated false");
	json_object_put(o);
	s.totals.allocs[4][SHMEM_STAT_PATH_FALLOC] = 1;
	check(shmem_fallocate_note(&s) &&
	      !strcmp(shmem_fallocate_note(&s), "note: most folios came from fallocate(2), "
		      "sized before any write (fio fallocates its files first unless "
		      "--fallocate=none)"),
	      "three of five by fallocate: the note, one line (%s)",
	      shmem_fallocate_note(&s));
	o = shmem_snapshot_json(&s, 1.0, 0);
	check(json_object_get_boolean(json_object_object_get(o, "mostly_fallocated")),
	      "JSON: mostly_fallocated true");
	json_object_put(o);
}

/* The row of @kind with key @id in @s, or NULL */
static const struct shmem_row_entry *find_row(const struct shmem_snapshot *s,
					      enum shmem_row_kind kind, __u64 id)
{
	for (size_t i = 0; i < s->nr_rows[kind]; i++)
		if (s->rows[kind][i].id == id)
			return &s->rows[kind][i];
	return NULL;
}

/*
 * shmemtop's cumulative view: intervals added up.  A row the LRU map
 * dropped (absent from the next interval) keeps its counts, one dropped
 * and inserted again (counting from zero in its interval) adds to them,
 * counters add and gauges are the last interval's; sorting the sum for
 * the screen between intervals changes nothing.
 */
static void test_snapshot_add(void)
{
	struct shmem_snapshot sum = {}, d1 = {}, d2 = {};
	const struct shmem_row_entry *a, *b, *c;
	struct shmem_row_entry *e;

	add_row(&d1, SHMEM_ROWS_FILES, 1, "a")->row.allocs[9] = 1;
	add_row(&d1, SHMEM_ROWS_FILES, 3, "c")->row.allocs[4] = 5;
	e = add_row(&d1, SHMEM_ROWS_PROCS, 100, "p");
	e->start_ns = 7;
	e->row.allocs[9] = 1;
	e->partial_now = 1;
	d1.totals.allocs[9][SHMEM_STAT_PATH_FALLOC] = 1;
	d1.totals.allocs[4][SHMEM_STAT_PATH_WRITE] = 5;
	d1.hists[SHMEM_HIST_ALLOC].slots[10] = 6;
	d1.dropped[SHMEM_ROWS_FILES] = 2;
	d1.mthp[0].kb = 2048;
	d1.mthp[0].alloc = 1;
	d1.nr_mthp = 1;
	d1.mthp_since_boot = true;
	d1.partial_now = 1;
	/* the second interval: c dropped, a inserted again, b new */
	e = add_row(&d2, SHMEM_ROWS_FILES, 1, "a-renamed");
	e->row.inserted_ns = 500;
	e->row.allocs[0] = 3;
	e->row.fallbacks = 1;
	add_row(&d2, SHMEM_ROWS_FILES, 2, "b")->row.allocs[0] = 2;
	e = add_row(&d2, SHMEM_ROWS_PROCS, 100, "p");
	e->start_ns = 7;
	e->row.allocs[0] = 5;
	d2.totals.allocs[0][SHMEM_STAT_PATH_WRITE] = 5;
	d2.hists[SHMEM_HIST_ALLOC].slots[10] = 5;
	d2.dropped[SHMEM_ROWS_FILES] = 1;
	d2.mthp[0].kb = 2048;
	d2.mthp[0].alloc = 2;
	d2.nr_mthp = 1;
	d2.partial_now = 0;

	check(!shmem_snapshot_add(&sum, &d1), "add the first interval to an empty sum");
	shmem_rows_sort(&sum, SHMEM_ROWS_FILES, SHMEM_SORT_NAME);
	check(!shmem_snapshot_add(&sum, &d2), "and the second");
	a = find_row(&sum, SHMEM_ROWS_FILES, 1);
	b = find_row(&sum, SHMEM_ROWS_FILES, 2);
	c = find_row(&sum, SHMEM_ROWS_FILES, 3);
	check(sum.nr_rows[SHMEM_ROWS_FILES] == 3 && a && b && c &&
	      a->row.allocs[9] == 1 && a->row.allocs[0] == 3 && a->row.fallbacks == 1 &&
	      !strcmp(a->name, "a-renamed") && b->row.allocs[0] == 2 &&
	      c->row.allocs[4] == 5,
	      "rows: one inserted again adds to its counts under its new name, a new "
	      "one joins, a dropped one keeps its 5");
	a = find_row(&sum, SHMEM_ROWS_PROCS, 100);
	check(sum.nr_rows[SHMEM_ROWS_PROCS] == 1 && a->row.allocs[9] == 1 &&
	      a->row.allocs[0] == 5 && a->partial_now == 0,
	      "a process in both: counts added, partial now the last interval's");
	check(shmem_order_allocs(&sum, 9) == 1 && shmem_order_allocs(&sum, 4) == 5 &&
	      shmem_order_allocs(&sum, 0) == 5 &&
	      sum.hists[SHMEM_HIST_ALLOC].slots[10] == 11 &&
	      sum.dropped[SHMEM_ROWS_FILES] == 3 && sum.nr_mthp == 1 &&
	      sum.mthp[0].alloc == 3 && sum.mthp_since_boot && sum.partial_now == 0,
	      "totals, histograms, dropped rows and mTHP counters added; since boot "
	      "as the first interval was; partial now the last interval's");
	shmem_snapshot_free(&sum);
	shmem_snapshot_free(&d1);
	shmem_snapshot_free(&d2);
}

/* key_cmp()'s calls, counted in snapshot.c (built with SHMEM_COUNT_COMPARISONS) */
extern unsigned long shmem_key_comparisons;

/*
 * Subtraction takes O(n log n), not O(n^2), in work: the key comparisons
 * of its sort and binary searches at 100,000 rows (the time is printed,
 * measured: the host's load moves it).
 */
static void test_delta_large(void)
{
	struct shmem_snapshot prev = {}, now = {}, d;
	const size_t n = 100000;
	unsigned long log2n = 0, bound;
	double start, took;
	bool exact = true;

	prev.rows[SHMEM_ROWS_FILES] = calloc(n, sizeof(struct shmem_row_entry));
	now.rows[SHMEM_ROWS_FILES] = calloc(n, sizeof(struct shmem_row_entry));
	for (size_t i = 0; i < n; i++) {
		/* the map's order is not the key order */
		prev.rows[SHMEM_ROWS_FILES][i].id = (i * 7919) % n;
		prev.rows[SHMEM_ROWS_FILES][i].row.allocs[0] = (i * 7919) % n;
		now.rows[SHMEM_ROWS_FILES][i].id = i;
		now.rows[SHMEM_ROWS_FILES][i].row.allocs[0] = 2 * i;
	}
	prev.nr_rows[SHMEM_ROWS_FILES] = now.nr_rows[SHMEM_ROWS_FILES] = n;
	start = shmem_now();
	shmem_key_comparisons = 0;
	check(!shmem_snapshot_delta(&now, &prev, &d), "subtract 100,000 rows");
	took = shmem_now() - start;
	for (size_t i = 0; i < n; i++)
		exact &= d.rows[SHMEM_ROWS_FILES][i].row.allocs[0] == i;
	check(exact, "each row by its own difference");
	/*
	 * A sort (n log2 n comparisons for a merge sort, about 1.4 times that
	 * for a quicksort) and a binary search per row (log2 n each): four
	 * times n log2 n bounds both with room.  O(n^2) would be 10^10.
	 */
	while ((1UL << log2n) < n)
		log2n++;
	bound = 4 * n * log2n;
	check(shmem_key_comparisons > 0 && shmem_key_comparisons <= bound,
	      "in O(n log n) work: %lu key comparisons for 100,000 rows, at most %lu "
	      "(4 n log2 n)", shmem_key_comparisons, bound);
	printf("# measured, not asserted: the subtraction took %.3f s\n", took);
	shmem_snapshot_free(&d);
	shmem_snapshot_free(&prev);
	shmem_snapshot_free(&now);
}

static void test_clean_name(void)
{
	static const struct {
		const char *in;
		bool truncated;
		const char *out, *what;
	} cases[] = {
		{ "plain-name.txt", false, "plain-name.txt", "ASCII as it is" },
		/* 16 x e-acute is 32 bytes; the kernel copy keeps 31 */
		{ "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3", true,
		  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
		  "a character cut by the kernel's copy is dropped" },
		{ "end\xc3", false, "end\\xc3", "an incomplete sequence not at a cut is escaped" },
		{ "a\xff" "b", false, "a\\xffb", "an invalid byte is escaped" },
		{ "back\\slash", false, "back\\\\slash", "backslash doubled" },
		{ "new\nline", false, "new\\x0aline", "newline escaped" },
		{ "\x1b]0;pwned\x07", false, "\\x1b]0;pwned\\x07", "ESC and BEL escaped" },
		{ "c1\xc2\x9b" "2J", false, "c1\\xc2\\x9b2J", "a C1 control (CSI) escaped" },
		{ "\xed\xa0\x80", false, "\\xed\\xa0\\x80", "a surrogate is not UTF-8" },
		{ "\xc0\xaf", false, "\\xc0\\xaf", "an overlong form is not UTF-8" },
		{ "\xf0\x9f\x98\x80 ok", false, "\xf0\x9f\x98\x80 ok", "four-byte UTF-8 kept" },
	};
	char out[SHMEM_NAME_LEN * 4];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		shmem_clean_name(cases[i].in, SHMEM_NAME_LEN, cases[i].truncated, out);
		check(!strcmp(out, cases[i].out), "name: %s (%s)", cases[i].what, out);
	}
	memset(out, 0, sizeof(out));
	shmem_clean_name("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
			 "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
			 SHMEM_NAME_LEN, true, out);
	check(strlen(out) == 31 * 4, "31 invalid bytes fit the escaped name (%zu)",
	      strlen(out));
}

static void test_hist_slot(void)
{
	bool same = true;
	__u64 bad = 0;

	/* against the plain loop, at and around every power of two */
	for (int b = 0; b < 64; b++) {
		for (int d = -1; d <= 1; d++) {
			__u64 v = (1ULL << b) + d;
			__u32 slot = 0;

			while (slot <= SHMEM_HIST_TOP && (1ULL << slot) < v)
				slot++;
			if (shmem_hist_slot(v) != slot) {
				same = false;
				bad = v;
			}
		}
	}
	check(same && shmem_hist_slot(0) == 0 && shmem_hist_slot(~0ULL) == SHMEM_HIST_TOP + 1,
	      "branchless log2 slot matches the loop (first mismatch %llu)",
	      (unsigned long long)bad);
	check(shmem_hist_slot(1500000) == 21 && shmem_hist_slot(3600ULL * 1000000000) == 42 &&
	      shmem_hist_slot((1ULL << 42) + 1) == 43,
	      "1.5 ms in slot 21, an hour in the last bounded slot, above in the overflow");
}

static void test_json(void)
{
	struct shmem_snapshot s = {};
	struct shmem_row_entry *e;
	json_object *o, *files, *v;

	s.info.tracepoints = 0;
	s.info.signals = SHMEM_SIG_ALLOCS | SHMEM_SIG_FALLBACKS | SHMEM_SIG_SPLITS;
	e = add_row(&s, SHMEM_ROWS_FILES, 7, "f8");
	e->dev = 30;
	e->row.allocs[9] = 4;
	add_row(&s, SHMEM_ROWS_FILES, 8, "idle");
	s.info.rows = 1U << SHMEM_ROWS_FILES;
	s.capacity[SHMEM_ROWS_FILES] = 10240;
	s.dropped[SHMEM_ROWS_FILES] = 3;
	s.totals.allocs[9][SHMEM_STAT_PATH_FALLOC] = 4;
	s.totals.fallbacks[9][SHMEM_STAT_FB_CHARGE] = 1;
	s.totals.splits[4][SHMEM_STAT_SPLIT_TRUNCATE].done = 2;

	o = shmem_snapshot_json(&s, 1.0, 10);
	check(json_object_object_get_ex(o, "files", &files) &&
	      json_object_array_length(files) == 1, "JSON: idle rows left out");
	v = json_object_array_get_idx(files, 0);
	check(!strcmp(json_object_get_string(json_object_object_get(v, "name")), "f8") &&
	      !strcmp(json_object_get_string(json_object_object_get(v, "dev")), "0:30") &&
	      json_object_get_int(json_object_object_get(
		json_object_object_get(v, "allocs"), "2M")) == 4,
	      "JSON: file row with name, device and 2M allocations");
	check(!strcmp(json_object_get_string(json_object_object_get(o, "mode")), "fallback") &&
	      json_object_array_length(json_object_object_get(o, "missing")) == 11,
	      "JSON: mode and missing signals");
	v = json_object_object_get(json_object_object_get(o, "rows"), "files");
	check(v && json_object_get_int(json_object_object_get(v, "present")) == 2 &&
	      json_object_get_int(json_object_object_get(v, "capacity")) == 10240 &&
	      json_object_get_int(json_object_object_get(v, "dropped")) == 3 &&
	      !json_object_object_get(o, "procs"),
	      "JSON: rows present, capacity and dropped, only of the maps kept");
	v = json_object_array_get_idx(json_object_object_get(o, "fallbacks"), 0);
	check(v && !strcmp(json_object_get_string(json_object_object_get(v, "reason")), "charge") &&
	      !strcmp(json_object_get_string(json_object_object_get(v, "size")), "2M"),
	      "JSON: fallback by size and reason");
	v = json_object_array_get_idx(json_object_object_get(o, "splits"), 0);
	check(v && json_object_get_int(json_object_object_get(v, "done")) == 2 &&
	      !strcmp(json_object_get_string(json_object_object_get(v, "size")), "64K"),
	      "JSON: split by size and reason");
	check(json_object_get_int(json_object_object_get(json_object_object_get(
		json_object_object_get(o, "paths"), "fallocate"), "2M")) == 4,
	      "JSON: allocations by path");
	json_object_put(o);
	/* issue 30: rows cut to -r say how many were left out */
	add_row(&s, SHMEM_ROWS_FILES, 9, "g")->row.allocs[0] = 1;
	o = shmem_snapshot_json(&s, 1.0, 1);
	v = json_object_object_get(json_object_object_get(o, "rows"), "files");
	check(json_object_array_length(json_object_object_get(o, "files")) == 1 &&
	      json_object_get_int(json_object_object_get(v, "left_out")) == 1,
	      "JSON: one row of two active shown, left_out 1");
	json_object_put(o);
	o = shmem_snapshot_json(&s, 1.0, 0);
	check(!json_object_object_get_ex(o, "files", NULL) &&
	      json_object_object_get_ex(o, "rows", NULL),
	      "JSON without rows (shmemhist): the maps' state, no row lists");
	json_object_put(o);
	shmem_snapshot_free(&s);
}

/*
 * Issue 30, defect 9: what cannot be observed is left out of JSON, not 0
 * or []: splits on a kernel without the split event, a row's mean
 * allocation time without latency tracing (null with it, but nothing
 * timed)
 */
static void test_json_unobserved(void)
{
	struct shmem_snapshot s = {};
	struct shmem_row_entry *e;
	json_object *o, *row, *v;

	s.info.rows = 1U << SHMEM_ROWS_FILES;
	s.info.signals = SHMEM_SIG_ALLOCS;
	e = add_row(&s, SHMEM_ROWS_FILES, 7, "f");
	e->row.allocs[0] = 1;
	o = shmem_snapshot_json(&s, 1.0, 10);
	row = json_object_array_get_idx(json_object_object_get(o, "files"), 0);
	check(!json_object_object_get_ex(o, "splits", NULL) && row &&
	      !json_object_object_get_ex(row, "alloc_avg_ns", NULL),
	      "JSON: no splits where splits are not observed, no alloc_avg_ns without latency");
	json_object_put(o);
	s.info.signals |= SHMEM_SIG_LAT_ALLOC;
	o = shmem_snapshot_json(&s, 1.0, 10);
	row = json_object_array_get_idx(json_object_object_get(o, "files"), 0);
	check(row && json_object_object_get_ex(row, "alloc_avg_ns", &v) && !v,
	      "JSON: alloc_avg_ns null with latency but no allocation timed");
	json_object_put(o);
	e->row.alloc_ns = 300;
	e->row.alloc_calls = 2;
	o = shmem_snapshot_json(&s, 1.0, 10);
	row = json_object_array_get_idx(json_object_object_get(o, "files"), 0);
	check(row && json_object_get_int(json_object_object_get(row, "alloc_avg_ns")) == 150,
	      "JSON: alloc_avg_ns the mean of those timed");
	json_object_put(o);
	shmem_snapshot_free(&s);
}

static long long sample(const char *text, const char *series);

/*
 * Issue 30, defect 2: 64 large folios completed and one stayed partial;
 * "partial" said 65, the folios that ever became partial.  Both now, each
 * named for what it counts.
 */
static void test_partial_now(void)
{
	struct shmem_snapshot s = {};
	struct shmem_row_entry *e;
	json_object *o, *v;
	char *text;

	check(shmem_partial_now(65, 64) == 1 && shmem_partial_now(3, 5) == 0,
	      "partial now: became partial less became full, never below 0");
	s.info.rows = 1U << SHMEM_ROWS_FILES;
	s.info.signals = SHMEM_SIG_ALLOCS | SHMEM_SIG_BLOCKS;
	s.totals.blocks.became_partial = 65;
	s.totals.blocks.became_full = 64;
	s.partial_now = 1;
	e = add_row(&s, SHMEM_ROWS_FILES, 7, "f");
	e->row.became_partial = 65;
	e->row.became_full = 64;
	e->partial_now = 1;
	o = shmem_snapshot_json(&s, 1.0, 10);
	v = json_object_object_get(o, "blocks");
	check(json_object_get_int(json_object_object_get(v, "became_partial")) == 65 &&
	      json_object_get_int(json_object_object_get(v, "became_full")) == 64 &&
	      json_object_get_int(json_object_object_get(v, "partial_now")) == 1,
	      "JSON: blocks became_partial 65, became_full 64, partial_now 1");
	v = json_object_array_get_idx(json_object_object_get(o, "files"), 0);
	check(v && json_object_get_int(json_object_object_get(v, "became_partial")) == 65 &&
	      json_object_get_int(json_object_object_get(v, "became_full")) == 64 &&
	      json_object_get_int(json_object_object_get(v, "partial_now")) == 1 &&
	      !json_object_object_get_ex(v, "partial", NULL),
	      "JSON: the file's row the same, no ambiguous \"partial\"");
	json_object_put(o);
	text = shmem_metrics_text(&s, NULL, NULL);
	check(text && sample(text, "\nshmem_folios_became_partial_total") == 65 &&
	      sample(text, "\nshmem_folios_became_full_total") == 64 &&
	      sample(text, "\nshmem_folios_partial") == 1 &&
	      strstr(text, "# TYPE shmem_folios_partial gauge\n"),
	      "metrics: became partial and full counters, the partial-now gauge");
	free(text);
	shmem_snapshot_free(&s);
}

/* Issue 23, defect 8: two processes of one PID, told apart in JSON */
static void test_json_reused_pid(void)
{
	struct shmem_snapshot s = {};
	struct shmem_row_entry *e;
	json_object *o, *procs;
	__u64 starts[2];

	s.info.rows = 1U << SHMEM_ROWS_PROCS;
	for (int i = 0; i < 2; i++) {
		e = add_row(&s, SHMEM_ROWS_PROCS, 4242, "sh");
		e->start_ns = 1000 * (i + 1);
		e->row.allocs[0] = 1;
	}
	o = shmem_snapshot_json(&s, 1.0, 10);
	procs = json_object_object_get(o, "procs");
	for (int i = 0; i < 2; i++) {
		json_object *v = json_object_array_get_idx(procs, i);

		starts[i] = v ? json_object_get_uint64(
				json_object_object_get(v, "start_ns")) : 0;
	}
	check(json_object_array_length(procs) == 2 &&
	      starts[0] + starts[1] == 3000 && starts[0] != starts[1],
	      "JSON: rows of a reused PID carry their start times (%llu, %llu)",
	      (unsigned long long)starts[0], (unsigned long long)starts[1]);
	json_object_put(o);
	shmem_snapshot_free(&s);
}

static void test_log2(void)
{
	struct shmem_hist h = {};
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	h.slots[13] = 3;	/* (4096, 8192] ns */
	h.slots[15] = 1;
	h.sum = 4 * 8000;
	out = open_memstream(&text, &len);
	shmem_print_log2(out, &h, false);
	fclose(out);
	check(strstr(text, "4097 -> 8192 : 3 ") && strstr(text, "8193 -> 16384 : 0 ") &&
	      strstr(text, "16385 -> 32768 : 1 ") && !strstr(text, "2049 -> 4096"),
	      "log2 histogram from the first to the last used slot");
	check(strstr(text, "count 4, average 8000 ns") != NULL, "count and average");
	free(text);

	out = open_memstream(&text, &len);
	memset(&h, 0, sizeof(h));
	h.slots[shmem_hist_slot(1500000)] = 2;	/* 1.5 ms, twice */
	h.sum = 3000000;
	shmem_print_log2(out, &h, true);
	fclose(out);
	/*
	 * Issue 30, defect 8: -m drew the slot as 2^20 ns -> 2^21 ns and
	 * averaged in ns; now the bounds of ns mode and the average, in ms
	 */
	h.sum = 3000000;
	check(strstr(text, "msecs") && strstr(text, " 1.048577 -> 2.097152 : 2 ") &&
	      strstr(text, "count 2, average 1.500000 ms"),
	      "milliseconds: 1.5 ms in the slot that holds it, bounds as in ns, average in ms");
	free(text);

	out = open_memstream(&text, &len);
	memset(&h, 0, sizeof(h));
	h.slots[SHMEM_HIST_TOP + 1] = 1;
	shmem_print_log2(out, &h, true);
	fclose(out);
	check(strstr(text, " 4398046.511105 -> +Inf : 1 ") != NULL,
	      "above 2^42 ns: the +Inf slot");
	free(text);
}

static void test_mounts(void)
{
	char mountinfo[] = "/tmp/shmem-unit-mi-XXXXXX";
	struct shmem_mounts mounts;
	int fd = mkstemp(mountinfo);
	bool all = true;

	if (fd < 0 || dprintf(fd, "22 1 0:30 / /mnt/with\\040space rw - tmpfs t rw\n"
			      "23 1 0:30 / /mnt/again rw - tmpfs t rw\n"
			      "24 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
			      "25 1 0:31 / /mnt/back\\134slash\\011tab rw - tmpfs t rw\n") < 0)
		die("mountinfo");
	for (int i = 0; i < 300; i++)
		dprintf(fd, "%d 1 0:%d / /mnt/many/%d rw - tmpfs t rw\n", 100 + i,
			100 + i, i);
	close(fd);
	check(!shmem_mounts_read(mountinfo, &mounts) && mounts.nr == 303,
	      "mountinfo: 303 devices (%zu)", mounts.nr);
	check(!strcmp(shmem_mount_of(&mounts, 30), "/mnt/with space"),
	      "\\040 is a space, and the first mount names a device (%s)",
	      shmem_mount_of(&mounts, 30));
	check(!strcmp(shmem_mount_of(&mounts, 31), "/mnt/back\\\\slash\\x09tab"),
	      "backslash and tab unescaped, then escaped as names are (%s)",
	      shmem_mount_of(&mounts, 31));
	for (int i = 0; i < 300; i++) {
		char want[32];

		snprintf(want, sizeof(want), "/mnt/many/%d", i);
		all &= !strcmp(shmem_mount_of(&mounts, 100 + i), want);
	}
	check(all && !strcmp(shmem_mount_of(&mounts, 99), ""),
	      "more than 256 mounts, each found; an unknown device has none");
	check(!strcmp(shmem_mount_find(&mounts, 30)->fstype, "tmpfs")
	      && !strcmp(shmem_mount_find(&mounts, 30)->options, "rw")
	      && !strcmp(shmem_mount_find(&mounts, 8 << 20 | 1)->fstype, "ext4"),
	      "each device's file system type and super block options");
	mounts.internal_dev = 99;
	check(!strcmp(shmem_mount_name(&mounts, 99), SHMEM_INTERNAL_MOUNT)
	      && !strcmp(shmem_mount_name(&mounts, 30), "/mnt/with space")
	      && !strcmp(shmem_mount_of(&mounts, 99), ""),
	      "the internal shm mount is named as such (%s)",
	      shmem_mount_name(&mounts, 99));
	unlink(mountinfo);
	shmem_mounts_free(&mounts);
}

/* @name's sample with exactly @labels, or -1 */
static long long sample(const char *text, const char *series)
{
	const char *p = strstr(text, series);

	return p && p[strlen(series)] == ' ' ? atoll(p + strlen(series) + 1) : -1;
}

/* The mounts of a mountinfo with one: device 0:30 on /mnt/large */
static void one_mount(struct shmem_mounts *mounts)
{
	char mountinfo[] = "/tmp/shmem-unit-mi-XXXXXX";
	int fd = mkstemp(mountinfo);

	if (fd < 0 || dprintf(fd, "22 1 0:30 / /mnt/large rw - tmpfs t rw\n") < 0)
		die("mountinfo");
	close(fd);
	shmem_mounts_read(mountinfo, mounts);
	unlink(mountinfo);
}

static void test_metrics(void)
{
	struct shmem_snapshot s = {};
	struct shmem_mounts mounts;
	struct shmem_row_entry *e;
	char *text;
	long long last = 0;
	bool monotonic = true, exact = true;
	int nr_bounds = 0;
	char build_info[256];
	struct shmem_file_series files;

	one_mount(&mounts);
	s.info.tracepoints = 1;
	s.info.signals = SHMEM_SIG_ALLOCS | SHMEM_SIG_FALLBACKS | SHMEM_SIG_SPLITS |
			 SHMEM_SIG_LAT_ALLOC | SHMEM_SIG_LAT_UPTODATE;
	s.info.rows = 1U << SHMEM_ROWS_FILES | 1U << SHMEM_ROWS_FSES;
	s.nr_mthp = 2;
	s.mthp[0].kb = 16;
	s.mthp[1].kb = 2048;
	s.mthp[1].split = 3;
	s.totals.allocs[9][SHMEM_STAT_PATH_FALLOC] = 4;
	s.totals.fallbacks[9][SHMEM_STAT_FB_CHARGE] = 1;
	s.hists[SHMEM_HIST_ALLOC].slots[shmem_hist_slot(3)] = 1;
	s.hists[SHMEM_HIST_ALLOC].slots[shmem_hist_slot(256)] = 1;
	s.hists[SHMEM_HIST_ALLOC].slots[shmem_hist_slot(1024)] = 1;
	s.hists[SHMEM_HIST_ALLOC].slots[shmem_hist_slot(1025)] = 1;
	s.hists[SHMEM_HIST_ALLOC].sum = 3 + 256 + 1024 + 1025;
	s.hists[SHMEM_HIST_UPTODATE].slots[shmem_hist_slot(3000000000ULL)] = 1;
	s.hists[SHMEM_HIST_UPTODATE].slots[SHMEM_HIST_TOP + 1] = 1;	/* 2 hours */
	s.nr_meminfo = 1;
	strcpy(s.meminfo[0].name, "Shmem");
	s.meminfo[0].kb = 3;
	e = add_row(&s, SHMEM_ROWS_FILES, 7, "a \"quoted\" name");
	e->dev = 30;
	e->row.allocs[9] = 4;
	e = add_row(&s, SHMEM_ROWS_FSES, 30, "tmpfs");
	e->dev = 30;
	e->row.allocs[9] = 4;
	e->row.fallbacks = 1;
	s.capacity[SHMEM_ROWS_FILES] = 10240;
	s.dropped[SHMEM_ROWS_FILES] = 760;
	shmem_file_series_init(&files, 1, 600);
	check(!shmem_file_series_update(&files, &s), "metrics: the file series updated");
	text = shmem_metrics_text(&s, &mounts, &files);
	check(text && sample(text, "shmem_folio_allocs_total{order=\"9\",size=\"2M\",path=\"fallocate\"}") == 4,
	      "metrics: allocations with order, size and path");
	check(text && sample(text, "shmem_filesystem_folio_allocs_total{order=\"9\",size=\"2M\",device=\"0:30\",mountpoint=\"/mnt/large\"}") == 4,
	      "metrics: per file system, with its mount point");
	/* issue 30: the dashboard's per-mount panels */
	check(text && sample(text, "shmem_filesystem_folio_fallbacks_total{device=\"0:30\",mountpoint=\"/mnt/large\"}") == 1 &&
	      sample(text, "shmem_filesystem_folio_splits_total{device=\"0:30\",mountpoint=\"/mnt/large\"}") == 0,
	      "metrics: fallbacks and splits per file system, 0 too where observed");
	check(text && sample(text, "shmem_folio_fallbacks_total{order=\"9\",size=\"2M\",reason=\"charge\"}") == 1,
	      "metrics: fallbacks by order and reason");
	/*
	 * Issue 30, defect 10: a series for every order to 2M and named
	 * reason from the start, 0 until it happens; the mTHP ones with the
	 * shmem_ prefix and the size label of the others, to join on
	 */
	check(text && sample(text, "shmem_folio_fallbacks_total{order=\"1\",size=\"8K\",reason=\"alloc\"}") == 0 &&
	      sample(text, "shmem_folio_fallbacks_total{order=\"9\",size=\"2M\",reason=\"unsuitable\"}") == 0 &&
	      sample(text, "shmem_folio_splits_total{order=\"4\",size=\"64K\",reason=\"shrink\"}") == 0 &&
	      sample(text, "shmem_folio_split_failures_total{order=\"9\",size=\"2M\",reason=\"swapout\"}") == 0 &&
	      !strstr(text, "order=\"0\",size=\"4K\",reason=") &&
	      !strstr(text, "order=\"10\"") && !strstr(text, "reason=\"other\""),
	      "metrics: 0-valued fallback and split series for orders 1-9 and every named reason");
	check(text && sample(text, "shmem_mthp_split_total{size=\"2M\"}") == 3 &&
	      sample(text, "shmem_mthp_split_failed_total{size=\"16K\"}") == 0 &&
	      !strstr(text, "\nmthp_") && !strstr(text, "kB\""),
	      "metrics: shmem_mthp_split_total and _failed_total, sizes as 2M and 16K");
	check(text && sample(text, "shmem_alloc_latency_seconds_bucket{le=\"0.000000256\"}") == 2 &&
	      sample(text, "shmem_alloc_latency_seconds_bucket{le=\"0.000001024\"}") == 3 &&
	      sample(text, "shmem_alloc_latency_seconds_bucket{le=\"0.000004096\"}") == 4 &&
	      sample(text, "shmem_alloc_latency_seconds_bucket{le=\"+Inf\"}") == 4 &&
	      strstr(text, "shmem_alloc_latency_seconds_sum 0.000002308\n") &&
	      sample(text, "shmem_alloc_latency_seconds_count") == 4,
	      "metrics: cumulative le buckets, a value in the first bucket at or above it "
	      "(1024 ns in le=0.000001024, 1025 ns in le=0.000004096)");
	/*
	 * Issue 30: 44 buckets were too many series.  The bounds are 256 ns
	 * and every 4x to 2^42 ns, each exact (issue 23: %.9g put some below
	 * 2^n ns, 1.07374182 for 2^30), counts never falling.
	 */
	for (const char *at = text; at && (at = strstr(at, "shmem_folio_uptodate_seconds_bucket{le=\"")); at++) {
		unsigned long long whole = 0, ns;
		char frac[10] = "";
		long long v;

		at += strlen("shmem_folio_uptodate_seconds_bucket{le=\"");
		if (*at == '+')
			break;
		sscanf(at, "%llu.%9[0-9]", &whole, frac);
		ns = strtoull(frac, NULL, 10);
		for (size_t k = strlen(frac); k < 9; k++)
			ns *= 10;
		ns += whole * 1000000000ULL;
		exact &= nr_bounds < 18 && ns == 256ULL << (2 * nr_bounds);
		nr_bounds++;
		v = strtoll(strchr(at, ' ') + 1, NULL, 10);
		monotonic &= v >= last;
		last = v;
	}
	check(exact && nr_bounds == 18,
	      "metrics: 18 le bounds, 256 ns * 4^k exactly, k = 0..17 (%d bounds)",
	      nr_bounds);
	check(text && monotonic &&
	      sample(text, "shmem_folio_uptodate_seconds_bucket{le=\"1.073741824\"}") == 0 &&
	      sample(text, "shmem_folio_uptodate_seconds_bucket{le=\"4.294967296\"}") == 1 &&
	      sample(text, "shmem_folio_uptodate_seconds_bucket{le=\"4398.046511104\"}") == 1 &&
	      sample(text, "shmem_folio_uptodate_seconds_bucket{le=\"+Inf\"}") == 2 &&
	      sample(text, "shmem_folio_uptodate_seconds_count") == 2,
	      "metrics: 3 s above le=1.07, buckets to 4398 s (73 min), two hours only in +Inf == _count");
	/* issue 30: the help named the function where the data is the event's */
	check(text && strstr(text, "# HELP shmem_alloc_latency_seconds Time to allocate a shmem folio, from the shmem_alloc_time trace event:") &&
	      !strstr(text, "shmem_alloc_and_add_folio"),
	      "metrics: the allocation time's help names the event it comes from");
	check(text && sample(text, "shmem_meminfo_bytes{field=\"Shmem\"}") == 3072,
	      "metrics: meminfo in bytes");
	check(text && strstr(text, "name=\"a \\\"quoted\\\" name\"} 4\n"),
	      "metrics: per-file series with the name escaped");
	snprintf(build_info, sizeof(build_info),
		 "\nshmem_exporter_build_info{version=\"%s\",tracing_mode=\"tracepoints\"}",
		 shmem_version);
	check(text && sample(text, build_info) == 1,
	      "metrics: the build info, labelled with the version and tracing mode (%s)",
	      build_info + 1);
	check(text && sample(text, "shmem_tracing_signal{signal=\"zeroed\"}") == 0 &&
	      sample(text, "shmem_tracing_info{mode=\"tracepoints\"}") == 1,
	      "metrics: the mode and what is missing");
	check(text && sample(text, "shmem_tracing_dropped_total{rows=\"files\"}") == 760 &&
	      sample(text, "shmem_tracing_rows_capacity{rows=\"files\"}") == 10240 &&
	      sample(text, "shmem_tracing_rows{rows=\"fses\"}") == 1 &&
	      !strstr(text, "rows=\"procs\""),
	      "metrics: rows and drops of the maps kept");
	/* the capacity is the map's size: the rows asked for and the slack */
	check(text && strstr(text, "# HELP shmem_tracing_rows_capacity ") &&
	      strstr(strstr(text, "# HELP shmem_tracing_rows_capacity "), "slack"),
	      "metrics: the capacity's HELP says it includes the LRU slack");
	free(text);
	s.info.rows = 0;
	s.info.signals = SHMEM_SIG_ALLOCS;
	text = shmem_metrics_text(&s, &mounts, NULL);
	check(text && !strstr(text, "shmem_file_folio_allocs_total{") &&
	      !strstr(text, "shmem_filesystem_folio_allocs_total{") &&
	      !strstr(text, "shmem_filesystem_folio_fallbacks_total"),
	      "metrics: no per-file or per-file-system series unless kept");
	check(text && !strstr(text, "_latency_seconds") && !strstr(text, "uptodate_seconds"),
	      "metrics: no histogram without --latency");
	free(text);
	s.info.tracepoints = 0;
	s.info.signals = SHMEM_SIG_ALLOCS | SHMEM_SIG_LAT_ALLOC;
	text = shmem_metrics_text(&s, &mounts, NULL);
	check(text && strstr(text, "# HELP shmem_alloc_latency_seconds Time to allocate a shmem folio: each shmem_alloc_and_add_folio() call, timed by fentry/fexit"),
	      "metrics: in fallback mode, it names the function it times");
	check(text && sample(text, "shmem_folio_fallbacks_total{order=\"9\",size=\"2M\",reason=\"charge\"}") == 1 &&
	      !strstr(text, "reason=\"alloc\"") && !strstr(text, "shmem_folio_splits_total{"),
	      "metrics: where fallbacks and splits are not observed, what was counted and no zeros");
	free(text);
	shmem_file_series_free(&files);
	shmem_mounts_free(&mounts);
	shmem_snapshot_free(&s);
}

/*
 * What the append ramp chose: in JSON and the exposition where the events
 * say it (ramp_orders), left out where they cannot, never served as 0s
 */
static void test_ramp(void)
{
	const char *files = "shmem_file_folio_ramp_allocs_total{order=\"9\",size=\"2M\",device=\"0:30\",mountpoint=\"/mnt/large\",name=\"log\"}";
	const char *fses = "shmem_filesystem_folio_ramp_allocs_total{order=\"1\",size=\"8K\",device=\"0:30\",mountpoint=\"/mnt/large\"}";
	struct shmem_snapshot s = {};
	struct shmem_file_series fs;
	struct shmem_mounts mounts;
	json_object *o, *v;
	char *text;

	one_mount(&mounts);
	s.info.tracepoints = 1;
	s.info.signals = SHMEM_SIG_ALLOCS | SHMEM_SIG_FALLBACKS | SHMEM_SIG_RAMP;
	s.info.rows = 1U << SHMEM_ROWS_FILES | 1U << SHMEM_ROWS_FSES;
	s.totals.allocs[0][SHMEM_STAT_PATH_WRITE] = 16;
	s.totals.allocs[1][SHMEM_STAT_PATH_WRITE] = 8;
	s.totals.allocs[9][SHMEM_STAT_PATH_WRITE] = 2;
	s.totals.ramp_allocs[1] = 8;
	s.totals.ramp_allocs[9] = 1;
	s.totals.fallbacks[9][SHMEM_STAT_FB_CHARGE] = 3;
	s.totals.ramp_fallbacks[9][SHMEM_STAT_FB_CHARGE] = 2;
	for (int k = SHMEM_ROWS_FILES; k <= SHMEM_ROWS_FSES; k += SHMEM_ROWS_FSES) {
		struct shmem_row_entry *e = add_row(&s, k, k ? 30 : 7, k ? "tmpfs" : "log");

		e->dev = 30;
		memcpy(e->row.allocs, s.totals.ramp_allocs, sizeof(e->row.allocs));
		e->row.allocs[0] = 16;
		memcpy(e->row.ramp_allocs, s.totals.ramp_allocs, sizeof(e->row.ramp_allocs));
		e->row.fallbacks = 3;
		e->row.ramp_fallbacks = 2;
	}

	o = shmem_snapshot_json(&s, 1.0, 10);
	v = json_object_array_get_idx(json_object_object_get(o, "files"), 0);
	check(json_object_get_int(json_object_object_get(json_object_object_get(o, "ramp_orders"), "8K")) == 8 &&
	      json_object_get_int(json_object_object_get(json_object_object_get(o, "ramp_orders"), "2M")) == 1 &&
	      json_object_object_length(json_object_object_get(o, "ramp_orders")) == 2 &&
	      json_object_get_int(json_object_object_get(json_object_array_get_idx(
		json_object_object_get(o, "ramp_fallbacks"), 0), "count")) == 2 &&
	      json_object_get_int(json_object_object_get(json_object_object_get(v, "ramp_allocs"), "2M")) == 1 &&
	      json_object_get_int(json_object_object_get(v, "ramp_fallbacks")) == 2,
	      "JSON: ramp_orders, ramp_fallbacks, and each row's ramp_allocs and ramp_fallbacks");
	json_object_put(o);
	shmem_file_series_init(&fs, 1, 600);
	shmem_file_series_update(&fs, &s);
	text = shmem_metrics_text(&s, &mounts, &fs);
	check(text && sample(text, "shmem_folio_ramp_allocs_total{order=\"1\",size=\"8K\"}") == 8 &&
	      sample(text, "shmem_folio_ramp_allocs_total{order=\"9\",size=\"2M\"}") == 1 &&
	      !strstr(text, "shmem_folio_ramp_allocs_total{order=\"0\"") &&
	      sample(text, "shmem_folio_ramp_fallbacks_total{order=\"9\",size=\"2M\",reason=\"charge\"}") == 2 &&
	      sample(text, "shmem_folio_allocs_total{order=\"1\",size=\"8K\",path=\"write\"}") == 8 &&
	      sample(text, fses) == 8 && sample(text, files) == 1 &&
	      sample(text, "shmem_tracing_signal{signal=\"ramp\"}") == 1,
	      "metrics: ramped allocations by order, ramped fallbacks by order and reason, per file system and file");
	free(text);

	/* events without ramp_orders: all else observed */
	s.info.signals = ((1U << SHMEM_NR_SIGNALS) - 1) & ~SHMEM_SIG_RAMP;
	o = shmem_snapshot_json(&s, 1.0, 10);
	v = json_object_array_get_idx(json_object_object_get(o, "files"), 0);
	check(!json_object_object_get_ex(o, "ramp_orders", NULL) &&
	      !json_object_object_get_ex(o, "ramp_fallbacks", NULL) &&
	      !json_object_object_get_ex(v, "ramp_allocs", NULL) &&
	      !json_object_object_get_ex(v, "ramp_fallbacks", NULL) &&
	      json_object_array_length(json_object_object_get(o, "missing")) == 1 &&
	      !strcmp(json_object_get_string(json_object_array_get_idx(
		json_object_object_get(o, "missing"), 0)), "append ramp"),
	      "JSON without the ramp: no ramp fields, \"append ramp\" missing");
	json_object_put(o);
	text = shmem_metrics_text(&s, &mounts, &fs);
	check(text && !strstr(text, "ramp_allocs_total") && !strstr(text, "ramp_fallbacks_total") &&
	      sample(text, "shmem_tracing_signal{signal=\"ramp\"}") == 0,
	      "metrics without the ramp: no ramp series, shmem_tracing_signal 0 for it");
	free(text);
	shmem_file_series_free(&fs);
	shmem_mounts_free(&mounts);
	shmem_snapshot_free(&s);
}

/* A file row of @name (inode @ino, inserted at @inserted) on 0:30 */
static struct shmem_row_entry *file_row(struct shmem_snapshot *s, __u64 ino,
					const char *name, __u64 inserted)
{
	struct shmem_row_entry *e = add_row(s, SHMEM_ROWS_FILES, ino, name);

	e->dev = 30;
	e->row.inserted_ns = inserted;
	return e;
}

/* The number of distinct file names among @text's per-file series */
static int file_series_count(const char *text)
{
	const char *names[64];
	int n = 0;

	for (const char *at = text; (at = strstr(at, "\nshmem_file_folio_allocs_total{")); at++) {
		const char *name = strstr(at, "name=\"");
		bool seen = false;

		for (int i = 0; i < n; i++)
			seen |= !strncmp(names[i], name, strcspn(name, "}") + 1);
		if (!seen && n < 64)
			names[n++] = name;
	}
	return n;
}

/*
 * Issue 30: per-file series by inode churned (a file created again was a
 * new series each time), a file leaving the top N and coming back, or
 * its row dropped by the LRU map, went back, and they did not add up to
 * the totals.  Now: at most -f N files, keyed by file system and name,
 * an "other" series for the rest, every value only growing, the sum
 * exact.  Two series (-f 2), idle time 10 s, scrapes at given times.
 */
static void test_file_series(void)
{
	const char *a = "shmem_file_folio_allocs_total{order=\"0\",size=\"4K\",device=\"0:30\",mountpoint=\"/mnt/large\",name=\"a\"}";
	const char *b = "shmem_file_folio_allocs_total{order=\"9\",size=\"2M\",device=\"0:30\",mountpoint=\"/mnt/large\",name=\"b\"}";
	const char *c = "shmem_file_folio_allocs_total{order=\"0\",size=\"4K\",device=\"0:30\",mountpoint=\"/mnt/large\",name=\"c\"}";
	const char *other4k = "shmem_file_folio_allocs_total{order=\"0\",size=\"4K\",name=\"" SHMEM_OTHER_FILES "\"}";
	const char *other2m = "shmem_file_folio_allocs_total{order=\"9\",size=\"2M\",name=\"" SHMEM_OTHER_FILES "\"}";
	struct shmem_file_series fs;
	struct shmem_mounts mounts;
	struct shmem_snapshot s;
	char *text;

	one_mount(&mounts);
	shmem_file_series_init(&fs, 2, 10);

	/* t=0: a 5 4K folios, b one 2M, c one 4K, two 4K without a row */
	memset(&s, 0, sizeof(s));
	s.info.rows = 1U << SHMEM_ROWS_FILES;
	s.totals.allocs[0][SHMEM_STAT_PATH_WRITE] = 8;
	s.totals.allocs[9][SHMEM_STAT_PATH_FALLOC] = 1;
	file_row(&s, 1, "a", 100)->row.allocs[0] = 5;
	file_row(&s, 2, "b", 100)->row.allocs[9] = 1;
	file_row(&s, 3, "c", 100)->row.allocs[0] = 1;
	check(!shmem_file_series_update(&fs, &s), "file series: first update");
	text = shmem_metrics_text(&s, &mounts, &fs);
	check(sample(text, a) == 5 && sample(text, b) == 1 && sample(text, c) == -1 &&
	      sample(text, other4k) == 3 && sample(text, other2m) == -1 &&
	      file_series_count(text) == 3 && !strstr(text, "inode=") &&
	      sample(text, "\nshmem_file_series_limit") == 2,
	      "file series: the two busiest (ties by name) get one, the rest in \"other\": "
	      "a 5 + other 3 = 8 4K, b 1 2M; no inode label; the limit served");
	free(text);
	shmem_snapshot_free(&s);

	/*
	 * t=5: a's row dropped and inserted again (another stamp) with 2; b
	 * deleted and created again (inode 4) with one more 2M; c one more
	 */
	s.time = 5;
	s.info.rows = 1U << SHMEM_ROWS_FILES;
	s.totals.allocs[0][SHMEM_STAT_PATH_WRITE] = 11;
	s.totals.allocs[9][SHMEM_STAT_PATH_FALLOC] = 2;
	file_row(&s, 1, "a", 200)->row.allocs[0] = 2;
	file_row(&s, 2, "b", 100)->row.allocs[9] = 1;
	file_row(&s, 4, "b", 300)->row.allocs[9] = 1;
	file_row(&s, 3, "c", 100)->row.allocs[0] = 2;
	check(!shmem_file_series_update(&fs, &s), "file series: second update");
	text = shmem_metrics_text(&s, &mounts, &fs);
	check(sample(text, a) == 7 && sample(text, b) == 2 && sample(text, c) == -1 &&
	      sample(text, other4k) == 4 && file_series_count(text) == 3,
	      "file series: a's row inserted again adds its 2 (7, not back to 2), b created "
	      "again goes on in its series (2), c still in \"other\" (4): 7 + 4 = 11");
	free(text);
	shmem_snapshot_free(&s);

	/* t=15: only c allocates; a and b idle 10 s: c takes a's (ties by name) */
	s.time = 15;
	s.info.rows = 1U << SHMEM_ROWS_FILES;
	s.totals.allocs[0][SHMEM_STAT_PATH_WRITE] = 12;
	s.totals.allocs[9][SHMEM_STAT_PATH_FALLOC] = 2;
	file_row(&s, 1, "a", 200)->row.allocs[0] = 2;
	file_row(&s, 4, "b", 300)->row.allocs[9] = 1;
	file_row(&s, 3, "c", 100)->row.allocs[0] = 3;
	check(!shmem_file_series_update(&fs, &s), "file series: third update");
	text = shmem_metrics_text(&s, &mounts, &fs);
	check(sample(text, a) == -1 && sample(text, b) == 2 && sample(text, c) == 1 &&
	      sample(text, other4k) == 11 && sample(text, other2m) == -1 &&
	      file_series_count(text) == 3,
	      "file series: c, after idle a's 10 s, has a's series from its 1; a's 7 go to "
	      "\"other\" (11): 1 + 11 = 12, never back");
	free(text);
	shmem_snapshot_free(&s);

	/*
	 * t=16: the rows read after the totals: c's row has 2 more, the
	 * totals 1; "other" stays, then t=17 the totals have caught up
	 */
	s.time = 16;
	s.info.rows = 1U << SHMEM_ROWS_FILES;
	s.totals.allocs[0][SHMEM_STAT_PATH_WRITE] = 13;
	s.totals.allocs[9][SHMEM_STAT_PATH_FALLOC] = 2;
	file_row(&s, 3, "c", 100)->row.allocs[0] = 5;
	check(!shmem_file_series_update(&fs, &s), "file series: fourth update");
	text = shmem_metrics_text(&s, &mounts, &fs);
	check(sample(text, c) == 3 && sample(text, other4k) == 11,
	      "file series: rows ahead of the totals, \"other\" does not go back (11)");
	free(text);
	shmem_snapshot_free(&s);
	s.time = 17;
	s.info.rows = 1U << SHMEM_ROWS_FILES;
	s.totals.allocs[0][SHMEM_STAT_PATH_WRITE] = 14;
	s.totals.allocs[9][SHMEM_STAT_PATH_FALLOC] = 2;
	file_row(&s, 3, "c", 100)->row.allocs[0] = 5;
	check(!shmem_file_series_update(&fs, &s), "file series: fifth update");
	text = shmem_metrics_text(&s, &mounts, &fs);
	check(sample(text, c) == 3 && sample(text, other4k) == 11 && sample(text, b) == 2,
	      "file series: the totals caught up, the sums exact again: 3 + 11 = 14 4K, 2 2M");
	free(text);
	shmem_snapshot_free(&s);
	shmem_file_series_free(&fs);
	shmem_mounts_free(&mounts);
}

/*
 * Issue 30: the process_* metrics of the client libraries, from a /proc
 * made here: a command name with spaces and parentheses, 3 fds (and
 * "." and ".."), a soft limit of 1024 open files
 */
static void test_process(void)
{
	char dir[] = "/tmp/shmem-unit-proc-XXXXXX", path[256];
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	struct shmem_process p = {};
	double start = 0, want_start = 1700000000 + 1000.0 / tck;
	char want[1024], *text = NULL;
	size_t len = 0;
	FILE *out, *f;
	int err;

	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(path, sizeof(path), "%s/stat", dir);
	f = fopen(path, "w");
	/* utime 250 and stime 50 ticks, starttime 1000 ticks, 8 MiB, 300 pages */
	fprintf(f, "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 "
		"3 0 1000 8388608 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0\n");
	fclose(f);
	snprintf(path, sizeof(path), "%s/limits", dir);
	f = fopen(path, "w");
	fprintf(f, "Limit                     Soft Limit           Hard Limit           Units     \n"
		"Max cpu time              unlimited            unlimited            seconds   \n"
		"Max open files            1024                 524288               files     \n");
	fclose(f);
	/* fd numbers far above this test's own: not the one reading them */
	snprintf(path, sizeof(path), "%s/fd", dir);
	mkdir(path, 0755);
	for (int fd = 1000; fd < 1003; fd++) {
		snprintf(path, sizeof(path), "%s/fd/%d", dir, fd);
		close(open(path, O_CREAT | O_WRONLY, 0644));
	}
	snprintf(path, sizeof(path), "%s/proc-stat", dir);
	f = fopen(path, "w");
	fprintf(f, "cpu  1 2 3 4\nintr 5\nbtime 1700000000\nprocesses 9\n");
	fclose(f);

	err = shmem_process_start_time(dir, path, &start);
	check(!err && start == want_start,
	      "process: started at the boot time plus its start in ticks (%.2f)", start);
	err = shmem_process_read(dir, &p);
	check(!err && p.cpu_seconds == 300.0 / tck &&
	      p.virtual_bytes == 8388608 && p.resident_bytes == 300ULL * page &&
	      p.open_fds == 3 && p.max_fds == 1024,
	      "process: CPU time, memory and fds read past a command name with parentheses "
	      "(%g s, %llu, %llu, %llu fds of %llu)", p.cpu_seconds,
	      (unsigned long long)p.virtual_bytes, (unsigned long long)p.resident_bytes,
	      (unsigned long long)p.open_fds, (unsigned long long)p.max_fds);
	out = open_memstream(&text, &len);
	shmem_process_print(out, &p, start);
	fclose(out);
	snprintf(want, sizeof(want),
		 "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.15g\n",
		 300.0 / tck);
	check(strstr(text, want) && sample(text, "\nprocess_open_fds") == 3 &&
	      sample(text, "\nprocess_max_fds") == 1024 &&
	      sample(text, "\nprocess_virtual_memory_bytes") == 8388608 &&
	      sample(text, "\nprocess_resident_memory_bytes") == 300LL * page &&
	      strstr(text, "# TYPE process_start_time_seconds gauge\n") &&
	      strstr(text, "# TYPE process_resident_memory_bytes gauge\n"),
	      "process: the client libraries' names and types");
	snprintf(want, sizeof(want), "\nprocess_start_time_seconds %.15g\n", want_start);
	check(strstr(text, want), "process: the start time as read (%.15g)", want_start);
	free(text);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	if (system(path))
		die("rm");
	err = shmem_process_read("/proc/self", &p);
	check(!err && p.open_fds >= 3 &&
	      p.max_fds > 0 && p.resident_bytes > 0,
	      "process: this test's own /proc/self reads");
}

static void test_split_command(void)
{
	char *argv[] = { "shmemtop", "-b", "--", "fallocate", "-l", "8M", NULL };
	char *none[] = { "shmemtop", "-b", "--", NULL };
	int argc = 6, argc2 = 3;
	char **cmd = shmem_split_command(&argc, argv);

	check(argc == 2 && cmd && !strcmp(cmd[0], "fallocate") && !cmd[3],
	      "the command after --");
	check(!shmem_split_command(&argc2, none) && argc2 == 2,
	      "-- with nothing after it");
}

/* Issue 30: shmemtop -- sh -c 'exit 3' exits 3, as perf and time do */
static void test_command_status(void)
{
	int status[3];

	for (int i = 0; i < 3; i++) {
		pid_t pid = fork();

		if (!pid) {
			if (i == 2)
				raise(SIGKILL);
			_exit(i * 3);
		}
		waitpid(pid, &status[i], 0);
	}
	check(shmem_command_failed(status[0], "true", "t") == 0 &&
	      shmem_command_failed(status[1], "sh", "t") == 3 &&
	      shmem_command_failed(status[2], "sh", "t") == 128 + SIGKILL,
	      "the command's exit status, 128 + the signal that killed it");
}

/*
 * Issue 23's suspicion: a Ctrl-C landing between shmem_wait()'s check of
 * shmem_exiting and its ppoll() was missed until the timeout (a day for
 * shmemhist).  shmem_wait() blocks SIGINT and SIGTERM from its check to
 * ppoll(), which takes them: one already pending when it starts checking
 * (as one landing in that window is) ends a wait of a day at once: the
 * test's alarm (600 s, a hang guard) ends a wait that missed it.
 */
static void test_signal_in_wait(void)
{
	sigset_t quit, after;
	double start;
	int status;

	shmem_handle_signals();
	sigemptyset(&quit);
	sigaddset(&quit, SIGINT);
	sigprocmask(SIG_BLOCK, &quit, NULL);
	kill(getpid(), SIGINT);
	check(!shmem_exiting, "a SIGINT before the wait's check is pending");
	start = shmem_now();
	/* a hang guard: missed, the wait would take the day */
	alarm(600);
	shmem_wait(86400, 0, -1, &status);
	alarm(0);
	check(shmem_exiting, "and ends a wait of a day (in %.3f s, measured)",
	      shmem_now() - start);
	sigprocmask(SIG_BLOCK, NULL, &after);
	check(sigismember(&after, SIGINT),
	      "the wait leaves the caller's signal mask as it was");
	sigprocmask(SIG_UNBLOCK, &quit, NULL);
	shmem_exiting = 0;
}

/*
 * The reviewer's defect: with SIGTERM blocked outside ppoll(), shmemtop
 * blocked writing to a reader that stopped reading never saw it.  Outside
 * the wait a SIGTERM interrupts the write (no SA_RESTART).  A timer sends
 * it while write() blocks on a full pipe; alarm() ends the test if the
 * write is not interrupted.
 */
static void test_signal_interrupts_write(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGTERM };
	struct itimerspec soon = { .it_value.tv_nsec = 100000000 };
	char block[4096] = "";
	int pipefd[2];
	timer_t timer;
	ssize_t n;

	shmem_handle_signals();
	if (pipe2(pipefd, O_NONBLOCK) || timer_create(CLOCK_MONOTONIC, &ev, &timer)) {
		check(0, "pipe and timer: %s", strerror(errno));
		return;
	}
	while (write(pipefd[1], block, sizeof(block)) > 0)
		;
	fcntl(pipefd[1], F_SETFL, 0);
	alarm(600);	/* a hang guard */
	timer_settime(timer, 0, &soon, NULL);
	n = write(pipefd[1], block, sizeof(block));
	alarm(0);
	check(n < 0 && errno == EINTR && shmem_exiting,
	      "a SIGTERM interrupts a write blocked on a full pipe (%zd, %s)",
	      n, strerror(errno));
	timer_delete(timer);
	close(pipefd[0]);
	close(pipefd[1]);
	shmem_exiting = 0;
}

int main(void)
{
	test_parse_long();
	test_names();
	test_missing();
	test_mthp_read();
	test_delta();
	test_fallocate_note();
	test_snapshot_add();
	test_delta_large();
	test_clean_name();
	test_hist_slot();
	test_mounts();
	test_json();
	test_json_reused_pid();
	test_json_unobserved();
	test_partial_now();
	test_log2();
	test_metrics();
	test_ramp();
	test_file_series();
	test_process();
	test_split_command();
	test_command_status();
	test_signal_in_wait();
	test_signal_interrupts_write();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
