/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The user-space library behind shmemtop, shmemhist and shmemtrace: load
 * and attach the BPF programs or open pinned maps, read all maps into one
 * snapshot, subtract snapshots, and format them.
 */
#ifndef SHMEMSTAT_H
#define SHMEMSTAT_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include <json-c/json.h>
#include "shmem_stats.h"

#define SHMEM_PIN_DEFAULT "/sys/fs/bpf/shmem"
#define SHMEM_MTHP_DIR "/sys/kernel/mm/transparent_hugepage"

/* File descriptors of the maps, whoever loaded them. */
struct shmem_maps {
	int allocs, files, procs, cgroups, fallbacks, splits, blocks, hists, info;
};

enum shmem_row_kind {
	SHMEM_ROWS_FILES,
	SHMEM_ROWS_PROCS,
	SHMEM_ROWS_CGROUPS,
	SHMEM_NR_ROW_KINDS,
};

struct shmem_row_entry {
	__u64 id;		/* inode number, tgid or cgroup id */
	__u32 dev;		/* files only: kernel dev_t */
	struct shmem_row row;
};

/* The kernel's own per-size counters, from sysfs (any kernel with mTHP). */
struct shmem_mthp {
	unsigned int kb;
	__u64 alloc, fallback, fallback_charge, split, split_failed;
};

/* A Shmem field of /proc/meminfo */
struct shmem_meminfo {
	char name[24];
	__u64 kb;
};

#define SHMEM_MAX_MEMINFO 8

struct shmem_alloc_entry {
	struct shmem_alloc_key key;
	__u64 count;
};

struct shmem_snapshot {
	double time;		/* CLOCK_MONOTONIC seconds */
	struct shmem_info info;
	struct shmem_alloc_entry *allocs;	/* by device, order, path */
	size_t nr_allocs;
	struct shmem_row_entry *rows[SHMEM_NR_ROW_KINDS];
	size_t nr_rows[SHMEM_NR_ROW_KINDS];
	__u64 fallbacks[SHMEM_NR_ORDERS][SHMEM_STAT_NR_FALLBACKS];
	struct shmem_split_count splits[SHMEM_NR_ORDERS][SHMEM_STAT_NR_SPLITS];
	struct shmem_blocks blocks;
	struct shmem_hist hists[SHMEM_NR_HISTS];
	struct shmem_mthp mthp[SHMEM_NR_ORDERS];
	size_t nr_mthp;
	struct shmem_meminfo meminfo[SHMEM_MAX_MEMINFO];	/* gauges */
	size_t nr_meminfo;
};

/* names of enum values, for tables, JSON and metrics */
const char *shmem_path_name(unsigned int path);
const char *shmem_fallback_name(unsigned int reason);
const char *shmem_split_name(unsigned int reason);
const char *shmem_zero_name(unsigned int reason);
const char *shmem_hist_name(unsigned int hist);
const char *shmem_row_kind_name(enum shmem_row_kind kind);
/* metric label of signal bit @i: "splits", "alloc_latency" */
const char *shmem_signal_name(unsigned int i);
/* "4K", "64K", "2M" */
void shmem_order_size(unsigned int order, char *buf, size_t len);
/* "0:45": the kernel's dev_t encoding */
void shmem_dev_name(__u32 dev, char *buf, size_t len);

/*
 * What the loaded programs cannot see on this kernel, as one line; the
 * signals the user turned off are not missing.
 */
void shmem_missing_signals(const struct shmem_info *info, char *buf, size_t len);
json_object *shmem_missing_json(const struct shmem_info *info);

/* CLOCK_MONOTONIC in seconds */
double shmem_now(void);

/* Read every map and the sysfs mTHP counters into @s. */
int shmem_snapshot_read(const struct shmem_maps *maps, const char *mthp_dir,
			struct shmem_snapshot *s);
int shmem_mthp_read(const char *dir, struct shmem_snapshot *s);
/* The fields of @path (/proc/meminfo) that start with "Shmem" */
int shmem_meminfo_read(const char *path, struct shmem_snapshot *s);
/* @out = @now - @prev; rows absent from @prev count from zero. */
int shmem_snapshot_delta(const struct shmem_snapshot *now,
			 const struct shmem_snapshot *prev,
			 struct shmem_snapshot *out);
void shmem_snapshot_free(struct shmem_snapshot *s);

__u64 shmem_row_allocs(const struct shmem_row *row);
__u64 shmem_row_large(const struct shmem_row *row);
/* Anything counted in the row: allocations, fallbacks, splits, ... */
bool shmem_row_active(const struct shmem_row *row);
/* Allocations of @order summed over devices and paths. */
__u64 shmem_order_allocs(const struct shmem_snapshot *s, unsigned int order);

enum shmem_sort {
	SHMEM_SORT_ALLOCS,
	SHMEM_SORT_LARGE,
	SHMEM_SORT_FALLBACKS,
	SHMEM_SORT_SPLITS,
	SHMEM_SORT_PARTIAL,
	SHMEM_SORT_LATENCY,
	SHMEM_SORT_NAME,
	SHMEM_NR_SORTS,
};
const char *shmem_sort_name(enum shmem_sort sort);
int shmem_sort_parse(const char *name, enum shmem_sort *sort);
/* Sort the rows of @kind in place, busiest first (names: A to Z). */
void shmem_rows_sort(struct shmem_snapshot *s, enum shmem_row_kind kind,
		     enum shmem_sort sort);

/* One JSON object for an interval's snapshot (delta) of @secs seconds. */
json_object *shmem_snapshot_json(const struct shmem_snapshot *s, double secs,
				 size_t max_rows);

/* Mount points by device, for metric labels (metrics.c) */
#define SHMEM_MAX_MOUNTS 256

struct shmem_mounts {
	__u32 dev[SHMEM_MAX_MOUNTS];	/* kernel dev_t encoding */
	char *path[SHMEM_MAX_MOUNTS];
	size_t nr;
};

int shmem_mounts_read(const char *mountinfo, struct shmem_mounts *m);
void shmem_mounts_free(struct shmem_mounts *m);
/*
 * The Prometheus text exposition of @s (cumulative values), with per-file
 * series for the @top_files files with the most allocations (0: none).
 * Sorts @s's file rows.  malloc()ed; NULL when out of memory.
 */
char *shmem_metrics_text(struct shmem_snapshot *s,
			 const struct shmem_mounts *mounts, size_t top_files);

/* libbpf-tools style log2 histogram; @ms divides nanoseconds by 10^6. */
void shmem_print_log2(FILE *out, const struct shmem_hist *h, bool ms);

/* Parse a whole decimal number in [min, max]; -1 on anything else. */
int shmem_parse_long(const char *s, long min, long max, long *out);

/* Loading, attaching and pinning: tracer.c */
struct shmem_bpf;

struct shmem_tracer {
	struct shmem_bpf *skel;
	struct shmem_maps maps;
	struct shmem_info info;
};

struct shmem_tracer_opts {
	pid_t pid;		/* 0: every process */
	const char *cgroup;	/* cgroup v2 directory, or NULL */
	bool no_latency;	/* leave the timing programs out */
	bool verbose;		/* libbpf's messages */
};

/*
 * Open, configure for this kernel, load and attach.  On failure prints one
 * line naming the problem to stderr, leaves nothing loaded, returns -1.
 */
int shmem_tracer_start(struct shmem_tracer *t,
		       const struct shmem_tracer_opts *opts, const char *prog);
void shmem_tracer_stop(struct shmem_tracer *t);
/* Pin maps and links under @dir; on failure nothing stays pinned. */
int shmem_tracer_pin(struct shmem_tracer *t, const char *dir, const char *prog);
/* Remove what shmem_tracer_pin() pinned under @dir, and @dir. */
int shmem_unpin(const char *dir, const char *prog);
int shmem_maps_open_pinned(const char *dir, struct shmem_maps *maps,
			   const char *prog);
void shmem_maps_close(struct shmem_maps *maps);
/* Read the info map: the signals of whoever loaded the maps. */
int shmem_info_read(const struct shmem_maps *maps, struct shmem_info *info);

/* Common to the tools: the maps live or pinned, and a workload to run. */
struct shmem_source {
	struct shmem_tracer tracer;
	struct shmem_maps pinned;
	const struct shmem_maps *maps;
	bool live;
};

int shmem_source_open(struct shmem_source *src, const char *pinned_dir,
		      const struct shmem_tracer_opts *opts, const char *prog);
/*
 * shmem_source_open() with shmem_args, then the baseline a front end's
 * first report counts from: empty maps, the info map, and the kernel's
 * mTHP counters now (left empty with @mthp_since_boot).  Unless @quiet,
 * says in one line what this kernel does not let us see.
 */
int shmem_source_begin(struct shmem_source *src, struct shmem_snapshot *base,
		       bool mthp_since_boot, bool quiet, const char *prog);
void shmem_source_close(struct shmem_source *src);

/*
 * Options every loader shares (-p, -c, -L, -v) and the readers' --pinned,
 * as argp children: the tools list them in their struct argp.
 */
struct shmem_args {
	struct shmem_tracer_opts tracer;
	const char *pinned;
};

extern struct shmem_args shmem_args;
extern const struct argp shmem_loader_argp;
extern const struct argp shmem_pinned_argp;

/* Command line (cli.c): errors are one line naming the problem. */
int shmem_arg_error(struct argp_state *state, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Call from a parser's default case: -h/--help and unknown options. */
error_t shmem_parse_common(int key, struct argp_state *state);
int shmem_parse_args(const struct argp *argp, int argc, char **argv);

/*
 * Split argv at "--": what follows is a command the tool runs once it
 * traces, and stops when it exits.  Returns the command or NULL.
 */
char **shmem_split_command(int *argc, char **argv);
/* Start @cmd; -1 with a one-line error if it cannot. */
pid_t shmem_command_start(char **cmd, const char *prog);
/* 1 with a one-line message if the command's wait @status is a failure */
int shmem_command_failed(int status, const char *cmd, const char *prog);
/*
 * Wait until @secs pass, the command exits, or a signal (or, with @fd >= 0,
 * input on @fd) arrives.  Returns 1 when the command has exited.
 */
int shmem_wait(double secs, pid_t child, int fd, int *status);
extern volatile int shmem_exiting;
void shmem_handle_signals(void);

#endif /* SHMEMSTAT_H */
