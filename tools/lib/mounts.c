// SPDX-License-Identifier: GPL-2.0
/*
 * Mount points, file system types and options by device, from
 * /proc/self/mountinfo, and the kernel's internal shm mount.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "shmem_tools.h"

/* mountinfo writes space, tab, newline and backslash as \ooo */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0');
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

struct numbered {
	struct shmem_mount m;
	size_t line;
};

static int by_dev_then_line(const void *a, const void *b)
{
	const struct numbered *x = a, *y = b;

	if (x->m.dev != y->m.dev)
		return x->m.dev < y->m.dev ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

int shmem_mounts_read(const char *mountinfo, struct shmem_mounts *m)
{
	FILE *f = fopen(mountinfo, "r");
	struct numbered *all = NULL;
	size_t nr = 0, alloc = 0, len = 0;
	char *line = NULL;
	int err = 0;

	memset(m, 0, sizeof(*m));
	if (!f)
		return -1;
	while (getline(&line, &len, f) > 0) {
		unsigned int major, minor;
		char *path, *clean;
		int at;

		char *fields = NULL, fstype[32] = "", options[256] = "";

		/* id parent major:minor root mountpoint ... - fstype source options */
		if (sscanf(line, "%*u %*u %u:%u %*s %n", &major, &minor, &at) != 2)
			continue;
		path = line + at;
		fields = strstr(path, " - ");
		if (fields)
			sscanf(fields, " - %31s %*s %255s", fstype, options);
		path[strcspn(path, " \n")] = '\0';
		unescape(path);
		clean = malloc(4 * strlen(path) + 1);
		if (nr == alloc) {
			struct numbered *grown;

			alloc = alloc ? 2 * alloc : 64;
			grown = realloc(all, alloc * sizeof(*all));
			if (!grown) {
				free(clean);
				err = -1;
				break;
			}
			all = grown;
		}
		if (!clean) {
			err = -1;
			break;
		}
		shmem_clean_name(path, strlen(path), false, clean);
		all[nr].m.dev = major << 20 | minor;
		all[nr].m.path = clean;
		snprintf(all[nr].m.fstype, sizeof(all[nr].m.fstype), "%s", fstype);
		snprintf(all[nr].m.options, sizeof(all[nr].m.options), "%s", options);
		all[nr].line = nr;
		nr++;
	}
	free(line);
	fclose(f);
	qsort(all, nr, sizeof(*all), by_dev_then_line);
	m->mounts = malloc((nr + 1) * sizeof(*m->mounts));
	for (size_t i = 0; i < nr; i++) {
		/* the first mount of a device names it */
		if (m->mounts && (!m->nr || m->mounts[m->nr - 1].dev != all[i].m.dev))
			m->mounts[m->nr++] = all[i].m;
		else
			free(all[i].m.path);
	}
	free(all);
	m->internal_dev = shmem_internal_dev();
	return m->mounts && !err ? 0 : -1;
}

__u32 shmem_internal_dev(void)
{
	/* the mount is the kernel's: its device never changes */
	static __u32 dev;
	static bool known;
	struct stat st;
	int fd;

	if (known)
		return dev;
	/* a memfd lives on the internal shm mount, as SysV shm does */
	fd = memfd_create("shmem-tools-probe", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (!fstat(fd, &st))
		dev = major(st.st_dev) << 20 | minor(st.st_dev);
	close(fd);
	known = true;
	return dev;
}

static int dev_cmp(const void *key, const void *elem)
{
	__u32 dev = *(const __u32 *)key;
	const struct shmem_mount *m = elem;

	return (dev > m->dev) - (dev < m->dev);
}

const struct shmem_mount *shmem_mount_find(const struct shmem_mounts *m,
					   __u32 dev)
{
	return m && m->nr ?
		bsearch(&dev, m->mounts, m->nr, sizeof(*m->mounts), dev_cmp) : NULL;
}

const char *shmem_mount_of(const struct shmem_mounts *m, __u32 dev)
{
	const struct shmem_mount *found = shmem_mount_find(m, dev);

	return found ? found->path : "";
}

const char *shmem_mount_name(const struct shmem_mounts *m, __u32 dev)
{
	if (m && m->internal_dev && dev == m->internal_dev)
		return SHMEM_INTERNAL_MOUNT;
	return shmem_mount_of(m, dev);
}

void shmem_mounts_free(struct shmem_mounts *m)
{
	for (size_t i = 0; i < m->nr; i++)
		free(m->mounts[i].path);
	free(m->mounts);
	memset(m, 0, sizeof(*m));
}
