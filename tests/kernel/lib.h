/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SHMEM_TESTS_LIB_H
#define SHMEM_TESTS_LIB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define KB 1024L
#define MB (1024 * KB)
#define PAGE 4096L
#define PMD (2 * MB)

#define KPF_UPTODATE 3
#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16

extern int passed, failed;

bool check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void die(const char *what) __attribute__((noreturn));
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *mount_tmpfs(const char *name, const char *opts);
int open_new(const char *dir, const char *name);
void fill(char *buf, size_t len, unsigned int seed);
void pwrite_pattern(int fd, off_t off, size_t len, unsigned int seed);
bool has_pattern(int fd, off_t off, size_t len, off_t base, unsigned int seed);
bool is_zero(int fd, off_t off, size_t len);
bool is_byte(int fd, off_t off, size_t len, char c);
long blocks_of(int fd);
long size_of(int fd);
off_t seek(int fd, off_t off, int whence);
uint64_t read_u64_at(const char *path, off_t index);
int folio_order_at(int fd, off_t off, bool *uptodate);
long file_long(const char *path);
long sysfs_long(const char *fmt, long arg);
void sysfs_write(const char *path, const char *value);
void thp_setting(const char *path, char *out, size_t len);
long shmem_allocs(long kb);
long mthp_stat(long kb, const char *stat);
long mthp_stat_sum(const char *stat);
long meminfo_kb(const char *key);
long vmstat_sum(const char *prefix);
void test_kernel_log(void);
bool run_in_memcg(const char *max, void (*fn)(void *), void *arg, long *swapped);
bool run_in_cgroup(const char *dir, void (*fn)(void *), void *arg);
void cgroup_siblings(const char *parent, const char *a, const char *b);
void cgroup_siblings_remove(const char *parent, const char *a, const char *b);
bool run_in_memcg_swap(const char *max, const char *swap_max, void (*fn)(void *), void *arg,
		       long *swapped);
void memcg_reclaim_all(void);
char *mmap_pmd(int fd, char **area);

/* The shmem trace events of one file, from tracefs (trace.c) */
#define TRACING "/sys/kernel/tracing"
#define MAX_FIELDS 12

struct event {
	char name[32];
	int nr;
	char key[MAX_FIELDS][16];
	char val[MAX_FIELDS][32];
};

struct trace {
	struct event *ev;
	int nr;
};

bool trace_available(void);
void trace_start(void);
struct trace trace_stop(unsigned long ino);
unsigned long ino_of(int fd);
const char *field(const struct event *e, const char *key);
long num(const struct event *e, const char *key);
bool is(const struct event *e, const char *key, const char *value);
int pick(const struct trace *t, const char *name, const struct event **out, int max);
int events(const struct trace *t, const char *name);
int count(const struct trace *t, const char *name, const char *key, const char *value);

/* The mounts main() makes, each with the name the tests' messages give it */
struct mnt {
	const char *dir, *name;
};

/* The test groups, a file each, by subject */
void orders_tests(const char *large, const char *plain, const char *huge,
		  const struct mnt *mounts, int n);
void seek_tests(const char *large, const char *huge);
void punch_tests(const char *large, const char *plain, const char *huge,
		 const char *hugelarge, const struct mnt *mounts, int n);
void read_splice_tests(const char *large, const char *huge);
void swap_tests(const char *large, const char *plain);
void random_ops_tests(const char *large, const char *plain, const char *huge,
		      unsigned int seed, long ops);
void trace_tests(const char *large, const char *plain, const char *huge,
		 const char *hugelarge);
void seal_tests(const char *large, const char *plain);
void collapse_tests(const char *large, const char *huge);
void eof_zeroing_tests(const struct mnt *mounts, int n, const char *huge);
void ramp_tests(const char *large, const char *plain);
void ramp_slack_reclaim_tests(const char *large, const char *plain);
void test_memcg_trims_slack(const char *large, void (*before)(const char *dir),
			    long kept, const char *what);
void memcg_tests(const char *large, const char *plain, const char *huge,
		 const char *hugelarge, bool nokmem);
void mount_option_tests(const char *large);
void eof_sigbus_tests(const char *large, const char *plain, const char *huge,
		      const char *hugelarge);
void write_source_tests(const char *large, const char *plain, const char *huge);

#endif
