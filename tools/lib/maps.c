// SPDX-License-Identifier: GPL-2.0
/*
 * The maps readers use, in one list: pinning and unpinning them, opening
 * pinned ones read-only after checking their shape, and reading them
 * (per-CPU values summed, row maps in batches).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
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
	if (maps->own_drain_fd && maps->drain_fd >= 0)
		close(maps->drain_fd);
	memset(maps, 0, sizeof(*maps));
	maps->drain_fd = -1;
}

/*
 * Is @fd the drain program of the maps whose totals map is @totals_fd: a
 * raw_tp program named drain that uses that very map?  Readers run it, so
 * nothing else is, whatever name it was pinned under.
 */
static bool drain_of(int fd, int totals_fd)
{
	struct bpf_map_info minfo = {};
	struct bpf_prog_info info = {};
	__u32 map_ids[16], len = sizeof(minfo);

	if (bpf_obj_get_info_by_fd(totals_fd, &minfo, &len))
		return false;
	info.nr_map_ids = 16;
	info.map_ids = (__u64)(unsigned long)map_ids;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    info.type != BPF_PROG_TYPE_RAW_TRACEPOINT ||
	    strcmp(info.name, "drain"))
		return false;
	for (__u32 i = 0; i < info.nr_map_ids && i < 16; i++)
		if (map_ids[i] == minfo.id)
			return true;
	return false;
}

/*
 * The drain program of maps pinned by another loader (bpftool prog loadall
 * pins it with the programs, not with the maps).  -1 if none.
 */
static int find_drain(int totals_fd)
{
	__u32 id = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd < 0)
			continue;
		if (drain_of(fd, totals_fd))
			return fd;
		close(fd);
	}
	return -1;
}

/*
 * The drain program on @cpu.  From that CPU it runs there directly, with
 * preemption off; from another, in an IPI, which keeps this CPU spinning
 * until the other takes it (long under emulation): so move there first.
 */
static int drain_on(int fd, int cpu, bool move)
{
	cpu_set_t set;

	if (move) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	/* busy: that CPU is changing its cache; it takes microseconds */
	for (int tries = 0; tries < 1000; tries++) {
		LIBBPF_OPTS(bpf_test_run_opts, opts,
			    .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = cpu);

		if (bpf_prog_test_run_opts(fd, &opts))
			/* an offline CPU counts nothing new */
			return errno == ENXIO ? 0 : -1;
		if (!opts.retval)
			return 0;
		sched_yield();
	}
	return 0;
}

int shmem_maps_drain(const struct shmem_maps *maps)
{
	int ncpus = libbpf_num_possible_cpus(), err = 0;
	cpu_set_t was;
	bool move;

	if (maps->drain_fd < 0 || ncpus <= 0)
		return -1;
	move = !sched_getaffinity(0, sizeof(was), &was);
	for (int cpu = 0; cpu < ncpus && !err; cpu++)
		err = drain_on(maps->drain_fd, cpu,
			       move && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &was));
	if (move)
		sched_setaffinity(0, sizeof(was), &was);
	return err;
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
	maps->drain_fd = -1;
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
	maps->own_drain_fd = true;
	snprintf(path, sizeof(path), "%s/" SHMEM_DRAIN_PIN, dir);
	maps->drain_fd = bpf_obj_get(path);
	if (maps->drain_fd < 0) {
		maps->drain_fd = find_drain(maps->fd[SHMEM_MAP_TOTALS]);
	} else if (!drain_of(maps->drain_fd, maps->fd[SHMEM_MAP_TOTALS])) {
		fprintf(stderr, "%s: %s is not the drain program of the maps beside it: not run\n",
			prog, path);
		goto fail;
	}
	return 0;
fail:
	shmem_maps_close(maps);
	return -1;
}

int shmem_maps_from_object(struct bpf_object *obj, struct shmem_maps *maps)
{
	struct bpf_program *prog;

	memset(maps, 0, sizeof(*maps));
	for (int i = 0; i < SHMEM_NR_MAPS; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj,
						shmem_map_descs[i].name);

		if (!map)
			return -1;
		maps->fd[i] = bpf_map__fd(map);
		maps->max_entries[i] = bpf_map__max_entries(map);
	}
	prog = bpf_object__find_program_by_name(obj, "drain");
	maps->drain_fd = prog ? bpf_program__fd(prog) : -1;
	return 0;
}

int shmem_maps_pin(struct bpf_object *obj, const char *dir, char *path,
		   size_t len)
{
	struct bpf_program *prog;

	for (int i = 0; i < SHMEM_NR_MAPS; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj,
						shmem_map_descs[i].name);

		snprintf(path, len, "%s/%s", dir, shmem_map_descs[i].name);
		if (!map || bpf_map__pin(map, path))
			return -1;
	}
	/* readers flush the per-CPU row caches with it */
	snprintf(path, len, "%s/" SHMEM_DRAIN_PIN, dir);
	prog = bpf_object__find_program_by_name(obj, "drain");
	if (!prog || bpf_program__pin(prog, path))
		return -1;
	return 0;
}

bool shmem_map_pinned_here(const char *dir, const char *name)
{
	struct bpf_map_info info = {};
	char path[PATH_MAX];
	__u32 len = sizeof(info);
	int fd, totals_fd, i;
	bool ours;

	for (i = 0; i < SHMEM_NR_MAPS; i++)
		if (!strcmp(name, shmem_map_descs[i].name))
			break;
	if (i == SHMEM_NR_MAPS && strcmp(name, SHMEM_DRAIN_PIN))
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	if (i < SHMEM_NR_MAPS) {
		ours = !bpf_obj_get_info_by_fd(fd, &info, &len) &&
		       map_shaped(&info, &shmem_map_descs[i]);
		close(fd);
		return ours;
	}
	snprintf(path, sizeof(path), "%s/%s", dir,
		 shmem_map_descs[SHMEM_MAP_TOTALS].name);
	totals_fd = bpf_obj_get(path);
	ours = totals_fd >= 0 && drain_of(fd, totals_fd);
	if (totals_fd >= 0)
		close(totals_fd);
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
