// SPDX-License-Identifier: GPL-2.0
/*
 * A snapshot in the Prometheus text exposition format.  Every value is
 * cumulative since the maps were loaded (or since boot for the kernel's
 * own counters); Prometheus takes rates.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "shmemstat.h"

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

static const char *mount_of(const struct shmem_mounts *m, __u32 dev)
{
	for (size_t i = 0; i < m->nr; i++)
		if (m->dev[i] == dev)
			return m->path[i];
	return "";
}

int shmem_mounts_read(const char *mountinfo, struct shmem_mounts *m)
{
	FILE *f = fopen(mountinfo, "r");
	char line[4096];

	memset(m, 0, sizeof(*m));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && m->nr < SHMEM_MAX_MOUNTS) {
		unsigned int major, minor;
		char path[256];

		/* id parent major:minor root mountpoint ... */
		if (sscanf(line, "%*u %*u %u:%u %*s %255s", &major, &minor, path) != 3)
			continue;
		m->dev[m->nr] = major << 20 | minor;
		/* the first mount of a device names it */
		if (strcmp(mount_of(m, m->dev[m->nr]), ""))
			continue;
		m->path[m->nr] = strdup(path);
		if (m->path[m->nr])
			m->nr++;
	}
	fclose(f);
	return 0;
}

void shmem_mounts_free(struct shmem_mounts *m)
{
	for (size_t i = 0; i < m->nr; i++)
		free(m->path[i]);
	memset(m, 0, sizeof(*m));
}

static void order_labels(FILE *out, unsigned int order)
{
	char size[16];

	shmem_order_size(order, size, sizeof(size));
	fprintf(out, "order=\"%u\",size=\"%s\"", order, size);
}

static void print_allocs(FILE *out, const struct shmem_snapshot *s,
			 const struct shmem_mounts *mounts)
{
	header(out, "shmem_folio_allocs_total", "counter",
	       "shmem folios allocated, by order, path and file system.");
	for (size_t i = 0; i < s->nr_allocs; i++) {
		const struct shmem_alloc_entry *a = &s->allocs[i];
		char dev[24];

		shmem_dev_name(a->key.dev, dev, sizeof(dev));
		fprintf(out, "shmem_folio_allocs_total{");
		order_labels(out, a->key.order);
		fprintf(out, ",path=\"%s\",device=\"%s\",mountpoint=\"",
			shmem_path_name(a->key.path), dev);
		label_value(out, mount_of(mounts, a->key.dev));
		fprintf(out, "\"} %llu\n", (unsigned long long)a->count);
	}
}

/* name{order,size,reason} value, for every non-zero cell */
static void order_reason_samples(FILE *out, const char *name,
				 unsigned int nr_reasons,
				 const char *(*reason_name)(unsigned int),
				 __u64 (*value)(const struct shmem_snapshot *,
						unsigned int, unsigned int),
				 const struct shmem_snapshot *s)
{
	for (unsigned int o = 0; o < SHMEM_NR_ORDERS; o++)
		for (unsigned int r = 0; r < nr_reasons; r++) {
			__u64 v = value(s, o, r);

			if (!v)
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
	return s->fallbacks[o][r];
}

static __u64 splits_done(const struct shmem_snapshot *s, unsigned int o,
			 unsigned int r)
{
	return s->splits[o][r].done;
}

static __u64 splits_failed(const struct shmem_snapshot *s, unsigned int o,
			   unsigned int r)
{
	return s->splits[o][r].failed;
}

static void print_fallbacks_splits(FILE *out, const struct shmem_snapshot *s)
{
	header(out, "shmem_folio_fallbacks_total", "counter",
	       "Folio orders given up, by order and reason.");
	order_reason_samples(out, "shmem_folio_fallbacks_total",
			     SHMEM_STAT_NR_FALLBACKS, shmem_fallback_name,
			     fallbacks_of, s);
	header(out, "shmem_folio_splits_total", "counter",
	       "Large shmem folios split, by order before and reason.");
	order_reason_samples(out, "shmem_folio_splits_total",
			     SHMEM_STAT_NR_SPLITS, shmem_split_name, splits_done, s);
	header(out, "shmem_folio_split_failures_total", "counter",
	       "Splits shmem attempted that failed, by order and reason.");
	order_reason_samples(out, "shmem_folio_split_failures_total",
			     SHMEM_STAT_NR_SPLITS, shmem_split_name, splits_failed, s);
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
		{ "shmem_blocks_uptodate_total", "Blocks (pages) made uptodate.",
		  offsetof(struct shmem_blocks, uptodate_blocks) },
		{ "shmem_blocks_cleared_total",
		  "Uptodate blocks cleared by truncation or hole punching.",
		  offsetof(struct shmem_blocks, clear_blocks) },
		{ "shmem_folios_partial_total",
		  "Large folios that became partly uptodate.",
		  offsetof(struct shmem_blocks, became_partial) },
		{ "shmem_folios_completed_total",
		  "Partly uptodate large folios that became fully uptodate.",
		  offsetof(struct shmem_blocks, became_full) },
	};

	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		header(out, counters[i].name, "counter", counters[i].help);
		fprintf(out, "%s %llu\n", counters[i].name, (unsigned long long)
			*(const __u64 *)((const char *)&s->blocks + counters[i].offset));
	}
	header(out, "shmem_zeroed_bytes_total", "counter",
	       "Bytes shmem zeroed in large folios, by reason.");
	for (unsigned int z = 0; z < SHMEM_STAT_NR_ZEROS; z++)
		fprintf(out, "shmem_zeroed_bytes_total{reason=\"%s\"} %llu\n",
			shmem_zero_name(z), (unsigned long long)s->blocks.zeroed[z]);
}

/*
 * Slot n counts values in (2^(n-1), 2^n] ns, so the cumulative bucket
 * le=2^n ns holds every value at or below it.
 */
static void print_hist(FILE *out, const char *name, const char *help,
		       const struct shmem_hist *h)
{
	__u64 cumulative = 0;

	/* every bucket, always: a heatmap wants the same set each scrape */
	header(out, name, "histogram", help);
	for (int i = 0; i < SHMEM_HIST_SLOTS; i++) {
		cumulative += h->slots[i];
		fprintf(out, "%s_bucket{le=\"%.9g\"} %llu\n", name,
			(double)(1ULL << i) / 1e9, (unsigned long long)cumulative);
	}
	fprintf(out, "%s_bucket{le=\"+Inf\"} %llu\n", name,
		(unsigned long long)h->count);
	fprintf(out, "%s_sum %.9f\n", name, h->sum / 1e9);
	fprintf(out, "%s_count %llu\n", name, (unsigned long long)h->count);
}

static void print_latency(FILE *out, const struct shmem_snapshot *s)
{
	static const struct {
		unsigned int hist;
		const char *name, *help;
	} hists[] = {
		{ SHMEM_HIST_ALLOC, "shmem_alloc_latency_seconds",
		  "Time in shmem_alloc_and_add_folio()." },
		{ SHMEM_HIST_WRITE, "shmem_write_latency_seconds",
		  "write(2) calls on shmem that allocated a folio." },
		{ SHMEM_HIST_FAULT, "shmem_fault_latency_seconds",
		  "shmem page faults that allocated a folio." },
		{ SHMEM_HIST_FALLOC, "shmem_fallocate_latency_seconds",
		  "fallocate(2) calls on shmem that allocated a folio." },
		{ SHMEM_HIST_UPTODATE, "shmem_folio_uptodate_seconds",
		  "Time from allocating a large folio to it being fully uptodate." },
	};

	for (size_t i = 0; i < sizeof(hists) / sizeof(hists[0]); i++)
		print_hist(out, hists[i].name, hists[i].help,
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
		{ "mthp_split_total", "The kernel's split counter (anon and shmem), per folio size.",
		  offsetof(struct shmem_mthp, split) },
		{ "mthp_split_failed_total",
		  "The kernel's split_failed counter (anon and shmem), per folio size.",
		  offsetof(struct shmem_mthp, split_failed) },
	};

	for (size_t k = 0; k < sizeof(mthp) / sizeof(mthp[0]); k++) {
		header(out, mthp[k].name, "counter", mthp[k].help);
		for (size_t i = 0; i < s->nr_mthp; i++)
			fprintf(out, "%s{size=\"%ukB\"} %llu\n", mthp[k].name,
				s->mthp[i].kb, (unsigned long long)
				*(const __u64 *)((const char *)&s->mthp[i] + mthp[k].offset));
	}
	header(out, "shmem_meminfo_bytes", "gauge",
	       "Shmem fields of /proc/meminfo.");
	for (size_t i = 0; i < s->nr_meminfo; i++)
		fprintf(out, "shmem_meminfo_bytes{field=\"%s\"} %llu\n",
			s->meminfo[i].name, (unsigned long long)s->meminfo[i].kb * 1024);
}

static void print_files(FILE *out, struct shmem_snapshot *s,
			const struct shmem_mounts *mounts, size_t top)
{
	size_t shown = 0;

	header(out, "shmem_file_folio_allocs_total", "counter",
	       "Folios allocated per file, for the files with the most.");
	shmem_rows_sort(s, SHMEM_ROWS_FILES, SHMEM_SORT_ALLOCS);
	for (size_t i = 0; i < s->nr_rows[SHMEM_ROWS_FILES] && shown < top; i++) {
		const struct shmem_row_entry *e = &s->rows[SHMEM_ROWS_FILES][i];
		char dev[24];

		if (!shmem_row_allocs(&e->row))
			break;
		shmem_dev_name(e->dev, dev, sizeof(dev));
		for (unsigned int o = 0; o < SHMEM_NR_ORDERS; o++) {
			if (!e->row.allocs[o])
				continue;
			fprintf(out, "shmem_file_folio_allocs_total{");
			order_labels(out, o);
			fprintf(out, ",device=\"%s\",mountpoint=\"", dev);
			label_value(out, mount_of(mounts, e->dev));
			fprintf(out, "\",inode=\"%llu\",name=\"",
				(unsigned long long)e->id);
			label_value(out, e->row.name);
			fprintf(out, "\"} %llu\n",
				(unsigned long long)e->row.allocs[o]);
		}
		shown++;
	}
}

static void print_signals(FILE *out, const struct shmem_snapshot *s)
{
	header(out, "shmem_tracing_info", "gauge",
	       "1, labelled with the tracing mode (tracepoints or fallback).");
	fprintf(out, "shmem_tracing_info{mode=\"%s\"} 1\n",
		s->info.tracepoints ? "tracepoints" : "fallback");
	header(out, "shmem_tracing_signal", "gauge",
	       "1 if this kernel and configuration observe the signal, else 0.");
	for (unsigned int i = 0; i < SHMEM_NR_SIGNALS; i++)
		fprintf(out, "shmem_tracing_signal{signal=\"%s\"} %d\n",
			shmem_signal_name(i), !!(s->info.signals & (1U << i)));
}

char *shmem_metrics_text(struct shmem_snapshot *s,
			 const struct shmem_mounts *mounts, size_t top_files)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return NULL;
	print_signals(out, s);
	print_allocs(out, s, mounts);
	print_fallbacks_splits(out, s);
	print_blocks(out, s);
	print_latency(out, s);
	print_kernel(out, s);
	if (top_files)
		print_files(out, s, mounts, top_files);
	if (fclose(out)) {
		free(text);
		return NULL;
	}
	return text;
}
