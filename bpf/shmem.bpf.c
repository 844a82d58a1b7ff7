// SPDX-License-Identifier: GPL-2.0
/*
 * Aggregates shmem/tmpfs folio activity in maps: allocations by order and
 * path per file system, file, process and cgroup; fallbacks and splits by
 * reason; block-uptodate transitions; bytes zeroed; latency histograms.
 *
 * On a kernel with the shmem trace events (the series in kernel-patches/)
 * the tp_btf programs count; elsewhere user space disables them and sets
 * count_in_fexit, and the fexit on shmem_alloc_and_add_folio() counts
 * allocations and infers fallbacks from the errors it returns.  The
 * defaults suit the patched kernel, so `bpftool prog loadall ... autoattach`
 * works on this object as it is.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "shmem_stats.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool count_in_fexit;	/* fallback mode */
const volatile __u32 filter_tgid;	/* 0: every process */
const volatile bool filter_cgroup;	/* only tasks in cgroup_filter[0] */

#define MAX_ERRNO 4095

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct shmem_alloc_key);
	__type(value, __u64);
} allocs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SHMEM_MAX_FILES);
	__type(key, struct shmem_file_key);
	__type(value, struct shmem_row);
} files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SHMEM_MAX_PROCS);
	__type(key, __u32);		/* tgid */
	__type(value, struct shmem_row);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SHMEM_MAX_CGROUPS);
	__type(key, __u64);		/* cgroup id */
	__type(value, struct shmem_row);
} cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SHMEM_NR_ORDERS * SHMEM_STAT_NR_FALLBACKS);
	__type(key, struct shmem_fallback_key);
	__type(value, __u64);
} fallbacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SHMEM_NR_ORDERS * SHMEM_STAT_NR_SPLITS);
	__type(key, struct shmem_split_key);
	__type(value, struct shmem_split_count);
} splits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct shmem_blocks);
} blocks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SHMEM_NR_HISTS);
	__type(key, __u32);
	__type(value, struct shmem_hist);
} hists SEC(".maps");

/* Written by the loader: what these programs observe on this kernel. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct shmem_info);
} info SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

/* When each large folio was allocated, until it is fully uptodate. */
struct folio_key {
	__u64 ino;
	__u64 index;
	__u32 dev;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct folio_key);
	__type(value, __u64);
} born SEC(".maps");

/*
 * Per thread: the timed shmem operations it is in, and the allocation time
 * not yet attributed to a file, process and cgroup.  Task storage, so the
 * hot path neither inserts nor deletes map entries.
 */
enum timed_op { TIMED_WRITE, TIMED_FAULT, TIMED_FALLOC, NR_TIMED };

struct thread_ops {
	__u64 start[NR_TIMED];
	__u64 alloc_start;
	__u64 pending_ns;	/* allocation time since the last count */
	__u32 pending_calls;
	__u32 allocated;	/* bit per op: it allocated a folio */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_ops);
} threads SEC(".maps");

static bool skip_task(void)
{
	if (filter_tgid && (bpf_get_current_pid_tgid() >> 32) != filter_tgid)
		return true;
	if (filter_cgroup && !bpf_current_task_under_cgroup(&cgroup_filter, 0))
		return true;
	return false;
}

static __u32 log2_slot(__u64 v)
{
	__u32 slot = 0;

	/* the first slot whose upper bound 2^slot is at or above v */
	while (slot < SHMEM_HIST_SLOTS - 1 && (1ULL << slot) < v)
		slot++;
	return slot;
}

static void hist_add(__u32 id, __u64 ns)
{
	struct shmem_hist *h = bpf_map_lookup_elem(&hists, &id);

	if (!h)
		return;
	__sync_fetch_and_add(&h->slots[log2_slot(ns)], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum, ns);
}

static struct shmem_blocks *block_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&blocks, &zero);
}

static struct shmem_row *row_get(void *map, const void *key, bool *created)
{
	static const struct shmem_row empty;
	struct shmem_row *row = bpf_map_lookup_elem(map, key);

	*created = false;
	if (row)
		return row;
	bpf_map_update_elem(map, key, &empty, BPF_NOEXIST);
	row = bpf_map_lookup_elem(map, key);
	*created = row != NULL;
	return row;
}

static void inode_name(struct inode *inode, char *name)
{
	struct hlist_node *alias = BPF_CORE_READ(inode, i_dentry.first);
	struct dentry *dentry;

	if (!alias)
		return;
	dentry = (void *)alias - bpf_core_field_offset(struct dentry, d_u.d_alias);
	bpf_probe_read_kernel_str(name, SHMEM_NAME_LEN,
				  BPF_CORE_READ(dentry, d_name.name));
}

/* The file, process and cgroup rows an event of @inode counts in. */
struct rows {
	struct shmem_row *file, *proc, *cgroup;
};

static void rows_get(struct inode *inode, struct rows *r)
{
	struct shmem_file_key fkey = {};
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 cgid = bpf_get_current_cgroup_id();
	bool created;

	fkey.dev = inode->i_sb->s_dev;
	fkey.ino = inode->i_ino;
	r->file = row_get(&files, &fkey, &created);
	if (r->file && created)
		inode_name(inode, r->file->name);

	r->proc = row_get(&procs, &tgid, &created);
	if (r->proc && created)
		bpf_get_current_comm(r->proc->name, SHMEM_NAME_LEN);

	r->cgroup = row_get(&cgroups, &cgid, &created);
	if (r->cgroup && created) {
		struct task_struct *task = bpf_get_current_task_btf();

		bpf_probe_read_kernel_str(r->cgroup->name, SHMEM_NAME_LEN,
			BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, name));
	}
}

#define rows_add(r, field, n) do {					\
	if ((r)->file)							\
		__sync_fetch_and_add(&(r)->file->field, n);		\
	if ((r)->proc)							\
		__sync_fetch_and_add(&(r)->proc->field, n);		\
	if ((r)->cgroup)						\
		__sync_fetch_and_add(&(r)->cgroup->field, n);		\
} while (0)

/* Add one to a counter in a hash map, creating it; racing creators both count. */
static void counter_inc(void *map, const void *key)
{
	__u64 one = 1, *count = bpf_map_lookup_elem(map, key);

	if (!count) {
		if (!bpf_map_update_elem(map, key, &one, BPF_NOEXIST))
			return;
		count = bpf_map_lookup_elem(map, key);
		if (!count)
			return;
	}
	__sync_fetch_and_add(count, 1);
}

static struct thread_ops *thread_ops(__u64 flags)
{
	return bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0,
				    flags);
}

static __u32 folio_order(struct folio *folio)
{
	unsigned long head = 1UL << bpf_core_enum_value(enum pageflags, PG_head);

	if (!(folio->flags & head))
		return 0;
	return folio->_flags_1 & 0xff;
}

/* Count a folio allocation and mark the operations it happened in. */
static void count_alloc(struct inode *inode, __u32 order, __u32 path,
			__u64 index)
{
	struct shmem_alloc_key key = {};
	struct thread_ops *ops;
	struct rows r;

	if (order >= SHMEM_NR_ORDERS)
		order = SHMEM_NR_ORDERS - 1;
	key.dev = inode->i_sb->s_dev;
	key.order = order;
	key.path = path < SHMEM_STAT_NR_PATHS ? path : SHMEM_STAT_PATH_OTHER;
	counter_inc(&allocs, &key);

	rows_get(inode, &r);
	/* hide the clamp from the compiler so the verifier sees a bound */
	barrier_var(order);
	rows_add(&r, allocs[order & (SHMEM_NR_ORDERS - 1)], 1);

	ops = thread_ops(0);
	if (ops) {
		__u32 bits = 0;

		/* the time of this allocation and of the attempts before it */
		rows_add(&r, alloc_ns, ops->pending_ns);
		rows_add(&r, alloc_calls, ops->pending_calls);
		ops->pending_ns = 0;
		ops->pending_calls = 0;
		for (int op = 0; op < NR_TIMED; op++)
			if (ops->start[op])
				bits |= 1 << op;
		ops->allocated |= bits;
	}

	if (order) {
		struct folio_key fk = { .dev = key.dev, .index = index };
		__u64 now = bpf_ktime_get_ns();

		fk.ino = inode->i_ino;
		bpf_map_update_elem(&born, &fk, &now, BPF_ANY);
	}
}

static void count_fallback(struct inode *inode, __u32 order, __u32 reason)
{
	struct shmem_fallback_key key = {
		.order = order < SHMEM_NR_ORDERS ? order : SHMEM_NR_ORDERS - 1,
		.reason = reason < SHMEM_STAT_NR_FALLBACKS ?
			  reason : SHMEM_STAT_FB_ERROR,
	};
	struct rows r;

	counter_inc(&fallbacks, &key);
	rows_get(inode, &r);
	rows_add(&r, fallbacks, 1);
}

SEC("tp_btf/shmem_alloc_folio")
int BPF_PROG(alloc_folio, struct inode *inode, struct folio *folio,
	     loff_t write_end, unsigned long orders, int path)
{
	if (!skip_task())
		count_alloc(inode, folio_order(folio), path,
			    folio->index);
	return 0;
}

SEC("tp_btf/shmem_alloc_fallback")
int BPF_PROG(alloc_fallback, struct inode *inode, unsigned long index,
	     unsigned int order, unsigned int next_order, int reason)
{
	if (!skip_task())
		count_fallback(inode, order, reason);
	return 0;
}

static void count_blocks(struct inode *inode, struct folio *folio,
			 unsigned int nr, unsigned int nr_uptodate, bool set)
{
	struct shmem_blocks *b = block_stats();
	__u32 order = folio_order(folio);
	__u32 total = 1U << order;
	struct rows r;

	if (!b)
		return;
	if (!set) {
		__sync_fetch_and_add(&b->clear_events, 1);
		__sync_fetch_and_add(&b->clear_blocks, nr);
		return;
	}
	__sync_fetch_and_add(&b->uptodate_events, 1);
	__sync_fetch_and_add(&b->uptodate_blocks, nr);
	if (!order)
		return;
	if (nr_uptodate == nr && nr < total) {
		__sync_fetch_and_add(&b->became_partial, 1);
		rows_get(inode, &r);
		rows_add(&r, partial, 1);
	}
	if (nr_uptodate == total) {
		struct folio_key fk = {
			.dev = inode->i_sb->s_dev,
			.ino = inode->i_ino,
			.index = folio->index,
		};
		__u64 *born_ns = bpf_map_lookup_elem(&born, &fk);

		if (nr < total)
			__sync_fetch_and_add(&b->became_full, 1);
		if (born_ns) {
			hist_add(SHMEM_HIST_UPTODATE,
				 bpf_ktime_get_ns() - *born_ns);
			bpf_map_delete_elem(&born, &fk);
		}
	}
}

SEC("tp_btf/shmem_block_uptodate")
int BPF_PROG(block_uptodate, struct inode *inode, struct folio *folio,
	     unsigned int first, unsigned int nr, unsigned int nr_uptodate)
{
	if (!skip_task())
		count_blocks(inode, folio, nr, nr_uptodate, true);
	return 0;
}

SEC("tp_btf/shmem_block_clear")
int BPF_PROG(block_clear, struct inode *inode, struct folio *folio,
	     unsigned int first, unsigned int nr, unsigned int nr_uptodate)
{
	if (!skip_task())
		count_blocks(inode, folio, nr, nr_uptodate, false);
	return 0;
}

SEC("tp_btf/shmem_zero")
int BPF_PROG(zero, struct inode *inode, struct folio *folio, size_t offset,
	     size_t bytes, int reason)
{
	struct shmem_blocks *b;
	struct rows r;

	if (skip_task())
		return 0;
	b = block_stats();
	if (b && reason >= 0 && reason < SHMEM_STAT_NR_ZEROS)
		__sync_fetch_and_add(&b->zeroed[reason], bytes);
	rows_get(inode, &r);
	rows_add(&r, zeroed, bytes);
	return 0;
}

SEC("tp_btf/shmem_folio_split")
int BPF_PROG(folio_split, struct inode *inode, struct folio *folio,
	     unsigned int old_order, unsigned int new_order, int reason,
	     int ret)
{
	struct shmem_split_key key = {
		.order = old_order < SHMEM_NR_ORDERS ?
			 old_order : SHMEM_NR_ORDERS - 1,
		.reason = reason,
	};
	struct shmem_split_count *count, first = {};
	struct rows r;

	if (skip_task() || reason < 0 || reason >= SHMEM_STAT_NR_SPLITS)
		return 0;
	count = bpf_map_lookup_elem(&splits, &key);
	if (!count) {
		bpf_map_update_elem(&splits, &key, &first, BPF_NOEXIST);
		count = bpf_map_lookup_elem(&splits, &key);
		if (!count)
			return 0;
	}
	if (ret) {
		__sync_fetch_and_add(&count->failed, 1);
		return 0;
	}
	__sync_fetch_and_add(&count->done, 1);
	rows_get(inode, &r);
	rows_add(&r, splits, 1);
	return 0;
}

/* Timing of allocations, and the fallback mode's counting. */

SEC("fentry/shmem_alloc_and_add_folio")
int BPF_PROG(alloc_enter)
{
	struct thread_ops *ops;

	if (skip_task())
		return 0;
	ops = thread_ops(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ops)
		ops->alloc_start = bpf_ktime_get_ns();
	return 0;
}

static __u32 path_of(struct thread_ops *ops)
{
	if (ops->start[TIMED_FALLOC])
		return SHMEM_STAT_PATH_FALLOC;
	if (ops->start[TIMED_WRITE])
		return SHMEM_STAT_PATH_WRITE;
	if (ops->start[TIMED_FAULT])
		return SHMEM_STAT_PATH_FAULT;
	return SHMEM_STAT_PATH_OTHER;
}

static __u32 highest_order(unsigned long orders)
{
	__u32 order = SHMEM_NR_ORDERS - 1;

	while (order && !(orders & (1UL << order)))
		order--;
	return order;
}

static __u32 fallback_reason_of(long err)
{
	switch (err) {
	case -12:	/* ENOMEM: the allocation or the charge */
		return SHMEM_STAT_FB_ERROR;
	case -17:	/* EEXIST */
		return SHMEM_STAT_FB_RACED;
	case -28:	/* ENOSPC */
		return SHMEM_STAT_FB_NOSPC;
	}
	return SHMEM_STAT_FB_ERROR;
}

SEC("fexit/shmem_alloc_and_add_folio")
int BPF_PROG(alloc_exit, struct vm_fault *vmf, gfp_t gfp, struct inode *inode,
	     unsigned long index, struct mm_struct *fault_mm,
	     unsigned long orders, struct folio *ret)
{
	struct thread_ops *ops = thread_ops(0);
	long err = (long)ret;
	__u64 ns;

	if (!ops || !ops->alloc_start)
		return 0;
	ns = bpf_ktime_get_ns() - ops->alloc_start;
	ops->alloc_start = 0;
	hist_add(SHMEM_HIST_ALLOC, ns);
	/* the allocation event, or the fallback mode below, attributes it */
	ops->pending_ns += ns;
	ops->pending_calls++;
	if (!count_in_fexit)
		return 0;
	if (err < 0 && err >= -MAX_ERRNO) {
		if (orders)
			count_fallback(inode, highest_order(orders),
				       fallback_reason_of(err));
	} else {
		count_alloc(inode, folio_order(ret), path_of(ops), index);
	}
	return 0;
}

static int op_enter(enum timed_op op)
{
	struct thread_ops *ops;

	if (skip_task())
		return 0;
	ops = thread_ops(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ops) {
		ops->start[op] = bpf_ktime_get_ns();
		ops->allocated &= ~(1U << op);
	}
	return 0;
}

static int op_exit(enum timed_op op, __u32 hist)
{
	struct thread_ops *ops = thread_ops(0);

	if (!ops || !ops->start[op])
		return 0;
	if (ops->allocated & (1U << op))
		hist_add(hist, bpf_ktime_get_ns() - ops->start[op]);
	ops->start[op] = 0;
	return 0;
}

SEC("fentry/shmem_file_write_iter")
int BPF_PROG(write_enter)
{
	return op_enter(TIMED_WRITE);
}

SEC("fexit/shmem_file_write_iter")
int BPF_PROG(write_exit)
{
	return op_exit(TIMED_WRITE, SHMEM_HIST_WRITE);
}

SEC("fentry/shmem_fault")
int BPF_PROG(fault_enter)
{
	return op_enter(TIMED_FAULT);
}

SEC("fexit/shmem_fault")
int BPF_PROG(fault_exit)
{
	return op_exit(TIMED_FAULT, SHMEM_HIST_FAULT);
}

SEC("fentry/shmem_fallocate")
int BPF_PROG(falloc_enter)
{
	return op_enter(TIMED_FALLOC);
}

SEC("fexit/shmem_fallocate")
int BPF_PROG(falloc_exit)
{
	return op_exit(TIMED_FALLOC, SHMEM_HIST_FALLOC);
}
