// SPDX-License-Identifier: GPL-2.0
/*
 * churn DIR FILES PROCS: FILES files of 4K in DIR, each written and
 * unlinked before the next, then PROCS processes, one after another, each
 * writing and unlinking one file of its own.  The tool tests' workload
 * for more files and processes than the tools' maps hold; in C because
 * under emulation a forked Python child costs ten times as much.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char page[4096];

static void one(const char *dir, char kind, long i)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%c%ld", dir, kind, i);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	if (fd < 0 || write(fd, page, sizeof(page)) != sizeof(page) || close(fd) ||
	    unlink(path)) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	long files = argc == 4 ? atol(argv[2]) : -1, procs = argc == 4 ? atol(argv[3]) : -1;
	int status;

	if (files < 0 || procs < 0) {
		fprintf(stderr, "usage: churn DIR FILES PROCS\n");
		return 2;
	}
	memset(page, 'x', sizeof(page));
	for (long i = 0; i < files; i++)
		one(argv[1], 'f', i);
	for (long i = 0; i < procs; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			one(argv[1], 'p', i);
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			fprintf(stderr, "churn: child %ld failed\n", i);
			return 1;
		}
	}
	return 0;
}
