// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the tools' library: parsing, names, sysfs mTHP
 * counters, snapshot subtraction and sorting, JSON and histogram output.
 * Snapshots are built by hand; no BPF and no privileges needed.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#include "lib.h"
#include "shmemstat.h"

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
	check(!strcmp(buf, "exact allocation paths, fallback reasons, block-uptodate transitions, bytes zeroed, splits"),
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
	return e;
}

static void add_alloc(struct shmem_snapshot *s, __u16 order, __u16 path,
		      __u64 count)
{
	s->allocs = realloc(s->allocs, (s->nr_allocs + 1) * sizeof(*s->allocs));
	s->allocs[s->nr_allocs++] = (struct shmem_alloc_entry) {
		.key = { .dev = 30, .order = order, .path = path },
		.count = count,
	};
}

static void test_delta(void)
{
	struct shmem_snapshot prev = {}, now = {}, d;

	add_row(&prev, SHMEM_ROWS_FILES, 5, "old")->row.allocs[9] = 2;
	add_row(&now, SHMEM_ROWS_FILES, 5, "old")->row.allocs[9] = 6;
	add_row(&now, SHMEM_ROWS_FILES, 6, "new")->row.allocs[0] = 3;
	add_alloc(&prev, 9, SHMEM_STAT_PATH_FALLOC, 2);
	add_alloc(&now, 9, SHMEM_STAT_PATH_FALLOC, 6);
	add_alloc(&now, 0, SHMEM_STAT_PATH_WRITE, 3);
	prev.fallbacks[9][SHMEM_STAT_FB_CHARGE] = 1;
	now.fallbacks[9][SHMEM_STAT_FB_CHARGE] = 4;
	now.hists[SHMEM_HIST_ALLOC].slots[12] = 5;
	now.hists[SHMEM_HIST_ALLOC].count = 5;
	prev.mthp[0].kb = now.mthp[0].kb = 2048;
	prev.nr_mthp = now.nr_mthp = 1;
	prev.mthp[0].alloc = 10;
	now.mthp[0].alloc = 14;

	check(!shmem_snapshot_delta(&now, &prev, &d), "subtract two snapshots");
	check(d.nr_rows[SHMEM_ROWS_FILES] == 2 &&
	      d.rows[SHMEM_ROWS_FILES][0].row.allocs[9] == 4 &&
	      d.rows[SHMEM_ROWS_FILES][1].row.allocs[0] == 3,
	      "rows: an old one by difference, a new one from zero");
	check(shmem_order_allocs(&d, 9) == 4 && shmem_order_allocs(&d, 0) == 3,
	      "allocations by order");
	check(d.fallbacks[9][SHMEM_STAT_FB_CHARGE] == 3 &&
	      d.hists[SHMEM_HIST_ALLOC].slots[12] == 5 && d.mthp[0].alloc == 4,
	      "fallbacks, histograms and mTHP counters");

	shmem_rows_sort(&d, SHMEM_ROWS_FILES, SHMEM_SORT_NAME);
	check(!strcmp(d.rows[SHMEM_ROWS_FILES][0].row.name, "new"),
	      "sort by name");
	shmem_rows_sort(&d, SHMEM_ROWS_FILES, SHMEM_SORT_LARGE);
	check(!strcmp(d.rows[SHMEM_ROWS_FILES][0].row.name, "old"),
	      "sort by large folios");
	shmem_rows_sort(&d, SHMEM_ROWS_FILES, SHMEM_SORT_ALLOCS);
	check(!strcmp(d.rows[SHMEM_ROWS_FILES][0].row.name, "old"),
	      "sort by allocations: 4 before 3");
	shmem_snapshot_free(&d);
	shmem_snapshot_free(&prev);
	shmem_snapshot_free(&now);
}

static void test_json(void)
{
	struct shmem_snapshot s = {};
	struct shmem_row_entry *e;
	json_object *o, *files, *v;

	s.info.tracepoints = 0;
	s.info.signals = SHMEM_SIG_ALLOCS | SHMEM_SIG_FALLBACKS;
	e = add_row(&s, SHMEM_ROWS_FILES, 7, "f8");
	e->dev = 30;
	e->row.allocs[9] = 4;
	add_row(&s, SHMEM_ROWS_FILES, 8, "idle");
	add_alloc(&s, 9, SHMEM_STAT_PATH_FALLOC, 4);
	s.fallbacks[9][SHMEM_STAT_FB_CHARGE] = 1;
	s.splits[4][SHMEM_STAT_SPLIT_TRUNCATE].done = 2;

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
	      json_object_array_length(json_object_object_get(o, "missing")) == 9,
	      "JSON: mode and missing signals");
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
	h.count = 4;
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
	h.slots[21] = 2;	/* (1048576, 2097152] ns: at most 3 ms */
	h.count = 2;
	shmem_print_log2(out, &h, true);
	fclose(out);
	check(strstr(text, "msecs") && strstr(text, "3 -> 4 : 2 "),
	      "milliseconds: slots folded by their upper bound");
	free(text);
}

static void test_metrics(void)
{
	char mountinfo[] = "/tmp/shmem-unit-mi-XXXXXX";
	struct shmem_snapshot s = {};
	struct shmem_mounts mounts;
	struct shmem_row_entry *e;
	char *text;
	int fd = mkstemp(mountinfo);

	if (fd < 0 || dprintf(fd, "22 1 0:30 / /mnt/large rw - tmpfs t rw\n"
			      "23 1 0:30 / /mnt/again rw - tmpfs t rw\n"
			      "24 1 8:1 / / rw - ext4 /dev/sda1 rw\n") < 0)
		die("mountinfo");
	close(fd);
	check(!shmem_mounts_read(mountinfo, &mounts) && mounts.nr == 2 &&
	      mounts.dev[0] == 30 && !strcmp(mounts.path[0], "/mnt/large"),
	      "mountinfo: a device named by its first mount point");
	unlink(mountinfo);

	s.info.tracepoints = 1;
	s.info.signals = SHMEM_SIG_ALLOCS;
	add_alloc(&s, 9, SHMEM_STAT_PATH_FALLOC, 4);
	s.fallbacks[9][SHMEM_STAT_FB_CHARGE] = 1;
	s.hists[SHMEM_HIST_ALLOC].slots[2] = 1;	/* 3 or 4 ns */
	s.hists[SHMEM_HIST_ALLOC].slots[4] = 2;
	s.hists[SHMEM_HIST_ALLOC].count = 3;
	s.hists[SHMEM_HIST_ALLOC].sum = 30;
	s.nr_meminfo = 1;
	strcpy(s.meminfo[0].name, "Shmem");
	s.meminfo[0].kb = 3;
	e = add_row(&s, SHMEM_ROWS_FILES, 7, "a \"quoted\" name");
	e->dev = 30;
	e->row.allocs[9] = 4;
	text = shmem_metrics_text(&s, &mounts, 1);
	check(text && strstr(text, "shmem_folio_allocs_total{order=\"9\",size=\"2M\",path=\"fallocate\",device=\"0:30\",mountpoint=\"/mnt/large\"} 4\n"),
	      "metrics: allocations with order, size, path, device and mount point");
	check(text && strstr(text, "shmem_folio_fallbacks_total{order=\"9\",size=\"2M\",reason=\"charge\"} 1\n"),
	      "metrics: fallbacks by order and reason");
	check(text && strstr(text, "shmem_alloc_latency_seconds_bucket{le=\"2e-09\"} 0\n") &&
	      strstr(text, "shmem_alloc_latency_seconds_bucket{le=\"4e-09\"} 1\n") &&
	      strstr(text, "shmem_alloc_latency_seconds_bucket{le=\"1.6e-08\"} 3\n") &&
	      strstr(text, "shmem_alloc_latency_seconds_bucket{le=\"+Inf\"} 3\n") &&
	      strstr(text, "shmem_alloc_latency_seconds_sum 0.000000030\n") &&
	      strstr(text, "shmem_alloc_latency_seconds_count 3\n"),
	      "metrics: cumulative le buckets, a value in the first bucket at or above it");
	check(text && strstr(text, "shmem_meminfo_bytes{field=\"Shmem\"} 3072\n"),
	      "metrics: meminfo in bytes");
	check(text && strstr(text, "name=\"a \\\"quoted\\\" name\"} 4\n"),
	      "metrics: per-file series with the name escaped");
	check(text && strstr(text, "shmem_tracing_signal{signal=\"splits\"} 0\n") &&
	      strstr(text, "shmem_tracing_info{mode=\"tracepoints\"} 1\n"),
	      "metrics: the mode and what is missing");
	free(text);
	text = shmem_metrics_text(&s, &mounts, 0);
	check(text && !strstr(text, "shmem_file_folio_allocs_total{"),
	      "metrics: no per-file series unless asked");
	free(text);
	shmem_mounts_free(&mounts);
	shmem_snapshot_free(&s);
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

int main(void)
{
	test_parse_long();
	test_names();
	test_missing();
	test_mthp_read();
	test_delta();
	test_json();
	test_log2();
	test_metrics();
	test_split_command();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
