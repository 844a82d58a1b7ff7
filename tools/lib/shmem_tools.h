/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The user-space library behind shmemtop, shmemhist and shmemtrace: load
 * and attach the BPF programs or open pinned maps, read all maps into one
 * snapshot, subtract snapshots, and format them.
 */
#ifndef SHMEM_TOOLS_H
#define SHMEM_TOOLS_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sysexits.h>		/* EX_USAGE: the tools' usage errors, as argp's */
#include <sys/types.h>
#include <linux/types.h>
#include <json-c/json.h>
#include "shmem_map_types.h"

#define SHMEM_PIN_DEFAULT "/sys/fs/bpf/shmem"
#define SHMEM_MTHP_DIR "/sys/kernel/mm/transparent_hugepage"

/*
 * The maps a reader needs, in one list (maps.c): the loader pins these,
 * readers open them by name and check their shape before trusting them.
 */
enum shmem_map_id {
	SHMEM_MAP_TOTALS,
	SHMEM_MAP_HISTS,
	SHMEM_MAP_FILES,	/* the row maps, in enum shmem_row_kind order */
	SHMEM_MAP_PROCS,
	SHMEM_MAP_CGROUPS,
	SHMEM_MAP_FSES,
	SHMEM_MAP_INFO,
	SHMEM_NR_MAPS,
};

struct shmem_map_desc {
	const char *name;
	__u32 type;		/* enum bpf_map_type */
	__u32 key_size;
	__u32 value_size;	/* per CPU for per-CPU maps */
};

extern const struct shmem_map_desc shmem_map_descs[SHMEM_NR_MAPS];

struct bpf_object;
struct shmem_maps;

/* The fds of a loaded object's maps */
int shmem_maps_from_object(struct bpf_object *obj, struct shmem_maps *maps);
/* Pin the list's maps of @obj under @dir; @path: the one that failed */
int shmem_maps_pin(struct bpf_object *obj, const char *dir, char *path,
		   size_t len);
/* Is @name under @dir one of the list's maps, of its shape? */
bool shmem_map_pinned_here(const char *dir, const char *name);
/* Element @key of a per-CPU array of __u64 counters, summed over CPUs */
int shmem_percpu_sum(int fd, __u32 key, void *out, size_t size);
/* Calls @fn for every element of a hash map, read in batches. */
int shmem_map_for_each(int fd, size_t key_size, size_t value_size,
		       int (*fn)(const void *key, const void *value, void *arg),
		       void *arg);

/* File descriptors of the maps, whoever loaded them */
struct shmem_maps {
	int fd[SHMEM_NR_MAPS];
	__u32 max_entries[SHMEM_NR_MAPS];
	/* the most rows this reader has known dropped, per row map */
	__u64 dropped[SHMEM_NR_ROW_KINDS];
};

/* The row map of @kind */
#define SHMEM_ROW_MAP(kind) (SHMEM_MAP_FILES + (kind))

struct shmem_row_entry {
	__u64 id;		/* inode number, tgid, cgroup id or dev_t */
	__u64 start_ns;		/* procs: when the process started */
	__u32 dev;		/* files: kernel dev_t */
	/* the row's name as valid UTF-8, control characters escaped */
	char name[SHMEM_NAME_LEN * 4];
	struct shmem_row row;
	/* the row's folios partial now (shmem_partial_now()), not a delta */
	__u64 partial_now;
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

struct shmem_snapshot {
	double time;		/* CLOCK_MONOTONIC seconds */
	struct shmem_info info;
	struct shmem_totals totals;		/* summed over CPUs */
	struct shmem_hist hists[SHMEM_NR_HISTS];	/* summed over CPUs */
	struct shmem_row_entry *rows[SHMEM_NR_ROW_KINDS];
	size_t nr_rows[SHMEM_NR_ROW_KINDS];
	/* rows the LRU maps dropped, or could not insert, so far */
	__u64 dropped[SHMEM_NR_ROW_KINDS];
	__u32 capacity[SHMEM_NR_ROW_KINDS];	/* entries of each row map */
	struct shmem_mthp mthp[SHMEM_NR_ORDERS];
	size_t nr_mthp;
	/* the mTHP counters count since boot, not since the baseline */
	bool mthp_since_boot;
	struct shmem_meminfo meminfo[SHMEM_MAX_MEMINFO];	/* gauges */
	size_t nr_meminfo;
	/* large folios partial now, over every row (a gauge, not a delta) */
	__u64 partial_now;
	/* for the JSON's file and file-system rows: their mounts, or NULL */
	const struct shmem_mounts *mounts;
};

/*
 * Large folios partly uptodate now: those that became partial less those
 * that became full since the maps were loaded; never negative, since a
 * folio partial before then may become full while traced.  Folios freed
 * while partial still count.
 */
static inline __u64 shmem_partial_now(__u64 became_partial, __u64 became_full)
{
	return became_partial > became_full ? became_partial - became_full : 0;
}

/* names of enum values, for tables, JSON and metrics */
const char *shmem_path_name(unsigned int path);
const char *shmem_fallback_name(unsigned int reason);
const char *shmem_split_name(unsigned int reason);
const char *shmem_zero_name(unsigned int reason);
const char *shmem_hist_name(unsigned int hist);
const char *shmem_row_kind_name(enum shmem_row_kind kind);
/* metric label of signal bit @i: "splits", "alloc_latency" */
const char *shmem_signal_name(unsigned int i);
/* "4K", "64K", "2M": the size of a folio of @order, or of @kb */
void shmem_order_size(unsigned int order, char *buf, size_t len);
void shmem_size_name(unsigned long kb, char *buf, size_t len);
/* "0:45": the kernel's dev_t encoding */
void shmem_dev_name(__u32 dev, char *buf, size_t len);
/*
 * @in (at most @len bytes, or to its NUL) as valid UTF-8 in @out: bytes
 * that are not UTF-8, control characters and backslash escaped as \xNN
 * and \\; with @truncated (@in was cut to @len by the kernel) an
 * incomplete sequence at its end dropped.  @out holds 4 * len + 1.
 */
void shmem_clean_name(const char *in, size_t len, bool truncated, char *out);

/*
 * What the loaded programs cannot see on this kernel, as one line; the
 * signals the user turned off are not missing.
 */
void shmem_missing_signals(const struct shmem_info *info, char *buf, size_t len);
json_object *shmem_missing_json(const struct shmem_info *info);
/* What the user did not ask for (latency without --latency): its zeros mean nothing */
json_object *shmem_not_traced_json(const struct shmem_info *info);

/* CLOCK_MONOTONIC in seconds */
double shmem_now(void);

/*
 * Read every map and the sysfs mTHP counters into @s; rows of the maps
 * listed in s->info.rows.
 */
int shmem_snapshot_read(struct shmem_maps *maps, const char *mthp_dir,
			struct shmem_snapshot *s);
int shmem_mthp_read(const char *dir, struct shmem_snapshot *s);
/* The fields of @path (/proc/meminfo) that start with "Shmem" */
int shmem_meminfo_read(const char *path, struct shmem_snapshot *s);
/*
 * @out = @now - @prev; rows absent from @prev, or dropped and inserted
 * again since (a count went down), count from zero.  O(n log n).
 */
int shmem_snapshot_delta(const struct shmem_snapshot *now,
			 const struct shmem_snapshot *prev,
			 struct shmem_snapshot *out);
/*
 * Add the interval @d (from shmem_snapshot_delta()) to @sum, the totals
 * since a front end began (start from an empty one): counters add, rows
 * by key, so a row the LRU map dropped keeps what it had counted; gauges
 * (partial now, meminfo, the maps' state) and names are @d's.  No count
 * of @sum ever goes down.  It keeps every row seen.
 */
int shmem_snapshot_add(struct shmem_snapshot *sum,
		       const struct shmem_snapshot *d);
void shmem_snapshot_free(struct shmem_snapshot *s);

__u64 shmem_row_allocs(const struct shmem_row *row);
__u64 shmem_row_large(const struct shmem_row *row);
/* Allocations whose order the append ramp chose, over every order */
__u64 shmem_row_ramped(const struct shmem_row *row);
/* Mean time per allocation attempt, in ns (0 without latency) */
double shmem_row_latency(const struct shmem_row *row);
/* Anything counted in the row: allocations, fallbacks, splits, ... */
bool shmem_row_active(const struct shmem_row *row);
/* Allocations of @order summed over paths. */
__u64 shmem_order_allocs(const struct shmem_snapshot *s, unsigned int order);
/* Allocations of @path summed over orders. */
__u64 shmem_path_allocs(const struct shmem_snapshot *s, unsigned int path);
/*
 * A one-line note for the text reports when most of @s's folios were
 * allocated by fallocate(2): the size of a later write did not choose
 * theirs (fio fallocates its files first by default); NULL otherwise
 */
const char *shmem_fallocate_note(const struct shmem_snapshot *s);
/*
 * Values counted in slots (their sum is the _count and +Inf bucket of the
 * histogram: the slots are its only counts, so they always agree).
 */
__u64 shmem_hist_count(const struct shmem_hist *h);

enum shmem_sort {
	SHMEM_SORT_ALLOCS,
	SHMEM_SORT_LARGE,
	SHMEM_SORT_FALLBACKS,
	SHMEM_SORT_SPLITS,
	SHMEM_SORT_PARTIAL,
	SHMEM_SORT_LATENCY,
	SHMEM_SORT_RAMP,	/* allocations whose order the append ramp chose */
	SHMEM_SORT_NAME,
	SHMEM_NR_SORTS,
};
const char *shmem_sort_name(enum shmem_sort sort);
int shmem_sort_parse(const char *name, enum shmem_sort *sort);
/* Sort the rows of @kind in place, busiest first (names: A to Z). */
void shmem_rows_sort(struct shmem_snapshot *s, enum shmem_row_kind kind,
		     enum shmem_sort sort);

/*
 * One JSON object for an interval's snapshot (delta) of @secs seconds,
 * with the @max_rows busiest rows of each kind (0: no rows listed)
 */
json_object *shmem_snapshot_json(const struct shmem_snapshot *s, double secs,
				 size_t max_rows);
/* It on one line of stdout, with the time (Unix seconds) */
void shmem_print_json(const struct shmem_snapshot *s, double secs,
		      size_t max_rows);

/* Mount points by device, for metric labels and rows (mounts.c) */
struct shmem_mount {
	__u32 dev;		/* kernel dev_t encoding */
	char *path;		/* unescaped, then made valid UTF-8 */
	char fstype[32];
	char options[256];	/* the super block's: size=, huge=, ... */
};

struct shmem_mounts {
	struct shmem_mount *mounts;	/* sorted by dev */
	size_t nr;
	/* the kernel's internal shm mount (SysV shm, memfd); 0: unknown */
	__u32 internal_dev;
};

/* What rows on the internal shm mount name as their mount */
#define SHMEM_INTERNAL_MOUNT "internal shm (SysV shm, memfd)"

/* Every mount of @mountinfo; a device is named by its first mount. */
int shmem_mounts_read(const char *mountinfo, struct shmem_mounts *m);
/* The mount point of @dev, or "" */
const char *shmem_mount_of(const struct shmem_mounts *m, __u32 dev);
/* The first mount of @dev, or NULL (@m may be NULL) */
const struct shmem_mount *shmem_mount_find(const struct shmem_mounts *m,
					   __u32 dev);
/* shmem_mount_of(), or SHMEM_INTERNAL_MOUNT for the internal shm mount */
const char *shmem_mount_name(const struct shmem_mounts *m, __u32 dev);
/* The internal shm mount's device, from a memfd; 0 if there is none */
__u32 shmem_internal_dev(void);
void shmem_mounts_free(struct shmem_mounts *m);
/*
 * The exporter's per-file series (-f N, file_series.c): at most @max
 * files, each a file system and a file name, counting from the scrape
 * before the one that gave it its series; what none counts in an "other"
 * series, so that they add up to the totals.  A file that allocated
 * nothing for @idle seconds may lose its series to another.  No value
 * ever goes down.
 */
struct shmem_file_series_entry {
	__u32 dev;
	char name[SHMEM_NAME_LEN * 4];
	__u64 allocs[SHMEM_NR_ORDERS];
	__u64 ramp_allocs[SHMEM_NR_ORDERS];
	double last_alloc;	/* the snapshot time it last allocated */
};

struct shmem_file_series {
	size_t max;
	double idle;
	struct shmem_file_series_entry *files;	/* sorted by dev, name */
	size_t nr;
	__u64 other[SHMEM_NR_ORDERS];
	__u64 other_ramp[SHMEM_NR_ORDERS];
	/* the last update's file rows: what grew since */
	struct shmem_snapshot prev;
};

/*
 * The "other" series' name label; it has no device or mountpoint label,
 * which tells it from a file of that name
 */
#define SHMEM_OTHER_FILES "(other files)"

void shmem_file_series_init(struct shmem_file_series *fs, size_t max,
			    double idle);
/* Add what @now's file rows counted since the last update */
int shmem_file_series_update(struct shmem_file_series *fs,
			     const struct shmem_snapshot *now);
void shmem_file_series_free(struct shmem_file_series *fs);

/*
 * The Prometheus text exposition of @s (cumulative values): per file
 * system from its rows, and @files' per-file series (NULL: none).
 * malloc()ed; NULL when out of memory.
 */
char *shmem_metrics_text(const struct shmem_snapshot *s,
			 const struct shmem_mounts *mounts,
			 const struct shmem_file_series *files);

/* The process_* metrics of the Prometheus client libraries (process.c) */
struct shmem_process {
	double cpu_seconds;	/* user and system */
	__u64 virtual_bytes;
	__u64 resident_bytes;
	__u64 open_fds;		/* not counting the one that counted them */
	__u64 max_fds;		/* the soft limit */
};

/*
 * When the process of @self (/proc/self) started, in Unix time: its start
 * in clock ticks after boot and the boot time in @proc_stat (/proc/stat).
 * Read it once: the boot time moves when the clock is set.
 */
int shmem_process_start_time(const char *self, const char *proc_stat,
			     double *start_time);
/* Its CPU time, memory and file descriptors now, from @self */
int shmem_process_read(const char *self, struct shmem_process *p);
void shmem_process_print(FILE *out, const struct shmem_process *p,
			 double start_time);

/*
 * libbpf-tools style log2 histogram; with @ms the same slots, their bounds
 * in milliseconds.
 */
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
	bool latency;		/* allocation and allocated-to-uptodate times */
	bool call_latency;	/* write, fault, fallocate times (fentry/fexit) */
	__u32 rows;		/* row maps to keep: bits of enum shmem_row_kind */
	__u32 entries;		/* entries of each row map; 0: the defaults */
	bool verbose;		/* libbpf's messages */
	const char *retarget;	/* the tests' --test-retarget, or NULL */
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
/*
 * Remove what shmem_tracer_pin() pinned under @dir, and @dir; anything
 * else there (or @dir not on bpffs): one line, nothing removed.
 */
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
	struct shmem_maps *maps;
	bool live;
	/* pinned: an inotify watch on the pins' directory, set up as root */
	int pin_watch;
};

int shmem_source_open(struct shmem_source *src, const char *pinned_dir,
		      const struct shmem_tracer_opts *opts, const char *prog);
/*
 * shmem_source_open() with shmem_args, then the baseline a front end's
 * first report counts from: empty maps when they were loaded or pinned,
 * the info map, and the kernel's mTHP counters now (left empty, so they
 * count since boot, with @mthp_since_boot or pinned maps, whose
 * counts began before us).  Unless @quiet,
 * says in one line what this kernel does not let us see.
 */
int shmem_source_begin(struct shmem_source *src, struct shmem_snapshot *base,
		       bool mthp_since_boot, bool quiet, const char *prog);
/*
 * Pinned maps: fail in one line once the pins under --pinned are not the
 * maps we read (shmemtrace stop/start): their counts have ended.
 */
int shmem_source_check(const struct shmem_source *src, const char *prog);
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
/* --version, for every tool */
extern const struct argp shmem_version_argp;
/* what it prints: git describe of the build, or "unknown" */
extern const char shmem_version[];

/* Command line (cli.c): errors are one line naming the problem. */
int shmem_arg_error(struct argp_state *state, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * -i SECONDS, -n COUNT and the positional INTERVAL [COUNT] (@key is 'i',
 * 'n' or ARGP_KEY_ARG), alike in every tool; one-line errors.
 */
int shmem_parse_interval_count(int key, char *arg, struct argp_state *state,
			       double *interval, long *count);
/* Call from a parser's default case: -h/--help and unknown options. */
error_t shmem_parse_common(int key, struct argp_state *state);
int shmem_parse_args(const struct argp *argp, int argc, char **argv);

/*
 * Split argv at "--": what follows is a command the tool runs once it
 * traces, and stops when it exits.  Returns the command or NULL.
 */
char **shmem_split_command(int *argc, char **argv);
/*
 * Start @cmd, its stdout on our stderr (the reports alone are on stdout);
 * -1 with a one-line error if it cannot.
 */
pid_t shmem_command_start(char **cmd, const char *prog);
/*
 * The command's exit status (128 + the signal that killed it), as perf
 * and time give it, with a one-line message when not 0
 */
int shmem_command_failed(int status, const char *cmd, const char *prog);
/*
 * Wait until @secs pass, the command exits, or a signal (or, with @fd >= 0,
 * input on @fd) arrives.  Returns 1 when the command has exited.
 */
int shmem_wait(double secs, pid_t child, int fd, int *status);
extern volatile int shmem_exiting;
void shmem_handle_signals(void);

#endif /* SHMEM_TOOLS_H */
