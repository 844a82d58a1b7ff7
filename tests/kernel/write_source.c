// SPDX-License-Identifier: GPL-2.0
/*
 * Where write() copies from: before each step it faults in only what that
 * step may copy (patch 15), and copies from every source a read would
 * accept, on every mount:
 * - a mapping of the file it writes: the same page, the same folio,
 *   another folio, a hole of the file;
 * - a source with a PROT_NONE hole: the short count stock gives, and a
 *   source that cannot be read at all changes nothing;
 * - a page that userfaultfd fills on its first touch, and a page on swap.
 * The fault-in is counted with a kprobe on fault_in_readable(), which
 * fault_in_iov_iter_readable() calls once for a write's one buffer (the
 * latter cannot be probed: kprobes refuse it):
 * a 2M write from a resident buffer into 4K folios faults in 4K before
 * each folio, where stock faulted in up to 2M again for each (513M in 512
 * calls), and a step into a larger folio copies what is resident.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "lib.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

static char *map_file(int fd, size_t len)
{
	char *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (map == MAP_FAILED)
		die("mmap");
	return map;
}

/* write() from a mapping of the same file, into itself */
static void from_own_mapping(const char *dir, const char *name)
{
	int fd = open_new(dir, "src-own");
	char *want = malloc(4 * MB), *map;

	fill(want, 2 * MB, 100);
	pwrite_pattern(fd, 0, 2 * MB, 100);
	if (ftruncate(fd, 4 * MB))
		die("ftruncate");
	map = map_file(fd, 4 * MB);
	/* the same page, overlapping: a forward copy, as memmove() would */
	check(pwrite(fd, map + 100, 1000, 0) == 1000, "%s: pwrite from the same page", name);
	memmove(want, want + 100, 1000);
	/* the same (large) folio, from its second MiB into its first */
	check(pwrite(fd, map + MB + PAGE, 64 * KB, 16 * KB) == 64 * KB,
	      "%s: pwrite from the same folio", name);
	memcpy(want + 16 * KB, want + MB + PAGE, 64 * KB);
	/* another folio: the first 1M into the file's third MiB (a hole) */
	check(pwrite(fd, map, MB, 2 * MB + 8 * KB) == MB, "%s: pwrite from another folio", name);
	memset(want + 2 * MB, 0, 2 * MB);
	memcpy(want + 2 * MB + 8 * KB, want, MB);
	/* a hole of the file, never touched, written into itself */
	check(pwrite(fd, map + 3 * MB + 512 * KB, 8 * KB, 3 * MB + 512 * KB) == 8 * KB,
	      "%s: pwrite from a hole of the file into itself", name);
	munmap(map, 4 * MB);
	{
		char *got = malloc(4 * MB);

		check(pread(fd, got, 4 * MB, 0) == 4 * MB && !memcmp(got, want, 4 * MB),
		      "%s: the file holds what each of those copies read from the mapping", name);
		free(got);
	}
	free(want);
	close(fd);
}

/*
 * A 2M write from a buffer whose second MiB is PROT_NONE writes 1M, as
 * on stock; a 4K write at EOF from an unreadable buffer fails with EFAULT
 * and leaves nothing allocated.
 */
static void from_unreadable(const char *dir, const char *name)
{
	int fd = open_new(dir, "src-unreadable");
	char *src = mmap(NULL, 2 * MB, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ssize_t n;
	long blocks;

	if (src == MAP_FAILED)
		die("mmap");
	fill(src, MB, 101);
	mprotect(src + MB, MB, PROT_NONE);
	n = pwrite(fd, src, 2 * MB, 0);
	check(n == MB && has_pattern(fd, 0, MB, 0, 101),
	      "%s: a 2M write whose source's second MiB is PROT_NONE writes 1M (%zd)", name, n);
	blocks = blocks_of(fd);
	n = pwrite(fd, src + MB, PAGE, MB);
	check(n == -1 && errno == EFAULT && blocks_of(fd) == blocks,
	      "%s: a 4K write at EOF from a PROT_NONE source fails with EFAULT, "
	      "st_blocks unchanged (%ld, was %ld)", name, blocks_of(fd), blocks);
	munmap(src, 2 * MB);
	close(fd);
}

struct writer {
	int fd;
	char *src;
	size_t len;
	ssize_t ret;
};

static void *write_src(void *arg)
{
	struct writer *w = arg;

	w->ret = pwrite(w->fd, w->src, w->len, 0);
	return NULL;
}

/* A 64K write from pages that userfaultfd fills as the write touches them */
static void from_userfaultfd(const char *dir, const char *name)
{
	struct writer w = { .fd = open_new(dir, "src-uffd"), .len = 64 * KB };
	long uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct pollfd pfd = { .fd = (int)uffd, .events = POLLIN };
	char *page = malloc(PAGE);
	pthread_t thread;
	int faults = 0;

	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
		die("userfaultfd");
	w.src = mmap(NULL, w.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w.src == MAP_FAILED)
		die("mmap");
	reg.range.start = (uintptr_t)w.src;
	reg.range.len = w.len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	if (pthread_create(&thread, NULL, write_src, &w))
		die("pthread_create");
	/* Each page's first touch is one fault, answered with its pattern */
	while (faults < 16 && poll(&pfd, 1, 60000) == 1) {
		struct uffd_msg msg;
		struct uffdio_copy copy = { 0 };
		uintptr_t at;

		if (read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			die("userfaultfd message");
		at = msg.arg.pagefault.address & ~(PAGE - 1);
		fill(page, PAGE, 102 + (at - (uintptr_t)w.src) / PAGE);
		copy.dst = at;
		copy.src = (uintptr_t)page;
		copy.len = PAGE;
		if (ioctl(uffd, UFFDIO_COPY, &copy))
			die("UFFDIO_COPY");
		faults++;
	}
	if (pthread_join(thread, NULL))
		die("pthread_join");
	{
		bool same = w.ret == (ssize_t)w.len;

		for (long p = 0; same && p < 16; p++)
			same = has_pattern(w.fd, p * PAGE, PAGE, p * PAGE, 102 + p);
		check(same && faults == 16,
		      "%s: a 64K write from 16 userfaultfd pages: %d faults answered, %zd written, "
		      "each page's bytes in place", name, faults, w.ret);
	}
	munmap(w.src, w.len);
	free(page);
	close((int)uffd);
	close(w.fd);
}

/* A 1M write from anonymous memory pushed out to swap first */
static void from_swap(const char *dir, const char *name)
{
	int fd = open_new(dir, "src-swap");
	char *src = mmap(NULL, MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char vec[MB / PAGE];
	int resident = 0;

	if (src == MAP_FAILED)
		die("mmap");
	fill(src, MB, 103);
	if (madvise(src, MB, MADV_PAGEOUT) || mincore(src, MB, vec))
		die("MADV_PAGEOUT");
	for (size_t i = 0; i < sizeof(vec); i++)
		resident += vec[i] & 1;
	check(pwrite(fd, src, MB, 0) == MB && has_pattern(fd, 0, MB, 0, 103),
	      "%s: a 1M write from anonymous memory paged out (%d of 256 pages left "
	      "resident) writes its bytes", name, resident);
	if (resident == 256)
		diag("MADV_PAGEOUT swapped nothing: is swap on?");
	munmap(src, MB);
	close(fd);
}

/*
 * The bytes fault_in_readable() is asked to fault in while this
 * process writes len bytes at offset 0 of a new file in dir, from a
 * resident buffer, and in how many calls.
 */
#define KPROBE "shmem_test_fault_in"

static long faulted_in(const char *dir, size_t len, long *calls)
{
	char *src = malloc(len), line[512];
	int fd = open_new(dir, "src-count");
	long bytes = 0, pid = getpid();
	FILE *f;

	fill(src, len, 104);
	sysfs_write(TRACING "/events/kprobes/" KPROBE "/enable", "1");
	close(open(TRACING "/trace", O_WRONLY | O_TRUNC));
	if (pwrite(fd, src, len, 0) != (ssize_t)len)
		die("pwrite");
	sysfs_write(TRACING "/events/kprobes/" KPROBE "/enable", "0");
	f = fopen(TRACING "/trace", "r");
	if (!f)
		die("trace");
	*calls = 0;
	while (fgets(line, sizeof(line), f)) {
		char want[32];
		const char *size = strstr(line, " size=");

		snprintf(want, sizeof(want), "-%ld ", pid);
		if (line[0] == '#' || !size || !strstr(line, want))
			continue;
		bytes += strtol(size + 6, NULL, 0);
		(*calls)++;
	}
	fclose(f);
	free(src);
	close(fd);
	return bytes;
}

static void test_fault_in_per_step(const char *plain, const char *huge, const char *large)
{
	static const char probe[] = "p:kprobes/" KPROBE " fault_in_readable size=%si:u64\n";
	long calls, bytes;
	int fd;

	sysfs_write(TRACING "/tracing_on", "1");
	fd = open(TRACING "/kprobe_events", O_WRONLY | O_APPEND);
	if (fd < 0 || write(fd, probe, sizeof(probe) - 1) != (ssize_t)sizeof(probe) - 1) {
		check(false, "a kprobe on fault_in_readable: %m");
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	bytes = faulted_in(plain, 2 * MB, &calls);
	/*
	 * Each 4K step faults in its own page right before write_begin, as
	 * stock does: had it relied on an earlier step's fault-in, a page
	 * the source lost meanwhile would fail the copy into a folio
	 * allocated for it, and leave that folio past EOF.
	 */
	check(bytes == 2 * MB && calls == 512,
	      "default mount: a 2M write into 4K folios faults in each folio's 4K before it: "
	      "%ld bytes in %ld calls (stock: up to 2M again per 4K folio)", bytes, calls);
	bytes = faulted_in(plain, 16 * KB, &calls);
	check(bytes == 16 * KB && calls == 4,
	      "default mount: a 16K write: %ld bytes in %ld calls", bytes, calls);
	/* the first step faults in a page; its 2M folio takes the resident rest */
	bytes = faulted_in(huge, 2 * MB, &calls);
	check(bytes == 4 * KB && calls == 1,
	      "huge=always: a 2M write into a 2M folio: %ld bytes in %ld calls", bytes, calls);
	bytes = faulted_in(large, 3 * MB, &calls);
	check(bytes == MB + 4 * KB && calls == 2,
	      "large_folios: a 3M write (a 2M folio, then a 1M one): %ld bytes in %ld calls",
	      bytes, calls);
	fd = open(TRACING "/kprobe_events", O_WRONLY | O_APPEND);
	if (fd < 0 || write(fd, "-:kprobes/" KPROBE "\n", sizeof(KPROBE) + 10) < 0)
		die("kprobe_events");
	close(fd);
	sysfs_write(TRACING "/tracing_on", "0");
}

void write_source_tests(const char *large, const char *plain, const char *huge)
{
	const char *mounts[][2] = {
		{ plain, "default mount" }, { large, "large_folios" }, { huge, "huge=always" },
	};

	for (int i = 0; i < 3; i++) {
		from_own_mapping(mounts[i][0], mounts[i][1]);
		from_unreadable(mounts[i][0], mounts[i][1]);
		from_userfaultfd(mounts[i][0], mounts[i][1]);
		from_swap(mounts[i][0], mounts[i][1]);
	}
	test_fault_in_per_step(plain, huge, large);
}
