// SPDX-License-Identifier: GPL-2.0
/*
 * The maps readers use, in one list: pinning and unpinning them, opening
 * pinned ones read-only after checking their shape, and reading them
 * (per-CPU values summed, row maps in batches).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "shmem_tools.h"

const struct shmem_map_desc shmem_map_descs[SHMEM_NR_MAPS] = {
	[SHMEM_MAP_TOTALS] = { "totals", BPF_MAP_TYPE_PERCPU_ARRAY,
			       sizeof(__u32), sizeof(struct shmem_totals) },
	[SHMEM_MAP_HISTS] = { "hists", BPF_MAP_TYPE_PERCPU_ARRAY,
			      sizeof(__u32), sizeof(struct shmem_hist) },
	[SHMEM_MAP_FILES] = { "files", BPF_MAP_TYPE_LRU_HASH,
			      sizeof(struct shmem_file_key), sizeof(struct shmem_row) },
	[SHMEM_MAP_PROCS] = { "procs", BPF_MAP_TYPE_LRU_HASH,
			      sizeof(struct shmem_proc_key), sizeof(struct shmem_row) },
	[SHMEM_MAP_CGROUPS] = { "cgroups", BPF_MAP_TYPE_LRU_HASH,
				sizeof(__u64), sizeof(struct shmem_row) },
	[SHMEM_MAP_FSES] = { "fses", BPF_MAP_TYPE_LRU_HASH,
			     sizeof(__u32), sizeof(struct shmem_row) },
	[SHMEM_MAP_INFO] = { "info", BPF_MAP_TYPE_ARRAY,
			     sizeof(__u32), sizeof(struct shmem_info) },
};

void shmem_maps_close(struct shmem_maps *maps)
{
	for (int i = 0; i < SHMEM_NR_MAPS; i++)
		if (maps->fd[i] > 0)
			close(maps->fd[i]);
	memset(maps, 0, sizeof(*maps));
}

static bool map_shaped(const struct bpf_map_info *info,
		       const struct shmem_map_desc *d)
{
	return info->type == d->type && info->key_size == d->key_size &&
	       info->value_size == d->value_size;
}

/* Is the map behind @fd the one @d describes?  One line if not. */
static int check_map(int fd, const struct shmem_map_desc *d, const char *path,
		     __u32 *max_entries, const char *prog)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "%s: cannot inspect pinned map %s: %s\n", prog,
			path, strerror(errno));
		return -1;
	}
	if (!map_shaped(&info, d)) {
		fprintf(stderr, "%s: pinned map %s is not this version's %s (type %u, key %u, value %u bytes; expected type %u, key %u, value %u): pinned by another version?\n",
			prog, path, d->name, info.type, info.key_size,
			info.value_size, d->type, d->key_size, d->value_size);
		return -1;
	}
	*max_entries = info.max_entries;
	return 0;
}

/* bpf_obj_get() read-only: libbpf 1.1 has no bpf_obj_get_opts() */
static int obj_get_rdonly(const char *path)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.pathname = (__u64)(unsigned long)path;
	attr.file_flags = BPF_F_RDONLY;
	return syscall(__NR_bpf, BPF_OBJ_GET, &attr, sizeof(attr));
}

int shmem_maps_open_pinned(const char *dir, struct shmem_maps *maps,
			   const char *prog)
{
	char path[PATH_MAX];
	struct stat st;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: cannot read pinned maps in %s: %s\n", prog,
			dir, errno ? strerror(errno) : "not a directory");
		return -1;
	}
	memset(maps, 0, sizeof(*maps));
	for (int i = 0; i < SHMEM_NR_MAPS; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, shmem_map_descs[i].name);
		maps->fd[i] = obj_get_rdonly(path);
		if (maps->fd[i] < 0) {
			fprintf(stderr, "%s: cannot open pinned map %s: %s\n",
				prog, path, strerror(errno));
			maps->fd[i] = 0;
			goto fail;
		}
		if (check_map(maps->fd[i], &shmem_map_descs[i], path,
			      &maps->max_entries[i], prog))
			goto fail;
	}
	return 0;
fail:
	shmem_maps_close(maps);
	return -1;
}

int shmem_maps_from_object(struct bpf_object *obj, struct shmem_maps *maps)
{
	memset(maps, 0, sizeof(*maps));
	for (int i = 0; i < SHMEM_NR_MAPS; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj,
						shmem_map_descs[i].name);

		if (!map)
			return -1;
		maps->fd[i] = bpf_map__fd(map);
		maps->max_entries[i] = bpf_map__max_entries(map);
	}
	return 0;
}

int shmem_maps_pin(struct bpf_object *obj, const char *dir, char *path,
		   size_t len)
{
	for (int i = 0; i < SHMEM_NR_MAPS; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj,
						shmem_map_descs[i].name);

		snprintf(path, len, "%s/%s", dir, shmem_map_descs[i].name);
		if (!map || bpf_map__pin(map, path))
			return -1;
	}
	return 0;
}

bool shmem_map_pinned_here(const char *dir, const char *name)
{
	struct bpf_map_info info = {};
	char path[PATH_MAX];
	__u32 len = sizeof(info);
	bool ours;
	int fd, i;

	for (i = 0; i < SHMEM_NR_MAPS; i++)
		if (!strcmp(name, shmem_map_descs[i].name))
			break;
	if (i == SHMEM_NR_MAPS)
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	ours = !bpf_obj_get_info_by_fd(fd, &info, &len) &&
	       map_shaped(&info, &shmem_map_descs[i]);
	close(fd);
	return ours;
}

/* Element 0.. of a per-CPU array, summed over the CPUs, as __u64 counters */
int shmem_percpu_sum(int fd, __u32 key, void *out, size_t size)
{
	int ncpus = libbpf_num_possible_cpus();
	size_t stride = (size + 7) & ~(size_t)7;
	__u64 *sum = out;
	char *values;

	if (ncpus <= 0)
		return -1;
	values = malloc(stride * ncpus);
	if (!values)
		return -1;
	if (bpf_map_lookup_elem(fd, &key, values)) {
		free(values);
		return -1;
	}
	memset(out, 0, size);
	for (int cpu = 0; cpu < ncpus; cpu++) {
		const __u64 *v = (const __u64 *)(values + cpu * stride);

		for (size_t i = 0; i < size / sizeof(__u64); i++)
			sum[i] += v[i];
	}
	free(values);
	return 0;
}

#define BATCH 1024

int shmem_map_for_each(int fd, size_t key_size, size_t value_size,
		       int (*fn)(const void *key, const void *value, void *arg),
		       void *arg)
{
	char *keys = malloc(BATCH * key_size), *values = malloc(BATCH * value_size);
	__u64 token;
	bool first = true, last = false;
	int err = 0;

	if (!keys || !values) {
		err = -1;
		goto out;
	}
	while (!last) {
		__u32 count = BATCH;

		/* ENOENT: this batch is the last (and may be empty) */
		if (bpf_map_lookup_batch(fd, first ? NULL : &token, &token, keys,
					 values, &count, NULL)) {
			if (errno != ENOENT) {
				err = -1;
				goto out;
			}
			last = true;
		}
		first = false;
		for (__u32 i = 0; i < count; i++) {
			if (fn(keys + i * key_size, values + i * value_size, arg)) {
				err = -1;
				goto out;
			}
		}
	}
out:
	free(keys);
	free(values);
	return err;
}
