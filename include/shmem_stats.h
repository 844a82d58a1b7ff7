/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The map keys and values shared by bpf/shmem.bpf.c and the tools: the one
 * ABI between the two sides.  Plain fixed-size types only, so the BPF
 * object's BTF describes them and `bpftool map dump` prints named fields.
 */
#ifndef SHMEM_STATS_H
#define SHMEM_STATS_H

#define SHMEM_NR_ORDERS		16	/* folio orders 0..15 */
#define SHMEM_NAME_LEN		32
#define SHMEM_HIST_SLOTS	32	/* log2 buckets of nanoseconds */

#define SHMEM_MAX_FILES		10240
#define SHMEM_MAX_PROCS		4096
#define SHMEM_MAX_CGROUPS	1024

/* Mirrors enum shmem_alloc_path of the patched kernel. */
enum shmem_stat_path {
	SHMEM_STAT_PATH_WRITE,
	SHMEM_STAT_PATH_FALLOC,
	SHMEM_STAT_PATH_FAULT,
	SHMEM_STAT_PATH_READ,
	SHMEM_STAT_PATH_SWAPIN,
	SHMEM_STAT_PATH_COLLAPSE,
	SHMEM_STAT_PATH_OTHER,
	SHMEM_STAT_NR_PATHS,
};

/*
 * Mirrors enum shmem_fallback_reason; ERROR is the fallback mode's reason
 * when it only sees the error an allocation attempt returned.
 */
enum shmem_stat_fallback {
	SHMEM_STAT_FB_ALLOC,
	SHMEM_STAT_FB_CHARGE,
	SHMEM_STAT_FB_RACED,
	SHMEM_STAT_FB_NOSPC,
	SHMEM_STAT_FB_UNSUITABLE,
	SHMEM_STAT_FB_ERROR,
	SHMEM_STAT_NR_FALLBACKS,
};

/* Mirrors enum shmem_split_reason. */
enum shmem_stat_split {
	SHMEM_STAT_SPLIT_SHRINK,
	SHMEM_STAT_SPLIT_TRUNCATE,
	SHMEM_STAT_SPLIT_SWAPOUT,
	SHMEM_STAT_NR_SPLITS,
};

/* Mirrors enum shmem_zero_reason. */
enum shmem_stat_zero {
	SHMEM_STAT_ZERO_UNWRITTEN,
	SHMEM_STAT_ZERO_PARTIAL,
	SHMEM_STAT_ZERO_NOMEM,
	SHMEM_STAT_NR_ZEROS,
};

/* Latency histograms, in nanoseconds. */
enum shmem_stat_hist {
	SHMEM_HIST_ALLOC,	/* shmem_alloc_and_add_folio() */
	SHMEM_HIST_WRITE,	/* write(2) calls that allocated */
	SHMEM_HIST_FAULT,	/* page faults that allocated */
	SHMEM_HIST_FALLOC,	/* fallocate(2) calls that allocated */
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
	SHMEM_NR_SIGNALS	= 11,
};

#define SHMEM_SIG_LATENCY (SHMEM_SIG_LAT_ALLOC | SHMEM_SIG_LAT_WRITE | \
			   SHMEM_SIG_LAT_FAULT | SHMEM_SIG_LAT_FALLOC)

/* allocs map: allocations by file system, order and path */
struct shmem_alloc_key {
	__u32 dev;		/* kernel dev_t: major << 20 | minor */
	__u16 order;
	__u16 path;		/* enum shmem_stat_path */
};

struct shmem_file_key {
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

/* One row of the files, procs and cgroups maps. */
struct shmem_row {
	char name[SHMEM_NAME_LEN];	/* dentry name, comm or cgroup name */
	__u64 allocs[SHMEM_NR_ORDERS];
	__u64 fallbacks;
	__u64 splits;
	__u64 partial;		/* large folios that became partly uptodate */
	__u64 zeroed;		/* bytes */
	__u64 alloc_ns;		/* time spent allocating */
	__u64 alloc_calls;	/* timed allocation attempts */
};

struct shmem_fallback_key {
	__u32 order;		/* the order given up */
	__u32 reason;		/* enum shmem_stat_fallback */
};

struct shmem_split_key {
	__u32 order;		/* the order of the folio before */
	__u32 reason;		/* enum shmem_stat_split */
};

struct shmem_split_count {
	__u64 done;
	__u64 failed;
};

struct shmem_blocks {
	__u64 uptodate_events;
	__u64 uptodate_blocks;
	__u64 clear_events;
	__u64 clear_blocks;
	__u64 became_partial;	/* large folio: none -> some blocks uptodate */
	__u64 became_full;	/* large folio: some -> all blocks uptodate */
	__u64 zeroed[SHMEM_STAT_NR_ZEROS];	/* bytes, by reason */
};

struct shmem_hist {
	/* slot n counts values in (2^(n-1), 2^n]; slot 0 counts 0 and 1 */
	__u64 slots[SHMEM_HIST_SLOTS];
	__u64 count;
	__u64 sum;
};

struct shmem_info {
	__u32 signals;		/* enum shmem_signal bits */
	__u32 disabled;		/* signals the user turned off */
	__u32 tracepoints;	/* 1: our trace events, 0: fallback mode */
	__u32 pad;
};

#endif /* SHMEM_STATS_H */
