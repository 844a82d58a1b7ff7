// SPDX-License-Identifier: GPL-2.0
/*
 * shmem_fuzz: seeded random operations on one tmpfs file, in a random
 * environment (mount options, shmem_enabled, per-size mTHP settings, a
 * memory cgroup limit, reclaim, swap, compaction), each step checked
 * against a model of the file.  Runs as root in the guest.
 *
 *   shmem_fuzz [-s SEED] [-n OPS] [-c OPS_PER_CASE] [-m MOUNT] [-S SHRINKS]
 *              [-x OP,...] [-R FILE] [-l LOG] [-q]
 *   shmem_fuzz --case CASE [--ops 'OP OP ...'] [-l LOG] [-v]
 *
 * A run is a list of cases; a case is an environment and a list of
 * operations, both derived from the case number.  A failing case is
 * shrunk (delta debugging over its operations; the first failure of each
 * kind per mount, at most SHRINKS of them, default 4) and printed as a
 * command line that reruns it.  -l writes every observable result, for comparing
 * a run on the stock kernel with one on the series (tests/fuzz/compare).
 * Ends with "N passed, N failed" (one per case).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KB 1024L
#define MB (1024 * KB)
#define PAGE 4096L
#define PMD (2 * MB)
#define MAX_EXTENT (6 * MB)
#define MAX_PIPE (256 * KB)
#define MAX_OPS 100000
#define CASE_TIMEOUT 300

#define ROOT "/tmp/shmem-fuzz"
#define MNT ROOT "/mnt"
#define FILE_PATH MNT "/file"
#define MEMCG "/sys/fs/cgroup/shmem-fuzz"
#define THP "/sys/kernel/mm/transparent_hugepage"

/* ---- environment ---- */

static const char *const mounts[] = {
	"", "huge=always", "huge=within_size", "huge=advise",
	"large_folios", "large_folios,huge=always", "large_folios,huge=within_size",
	"large_folios,huge=advise",
};
#define NR_MOUNTS 8
static const char *const enabled_values[] = { "never", "always", "within_size", "advise",
					       "deny", "force" };
static const char *const mthp_values[] = { "never", "always", "within_size", "advise", "inherit" };
/*
 * Tight limits, a third of the cases: swapping to zram is slow under
 * emulation.  At 1M, one case in seven was OOM-killed (what a pipe,
 * a mapping, page tables and slab hold cannot be reclaimed).
 */
static const long memcg_limits[] = { 0, 0, 0, 0, 2 * MB, 3 * MB };
static const long extents[] = { 64 * KB, 512 * KB, 2 * MB + 64 * KB, 4 * MB, MAX_EXTENT };

#define NR_MTHP_SIZES 9		/* 8kB .. 2048kB */

struct env {
	int mount;		/* index into mounts[] */
	int enabled;		/* shmem_enabled, index into enabled_values[] */
	int mthp[NR_MTHP_SIZES];
	long memcg_max;		/* 0: no limit */
	long extent;		/* operations stay below this offset */
	bool compaction;	/* the op list may compact memory */
};

static bool stock;		/* no large_folios option: expect stock 6.12 */
static bool quiet, verbose;

/* ---- small helpers ---- */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* FNV-1a over 8-byte words (and the bytes left over): logged, not stored */
static uint64_t fnv(const unsigned char *p, long n)
{
	uint64_t h = 0xcbf29ce484222325ULL, w;
	long i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ULL;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}


static void bail(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(2);
}

/*
 * What writes write: a window into one pattern, made once, that is never
 * zero (a stray zero or a misplaced byte shows).  Shared with every case,
 * read only: no copying, nothing charged to a case's memory cgroup.
 */
#define PATTERN_SHIFTS (64 * KB)
static unsigned char *pattern;

static void make_pattern(void)
{
	long len = PATTERN_SHIFTS + MAX_EXTENT + PAGE;

	pattern = malloc(len);
	if (!pattern)
		bail("malloc");
	for (long i = 0; i < len; i++)
		pattern[i] = (unsigned char)((i * 2654435761u) >> 24) | 1;
}

static const unsigned char *data_for(uint32_t seed)
{
	return pattern + seed % PATTERN_SHIFTS;
}

static int write_file(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY), r = 0;

	if (fd < 0 || write(fd, value, strlen(value)) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	return r;
}

static void must_write_file(const char *path, const char *value)
{
	if (write_file(path, value))
		bail(path);
}

static long read_long(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) < 0)
		bail(path);
	close(fd);
	return atol(buf);
}

static long meminfo_shmem_kb(void)
{
	char line[256];
	long v = -1;
	FILE *f;

	/* Fold the per-CPU counters first, so that the value is exact */
	must_write_file("/proc/sys/vm/stat_refresh", "1");
	f = fopen("/proc/meminfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Shmem:", 6))
			v = atol(line + 6);
	if (f)
		fclose(f);
	return v;
}

static long mthp_kb(int i)
{
	return 8L << i;
}

/* Large shmem folios allocated so far, all sizes */
static long large_allocs(void)
{
	char path[128];
	long n = 0;

	for (int i = 0; i < NR_MTHP_SIZES; i++) {
		snprintf(path, sizeof(path), THP "/hugepages-%ldkB/stats/shmem_alloc", mthp_kb(i));
		n += read_long(path);
	}
	return n;
}

static void env_from_case(uint64_t cs, struct env *e)
{
	uint64_t s = cs;

	e->mount = cs % NR_MOUNTS;
	e->enabled = splitmix(&s) % 3 ? 0 : splitmix(&s) % 6;
	for (int i = 0; i < NR_MTHP_SIZES; i++) {
		e->mthp[i] = splitmix(&s) % 5;
		/* force wants PMD size, and no size below, to inherit it */
		if (!strcmp(enabled_values[e->enabled], "force"))
			e->mthp[i] = i == NR_MTHP_SIZES - 1 ? 4 :
				     !strcmp(mthp_values[e->mthp[i]], "inherit") ? 0 : e->mthp[i];
	}
	e->memcg_max = memcg_limits[splitmix(&s) % 6];
	/* Under a limit, a file of a few times the limit is pressure enough */
	e->extent = extents[splitmix(&s) % (e->memcg_max ? 3 : 5)];
	e->compaction = splitmix(&s) % 4 == 0;
}

static bool env_large_folios(const struct env *e)
{
	return strstr(mounts[e->mount], "large_folios");
}

/*
 * May a fault, write or fallocate get a PMD-sized folio, so that pages
 * around the ones touched are allocated too?  (large_folios alone sizes
 * folios to fit inside the request.)
 */
static bool env_pmd_folios(const struct env *e)
{
	const char *en = enabled_values[e->enabled];

	if (!strcmp(en, "deny"))
		return false;
	return !strcmp(en, "force") || strstr(mounts[e->mount], "huge=");
}

/* May tmpfs allocate any large folio here at all? */
static bool env_large_allowed(const struct env *e)
{
	return env_pmd_folios(e) ||
	       (env_large_folios(e) && strcmp(enabled_values[e->enabled], "deny"));
}

static void env_describe(const struct env *e, char *buf, size_t len)
{
	int n = snprintf(buf, len, "mount=%s shmem_enabled=%s memcg=%s%ldK extent=%ldK%s mthp=",
			 *mounts[e->mount] ? mounts[e->mount] : "default",
			 enabled_values[e->enabled], e->memcg_max ? "" : "none/",
			 e->memcg_max / KB, e->extent / KB, e->compaction ? " compaction" : "");

	for (int i = 0; i < NR_MTHP_SIZES && n < (int)len; i++)
		n += snprintf(buf + n, len - n, "%s%c", i ? "," : "", mthp_values[e->mthp[i]][0]);
}

/* The mount options this kernel gets: stock 6.12 has no large_folios */
static void env_mount_options(const struct env *e, char *buf, size_t len)
{
	const char *m = mounts[e->mount];

	if (stock && !strncmp(m, "large_folios", 12))
		m += m[12] == ',' ? 13 : 12;
	snprintf(buf, len, "%s", m);
}

static void env_apply(const struct env *e)
{
	char path[128], opts[128];

	/* never first: force and inherit below PMD size exclude each other */
	must_write_file(THP "/shmem_enabled", "never");
	for (int i = 0; i < NR_MTHP_SIZES; i++) {
		snprintf(path, sizeof(path), THP "/hugepages-%ldkB/shmem_enabled", mthp_kb(i));
		must_write_file(path, mthp_values[e->mthp[i]]);
	}
	must_write_file(THP "/shmem_enabled", enabled_values[e->enabled]);
	umount2(MNT, MNT_DETACH);
	mkdir(ROOT, 0755);
	mkdir(MNT, 0755);
	env_mount_options(e, opts, sizeof(opts));
	if (mount("tmpfs", MNT, "tmpfs", 0, opts))
		bail(opts);
	rmdir(MEMCG);
	if (mkdir(MEMCG, 0755))
		bail(MEMCG);
	if (e->memcg_max) {
		snprintf(opts, sizeof(opts), "%ld", e->memcg_max);
		must_write_file(MEMCG "/memory.max", opts);
	}
}

static void env_teardown(void)
{
	unlink(FILE_PATH);
	if (umount2(MNT, 0))
		bail("umount");
	if (rmdir(MEMCG))
		bail("rmdir " MEMCG);
}

/* ---- operations ---- */

enum op_type {
	OP_WRITE, OP_PWRITEV, OP_FALLOC, OP_FALLOC_KEEP, OP_PUNCH, OP_TRUNCATE, OP_READ,
	OP_SPLICE, OP_SPLICE_HOLD, OP_PIPE_READ, OP_SENDFILE, OP_COPY, OP_MMAP_READ,
	OP_MMAP_WRITE, OP_MMAP_EOF, OP_MINCORE, OP_SEEK, OP_FSYNC, OP_STAT, OP_CHILD_WRITE,
	OP_RECLAIM, OP_PAGEOUT, OP_COMPACT, OP_WRITE_MAPPED, NR_OP_TYPES
};

static const char *const op_names[NR_OP_TYPES] = {
	"write", "pwritev", "falloc", "falloc_keep", "punch", "truncate", "read",
	"splice", "splice_hold", "pipe_read", "sendfile", "copy", "mmap_read",
	"mmap_write", "mmap_eof", "mincore", "seek", "fsync", "stat", "child_write",
	"reclaim", "pageout", "compact", "write_mapped",
};

/* Relative frequencies (compaction: once in 200 in some cases); -x excludes */
static bool excluded[NR_OP_TYPES];
static int op_weights[NR_OP_TYPES] = {
	[OP_WRITE] = 14, [OP_PWRITEV] = 5, [OP_FALLOC] = 5, [OP_FALLOC_KEEP] = 4,
	[OP_PUNCH] = 9, [OP_TRUNCATE] = 7, [OP_READ] = 4, [OP_SPLICE] = 4,
	[OP_SPLICE_HOLD] = 3, [OP_PIPE_READ] = 3, [OP_SENDFILE] = 3, [OP_COPY] = 4,
	[OP_MMAP_READ] = 3, [OP_MMAP_WRITE] = 5, [OP_MMAP_EOF] = 4, [OP_MINCORE] = 3,
	[OP_SEEK] = 5, [OP_FSYNC] = 1, [OP_STAT] = 1, [OP_CHILD_WRITE] = 2,
	[OP_RECLAIM] = 1, [OP_PAGEOUT] = 1, [OP_COMPACT] = 0, [OP_WRITE_MAPPED] = 3,
};

struct op {
	int type;
	long off, len;
	uint32_t arg;		/* data seed; copy: destination offset */
};

/* A range: unaligned, page-aligned, folio-aligned, near EOF or a PMD boundary */
static void gen_range(uint64_t *s, long extent, long size, long *off, long *len)
{
	unsigned int kind = splitmix(s) % 100;
	long o, l;

	if (kind < 30) {
		l = 1 + splitmix(s) % (16 * KB);
		o = splitmix(s) % extent;
	} else if (kind < 50) {
		l = PAGE * (1 + splitmix(s) % 32);
		o = PAGE * (splitmix(s) % (extent / PAGE));
	} else if (kind < 65) {
		l = PAGE << (splitmix(s) % 10);
		o = l * (splitmix(s) % (extent / l + 1));
	} else if (kind < 72) {
		/* appends: runs of them ramp folio sizes up on large_folios */
		l = 1 + splitmix(s) % (16 * KB);
		o = size;
	} else if (kind < 80) {
		l = 1 + splitmix(s) % (64 * KB);
		o = size + (long)(splitmix(s) % (16 * KB)) - 8 * KB;
	} else if (kind < 90) {
		l = 1 + splitmix(s) % (2 * PMD);
		o = splitmix(s) % extent;
	} else {
		l = 1 + splitmix(s) % (64 * KB);
		o = PMD * (splitmix(s) % (extent / PMD + 1)) + (long)(splitmix(s) % (16 * KB)) - 8 * KB;
	}
	if (o < 0)
		o = 0;
	if (o >= extent)
		o = extent - 1;
	if (l > extent - o)
		l = extent - o;
	*off = o;
	*len = l;
}

/*
 * The operations of a case, from its number alone (not from results), so
 * that both kernels of a differential run execute the same list.  The size
 * is predicted as if every operation succeeded, to aim at EOF.
 */
static int gen_ops(uint64_t cs, const struct env *e, int n, struct op *ops)
{
	uint64_t s = cs ^ 0x5eed5eedULL;
	int total = 0;
	long size = 0;

	for (int t = 0; t < NR_OP_TYPES; t++)
		total += op_weights[t];
	for (int i = 0; i < n; i++) {
		struct op *op = &ops[i];
		int w = splitmix(&s) % total, t = 0;

		while (w >= op_weights[t])
			w -= op_weights[t++];
		if (e->compaction && !excluded[OP_COMPACT] && splitmix(&s) % 200 == 0)
			t = OP_COMPACT;
		op->type = t;
		gen_range(&s, e->extent, size, &op->off, &op->len);
		op->arg = splitmix(&s);
		switch (t) {
		case OP_TRUNCATE:
			op->off = splitmix(&s) % 2 ? op->off : op->off + op->len;
			if (op->off > e->extent)
				op->off = e->extent;
			size = op->off;
			break;
		case OP_COPY:	/* a destination that does not overlap the source */
			op->arg = splitmix(&s) % (e->extent - op->len + 1);
			if (op->arg < op->off + op->len && op->arg + op->len > op->off)
				op->arg = op->off + op->len < e->extent - op->len ?
					  op->off + op->len : 0;
			if (op->arg < op->off + op->len && op->arg + op->len > op->off)
				op->type = OP_WRITE;
			else if (op->arg + op->len > size && op->off < size)
				size = op->arg + op->len;
			break;
		case OP_SPLICE: case OP_SPLICE_HOLD: case OP_SENDFILE:
			if (op->len > (t == OP_SENDFILE ? 64 * KB : MAX_PIPE))
				op->len = t == OP_SENDFILE ? 64 * KB : MAX_PIPE;
			/* What a pipe holds cannot be reclaimed */
			if (e->memcg_max && op->len > e->memcg_max / 8)
				op->len = e->memcg_max / 8;
			break;
		case OP_RECLAIM:
			op->len = 1 + op->len % MB;
			break;
		case OP_FALLOC: case OP_FALLOC_KEEP:
			/*
			 * Reclaim cannot swap out what a fallocate in progress
			 * allocated: more than the limit is an OOM kill
			 */
			if (e->memcg_max && op->len > e->memcg_max / 4)
				op->len = e->memcg_max / 4;
			if (t == OP_FALLOC && op->off + op->len > size)
				size = op->off + op->len;
			break;
		case OP_WRITE: case OP_PWRITEV: case OP_CHILD_WRITE: case OP_WRITE_MAPPED:
			if (op->off + op->len > size)
				size = op->off + op->len;
			break;
		}
	}
	return n;
}

/* The operation called @name; an unknown name ends the run */
static int op_type(const char *name)
{
	int t = 0;

	while (t < NR_OP_TYPES && strcmp(op_names[t], name))
		t++;
	if (t == NR_OP_TYPES) {
		fprintf(stderr, "shmem_fuzz: unknown operation '%s'\n", name);
		exit(2);
	}
	return t;
}

static int parse_ops(const char *str, struct op *ops)
{
	char name[32];
	int n = 0, used;

	while (n < MAX_OPS && sscanf(str, " %31[a-z_]:%ld:%ld:%u%n", name, &ops[n].off,
				      &ops[n].len, &ops[n].arg, &used) == 4) {
		ops[n++].type = op_type(name);
		str += used;
	}
	while (*str == ' ')
		str++;
	if (*str) {
		fprintf(stderr, "shmem_fuzz: cannot parse operations at '%s'\n", str);
		exit(2);
	}
	return n;
}

/* ---- the model of the file ---- */

/*
 * Per page: data (written, or faulted in through a mapping: data on every
 * kernel), allocated (must be counted in st_blocks), may (may be
 * allocated: the upper bound for st_blocks and Shmem), pinned (punched or
 * truncated while a pipe held a reference into its large folio, so the
 * folio could not be split).  Per PMD region: whole (a fault there makes
 * a large folio uptodate as a whole, so its unwritten blocks become data;
 * so may a split by punch or truncate, depending on how it treats them).
 * clean: data only because a read fault allocated it (zeroes, not dirty:
 * reclaim may drop it, and it is a hole again).
 * refalloc: fallocated again while allocated and not written: stock zeroes
 * such a folio into data; the series too, unless a write made the folio
 * partially uptodate, where its unwritten blocks stay holes (patch 2,
 * tests/kernel/punch.c's fallocate over a partial folio, exact).  Which
 * folio a page is in the model does not know on large_folios mounts.
 * ghost: bytes stored through a mapping past EOF in the last page.
 * exposed: pages holding ghost bytes that an extension left visible on
 * stock, where the series reads zeroes.
 */
struct model {
	const struct env *env;
	long size, pages;
	unsigned char *data, *ghost;
	unsigned char *datap, *alloc, *may, *pinned, *exposed, *whole, *clean, *refalloc;
	bool swapped;		/* pages may have gone to swap and back */
	bool pipe_cut;		/* punched or truncated while a pipe held a large folio */
	long append_start, append_end;	/* the run of appends, as the kernel keeps it */
};

struct held_pipe {
	int fd[2];
	bool active;
	long off, n;
	unsigned char *snap, *dirty;
};

static struct model M;
static struct held_pipe H;

/*
 * Zeroed memory, populated now: pages first touched after the case joins
 * its memory cgroup would be charged there.  (A memset after calloc does
 * not do it: the compiler drops it.)
 */
static void *xcalloc(long n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		bail("mmap");
	return p;
}

static void model_init(const struct env *e)
{
	/* A PMD folio at the end may reach past the extent */
	long pages = ((e->extent + PAGE + PMD - 1) & ~(PMD - 1)) / PAGE;

	M.env = e;
	M.size = 0;
	M.pages = pages;
	M.data = xcalloc(e->extent + PAGE);
	M.ghost = xcalloc(e->extent + PAGE);
	M.datap = xcalloc(pages);
	M.alloc = xcalloc(pages);
	M.may = xcalloc(pages);
	M.pinned = xcalloc(pages);
	M.exposed = xcalloc(pages);
	M.clean = xcalloc(pages);
	M.refalloc = xcalloc(pages);
	M.whole = xcalloc(pages / (PMD / PAGE) + 1);
	M.swapped = e->memcg_max != 0;
	M.pipe_cut = false;
	M.append_start = M.append_end = 0;
	H.snap = xcalloc(MAX_PIPE);
	H.dirty = xcalloc(MAX_PIPE);
}

static long first_page(long off) { return off / PAGE; }
static long end_page(long end) { return (end + PAGE - 1) / PAGE; }

/* Bytes [a, b) of the file change: a held pipe may now see either */
static void pipe_dirty(long a, long b)
{
	long lo = a > H.off ? a : H.off, hi = b < H.off + H.n ? b : H.off + H.n;

	if (H.active && lo < hi)
		memset(H.dirty + (lo - H.off), 1, hi - lo);
}

static void mark_whole(long a, long b)
{
	for (long r = a / PMD; r <= (b - 1) / PMD && r * PMD < M.pages * PAGE; r++)
		M.whole[r] = 1;
}

/* Pages [a, b) are allocated by a write, fallocate or fault */
static void model_alloc(long a, long b, bool fault)
{
	long lo = a, hi = b;

	if (env_pmd_folios(M.env)) {
		lo = a & ~(PMD - 1);
		hi = (b + PMD - 1) & ~(PMD - 1);
	}
	for (long p = first_page(a); p < end_page(b); p++)
		M.alloc[p] = 1;
	for (long p = first_page(lo); p < end_page(hi) && p < M.pages; p++)
		M.may[p] = 1;
	if (fault)
		mark_whole(a, b);
}

/*
 * i_size grows from s to e: the old EOF page's bytes past s read as
 * zeroes on the series; stock exposes what a mapping stored there.
 */
static void model_extend(long s, long e)
{
	/* Only the old EOF page can hold ghost bytes */
	long ghost_end = end_page(s) * PAGE < e ? end_page(s) * PAGE : e;

	for (long i = s; i < ghost_end; i++) {
		if (M.ghost[i] && stock)
			M.data[i] = M.ghost[i];
		if (M.ghost[i])
			M.exposed[i / PAGE] = 1;
		M.ghost[i] = 0;
	}
	M.size = e;
}

/*
 * The append ramp of large_folios mounts: a write() that continues the
 * file's run of appends (it starts at EOF, where the last write that
 * extended the file ended) may get a folio up to an eighth of the run,
 * aligned, below PMD size, reaching past its own end.  Each step of the write (at its
 * start, and at any page boundary at or past the old EOF once it extends
 * the file) may be such an allocation.  The run's start is exact when the
 * write starts at or past EOF, a lower bound otherwise, so the pages it
 * may allocate are an upper bound; a truncation ends the run.
 */
static int ramp_order(long index, long run)
{
	long eighth = run / PAGE / 8;
	int order = 0;

	while (order < 8 && (2L << order) <= eighth)	/* never PMD-sized */
		order++;
	while (order && (index & ((1L << order) - 1)))
		order--;
	return order;
}

static void model_append(long off, long end)
{
	bool ramp = !stock && env_large_folios(M.env) &&
		    strcmp(enabled_values[M.env->enabled], "deny");
	long start = off <= M.size && M.append_end == M.size && M.append_start < off ?
		     M.append_start : off;

	if (end <= M.size)
		return;
	for (long p = off > M.size ? off : M.size; ramp && p < end;
	     p = (p + PAGE) & ~(PAGE - 1)) {
		if (p != off && p & (PAGE - 1))
			continue;
		if (p == off && (off != M.size || M.append_end != M.size))
			continue;
		for (long q = first_page(p); q < first_page(p) + (1L << ramp_order(first_page(p), p - start)) &&
		     q < M.pages; q++)
			M.may[q] = 1;
	}
	M.append_start = start;
	M.append_end = end;
}

/* Bytes [a, b) read through a mapping: their pages are data from then on */
static void model_read_fault(long a, long b)
{
	for (long p = first_page(a); p < end_page(b); p++) {
		M.clean[p] = !M.alloc[p] || M.clean[p];
		M.datap[p] = 1;
		M.refalloc[p] = 0;
	}
	model_alloc(a, b, true);
}

static void model_write(long off, long n, const unsigned char *buf, bool fault)
{
	if (n <= 0)
		return;
	if (!fault)
		model_append(off, off + n);
	if (off > M.size)
		model_extend(M.size, off);
	memcpy(M.data + off, buf, n);
	memset(M.ghost + off, 0, n);
	pipe_dirty(off, off + n);
	model_alloc(off, off + n, fault);
	for (long p = first_page(off); p < end_page(off + n); p++) {
		M.datap[p] = 1;
		M.clean[p] = 0;
		M.refalloc[p] = 0;
	}
	if (off + n > M.size)
		M.size = off + n;
}

/*
 * Pages wholly inside [a, b) leave the file, unless a held pipe pins
 * their large folio; partial pages keep their place, zeroed in the range.
 */
static void model_remove(long a, long b)
{
	bool large = env_pmd_folios(M.env) || env_large_folios(M.env);
	long pin_lo = H.off & ~(PMD - 1), pin_hi = (H.off + H.n + PMD - 1) & ~(PMD - 1);

	for (long p = end_page(a); p < first_page(b) && p < M.pages; p++) {
		/* Under a memcg limit the split itself may fail for want of memory */
		bool pin = large && ((H.active && p * PAGE >= pin_lo && p * PAGE < pin_hi) ||
				     M.env->memcg_max);

		M.datap[p] = M.alloc[p] = M.exposed[p] = M.clean[p] = M.refalloc[p] = 0;
		M.pinned[p] = pin && (M.may[p] || M.pinned[p]);
		M.may[p] = M.pinned[p];
	}
}

static void model_punch(long a, long b)
{
	M.pipe_cut |= H.active;
	long end = b < M.size ? b : M.size;

	if (a < end) {
		memset(M.data + a, 0, end - a);
		pipe_dirty(a, end);
	}
	memset(M.ghost + a, 0, b - a);
	mark_whole(a, b);
	model_remove(a, b);
}

/*
 * Truncating to the same size still drops what was fallocated past EOF,
 * and zeroes the rest of the EOF page
 */
static void model_truncate(long t)
{
	if (t != M.size)
		M.append_end = -1;
	if (t <= M.size)
		M.pipe_cut |= H.active;
	if (t > M.size) {
		model_extend(M.size, t);
		return;
	}
	long eof_page = first_page(M.size) * PAGE;

	memset(M.data + t, 0, M.size - t);
	pipe_dirty(t, M.size);
	/* Ghost bytes live in the old EOF page only */
	memset(M.ghost + eof_page, 0, PAGE);
	mark_whole(t, M.pages * PAGE);
	model_remove(t, M.pages * PAGE);
	M.size = t;
}

/*
 * fallocate allocates what is missing and leaves it a hole; a folio that
 * was already there and not uptodate it zeroes and marks uptodate (data),
 * "lest undo on failure cancel our earlier guarantee" (shmem_get_folio_gfp).
 * On the series that may take a large folio's unwritten blocks with it.
 */
static void model_fallocate(long off, long len, bool keep)
{
	bool existing = false;

	if (!keep && off + len > M.size)
		model_extend(M.size, off + len);
	for (long p = first_page(off); p < end_page(off + len); p++) {
		if (M.alloc[p] || M.may[p] || M.pinned[p])
			existing = true;
		if (M.alloc[p]) {
			M.refalloc[p] |= !M.datap[p];
			M.datap[p] = 1;
		}
		/*
		 * fallocate marks every folio in the range dirty, clean ones
		 * too, unless reclaim dropped the clean one: then it is new,
		 * and a hole
		 */
		M.clean[p] = M.clean[p] && M.swapped;
	}
	if (existing)
		mark_whole(off, off + len);
	model_alloc(off, off + len, false);
}

/*
 * What page p is for SEEK_DATA/SEEK_HOLE: 'D' data, 'H' hole, '?' either.
 * Stock: a large folio is uptodate (data) as a whole once written in part;
 * fallocated pages are holes until swap makes them uptodate.  The series:
 * unwritten blocks are holes until the folio is mapped or swapped.
 */
static char page_class(long p, bool for_stock)
{
	if (M.refalloc[p] && !for_stock)
		return '?';
	if (M.datap[p])
		return M.clean[p] && M.swapped ? '?' : 'D';
	if (M.pinned[p])
		return '?';
	if (!M.may[p])
		return 'H';
	if (M.swapped)
		return '?';
	if (for_stock)
		return env_pmd_folios(M.env) ? '?' : 'H';
	return M.whole[p * PAGE / PMD] ? '?' : 'H';
}

static char kernel_class(long p)
{
	return page_class(p, stock);
}

/* Do stock and the series both know page p's answer, and agree on it? */
static bool class_certain(long p)
{
	char s = page_class(p, true);

	return s != '?' && s == page_class(p, false);
}

/* Is r a valid answer to lseek(x, whence) under the model?  *certain: unique */
static bool seek_valid(long x, int whence, long r, bool *certain)
{
	long p, q, last = end_page(M.size);
	bool data = whence == SEEK_DATA;

	*certain = true;
	if (x >= M.size)
		return r == -ENXIO;
	/* The answer is x itself, a later page boundary, EOF or ENXIO */
	for (p = first_page(x); p < last; p++) {
		char c = kernel_class(p);

		if (!class_certain(p))
			*certain = false;
		if ((c == 'D') == data && c != '?')
			break;
		if (c == '?') {
			q = p * PAGE > x ? p * PAGE : x;
			if (r == q)
				return true;
		} else if (r == (p * PAGE > x ? p * PAGE : x)) {
			return false;
		}
	}
	if (p == last)
		return data ? r == -ENXIO : r == M.size;
	q = p * PAGE > x ? p * PAGE : x;
	return r == q;
}

/* ---- running a case (in a child process, inside the memory cgroup) ---- */

static int fd = -1, report_fd = -1, kmsg_fd = -1, log_fd = -1;
static FILE *oplog;		/* observable results, for the differential */
static char *log_text;
static size_t log_len;
static int step;
static const struct op *cur;

static void flush_log(void)
{
	fclose(oplog);
	oplog = NULL;
	if (log_fd >= 0 && write(log_fd, log_text, log_len) != (ssize_t)log_len)
		bail("log");
}

/* A check failed: say what, hand the kind to the parent, stop the case */
static void __attribute__((noreturn, format(printf, 2, 3))) fail(const char *kind,
								  const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!quiet)
		printf("#   step %d (%s %ld+%ld): %s: %s\n", step, op_names[cur->type], cur->off,
		       cur->len, kind, msg);
	dprintf(report_fd, "%s %d", kind, step);
	if (oplog)
		fprintf(oplog, "\nfail %s\n", kind);
	flush_log();
	_exit(1);
}

/* The kernel log must stay clean: read what it gained since the last look */
static void check_kmsg(void)
{
	static const char *const bad[] = {
		"BUG:", "WARNING:", "KASAN", "KFENCE", "UBSAN", "Bad page", "bad page",
		"Oops", "general protection", "circular locking", "lock held", "lockdep",
		"inconsistent lock", "corruption", "kernel BUG", "page dumped because",
	};
	char rec[4096];
	ssize_t n;

	while ((n = read(kmsg_fd, rec, sizeof(rec) - 1)) != 0) {
		if (n < 0) {
			if (errno == EAGAIN)
				return;
			if (errno == EPIPE)	/* overwritten records: keep reading */
				continue;
			bail("/dev/kmsg");
		}
		rec[n] = 0;
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			if (strstr(rec, bad[i])) {
				char *nl = strchr(rec, '\n');

				if (nl)
					*nl = 0;
				fail("kernel-log", "%s", strchr(rec, ';') ? strchr(rec, ';') + 1 : rec);
			}
	}
}

static void check_bytes(const char *how, const unsigned char *got, long off, long n)
{
	if (!memcmp(got, M.data + off, n))
		return;
	for (long i = 0; i < n; i++)
		if (got[i] != M.data[off + i]) {
			long j = i;

			while (j < n && got[j] != M.data[off + j])
				j++;
			fail("data", "%s: byte %ld is %#x, the model says %#x (%ld bytes differ from there)",
			     how, off + i, got[i], M.data[off + i], j - i);
		}
}

static bool range_exposed(long off, long n)
{
	for (long p = first_page(off); p < end_page(off + n); p++)
		if (M.exposed[p])
			return true;
	return false;
}

/* pread [off, off + len) clipped to EOF, compare with the model */
static void check_read(long off, long len, unsigned char *buf, bool log)
{
	long n = off >= M.size ? 0 : (off + len > M.size ? M.size - off : len);
	ssize_t r = pread(fd, buf, len, off);

	if (r != n)
		fail("read", "pread %ld at %ld returned %zd (%s), the model says %ld", len, off, r,
		     r < 0 ? strerror(errno) : "short", n);
	check_bytes("read", buf, off, n);
	if (log)
		fprintf(oplog, " data%c%016llx", range_exposed(off, n) ? '~' : '=',
			(unsigned long long)fnv(buf, n));
}

/* SEEK_DATA and SEEK_HOLE from x, against the model */
static void check_seek(long x, bool log)
{
	long d = lseek(fd, x, SEEK_DATA), h;
	bool cd, ch;

	d = d < 0 ? -errno : d;
	h = lseek(fd, x, SEEK_HOLE);
	h = h < 0 ? -errno : h;
	if (!seek_valid(x, SEEK_DATA, d, &cd))
		fail("seek", "SEEK_DATA from %ld gave %ld", x, d);
	if (!seek_valid(x, SEEK_HOLE, h, &ch))
		fail("seek", "SEEK_HOLE from %ld gave %ld", x, h);
	if (log)
		fprintf(oplog, " seek%c%ld,%ld", cd && ch ? '=' : '~', d, h);
}

/* Walk the file with SEEK_DATA/SEEK_HOLE from every page boundary the answers give */
static void check_seek_all(void)
{
	long x = 0;

	while (x < M.size) {
		long h;

		check_seek(x, false);
		h = lseek(fd, x, SEEK_HOLE);
		x = h > x ? h : x + PAGE;
		check_seek(x < M.size ? x : M.size, false);
		h = lseek(fd, x, SEEK_DATA);
		x = h > x ? h : x + PAGE;
	}
}

static long count(const unsigned char *v, long n)
{
	long c = 0;

	for (long i = 0; i < n; i++)
		c += v[i] != 0;
	return c;
}

/*
 * May st_blocks differ between stock and the series?  Folio sizes differ
 * by design with large_folios; under a memcg limit, with a pinned folio
 * (stock lends a large folio to a pipe, the series copies a partially
 * uptodate one, so only stock cannot split it), or after swap (a split
 * for swap drops pages past EOF, reclaim drops clean pages) they depend on
 * folio sizes and timing.
 */
static bool blocks_open(void)
{
	bool clean = false;

	if (env_large_folios(M.env) || M.env->memcg_max || count(M.pinned, M.pages) ||
	    (M.pipe_cut && env_large_allowed(M.env)))
		return true;
	for (long p = 0; p < M.pages && !clean; p++)
		clean = M.clean[p];
	return M.swapped && (clean || env_large_allowed(M.env));
}

/*
 * st_size exact; st_blocks between what must and what may be allocated.
 * Splitting a large folio across EOF (for swap, or the huge shrinker)
 * drops its pages past EOF, fallocated or not, on stock too; reclaim
 * drops clean pages.
 */
static void check_stat(bool log)
{
	long eof = end_page(M.size) < M.pages ? end_page(M.size) : M.pages;
	long lo = 0;
	long hi = count(M.may, M.pages) * (PAGE / 512);
	struct stat st;

	for (long p = 0; p < (env_large_allowed(M.env) ? eof : M.pages); p++)
		lo += M.alloc[p] && !(M.clean[p] && M.swapped) ? PAGE / 512 : 0;
	if (fstat(fd, &st))
		fail("stat", "fstat: %s", strerror(errno));
	if (st.st_size != M.size)
		fail("size", "st_size %ld, the model says %ld", (long)st.st_size, M.size);
	if (st.st_blocks > hi)
		fail("blocks", "st_blocks %ld, at most %ld may be allocated (a leak)",
		     (long)st.st_blocks, hi);
	if (st.st_blocks < lo)
		fail("blocks", "st_blocks %ld, at least %ld are allocated", (long)st.st_blocks, lo);
	if (log)
		fprintf(oplog, " size=%ld blocks%c%ld blksize=%ld", (long)st.st_size,
			blocks_open() ? '~' : '=', (long)st.st_blocks, (long)st.st_blksize);
}

static long shmem_base_kb;

static void check_meminfo(void)
{
	long kb = meminfo_shmem_kb() - shmem_base_kb, hi = count(M.may, M.pages) * (PAGE / KB);

	if (kb > hi)
		fail("meminfo", "Shmem grew by %ld kB, the file may hold at most %ld kB", kb, hi);
}

static bool resource_error(int e)
{
	return (e == ENOMEM || e == ENOSPC) && M.env->memcg_max;
}

/* A result that is not the expected one fails, unless memcg pressure explains it */
/* A system call's result, or minus its errno */
#define SYS(call) ({ long _r = (call); _r < 0 ? -errno : _r; })

static void expect_result(const char *what, long r, long want)
{
	if (r == want)
		return;
	if (r < 0 && resource_error(-r))
		return;
	if (r >= 0 && r < want && M.env->memcg_max && strstr(what, "write"))
		return;
	fail("result", "%s returned %ld (%s), expected %ld", what, r,
	     r < 0 ? strerror(-r) : "", want);
}

static char *map_file(long *maplen)
{
	char *map;

	*maplen = end_page(M.size) * PAGE;
	if (!*maplen)
		return NULL;
	map = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		fail("mmap", "mmap %ld: %s", *maplen, strerror(errno));
	return map;
}

/* Read n bytes from a pipe or socket: how many came, or minus the errno */
static long read_full(int from, unsigned char *buf, long n)
{
	long got = 0;
	ssize_t r = 0;

	while (got < n && (r = read(from, buf + got, n - got)) > 0)
		got += r;
	return r < 0 ? -errno : got;
}

static void pipe_drain(unsigned char *buf)
{
	long got;

	if (!H.active) {
		fprintf(oplog, " none");
		return;
	}
	H.active = false;
	got = read_full(H.fd[0], buf, H.n);
	if (got != H.n)
		fail("pipe", "reading the held pipe's %ld bytes: %s", H.n,
		     got < 0 ? strerror(-got) : "short");
	for (long i = memcmp(buf, H.snap, H.n) ? 0 : H.n; i < H.n; i++)
		if (!H.dirty[i] && buf[i] != H.snap[i])
			fail("pipe", "held pipe byte %ld (file offset %ld) is %#x, was %#x at splice time",
			     i, H.off + i, buf[i], H.snap[i]);
	fprintf(oplog, " pipe%c%016llx", count(H.dirty, H.n) ? '~' : '=',
		(unsigned long long)fnv(buf, H.n));
}

static int sock[2], spipe[2];

static void do_op(const struct op *op, unsigned char *buf)
{
	const unsigned char *src = data_for(op->arg);
	char amount[32];
	long off = op->off, len = op->len, want, r = 0, maplen;
	struct iovec iov[4];
	loff_t o1, o2;
	char *map;
	pid_t child;
	int status;

	errno = 0;
	switch (op->type) {
	case OP_WRITE:
		r = SYS(pwrite(fd, src, len, off));
		expect_result("pwrite", r, len);
		model_write(off, r, src, false);
		break;
	case OP_PWRITEV: {
		int n = 1 + op->arg % 4;
		long at = 0;

		for (int i = 0; i < n; i++) {
			long piece = i == n - 1 ? len - at : (len - at) * (1 + (op->arg >> (4 + i)) % 3) / 4;

			iov[i].iov_base = (void *)(src + at);
			iov[i].iov_len = piece;
			at += piece;
		}
		r = SYS(pwritev(fd, iov, n, off));
		expect_result("pwritev", r, len);
		model_write(off, r, src, false);
		break;
	}
	case OP_FALLOC: case OP_FALLOC_KEEP:
		r = SYS(fallocate(fd, op->type == OP_FALLOC_KEEP ? FALLOC_FL_KEEP_SIZE : 0, off, len));
		expect_result("fallocate", r, 0);
		if (r == 0)
			model_fallocate(off, len, op->type == OP_FALLOC_KEEP);
		break;
	case OP_PUNCH:
		r = SYS(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len));
		expect_result("punch", r, 0);
		model_punch(off, off + len);
		break;
	case OP_TRUNCATE:
		r = SYS(ftruncate(fd, off));
		expect_result("ftruncate", r, 0);
		model_truncate(off);
		break;
	case OP_READ:
		r = 0;
		check_read(off, len, buf, true);
		break;
	case OP_SPLICE: case OP_SPLICE_HOLD: {
		int *p = op->type == OP_SPLICE ? spipe : H.fd;

		if (op->type == OP_SPLICE_HOLD && H.active)
			pipe_drain(buf);
		want = off >= M.size ? 0 : (off + len > M.size ? M.size - off : len);
		o1 = off;
		r = SYS(splice(fd, &o1, p[1], NULL, len, SPLICE_F_NONBLOCK));
		expect_result("splice", r, want);
		if (op->type == OP_SPLICE) {
			if (read_full(spipe[0], buf, r) != r)
				fail("pipe", "short read from the pipe");
			check_bytes("splice", buf, off, r);
			fprintf(oplog, " data%c%016llx", range_exposed(off, r) ? '~' : '=',
				(unsigned long long)fnv(buf, r));
		} else if (r > 0) {
			H.active = true;
			H.off = off;
			H.n = r;
			memcpy(H.snap, M.data + off, r);
			memset(H.dirty, 0, r);
			for (long p = first_page(off); p < end_page(off + r); p++)
				if (M.exposed[p])	/* differs between kernels: say so */
					memset(H.dirty, 1, r);
		}
		break;
	}
	case OP_PIPE_READ:
		r = 0;
		pipe_drain(buf);
		break;
	case OP_SENDFILE:
		want = off >= M.size ? 0 : (off + len > M.size ? M.size - off : len);
		o1 = off;
		r = SYS(sendfile(sock[0], fd, &o1, len));
		expect_result("sendfile", r, want);
		if (r > 0) {
			if (read_full(sock[1], buf, r) != r)
				fail("sendfile", "short read from the socket");
			check_bytes("sendfile", buf, off, r);
			fprintf(oplog, " data%c%016llx", range_exposed(off, r) ? '~' : '=',
				(unsigned long long)fnv(buf, r));
		}
		break;
	case OP_COPY:
		want = off >= M.size ? 0 : (off + len > M.size ? M.size - off : len);
		o1 = off;
		o2 = op->arg;
		memcpy(buf, M.data + off, want > 0 ? want : 0);
		r = SYS(copy_file_range(fd, &o1, fd, &o2, len, 0));
		expect_result("copy_file_range", r, want);
		if (r > 0) {
			bool exp = range_exposed(off, r);

			model_write(op->arg, r, buf, false);
			for (long p = first_page(op->arg); exp && p < end_page(op->arg + r); p++)
				M.exposed[p] = 1;
		}
		break;
	case OP_MMAP_READ: case OP_MMAP_WRITE: case OP_PAGEOUT: {
		long a, b;

		map = map_file(&maplen);
		r = 0;
		if (!map)
			break;
		if (off >= M.size) {
			munmap(map, maplen);
			break;
		}
		a = off;
		b = off + len < M.size ? off + len : M.size;
		if (op->type == OP_MMAP_WRITE) {
			memcpy(map + a, src, b - a);
			if (op->arg & 1 && msync(map, maplen, MS_SYNC))
				fail("msync", "msync: %s", strerror(errno));
			model_write(a, b - a, src, true);
		} else {
			memcpy(buf, map + a, b - a);
			check_bytes("mmap", buf, a, b - a);
			fprintf(oplog, " data%c%016llx", range_exposed(a, b - a) ? '~' : '=',
				(unsigned long long)fnv(buf, b - a));
			model_read_fault(a, b);
		}
		if (op->type == OP_PAGEOUT) {
			long pa = a & ~(PAGE - 1);

			r = SYS(madvise(map + pa, b - pa, MADV_PAGEOUT));
			expect_result("madvise(MADV_PAGEOUT)", r, 0);
			M.swapped = true;
		}
		munmap(map, maplen);
		break;
	}
	case OP_WRITE_MAPPED: {
		/*
		 * A write whose source is a mapping of the file itself, from
		 * arg within i_size and not overlapping the destination (an
		 * overlapping copy's result depends on the copy's stride)
		 */
		long a = M.size ? (long)(op->arg % M.size) : 0;

		map = map_file(&maplen);
		r = 0;
		if (!map)
			break;
		want = len < M.size - a ? len : M.size - a;
		if (a < off + want && off < a + want)
			want = off > a ? off - a : 0;
		if (!want) {
			munmap(map, maplen);
			break;
		}
		memcpy(buf, M.data + a, want);
		r = SYS(pwrite(fd, map + a, want, off));
		expect_result("pwrite from a mapping of the file", r, want);
		model_read_fault(a, a + want);
		if (r > 0) {
			bool exp = range_exposed(a, r);

			model_write(off, r, buf, false);
			for (long p = first_page(off); exp && p < end_page(off + r); p++)
				M.exposed[p] = 1;
		}
		munmap(map, maplen);
		break;
	}
	case OP_MMAP_EOF: {
		long end = end_page(M.size) * PAGE, n;

		r = 0;
		if (M.size % PAGE == 0)
			break;
		n = len < end - M.size ? len : end - M.size;
		map = map_file(&maplen);
		memcpy(map + M.size, src, n);
		memcpy(M.ghost + M.size, src, n);
		model_alloc(M.size - 1, M.size, true);
		M.datap[(M.size - 1) / PAGE] = 1;
		M.clean[(M.size - 1) / PAGE] = 0;
		munmap(map, maplen);
		break;
	}
	case OP_MINCORE: {
		unsigned char vec[MAX_EXTENT / PAGE + 1];
		bool certain = true;

		map = map_file(&maplen);
		r = 0;
		if (!map)
			break;
		r = SYS(mincore(map, maplen, vec));
		expect_result("mincore", r, 0);
		for (long p = 0; p < maplen / PAGE; p++) {
			/*
			 * Resident: data not swapped out since.  Not resident:
			 * a hole (never allocated, fallocated, or an unwritten
			 * block of a large folio on the series).
			 */
			char c = kernel_class(p);
			int want_bit = c == 'D' && !M.swapped ? 1 : c == 'H' ? 0 : -1;

			vec[p] &= 1;
			if (want_bit < 0 || !class_certain(p) || M.exposed[p])
				certain = false;
			if (want_bit >= 0 && vec[p] != want_bit)
				fail("mincore", "page %ld: mincore says %sresident, the model says %s", p,
				     vec[p] ? "" : "not ", want_bit ? "data" : "a hole");
		}
		fprintf(oplog, " mincore%c%016llx", certain ? '=' : '~',
			(unsigned long long)fnv(vec, maplen / PAGE));
		munmap(map, maplen);
		break;
	}
	case OP_SEEK:
		r = 0;
		check_seek(off, true);
		break;
	case OP_FSYNC:
		r = SYS(fsync(fd));
		expect_result("fsync", r, 0);
		break;
	case OP_STAT:
		r = 0;
		break;
	case OP_CHILD_WRITE: {
		/*
		 * vfork: a second process that borrows our memory, so that no
		 * copy-on-write charges our buffers to the memory cgroup
		 */
		static volatile long child_result;

		child = vfork();
		if (child < 0)
			bail("vfork");
		if (child == 0) {
			child_result = SYS(pwrite(fd, src, len, off));
			_exit(0);
		}
		if (waitpid(child, &status, 0) != child)
			bail("waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail("result", "the second process did not finish its pwrite (status %#x)",
			     status);
		r = child_result;
		expect_result("the second process's pwrite", r, len);
		model_write(off, r, src, false);
		break;
	}
	case OP_RECLAIM:
		snprintf(amount, sizeof(amount), "%ld", len);
		r = write_file(MEMCG "/memory.reclaim", amount);
		if (r && r != -EAGAIN)
			fail("result", "memory.reclaim: %s", strerror(-r));
		M.swapped = true;
		break;
	case OP_COMPACT:
		r = write_file("/proc/sys/vm/compact_memory", "1");
		expect_result("compact_memory", r, 0);
		break;
	}
	/* Whether memory.reclaim got all it asked for depends on timing */
	fprintf(oplog, " r%c%ld", op->type == OP_RECLAIM ? '~' : '=', r);
}

static void open_case_files(void)
{
	int big = 1 * MB;

	fd = open(FILE_PATH, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		bail(FILE_PATH);
	if (pipe(spipe) || pipe(H.fd) || fcntl(spipe[1], F_SETPIPE_SZ, 1 * MB) < 0 ||
	    fcntl(H.fd[1], F_SETPIPE_SZ, 1 * MB) < 0)
		bail("pipe");
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sock) ||
	    setsockopt(sock[0], SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)) ||
	    setsockopt(sock[1], SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		bail("socketpair");
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg_fd < 0 || lseek(kmsg_fd, 0, SEEK_END) < 0)
		bail("/dev/kmsg");
}

static void join_memcg(void)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	must_write_file(MEMCG "/cgroup.procs", pid);
}

/*
 * The child's side of a case: every step, then the checks that follow it.
 * Exits 0 when all held, 1 (after writing the failure's kind) otherwise.
 */
static void __attribute__((noreturn)) run_case(uint64_t cs, const struct env *e,
					       const struct op *ops, int n)
{
	unsigned char *buf = xcalloc(e->extent + PAGE);
	char desc[256];
	long allocs;

	alarm(CASE_TIMEOUT);
	model_init(e);
	oplog = open_memstream(&log_text, &log_len);
	open_case_files();
	allocs = large_allocs();
	shmem_base_kb = meminfo_shmem_kb();
	join_memcg();
	env_describe(e, desc, sizeof(desc));
	fprintf(oplog, "case %llu %s\n", (unsigned long long)cs, desc);
	for (step = 0; step < n; step++) {
		cur = &ops[step];
		fprintf(oplog, "%d %s %ld %ld %u", step, op_names[cur->type], cur->off, cur->len,
			cur->arg);
		if (verbose)
			printf("#   %d %s:%ld:%ld:%u\n", step, op_names[cur->type], cur->off,
			       cur->len, cur->arg);
		do_op(cur, buf);
		check_stat(true);
		fputc('\n', oplog);
		if (cur->type != OP_READ)
			check_read(cur->off, cur->len, buf, false);
		if (cur->type == OP_COPY)
			check_read(cur->arg, cur->len, buf, false);
		if (step % 32 == 31 || step == n - 1) {
			check_read(0, e->extent, buf, false);
			check_seek_all();
		}
		if (step % 64 == 63 || step == n - 1)
			check_meminfo();
		check_kmsg();
	}
	cur = &ops[n - 1];
	if (!env_large_allowed(e) && large_allocs() != allocs)
		fail("orders", "%ld large folios allocated where the environment allows none",
		     large_allocs() - allocs);
	fprintf(oplog, "pass\n");
	flush_log();
	_exit(0);
}

/* ---- the driver: environments, cases, shrinking ---- */

static int driver_kmsg = -1;

/*
 * The call chain of the last memcg OOM kill, from the kernel log: the
 * allocation a case's limit could not satisfy
 */
static char oom_trace[1024];

static void note_oom_trace(const char *rec)
{
	const char *msg = strchr(rec, ';') ? strchr(rec, ';') + 1 : rec;
	size_t used = strlen(oom_trace);

	if (strstr(msg, "invoked oom-killer")) {
		snprintf(oom_trace, sizeof(oom_trace), "%.*s", (int)strcspn(msg, ","), msg);
		return;
	}
	/* " shmem_alloc_and_add_folio+0x155/0x910": the frames below the OOM killer */
	if (*oom_trace && strstr(msg, "+0x") && !strstr(msg, "? ") && used < sizeof(oom_trace) - 64 &&
	    !strstr(msg, "dump_") && !strstr(msg, "oom") && !strstr(msg, "out_of_memory"))
		snprintf(oom_trace + used, sizeof(oom_trace) - used, " <%.*s",
			 (int)strcspn(msg + strspn(msg, " "), "+"), msg + strspn(msg, " "));
}

/* Kernel log records since the last call that name a problem */
static bool kmsg_clean(char *first, size_t len)
{
	static const char *const bad[] = { "BUG:", "WARNING:", "KASAN", "KFENCE", "UBSAN",
					   "Bad page", "Oops", "circular locking", "lockdep" };
	char rec[4096];
	bool clean = true;
	ssize_t n;

	while ((n = read(driver_kmsg, rec, sizeof(rec) - 1)) != 0) {
		if (n < 0 && errno == EPIPE)
			continue;
		if (n < 0)
			break;
		rec[n] = 0;
		note_oom_trace(rec);
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) && clean; i++)
			if (strstr(rec, bad[i])) {
				clean = false;
				snprintf(first, len, "%.400s", strchr(rec, ';') ? strchr(rec, ';') + 1 : rec);
				first[strcspn(first, "\n")] = 0;
			}
	}
	return clean;
}

static long oom_kills(void)
{
	char line[128];
	long n = 0;
	FILE *f = fopen(MEMCG "/memory.events", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "oom_kill ", 9))
			n = atol(line + 9);
	if (f)
		fclose(f);
	return n;
}

/*
 * Run one case in a child process; 0 if every check held, else 1 with the
 * failure's kind and step in kind.
 */
static int run_one(uint64_t cs, const struct env *e, const struct op *ops, int n,
		   char *kind, size_t kindlen)
{
	char report[128] = "", klog[512];
	int rep[2], status;
	bool clean;
	long oom;
	pid_t child;
	ssize_t r;

	env_apply(e);
	if (pipe(rep))
		bail("pipe");
	fflush(stdout);
	child = fork();
	if (child < 0)
		bail("fork");
	if (child == 0) {
		close(rep[0]);
		report_fd = rep[1];
		run_case(cs, e, ops, n);
	}
	close(rep[1]);
	if (waitpid(child, &status, 0) != child)
		bail("waitpid");
	r = read(rep[0], report, sizeof(report) - 1);
	report[r > 0 ? r : 0] = 0;
	close(rep[0]);
	oom = oom_kills();
	env_teardown();
	oom_trace[0] = 0;
	clean = kmsg_clean(klog, sizeof(klog));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && clean)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
		snprintf(kind, kindlen, "%s", report);
	else if (WIFSIGNALED(status))
		snprintf(kind, kindlen, "%s %d", oom ? "oom-kill" :
			 WTERMSIG(status) == SIGALRM ? "timeout" : strsignal(WTERMSIG(status)), n - 1);
	else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		snprintf(kind, kindlen, "exit-%d %d", WEXITSTATUS(status), n - 1);
	else
		snprintf(kind, kindlen, "kernel-log %d", n - 1);
	if (!quiet && !strncmp(kind, "kernel-log", 10))
		printf("#   kernel log: %s\n", klog);
	if (!quiet && !strncmp(kind, "oom-kill", 8))
		printf("#   %s\n", oom_trace);
	if (log_fd >= 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 1))
		dprintf(log_fd, "case %llu\nfail %s\n", (unsigned long long)cs, kind);
	return 1;
}

/* The kind of a failure without its step: "data 17" -> "data" */
static bool same_kind(const char *a, const char *b)
{
	size_t la = strcspn(a, " "), lb = strcspn(b, " ");

	return la == lb && !strncmp(a, b, la);
}

#define MAX_TRIALS 250

/*
 * Delta debugging: drop chunks of operations while the same kind of
 * failure remains.  Returns the new length of ops.
 */
static int shrink(uint64_t cs, const struct env *e, struct op *ops, int n, const char *kind)
{
	struct op *trial = malloc(n * sizeof(*trial));
	int gran = 2, trials = 0, saved_log = log_fd;
	bool saved_quiet = quiet;
	char k[128];

	log_fd = -1;
	quiet = true;
	n = atoi(strchr(kind, ' ') ? strchr(kind, ' ') + 1 : "0") + 1 < n ?
	    atoi(strchr(kind, ' ') + 1) + 1 : n;
	while (n >= 2 && trials < MAX_TRIALS) {
		int chunk = (n + gran - 1) / gran;
		bool reduced = false;

		for (int start = 0; start < n && trials < MAX_TRIALS; start += chunk) {
			int m = 0;

			for (int i = 0; i < n; i++)
				if (i < start || i >= start + chunk)
					trial[m++] = ops[i];
			trials++;
			if (m && run_one(cs, e, trial, m, k, sizeof(k)) && same_kind(k, kind)) {
				int last = atoi(strchr(k, ' ') + 1) + 1;

				n = last < m ? last : m;
				memcpy(ops, trial, n * sizeof(*ops));
				gran = gran > 2 ? gran - 1 : 2;
				reduced = true;
				break;
			}
		}
		if (!reduced) {
			if (gran >= n)
				break;
			gran = gran * 2 < n ? gran * 2 : n;
		}
	}
	free(trial);
	log_fd = saved_log;
	quiet = saved_quiet;
	return n;
}

static void print_ops(const struct op *ops, int n)
{
	for (int i = 0; i < n; i++)
		printf("%s%s:%ld:%ld:%u", i ? " " : "", op_names[ops[i].type], ops[i].off,
		       ops[i].len, ops[i].arg);
}

static const char *const saved_paths[] = {
	THP "/shmem_enabled", THP "/khugepaged/max_ptes_none",
};
static char saved_values[2][64];

static void save_settings(void)
{
	for (int i = 0; i < 2; i++) {
		int f = open(saved_paths[i], O_RDONLY);
		ssize_t r = f < 0 ? -1 : read(f, saved_values[i], 63);
		char *sel;

		if (r < 0)
			bail(saved_paths[i]);
		close(f);
		saved_values[i][r] = 0;
		/* "always [never] deny": the bracketed value is the setting */
		sel = strchr(saved_values[i], '[');
		if (sel)
			memmove(saved_values[i], sel + 1, strlen(sel));
		saved_values[i][strcspn(saved_values[i], "]\n")] = 0;
	}
}

static void restore_settings(void)
{
	for (int i = 0; i < 2; i++)
		must_write_file(saved_paths[i], saved_values[i]);
}

/* -x OP,OP...: leave these operations out, e.g. to look past a known bug */
static void exclude_ops(const char *list)
{
	char *copy = strdup(list), *name, *save;

	for (name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		int t = op_type(name);

		op_weights[t] = 0;
		excluded[t] = true;
	}
	free(copy);
}

/*
 * -R FILE: sequences the tester once shrunk from failures, one a line:
 * CASE OP:OFF:LEN:ARG ..., after a comment line saying what they found.
 * Returns how many failed.
 */
static int regression_count;

static int run_regressions(const char *path)
{
	static struct op ops[MAX_OPS];
	char *line = NULL, comment[256] = "", kind[128];
	size_t cap = 0;
	int failures = 0, used, n;
	unsigned long long cs;
	FILE *f = fopen(path, "r");
	struct env e;

	if (!f)
		bail(path);
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = 0;
		if (line[0] == '#') {
			snprintf(comment, sizeof(comment), "%s", line + 2);
			continue;
		}
		if (sscanf(line, "%llu %n", &cs, &used) != 1)
			continue;
		env_from_case(cs, &e);
		n = parse_ops(line + used, ops);
		regression_count++;
		if (run_one(cs, &e, ops, n, kind, sizeof(kind))) {
			failures++;
			printf("not ok - %s: case %llu: %.*s\n", comment, cs, (int)strcspn(kind, " "),
			       kind);
		} else {
			printf("ok - %s\n", comment);
		}
	}
	free(line);
	fclose(f);
	return failures;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: shmem_fuzz [-s SEED] [-n OPS] [-c OPS_PER_CASE] [-m MOUNT] [-S SHRINKS]\n"
		"                  [-x OP,...] [-R FILE] [-l LOG] [-q|-v]\n"
		"       shmem_fuzz --case CASE [--ops 'OP:OFF:LEN:ARG ...'] [-c N] [-l LOG] [-v]\n"
		"MOUNT is 0..7: default, huge=always, huge=within_size, huge=advise, large_folios,\n"
		"and large_folios with each huge= value.\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct op ops[MAX_OPS], shrunk[MAX_OPS];
	long total_ops = 2000, per_case = 200, done_ops = 0;
	long mount_cases[NR_MOUNTS] = { 0 }, mount_failed[NR_MOUNTS] = { 0 };
	double mount_secs[NR_MOUNTS] = { 0 }, memcg_secs[2] = { 0 };
	int mount_only = -1, passed = 0, failed = 0, shrinks = 0, max_shrinks = 4, nops = 0;
	int oom_killed = 0;
	int saved_log;
	uint64_t seed = time(NULL) % 100000, one_case = 0;
	const char *ops_arg = NULL, *log_path = NULL, *regressions = NULL;
	bool single = false, shrunk_kind[NR_MOUNTS][16] = { { false } };
	static const char *const kinds[] = { "data", "read", "seek", "size", "blocks", "meminfo",
		"mincore", "pipe", "result", "orders", "kernel-log", "mmap", "msync", "stat",
		"sendfile" };
	struct timespec t0, t1, c0, c1;
	int result;
	double secs;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-q")) {
			quiet = true;
			continue;
		}
		if (!strcmp(a, "-v")) {
			verbose = true;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "-s"))
			seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "-n"))
			total_ops = atol(v);
		else if (!strcmp(a, "-c"))
			per_case = atol(v);
		else if (!strcmp(a, "-m"))
			mount_only = atoi(v);
		else if (!strcmp(a, "-S"))
			max_shrinks = atoi(v);
		else if (!strcmp(a, "-x"))
			exclude_ops(v);
		else if (!strcmp(a, "-l"))
			log_path = v;
		else if (!strcmp(a, "--case"))
			single = true, one_case = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--ops"))
			ops_arg = v;
		else if (!strcmp(a, "-R"))
			regressions = v;
		else
			usage();
	}
	if (per_case < 1 || per_case > MAX_OPS || total_ops < 1 || mount_only >= NR_MOUNTS)
		usage();

	setvbuf(stdout, NULL, _IOLBF, 0);
	make_pattern();
	mkdir(ROOT, 0755);
	mkdir(MNT, 0755);
	stock = mount("tmpfs", MNT, "tmpfs", 0, "large_folios") != 0;
	umount2(MNT, MNT_DETACH);
	save_settings();
	/* khugepaged may collapse only fully populated ranges: it fills no holes */
	must_write_file(THP "/khugepaged/max_ptes_none", "0");
	must_write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
	if (log_path) {
		log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (log_fd < 0)
			bail(log_path);
	}
	driver_kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (driver_kmsg < 0 || lseek(driver_kmsg, 0, SEEK_END) < 0)
		bail("/dev/kmsg");
	printf("# shmem_fuzz: seed %llu, %s kernel%s\n", (unsigned long long)seed,
	       stock ? "stock (no large_folios)" : "series", quiet ? "" : "");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (regressions) {
		/* Not in the differential log: a case number may repeat there */
		int f, logging = log_fd;

		log_fd = -1;
		f = run_regressions(regressions);
		log_fd = logging;
		failed += f;
		passed += regression_count - f;
	}

	for (long k = 0; single ? k < 1 : done_ops < total_ops; k++) {
		uint64_t s = seed * 1000003 + k, cs;
		struct env e;
		char desc[256], kind[128];
		int n;

		if (single) {
			cs = one_case;
		} else {
			int mount = mount_only >= 0 ? mount_only : k % NR_MOUNTS;

			cs = (splitmix(&s) % 100000000) * NR_MOUNTS + mount;
		}
		env_from_case(cs, &e);
		if (ops_arg)
			n = parse_ops(ops_arg, ops);
		else
			n = gen_ops(cs, &e, single || per_case < total_ops - done_ops ?
					    per_case : total_ops - done_ops, ops);
		if (n == 0)
			usage();
		env_describe(&e, desc, sizeof(desc));
		if (verbose || single)
			printf("# case %llu: %s\n", (unsigned long long)cs, desc);
		done_ops += n;
		mount_cases[e.mount]++;
		clock_gettime(CLOCK_MONOTONIC, &c0);
		result = run_one(cs, &e, ops, n, kind, sizeof(kind));
		clock_gettime(CLOCK_MONOTONIC, &c1);
		mount_secs[e.mount] += c1.tv_sec - c0.tv_sec + (c1.tv_nsec - c0.tv_nsec) / 1e9;
		memcg_secs[e.memcg_max != 0] += c1.tv_sec - c0.tv_sec + (c1.tv_nsec - c0.tv_nsec) / 1e9;
		if (!result) {
			nops += n;
			passed++;
			continue;
		}
		/*
		 * The memcg OOM killer ends a case whose limit proved too tight
		 * (stock 6.12 too: swap readahead charges pages it cannot get
		 * back).  Every check the case reached had held: counted as
		 * passed, and said.
		 */
		if (same_kind(kind, "oom-kill")) {
			printf("# case %llu (%s): OOM-killed under its memcg limit after every check "
			       "it reached held\n", (unsigned long long)cs, desc);
			oom_killed++;
			passed++;
			continue;
		}
		nops += atoi(strchr(kind, ' ') ? strchr(kind, ' ') + 1 : "0") + 1;
		failed++;
		mount_failed[e.mount]++;
		printf("not ok - case %llu (%s): %.*s at step %s\n", (unsigned long long)cs, desc,
		       (int)strcspn(kind, " "), kind, strchr(kind, ' ') ? strchr(kind, ' ') + 1 : "?");
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			int m;

			if (!same_kind(kind, kinds[i]) || shrunk_kind[e.mount][i] ||
			    shrinks >= max_shrinks)
				continue;
			shrunk_kind[e.mount][i] = true;
			shrinks++;
			memcpy(shrunk, ops, n * sizeof(*ops));
			m = shrink(cs, &e, shrunk, n, kind);
			printf("#   shrunk to %d operations; rerun with:\n#   shmem_fuzz --case %llu --ops '",
			       m, (unsigned long long)cs);
			print_ops(shrunk, m);
			printf("'\n");
			/* Show how the short sequence fails; it is no case of the run */
			saved_log = log_fd;
			log_fd = -1;
			run_one(cs, &e, shrunk, m, kind, sizeof(kind));
			log_fd = saved_log;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	for (int m = 0; m < NR_MOUNTS; m++)
		if (mount_cases[m])
			printf("# %-30s %4ld cases, %ld failed, %.0f s\n",
			       *mounts[m] ? mounts[m] : "default", mount_cases[m], mount_failed[m],
			       mount_secs[m]);
	printf("# %.0f s in cases without a memcg limit, %.0f s with one\n", memcg_secs[0],
	       memcg_secs[1]);
	printf("# %d operations run in %.0f s: %.0f per second\n", nops, secs, nops / secs);
	if (oom_killed)
		printf("# %d cases OOM-killed under their memcg limit\n", oom_killed);
	restore_settings();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
