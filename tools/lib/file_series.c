// SPDX-License-Identifier: GPL-2.0
/*
 * The exporter's per-file series (-f N), kept across scrapes so that
 * they are few, stable and never go back:
 *
 * - A series is a file system and a file name, not an inode: a file
 *   deleted and created again under its name (a temporary file, a
 *   restarted program's segment) goes on in its series.
 * - At most N of them.  A file gets one the first scrape it allocates
 *   in while fewer than N are held, or by taking the series of the file
 *   that has allocated nothing for the longest, once that is at least
 *   the idle time; busiest first.  A series counts what its file
 *   allocated since the scrape before the one that gave it the series.
 * - Every allocation no series counts (files without a series, before
 *   they got one or after they lost it, rows the row map dropped or could
 *   not insert) is in one "other" series, so that the per-file series add
 *   up to shmem_folio_allocs_total, order by order.
 *
 * The counts come from the rows' growth between scrapes
 * (shmem_snapshot_delta()), so a row the LRU map dropped and inserted
 * again adds what it counted anew, never less than before.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "shmem_tools.h"

void shmem_file_series_init(struct shmem_file_series *fs, size_t max,
			    double idle)
{
	memset(fs, 0, sizeof(*fs));
	fs->max = max;
	fs->idle = idle;
}

void shmem_file_series_free(struct shmem_file_series *fs)
{
	free(fs->files);
	shmem_snapshot_free(&fs->prev);
	fs->files = NULL;
	fs->nr = 0;
}

static int key_cmp(__u32 dev_a, const char *name_a, __u32 dev_b,
		   const char *name_b)
{
	if (dev_a != dev_b)
		return dev_a < dev_b ? -1 : 1;
	return strcmp(name_a, name_b);
}

static int row_key_cmp(const void *a, const void *b)
{
	const struct shmem_row_entry *x = *(const struct shmem_row_entry **)a;
	const struct shmem_row_entry *y = *(const struct shmem_row_entry **)b;

	return key_cmp(x->dev, x->name, y->dev, y->name);
}

static int file_key_cmp(const void *a, const void *b)
{
	const struct shmem_file_series_entry *x = a, *y = b;

	return key_cmp(x->dev, x->name, y->dev, y->name);
}

/* A file's growth since the last scrape: its rows' (one a row inserted) */
struct growth {
	__u32 dev;
	const char *name;
	__u64 allocs[SHMEM_NR_ORDERS];
	__u64 ramp_allocs[SHMEM_NR_ORDERS];
	__u64 total;
};

/* Busiest first; ties by key, so the choice does not depend on map order */
static int growth_cmp(const void *a, const void *b)
{
	const struct growth *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return key_cmp(x->dev, x->name, y->dev, y->name);
}

/* Idle longest first; ties by key */
static const struct shmem_file_series_entry *idle_files;

static int idle_cmp(const void *a, const void *b)
{
	const struct shmem_file_series_entry *x = &idle_files[*(const size_t *)a];
	const struct shmem_file_series_entry *y = &idle_files[*(const size_t *)b];

	if (x->last_alloc != y->last_alloc)
		return x->last_alloc < y->last_alloc ? -1 : 1;
	return key_cmp(x->dev, x->name, y->dev, y->name);
}

static void add_counts(struct shmem_file_series_entry *f,
		       const struct growth *g, double now)
{
	for (int o = 0; o < SHMEM_NR_ORDERS; o++) {
		f->allocs[o] += g->allocs[o];
		f->ramp_allocs[o] += g->ramp_allocs[o];
	}
	f->last_alloc = now;
}

/* Give series to files without one that grew, busiest first */
static void give_series(struct shmem_file_series *fs, struct growth *new,
			size_t nr_new, double now)
{
	size_t *by_idle = malloc((fs->nr + 1) * sizeof(*by_idle)), next = 0;
	size_t nr_held = fs->nr;

	qsort(new, nr_new, sizeof(*new), growth_cmp);
	for (size_t i = 0; by_idle && i < nr_held; i++)
		by_idle[i] = i;
	idle_files = fs->files;
	if (by_idle)
		qsort(by_idle, nr_held, sizeof(*by_idle), idle_cmp);
	for (size_t i = 0; i < nr_new; i++) {
		struct shmem_file_series_entry *f;

		if (fs->nr < fs->max) {
			f = &fs->files[fs->nr++];
		} else if (by_idle && next < nr_held &&
			   now - fs->files[by_idle[next]].last_alloc >= fs->idle) {
			/* its counts move to "other": no series went back */
			f = &fs->files[by_idle[next++]];
		} else {
			break;
		}
		memset(f, 0, sizeof(*f));
		f->dev = new[i].dev;
		snprintf(f->name, sizeof(f->name), "%s", new[i].name);
		add_counts(f, &new[i], now);
	}
	free(by_idle);
	qsort(fs->files, fs->nr, sizeof(*fs->files), file_key_cmp);
}

/*
 * "other": the totals less the series, never less than it was (the rows
 * are read after the totals, so a scrape may see an allocation in a row
 * before the totals have it)
 */
static void count_other(struct shmem_file_series *fs,
			const struct shmem_snapshot *now)
{
	for (unsigned int o = 0; o < SHMEM_NR_ORDERS; o++) {
		__u64 all = shmem_order_allocs(now, o), ramp = now->totals.ramp_allocs[o];

		for (size_t i = 0; i < fs->nr; i++) {
			all -= fs->files[i].allocs[o] < all ? fs->files[i].allocs[o] : all;
			ramp -= fs->files[i].ramp_allocs[o] < ramp ?
				fs->files[i].ramp_allocs[o] : ramp;
		}
		if (all > fs->other[o])
			fs->other[o] = all;
		if (ramp > fs->other_ramp[o])
			fs->other_ramp[o] = ramp;
	}
}

/* @now's file rows, for the next scrape's growth */
static int keep_rows(struct shmem_file_series *fs,
		     const struct shmem_snapshot *now)
{
	size_t n = now->nr_rows[SHMEM_ROWS_FILES];
	struct shmem_row_entry *rows = malloc((n + 1) * sizeof(*rows));

	if (!rows)
		return -1;
	memcpy(rows, now->rows[SHMEM_ROWS_FILES], n * sizeof(*rows));
	shmem_snapshot_free(&fs->prev);
	fs->prev.rows[SHMEM_ROWS_FILES] = rows;
	fs->prev.nr_rows[SHMEM_ROWS_FILES] = n;
	return 0;
}

int shmem_file_series_update(struct shmem_file_series *fs,
			     const struct shmem_snapshot *now)
{
	struct shmem_snapshot d;
	const struct shmem_row_entry **rows = NULL;
	struct growth *grown = NULL;
	size_t n, nr_grown = 0, nr_new = 0;
	int err = -1;

	if (!fs->files) {
		fs->files = calloc(fs->max + 1, sizeof(*fs->files));
		if (!fs->files)
			return -1;
	}
	if (shmem_snapshot_delta(now, &fs->prev, &d))
		return -1;
	n = d.nr_rows[SHMEM_ROWS_FILES];
	rows = malloc((n + 1) * sizeof(*rows));
	grown = calloc(n + 1, sizeof(*grown));
	if (!rows || !grown)
		goto out;
	/* the rows of one file system and name, together */
	for (size_t i = 0; i < n; i++)
		rows[i] = &d.rows[SHMEM_ROWS_FILES][i];
	qsort(rows, n, sizeof(*rows), row_key_cmp);
	for (size_t i = 0; i < n; i++) {
		struct growth *g = &grown[nr_grown];

		if (i && row_key_cmp(&rows[i - 1], &rows[i]))
			g = &grown[++nr_grown];
		g->dev = rows[i]->dev;
		g->name = rows[i]->name;
		for (int o = 0; o < SHMEM_NR_ORDERS; o++) {
			g->allocs[o] += rows[i]->row.allocs[o];
			g->ramp_allocs[o] += rows[i]->row.ramp_allocs[o];
			g->total += rows[i]->row.allocs[o];
		}
	}
	nr_grown += n > 0;
	/* files with a series add to it; the others (sorted after) may get one */
	for (size_t i = 0; i < nr_grown; i++) {
		struct shmem_file_series_entry key = { .dev = grown[i].dev }, *f;

		if (!grown[i].total)
			continue;
		snprintf(key.name, sizeof(key.name), "%s", grown[i].name);
		f = bsearch(&key, fs->files, fs->nr, sizeof(*fs->files), file_key_cmp);
		if (f)
			add_counts(f, &grown[i], now->time);
		else
			grown[nr_new++] = grown[i];
	}
	give_series(fs, grown, nr_new, now->time);
	count_other(fs, now);
	err = keep_rows(fs, now);
out:
	free(rows);
	free(grown);
	shmem_snapshot_free(&d);
	return err;
}
