// SPDX-License-Identifier: GPL-2.0
/*
 * Aggregates shmem/tmpfs folio activity in maps: allocations by order and
 * path, fallbacks and splits by reason, block-uptodate transitions and
 * bytes zeroed in a per-CPU array (no size limit, nothing lost); the same
 * per file, process, cgroup and file system in LRU maps whose insertions
 * are counted, so user space knows how many rows were dropped; latency
 * histograms when asked for.
 *
 * On a kernel with the shmem trace events (the series in kernel-patches/)
 * the tp_btf programs count; elsewhere user space disables them and sets
 * count_in_fexit, and fentry/fexit programs count allocations and the
 * fallbacks they can see.  The const volatile switches below let the
 * verifier drop whatever a front end does not show.  Their defaults suit
 * the patched kernel, so `bpftool prog loadall ... autoattach` works on
 * this object as it is (counting and every row map, no latency): every
 * program's target is a function the patched kernel has too.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "shmem_map_types.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool count_in_fexit;	/* fallback mode */
const volatile bool latency;		/* allocation and uptodate histograms */
const volatile bool call_latency;	/* write, fault, fallocate histograms */
const volatile __u32 rows = SHMEM_ALL_ROWS;	/* row maps to fill */
const volatile __u32 filter_tgid;	/* 0: every process */
const volatile bool filter_cgroup;	/* only tasks in cgroup_filter[0] */
/*
 * The allocation events pass ramp_orders (6 arguments): alloc_folio and
 * alloc_fallback count, alloc_folio5 and alloc_fallback5 return at once
 */
const volatile bool ramp_args = true;

#define MAX_ERRNO 4095

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct shmem_totals);
} totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SHMEM_NR_HISTS);
	__type(key, __u32);
	__type(value, struct shmem_hist);
} hists SEC(".maps");

/* The row maps; the loader sizes them (and shrinks unused ones to 1). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SHMEM_DEFAULT_FILES);
	__type(key, struct shmem_file_key);
	__type(value, struct shmem_row);
} files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SHMEM_DEFAULT_PROCS);
	__type(key, struct shmem_proc_key);
	__type(value, struct shmem_row);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SHMEM_DEFAULT_CGROUPS);
	__type(key, __u64);		/* cgroup id */
	__type(value, struct shmem_row);
} cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SHMEM_DEFAULT_FSES);
	__type(key, __u32);		/* kernel dev_t */
	__type(value, struct shmem_row);
} fses SEC(".maps");

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

/* With latency: when each large folio was allocated, until fully uptodate. */
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
 * Per thread, for the timing programs and the fallback mode: the shmem
 * calls it is in, and (fallback mode) the allocation time not yet
 * attributed to a row.  Task storage, so the hot path neither inserts
 * nor deletes map entries.
 */
enum timed_op { TIMED_WRITE, TIMED_FAULT, TIMED_FALLOC, NR_TIMED };

struct thread_ops {
	__u64 start[NR_TIMED];
	__u64 alloc_start;
	__u64 pending_ns;	/* allocation time since the last count */
	__u32 pending_calls;
	__u32 last_order;	/* fallback mode: order of the last folio allocated */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_ops);
} threads SEC(".maps");

/*
 * Enumerators of earlier versions of the series that vmlinux.h no longer
 * has: CO-RE matches them by name with the ___ suffix dropped.  Every
 * enumerator is looked up with bpf_core_enum_value_exists() (IS_ENUM), so
 * a kernel without some of them, or with ones added later, loads too.
 */
enum shmem_alloc_path___older {
	SHMEM_PATH_READ___older = 3,
};

static __always_inline bool skip_task(void)
{
	if (filter_tgid && (bpf_get_current_pid_tgid() >> 32) != filter_tgid)
		return true;
	if (filter_cgroup && !bpf_current_task_under_cgroup(&cgroup_filter, 0))
		return true;
	return false;
}

/*
 * Global counts and histograms add with plain ++ even where fentry/fexit
 * programs can be preempted (PREEMPT_RT: migration disabled only): each
 * counter has one writer program per mode, and the kernel never runs a
 * program on a CPU where it is already running (it skips that run).
 */
static __always_inline struct shmem_totals *totals_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&totals, &zero);
}

static __always_inline void hist_add(__u32 id, __u64 ns)
{
	struct shmem_hist *h = bpf_map_lookup_elem(&hists, &id);
	__u32 slot = shmem_hist_slot(ns);

	/*
	 * the register checked is the one indexed: Linux 6.1's verifier
	 * does not carry a bound over to a copy
	 */
	barrier_var(slot);
	if (!h || slot >= SHMEM_HIST_SLOTS)
		return;
	h->slots[slot]++;
	h->sum += ns;
}

static __always_inline struct shmem_row *row_get(void *map, const void *key,
				 struct shmem_totals *t, __u32 kind,
				 bool *created)
{
	static const struct shmem_row empty;
	struct shmem_row *row = bpf_map_lookup_elem(map, key);
	long err;

	*created = false;
	if (row)
		return row;
	err = bpf_map_update_elem(map, key, &empty, BPF_NOEXIST);
	row = bpf_map_lookup_elem(map, key);
	if (kind >= SHMEM_NR_ROW_KINDS)
		return row;
	/*
	 * atomic: other CPUs insert rows too.  Readers count inserted minus present, plus failed, as dropped: a
	 * row inserted here (err 0) that another CPU's insertion evicted
	 * before the lookup is inserted and not present, so it is dropped
	 * once that way; counting it failed too made it twice (review
	 * suspicion (a)).  So is one another CPU inserted first (EEXIST) and
	 * a third evicted.  Failed is only an insertion that found no room.
	 */
	if (!err)
		__sync_fetch_and_add(&t->rows_created[kind], 1);
	else if (err != -17 /* EEXIST */ && !row)
		__sync_fetch_and_add(&t->rows_failed[kind], 1);
	*created = !err && row;
	if (*created)
		row->inserted_ns = bpf_ktime_get_ns();
	return row;
}

/*
 * The kernel's string @src into a row's @name: NUL-terminated when it
 * fits, else its first SHMEM_NAME_LEN bytes without a NUL, so that
 * readers tell a name of 31 bytes from one cut there.
 */
static __always_inline void name_read(char *name, const char *src)
{
	char last;

	if (bpf_probe_read_kernel_str(name, SHMEM_NAME_LEN, src) != SHMEM_NAME_LEN)
		return;
	/* 31 bytes copied: the last buffer byte is the name's 32nd, or its end */
	if (!bpf_probe_read_kernel(&last, 1, src + SHMEM_NAME_LEN - 1))
		name[SHMEM_NAME_LEN - 1] = last;
}

static void inode_name(struct inode *inode, char *name)
{
	struct hlist_node *alias = BPF_CORE_READ(inode, i_dentry.first);
	struct dentry *dentry;

	if (!alias)
		return;
	dentry = (void *)alias - bpf_core_field_offset(struct dentry, d_u.d_alias);
	name_read(name, (const char *)BPF_CORE_READ(dentry, d_name.name));
}

#define ROWS_ON(kind) (rows & (1U << (kind)))

/* The rows an event counts in: each row kept (NULL for those not kept) */
struct rows {
	struct shmem_row *file, *proc, *cgroup, *fs;
};

/*
 * Look up the rows of this event, inserting and naming the new ones.
 * Every event adds to the rows themselves, so a reader of the maps
 * (bpftool too) sees each count as soon as the event's program ends.
 */
static __always_inline void rows_get(struct inode *inode,
				     struct shmem_totals *t, struct rows *r)
{
	struct task_struct *task = bpf_get_current_task_btf();
	bool created;

	__builtin_memset(r, 0, sizeof(*r));
	if (ROWS_ON(SHMEM_ROWS_FILES)) {
		struct shmem_file_key key = {
			.ino = inode->i_ino,
			.dev = inode->i_sb->s_dev,
		};

		r->file = row_get(&files, &key, t, SHMEM_ROWS_FILES, &created);
		if (created && r->file)
			inode_name(inode, r->file->name);
	}
	if (ROWS_ON(SHMEM_ROWS_PROCS)) {
		struct shmem_proc_key key = {
			.tgid = task->tgid,
			/* CLOCK_BOOTTIME: /proc/PID/stat's starttime, in ns */
			.start_ns = task->group_leader->start_boottime,
		};

		r->proc = row_get(&procs, &key, t, SHMEM_ROWS_PROCS, &created);
		if (created && r->proc)
			bpf_get_current_comm(r->proc->name, SHMEM_NAME_LEN);
	}
	if (ROWS_ON(SHMEM_ROWS_CGROUPS)) {
		__u64 id = bpf_get_current_cgroup_id();

		r->cgroup = row_get(&cgroups, &id, t, SHMEM_ROWS_CGROUPS, &created);
		if (created && r->cgroup)
			name_read(r->cgroup->name,
				  BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, name));
	}
	if (ROWS_ON(SHMEM_ROWS_FSES)) {
		__u32 dev = inode->i_sb->s_dev;

		r->fs = row_get(&fses, &dev, t, SHMEM_ROWS_FSES, &created);
		if (created && r->fs)
			bpf_probe_read_kernel_str(r->fs->name, SHMEM_NAME_LEN,
						  inode->i_sb->s_id);
	}
}

/* Atomic adds: rows are shared between CPUs */
#define rows_add(r, field, n) do {					\
	if ((r)->file)							\
		__sync_fetch_and_add(&(r)->file->field, n);		\
	if ((r)->proc)							\
		__sync_fetch_and_add(&(r)->proc->field, n);		\
	if ((r)->cgroup)						\
		__sync_fetch_and_add(&(r)->cgroup->field, n);		\
	if ((r)->fs)							\
		__sync_fetch_and_add(&(r)->fs->field, n);		\
} while (0)

static __always_inline struct thread_ops *thread_ops(__u64 flags)
{
	return bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0,
				    flags);
}

/* Linux 6.1 kept a large folio's order in a field of its own */
struct folio___6_1 {
	unsigned char _folio_order;
};

static __always_inline __u32 folio_order(struct folio *folio)
{
	unsigned long head = 1UL << bpf_core_enum_value(enum pageflags, PG_head);
	struct folio___6_1 *old = (void *)folio;

	if (!(folio->flags & head))
		return 0;
	if (bpf_core_field_exists(old->_folio_order))
		return BPF_CORE_READ(old, _folio_order);
	return BPF_CORE_READ(folio, _flags_1) & 0xff;
}

/*
 * An index below @n, the last one for anything above: the barrier keeps
 * the compiler from folding the bound away, so the verifier sees it.
 */
static __always_inline __u64 bounded(__u64 i, __u64 n)
{
	if (i >= n)
		i = n - 1;
	barrier_var(i);
	return i < n ? i : 0;
}

static __always_inline __u64 clamp_order(__u64 order)
{
	return bounded(order, SHMEM_NR_ORDERS);
}

/*
 * Count the allocation of @folio on @path (enum shmem_stat_path); its
 * order came from the append ramp if it is one of @ramp_orders.
 */
static __always_inline void count_alloc(struct inode *inode,
					struct folio *folio, __u32 path,
					unsigned long ramp_orders)
{
	struct shmem_totals *t = totals_get();
	__u32 order = clamp_order(folio_order(folio));
	bool ramped = (ramp_orders >> order) & 1;
	struct thread_ops *ops = NULL;
	struct rows r;

	if (!t)
		return;
	/* SHMEM_STAT_PATH_OTHER is the last path */
	path = bounded(path, SHMEM_STAT_NR_PATHS);
	t->allocs[order][path]++;
	if (ramped)
		t->ramp_allocs[order]++;
	/*
	 * Fallback mode with latency: alloc_exit left the time of this
	 * allocation and of the attempts before it (the events: the
	 * series' shmem_alloc_time gives it)
	 */
	if (count_in_fexit && latency)
		ops = thread_ops(0);
	/* @r only inside: a register it left undefined fails verification */
	if (rows) {
		rows_get(inode, t, &r);
		order = clamp_order(order);
		rows_add(&r, allocs[order], 1);
		if (ramped)
			rows_add(&r, ramp_allocs[order], 1);
		if (ops && ops->pending_calls) {
			rows_add(&r, alloc_ns, ops->pending_ns);
			rows_add(&r, alloc_calls, ops->pending_calls);
		}
	}
	if (ops) {
		ops->pending_ns = 0;
		ops->pending_calls = 0;
	}
	if (latency && order) {
		struct folio_key fk = {
			.dev = inode->i_sb->s_dev,
			.ino = inode->i_ino,
			.index = folio->index,
		};
		__u64 now = bpf_ktime_get_ns();

		bpf_map_update_elem(&born, &fk, &now, BPF_ANY);
	}
}

/* @order given up for @reason; the append ramp chose it if in @ramp_orders */
static void count_fallback(struct inode *inode, __u32 order, __u32 reason,
			   unsigned long ramp_orders)
{
	struct shmem_totals *t = totals_get();
	bool ramped = (ramp_orders >> (order & 63)) & 1;
	struct rows r;

	if (!t)
		return;
	/* SHMEM_STAT_FB_OTHER is the last reason */
	reason = bounded(reason, SHMEM_STAT_NR_FALLBACKS);
	/* each index bounded where it is used: 6.1's verifier needs it so */
	t->fallbacks[clamp_order(order)][reason]++;
	if (ramped)
		t->ramp_fallbacks[clamp_order(order)][reason]++;
	if (rows) {
		rows_get(inode, t, &r);
		rows_add(&r, fallbacks, 1);
		if (ramped)
			rows_add(&r, ramp_fallbacks, 1);
	}
}

/*
 * @v is the kernel's @type::@name, if the running kernel has that name: a
 * kernel may renumber, add or drop values, and CO-RE resolves each by
 * name at load time.
 */
#define IS_ENUM(v, type, name)						\
	(bpf_core_enum_value_exists(type, name) &&			\
	 (v) == bpf_core_enum_value(type, name))

static __always_inline __u32 stat_path(int path)
{
	if (IS_ENUM(path, enum shmem_alloc_path, SHMEM_PATH_WRITE))
		return SHMEM_STAT_PATH_WRITE;
	if (IS_ENUM(path, enum shmem_alloc_path, SHMEM_PATH_FALLOC))
		return SHMEM_STAT_PATH_FALLOC;
	if (IS_ENUM(path, enum shmem_alloc_path, SHMEM_PATH_FAULT))
		return SHMEM_STAT_PATH_FAULT;
	if (IS_ENUM(path, enum shmem_alloc_path, SHMEM_PATH_KERNEL))
		return SHMEM_STAT_PATH_KERNEL;
	if (IS_ENUM(path, enum shmem_alloc_path___older, SHMEM_PATH_READ___older))
		return SHMEM_STAT_PATH_READ;
	if (IS_ENUM(path, enum shmem_alloc_path, SHMEM_PATH_SWAPIN))
		return SHMEM_STAT_PATH_SWAPIN;
	if (IS_ENUM(path, enum shmem_alloc_path, SHMEM_PATH_COLLAPSE))
		return SHMEM_STAT_PATH_COLLAPSE;
	if (IS_ENUM(path, enum shmem_alloc_path, SHMEM_PATH_USERFAULT))
		return SHMEM_STAT_PATH_USERFAULT;
	return SHMEM_STAT_PATH_OTHER;
}

static __u32 stat_fallback(int reason)
{
	if (IS_ENUM(reason, enum shmem_fallback_reason, SHMEM_FALLBACK_ALLOC))
		return SHMEM_STAT_FB_ALLOC;
	if (IS_ENUM(reason, enum shmem_fallback_reason, SHMEM_FALLBACK_CHARGE))
		return SHMEM_STAT_FB_CHARGE;
	if (IS_ENUM(reason, enum shmem_fallback_reason, SHMEM_FALLBACK_RACED))
		return SHMEM_STAT_FB_RACED;
	if (IS_ENUM(reason, enum shmem_fallback_reason, SHMEM_FALLBACK_NOSPC))
		return SHMEM_STAT_FB_NOSPC;
	if (IS_ENUM(reason, enum shmem_fallback_reason, SHMEM_FALLBACK_UNSUITABLE))
		return SHMEM_STAT_FB_UNSUITABLE;
	return SHMEM_STAT_FB_OTHER;
}

static __u32 stat_split(int reason)
{
	if (IS_ENUM(reason, enum shmem_split_reason, SHMEM_SPLIT_SHRINK))
		return SHMEM_STAT_SPLIT_SHRINK;
	if (IS_ENUM(reason, enum shmem_split_reason, SHMEM_SPLIT_TRUNCATE))
		return SHMEM_STAT_SPLIT_TRUNCATE;
	if (IS_ENUM(reason, enum shmem_split_reason, SHMEM_SPLIT_SWAPOUT))
		return SHMEM_STAT_SPLIT_SWAPOUT;
	return SHMEM_STAT_SPLIT_OTHER;
}

static __u32 stat_zero(int reason)
{
	if (IS_ENUM(reason, enum shmem_zero_reason, SHMEM_ZERO_UNWRITTEN))
		return SHMEM_STAT_ZERO_UNWRITTEN;
	if (IS_ENUM(reason, enum shmem_zero_reason, SHMEM_ZERO_PARTIAL))
		return SHMEM_STAT_ZERO_PARTIAL;
	if (IS_ENUM(reason, enum shmem_zero_reason, SHMEM_ZERO_NOMEM))
		return SHMEM_STAT_ZERO_NOMEM;
	if (IS_ENUM(reason, enum shmem_zero_reason, SHMEM_ZERO_SPLIT))
		return SHMEM_STAT_ZERO_SPLIT;
	return SHMEM_STAT_ZERO_OTHER;
}

SEC("tp_btf/shmem_alloc_folio")
int BPF_PROG(alloc_folio, struct inode *inode, struct folio *folio,
	     loff_t write_end, unsigned long orders, int path,
	     unsigned long ramp_orders)
{
	if (!skip_task())
		count_alloc(inode, folio, stat_path(path), ramp_orders);
	return 0;
}

SEC("tp_btf/shmem_alloc_fallback")
int BPF_PROG(alloc_fallback, struct inode *inode, unsigned long index,
	     unsigned int order, unsigned int next_order, int reason,
	     unsigned long ramp_orders)
{
	if (!skip_task())
		count_fallback(inode, order, stat_fallback(reason), ramp_orders);
	return 0;
}

/*
 * The same events before the series' append ramp (patch 16), without
 * ramp_orders: the verifier refuses a program that reads a sixth
 * argument of a tracepoint that has five, so the loader loads these
 * instead there (tracer.c), and the ramp is not observed.
 */
SEC("tp_btf/shmem_alloc_folio")
int BPF_PROG(alloc_folio5, struct inode *inode, struct folio *folio,
	     loff_t write_end, unsigned long orders, int path)
{
	if (!ramp_args && !skip_task())
		count_alloc(inode, folio, stat_path(path), 0);
	return 0;
}

SEC("tp_btf/shmem_alloc_fallback")
int BPF_PROG(alloc_fallback5, struct inode *inode, unsigned long index,
	     unsigned int order, unsigned int next_order, int reason)
{
	if (!ramp_args && !skip_task())
		count_fallback(inode, order, stat_fallback(reason), 0);
	return 0;
}

/* Block state of large folios; order 0 has none worth counting. */
static __always_inline void count_blocks(struct inode *inode,
					 struct folio *folio, unsigned int nr,
					 unsigned int nr_uptodate, bool set)
{
	__u32 order = folio_order(folio);
	struct shmem_totals *t;
	__u32 total;
	struct rows r;

	if (!order)
		return;
	t = totals_get();
	if (!t)
		return;
	if (!set) {
		t->blocks.clear_events++;
		t->blocks.clear_blocks += nr;
		return;
	}
	t->blocks.uptodate_events++;
	t->blocks.uptodate_blocks += nr;
	total = 1U << clamp_order(order);
	if (nr_uptodate == nr && nr < total) {
		t->blocks.became_partial++;
		if (rows) {
			rows_get(inode, t, &r);
			rows_add(&r, became_partial, 1);
		}
	}
	if (nr_uptodate != total)
		return;
	if (nr < total) {
		t->blocks.became_full++;
		if (rows) {
			rows_get(inode, t, &r);
			rows_add(&r, became_full, 1);
		}
	}
	if (latency) {
		struct folio_key fk = {
			.dev = inode->i_sb->s_dev,
			.ino = inode->i_ino,
			.index = folio->index,
		};
		__u64 *born_ns = bpf_map_lookup_elem(&born, &fk);

		if (born_ns) {
			hist_add(SHMEM_HIST_UPTODATE,
				 bpf_ktime_get_ns() - *born_ns);
			bpf_map_delete_elem(&born, &fk);
		}
	}
}

/*
 * With latency: the series times each allocation itself.  Our tools load
 * this program only with latency, since attaching it makes the kernel read
 * the clock twice per allocation; under `bpftool prog loadall ...
 * autoattach`, which attaches every program, it returns at once.
 */
SEC("tp_btf/shmem_alloc_time")
int BPF_PROG(alloc_time, struct inode *inode, struct folio *folio, __u64 ns)
{
	struct shmem_totals *t;
	struct rows r;

	if (!latency || skip_task())
		return 0;
	hist_add(SHMEM_HIST_ALLOC, ns);
	if (!rows)
		return 0;
	t = totals_get();
	if (!t)
		return 0;
	rows_get(inode, t, &r);
	rows_add(&r, alloc_ns, ns);
	rows_add(&r, alloc_calls, 1);
	return 0;
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
	struct shmem_totals *t;
	__u32 z = stat_zero(reason);
	struct rows r;

	if (skip_task())
		return 0;
	t = totals_get();
	if (!t)
		return 0;
	z = bounded(z, SHMEM_STAT_NR_ZEROS);
	t->blocks.zeroed[z] += bytes;
	if (rows) {
		rows_get(inode, t, &r);
		rows_add(&r, zeroed, bytes);
	}
	return 0;
}

SEC("tp_btf/shmem_folio_split")
int BPF_PROG(folio_split, struct inode *inode, struct folio *folio,
	     unsigned int old_order, unsigned int new_order, int reason,
	     int ret)
{
	__u32 why = stat_split(reason);
	struct shmem_split_count *count;
	struct shmem_totals *t;
	struct rows r;

	if (skip_task())
		return 0;
	t = totals_get();
	if (!t)
		return 0;
	why = bounded(why, SHMEM_STAT_NR_SPLITS);
	count = &t->splits[clamp_order(old_order)][why];
	/* an errno, or (truncate) 1 when the folio stayed whole */
	if (ret) {
		count->failed++;
		return 0;
	}
	count->done++;
	if (rows) {
		rows_get(inode, t, &r);
		rows_add(&r, splits, 1);
	}
	return 0;
}

/*
 * The fallback mode (a kernel without the series' events): with latency,
 * each shmem_alloc_and_add_folio() call from entry to return; it counts
 * allocations there, infers the path from the call around them, and the
 * fallbacks from shmem_alloc_folio() returning nothing and from the
 * errors of shmem_alloc_and_add_folio() after a large folio was
 * allocated.  With call_latency, in either mode, every write, fault and
 * fallocate call.
 */

/*
 * The innermost call the thread is in: a write faults its user buffer in
 * first, and a fault on a shmem mapping there allocates for the fault.
 */
static __always_inline __u32 path_of(struct thread_ops *ops)
{
	static const __u32 paths[NR_TIMED] = {
		[TIMED_WRITE] = SHMEM_STAT_PATH_WRITE,
		[TIMED_FAULT] = SHMEM_STAT_PATH_FAULT,
		[TIMED_FALLOC] = SHMEM_STAT_PATH_FALLOC,
	};
	__u32 path = SHMEM_STAT_PATH_OTHER;
	__u64 latest = 0;

	for (int op = 0; op < NR_TIMED; op++) {
		if (ops->start[op] > latest) {
			latest = ops->start[op];
			path = paths[op];
		}
	}
	return path;
}

static __always_inline __u32 fallback_reason_of(long err)
{
	switch (err) {
	case -12:	/* ENOMEM after a folio was allocated: the charge */
		return SHMEM_STAT_FB_CHARGE;
	case -17:	/* EEXIST */
		return SHMEM_STAT_FB_RACED;
	case -28:	/* ENOSPC */
		return SHMEM_STAT_FB_NOSPC;
	}
	return SHMEM_STAT_FB_OTHER;
}

SEC("fexit/shmem_alloc_and_add_folio")
int BPF_PROG(alloc_exit, struct vm_fault *vmf, gfp_t gfp, struct inode *inode,
	     unsigned long index, struct mm_struct *fault_mm,
	     unsigned long orders, struct folio *ret)
{
	struct thread_ops *ops;
	long err = (long)ret;

	if (!count_in_fexit || skip_task())
		return 0;
	ops = thread_ops(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ops)
		return 0;
	if (latency && ops->alloc_start) {
		__u64 ns = bpf_ktime_get_ns() - ops->alloc_start;

		ops->alloc_start = 0;
		hist_add(SHMEM_HIST_ALLOC, ns);
		/* count_alloc() below, or the next one, attributes it */
		ops->pending_ns += ns;
		ops->pending_calls++;
	}
	if (err < 0 && err >= -MAX_ERRNO) {
		/* a large folio was allocated, then given up */
		if (orders && ops->last_order)
			count_fallback(inode, ops->last_order,
				       fallback_reason_of(err), 0);
	} else {
		count_alloc(inode, ret, path_of(ops), 0);
	}
	ops->last_order = 0;
	return 0;
}

SEC("fentry/shmem_alloc_and_add_folio")
int BPF_PROG(alloc_enter)
{
	struct thread_ops *ops;

	if (!latency || skip_task())
		return 0;
	ops = thread_ops(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ops)
		ops->alloc_start = bpf_ktime_get_ns();
	return 0;
}

/*
 * Where shmem_alloc_and_add_folio() is not there to trace (Linux 6.1, or
 * inlined: the PREEMPT_RT kernel, which has no THP), a folio added to
 * the file is an allocation; one that was in the swap cache (@expected,
 * the swap entry it replaces) is a swap-in, not counted, as with
 * shmem_alloc_and_add_folio().  Linux 6.1 charges the folio here, so a
 * large one refused is a fallback.  The kernels differ in the arguments
 * after @expected: the return value comes from bpf_get_func_ret().
 */
SEC("fexit/shmem_add_to_page_cache")
int BPF_PROG(add_exit, struct folio *folio, struct address_space *mapping,
	     unsigned long index, void *expected)
{
	struct inode *inode = mapping->host;
	struct thread_ops *ops;
	__u64 ret = 0;
	long err;

	if (!count_in_fexit || expected || skip_task())
		return 0;
	bpf_get_func_ret(ctx, &ret);
	err = (int)ret;
	if (err) {
		if (folio_order(folio))
			count_fallback(inode, folio_order(folio),
				       fallback_reason_of(err), 0);
		return 0;
	}
	ops = thread_ops(BPF_LOCAL_STORAGE_GET_F_CREATE);
	count_alloc(inode, folio, ops ? path_of(ops) : SHMEM_STAT_PATH_OTHER, 0);
	return 0;
}

/* Fallback mode: every order shmem gives up for want of memory. */
SEC("fexit/shmem_alloc_folio")
int BPF_PROG(alloc_folio_exit, gfp_t gfp, int order,
	     struct shmem_inode_info *info, unsigned long index, struct folio *ret)
{
	struct thread_ops *ops;

	if (!count_in_fexit || order <= 0 || skip_task())
		return 0;
	if (!ret) {
		count_fallback(&info->vfs_inode, order, SHMEM_STAT_FB_ALLOC, 0);
		return 0;
	}
	ops = thread_ops(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ops)
		ops->last_order = order;
	return 0;
}

static __always_inline int op_enter(enum timed_op op)
{
	struct thread_ops *ops;

	if ((!call_latency && !count_in_fexit) || skip_task())
		return 0;
	ops = thread_ops(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ops)
		ops->start[op] = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int op_exit(enum timed_op op, __u32 hist)
{
	struct thread_ops *ops;

	if (!call_latency && !count_in_fexit)
		return 0;
	ops = thread_ops(0);
	if (!ops)
		return 0;
	if (!ops->start[op])
		return 0;
	/* SHMEM_NR_HISTS: a call that only gives the path */
	if (call_latency && hist < SHMEM_NR_HISTS)
		hist_add(hist, bpf_ktime_get_ns() - ops->start[op]);
	/*
	 * A call that started inside this one (a fault in a write) has ended
	 * too: a start left by one whose fexit run the kernel skipped (it
	 * skips a program already running on the CPU, which only a
	 * preemptible kernel makes possible: recursion_misses) goes with it
	 */
	for (int o = 0; o < NR_TIMED; o++)
		if (o != op && ops->start[o] > ops->start[op])
			ops->start[o] = 0;
	ops->start[op] = 0;
	return 0;
}

/*
 * Each fexit program comes before its fentry partner: the skeleton
 * attaches in this order, so no call passes a trampoline with the fentry
 * program and not the fexit one, which would leave the call's start set
 * and give its path to later allocations outside any call (a call
 * already under way when the fexit program is attached comes back
 * without it, its start 0: ignored).
 */
SEC("fexit/shmem_file_write_iter")
int BPF_PROG(write_exit)
{
	return op_exit(TIMED_WRITE, SHMEM_HIST_WRITE);
}

SEC("fentry/shmem_file_write_iter")
int BPF_PROG(write_enter)
{
	return op_enter(TIMED_WRITE);
}

/*
 * Linux 6.1 writes through generic_file_write_iter(): the allocations in
 * shmem_write_begin() are a write's, the write's own time is not seen.
 */
SEC("fexit/shmem_write_begin")
int BPF_PROG(wr_begin_exit)
{
	return op_exit(TIMED_WRITE, SHMEM_NR_HISTS);
}

SEC("fentry/shmem_write_begin")
int BPF_PROG(wr_begin_enter)
{
	return op_enter(TIMED_WRITE);
}

SEC("fexit/shmem_fault")
int BPF_PROG(fault_exit)
{
	return op_exit(TIMED_FAULT, SHMEM_HIST_FAULT);
}

SEC("fentry/shmem_fault")
int BPF_PROG(fault_enter)
{
	return op_enter(TIMED_FAULT);
}

SEC("fexit/shmem_fallocate")
int BPF_PROG(falloc_exit)
{
	return op_exit(TIMED_FALLOC, SHMEM_HIST_FALLOC);
}

SEC("fentry/shmem_fallocate")
int BPF_PROG(falloc_enter)
{
	return op_enter(TIMED_FALLOC);
}
