// SPDX-License-Identifier: GPL-2.0
/*
 * default_ops: the file operations every user of a default tmpfs mount
 * does, each timed per operation, for the series-against-stock benchmark
 * (tools/bench/default-mount).
 *
 *   default_ops DIR ROUNDS [dd]
 *
 * Runs every workload ROUNDS times on a new file (or files) in DIR and
 * prints one line per round: "WORKLOAD NS_PER_OP"; with dd, only the
 * writes of a new 64M file in writes of 4K to 2M (ns per 4K page).  Under QEMU with
 * -icount shift=0 a nanosecond of guest time is one instruction.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KB 1024L
#define MB (1024 * KB)
#define PAGE 4096L

static char buf[2 * MB];
static const char *dir;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void fail(const char *what)
{
	perror(what);
	exit(1);
}

static int new_file(const char *name, int flags)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | flags, 0644);
	if (fd < 0)
		fail(path);
	unlink(path);
	return fd;
}

static void put(int fd, long len, off_t off)
{
	if (pwrite(fd, buf, len, off) != len)
		fail("pwrite");
}

/* A file of len bytes, written in 2M writes */
static int written_file(long len)
{
	int fd = new_file("data", 0);

	for (off_t off = 0; off < len; off += 2 * MB)
		put(fd, len - off < 2 * MB ? len - off : 2 * MB, off);
	return fd;
}

/* Each workload returns its operations' time and count */
struct timing {
	double ns;
	long ops;
};

#define TIMED(n, body) ({ double t0 = now_ns(); body; (struct timing){ now_ns() - t0, n }; })

static struct timing pwrite_past_eof(void)
{
	int fd = new_file("w", 0);
	struct timing t = TIMED(4096, for (long i = 0; i < 4096; i++) put(fd, 100, i * 8 * KB));

	close(fd);
	return t;
}

static struct timing pwrite_eof_gap(void)
{
	int fd = new_file("w", 0);
	struct timing t = TIMED(4096, for (long i = 0; i < 4096; i++) put(fd, 100, i * 1100 + 1000));

	close(fd);
	return t;
}

static struct timing truncate_up(void)
{
	int fd = new_file("w", 0);
	struct timing t = TIMED(4096, for (long i = 0; i < 4096; i++) {
		put(fd, 100, i * PAGE);
		if (ftruncate(fd, (i + 1) * PAGE))
			fail("ftruncate");
	});

	close(fd);
	return t;
}

static struct timing appends(long len, long n)
{
	int fd = new_file("w", O_APPEND);
	struct timing t = TIMED(n, for (long i = 0; i < n; i++)
		if (write(fd, buf, len) != len)
			fail("write"));

	close(fd);
	return t;
}

static struct timing append_4k(void) { return appends(PAGE, 4096); }
static struct timing append_100(void) { return appends(100, 16384); }

static struct timing overwrite_100(void)
{
	int fd = written_file(MB);
	struct timing t = TIMED(16384, for (long i = 0; i < 16384; i++)
		put(fd, 100, (i * 7919 * 100) % (MB - 100)));

	close(fd);
	return t;
}

static struct timing pread_4k(void)
{
	int fd = written_file(4 * MB);
	struct timing t = TIMED(8192, for (long i = 0; i < 8192; i++)
		if (pread(fd, buf, PAGE, (i % 1024) * PAGE) != PAGE)
			fail("pread"));

	close(fd);
	return t;
}

static struct timing small_files(void)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/small", dir);
	return TIMED(2048, for (long i = 0; i < 2048; i++) {
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || write(fd, buf, PAGE) != PAGE)
			fail("small file");
		close(fd);
		unlink(path);
	});
}

static struct timing fallocate_64k(void)
{
	int fd = new_file("w", 0);
	struct timing t = TIMED(512, for (long i = 0; i < 512; i++)
		if (fallocate(fd, 0, i * 64 * KB, 64 * KB))
			fail("fallocate"));

	close(fd);
	return t;
}

static struct timing punch_4k(void)
{
	int fd = written_file(16 * MB);
	struct timing t = TIMED(2048, for (long i = 0; i < 2048; i++)
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, i * 8 * KB, PAGE))
			fail("punch"));

	close(fd);
	return t;
}

static struct timing mmap_write_faults(void)
{
	int fd = new_file("w", 0);
	char *map;
	struct timing t;

	if (ftruncate(fd, 16 * MB))
		fail("ftruncate");
	map = mmap(NULL, 16 * MB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		fail("mmap");
	t = TIMED(4096, for (long i = 0; i < 4096; i++) map[i * PAGE] = 1);
	munmap(map, 16 * MB);
	close(fd);
	return t;
}

/* Two processes appending 4K each through O_APPEND descriptors of one file */
static struct timing append_2proc(void)
{
	int fd = new_file("w", O_APPEND);
	double t0 = now_ns();
	pid_t child[2];

	for (int c = 0; c < 2; c++) {
		child[c] = fork();
		if (child[c] < 0)
			fail("fork");
		if (!child[c]) {
			for (long i = 0; i < 2048; i++)
				if (write(fd, buf, PAGE) != PAGE)
					_exit(1);
			_exit(0);
		}
	}
	for (int c = 0; c < 2; c++) {
		int status;

		if (waitpid(child[c], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			fail("appending child");
	}
	close(fd);
	return (struct timing){ now_ns() - t0, 4096 };
}

static struct timing sendfile_64k(void)
{
	int fd = written_file(16 * MB), null = open("/dev/null", O_WRONLY);
	struct timing t;

	if (null < 0)
		fail("/dev/null");
	t = TIMED(256, for (long i = 0; i < 256; i++) {
		off_t off = i * 64 * KB;

		if (sendfile(null, fd, &off, 64 * KB) != 64 * KB)
			fail("sendfile");
	});
	close(null);
	close(fd);
	return t;
}

static struct timing splice_64k(void)
{
	int fd = written_file(16 * MB), p[2];
	struct timing t;

	if (pipe(p) || fcntl(p[1], F_SETPIPE_SZ, 64 * KB) < 0)
		fail("pipe");
	t = TIMED(256, for (long i = 0; i < 256; i++) {
		loff_t off = i * 64 * KB;

		if (splice(fd, &off, p[1], NULL, 64 * KB, 0) != 64 * KB ||
		    read(p[0], buf, 64 * KB) != 64 * KB)
			fail("splice");
	});
	close(p[0]);
	close(p[1]);
	close(fd);
	return t;
}

/* dd: 64M written to a new file in writes of bs (ns per 4K page) */
static struct timing write_bs(long bs)
{
	int fd = new_file("w", 0);
	struct timing t = TIMED(64 * MB / PAGE, for (long i = 0; i < 64 * MB / bs; i++)
		if (write(fd, buf, bs) != bs)
			fail("write"));

	close(fd);
	return t;
}

/* 64M read back in reads of bs (ns per 4K page) */
static struct timing read_bs(long bs)
{
	int fd = written_file(64 * MB);
	struct timing t = TIMED(64 * MB / PAGE, for (long off = 0; off < 64 * MB; off += bs)
		if (pread(fd, buf, bs, off) != bs)
			fail("pread"));

	close(fd);
	return t;
}

static const struct {
	const char *name;
	struct timing (*run)(void);
} workloads[] = {
	{ "pwrite_100B_at_i*8K", pwrite_past_eof },
	{ "pwrite_100B_at_EOF+1000", pwrite_eof_gap },
	{ "write_100B+ftruncate_up", truncate_up },
	{ "append_4K", append_4k },
	{ "append_100B", append_100 },
	{ "pwrite_100B_overwrite", overwrite_100 },
	{ "pread_4K", pread_4k },
	{ "create+write_4K+unlink", small_files },
	{ "fallocate_64K", fallocate_64k },
	{ "punch_4K", punch_4k },
	{ "mmap_write_fault", mmap_write_faults },
	{ "O_APPEND_4K_2_procs", append_2proc },
	{ "sendfile_64K", sendfile_64k },
	{ "splice_64K", splice_64k },
};

static const long sizes[] = { 4 * KB, 16 * KB, 64 * KB, 256 * KB, MB, 2 * MB };

static void report(const char *name, struct timing t)
{
	printf("%s %.1f\n", name, t.ns / t.ops);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	bool dd_only = argc == 4 && !strcmp(argv[3], "dd");
	int rounds = argc == 3 || dd_only ? atoi(argv[2]) : 0;

	if (rounds < 1 || rounds > 99) {
		fprintf(stderr, "usage: default_ops DIR ROUNDS(1-99) [dd]\n");
		return 2;
	}
	dir = argv[1];
	memset(buf, 'x', sizeof(buf));
	for (int r = 0; r < rounds; r++) {
		char name[40];

		for (size_t w = 0; !dd_only && w < sizeof(workloads) / sizeof(workloads[0]); w++)
			report(workloads[w].name, workloads[w].run());
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			long k = sizes[s] / KB;
			char size[24];

			snprintf(size, sizeof(size), "%ld%c", k < 1024 ? k : k / 1024,
				 k < 1024 ? 'K' : 'M');
			snprintf(name, sizeof(name), "read_%s", size);
			if (!dd_only)
				report(name, read_bs(sizes[s]));
			snprintf(name, sizeof(name), "dd_write_%s", size);
			report(name, write_bs(sizes[s]));
		}
	}
	return 0;
}
