// SPDX-License-Identifier: GPL-2.0
/*
 * copy_cost: what copying and zeroing memory cost where it runs, in
 * nanoseconds per byte, to read the benchmarks by (under QEMU -icount
 * shift=0 a guest nanosecond is one executed instruction).
 *
 *   copy_cost user MIB          user space, MIB in 4K chunks: rep movsb,
 *                               rep movsq, rep stosb, rep stosq, a loop of
 *                               8-byte stores, glibc memcpy and memset
 *   copy_cost file PATH MIB BS  the kernel's copies: write MIB to a new file
 *                               at PATH in BS writes, overwrite it, read it
 *                               back (copy_from_user/copy_to_user, plus the
 *                               allocation on the first write); then unlink
 *   copy_cost fault MIB         fault in MIB of anonymous shared memory, one
 *                               byte written per 4K page (the kernel zeroes
 *                               every page: clear_page)
 *
 * Prints "NAME NS_PER_BYTE" lines; user-space figures are the best of 3
 * passes over buffers faulted in beforehand.
 *
 * Source buffers start one page past a 2M boundary, destinations on one
 * (tmpfs's and XFS's large folios are 2M-aligned in the direct map): under
 * plain TCG, QEMU's direct-mapped soft TLB thrashes when source and
 * destination pages share their low page-number bits, and a copy then
 * costs tens of times more per access.  user-rep-movsb-same-index shows
 * that case (both 2M-aligned); fio's malloc()ed buffers usually avoid it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 4096L
#define PASSES 3
#define PMD (2L << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void rep_movsb(char *d, const char *s, long n)
{
	asm volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

static void rep_movsq(char *d, const char *s, long n)
{
	n /= 8;
	asm volatile("rep movsq" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

static void rep_stosb(char *d, const char *s, long n)
{
	(void)s;
	asm volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(0) : "memory");
}

static void rep_stosq(char *d, const char *s, long n)
{
	(void)s;
	n /= 8;
	asm volatile("rep stosq" : "+D"(d), "+c"(n) : "a"(0L) : "memory");
}

static void store_loop(char *d, const char *s, long n)
{
	volatile uint64_t *p = (volatile uint64_t *)d;

	(void)s;
	for (long i = 0; i < n / 8; i++)
		p[i] = 0;
}

/* Through pointers, so the compiler calls glibc rather than inlining. */
static void *(*volatile glibc_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile glibc_memset)(void *, int, size_t) = memset;

static void libc_memcpy(char *d, const char *s, long n)
{
	glibc_memcpy(d, s, n);
}

static void libc_memset(char *d, const char *s, long n)
{
	(void)s;
	glibc_memset(d, 0, n);
}

/* BYTES of memory starting on a 2M boundary, plus OFFSET */
static char *map(long bytes, long offset)
{
	char *p = mmap(NULL, bytes + offset + PMD, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("copy_cost: mmap");
		exit(1);
	}
	return (char *)(((unsigned long)p + PMD - 1) & ~(PMD - 1)) + offset;
}

static int user(long bytes)
{
	static const struct {
		const char *name;
		void (*fn)(char *d, const char *s, long n);
	} ops[] = {
		{ "user-rep-movsb", rep_movsb },
		{ "user-rep-movsb-same-index", rep_movsb },
		{ "user-rep-movsq", rep_movsq },
		{ "user-memcpy", libc_memcpy },
		{ "user-rep-stosb", rep_stosb },
		{ "user-rep-stosq", rep_stosq },
		{ "user-store-loop", store_loop },
		{ "user-memset", libc_memset },
	};
	char *src_off = map(bytes, 4096), *src_aligned = map(bytes, 0), *dst = map(bytes, 0);

	memset(src_off, 1, bytes);
	memset(src_aligned, 1, bytes);
	memset(dst, 2, bytes);
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		char *src = strstr(ops[o].name, "same-index") ? src_aligned : src_off;
		double best = 0;

		for (int pass = 0; pass < PASSES; pass++) {
			double t0 = now(), t;

			for (long off = 0; off < bytes; off += CHUNK)
				ops[o].fn(dst + off, src + off, CHUNK);
			t = now() - t0;
			if (!pass || t < best)
				best = t;
		}
		/* the copies must have copied: a probe that did nothing would be cheap */
		if (ops[o].fn == rep_movsb || ops[o].fn == rep_movsq || ops[o].fn == libc_memcpy) {
			if (memcmp(src, dst, bytes)) {
				fprintf(stderr, "copy_cost: %s did not copy\n", ops[o].name);
				return 1;
			}
			memset(dst, 2, bytes);
		} else if (dst[0] || dst[bytes - 1] || dst[bytes / 2]) {
			fprintf(stderr, "copy_cost: %s did not zero\n", ops[o].name);
			return 1;
		}
		printf("%s %.4f\n", ops[o].name, best / bytes);
	}
	return 0;
}

/* one pass of BS-sized pwrite or pread over BYTES; the nanoseconds taken */
static double file_pass(int fd, char *buf, long bytes, long bs, int write)
{
	double t0 = now();

	for (long off = 0; off < bytes; off += bs) {
		ssize_t n = write ? pwrite(fd, buf, bs, off) : pread(fd, buf, bs, off);

		if (n != bs) {
			fprintf(stderr, "copy_cost: %s at %ld: %s\n", write ? "write" : "read",
				off, n < 0 ? strerror(errno) : "short");
			exit(1);
		}
	}
	return now() - t0;
}

static int file(const char *path, long bytes, long bs)
{
	char *buf = map(bs, 4096);
	int fd;

	memset(buf, 0x5a, bs);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "copy_cost: %s: %s\n", path, strerror(errno));
		return 1;
	}
	printf("write %.4f\n", file_pass(fd, buf, bytes, bs, 1) / bytes);
	printf("overwrite %.4f\n", file_pass(fd, buf, bytes, bs, 1) / bytes);
	memset(buf, 0, bs);
	printf("read %.4f\n", file_pass(fd, buf, bytes, bs, 0) / bytes);
	if (buf[0] != 0x5a || buf[bs - 1] != 0x5a) {
		fprintf(stderr, "copy_cost: %s read back the wrong data\n", path);
		return 1;
	}
	close(fd);
	unlink(path);
	return 0;
}

static int fault(long bytes)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double t0, t;

	if (p == MAP_FAILED) {
		perror("copy_cost: mmap");
		return 1;
	}
	t0 = now();
	for (long off = 0; off < bytes; off += CHUNK)
		p[off] = 1;
	t = now() - t0;
	/* the kernel must have handed out zeroed pages */
	if (p[1] || p[bytes - 1]) {
		fprintf(stderr, "copy_cost: fault: page not zeroed\n");
		return 1;
	}
	printf("fault %.4f\n", t / bytes);
	munmap(p, bytes);
	return 0;
}

/* a positive number of MiB, or KiB with a K suffix (BS); 0 if not */
static long size_arg(const char *s, int kib_ok)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || v < 1 || v > 65536)
		return 0;
	if (!*end)
		return v << 20;
	if (kib_ok && (!strcmp(end, "K") || !strcmp(end, "k")))
		return v << 10;
	if (kib_ok && (!strcmp(end, "M") || !strcmp(end, "m")))
		return v << 20;
	return 0;
}

int main(int argc, char **argv)
{
	const char *usage = "usage: copy_cost user MIB | file PATH MIB BS | fault MIB\n";
	long bytes, bs;

	if (argc == 3 && !strcmp(argv[1], "user") && (bytes = size_arg(argv[2], 0)))
		return user(bytes);
	if (argc == 3 && !strcmp(argv[1], "fault") && (bytes = size_arg(argv[2], 0)))
		return fault(bytes);
	if (argc == 5 && !strcmp(argv[1], "file") && (bytes = size_arg(argv[3], 0)) &&
	    (bs = size_arg(argv[4], 1)) && bs % 4096 == 0 && bytes % bs == 0)
		return file(argv[2], bytes, bs);
	fputs(usage, stderr);
	return 2;
}
