// SPDX-License-Identifier: GPL-2.0
/* Snapshots of the maps: reading, subtracting, sorting, formatting. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include "shmemstat.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const path_names[] = {
	"write", "fallocate", "fault", "read", "swapin", "collapse", "other",
};
static const char *const fallback_names[] = {
	"alloc", "charge", "raced", "nospc", "unsuitable", "error",
};
static const char *const split_names[] = { "shrink", "truncate", "swapout" };
static const char *const zero_names[] = { "unwritten", "partial", "nomem" };
static const char *const hist_names[] = {
	"alloc", "write", "fault", "fallocate", "uptodate",
};
static const char *const row_kind_names[] = { "files", "procs", "cgroups" };
static const char *const sort_names[] = {
	"allocs", "large", "fallbacks", "splits", "partial", "latency", "name",
};

static const char *const signal_labels[SHMEM_NR_SIGNALS] = {
	"allocs", "paths", "fallbacks", "fallback_reasons", "blocks", "zeroed",
	"splits", "alloc_latency", "write_latency", "fault_latency",
	"fallocate_latency",
};

/* What each signal is, for the line that says which ones are missing. */
static const char *const signal_names[SHMEM_NR_SIGNALS] = {
	"allocations", "exact allocation paths", "fallbacks",
	"fallback reasons", "block-uptodate transitions", "bytes zeroed",
	"splits", "allocation latency", "write latency", "fault latency",
	"fallocate latency",
};

#define NAME_OF(table, i) ((i) < ARRAY_SIZE(table) ? (table)[i] : "?")

const char *shmem_path_name(unsigned int i) { return NAME_OF(path_names, i); }
const char *shmem_fallback_name(unsigned int i) { return NAME_OF(fallback_names, i); }
const char *shmem_split_name(unsigned int i) { return NAME_OF(split_names, i); }
const char *shmem_zero_name(unsigned int i) { return NAME_OF(zero_names, i); }
const char *shmem_hist_name(unsigned int i) { return NAME_OF(hist_names, i); }
const char *shmem_row_kind_name(enum shmem_row_kind k) { return NAME_OF(row_kind_names, k); }
const char *shmem_sort_name(enum shmem_sort s) { return NAME_OF(sort_names, s); }
const char *shmem_signal_name(unsigned int i) { return NAME_OF(signal_labels, i); }

int shmem_sort_parse(const char *name, enum shmem_sort *sort)
{
	for (unsigned int i = 0; i < SHMEM_NR_SORTS; i++) {
		if (!strcmp(name, sort_names[i])) {
			*sort = i;
			return 0;
		}
	}
	return -1;
}

void shmem_order_size(unsigned int order, char *buf, size_t len)
{
	unsigned long kb = 4UL << order;

	if (kb >= 1024)
		snprintf(buf, len, "%luM", kb / 1024);
	else
		snprintf(buf, len, "%luK", kb);
}

void shmem_dev_name(__u32 dev, char *buf, size_t len)
{
	snprintf(buf, len, "%u:%u", dev >> 20, dev & ((1U << 20) - 1));
}

void shmem_missing_signals(const struct shmem_info *info, char *buf, size_t len)
{
	__u32 signals = info->signals | info->disabled;
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < SHMEM_NR_SIGNALS && used < len; i++) {
		if (signals & (1U << i))
			continue;
		used += snprintf(buf + used, len - used, "%s%s",
				 used ? ", " : "", signal_names[i]);
	}
}

json_object *shmem_missing_json(const struct shmem_info *info)
{
	__u32 signals = info->signals | info->disabled;
	json_object *list = json_object_new_array();

	for (unsigned int i = 0; i < SHMEM_NR_SIGNALS; i++)
		if (!(signals & (1U << i)))
			json_object_array_add(list,
				json_object_new_string(signal_names[i]));
	return list;
}

int shmem_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Calls @fn for every key of a hash map, with the value read into @value. */
static int map_for_each(int fd, void *key, void *next, size_t key_size,
			void *value, int (*fn)(const void *key,
					       const void *value, void *arg),
			void *arg)
{
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, key_size);
		prev = key;
		if (bpf_map_lookup_elem(fd, key, value))
			continue;	/* deleted meanwhile */
		if (fn(key, value, arg))
			return -1;
	}
	return errno == ENOENT ? 0 : -1;
}

static int add_alloc(const void *key, const void *value, void *arg)
{
	struct shmem_snapshot *s = arg;
	struct shmem_alloc_entry *grown;

	grown = realloc(s->allocs, (s->nr_allocs + 1) * sizeof(*grown));
	if (!grown)
		return -1;
	s->allocs = grown;
	grown[s->nr_allocs].key = *(const struct shmem_alloc_key *)key;
	grown[s->nr_allocs].count = *(const __u64 *)value;
	s->nr_allocs++;
	return 0;
}

struct rows_arg {
	struct shmem_snapshot *s;
	enum shmem_row_kind kind;
};

static int add_row(const void *key, const void *value, void *arg)
{
	struct rows_arg *ra = arg;
	struct shmem_snapshot *s = ra->s;
	size_t n = s->nr_rows[ra->kind];
	struct shmem_row_entry *grown, *e;

	grown = realloc(s->rows[ra->kind], (n + 1) * sizeof(*grown));
	if (!grown)
		return -1;
	s->rows[ra->kind] = grown;
	e = &grown[n];
	memset(e, 0, sizeof(*e));
	switch (ra->kind) {
	case SHMEM_ROWS_FILES: {
		const struct shmem_file_key *fk = key;

		e->id = fk->ino;
		e->dev = fk->dev;
		break;
	}
	case SHMEM_ROWS_PROCS:
		e->id = *(const __u32 *)key;
		break;
	default:
		e->id = *(const __u64 *)key;
	}
	e->row = *(const struct shmem_row *)value;
	e->row.name[SHMEM_NAME_LEN - 1] = '\0';
	s->nr_rows[ra->kind] = n + 1;
	return 0;
}

static int add_fallback(const void *key, const void *value, void *arg)
{
	const struct shmem_fallback_key *k = key;
	struct shmem_snapshot *s = arg;

	if (k->order < SHMEM_NR_ORDERS && k->reason < SHMEM_STAT_NR_FALLBACKS)
		s->fallbacks[k->order][k->reason] = *(const __u64 *)value;
	return 0;
}

static int add_split(const void *key, const void *value, void *arg)
{
	const struct shmem_split_key *k = key;
	struct shmem_snapshot *s = arg;

	if (k->order < SHMEM_NR_ORDERS && k->reason < SHMEM_STAT_NR_SPLITS)
		s->splits[k->order][k->reason] =
			*(const struct shmem_split_count *)value;
	return 0;
}

int shmem_info_read(const struct shmem_maps *maps, struct shmem_info *info)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(maps->info, &zero, info))
		return -1;
	/*
	 * Another loader (bpftool prog loadall ... autoattach) leaves the info
	 * map empty; the object's defaults attach every program, which loads
	 * only on a kernel with our events.
	 */
	if (!info->signals) {
		info->signals = (1U << SHMEM_NR_SIGNALS) - 1;
		info->tracepoints = 1;
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

int shmem_snapshot_read(const struct shmem_maps *maps, const char *mthp_dir,
			struct shmem_snapshot *s)
{
	union {
		struct shmem_alloc_key alloc;
		struct shmem_file_key file;
		__u64 id;
		struct shmem_fallback_key fallback;
		struct shmem_split_key split;
	} key, next;
	union {
		__u64 count;
		struct shmem_row row;
		struct shmem_split_count split;
	} value;
	const int row_fds[] = { maps->files, maps->procs, maps->cgroups };
	const size_t row_key_sizes[] = {
		sizeof(struct shmem_file_key), sizeof(__u32), sizeof(__u64),
	};
	__u32 zero = 0;

	memset(s, 0, sizeof(*s));
	s->time = shmem_now();
	if (shmem_info_read(maps, &s->info))
		goto fail;
	if (map_for_each(maps->allocs, &key, &next, sizeof(key.alloc), &value,
			 add_alloc, s))
		goto fail;
	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++) {
		struct rows_arg ra = { s, k };

		if (map_for_each(row_fds[k], &key, &next, row_key_sizes[k],
				 &value, add_row, &ra))
			goto fail;
	}
	if (map_for_each(maps->fallbacks, &key, &next, sizeof(key.fallback),
			 &value, add_fallback, s) ||
	    map_for_each(maps->splits, &key, &next, sizeof(key.split), &value,
			 add_split, s) ||
	    bpf_map_lookup_elem(maps->blocks, &zero, &s->blocks))
		goto fail;
	for (__u32 h = 0; h < SHMEM_NR_HISTS; h++)
		if (bpf_map_lookup_elem(maps->hists, &h, &s->hists[h]))
			goto fail;
	shmem_mthp_read(mthp_dir, s);
	shmem_meminfo_read("/proc/meminfo", s);
	return 0;
fail:
	shmem_snapshot_free(s);
	return -1;
}

void shmem_snapshot_free(struct shmem_snapshot *s)
{
	free(s->allocs);
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

/* Subtract a field made only of __u64 counters. */
#define SUB_FIELD(field) \
	sub_u64s((__u64 *)&out->field, (const __u64 *)&now->field, \
		 (const __u64 *)&prev->field, sizeof(out->field) / (sizeof(__u64)))

static const struct shmem_row *find_row(const struct shmem_snapshot *s,
					enum shmem_row_kind kind,
					const struct shmem_row_entry *e)
{
	for (size_t i = 0; i < s->nr_rows[kind]; i++) {
		const struct shmem_row_entry *p = &s->rows[kind][i];

		if (p->id == e->id && p->dev == e->dev)
			return &p->row;
	}
	return NULL;
}

static const __u64 *find_alloc(const struct shmem_snapshot *s,
			       const struct shmem_alloc_key *key)
{
	for (size_t i = 0; i < s->nr_allocs; i++)
		if (!memcmp(&s->allocs[i].key, key, sizeof(*key)))
			return &s->allocs[i].count;
	return NULL;
}

int shmem_snapshot_delta(const struct shmem_snapshot *now,
			 const struct shmem_snapshot *prev,
			 struct shmem_snapshot *out)
{
	static const struct shmem_row zero_row;

	*out = *now;
	out->allocs = calloc(now->nr_allocs + 1, sizeof(*out->allocs));
	if (!out->allocs)
		goto fail_allocs;
	for (size_t i = 0; i < now->nr_allocs; i++) {
		const __u64 *was = find_alloc(prev, &now->allocs[i].key);

		out->allocs[i] = now->allocs[i];
		out->allocs[i].count -= was ? *was : 0;
	}
	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++) {
		out->rows[k] = calloc(now->nr_rows[k] + 1, sizeof(*out->rows[k]));
		if (!out->rows[k])
			goto fail_rows;
		for (size_t i = 0; i < now->nr_rows[k]; i++) {
			const struct shmem_row_entry *e = &now->rows[k][i];
			const struct shmem_row *was = find_row(prev, k, e);
			struct shmem_row_entry *d = &out->rows[k][i];

			*d = *e;
			if (!was)
				was = &zero_row;
			sub_u64s(d->row.allocs, e->row.allocs, was->allocs,
				 (sizeof(e->row) - offsetof(struct shmem_row, allocs)) /
				 sizeof(__u64));
		}
	}
	SUB_FIELD(fallbacks);
	SUB_FIELD(splits);
	SUB_FIELD(blocks);
	SUB_FIELD(hists);
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
fail_rows:
	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++)
		free(out->rows[k]);
	free(out->allocs);
fail_allocs:
	memset(out, 0, sizeof(*out));
	return -1;
}

__u64 shmem_row_allocs(const struct shmem_row *row)
{
	__u64 n = 0;

	for (int o = 0; o < SHMEM_NR_ORDERS; o++)
		n += row->allocs[o];
	return n;
}

__u64 shmem_row_large(const struct shmem_row *row)
{
	return shmem_row_allocs(row) - row->allocs[0];
}

__u64 shmem_order_allocs(const struct shmem_snapshot *s, unsigned int order)
{
	__u64 n = 0;

	for (size_t i = 0; i < s->nr_allocs; i++)
		if (s->allocs[i].key.order == order)
			n += s->allocs[i].count;
	return n;
}

static double row_latency(const struct shmem_row *row)
{
	return row->alloc_calls ? (double)row->alloc_ns / row->alloc_calls : 0;
}

static __u64 row_sort_value(const struct shmem_row *row, enum shmem_sort sort)
{
	switch (sort) {
	case SHMEM_SORT_LARGE:
		return shmem_row_large(row);
	case SHMEM_SORT_FALLBACKS:
		return row->fallbacks;
	case SHMEM_SORT_SPLITS:
		return row->splits;
	case SHMEM_SORT_PARTIAL:
		return row->partial;
	case SHMEM_SORT_LATENCY:
		return row_latency(row);
	default:
		return shmem_row_allocs(row);
	}
}

static enum shmem_sort sort_key;

static int row_cmp(const void *a, const void *b)
{
	const struct shmem_row_entry *x = a, *y = b;
	__u64 vx, vy;
	int byname = strcmp(x->row.name, y->row.name);

	if (sort_key == SHMEM_SORT_NAME)
		return byname ? byname : (x->id > y->id) - (x->id < y->id);
	vx = row_sort_value(&x->row, sort_key);
	vy = row_sort_value(&y->row, sort_key);
	if (vx != vy)
		return vx < vy ? 1 : -1;
	/* ties: most allocations, then name, so the order is stable */
	vx = shmem_row_allocs(&x->row);
	vy = shmem_row_allocs(&y->row);
	if (vx != vy)
		return vx < vy ? 1 : -1;
	return byname ? byname : (x->id > y->id) - (x->id < y->id);
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
	       row->partial || row->zeroed;
}

static json_object *orders_json(const __u64 *allocs)
{
	json_object *o = json_object_new_object();
	char size[16];

	for (int order = 0; order < SHMEM_NR_ORDERS; order++) {
		if (!allocs[order])
			continue;
		shmem_order_size(order, size, sizeof(size));
		json_object_object_add(o, size,
				       json_object_new_uint64(allocs[order]));
	}
	return o;
}

static json_object *row_json(enum shmem_row_kind kind,
			     const struct shmem_row_entry *e)
{
	json_object *o = json_object_new_object();
	char dev[24];

	switch (kind) {
	case SHMEM_ROWS_FILES:
		shmem_dev_name(e->dev, dev, sizeof(dev));
		json_object_object_add(o, "dev", json_object_new_string(dev));
		json_object_object_add(o, "ino", json_object_new_uint64(e->id));
		break;
	case SHMEM_ROWS_PROCS:
		json_object_object_add(o, "pid", json_object_new_uint64(e->id));
		break;
	default:
		json_object_object_add(o, "cgroup_id",
				       json_object_new_uint64(e->id));
	}
	json_object_object_add(o, "name", json_object_new_string(e->row.name));
	json_object_object_add(o, "allocs", orders_json(e->row.allocs));
	json_object_object_add(o, "fallbacks",
			       json_object_new_uint64(e->row.fallbacks));
	json_object_object_add(o, "splits", json_object_new_uint64(e->row.splits));
	json_object_object_add(o, "partial",
			       json_object_new_uint64(e->row.partial));
	json_object_object_add(o, "zeroed_bytes",
			       json_object_new_uint64(e->row.zeroed));
	json_object_object_add(o, "alloc_avg_ns",
			       json_object_new_uint64(row_latency(&e->row)));
	return o;
}

static json_object *hist_json(const struct shmem_hist *h)
{
	json_object *o = json_object_new_object();
	json_object *slots = json_object_new_array();
	int last = -1;

	for (int i = 0; i < SHMEM_HIST_SLOTS; i++)
		if (h->slots[i])
			last = i;
	for (int i = 0; i <= last; i++)
		json_object_array_add(slots, json_object_new_uint64(h->slots[i]));
	json_object_object_add(o, "count", json_object_new_uint64(h->count));
	json_object_object_add(o, "sum_ns", json_object_new_uint64(h->sum));
	json_object_object_add(o, "log2_ns_slots", slots);
	return o;
}

/* {"size": "2M", "order": 9, "reason": ...}: a fallback or split entry */
static json_object *order_reason_json(unsigned int order, const char *reason)
{
	json_object *o = json_object_new_object();
	char size[16];

	shmem_order_size(order, size, sizeof(size));
	json_object_object_add(o, "size", json_object_new_string(size));
	json_object_object_add(o, "order", json_object_new_int(order));
	json_object_object_add(o, "reason", json_object_new_string(reason));
	return o;
}

json_object *shmem_snapshot_json(const struct shmem_snapshot *s, double secs,
				 size_t max_rows)
{
	json_object *root = json_object_new_object();
	json_object *orders = json_object_new_object();
	json_object *paths = json_object_new_object();
	json_object *fallbacks = json_object_new_array();
	json_object *splits = json_object_new_array();
	json_object *blocks = json_object_new_object();
	json_object *zeroed = json_object_new_object();
	json_object *latency = json_object_new_object();
	json_object *mthp = json_object_new_object();
	char size[16];

	json_object_object_add(root, "interval_s", json_object_new_double(secs));
	json_object_object_add(root, "mode", json_object_new_string(
		s->info.tracepoints ? "tracepoints" : "fallback"));
	json_object_object_add(root, "missing",
			       shmem_missing_json(&s->info));

	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++) {
		json_object *rows = json_object_new_array();
		size_t shown = 0;

		for (size_t i = 0; i < s->nr_rows[k] && shown < max_rows; i++) {
			if (!shmem_row_active(&s->rows[k][i].row))
				continue;
			json_object_array_add(rows, row_json(k, &s->rows[k][i]));
			shown++;
		}
		json_object_object_add(root, shmem_row_kind_name(k), rows);
	}

	for (unsigned int order = 0; order < SHMEM_NR_ORDERS; order++) {
		__u64 n = shmem_order_allocs(s, order);

		if (!n)
			continue;
		shmem_order_size(order, size, sizeof(size));
		json_object_object_add(orders, size, json_object_new_uint64(n));
	}
	json_object_object_add(root, "orders", orders);

	for (unsigned int p = 0; p < SHMEM_STAT_NR_PATHS; p++) {
		__u64 by_order[SHMEM_NR_ORDERS] = {};
		bool any = false;

		for (size_t i = 0; i < s->nr_allocs; i++) {
			const struct shmem_alloc_entry *a = &s->allocs[i];

			if (a->key.path != p || !a->count ||
			    a->key.order >= SHMEM_NR_ORDERS)
				continue;
			by_order[a->key.order] += a->count;
			any = true;
		}
		if (any)
			json_object_object_add(paths, shmem_path_name(p),
					       orders_json(by_order));
	}
	json_object_object_add(root, "paths", paths);

	for (unsigned int order = 0; order < SHMEM_NR_ORDERS; order++) {
		for (unsigned int r = 0; r < SHMEM_STAT_NR_FALLBACKS; r++) {
			json_object *f;

			if (!s->fallbacks[order][r])
				continue;
			f = order_reason_json(order, shmem_fallback_name(r));
			json_object_object_add(f, "count", json_object_new_uint64(
				s->fallbacks[order][r]));
			json_object_array_add(fallbacks, f);
		}
		for (unsigned int r = 0; r < SHMEM_STAT_NR_SPLITS; r++) {
			const struct shmem_split_count *c = &s->splits[order][r];
			json_object *f;

			if (!c->done && !c->failed)
				continue;
			f = order_reason_json(order, shmem_split_name(r));
			json_object_object_add(f, "done", json_object_new_uint64(c->done));
			json_object_object_add(f, "failed",
					       json_object_new_uint64(c->failed));
			json_object_array_add(splits, f);
		}
	}
	json_object_object_add(root, "fallbacks", fallbacks);
	json_object_object_add(root, "splits", splits);

	json_object_object_add(blocks, "uptodate_events",
			       json_object_new_uint64(s->blocks.uptodate_events));
	json_object_object_add(blocks, "uptodate_blocks",
			       json_object_new_uint64(s->blocks.uptodate_blocks));
	json_object_object_add(blocks, "clear_events",
			       json_object_new_uint64(s->blocks.clear_events));
	json_object_object_add(blocks, "clear_blocks",
			       json_object_new_uint64(s->blocks.clear_blocks));
	json_object_object_add(blocks, "became_partial",
			       json_object_new_uint64(s->blocks.became_partial));
	json_object_object_add(blocks, "became_full",
			       json_object_new_uint64(s->blocks.became_full));
	for (unsigned int z = 0; z < SHMEM_STAT_NR_ZEROS; z++)
		json_object_object_add(zeroed, shmem_zero_name(z),
				       json_object_new_uint64(s->blocks.zeroed[z]));
	json_object_object_add(blocks, "zeroed_bytes", zeroed);
	json_object_object_add(root, "blocks", blocks);

	for (unsigned int h = 0; h < SHMEM_NR_HISTS; h++)
		json_object_object_add(latency, shmem_hist_name(h),
				       hist_json(&s->hists[h]));
	json_object_object_add(root, "latency", latency);

	for (size_t i = 0; i < s->nr_mthp; i++) {
		const struct shmem_mthp *m = &s->mthp[i];
		json_object *o = json_object_new_object();
		char name[24];

		json_object_object_add(o, "shmem_alloc", json_object_new_uint64(m->alloc));
		json_object_object_add(o, "shmem_fallback",
				       json_object_new_uint64(m->fallback));
		json_object_object_add(o, "shmem_fallback_charge",
				       json_object_new_uint64(m->fallback_charge));
		json_object_object_add(o, "split", json_object_new_uint64(m->split));
		json_object_object_add(o, "split_failed",
				       json_object_new_uint64(m->split_failed));
		snprintf(name, sizeof(name), "%ukB", m->kb);
		json_object_object_add(mthp, name, o);
	}
	json_object_object_add(root, "mthp", mthp);
	return root;
}

/* Fold nanosecond slots into millisecond slots by their upper bounds. */
static void hist_to_ms(const struct shmem_hist *ns, struct shmem_hist *ms)
{
	memset(ms, 0, sizeof(*ms));
	for (int i = 0; i < SHMEM_HIST_SLOTS; i++) {
		unsigned long long hi = ((1ULL << i) + 999999) / 1000000;
		int j = 0;

		while (j < SHMEM_HIST_SLOTS - 1 && (1ULL << j) < hi)
			j++;
		ms->slots[j] += ns->slots[i];
	}
	ms->count = ns->count;
	ms->sum = ns->sum / 1000000;
}

void shmem_print_log2(FILE *out, const struct shmem_hist *ns, bool ms)
{
	const int width = 40;
	struct shmem_hist folded;
	const struct shmem_hist *h = ns;
	__u64 max = 0;
	int first = -1, last = -1;

	if (ms) {
		hist_to_ms(ns, &folded);
		h = &folded;
	}
	for (int i = 0; i < SHMEM_HIST_SLOTS; i++) {
		if (h->slots[i]) {
			if (first < 0)
				first = i;
			last = i;
			if (h->slots[i] > max)
				max = h->slots[i];
		}
	}
	if (last < 0) {
		fprintf(out, "     (no events)\n");
		return;
	}
	fprintf(out, "%24s : %-10s %s\n", ms ? "msecs" : "nsecs", "count",
		"distribution");
	for (int i = first; i <= last; i++) {
		unsigned long long lo = i ? (1ULL << (i - 1)) + 1 : 0;
		int bar = (int)(h->slots[i] * width / max);
		char range[48];

		snprintf(range, sizeof(range), "%llu -> %llu", lo, 1ULL << i);
		fprintf(out, "%24s : %-10llu |%-*.*s|\n", range,
			(unsigned long long)h->slots[i], width, bar,
			"****************************************");
	}
	fprintf(out, "%24s   count %llu, average %.0f ns\n", "",
		(unsigned long long)ns->count,
		ns->count ? (double)ns->sum / ns->count : 0.0);
}
