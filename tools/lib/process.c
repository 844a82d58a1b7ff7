// SPDX-License-Identifier: GPL-2.0
/*
 * The process_* metrics every Prometheus client library serves about its
 * own process, read from /proc/self (@self: the tests give another
 * directory), with the names, types and units of the client libraries.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "shmem_tools.h"

/*
 * Fields 14 (utime), 15 (stime), 22 (starttime), 23 (vsize) and 24 (rss)
 * of @self/stat, counted after the command name: it is in parentheses and
 * may hold spaces and parentheses itself, so the last ')' ends it.
 */
static int read_stat(const char *self, unsigned long long *utime,
		     unsigned long long *stime, unsigned long long *starttime,
		     unsigned long long *vsize, unsigned long long *rss)
{
	char path[4096], buf[1024];
	const char *after;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/stat", self);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	after = strrchr(buf, ')');
	/* state (field 3) onwards; the fields skipped are %*s */
	if (!after || sscanf(after + 1, " %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu"
			     " %*s %*s %*s %*s %*s %*s %llu %llu %llu",
			     utime, stime, starttime, vsize, rss) != 5)
		return -1;
	return 0;
}

int shmem_process_start_time(const char *self, const char *proc_stat,
			     double *start_time)
{
	unsigned long long utime, stime, starttime, vsize, rss, btime;
	char line[256];
	bool found = false;
	FILE *f;

	if (read_stat(self, &utime, &stime, &starttime, &vsize, &rss))
		return -1;
	f = fopen(proc_stat, "re");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "btime %llu", &btime) == 1;
	fclose(f);
	if (!found)
		return -1;
	/* starttime is in clock ticks after boot, btime the boot in Unix time */
	*start_time = btime + (double)starttime / sysconf(_SC_CLK_TCK);
	return 0;
}

/* Open fds: @self/fd's entries but the one reading them */
static int count_fds(const char *self, __u64 *open_fds)
{
	char path[4096];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/fd", self);
	d = opendir(path);
	if (!d)
		return -1;
	*open_fds = 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(d))
			(*open_fds)++;
	closedir(d);
	return 0;
}

/* The soft limit of open files, from @self/limits */
static int max_fds(const char *self, __u64 *max)
{
	char path[4096], line[256];
	unsigned long long soft;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/limits", self);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "Max open files %llu", &soft) == 1;
	fclose(f);
	if (!found)
		return -1;
	*max = soft;
	return 0;
}

int shmem_process_read(const char *self, struct shmem_process *p)
{
	unsigned long long utime, stime, starttime, vsize, rss;

	if (read_stat(self, &utime, &stime, &starttime, &vsize, &rss) ||
	    count_fds(self, &p->open_fds) || max_fds(self, &p->max_fds))
		return -1;
	p->cpu_seconds = (double)(utime + stime) / sysconf(_SC_CLK_TCK);
	p->virtual_bytes = vsize;
	p->resident_bytes = rss * sysconf(_SC_PAGESIZE);
	return 0;
}

void shmem_process_print(FILE *out, const struct shmem_process *p,
			 double start_time)
{
	fprintf(out, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
		"# TYPE process_cpu_seconds_total counter\n"
		"process_cpu_seconds_total %.15g\n"
		"# HELP process_open_fds Number of open file descriptors.\n"
		"# TYPE process_open_fds gauge\n"
		"process_open_fds %llu\n"
		"# HELP process_max_fds Maximum number of open file descriptors.\n"
		"# TYPE process_max_fds gauge\n"
		"process_max_fds %llu\n"
		"# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
		"# TYPE process_virtual_memory_bytes gauge\n"
		"process_virtual_memory_bytes %llu\n"
		"# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
		"# TYPE process_resident_memory_bytes gauge\n"
		"process_resident_memory_bytes %llu\n"
		"# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
		"# TYPE process_start_time_seconds gauge\n"
		"process_start_time_seconds %.15g\n",
		p->cpu_seconds, (unsigned long long)p->open_fds,
		(unsigned long long)p->max_fds,
		(unsigned long long)p->virtual_bytes,
		(unsigned long long)p->resident_bytes, start_time);
}
