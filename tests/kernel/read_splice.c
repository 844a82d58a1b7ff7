// SPDX-License-Identifier: GPL-2.0
/*
 * read(), splice() and sendfile() of large folios:
 * - read() copies a wholly uptodate large folio in one step, anything else
 *   a page at a time: across pages and folios, to an EOF inside a folio,
 *   into a buffer that faults part way, a partially uptodate folio in one
 *   read, and a PMD folio with a poisoned page that a pipe keeps from
 *   being split (the read stops before it, the page gives EIO);
 * - splice and sendfile of a partial folio give the data and zeroes for
 *   the holes; splice of a partially written folio copies, so that the
 *   pipe keeps the data across a punch or a truncate, while a fully
 *   uptodate folio is spliced by reference, as on stock; the copy of a
 *   tail stops at EOF.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib.h"

static bool pipe_matches(int pfd, const char *want, size_t len)
{
	char *got = malloc(len);
	size_t n = 0;
	ssize_t r;
	bool same;

	while (n < len && (r = read(pfd, got + n, len - n)) > 0)
		n += r;
	same = n == len && !memcmp(got, want, len);
	free(got);
	return same;
}

static void test_splice(const char *dir)
{
	int fd = open_new(dir, "splice"), out, p[2];
	char *want = calloc(1, 64 * KB);
	loff_t off = 0;

	check(!fallocate(fd, 0, 0, 64 * KB), "fallocate 64K");
	fill(want + 16 * KB, 4 * KB, 15);
	pwrite_pattern(fd, 16 * KB, 4 * KB, 15);
	if (pipe(p) || fcntl(p[1], F_SETPIPE_SZ, 128 * KB) < 0)
		die("pipe");
	check(splice(fd, &off, p[1], NULL, 64 * KB, 0) == 64 * KB, "splice 64K of a partial folio");
	check(pipe_matches(p[0], want, 64 * KB), "the pipe holds the data and zeroes for the holes");

	out = open_new(dir, "sendfile-out");
	off = 0;
	check(sendfile(out, fd, &off, 64 * KB) == 64 * KB, "sendfile 64K of a partial folio");
	char *got = malloc(64 * KB);
	check(pread(out, got, 64 * KB, 0) == 64 * KB && !memcmp(got, want, 64 * KB),
	      "the copy holds the data and zeroes for the holes");
	free(got);
	free(want);
	close(out);
	close(p[0]);
	close(p[1]);
	close(fd);
}

/*
 * read() copies a wholly uptodate large folio in one step, and anything
 * else a page at a time: reads across pages and folios, to an EOF inside
 * a folio, into a buffer that faults part way, of a partially uptodate
 * folio, and of a PMD folio with a poisoned page that cannot be split.
 */
static void test_read_folios(const char *huge, const char *large)
{
	int fd = open_new(huge, "read"), p[2];
	long size = 2 * PMD + 100;
	char *want = malloc(size), *buf;
	loff_t off = 0;
	bool uptodate;
	ssize_t r;

	fill(want, size, 21);
	check(pwrite(fd, want, size, 0) == size, "write 4M and 100 bytes");
	check(folio_order_at(fd, 0, &uptodate) == 9 && uptodate, "into uptodate PMD folios");
	check(has_pattern(fd, PMD - PAGE - 7, 3 * PAGE + 11, 0, 21),
	      "a read across pages and a folio boundary, at unaligned ends, reads back");
	buf = mmap(NULL, PMD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	r = pread(fd, buf, MB, 2 * PMD - 50);
	check(r == 150 && !memcmp(buf, want + 2 * PMD - 50, 150),
	      "a read past EOF stops there, inside the last folio (%zd)", r);
	mprotect(buf + PMD - PAGE, PAGE, PROT_NONE);
	r = pread(fd, buf, PMD, 100);
	check(r == PMD - PAGE && !memcmp(buf, want + 100, r),
	      "a 2M read into a buffer whose last 4K is unwritable returns 2M - 4K (%zd)", r);
	munmap(buf, PMD);

	/* A pipe holds a reference, so memory failure cannot split the folio */
	if (pipe(p))
		die("pipe");
	check(splice(fd, &off, p[1], NULL, PAGE, 0) == PAGE, "splice the first page into a pipe");
	pid_t pid = fork();

	if (!pid) {	/* memory failure kills the processes that map the page */
		char *map = mmap(NULL, PMD, PROT_READ, MAP_SHARED, fd, 0);

		_exit(map == MAP_FAILED || madvise(map + 5 * PAGE, PAGE, MADV_HWPOISON));
	}
	int status = 0;

	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	check(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS,
	      "MADV_HWPOISON on page 5 of the folio kills its mapper with SIGBUS (status %#x)",
	      status);
	check(folio_order_at(fd, 0, &uptodate) == 9, "the folio stays whole");
	buf = malloc(PMD);
	r = pread(fd, buf, PMD, 0);
	check(r == 5 * PAGE && !memcmp(buf, want, r),
	      "a read of the folio stops before the poisoned page (%zd)", r);
	r = pread(fd, buf, PAGE, 5 * PAGE);
	check(r < 0 && errno == EIO, "a read of the poisoned page fails with EIO (%zd)", r);
	r = pread(fd, buf, PMD - 6 * PAGE, 6 * PAGE);
	check(r == PMD - 6 * PAGE && !memcmp(buf, want + 6 * PAGE, r),
	      "the pages after it read back (%zd)", r);
	close(p[0]);
	close(p[1]);
	close(fd);
	free(want);

	/* Only the page read is known to be uptodate in a partial folio */
	fd = open_new(large, "read-partial");
	want = calloc(1, 3 * PAGE);
	check(!fallocate(fd, 0, 0, 64 * KB), "fallocate 64K");
	fill(want, PAGE, 22);
	fill(want + 2 * PAGE, PAGE, 23);
	check(pwrite(fd, want, PAGE, 0) == PAGE && pwrite(fd, want + 2 * PAGE, PAGE, 2 * PAGE) == PAGE,
	      "write blocks 0 and 2 of a 64K folio");
	r = pread(fd, buf, 3 * PAGE, 0);
	check(r == 3 * PAGE && !memcmp(buf, want, r),
	      "one read of blocks 0 to 2 returns the data and zeroes for block 1");
	free(buf);
	free(want);
	close(fd);
}

/* ---- splice of partially uptodate folios copies ---- */

static bool read_pipe(int pfd, char *got, size_t len, const char **err)
{
	size_t n = 0;
	ssize_t r = 0;

	while (n < len && (r = read(pfd, got + n, len - n)) > 0)
		n += r;
	*err = r < 0 ? strerror(errno) : n < len ? "short read" : "ok";
	return n == len;
}

static void test_splice_partial(const char *huge, const char *large)
{
	char want[8 * KB], got[8 * KB];
	const char *err = "";
	loff_t off = 0;
	int fd, p[2];
	bool ok;

	fd = open_new(huge, "splice-punch");
	fill(want, sizeof(want), 45);
	if (pwrite(fd, want, sizeof(want), 0) != sizeof(want) || pipe2(p, O_NONBLOCK))
		die("splice-punch");
	check(splice(fd, &off, p[1], NULL, 8 * KB, 0) == 8 * KB,
	      "huge=always: splice 8K of a partially written 2M folio");
	check(!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PAGE), "punch 0..4K");
	ok = read_pipe(p[0], got, sizeof(got), &err);
	check(ok, "the pipe reads 8192 bytes (%s)", err);
	check(!memcmp(got, want, sizeof(got)),
	      "both 4K halves are the data as it was at splice time (a copy)");
	close(p[0]);
	close(p[1]);
	close(fd);

	fd = open_new(huge, "splice-truncate");
	off = 0;
	fill(want, sizeof(want), 46);
	if (pwrite(fd, want, sizeof(want), 0) != sizeof(want) || pipe2(p, O_NONBLOCK))
		die("splice-truncate");
	check(splice(fd, &off, p[1], NULL, 8 * KB, 0) == 8 * KB,
	      "huge=always: splice 8K of a partially written 2M folio");
	check(!ftruncate(fd, 0), "truncate the file to 0");
	ok = read_pipe(p[0], got, sizeof(got), &err);
	check(ok && !memcmp(got, want, sizeof(got)), "the pipe still reads the 8K of data (%s)", err);
	close(p[0]);
	close(p[1]);
	close(fd);

	/* Unchanged: a fully uptodate folio is spliced by reference */
	fd = open_new(large, "splice-ref");
	off = 0;
	pwrite_pattern(fd, 0, 64 * KB, 47);
	if (pipe2(p, O_NONBLOCK))
		die("pipe");
	check(splice(fd, &off, p[1], NULL, PAGE, 0) == PAGE,
	      "large_folios: splice 4K of a fully written 64K folio");
	fill(want, PAGE, 48);
	if (pwrite(fd, want, PAGE, 0) != PAGE)
		die("pwrite");
	ok = read_pipe(p[0], got, PAGE, &err);
	check(ok && !memcmp(got, want, PAGE),
	      "the pipe references the page: it reads what was written after the splice (%s)", err);
	close(p[0]);
	close(p[1]);
	close(fd);
}

/*
 * The tail of a partially written folio, spliced with a request far past
 * EOF, is copied up to EOF only: the copy allocates its pipe pages before
 * ->read_iter() stops at EOF, so a copy sized by the request once took a
 * pipe's worth of pages (256 for 1M) to splice 100 bytes.
 */
static void test_splice_tail(const char *huge)
{
	enum { SPLICES = 64 };
	char want[8 * KB + 100], got[100];
	int fd = open_new(huge, "splice-tail"), p[2], right = 0;
	long allocated;

	fill(want, sizeof(want), 49);
	if (pwrite(fd, want, sizeof(want), 0) != sizeof(want) || pipe(p) ||
	    fcntl(p[1], F_SETPIPE_SZ, MB) < 0)
		die("splice-tail");
	allocated = vmstat_sum("pgalloc_");
	for (int i = 0; i < SPLICES; i++) {
		loff_t off = 8 * KB;

		if (splice(fd, &off, p[1], NULL, MB, 0) == 100 &&
		    read(p[0], got, sizeof(got)) == sizeof(got) &&
		    !memcmp(got, want + 8 * KB, sizeof(got)))
			right++;
	}
	allocated = vmstat_sum("pgalloc_") - allocated;
	check(right == SPLICES, "huge=always: %d splices of 1M at the last 100 bytes of a "
	      "partially written folio give those 100 bytes (%d did)", SPLICES, right);
	/* One page each for the copy; the rest of the guest allocates a few */
	check(allocated < 2 * SPLICES, "and allocate %ld pages, fewer than 2 a splice: "
	      "the copy stops at EOF, not at the request's end", allocated);
	close(p[0]);
	close(p[1]);
	close(fd);
}

void read_splice_tests(const char *large, const char *huge)
{
	test_splice(large);
	test_read_folios(huge, large);
	test_splice_partial(huge, large);
	test_splice_tail(huge);
}
