// SPDX-License-Identifier: GPL-2.0
/* Helpers shared by the kernel tests: TAP output, files, sysfs, /proc. */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "lib.h"

#define MEMCG "/sys/fs/cgroup/shmem-folio-test"

int passed, failed;
static const char *root = "/tmp/shmem-folio-test";

bool check(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", passed + failed + 1);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (cond)
		passed++;
	else
		failed++;
	return cond;
}

void die(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(2);
}

void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Mount a fresh tmpfs at root/name; returns its path. */
const char *mount_tmpfs(const char *name, const char *opts)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	mkdir(root, 0755);
	mkdir(path, 0755);
	umount2(path, MNT_DETACH);
	if (mount("tmpfs", path, "tmpfs", 0, opts))
		die(opts);
	return strdup(path);
}

int open_new(const char *dir, const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path);
	return fd;
}

void fill(char *buf, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(seed + i * 7 + (i >> 12)) | 1;
}

void pwrite_pattern(int fd, off_t off, size_t len, unsigned int seed)
{
	char *buf = malloc(len);

	fill(buf, len, seed);
	if (pwrite(fd, buf, len, off) != (ssize_t)len)
		die("pwrite");
	free(buf);
}

/* Does [off, off + len) hold the pattern written with seed at base? */
bool has_pattern(int fd, off_t off, size_t len, off_t base,
			unsigned int seed)
{
	char *want = malloc(off - base + len), *got = malloc(len);
	bool same;

	fill(want, off - base + len, seed);
	same = pread(fd, got, len, off) == (ssize_t)len &&
	       !memcmp(want + (off - base), got, len);
	free(want);
	free(got);
	return same;
}

bool is_zero(int fd, off_t off, size_t len)
{
	char *got = malloc(len);
	bool zero = pread(fd, got, len, off) == (ssize_t)len;

	for (size_t i = 0; zero && i < len; i++)
		zero = !got[i];
	free(got);
	return zero;
}

long blocks_of(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		die("fstat");
	return st.st_blocks;
}

long size_of(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		die("fstat");
	return st.st_size;
}

/* Is [off, off + len) all byte c? */
bool is_byte(int fd, off_t off, size_t len, char c)
{
	char *got = malloc(len);
	bool same = pread(fd, got, len, off) == (ssize_t)len;

	for (size_t i = 0; same && i < len; i++)
		same = got[i] == c;
	free(got);
	return same;
}

off_t seek(int fd, off_t off, int whence)
{
	off_t r = lseek(fd, off, whence);

	return r < 0 ? -errno : r;
}

uint64_t read_u64_at(const char *path, off_t index)
{
	uint64_t v = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || pread(fd, &v, 8, index * 8) != 8)
		die(path);
	close(fd);
	return v;
}

/*
 * The order of the folio caching file offset off, and whether it is
 * uptodate, from /proc/self/pagemap and /proc/kpageflags.  Mapping the file
 * makes a partially uptodate folio uptodate, so only use it on data.
 */
int folio_order_at(int fd, off_t off, bool *uptodate)
{
	size_t len = PMD;
	off_t start = off & ~(PMD - 1);
	char *map = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd,
			 start);
	uint64_t pfn, head, flags;
	volatile char touch;
	long n = 1;

	if (map == MAP_FAILED)
		die("mmap");
	touch = map[off - start];
	(void)touch;
	pfn = read_u64_at("/proc/self/pagemap",
			  ((uintptr_t)map + off - start) / PAGE);
	if (!(pfn >> 63))
		die("page not present");
	pfn &= (1ULL << 55) - 1;
	head = pfn;
	while (read_u64_at("/proc/kpageflags", head) & (1ULL << KPF_COMPOUND_TAIL))
		head--;
	flags = read_u64_at("/proc/kpageflags", head);
	if (flags & (1ULL << KPF_COMPOUND_HEAD))
		while (read_u64_at("/proc/kpageflags", head + n) &
		       (1ULL << KPF_COMPOUND_TAIL))
			n++;
	if (uptodate)
		*uptodate = flags & (1ULL << KPF_UPTODATE);
	munmap(map, len);
	return __builtin_ctzl(n);
}

/* The number a sysfs or /proc file starts with. */
long file_long(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) < 0)
		die(path);
	close(fd);
	return atol(buf);
}

long sysfs_long(const char *fmt, long arg)
{
	char path[256];

	snprintf(path, sizeof(path), fmt, arg);
	return file_long(path);
}

void sysfs_write(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, value, strlen(value)) < 0)
		die(path);
	close(fd);
}

/* Large shmem folios of size kb allocated so far (per-size mTHP counter). */
long shmem_allocs(long kb)
{
	return sysfs_long("/sys/kernel/mm/transparent_hugepage/hugepages-%ldkB/stats/shmem_alloc",
			  kb);
}

/* A per-size mTHP counter: hugepages-<kb>kB/stats/<stat>. */
long mthp_stat(long kb, const char *stat)
{
	char fmt[256];

	snprintf(fmt, sizeof(fmt), "/sys/kernel/mm/transparent_hugepage/hugepages-%%ldkB/stats/%s",
		 stat);
	return sysfs_long(fmt, kb);
}

/* A per-size mTHP counter summed over every size. */
long mthp_stat_sum(const char *stat)
{
	char pattern[256];
	long sum = 0;
	glob_t g;

	snprintf(pattern, sizeof(pattern),
		 "/sys/kernel/mm/transparent_hugepage/hugepages-*kB/stats/%s", stat);
	if (glob(pattern, 0, NULL, &g) || !g.gl_pathc)
		die(pattern);
	for (size_t i = 0; i < g.gl_pathc; i++)
		sum += file_long(g.gl_pathv[i]);
	globfree(&g);
	return sum;
}

long meminfo_kb(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key) + 1);
	if (f)
		fclose(f);
	return v;
}

/* The sum of /proc/vmstat's counters whose names begin with @prefix */
long vmstat_sum(const char *prefix)
{
	char line[128];
	long n, sum = 0;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		die("/proc/vmstat");
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, prefix, strlen(prefix)) &&
		    sscanf(strchr(line, ' '), "%ld", &n) == 1)
			sum += n;
	fclose(f);
	return sum;
}

/*
 * No report in the kernel log (KASAN and lockdep report with a BUG: or
 * WARNING: line); a hit is shown with the 30 lines from the one before it.
 */
void test_kernel_log(void)
{
	static const char *const bad[] = { "BUG:", "WARNING:", "Bad page", "Oops", "Call Trace" };
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *log = malloc(len + 1), *hit = NULL;

	len = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, len);
	log[len > 0 ? len : 0] = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) && !hit; i++)
		hit = strstr(log, bad[i]);
	if (hit) {
		char *start = hit, *end = hit;
		int lines = 0;

		/* from the line before the hit: what the report is about */
		while (start > log && lines < 2)
			if (*--start == '\n')
				lines++;
		for (lines = 0; *end && lines < 30; end++)
			if (*end == '\n')
				lines++;
		*end = 0;
		for (char *l = strtok(start, "\n"); l; l = strtok(NULL, "\n"))
			diag("kernel log: %s", l);
	}
	check(!hit, "no BUG, WARNING, bad page or oops in the kernel log");
	free(log);
}

/*
 * Run fn(arg) in a child process inside a fresh memory cgroup whose
 * memory.max is max; true if the child exited 0.  *swapped gets the swap
 * the cgroup used, in bytes.
 */
bool run_in_memcg(const char *max, void (*fn)(void *), void *arg, long *swapped)
{
	return run_in_memcg_swap(max, NULL, fn, arg, swapped);
}

/* Run fn(arg) in a child process in the cgroup at dir; did it exit 0? */
bool run_in_cgroup(const char *dir, void (*fn)(void *), void *arg)
{
	char pid[32], procs[256];
	int status;
	pid_t child = fork();

	if (child < 0)
		die("fork");
	if (child == 0) {
		snprintf(pid, sizeof(pid), "%d", getpid());
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
		sysfs_write(procs, pid);
		fn(arg);
		_exit(0);
	}
	if (waitpid(child, &status, 0) != child)
		die("waitpid");
	return WIFEXITED(status) && !WEXITSTATUS(status);
}

/* Remove the cgroup at parent and its children a and b, if they exist */
void cgroup_siblings_remove(const char *parent, const char *a, const char *b)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", parent, a);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/%s", parent, b);
	rmdir(path);
	rmdir(parent);
}

/* A fresh cgroup at parent with children a and b, the memory controller on */
void cgroup_siblings(const char *parent, const char *a, const char *b)
{
	char path[256];

	sysfs_write("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
	cgroup_siblings_remove(parent, a, b);
	if (mkdir(parent, 0755))
		die(parent);
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", parent);
	sysfs_write(path, "+memory");
	snprintf(path, sizeof(path), "%s/%s", parent, a);
	if (mkdir(path, 0755))
		die(path);
	snprintf(path, sizeof(path), "%s/%s", parent, b);
	if (mkdir(path, 0755))
		die(path);
}

/* The same, with memory.swap.max set to swap_max unless it is NULL */
bool run_in_memcg_swap(const char *max, const char *swap_max, void (*fn)(void *), void *arg,
		       long *swapped)
{
	bool ok;

	sysfs_write("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
	rmdir(MEMCG);
	if (mkdir(MEMCG, 0755))
		die(MEMCG);
	sysfs_write(MEMCG "/memory.max", max);
	if (swap_max)
		sysfs_write(MEMCG "/memory.swap.max", swap_max);
	ok = run_in_cgroup(MEMCG, fn, arg);
	*swapped = sysfs_long(MEMCG "/memory.swap.current", 0);
	rmdir(MEMCG);
	return ok;
}

/*
 * The file's first 2M mapped shared at a 2M boundary, so that a huge folio
 * can be mapped with a PMD; munmap(*area, 2 * PMD) undoes it.
 */
char *mmap_pmd(int fd, char **area)
{
	char *map;

	*area = mmap(NULL, 2 * PMD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*area == MAP_FAILED)
		die("mmap");
	map = (char *)(((uintptr_t)*area + PMD - 1) & ~(PMD - 1));
	if (mmap(map, PMD, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) != map)
		die("mmap fixed");
	return map;
}

/* From inside run_in_memcg(): push what the cgroup holds out to swap */
void memcg_reclaim_all(void)
{
	int fd = open(MEMCG "/memory.reclaim", O_WRONLY);

	if (fd < 0)
		die(MEMCG "/memory.reclaim");
	/* EAGAIN once nothing is left to reclaim */
	if (write(fd, "1G", 2) < 0 && errno != EAGAIN)
		die(MEMCG "/memory.reclaim");
	close(fd);
}

/* The selected word of a THP sysfs setting: "[always] never" gives always */
void thp_setting(const char *path, char *out, size_t len)
{
	char buf[256] = "", *l, *r;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) < 0)
		die(path);
	close(fd);
	l = strchr(buf, '[');
	r = l ? strchr(l, ']') : NULL;
	if (!r)
		die(path);
	*r = 0;
	snprintf(out, len, "%s", l + 1);
}
