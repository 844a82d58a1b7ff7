// SPDX-License-Identifier: GPL-2.0
/*
 * A snapshot in the Prometheus text exposition format.  Every value is
 * cumulative since the maps were loaded (or since boot for the kernel's
 * own counters); Prometheus takes rates.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "shmem_tools.h"

static void header(FILE *out, const char *name, const char *type,
		   const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values escape backslash, double quote and newline. */
static void label_value(FILE *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(out, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", out);
		else
			fputc(*v, out);
	}
}

static void order_labels(FILE *out, unsigned int order)
{
	char size[16];

	shmem_order_size(order, size, sizeof(size));
	fprintf(out, "order=\"%u\",size=\"%s\"", order, size);
}

static void print_allocs(FILE *out, const struct shmem_snapshot *s)
{
	header(out, "shmem_folio_allocs_total", "counter",
	       "shmem folios allocated, by order and path.");
	for (unsigned int o = 0; o < SHMEM_NR_ORDERS; o++) {
		for (unsigned int p = 0; p < SHMEM_STAT_NR_PATHS; p++) {
			if (!s->totals.allocs[o][p])
				continue;
			fprintf(out, "shmem_folio_allocs_total{");
			order_labels(out, o);
			fprintf(out, ",path=\"%s\"} %llu\n", shmem_path_name(p),
				(unsigned long long)s->totals.allocs[o][p]);
		}
	}
	/* a signal this kernel cannot observe has no series, not zeros */
	if (!(s->info.signals & SHMEM_SIG_RAMP))
		return;
	header(out, "shmem_folio_ramp_allocs_total", "counter",
	       "Of shmem_folio_allocs_total, the folios whose order the append ramp of a large_folios mount chose, by order.");
	for (unsigned int o = 0; o < SHMEM_NR_ORDERS; o++) {
		if (!s->totals.ramp_allocs[o])
			continue;
		fprintf(out, "shmem_folio_ramp_allocs_total{");
		order_labels(out, o);
		fprintf(out, "} %llu\n", (unsigned long long)s->totals.ramp_allocs[o]);
	}
}

/* device and mountpoint labels of a file system (dev_t) */
static void fs_labels(FILE *out, const struct shmem_mounts *mounts, __u32 dev)
{
	char name[24];

	shmem_dev_name(dev, name, sizeof(name));
	fprintf(out, "device=\"%s\",mountpoint=\"", name);
	label_value(out, shmem_mount_name(mounts, dev));
	fputc('"', out);
}

/*
 * @name{order,size,device,mountpoint} for each order of @by_order, of
 * @dev, and name="@file" unless @file is NULL
 */
static void fs_samples(FILE *out, const char *name, const __u64 *by_order,
		       __u32 dev, const struct shmem_mounts *mounts,
		       const char *file)
{
	for (unsigned int o = 0; o < SHMEM_NR_ORDERS; o++) {
		if (!by_order[o])
			continue;
		fprintf(out, "%s{", name);
		order_labels(out, o);
		fputc(',', out);
		fs_labels(out, mounts, dev);
		if (file) {
			fputs(",name=\"", out);
			label_value(out, file);
			fputc('"', out);
		}
		fprintf(out, "} %llu\n", (unsigned long long)by_order[o]);
	}
}

static void print_filesystems(FILE *out, const struct shmem_snapshot *s,
			      const struct shmem_mounts *mounts)
{
	/* what the rows count of every order together: one series a mount */
	static const struct {
		__u32 signal;
		const char *name, *help;
		size_t offset;
	} counts[] = {
		{ SHMEM_SIG_FALLBACKS, "shmem_filesystem_folio_fallbacks_total",
		  "Folio orders given up per file system, every order and reason (shmem_folio_fallbacks_total has them).",
		  offsetof(struct shmem_row, fallbacks) },
		{ SHMEM_SIG_SPLITS, "shmem_filesystem_folio_splits_total",
		  "Large folios split per file system, every order and reason (shmem_folio_splits_total has them).",
		  offsetof(struct shmem_row, splits) },
	};
	const struct shmem_row_entry *rows = s->rows[SHMEM_ROWS_FSES];

	header(out, "shmem_filesystem_folio_allocs_total", "counter",
	       "shmem folios allocated per file system, by order (rows the fses map kept).");
	for (size_t i = 0; i < s->nr_rows[SHMEM_ROWS_FSES]; i++)
		fs_samples(out, "shmem_filesystem_folio_allocs_total",
			   rows[i].row.allocs, rows[i].dev, mounts, NULL);
	/* observed: 0 too, so that a mount's graph shows 0, not no data */
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		if (!(s->info.signals & counts[c].signal))
			continue;
		header(out, counts[c].name, "counter", counts[c].help);
		for (size_t i = 0; i < s->nr_rows[SHMEM_ROWS_FSES]; i++) {
			fprintf(out, "%s{", counts[c].name);
			fs_labels(out, mounts, rows[i].dev);
			fprintf(out, "} %llu\n", (unsigned long long)*(const __u64 *)
				((const char *)&rows[i].row + counts[c].offset));
		}
	}
	if (!(s->info.signals & SHMEM_SIG_RAMP))
		return;
	header(out, "shmem_filesystem_folio_ramp_allocs_total", "counter",
	       "Of shmem_filesystem_folio_allocs_total, the folios whose order the append ramp chose.");
	for (size_t i = 0; i < s->nr_rows[SHMEM_ROWS_FSES]; i++)
		fs_samples(out, "shmem_filesystem_folio_ramp_allocs_total",
			   rows[i].row.ramp_allocs, rows[i].dev, mounts, NULL);
}

/*
 * The largest folio order of this kernel: of its largest mTHP size, else
 * (no mTHP in sysfs) the PMD order of x86-64, 2M
 */
static unsigned int top_order(const struct shmem_snapshot *s)
{
	unsigned long kb = s->nr_mthp ? s->mthp[s->nr_mthp - 1].kb : 2048;

	for (unsigned int o = 1; o < SHMEM_NR_ORDERS; o++)
		if (4UL << o == kb)
			return o;
	return 9;
}

/*
 * name{order,size,reason} value for every non-zero cell; with @zeros
 * (the kernel observes these) for every large order of this kernel and
 * every named reason too, 0 until one happens, so that a dashboard shows
 * 0, not "No data" ("other", the last reason, once it happens)
 */
static void order_reason_samples(FILE *out, const char *name,
				 unsigned int nr_reasons,
				 const char *(*reason_name)(unsigned int),
				 __u64 (*value)(const struct shmem_snapshot *,
						unsigned int, unsigned int),
				 const struct shmem_snapshot *s, bool zeros)
{
	unsigned int top = zeros ? top_order(s) : 0;

	for (unsigned int o = 0; o < SHMEM_NR_ORDERS; o++)
		for (unsigned int r = 0; r < nr_reasons; r++) {
			__u64 v = value(s, o, r);

			if (!v && (!o || o > top || r == nr_reasons - 1))
				continue;
			fprintf(out, "%s{", name);
			order_labels(out, o);
			fprintf(out, ",reason=\"%s\"} %llu\n", reason_name(r),
				(unsigned long long)v);
		}
}

static __u64 fallbacks_of(const struct shmem_snapshot *s, unsigned int o,
			  unsigned int r)
{
	return s->totals.fallbacks[o][r];
}

static __u64 ramp_fallbacks_of(const struct shmem_snapshot *s, unsigned int o,
			       unsigned int r)
{
	return s->totals.ramp_fallbacks[o][r];
}

static __u64 splits_done(const struct shmem_snapshot *s, unsigned int o,
			 unsigned int r)
{
	return s->totals.splits[o][r].done;
}

static __u64 splits_failed(const struct shmem_snapshot *s, unsigned int o,
			   unsigned int r)
{
	return s->totals.splits[o][r].failed;
}

/*
 * A signal this kernel cannot observe has no zeros: only what was counted
 * (6.1's charge fallbacks, where others go unseen).  The ramp's fallbacks
 * have no series at all where the ramp is not observed.
 */
static void print_fallbacks_splits(FILE *out, const struct shmem_snapshot *s)
{
	static const struct {
		__u32 signal;		/* observed: zeros too */
		__u32 only_if;		/* else no series */
		const char *name, *help;
		unsigned int nr_reasons;
		const char *(*reason_name)(unsigned int);
		__u64 (*value)(const struct shmem_snapshot *, unsigned int,
			       unsigned int);
	} metrics[] = {
		{ SHMEM_SIG_FALLBACKS, 0, "shmem_folio_fallbacks_total",
		  "Folio orders given up, by order and reason.",
		  SHMEM_STAT_NR_FALLBACKS, shmem_fallback_name, fallbacks_of },
		{ SHMEM_SIG_RAMP, SHMEM_SIG_RAMP, "shmem_folio_ramp_fallbacks_total",
		  "Of shmem_folio_fallbacks_total, orders the append ramp chose, by order and reason.",
		  SHMEM_STAT_NR_FALLBACKS, shmem_fallback_name, ramp_fallbacks_of },
		{ SHMEM_SIG_SPLITS, 0, "shmem_folio_splits_total",
		  "Large shmem folios split, by order before and reason.",
		  SHMEM_STAT_NR_SPLITS, shmem_split_name, splits_done },
		{ SHMEM_SIG_SPLITS, 0, "shmem_folio_split_failures_total",
		  "Splits shmem attempted that failed, by order and reason.",
		  SHMEM_STAT_NR_SPLITS, shmem_split_name, splits_failed },
	};

	for (size_t m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
		if ((s->info.signals & metrics[m].only_if) != metrics[m].only_if)
			continue;
		header(out, metrics[m].name, "counter", metrics[m].help);
		order_reason_samples(out, metrics[m].name, metrics[m].nr_reasons,
				     metrics[m].reason_name, metrics[m].value, s,
				     s->info.signals & metrics[m].signal);
	}
}

static void print_blocks(FILE *out, const struct shmem_snapshot *s)
{
	static const struct {
		const char *name, *help;
		size_t offset;
	} counters[] = {
		{ "shmem_block_uptodate_events_total",
		  "Events that made blocks of a folio uptodate.",
		  offsetof(struct shmem_blocks, uptodate_events) },
		{ "shmem_blocks_uptodate_total",
		  "Blocks (pages) of large folios made uptodate.",
		  offsetof(struct shmem_blocks, uptodate_blocks) },
		{ "shmem_blocks_cleared_total",
		  "Uptodate blocks cleared by truncation or hole punching.",
		  offsetof(struct shmem_blocks, clear_blocks) },
		{ "shmem_folios_became_partial_total",
		  "Large folios that became partly uptodate (none -> some blocks).",
		  offsetof(struct shmem_blocks, became_partial) },
		{ "shmem_folios_became_full_total",
		  "Partly uptodate large folios that became fully uptodate.",
		  offsetof(struct shmem_blocks, became_full) },
	};

	/* a signal this kernel cannot observe has no series, not zeros */
	for (size_t i = 0; s->info.signals & SHMEM_SIG_BLOCKS &&
			   i < sizeof(counters) / sizeof(counters[0]); i++) {
		header(out, counters[i].name, "counter", counters[i].help);
		fprintf(out, "%s %llu\n", counters[i].name, (unsigned long long)
			*(const __u64 *)((const char *)&s->totals.blocks +
					 counters[i].offset));
	}
	if (s->info.signals & SHMEM_SIG_BLOCKS) {
		header(out, "shmem_folios_partial", "gauge",
		       "Large folios partly uptodate now: became partial less became full since tracing began (never below 0).");
		fprintf(out, "shmem_folios_partial %llu\n",
			(unsigned long long)s->partial_now);
	}
	if (!(s->info.signals & SHMEM_SIG_ZERO))
		return;
	header(out, "shmem_zeroed_bytes_total", "counter",
	       "Bytes shmem zeroed in large folios, by reason.");
	for (unsigned int z = 0; z < SHMEM_STAT_NR_ZEROS; z++)
		fprintf(out, "shmem_zeroed_bytes_total{reason=\"%s\"} %llu\n",
			shmem_zero_name(z),
			(unsigned long long)s->totals.blocks.zeroed[z]);
}

/*
 * The buckets served: le = 256 ns and every 4x up to 2^42 ns (4398 s, 73
 * min), 18 bounds and +Inf, not the 43 log2 bounds the maps keep, whose
 * 2x steps cost a series each for a resolution dashboards do not use
 * (shmemhist prints them).  Slot n counts values in (2^(n-1), 2^n] ns,
 * so the cumulative bucket le=2^n ns is the sum of slots 0..n: exact for
 * any even n.  Values above 2^SHMEM_HIST_TOP ns are only in +Inf.
 * Buckets and _count come from the same slots, so they agree in every
 * scrape; _sum is the maps' own.
 */
#define BUCKET_FIRST_LOG2 8	/* 256 ns: anything faster is one bucket */
#define BUCKET_STEP_LOG2 2	/* a bound every 4x */
_Static_assert((SHMEM_HIST_TOP - BUCKET_FIRST_LOG2) % BUCKET_STEP_LOG2 == 0,
	       "the last bound is the maps' last, 2^SHMEM_HIST_TOP ns");

/*
 * @ns in seconds, exactly (a whole number of ns is at most 9 decimals):
 * a rounded bound, as %.9g gave, may fall below the values it holds.
 */
static void exact_seconds(char *buf, size_t len, __u64 ns)
{
	size_t end = snprintf(buf, len, "%llu.%09llu",
			      (unsigned long long)(ns / 1000000000),
			      (unsigned long long)(ns % 1000000000));

	while (end > 0 && end < len && buf[end - 1] == '0')
		buf[--end] = '\0';
	if (end > 0 && end < len && buf[end - 1] == '.')
		buf[--end] = '\0';
}

static void print_hist(FILE *out, const char *name, const char *help,
		       const struct shmem_hist *h)
{
	__u64 cumulative = 0, count = shmem_hist_count(h);
	char le[32];
	int slot = 0;

	/* every bucket, always: a heatmap wants the same set each scrape */
	header(out, name, "histogram", help);
	for (int bound = BUCKET_FIRST_LOG2; bound <= SHMEM_HIST_TOP;
	     bound += BUCKET_STEP_LOG2) {
		while (slot <= bound)
			cumulative += h->slots[slot++];
		exact_seconds(le, sizeof(le), 1ULL << bound);
		fprintf(out, "%s_bucket{le=\"%s\"} %llu\n", name, le,
			(unsigned long long)cumulative);
	}
	fprintf(out, "%s_bucket{le=\"+Inf\"} %llu\n", name,
		(unsigned long long)count);
	fprintf(out, "%s_sum %.9f\n", name, h->sum / 1e9);
	fprintf(out, "%s_count %llu\n", name, (unsigned long long)count);
}

static void print_latency(FILE *out, const struct shmem_snapshot *s)
{
	static const struct {
		unsigned int hist;
		__u32 signal;
		const char *name, *help;
		/* where fallback mode measures it otherwise (NULL: the same) */
		const char *fallback_help;
	} hists[] = {
		{ SHMEM_HIST_ALLOC, SHMEM_SIG_LAT_ALLOC, "shmem_alloc_latency_seconds",
		  "Time to allocate a shmem folio, from the shmem_alloc_time trace event: from the first attempt to the allocation, orders given up and retries included.",
		  "Time to allocate a shmem folio: each shmem_alloc_and_add_folio() call, timed by fentry/fexit (this kernel has no shmem_alloc_time event); an order given up and the smaller one after it are two calls." },
		{ SHMEM_HIST_WRITE, SHMEM_SIG_LAT_WRITE, "shmem_write_latency_seconds",
		  "Time of write(2) calls on shmem.", NULL },
		{ SHMEM_HIST_FAULT, SHMEM_SIG_LAT_FAULT, "shmem_fault_latency_seconds",
		  "Time of shmem page faults.", NULL },
		{ SHMEM_HIST_FALLOC, SHMEM_SIG_LAT_FALLOC, "shmem_fallocate_latency_seconds",
		  "Time of fallocate(2) calls on shmem.", NULL },
		{ SHMEM_HIST_UPTODATE, SHMEM_SIG_LAT_UPTODATE, "shmem_folio_uptodate_seconds",
		  "Time from allocating a large folio to it being fully uptodate, from the shmem_alloc_folio and shmem_block_uptodate trace events.",
		  NULL },
	};

	/* only what is traced: a histogram of zeros would claim it is fast */
	for (size_t i = 0; i < sizeof(hists) / sizeof(hists[0]); i++)
		if (s->info.signals & hists[i].signal)
			print_hist(out, hists[i].name,
				   !s->info.tracepoints && hists[i].fallback_help ?
				   hists[i].fallback_help : hists[i].help,
				   &s->hists[hists[i].hist]);
}

static void print_kernel(FILE *out, const struct shmem_snapshot *s)
{
	static const struct {
		const char *name, *help;
		size_t offset;
	} mthp[] = {
		{ "shmem_mthp_alloc_total", "The kernel's shmem_alloc counter, per folio size.",
		  offsetof(struct shmem_mthp, alloc) },
		{ "shmem_mthp_fallback_total", "The kernel's shmem_fallback counter, per folio size.",
		  offsetof(struct shmem_mthp, fallback) },
		{ "shmem_mthp_fallback_charge_total",
		  "The kernel's shmem_fallback_charge counter, per folio size.",
		  offsetof(struct shmem_mthp, fallback_charge) },
		{ "shmem_mthp_split_total", "The kernel's split counter (anon and shmem), per folio size.",
		  offsetof(struct shmem_mthp, split) },
		{ "shmem_mthp_split_failed_total",
		  "The kernel's split_failed counter (anon and shmem), per folio size.",
		  offsetof(struct shmem_mthp, split_failed) },
	};

	char size[16];

	for (size_t k = 0; k < sizeof(mthp) / sizeof(mthp[0]); k++) {
		header(out, mthp[k].name, "counter", mthp[k].help);
		for (size_t i = 0; i < s->nr_mthp; i++) {
			/* the size label of every other series: they join on it */
			shmem_size_name(s->mthp[i].kb, size, sizeof(size));
			fprintf(out, "%s{size=\"%s\"} %llu\n", mthp[k].name, size,
				(unsigned long long)*(const __u64 *)
				((const char *)&s->mthp[i] + mthp[k].offset));
		}
	}
	header(out, "shmem_meminfo_bytes", "gauge",
	       "Shmem fields of /proc/meminfo.");
	for (size_t i = 0; i < s->nr_meminfo; i++)
		fprintf(out, "shmem_meminfo_bytes{field=\"%s\"} %llu\n",
			s->meminfo[i].name, (unsigned long long)s->meminfo[i].kb * 1024);
}

/*
 * @name{order,size,device,mountpoint,name} of each file with a series,
 * and @name{order,size,name="(other files)"}: by order, they add up to
 * the totals
 */
static void file_samples(FILE *out, const char *name,
			 const struct shmem_file_series *files, bool ramp,
			 const struct shmem_mounts *mounts)
{
	for (size_t i = 0; i < files->nr; i++) {
		const struct shmem_file_series_entry *f = &files->files[i];

		fs_samples(out, name, ramp ? f->ramp_allocs : f->allocs,
			   f->dev, mounts, f->name);
	}
	for (unsigned int o = 0; o < SHMEM_NR_ORDERS; o++) {
		__u64 v = ramp ? files->other_ramp[o] : files->other[o];

		if (!v)
			continue;
		fprintf(out, "%s{", name);
		order_labels(out, o);
		fprintf(out, ",name=\"" SHMEM_OTHER_FILES "\"} %llu\n",
			(unsigned long long)v);
	}
}

static void print_files(FILE *out, const struct shmem_snapshot *s,
			const struct shmem_mounts *mounts,
			const struct shmem_file_series *files)
{
	header(out, "shmem_file_series_limit", "gauge",
	       "Files that may have a per-file series at once (-f N); the rest are counted in name=\"" SHMEM_OTHER_FILES "\".");
	fprintf(out, "shmem_file_series_limit %zu\n", files->max);
	header(out, "shmem_file_folio_allocs_total", "counter",
	       "Folios allocated per file (a file system and a file name), for at most -f files; name=\"" SHMEM_OTHER_FILES "\" (no device) counts the rest: by order they add up to shmem_folio_allocs_total.");
	file_samples(out, "shmem_file_folio_allocs_total", files, false, mounts);
	if (!(s->info.signals & SHMEM_SIG_RAMP))
		return;
	header(out, "shmem_file_folio_ramp_allocs_total", "counter",
	       "Of shmem_file_folio_allocs_total, the folios whose order the append ramp chose.");
	file_samples(out, "shmem_file_folio_ramp_allocs_total", files, true, mounts);
}

static void print_signals(FILE *out, const struct shmem_snapshot *s)
{
	const char *mode = s->info.tracepoints ? "tracepoints" : "fallback";

	/* as other exporters' _build_info: a dashboard's table of versions */
	header(out, "shmem_exporter_build_info", "gauge",
	       "1, labelled with the exporter's version (git describe of its build) and its tracing mode (tracepoints or fallback).");
	fputs("shmem_exporter_build_info{version=\"", out);
	label_value(out, shmem_version);
	fprintf(out, "\",tracing_mode=\"%s\"} 1\n", mode);
	header(out, "shmem_tracing_info", "gauge",
	       "1, labelled with the tracing mode (tracepoints or fallback).");
	fprintf(out, "shmem_tracing_info{mode=\"%s\"} 1\n", mode);
	header(out, "shmem_tracing_signal", "gauge",
	       "1 if this kernel and configuration observe the signal, else 0.");
	for (unsigned int i = 0; i < SHMEM_NR_SIGNALS; i++)
		fprintf(out, "shmem_tracing_signal{signal=\"%s\"} %d\n",
			shmem_signal_name(i), !!(s->info.signals & (1U << i)));
}

/* The row maps: how full, and what they dropped (totals never drop). */
static void print_rows(FILE *out, const struct shmem_snapshot *s)
{
	static const struct {
		const char *name, *type, *help;
	} metrics[] = {
		{ "shmem_tracing_rows", "gauge", "Rows in each per-entity map." },
		{ "shmem_tracing_rows_capacity", "gauge",
		  "Entries each per-entity map has: the rows asked for (-E) and the slack of the kernel's LRU hash (128 a CPU), which it fills before it drops the first row." },
		{ "shmem_tracing_dropped_total", "counter",
		  "Rows a full per-entity map dropped (least recently used) or could not insert; global totals are never dropped." },
	};

	for (size_t m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
		header(out, metrics[m].name, metrics[m].type, metrics[m].help);
		for (unsigned int k = 0; k < SHMEM_NR_ROW_KINDS; k++) {
			unsigned long long v = m == 0 ? s->nr_rows[k] :
				m == 1 ? s->capacity[k] : s->dropped[k];

			if (s->info.rows & (1U << k))
				fprintf(out, "%s{rows=\"%s\"} %llu\n", metrics[m].name,
					shmem_row_kind_name(k), v);
		}
	}
}

char *shmem_metrics_text(const struct shmem_snapshot *s,
			 const struct shmem_mounts *mounts,
			 const struct shmem_file_series *files)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return NULL;
	print_signals(out, s);
	print_rows(out, s);
	print_allocs(out, s);
	if (s->info.rows & (1U << SHMEM_ROWS_FSES))
		print_filesystems(out, s, mounts);
	print_fallbacks_splits(out, s);
	print_blocks(out, s);
	print_latency(out, s);
	print_kernel(out, s);
	if (files)
		print_files(out, s, mounts, files);
	if (fclose(out)) {
		free(text);
		return NULL;
	}
	return text;
}
