// SPDX-License-Identifier: GPL-2.0
/*
 * Seals, pins and refused writes:
 * - F_SEAL_WRITE on a memfd whose 2M folio is partially written succeeds
 *   (the block bitmap's folio reference is no pin), and the seal holds;
 * - memfd_pin_folios() (udmabuf) of such a memfd keeps the written data,
 *   and data written while pinned reads back after the unpin;
 * - a write past EOF that a seal (F_SEAL_WRITE, F_SEAL_GROW,
 *   F_SEAL_FUTURE_WRITE), ENOSPC or an unreadable buffer refuses leaves
 *   the bytes a mapping stored past EOF as they were; a short copy past
 *   EOF extends the file over zeroes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib.h"

#define SHMEM_ENABLED "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

/*
 * A memfd (internal mount, huge pages per shmem_enabled) written 4K into
 * a 2M folio: the block bitmap holds a folio reference that is not a pin.
 */
static void test_seal_partial(void)
{
	char saved[32], buf[PAGE];
	int fd, ret;

	thp_setting(SHMEM_ENABLED, saved, sizeof(saved));
	sysfs_write(SHMEM_ENABLED, "always");
	fd = memfd_create("seal", MFD_ALLOW_SEALING);
	memset(buf, 'A', sizeof(buf));
	if (fd < 0 || ftruncate(fd, PMD) || pwrite(fd, buf, PAGE, 0) != PAGE)
		die("memfd");
	/* Not mapped to look at it: a fault would make the folio uptodate */
	check(seek(fd, 0, SEEK_HOLE) == PAGE,
	      "memfd: 4K written into a 2M folio, the rest a hole (SEEK_HOLE %lld)",
	      (long long)seek(fd, 0, SEEK_HOLE));
	ret = fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE);
	check(ret == 0, "F_SEAL_WRITE on it succeeds: the bitmap's reference is no pin (%s)",
	      ret ? strerror(errno) : "ok");
	check(pwrite(fd, buf, PAGE, PAGE) < 0, "and the seal holds: a write fails");
	close(fd);
	sysfs_write(SHMEM_ENABLED, saved);
}

/* ---- memfd_pin_folios() (udmabuf) keeps written data ---- */

static void test_udmabuf(void)
{
	struct udmabuf_create create = { 0 };
	char saved[32];
	int dev, memfd, buf;
	long before;

	dev = open("/dev/udmabuf", O_RDWR);
	if (!check(dev >= 0, "/dev/udmabuf can be opened (CONFIG_UDMABUF): %s",
		   dev >= 0 ? "yes" : strerror(errno)))
		return;
	thp_setting(SHMEM_ENABLED, saved, sizeof(saved));
	sysfs_write(SHMEM_ENABLED, "always");
	before = shmem_allocs(2048);
	memfd = memfd_create("udmabuf", MFD_ALLOW_SEALING);
	if (memfd < 0 || ftruncate(memfd, 2 * MB))
		die("memfd");
	pwrite_pattern(memfd, 0, PAGE, 41);
	check(shmem_allocs(2048) - before == 1,
	      "memfd with shmem_enabled=always: a 4K write allocates a 2M folio");
	if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		die("F_ADD_SEALS");
	create.memfd = memfd;
	create.flags = UDMABUF_FLAGS_CLOEXEC;
	create.offset = 0;
	create.size = 2 * MB;
	buf = ioctl(dev, UDMABUF_CREATE, &create);
	check(buf >= 0, "UDMABUF_CREATE on [0,2M) of the memfd: %s",
	      buf >= 0 ? "ok" : strerror(errno));
	check(has_pattern(memfd, 0, PAGE, 0, 41),
	      "after pinning, the written 4K still reads back");
	check(is_zero(memfd, PAGE, 2 * MB - PAGE), "and the rest reads zeroes");
	pwrite_pattern(memfd, 8 * KB, PAGE, 42);
	if (buf >= 0)
		close(buf);
	check(has_pattern(memfd, 0, PAGE, 0, 41) && has_pattern(memfd, 8 * KB, PAGE, 8 * KB, 42),
	      "data written while pinned reads back after the unpin");
	close(memfd);
	close(dev);
	sysfs_write(SHMEM_ENABLED, saved);
}

/* ---- A refused write changes nothing ---- */

/*
 * A file of 100 bytes whose page holds 'X' in bytes 100-299, stored
 * through a shared mapping (past EOF, so not file data).
 */
static void store_past_eof(int fd)
{
	char *map;

	pwrite_pattern(fd, 0, 100, 61);
	map = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	memset(map + 100, 'X', 200);
	munmap(map, PAGE);
}

/* A read-only view of the page, to look at the bytes past EOF */
static char *map_readonly(int fd)
{
	char *map = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);

	if (map == MAP_FAILED)
		die("mmap");
	return map;
}

static bool tail_kept(const char *map)
{
	for (int i = 100; i < 300; i++)
		if (map[i] != 'X')
			return false;
	return true;
}

static void sealed_case(unsigned int seal, const char *name)
{
	int fd = memfd_create("sealed", MFD_ALLOW_SEALING);
	char *map;
	ssize_t ret;

	if (fd < 0)
		die("memfd_create");
	store_past_eof(fd);
	if (fcntl(fd, F_ADD_SEALS, seal))
		die(name);
	map = map_readonly(fd);
	errno = 0;
	ret = pwrite(fd, "x", 1, 5000);
	check(ret < 0 && errno == EPERM && tail_kept(map),
	      "memfd sealed with %s: pwrite past EOF fails with EPERM (%zd, %s) and the "
	      "bytes stored past EOF stay as they were", name, ret, strerror(errno));
	munmap(map, PAGE);
	close(fd);
}

/* A write past EOF on a full mount fails with ENOSPC and changes nothing */
static void nospc_case(const char *opts)
{
	const char *dir = mount_tmpfs("full", opts);
	int fd = open_new(dir, "file"), filler = open_new(dir, "filler");
	char *map, page[PAGE] = "";
	ssize_t ret;

	store_past_eof(fd);
	map = map_readonly(fd);

	while (write(filler, page, PAGE) == PAGE)
		;
	errno = 0;
	ret = pwrite(fd, "x", 1, 2 * PAGE);
	check(ret < 0 && errno == ENOSPC && tail_kept(map),
	      "%s, full: pwrite past EOF fails with ENOSPC (%zd, %s) and the bytes "
	      "stored past EOF stay as they were", opts, ret, strerror(errno));
	munmap(map, PAGE);
	close(filler);
	close(fd);
}

/*
 * A source buffer of one readable page, then one that is not: a write of
 * both past EOF copies the first (a short write that extends the file:
 * the gap reads zeroes); a write from the second alone copies nothing
 * (EFAULT) and changes nothing.
 */
static void fault_cases(const char *dir, const char *name)
{
	int fd = open_new(dir, "efault");
	char *map;
	char *src = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ssize_t ret;

	if (src == MAP_FAILED || mprotect(src + PAGE, PAGE, PROT_NONE))
		die("source buffer");
	store_past_eof(fd);
	map = map_readonly(fd);
	memset(src, 'y', PAGE);
	errno = 0;
	ret = pwrite(fd, src + PAGE, PAGE, 5000);
	check(ret < 0 && errno == EFAULT && tail_kept(map),
	      "%s: pwrite past EOF from an unreadable buffer fails with EFAULT (%zd, %s) "
	      "and the bytes stored past EOF stay as they were", name, ret, strerror(errno));
	ret = pwrite(fd, src, 2 * PAGE, 5000);
	check(ret == PAGE && is_zero(fd, 100, 4900) && map[150] == 0,
	      "%s: a short copy past EOF (%zd of 8K) extends the file: the gap reads zeroes",
	      name, ret);
	munmap(src, 2 * PAGE);
	munmap(map, PAGE);
	close(fd);
}

static void test_refused_write(const char *plain, const char *large)
{
	sealed_case(F_SEAL_WRITE, "F_SEAL_WRITE");
	sealed_case(F_SEAL_GROW, "F_SEAL_GROW");
	sealed_case(F_SEAL_FUTURE_WRITE, "F_SEAL_FUTURE_WRITE");
	nospc_case("size=64k");
	nospc_case("size=64k,large_folios");
	fault_cases(plain, "default");
	fault_cases(large, "large_folios");
}

void seal_tests(const char *large, const char *plain)
{
	test_seal_partial();
	test_udmabuf();
	test_refused_write(plain, large);
}
