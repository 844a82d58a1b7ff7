// SPDX-License-Identifier: GPL-2.0
/*
 * memcg_write CGROUP FILE KIB [CHUNK]: write KIB of data to FILE from inside
 * the cgroup v2 directory CGROUP, at once or in appends of CHUNK KiB.  The
 * buffer is touched before the process joins, so only the file's pages are
 * charged there: a known workload for charge fallbacks, small enough not
 * to be OOM-killed in a 1M cgroup.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long kib = argc == 4 || argc == 5 ? atol(argv[3]) : 0;
	long chunk = argc == 5 ? atol(argv[4]) : kib;
	size_t len = kib * 1024, step = chunk * 1024;
	char path[4096], pid[32];
	char *buf;
	int fd, procs;

	if (kib <= 0 || chunk <= 0) {
		fprintf(stderr, "usage: memcg_write CGROUP FILE KIB [CHUNK]\n");
		return 2;
	}
	buf = malloc(len);
	fd = open(argv[2], O_WRONLY | O_CREAT, 0600);
	snprintf(path, sizeof(path), "%s/cgroup.procs", argv[1]);
	procs = open(path, O_WRONLY);
	if (!buf || fd < 0 || procs < 0) {
		perror("memcg_write");
		return 1;
	}
	memset(buf, 'x', len);
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (write(procs, pid, strlen(pid)) < 0) {
		perror("memcg_write");
		return 1;
	}
	for (size_t done = 0; done < len; done += step) {
		size_t n = len - done < step ? len - done : step;

		if (pwrite(fd, buf + done, n, done) != (ssize_t)n) {
			perror("memcg_write");
			return 1;
		}
	}
	return 0;
}
