/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The map keys and values shared by bpf/shmem.bpf.c and the tools: the one
 * ABI between the two sides.  Plain fixed-size types only, so the BPF
 * object's BTF describes them and `bpftool map dump` prints named fields.
 */
#ifndef SHMEM_MAP_TYPES_H
#define SHMEM_MAP_TYPES_H

#define SHMEM_NR_ORDERS		16	/* folio orders 0..15 */
#define SHMEM_NAME_LEN		32
/*
 * Latency histograms: slot n < SHMEM_HIST_TOP counts values in
 * (2^(n-1), 2^n] ns (slot 0: 0 and 1), up to 2^42 ns (73 minutes); the
 * last slot counts everything above, the +Inf bucket's own share.
 */
#define SHMEM_HIST_TOP		42
#define SHMEM_HIST_SLOTS	(SHMEM_HIST_TOP + 2)

/* floor(log2(v)) for v > 0, without a loop or a branch per bit */
static inline __u32 shmem_log2_floor(__u64 v)
{
	__u32 r, shift;

	r = (v > 0xffffffffULL) << 5;
	v >>= r;
	shift = (v > 0xffff) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xff) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xf) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	return r | (__u32)(v >> 1);
}

/* The histogram slot of @ns: the first whose bound 2^slot is >= @ns */
static inline __u32 shmem_hist_slot(__u64 ns)
{
	__u64 above_one = ns > 1;
	__u32 slot = shmem_log2_floor((ns - 1) & -above_one) + above_one;

	return slot > SHMEM_HIST_TOP ? SHMEM_HIST_TOP + 1 : slot;
}

/* Entries of the row maps unless the loader is told otherwise. */
#define SHMEM_DEFAULT_FILES	10240
#define SHMEM_DEFAULT_PROCS	4096
#define SHMEM_DEFAULT_CGROUPS	1024
#define SHMEM_DEFAULT_FSES	256

/*
 * The allocation paths the tools name.  The BPF programs translate the
 * kernel's enum shmem_alloc_path by enumerator name (CO-RE), so the
 * kernel may number its values as it likes, and rename or add some: a
 * name this list does not know counts as other.
 */
enum shmem_stat_path {
	SHMEM_STAT_PATH_WRITE,
	SHMEM_STAT_PATH_FALLOC,
	SHMEM_STAT_PATH_FAULT,
	SHMEM_STAT_PATH_READ,	/* earlier versions of the series */
	SHMEM_STAT_PATH_KERNEL,	/* kernel-internal reads and writes (SGP_CACHE) */
	SHMEM_STAT_PATH_SWAPIN,
	SHMEM_STAT_PATH_COLLAPSE,
	SHMEM_STAT_PATH_USERFAULT,
	SHMEM_STAT_PATH_OTHER,
	SHMEM_STAT_NR_PATHS,
};

/* enum shmem_fallback_reason, translated the same way */
enum shmem_stat_fallback {
	SHMEM_STAT_FB_ALLOC,
	SHMEM_STAT_FB_CHARGE,
	SHMEM_STAT_FB_RACED,
	SHMEM_STAT_FB_NOSPC,
	SHMEM_STAT_FB_UNSUITABLE,
	SHMEM_STAT_FB_OTHER,
	SHMEM_STAT_NR_FALLBACKS,
};

/* enum shmem_split_reason */
enum shmem_stat_split {
	SHMEM_STAT_SPLIT_SHRINK,
	SHMEM_STAT_SPLIT_TRUNCATE,
	SHMEM_STAT_SPLIT_SWAPOUT,
	SHMEM_STAT_SPLIT_OTHER,
	SHMEM_STAT_NR_SPLITS,
};

/* enum shmem_zero_reason */
enum shmem_stat_zero {
	SHMEM_STAT_ZERO_UNWRITTEN,
	SHMEM_STAT_ZERO_PARTIAL,
	SHMEM_STAT_ZERO_NOMEM,
	SHMEM_STAT_ZERO_SPLIT,
	SHMEM_STAT_ZERO_OTHER,
	SHMEM_STAT_NR_ZEROS,
};

/* Latency histograms, in nanoseconds. */
enum shmem_stat_hist {
	SHMEM_HIST_ALLOC,	/* a folio's allocation, attempts included */
	SHMEM_HIST_WRITE,	/* shmem write(2) calls */
	SHMEM_HIST_FAULT,	/* shmem page faults */
	SHMEM_HIST_FALLOC,	/* fallocate(2) calls on shmem */
	SHMEM_HIST_UPTODATE,	/* large folio allocated -> fully uptodate */
	SHMEM_NR_HISTS,
};

/* What the loaded programs observe on this kernel: bits of info.signals. */
enum shmem_signal {
	SHMEM_SIG_ALLOCS	= 1 << 0,	/* allocations by order */
	SHMEM_SIG_PATHS		= 1 << 1,	/* exact allocation path */
	SHMEM_SIG_FALLBACKS	= 1 << 2,	/* fallbacks by order */
	SHMEM_SIG_FB_REASONS	= 1 << 3,	/* exact fallback reasons */
	SHMEM_SIG_BLOCKS	= 1 << 4,	/* block uptodate transitions */
	SHMEM_SIG_ZERO		= 1 << 5,	/* bytes zeroed */
	SHMEM_SIG_SPLITS	= 1 << 6,	/* folio splits */
	SHMEM_SIG_LAT_ALLOC	= 1 << 7,
	SHMEM_SIG_LAT_WRITE	= 1 << 8,
	SHMEM_SIG_LAT_FAULT	= 1 << 9,
	SHMEM_SIG_LAT_FALLOC	= 1 << 10,
	SHMEM_SIG_LAT_UPTODATE	= 1 << 11,
	SHMEM_SIG_SWAPINS	= 1 << 12,	/* allocations for swap-in */
	/* orders the append ramp chose: the events' ramp_orders argument */
	SHMEM_SIG_RAMP		= 1 << 13,
	SHMEM_NR_SIGNALS	= 14,
};

/* Folio latencies (--latency) and call latencies (--call-latency) */
#define SHMEM_SIG_LAT_FOLIOS (SHMEM_SIG_LAT_ALLOC | SHMEM_SIG_LAT_UPTODATE)
#define SHMEM_SIG_LAT_CALLS (SHMEM_SIG_LAT_WRITE | SHMEM_SIG_LAT_FAULT | \
			     SHMEM_SIG_LAT_FALLOC)
#define SHMEM_SIG_LATENCY (SHMEM_SIG_LAT_FOLIOS | SHMEM_SIG_LAT_CALLS)

/* The per-entity row maps; bits of info.rows and of the rows switch. */
enum shmem_row_kind {
	SHMEM_ROWS_FILES,	/* key struct shmem_file_key */
	SHMEM_ROWS_PROCS,	/* key struct shmem_proc_key */
	SHMEM_ROWS_CGROUPS,	/* key __u64 cgroup id */
	SHMEM_ROWS_FSES,	/* key __u32 kernel dev_t of the file system */
	SHMEM_NR_ROW_KINDS,
};

#define SHMEM_ALL_ROWS ((1U << SHMEM_NR_ROW_KINDS) - 1)

struct shmem_file_key {
	__u64 ino;
	__u32 dev;		/* kernel dev_t: major << 20 | minor */
	__u32 pad;
};

/* A process: its tgid and when it started, so a reused PID is a new row. */
struct shmem_proc_key {
	__u32 tgid;
	__u32 pad;
	/*
	 * The group leader's start_boottime: CLOCK_BOOTTIME, suspend
	 * included, as /proc/PID/stat's starttime (in clock ticks)
	 */
	__u64 start_ns;
};

/* One row of the files, procs, cgroups and fses maps. */
struct shmem_row {
	/* dentry name, comm or cgroup name; no NUL: 32 bytes or more, cut */
	char name[SHMEM_NAME_LEN];
	/*
	 * When the row was inserted (bpf_ktime_get_ns(); 0 for the moment
	 * between its insertion and its stamp): the same key with another
	 * stamp is a row dropped and inserted again, counting from zero
	 */
	__u64 inserted_ns;
	__u64 allocs[SHMEM_NR_ORDERS];
	/* of @allocs, those whose order the append ramp chose */
	__u64 ramp_allocs[SHMEM_NR_ORDERS];
	__u64 fallbacks;
	__u64 ramp_fallbacks;	/* of @fallbacks, from orders the ramp chose */
	__u64 splits;
	__u64 became_partial;	/* large folios: none -> some blocks uptodate */
	__u64 became_full;	/* large folios: some -> all blocks uptodate */
	__u64 zeroed;		/* bytes */
	__u64 alloc_ns;		/* time spent allocating (with latency on) */
	__u64 alloc_calls;	/* timed allocation attempts */
};

struct shmem_split_count {
	__u64 done;
	__u64 failed;
};

/* Block-uptodate state of large folios (order 0 is not counted). */
struct shmem_blocks {
	__u64 uptodate_events;
	__u64 uptodate_blocks;
	__u64 clear_events;
	__u64 clear_blocks;
	__u64 became_partial;	/* large folio: none -> some blocks uptodate */
	__u64 became_full;	/* large folio: some -> all blocks uptodate */
	__u64 zeroed[SHMEM_STAT_NR_ZEROS];	/* bytes, by reason */
};

/*
 * Every global count, in a per-CPU array of one entry: no size limit, so
 * nothing here is ever lost; user space adds the CPUs up.
 */
struct shmem_totals {
	__u64 allocs[SHMEM_NR_ORDERS][SHMEM_STAT_NR_PATHS];
	__u64 fallbacks[SHMEM_NR_ORDERS][SHMEM_STAT_NR_FALLBACKS];
	/*
	 * Of @allocs (all on the write path) and @fallbacks, those whose
	 * order only the append ramp of a large_folios mount allowed
	 */
	__u64 ramp_allocs[SHMEM_NR_ORDERS];
	__u64 ramp_fallbacks[SHMEM_NR_ORDERS][SHMEM_STAT_NR_FALLBACKS];
	struct shmem_split_count splits[SHMEM_NR_ORDERS][SHMEM_STAT_NR_SPLITS];
	struct shmem_blocks blocks;
	/*
	 * Rows inserted into each row map, and events whose row could not be
	 * inserted.  A row map is LRU: rows inserted minus rows present are
	 * the rows it dropped to make room.
	 */
	__u64 rows_created[SHMEM_NR_ROW_KINDS];
	__u64 rows_failed[SHMEM_NR_ROW_KINDS];
};

/* A per-CPU array of SHMEM_NR_HISTS of these */
struct shmem_hist {
	__u64 slots[SHMEM_HIST_SLOTS];
	__u64 sum;
};

struct shmem_info {
	__u32 signals;		/* enum shmem_signal bits */
	__u32 disabled;		/* signals the user did not ask for */
	__u32 tracepoints;	/* 1: our trace events, 0: fallback mode */
	__u32 rows;		/* row maps kept: bits of enum shmem_row_kind */
};

#endif /* SHMEM_MAP_TYPES_H */
