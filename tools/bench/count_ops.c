// SPDX-License-Identifier: GPL-2.0
/*
 * count_ops: one file operation of a default tmpfs mount, done ROUNDS
 * times, each time the same work, for tools/bench/count-instructions,
 * which single-steps the kernel entry that follows each marker.
 *
 *   count_ops DIR OP ROUNDS
 *
 * Before each round the files are put back as they were, outside the
 * measured call: what the call allocates was freed, and the times are
 * set long past, so that every round updates them on every kernel (a
 * timestamp that the clock's tick may or may not have moved would add
 * its work to one round and not another).  The marker is a
 * membarrier(MEMBARRIER_CMD_QUERY) whose third argument is the round,
 * 1 to ROUNDS; the next kernel entry, a system call or a page fault, is
 * the operation.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096L

static char buf[64 * 1024];

static void fail(const char *what)
{
	perror(what);
	exit(1);
}

static int new_file(const char *dir, const char *name, long size)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		fail(path);
	if (size && pwrite(fd, buf, size, 0) != size)
		fail("pwrite");
	return fd;
}

static void check(long ret, const char *what)
{
	if (ret < 0)
		fail(what);
}

/* The workloads, named as in tools/bench/default_ops where it has them */
static const char *const ops[] = {
	"pwrite_100B_overwrite", "append_100B", "append_4K",
	"pwrite_100B_at_EOF+1000", "pwrite_100B_past_EOF_page", "ftruncate_up",
	"pread_4K", "sendfile_64K", "fallocate_64K", "mmap_write_fault",
};

int main(int argc, char **argv)
{
	const struct timespec past[2] = { { 1, 0 }, { 1, 0 } };
	int fd, src, out, rounds, op;
	char *map = NULL;

	if (argc != 4 || (rounds = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: count_ops DIR OP ROUNDS\n");
		return 2;
	}
	for (op = 0; op < (int)(sizeof(ops) / sizeof(ops[0])); op++)
		if (!strcmp(argv[2], ops[op]))
			break;
	if (op == sizeof(ops) / sizeof(ops[0])) {
		fprintf(stderr, "count_ops: unknown operation '%s'\n", argv[2]);
		return 2;
	}
	memset(buf, 1, sizeof(buf));
	fd = new_file(argv[1], "file", PAGE);
	src = new_file(argv[1], "source", sizeof(buf));
	out = open("/dev/null", O_WRONLY);
	if (out < 0)
		fail("/dev/null");
	if (!strcmp(ops[op], "mmap_write_fault")) {
		check(ftruncate(fd, 1 << 20), "ftruncate");
		map = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED,
			   fd, 0);
		if (map == MAP_FAILED)
			fail("mmap");
	}

	for (long round = 1; round <= rounds; round++) {
		off_t pos = 0;

		/* Put back what the last round changed */
		switch (op) {
		case 1:
			check(ftruncate(fd, PAGE + 200), "ftruncate");
			check(lseek(fd, PAGE + 200, SEEK_SET), "lseek");
			break;
		case 2:
			check(ftruncate(fd, 2 * PAGE), "ftruncate");
			check(lseek(fd, 2 * PAGE, SEEK_SET), "lseek");
			break;
		case 3: case 4: case 5:
			check(ftruncate(fd, PAGE), "ftruncate");
			break;
		case 8: case 9:
			check(fallocate(fd, FALLOC_FL_PUNCH_HOLE |
					FALLOC_FL_KEEP_SIZE, 16 * PAGE,
					sizeof(buf)), "punch");
			break;
		}
		check(futimens(fd, past), "futimens");
		check(futimens(src, past), "futimens");
		syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, round);
		switch (op) {
		case 0:
			check(pwrite(fd, buf, 100, 0), "pwrite");
			break;
		case 1:
			check(write(fd, buf, 100), "write");
			break;
		case 2:
			check(write(fd, buf, PAGE), "write");
			break;
		case 3:
			check(pwrite(fd, buf, 100, PAGE + 1000), "pwrite");
			break;
		case 4:
			check(pwrite(fd, buf, 100, 3 * PAGE), "pwrite");
			break;
		case 5:
			check(ftruncate(fd, 3 * PAGE), "ftruncate");
			break;
		case 6:
			check(pread(src, buf, PAGE, PAGE), "pread");
			break;
		case 7:
			check(sendfile(out, src, &pos, sizeof(buf)), "sendfile");
			break;
		case 8:
			check(fallocate(fd, 0, 16 * PAGE, sizeof(buf)),
			      "fallocate");
			break;
		case 9:
			map[18 * PAGE] = 1;
			break;
		}
	}
	return 0;
}
