// SPDX-License-Identifier: GPL-2.0
/*
 * Snapshots: every map, the kernel's mTHP counters and the Shmem lines of
 * /proc/meminfo read into one plain struct; the difference of two; rows
 * sorted.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include "shmem_tools.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int shmem_info_read(const struct shmem_maps *maps, struct shmem_info *info)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(maps->fd[SHMEM_MAP_INFO], &zero, info))
		return -1;
	/*
	 * Another loader (bpftool prog loadall ... autoattach) leaves the info
	 * map empty; the object's defaults attach every program, which loads
	 * only on a kernel with our events: counting, every row map, no
	 * latency.
	 */
	if (!info->signals) {
		info->signals = ((1U << SHMEM_NR_SIGNALS) - 1) & ~SHMEM_SIG_LATENCY;
		info->disabled = SHMEM_SIG_LATENCY;
		info->tracepoints = 1;
		info->rows = SHMEM_ALL_ROWS;
	}
	return 0;
}

static int read_u64_file(const char *path, __u64 *v)
{
	FILE *f = fopen(path, "r");
	unsigned long long x;
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%llu", &x) == 1;
	fclose(f);
	if (!ok)
		return -1;
	*v = x;
	return 0;
}

static int mthp_cmp(const void *a, const void *b)
{
	const struct shmem_mthp *x = a, *y = b;

	return (x->kb > y->kb) - (x->kb < y->kb);
}

int shmem_mthp_read(const char *dir, struct shmem_snapshot *s)
{
	static const struct {
		const char *name;
		size_t offset;
	} fields[] = {
		{ "shmem_alloc", offsetof(struct shmem_mthp, alloc) },
		{ "shmem_fallback", offsetof(struct shmem_mthp, fallback) },
		{ "shmem_fallback_charge",
		  offsetof(struct shmem_mthp, fallback_charge) },
		{ "split", offsetof(struct shmem_mthp, split) },
		{ "split_failed", offsetof(struct shmem_mthp, split_failed) },
	};
	DIR *d = opendir(dir);
	struct dirent *de;

	s->nr_mthp = 0;
	if (!d)
		return -1;
	while ((de = readdir(d)) && s->nr_mthp < SHMEM_NR_ORDERS) {
		struct shmem_mthp *m = &s->mthp[s->nr_mthp];
		char path[PATH_MAX];
		unsigned int kb;
		char tail;

		if (sscanf(de->d_name, "hugepages-%ukB%c", &kb, &tail) != 1)
			continue;
		memset(m, 0, sizeof(*m));
		m->kb = kb;
		for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
			snprintf(path, sizeof(path), "%s/%s/stats/%s", dir,
				 de->d_name, fields[i].name);
			read_u64_file(path, (__u64 *)((char *)m + fields[i].offset));
		}
		s->nr_mthp++;
	}
	closedir(d);
	qsort(s->mthp, s->nr_mthp, sizeof(s->mthp[0]), mthp_cmp);
	return 0;
}

int shmem_meminfo_read(const char *path, struct shmem_snapshot *s)
{
	FILE *f = fopen(path, "r");
	char line[256];

	s->nr_meminfo = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && s->nr_meminfo < SHMEM_MAX_MEMINFO) {
		struct shmem_meminfo *m = &s->meminfo[s->nr_meminfo];
		unsigned long long kb;

		if (strncmp(line, "Shmem", 5) ||
		    sscanf(line, "%23[^:]: %llu kB", m->name, &kb) != 2)
			continue;
		m->kb = kb;
		s->nr_meminfo++;
	}
	fclose(f);
	return 0;
}

double shmem_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct rows_arg {
	struct shmem_snapshot *s;
	enum shmem_row_kind kind;
	size_t alloc;
};

static int add_row(const void *key, const void *value, void *arg)
{
	struct rows_arg *ra = arg;
	struct shmem_snapshot *s = ra->s;
	size_t n = s->nr_rows[ra->kind];
	struct shmem_row_entry *e;

	if (n == ra->alloc) {
		struct shmem_row_entry *grown;

		ra->alloc = ra->alloc ? 2 * ra->alloc : 256;
		grown = realloc(s->rows[ra->kind], ra->alloc * sizeof(*grown));
		if (!grown)
			return -1;
		s->rows[ra->kind] = grown;
	}
	e = &s->rows[ra->kind][n];
	memset(e, 0, offsetof(struct shmem_row_entry, row));
	switch (ra->kind) {
	case SHMEM_ROWS_FILES: {
		const struct shmem_file_key *fk = key;

		e->id = fk->ino;
		e->dev = fk->dev;
		break;
	}
	case SHMEM_ROWS_PROCS: {
		const struct shmem_proc_key *pk = key;

		e->id = pk->tgid;
		e->start_ns = pk->start_ns;
		break;
	}
	case SHMEM_ROWS_CGROUPS:
		e->id = *(const __u64 *)key;
		break;
	default:
		e->id = *(const __u32 *)key;
		e->dev = e->id;
	}
	e->row = *(const struct shmem_row *)value;
	/* the root cgroup's kernfs node has an empty name */
	if (ra->kind == SHMEM_ROWS_CGROUPS && !e->row.name[0])
		strcpy(e->row.name, "/");
	e->partial_now = shmem_partial_now(e->row.became_partial,
					   e->row.became_full);
	/* a name without its NUL may have been cut (bpf name_read()) */
	shmem_clean_name(e->row.name, SHMEM_NAME_LEN,
			 strnlen(e->row.name, SHMEM_NAME_LEN) == SHMEM_NAME_LEN,
			 e->name);
	s->nr_rows[ra->kind] = n + 1;
	return 0;
}

int shmem_snapshot_read(struct shmem_maps *maps, const char *mthp_dir,
			struct shmem_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->time = shmem_now();
	if (shmem_info_read(maps, &s->info))
		goto fail;
	/*
	 * The totals before the rows: a row counted as inserted by then is
	 * in the rows read below unless it was dropped, so inserted minus
	 * present never exceeds the rows dropped, whatever is inserted
	 * meanwhile, and is 0 while nothing is.  The largest such bound
	 * seen is the count: it never goes down, and it is exact when no
	 * insertion races the read.
	 */
	if (shmem_percpu_sum(maps->fd[SHMEM_MAP_TOTALS], 0, &s->totals,
			     sizeof(s->totals)))
		goto fail;
	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++) {
		const struct shmem_map_desc *d = &shmem_map_descs[SHMEM_ROW_MAP(k)];
		struct rows_arg ra = { s, k, 0 };
		__u64 created = s->totals.rows_created[k], dropped;

		if (!(s->info.rows & (1U << k)))
			continue;
		s->capacity[k] = maps->max_entries[SHMEM_ROW_MAP(k)];
		if (shmem_map_for_each(maps->fd[SHMEM_ROW_MAP(k)], d->key_size,
				       d->value_size, add_row, &ra))
			goto fail;
		dropped = s->totals.rows_failed[k] +
			(created > s->nr_rows[k] ? created - s->nr_rows[k] : 0);
		if (dropped > maps->dropped[k])
			maps->dropped[k] = dropped;
		s->dropped[k] = maps->dropped[k];
	}
	for (__u32 h = 0; h < SHMEM_NR_HISTS; h++)
		if (shmem_percpu_sum(maps->fd[SHMEM_MAP_HISTS], h, &s->hists[h],
				     sizeof(s->hists[h])))
			goto fail;
	s->partial_now = shmem_partial_now(s->totals.blocks.became_partial,
					   s->totals.blocks.became_full);
	shmem_mthp_read(mthp_dir, s);
	shmem_meminfo_read("/proc/meminfo", s);
	return 0;
fail:
	shmem_snapshot_free(s);
	return -1;
}

void shmem_snapshot_free(struct shmem_snapshot *s)
{
	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++)
		free(s->rows[k]);
	memset(s, 0, sizeof(*s));
}

static void sub_u64s(__u64 *out, const __u64 *now, const __u64 *prev,
		     size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = now[i] - prev[i];
}

static void add_u64s(__u64 *sum, const __u64 *add, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sum[i] += add[i];
}

/* Is any of @now's @n counters below @prev's? */
static bool u64s_below(const __u64 *now, const __u64 *prev, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (now[i] < prev[i])
			return true;
	return false;
}

/* Subtract a field made only of __u64 counters. */
#define SUB_FIELD(field) \
	sub_u64s((__u64 *)&out->field, (const __u64 *)&now->field, \
		 (const __u64 *)&prev->field, sizeof(out->field) / (sizeof(__u64)))

/* Add to a field made only of __u64 counters. */
#define ADD_FIELD(field) \
	add_u64s((__u64 *)&sum->field, (const __u64 *)&d->field, \
		 sizeof(sum->field) / (sizeof(__u64)))

/* The counters of a row: everything after its name */
#define ROW_COUNTERS ((sizeof(struct shmem_row) - \
		       offsetof(struct shmem_row, allocs)) / sizeof(__u64))

#ifdef SHMEM_COUNT_COMPARISONS
/* the unit tests measure subtraction's work in key comparisons */
unsigned long shmem_key_comparisons;
#endif

static int key_cmp(const void *a, const void *b)
{
	const struct shmem_row_entry *x = a, *y = b;

#ifdef SHMEM_COUNT_COMPARISONS
	shmem_key_comparisons++;
#endif
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/* @prev's rows, sorted by key, to look rows up in O(log n) */
static struct shmem_row_entry *sorted_copy(const struct shmem_row_entry *rows,
					   size_t n)
{
	struct shmem_row_entry *copy = malloc((n + 1) * sizeof(*copy));

	if (!copy)
		return NULL;
	memcpy(copy, rows, n * sizeof(*copy));
	qsort(copy, n, sizeof(*copy), key_cmp);
	return copy;
}

int shmem_snapshot_delta(const struct shmem_snapshot *now,
			 const struct shmem_snapshot *prev,
			 struct shmem_snapshot *out)
{
	*out = *now;
	memset(out->rows, 0, sizeof(out->rows));
	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++) {
		struct shmem_row_entry *was = sorted_copy(prev->rows[k],
							  prev->nr_rows[k]);

		out->rows[k] = malloc((now->nr_rows[k] + 1) * sizeof(*out->rows[k]));
		if (!was || !out->rows[k]) {
			free(was);
			goto fail;
		}
		for (size_t i = 0; i < now->nr_rows[k]; i++) {
			const struct shmem_row_entry *e = &now->rows[k][i];
			struct shmem_row_entry *d = &out->rows[k][i];
			const struct shmem_row_entry *p;

			*d = *e;
			p = bsearch(e, was, prev->nr_rows[k], sizeof(*was), key_cmp);
			/*
			 * Another stamp: dropped and inserted again, it counts
			 * from zero.  A stamp of 0 was read before it was set:
			 * the same row, unless a count went down, which only a
			 * row dropped and inserted again does (counts only grow)
			 */
			if (p && (p->row.inserted_ns == e->row.inserted_ns ||
				  (!p->row.inserted_ns &&
				   !u64s_below(e->row.allocs, p->row.allocs,
					       ROW_COUNTERS))))
				sub_u64s(d->row.allocs, e->row.allocs, p->row.allocs,
					 ROW_COUNTERS);
		}
		free(was);
	}
	out->mthp_since_boot = prev->mthp_since_boot;
	SUB_FIELD(totals);
	SUB_FIELD(hists);
	SUB_FIELD(dropped);
	for (size_t i = 0; i < now->nr_mthp; i++) {
		for (size_t j = 0; j < prev->nr_mthp; j++) {
			if (prev->mthp[j].kb != now->mthp[i].kb)
				continue;
			sub_u64s(&out->mthp[i].alloc, &now->mthp[i].alloc,
				 &prev->mthp[j].alloc,
				 (sizeof(out->mthp[i]) -
				  offsetof(struct shmem_mthp, alloc)) /
				 sizeof(__u64));
		}
	}
	return 0;
fail:
	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++)
		free(out->rows[k]);
	memset(out, 0, sizeof(*out));
	return -1;
}

int shmem_snapshot_add(struct shmem_snapshot *sum,
		       const struct shmem_snapshot *d)
{
	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++) {
		size_t known = sum->nr_rows[k];
		struct shmem_row_entry *rows = realloc(sum->rows[k],
			(known + d->nr_rows[k] + 1) * sizeof(*rows));

		if (!rows)
			return -1;
		sum->rows[k] = rows;
		/* the rows known so far sorted by key, to look @d's up */
		qsort(rows, known, sizeof(*rows), key_cmp);
		for (size_t i = 0; i < d->nr_rows[k]; i++) {
			const struct shmem_row_entry *e = &d->rows[k][i];
			struct shmem_row_entry *r = bsearch(e, rows, known,
							    sizeof(*rows), key_cmp);
			struct shmem_row_entry was;

			if (!r) {
				rows[sum->nr_rows[k]++] = *e;
				continue;
			}
			was = *r;
			*r = *e;
			add_u64s(r->row.allocs, was.row.allocs, ROW_COUNTERS);
		}
	}
	ADD_FIELD(totals);
	ADD_FIELD(hists);
	ADD_FIELD(dropped);
	for (size_t i = 0; i < d->nr_mthp; i++) {
		size_t j = 0;

		while (j < sum->nr_mthp && sum->mthp[j].kb != d->mthp[i].kb)
			j++;
		/* a size not seen yet (the first interval's: the kernel's are fixed) */
		if (j == sum->nr_mthp) {
			if (j < SHMEM_NR_ORDERS)
				sum->mthp[sum->nr_mthp++] = d->mthp[i];
			continue;
		}
		add_u64s(&sum->mthp[j].alloc, &d->mthp[i].alloc,
			 (sizeof(d->mthp[i]) - offsetof(struct shmem_mthp, alloc)) /
			 sizeof(__u64));
	}
	/* the first interval's may count since boot: then the sum does too */
	sum->mthp_since_boot |= d->mthp_since_boot;
	sum->time = d->time;
	sum->info = d->info;
	memcpy(sum->capacity, d->capacity, sizeof(sum->capacity));
	memcpy(sum->meminfo, d->meminfo, sizeof(sum->meminfo));
	sum->nr_meminfo = d->nr_meminfo;
	sum->partial_now = d->partial_now;
	sum->mounts = d->mounts;
	return 0;
}

static __u64 sum_orders(const __u64 *by_order)
{
	__u64 n = 0;

	for (int o = 0; o < SHMEM_NR_ORDERS; o++)
		n += by_order[o];
	return n;
}

__u64 shmem_row_allocs(const struct shmem_row *row)
{
	return sum_orders(row->allocs);
}

__u64 shmem_row_ramped(const struct shmem_row *row)
{
	return sum_orders(row->ramp_allocs);
}

__u64 shmem_row_large(const struct shmem_row *row)
{
	return shmem_row_allocs(row) - row->allocs[0];
}

__u64 shmem_order_allocs(const struct shmem_snapshot *s, unsigned int order)
{
	__u64 n = 0;

	for (int p = 0; order < SHMEM_NR_ORDERS && p < SHMEM_STAT_NR_PATHS; p++)
		n += s->totals.allocs[order][p];
	return n;
}

__u64 shmem_path_allocs(const struct shmem_snapshot *s, unsigned int path)
{
	__u64 n = 0;

	for (int o = 0; path < SHMEM_STAT_NR_PATHS && o < SHMEM_NR_ORDERS; o++)
		n += s->totals.allocs[o][path];
	return n;
}

const char *shmem_fallocate_note(const struct shmem_snapshot *s)
{
	__u64 all = 0;

	for (unsigned int o = 0; o < SHMEM_NR_ORDERS; o++)
		all += shmem_order_allocs(s, o);
	if (2 * shmem_path_allocs(s, SHMEM_STAT_PATH_FALLOC) <= all)
		return NULL;
	return "note: most folios came from fallocate(2), sized before any write "
	       "(fio fallocates its files first unless --fallocate=none)";
}

double shmem_row_latency(const struct shmem_row *row)
{
	return row->alloc_calls ? (double)row->alloc_ns / row->alloc_calls : 0;
}

static __u64 row_sort_value(const struct shmem_row_entry *e, enum shmem_sort sort)
{
	const struct shmem_row *row = &e->row;

	switch (sort) {
	case SHMEM_SORT_LARGE:
		return shmem_row_large(row);
	case SHMEM_SORT_FALLBACKS:
		return row->fallbacks;
	case SHMEM_SORT_SPLITS:
		return row->splits;
	case SHMEM_SORT_PARTIAL:
		return e->partial_now;
	case SHMEM_SORT_LATENCY:
		return shmem_row_latency(row);
	case SHMEM_SORT_RAMP:
		return shmem_row_ramped(row);
	default:
		return shmem_row_allocs(row);
	}
}

static enum shmem_sort sort_key;

static int row_cmp(const void *a, const void *b)
{
	const struct shmem_row_entry *x = a, *y = b;
	__u64 vx, vy;
	int byname = strcmp(x->name, y->name);

	if (sort_key == SHMEM_SORT_NAME)
		return byname ? byname : key_cmp(x, y);
	vx = row_sort_value(x, sort_key);
	vy = row_sort_value(y, sort_key);
	if (vx != vy)
		return vx < vy ? 1 : -1;
	/* ties: most allocations, then name, so the order is stable */
	vx = shmem_row_allocs(&x->row);
	vy = shmem_row_allocs(&y->row);
	if (vx != vy)
		return vx < vy ? 1 : -1;
	return byname ? byname : key_cmp(x, y);
}

void shmem_rows_sort(struct shmem_snapshot *s, enum shmem_row_kind kind,
		     enum shmem_sort sort)
{
	sort_key = sort;
	qsort(s->rows[kind], s->nr_rows[kind], sizeof(*s->rows[kind]),
	      row_cmp);
}

bool shmem_row_active(const struct shmem_row *row)
{
	return shmem_row_allocs(row) || row->fallbacks || row->splits ||
	       row->became_partial || row->became_full || row->zeroed;
}
