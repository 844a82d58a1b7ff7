// SPDX-License-Identifier: GPL-2.0
/*
 * Loading the BPF object for this kernel, pinning it, opening pinned maps,
 * and the plumbing the front ends share (a workload command, waiting).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "shmemstat.h"
#include "shmem.skel.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

#define LINK_PREFIX "link_"

static bool verbose;

static int print_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	(void)level;
	/* by default our own one-line error says what failed */
	return verbose ? vfprintf(stderr, fmt, args) : 0;
}

static bool has_cap(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[cap / 32].effective & (1U << (cap % 32));
}

/* The signals each program gives when it is loaded. */
static const struct {
	const char *prog;
	__u32 signals;
} prog_signals[] = {
	{ "alloc_folio", SHMEM_SIG_ALLOCS | SHMEM_SIG_PATHS },
	{ "alloc_fallback", SHMEM_SIG_FALLBACKS | SHMEM_SIG_FB_REASONS },
	{ "block_uptodate", SHMEM_SIG_BLOCKS },
	{ "zero", SHMEM_SIG_ZERO },
	{ "folio_split", SHMEM_SIG_SPLITS },
	{ "alloc_exit", SHMEM_SIG_LAT_ALLOC },
	{ "write_exit", SHMEM_SIG_LAT_WRITE },
	{ "fault_exit", SHMEM_SIG_LAT_FAULT },
	{ "falloc_exit", SHMEM_SIG_LAT_FALLOC },
};

/* Can @prog attach on this kernel?  Its section names its target. */
static bool target_exists(const struct btf *vmlinux, struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);
	const char *target = strchr(sec, '/');
	char name[128];

	if (!target)
		return false;
	target++;
	if (!strncmp(sec, "tp_btf/", 7)) {
		snprintf(name, sizeof(name), "btf_trace_%s", target);
		return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
	}
	return btf__find_by_name_kind(vmlinux, target, BTF_KIND_FUNC) > 0;
}

static __u32 signals_of(const char *prog)
{
	for (size_t i = 0; i < sizeof(prog_signals) / sizeof(prog_signals[0]); i++)
		if (!strcmp(prog_signals[i].prog, prog))
			return prog_signals[i].signals;
	return 0;
}

/*
 * Choose the programs this kernel can run: the trace events when the
 * series is there, else the fallback mode's fexit counting.
 */
static int configure(struct shmem_bpf *skel, const struct btf *vmlinux,
		     const struct shmem_tracer_opts *opts,
		     struct shmem_info *info, const char *prog_name)
{
	bool tracepoints = target_exists(vmlinux, skel->progs.alloc_folio);
	struct bpf_program *prog;

	info->tracepoints = tracepoints;
	info->signals = 0;
	bpf_object__for_each_program(prog, skel->obj) {
		const char *sec = bpf_program__section_name(prog);
		bool is_tp = !strncmp(sec, "tp_btf/", 7);
		/* the fallback mode counts allocations with the alloc pair */
		bool timing_only = !is_tp &&
			(tracepoints || strncmp(bpf_program__name(prog), "alloc_", 6));
		bool load = target_exists(vmlinux, prog) &&
			    (tracepoints || !is_tp) &&
			    !(opts->no_latency && timing_only);

		bpf_program__set_autoload(prog, load);
		if (load)
			info->signals |= signals_of(bpf_program__name(prog));
	}
	/* fentry and fexit of a function come and go together */
	if (!bpf_program__autoload(skel->progs.alloc_exit)) {
		if (!tracepoints) {
			fprintf(stderr, "%s: this kernel has neither the shmem trace events nor a traceable shmem_alloc_and_add_folio()\n",
				prog_name);
			return -1;
		}
	} else if (!tracepoints) {
		skel->rodata->count_in_fexit = true;
		info->signals |= SHMEM_SIG_ALLOCS | SHMEM_SIG_FALLBACKS;
	}
	if (opts->no_latency)
		info->disabled = SHMEM_SIG_LATENCY & ~info->signals;
	return 0;
}

int shmem_tracer_start(struct shmem_tracer *t,
		       const struct shmem_tracer_opts *opts, const char *prog)
{
	struct btf *vmlinux;
	int cgroup_fd = -1, err;
	__u32 zero = 0;

	memset(t, 0, sizeof(*t));
	verbose = opts->verbose;
	libbpf_set_print(print_libbpf);

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		fprintf(stderr, "%s: this kernel has no BTF (/sys/kernel/btf/vmlinux): it needs CONFIG_DEBUG_INFO_BTF\n",
			prog);
		return -1;
	}
	if (geteuid() && !has_cap(CAP_SYS_ADMIN) &&
	    !(has_cap(CAP_BPF) && has_cap(CAP_PERFMON))) {
		fprintf(stderr, "%s: need root, or CAP_BPF and CAP_PERFMON\n", prog);
		return -1;
	}
	if (opts->cgroup) {
		cgroup_fd = open(opts->cgroup, O_RDONLY | O_DIRECTORY);
		if (cgroup_fd < 0) {
			fprintf(stderr, "%s: cannot open cgroup %s: %s\n", prog,
				opts->cgroup, strerror(errno));
			return -1;
		}
	}
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		fprintf(stderr, "%s: cannot read kernel BTF: %s\n", prog,
			strerror(errno));
		goto fail;
	}

	t->skel = shmem_bpf__open();
	if (!t->skel) {
		fprintf(stderr, "%s: cannot open the BPF object: %s\n", prog,
			strerror(errno));
		btf__free(vmlinux);
		goto fail;
	}
	err = configure(t->skel, vmlinux, opts, &t->info, prog);
	btf__free(vmlinux);
	if (err)
		goto fail;
	t->skel->rodata->filter_tgid = opts->pid;
	t->skel->rodata->filter_cgroup = cgroup_fd >= 0;

	err = shmem_bpf__load(t->skel);
	if (err) {
		fprintf(stderr, "%s: cannot load the BPF programs: %s%s\n", prog,
			strerror(-err), opts->verbose ? "" : " (-v shows why)");
		goto fail;
	}
	if (cgroup_fd >= 0 &&
	    bpf_map_update_elem(bpf_map__fd(t->skel->maps.cgroup_filter),
				&zero, &cgroup_fd, BPF_ANY)) {
		fprintf(stderr, "%s: cannot filter on cgroup %s: %s\n", prog,
			opts->cgroup, strerror(errno));
		goto fail;
	}
	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.info), &zero,
				&t->info, BPF_ANY)) {
		fprintf(stderr, "%s: cannot write the info map: %s\n", prog,
			strerror(errno));
		goto fail;
	}
	err = shmem_bpf__attach(t->skel);
	if (err) {
		fprintf(stderr, "%s: cannot attach the BPF programs: %s\n", prog,
			strerror(-err));
		goto fail;
	}
	t->maps = (struct shmem_maps) {
		.allocs = bpf_map__fd(t->skel->maps.allocs),
		.files = bpf_map__fd(t->skel->maps.files),
		.procs = bpf_map__fd(t->skel->maps.procs),
		.cgroups = bpf_map__fd(t->skel->maps.cgroups),
		.fallbacks = bpf_map__fd(t->skel->maps.fallbacks),
		.splits = bpf_map__fd(t->skel->maps.splits),
		.blocks = bpf_map__fd(t->skel->maps.blocks),
		.hists = bpf_map__fd(t->skel->maps.hists),
		.info = bpf_map__fd(t->skel->maps.info),
	};
	if (cgroup_fd >= 0)
		close(cgroup_fd);
	/* hand back what parsing the kernel's BTF took */
	malloc_trim(0);
	return 0;
fail:
	if (cgroup_fd >= 0)
		close(cgroup_fd);
	shmem_bpf__destroy(t->skel);
	t->skel = NULL;
	return -1;
}

void shmem_tracer_stop(struct shmem_tracer *t)
{
	shmem_bpf__destroy(t->skel);
	t->skel = NULL;
}

int shmem_tracer_pin(struct shmem_tracer *t, const char *dir, const char *prog)
{
	const struct bpf_object_skeleton *s = t->skel->skeleton;
	struct bpf_map *map;
	char path[PATH_MAX];

	if (mkdir(dir, 0700)) {
		fprintf(stderr, "%s: cannot pin under %s: %s%s\n", prog, dir,
			strerror(errno), errno == EEXIST ?
			" (stop the tracing pinned there first)" : "");
		return -1;
	}
	bpf_object__for_each_map(map, t->skel->obj) {
		if (bpf_map__is_internal(map))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
		if (bpf_map__pin(map, path))
			goto fail;
	}
	for (int i = 0; i < s->prog_cnt; i++) {
		struct bpf_link *link = *s->progs[i].link;

		if (!link)
			continue;
		snprintf(path, sizeof(path), "%s/" LINK_PREFIX "%s", dir,
			 s->progs[i].name);
		if (bpf_link__pin(link, path))
			goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "%s: cannot pin %s: %s\n", prog, path, strerror(errno));
	shmem_unpin(dir, prog);
	return -1;
}

/* Is @name one of the maps shmem_tracer_pin() pins? */
static bool pinned_map(const struct shmem_bpf *skel, const char *name)
{
	struct bpf_map *map = bpf_object__find_map_by_name(skel->obj, name);

	return map && !bpf_map__is_internal(map);
}

int shmem_unpin(const char *dir, const char *prog)
{
	/* opened, not loaded: only to know the names of its maps */
	struct shmem_bpf *skel = shmem_bpf__open();
	DIR *d = opendir(dir);
	struct dirent *de;
	int err = 0;

	if (!d || !skel) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog,
			d ? "the BPF object" : dir, strerror(errno));
		if (d)
			closedir(d);
		shmem_bpf__destroy(skel);
		return -1;
	}
	while ((de = readdir(d))) {
		char path[PATH_MAX];

		if (strncmp(de->d_name, LINK_PREFIX, strlen(LINK_PREFIX)) &&
		    !pinned_map(skel, de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path)) {
			fprintf(stderr, "%s: cannot remove %s: %s\n", prog, path,
				strerror(errno));
			err = -1;
		}
	}
	closedir(d);
	shmem_bpf__destroy(skel);
	if (!err && rmdir(dir)) {
		fprintf(stderr, "%s: cannot remove %s: %s\n", prog, dir,
			strerror(errno));
		err = -1;
	}
	return err;
}

struct pinned_open {
	const char *dir;
	const char *prog;
	int fds[16];
	int nr;
};

static int open_pinned_map(const char *name, void *arg)
{
	struct pinned_open *po = arg;
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", po->dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot open pinned map %s: %s\n", po->prog,
			path, strerror(errno));
		return -1;
	}
	po->fds[po->nr++] = fd;
	return 0;
}

void shmem_maps_close(struct shmem_maps *maps)
{
	int *fds = (int *)maps;

	for (size_t i = 0; i < sizeof(*maps) / sizeof(int); i++)
		if (fds[i] > 0)
			close(fds[i]);
	memset(maps, 0, sizeof(*maps));
}

int shmem_maps_open_pinned(const char *dir, struct shmem_maps *maps,
			   const char *prog)
{
	static const char *const names[] = {
		"allocs", "files", "procs", "cgroups", "fallbacks", "splits",
		"blocks", "hists", "info",
	};
	struct pinned_open po = { .dir = dir, .prog = prog };
	struct stat st;
	int *fds = (int *)maps;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: cannot read pinned maps in %s: %s\n", prog,
			dir, errno ? strerror(errno) : "not a directory");
		return -1;
	}
	memset(maps, 0, sizeof(*maps));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (open_pinned_map(names[i], &po)) {
			for (int j = 0; j < po.nr; j++)
				close(po.fds[j]);
			return -1;
		}
		fds[i] = po.fds[i];
	}
	return 0;
}

int shmem_source_open(struct shmem_source *src, const char *pinned_dir,
		      const struct shmem_tracer_opts *opts, const char *prog)
{
	memset(src, 0, sizeof(*src));
	if (pinned_dir) {
		if (shmem_maps_open_pinned(pinned_dir, &src->pinned, prog))
			return -1;
		src->maps = &src->pinned;
		return 0;
	}
	if (shmem_tracer_start(&src->tracer, opts, prog))
		return -1;
	src->maps = &src->tracer.maps;
	src->live = true;
	return 0;
}

int shmem_source_begin(struct shmem_source *src, struct shmem_snapshot *base,
		       bool mthp_since_boot, bool quiet, const char *prog)
{
	char missing[512];

	if (shmem_source_open(src, shmem_args.pinned, &shmem_args.tracer, prog))
		return -1;
	memset(base, 0, sizeof(*base));
	if (shmem_info_read(src->maps, &base->info)) {
		fprintf(stderr, "%s: cannot read the info map\n", prog);
		shmem_source_close(src);
		return -1;
	}
	base->time = shmem_now();
	if (!mthp_since_boot)
		shmem_mthp_read(SHMEM_MTHP_DIR, base);
	shmem_missing_signals(&base->info, missing, sizeof(missing));
	if (*missing && !quiet)
		fprintf(stderr, "%s: %s mode, missing on this kernel: %s\n", prog,
			base->info.tracepoints ? "tracepoint" : "fallback", missing);
	return 0;
}

void shmem_source_close(struct shmem_source *src)
{
	if (src->live)
		shmem_tracer_stop(&src->tracer);
	else
		shmem_maps_close(&src->pinned);
}
