// SPDX-License-Identifier: GPL-2.0
/* A snapshot (or the difference of two) as one JSON object. */
#include <string.h>
#include <time.h>
#include "shmem_tools.h"

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

/*
 * The mount of a file or file system row: its mount point, or the
 * internal shm mount named as such; null where mountinfo has neither.
 * mount_options where mountinfo has them.
 */
static void mount_json(json_object *o, const struct shmem_mounts *m, __u32 dev)
{
	const struct shmem_mount *found = shmem_mount_find(m, dev);
	const char *name = shmem_mount_name(m, dev);

	if (!m)
		return;
	json_object_object_add(o, "mount",
			       *name ? json_object_new_string(name) : NULL);
	if (found && *found->options)
		json_object_object_add(o, "mount_options",
				       json_object_new_string(found->options));
}

static json_object *row_json(enum shmem_row_kind kind,
			     const struct shmem_row_entry *e, __u32 signals,
			     const struct shmem_mounts *mounts)
{
	json_object *o = json_object_new_object();
	char dev[24];

	switch (kind) {
	case SHMEM_ROWS_FILES:
		shmem_dev_name(e->dev, dev, sizeof(dev));
		json_object_object_add(o, "dev", json_object_new_string(dev));
		json_object_object_add(o, "ino", json_object_new_uint64(e->id));
		mount_json(o, mounts, e->dev);
		break;
	case SHMEM_ROWS_PROCS:
		json_object_object_add(o, "pid", json_object_new_uint64(e->id));
		/* a reused PID is another row: its start tells them apart */
		json_object_object_add(o, "start_ns",
				       json_object_new_uint64(e->start_ns));
		break;
	case SHMEM_ROWS_CGROUPS:
		json_object_object_add(o, "cgroup_id",
				       json_object_new_uint64(e->id));
		break;
	default:
		shmem_dev_name(e->dev, dev, sizeof(dev));
		json_object_object_add(o, "dev", json_object_new_string(dev));
		mount_json(o, mounts, e->dev);
	}
	json_object_object_add(o, "name", json_object_new_string(e->name));
	json_object_object_add(o, "allocs", orders_json(e->row.allocs));
	json_object_object_add(o, "fallbacks",
			       json_object_new_uint64(e->row.fallbacks));
	/* what this kernel cannot observe is left out, not reported as 0 */
	if (signals & SHMEM_SIG_RAMP) {
		json_object_object_add(o, "ramp_allocs",
				       orders_json(e->row.ramp_allocs));
		json_object_object_add(o, "ramp_fallbacks",
				       json_object_new_uint64(e->row.ramp_fallbacks));
	}
	if (signals & SHMEM_SIG_SPLITS)
		json_object_object_add(o, "splits",
				       json_object_new_uint64(e->row.splits));
	if (signals & SHMEM_SIG_BLOCKS) {
		json_object_object_add(o, "became_partial",
				       json_object_new_uint64(e->row.became_partial));
		json_object_object_add(o, "became_full",
				       json_object_new_uint64(e->row.became_full));
		json_object_object_add(o, "partial_now",
				       json_object_new_uint64(e->partial_now));
	}
	if (signals & SHMEM_SIG_ZERO)
		json_object_object_add(o, "zeroed_bytes",
				       json_object_new_uint64(e->row.zeroed));
	/* null: traced, but no allocation of the row's was timed */
	if (signals & SHMEM_SIG_LAT_ALLOC)
		json_object_object_add(o, "alloc_avg_ns", e->row.alloc_calls ?
			json_object_new_uint64(shmem_row_latency(&e->row)) : NULL);
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
	json_object_object_add(o, "count",
			       json_object_new_uint64(shmem_hist_count(h)));
	json_object_object_add(o, "sum_ns", json_object_new_uint64(h->sum));
	/* the last slot counts everything above 2^SHMEM_HIST_TOP ns */
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

/* [{"size": "2M", "order": 9, "reason": "charge", "count": 1}, ...] */
static json_object *fallbacks_json(const __u64 (*counts)[SHMEM_STAT_NR_FALLBACKS])
{
	json_object *list = json_object_new_array();

	for (unsigned int order = 0; order < SHMEM_NR_ORDERS; order++) {
		for (unsigned int r = 0; r < SHMEM_STAT_NR_FALLBACKS; r++) {
			json_object *f;

			if (!counts[order][r])
				continue;
			f = order_reason_json(order, shmem_fallback_name(r));
			json_object_object_add(f, "count",
					       json_object_new_uint64(counts[order][r]));
			json_object_array_add(list, f);
		}
	}
	return list;
}

/* Rows of @kind with anything counted in @s's interval */
static size_t active_rows(const struct shmem_snapshot *s, int kind)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nr_rows[kind]; i++)
		n += shmem_row_active(&s->rows[kind][i].row);
	return n;
}

/*
 * {"files": {"present": 12, "capacity": 10240, "dropped": 0,
 * "left_out": 2}, ...}: left_out, the active rows beyond @max_rows, only
 * where the rows are listed
 */
static json_object *rows_json(const struct shmem_snapshot *s, size_t max_rows)
{
	json_object *o = json_object_new_object();

	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++) {
		json_object *r;

		if (!(s->info.rows & (1U << k)))
			continue;
		r = json_object_new_object();
		json_object_object_add(r, "present",
				       json_object_new_uint64(s->nr_rows[k]));
		json_object_object_add(r, "capacity",
				       json_object_new_uint64(s->capacity[k]));
		json_object_object_add(r, "dropped",
				       json_object_new_uint64(s->dropped[k]));
		if (max_rows) {
			size_t active = active_rows(s, k);

			json_object_object_add(r, "left_out", json_object_new_uint64(
				active > max_rows ? active - max_rows : 0));
		}
		json_object_object_add(o, shmem_row_kind_name(k), r);
	}
	return o;
}

json_object *shmem_snapshot_json(const struct shmem_snapshot *s, double secs,
				 size_t max_rows)
{
	json_object *root = json_object_new_object();
	json_object *orders = json_object_new_object();
	json_object *paths = json_object_new_object();
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
	json_object_object_add(root, "not_traced",
			       shmem_not_traced_json(&s->info));

	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++) {
		json_object *rows;

		if (!max_rows || !(s->info.rows & (1U << k)))
			continue;
		rows = json_object_new_array();
		size_t shown = 0;

		for (size_t i = 0; i < s->nr_rows[k] && shown < max_rows; i++) {
			if (!shmem_row_active(&s->rows[k][i].row))
				continue;
			json_object_array_add(rows, row_json(k, &s->rows[k][i],
							     s->info.signals,
							     s->mounts));
			shown++;
		}
		json_object_object_add(root, shmem_row_kind_name(k), rows);
	}
	json_object_object_add(root, "rows", rows_json(s, max_rows));

	for (unsigned int order = 0; order < SHMEM_NR_ORDERS; order++) {
		__u64 n = shmem_order_allocs(s, order);

		if (!n)
			continue;
		shmem_order_size(order, size, sizeof(size));
		json_object_object_add(orders, size, json_object_new_uint64(n));
	}
	json_object_object_add(root, "orders", orders);

	for (unsigned int p = 0; p < SHMEM_STAT_NR_PATHS; p++) {
		__u64 by_order[SHMEM_NR_ORDERS];

		if (!shmem_path_allocs(s, p))
			continue;
		for (int o = 0; o < SHMEM_NR_ORDERS; o++)
			by_order[o] = s->totals.allocs[o][p];
		json_object_object_add(paths, shmem_path_name(p),
				       orders_json(by_order));
	}
	json_object_object_add(root, "paths", paths);
	/* the text reports' fallocate note, as a flag */
	json_object_object_add(root, "mostly_fallocated",
			       json_object_new_boolean(shmem_fallocate_note(s) != NULL));
	/* of those, what the append ramp chose: left out where not observed */
	if (s->info.signals & SHMEM_SIG_RAMP)
		json_object_object_add(root, "ramp_orders",
				       orders_json(s->totals.ramp_allocs));

	for (unsigned int order = 0; order < SHMEM_NR_ORDERS; order++) {
		for (unsigned int r = 0; r < SHMEM_STAT_NR_SPLITS; r++) {
			const struct shmem_split_count *c = &s->totals.splits[order][r];
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
	json_object_object_add(root, "fallbacks",
			       fallbacks_json(s->totals.fallbacks));
	if (s->info.signals & SHMEM_SIG_RAMP)
		json_object_object_add(root, "ramp_fallbacks",
				       fallbacks_json(s->totals.ramp_fallbacks));
	/* [] would say none happened where none can be seen */
	if (s->info.signals & SHMEM_SIG_SPLITS)
		json_object_object_add(root, "splits", splits);
	else
		json_object_put(splits);

	/* what this kernel cannot observe is left out, not reported as 0 */
	if (s->info.signals & SHMEM_SIG_BLOCKS) {
		json_object_object_add(blocks, "uptodate_events",
				       json_object_new_uint64(s->totals.blocks.uptodate_events));
		json_object_object_add(blocks, "uptodate_blocks",
				       json_object_new_uint64(s->totals.blocks.uptodate_blocks));
		json_object_object_add(blocks, "clear_events",
				       json_object_new_uint64(s->totals.blocks.clear_events));
		json_object_object_add(blocks, "clear_blocks",
				       json_object_new_uint64(s->totals.blocks.clear_blocks));
		json_object_object_add(blocks, "became_partial",
				       json_object_new_uint64(s->totals.blocks.became_partial));
		json_object_object_add(blocks, "became_full",
				       json_object_new_uint64(s->totals.blocks.became_full));
		json_object_object_add(blocks, "partial_now",
				       json_object_new_uint64(s->partial_now));
	}
	if (s->info.signals & SHMEM_SIG_ZERO) {
		for (unsigned int z = 0; z < SHMEM_STAT_NR_ZEROS; z++)
			json_object_object_add(zeroed, shmem_zero_name(z),
					       json_object_new_uint64(s->totals.blocks.zeroed[z]));
		json_object_object_add(blocks, "zeroed_bytes", zeroed);
	} else {
		json_object_put(zeroed);
	}
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
		shmem_size_name(m->kb, name, sizeof(name));
		json_object_object_add(mthp, name, o);
	}
	json_object_object_add(root, "mthp", mthp);
	json_object_object_add(root, "mthp_since_boot",
			       json_object_new_boolean(s->mthp_since_boot));
	return root;
}


void shmem_print_json(const struct shmem_snapshot *s, double secs,
		      size_t max_rows)
{
	json_object *o = shmem_snapshot_json(s, secs, max_rows);

	json_object_object_add(o, "time", json_object_new_int64(time(NULL)));
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	fflush(stdout);
	json_object_put(o);
}
