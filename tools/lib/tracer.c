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
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <time.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "shmem_tools.h"
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

/*
 * The programs: which mode loads them, and the signals they give.  The
 * allocation timing loads with --latency (the series' event, or in the
 * fallback mode alloc_enter), the call pairs with --call-latency; the
 * fallback mode needs the alloc and call pairs to count and infer paths,
 * and shmem_alloc_folio() for the fallbacks.
 */
enum { TRACEPOINTS = 1, FALLBACK = 2, LATENCY = 4, CALLS = 8,
       FALLBACK_LATENCY = 16 };

static const struct {
	const char *prog;
	unsigned int when;
	__u32 signals;		/* tracepoint mode, or timing asked for */
	__u32 fallback_signals;	/* fallback mode */
	/*
	 * The target's parameters the program reads by position, in order
	 * ("..." : more may follow); NULL: it reads none
	 */
	const char *params;
	/* loaded only where this program cannot attach */
	const char *instead_of;
	/* tp_btf: the tracepoint arguments the program reads (0: unchecked) */
	int tp_args;
	/*
	 * tp_btf: a field the event's record must have (its
	 * trace_event_raw_ struct in BTF), which says that the argument
	 * read by position is the one meant, not another added there
	 */
	const char *tp_field;
} progs[] = {
	/*
	 * The fallback mode's hooks miss swap-in: shmem_swapin_folio()
	 * allocates through the swap cache
	 */
	{ .prog = "alloc_folio", .when = TRACEPOINTS, .tp_args = 6,
	  .tp_field = "ramp_orders",
	  .signals = SHMEM_SIG_ALLOCS | SHMEM_SIG_PATHS | SHMEM_SIG_SWAPINS |
		     SHMEM_SIG_RAMP },
	/* its record keeps of ramp_orders whether the order was a ramp's */
	{ .prog = "alloc_fallback", .when = TRACEPOINTS, .tp_args = 6,
	  .tp_field = "ramp",
	  .signals = SHMEM_SIG_FALLBACKS | SHMEM_SIG_FB_REASONS },
	/* events of 5 arguments, before the append ramp: no ramp_orders */
	{ .prog = "alloc_folio5", .when = TRACEPOINTS,
	  .signals = SHMEM_SIG_ALLOCS | SHMEM_SIG_PATHS | SHMEM_SIG_SWAPINS,
	  .instead_of = "alloc_folio" },
	{ .prog = "alloc_fallback5", .when = TRACEPOINTS,
	  .signals = SHMEM_SIG_FALLBACKS | SHMEM_SIG_FB_REASONS,
	  .instead_of = "alloc_fallback" },
	{ .prog = "block_uptodate", .when = TRACEPOINTS,
	  .signals = SHMEM_SIG_BLOCKS },
	{ .prog = "block_clear", .when = TRACEPOINTS },
	{ .prog = "zero", .when = TRACEPOINTS, .signals = SHMEM_SIG_ZERO },
	{ .prog = "folio_split", .when = TRACEPOINTS,
	  .signals = SHMEM_SIG_SPLITS },
	/*
	 * Not on Linux 6.1, whose shmem_alloc_folio() has no order: a huge
	 * folio the page allocator refuses is not seen there
	 */
	{ .prog = "alloc_folio_exit", .when = FALLBACK,
	  .fallback_signals = SHMEM_SIG_FALLBACKS,
	  .params = "gfp order info index" },
	{ .prog = "alloc_time", .when = LATENCY,
	  .signals = SHMEM_SIG_LAT_ALLOC },
	{ .prog = "alloc_enter", .when = FALLBACK_LATENCY,
	  .fallback_signals = SHMEM_SIG_LAT_ALLOC },
	{ .prog = "alloc_exit", .when = FALLBACK,
	  .fallback_signals = SHMEM_SIG_ALLOCS,
	  .params = "vmf gfp inode index fault_mm orders" },
	/* Linux 6.1, and PREEMPT_RT's inlined shmem_alloc_and_add_folio() */
	{ .prog = "add_exit", .when = FALLBACK,
	  .fallback_signals = SHMEM_SIG_ALLOCS,
	  .params = "folio mapping index expected ...",
	  .instead_of = "alloc_exit" },
	{ .prog = "write_enter", .when = CALLS | FALLBACK },
	{ .prog = "write_exit", .when = CALLS | FALLBACK,
	  .signals = SHMEM_SIG_LAT_WRITE },
	/* Linux 6.1: no shmem_file_write_iter() */
	{ .prog = "wr_begin_enter", .when = FALLBACK,
	  .instead_of = "write_enter" },
	{ .prog = "wr_begin_exit", .when = FALLBACK,
	  .instead_of = "write_exit" },
	{ .prog = "fault_enter", .when = CALLS | FALLBACK },
	{ .prog = "fault_exit", .when = CALLS | FALLBACK,
	  .signals = SHMEM_SIG_LAT_FAULT },
	{ .prog = "falloc_enter", .when = CALLS | FALLBACK },
	{ .prog = "falloc_exit", .when = CALLS | FALLBACK,
	  .signals = SHMEM_SIG_LAT_FALLOC },
};

/* Does function @func of @vmlinux take @params (see progs[])? */
static bool params_match(const struct btf *vmlinux, int func,
			 const char *params)
{
	const struct btf_type *proto =
		btf__type_by_id(vmlinux, btf__type_by_id(vmlinux, func)->type);
	const struct btf_param *p = btf_params(proto);
	int n = btf_vlen(proto), i = 0;
	char want[128], *name, *save;

	snprintf(want, sizeof(want), "%s", params);
	for (name = strtok_r(want, " ", &save); name;
	     name = strtok_r(NULL, " ", &save), i++) {
		if (!strcmp(name, "..."))
			return true;
		if (i >= n || strcmp(btf__name_by_offset(vmlinux, p[i].name_off), name))
			return false;
	}
	return i == n;
}

static int prog_index(const char *name)
{
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (!strcmp(progs[i].prog, name))
			return i;
	return -1;
}

/*
 * For the tests: --test-retarget=PROG=FUNC[,PROG=FUNC...] (hidden from
 * --help) points fentry/fexit programs at other kernel functions, so
 * that a function in BTF that cannot be attached (notrace, or with no
 * address) goes through the selection as one of ours would on a kernel
 * that has it so.  An option, not the environment: a production run
 * cannot inherit it and be re-pointed silently.
 */
#define FENTRY_PROBE "fentry_probe"
static char retarget_buf[512];
static struct {
	const char *prog, *func;
} retargets[8];

static void retarget(struct bpf_object *obj, const char *env)
{
	char *item, *save, *func;
	size_t n = 0;

	memset(retargets, 0, sizeof(retargets));
	if (!env)
		return;
	snprintf(retarget_buf, sizeof(retarget_buf), "%s", env);
	for (item = strtok_r(retarget_buf, ",", &save);
	     item && n < sizeof(retargets) / sizeof(retargets[0]);
	     item = strtok_r(NULL, ",", &save)) {
		struct bpf_program *prog;

		func = strchr(item, '=');
		if (!func)
			continue;
		*func++ = 0;
		prog = bpf_object__find_program_by_name(obj, item);
		/* fentry_probe: fentry_supported()'s function, not a program */
		if (!strcmp(item, FENTRY_PROBE) ||
		    (prog && !bpf_program__set_attach_target(prog, 0, func)))
			retargets[n++] = (typeof(retargets[0])){ item, func };
	}
}

/* The kernel function @prog attaches to (SEC("fentry/FUNC") and the like) */
static const char *target_of(struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);
	const char *target = strchr(sec, '/');

	for (size_t i = 0; i < sizeof(retargets) / sizeof(retargets[0]) &&
	     retargets[i].prog; i++)
		if (!strcmp(retargets[i].prog, bpf_program__name(prog)))
			return retargets[i].func;
	return target ? target + 1 : NULL;
}

/*
 * Can fentry and fexit programs attach to function @func (a BTF id) of
 * this kernel?  BTF lists functions the kernel cannot trace: notrace
 * ones (no ftrace call site: attaching fails with EBUSY), and ones with
 * no address of their own (inlined everywhere, or an alias: loading
 * fails with ENOENT).  As libbpf-tools' fentry_can_attach() does, load
 * an empty program for it and attach it, then let both go.  The answer
 * is kept per function: a program pair, and the fallbacks in progs[],
 * ask about the same one.
 */
static bool func_attachable(const struct btf *vmlinux, int func)
{
	static struct {
		int func;
		bool ok;
	} known[32];
	static const struct bpf_insn ret0[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .expected_attach_type = BPF_TRACE_FENTRY,
		    .attach_btf_id = func);
	size_t i;
	int prog, link;
	bool ok;

	for (i = 0; i < sizeof(known) / sizeof(known[0]) && known[i].func; i++)
		if (known[i].func == func)
			return known[i].ok;
	prog = bpf_prog_load(BPF_PROG_TYPE_TRACING, "shmem_probe", "GPL", ret0,
			     sizeof(ret0) / sizeof(ret0[0]), &opts);
	link = prog >= 0 ? bpf_raw_tracepoint_open(NULL, prog) : -1;
	ok = link >= 0;
	if (link >= 0)
		close(link);
	if (prog >= 0)
		close(prog);
	if (i < sizeof(known) / sizeof(known[0]))
		known[i].func = func, known[i].ok = ok;
	/* -v: which functions were tried (the tests: none needlessly) */
	if (verbose)
		fprintf(stderr, "probe %s: %s\n",
			btf__name_by_offset(vmlinux, btf__type_by_id(vmlinux, func)->name_off),
			ok ? "attachable" : "not attachable");
	return ok;
}

/*
 * Can this kernel attach fentry programs at all?  They need BPF
 * trampolines, and those ftrace's call sites: a kernel without
 * them fails every function alike.  A function that a kernel with them
 * can trace answers: the test runner's bpf_fentry_test1(), made for
 * this, else vfs_read().  Where BTF has neither, say yes: unknown.
 */
static bool fentry_supported(const struct btf *vmlinux)
{
	const char *funcs[] = { NULL, "bpf_fentry_test1", "vfs_read" };

	for (size_t i = 0; i < sizeof(retargets) / sizeof(retargets[0]) &&
	     retargets[i].prog; i++)
		if (!strcmp(retargets[i].prog, FENTRY_PROBE))
			funcs[0] = retargets[i].func;
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		int func = funcs[i] ?
			btf__find_by_name_kind(vmlinux, funcs[i], BTF_KIND_FUNC) : -1;

		if (func > 0)
			return func_attachable(vmlinux, func);
	}
	return true;
}

/*
 * Can @prog attach on this kernel?  Its section names its target; one
 * whose arguments it reads must take them as progs[] says, and the
 * kernel must be able to trace it.
 */
static bool target_exists(const struct btf *vmlinux, struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);
	const char *target = target_of(prog);
	int i = prog_index(bpf_program__name(prog));
	char name[128];
	int func;

	/* SEC("raw_tp"): run, not attached */
	if (!strcmp(sec, "raw_tp"))
		return true;
	if (!target)
		return false;
	if (!strncmp(sec, "tp_btf/", 7)) {
		snprintf(name, sizeof(name), "btf_trace_%s", target);
		return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
	}
	func = btf__find_by_name_kind(vmlinux, target, BTF_KIND_FUNC);
	if (func <= 0)
		return false;
	return (i < 0 || !progs[i].params ||
		params_match(vmlinux, func, progs[i].params)) &&
	       func_attachable(vmlinux, func);
}

/* The id of type @prefix@tp of @kind in @vmlinux; 0 or less without one */
static int find_prefixed(const struct btf *vmlinux, const char *prefix,
			 const char *tp, __u32 kind)
{
	char name[128];

	snprintf(name, sizeof(name), "%s%s", prefix, tp);
	return btf__find_by_name_kind(vmlinux, name, kind);
}

/*
 * The arguments tracepoint @tp passes a tp_btf program: those of its
 * btf_trace_ typedef, a pointer to a function whose first parameter is
 * the tracepoint's own data (void *__data); -1 without one.
 */
static int tp_args(const struct btf *vmlinux, const char *tp)
{
	const struct btf_type *t;
	int id = find_prefixed(vmlinux, "btf_trace_", tp, BTF_KIND_TYPEDEF);

	if (id <= 0)
		return -1;
	t = btf__type_by_id(vmlinux, btf__type_by_id(vmlinux, id)->type);
	if (!t || !btf_is_ptr(t))
		return -1;
	t = btf__type_by_id(vmlinux, t->type);
	return t && btf_is_func_proto(t) ? btf_vlen(t) - 1 : -1;
}

/*
 * Does the record of trace event @tp (struct trace_event_raw_@tp in
 * @vmlinux) have field @field?  Each event is asked on its own: a kernel
 * may give one of them the field and not the other.  (No test kernel has
 * a sixth argument that is not ramp_orders, nor ramp_orders on one event
 * only: the patched and the 5-argument series' kernels test both ways.)
 */
static bool tp_has_field(const struct btf *vmlinux, const char *tp,
			 const char *field)
{
	const struct btf_type *t;
	const struct btf_member *m;
	int id = find_prefixed(vmlinux, "trace_event_raw_", tp, BTF_KIND_STRUCT);

	if (id <= 0)
		return false;
	t = btf__type_by_id(vmlinux, id);
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(vmlinux, m->name_off), field))
			return true;
	return false;
}

/*
 * Can the program of progs[] named @name attach here?  A tp_btf one
 * must get every argument it reads: the verifier refuses the load of a
 * program that reads past a tracepoint's last.
 */
static bool usable(struct bpf_object *obj, const struct btf *vmlinux,
		   const char *name)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, name);
	int i = prog_index(name);

	const char *tp;

	if (i < 0 || !target_exists(vmlinux, prog))
		return false;
	tp = strchr(bpf_program__section_name(prog), '/') + 1;
	if (progs[i].tp_field && !tp_has_field(vmlinux, tp, progs[i].tp_field))
		return false;
	return !progs[i].tp_args || tp_args(vmlinux, tp) >= progs[i].tp_args;
}

/*
 * Is progs[@i] to be loaded in @mode on this kernel?  The program it
 * stands in for first: where that one attaches, this one's target is not
 * probed at all (an empty program loaded and attached to it).
 */
static bool wanted(struct shmem_bpf *skel, const struct btf *vmlinux, int i,
		   unsigned int mode)
{
	if (!(progs[i].when & mode))
		return false;
	if (progs[i].instead_of && usable(skel->obj, vmlinux, progs[i].instead_of))
		return false;
	return usable(skel->obj, vmlinux, progs[i].prog);
}

/*
 * The row maps are the kernel's common-LRU hashes: each CPU takes free
 * rows from the shared list LOCAL_FREE_TARGET (128) at a time, and a CPU
 * that finds fewer than that left there evicts rows to make up the
 * difference, though other CPUs still hold up to 128 free ones each
 * (kernel/bpf/bpf_lru_list.c).  So the first row is dropped only once
 * more than max_entries - 128 * CPUs are in the map: this many rows more
 * than asked for make -E N hold N rows before one is dropped.
 * (BPF_F_NO_COMMON_LRU would split the rows between the CPUs instead: a
 * process on one CPU would get N / CPUs.)
 */
static unsigned int lru_slack(void)
{
	int cpus = libbpf_num_possible_cpus();

	return 128 * (cpus > 0 ? cpus : 1);
}

static const unsigned int default_entries[SHMEM_NR_ROW_KINDS] = {
	SHMEM_DEFAULT_FILES, SHMEM_DEFAULT_PROCS, SHMEM_DEFAULT_CGROUPS,
	SHMEM_DEFAULT_FSES,
};

/*
 * Choose the programs this kernel can run and what they do: the trace
 * events when the series is there, else the fallback mode's counting;
 * the timing programs only with latency; size the maps.
 */
static int configure(struct shmem_bpf *skel, const struct btf *vmlinux,
		     const struct shmem_tracer_opts *opts,
		     struct shmem_info *info, const char *prog_name)
{
	bool tracepoints = target_exists(vmlinux, skel->progs.alloc_folio);
	unsigned int timing = (opts->latency ? LATENCY : 0) |
			      (opts->call_latency ? CALLS : 0);
	unsigned int mode = (tracepoints ? TRACEPOINTS : FALLBACK) | timing |
			    (!tracepoints && opts->latency ? FALLBACK_LATENCY : 0);
	struct bpf_program *prog;

	info->tracepoints = tracepoints;
	info->signals = 0;
	info->disabled = (opts->latency ? 0 : SHMEM_SIG_LAT_FOLIOS) |
			 (opts->call_latency ? 0 : SHMEM_SIG_LAT_CALLS);
	info->rows = opts->rows;
	bpf_object__for_each_program(prog, skel->obj) {
		int i = prog_index(bpf_program__name(prog));
		bool load = i >= 0 && wanted(skel, vmlinux, i, mode);

		bpf_program__set_autoload(prog, load);
		if (!load)
			continue;
		if (tracepoints || (progs[i].when & timing))
			info->signals |= progs[i].signals & ~info->disabled;
		if (!tracepoints)
			info->signals |= progs[i].fallback_signals;
	}
	if (!tracepoints && !(info->signals & SHMEM_SIG_ALLOCS) &&
	    !fentry_supported(vmlinux)) {
		fprintf(stderr, "%s: this kernel has no shmem trace events and cannot attach fentry programs (no BPF trampolines: ftrace off?), which the fallback mode needs\n",
			prog_name);
		return -1;
	}
	if (!tracepoints && !(info->signals & SHMEM_SIG_ALLOCS)) {
		fprintf(stderr, "%s: this kernel has neither the shmem trace events nor a traceable shmem_alloc_and_add_folio() or shmem_add_to_page_cache()\n",
			prog_name);
		return -1;
	}
	if (opts->latency && tracepoints)
		info->signals |= SHMEM_SIG_LAT_UPTODATE;
	skel->rodata->count_in_fexit = !tracepoints;
	skel->rodata->ramp_args = bpf_program__autoload(skel->progs.alloc_folio);
	skel->rodata->latency = opts->latency;
	skel->rodata->call_latency = opts->call_latency;
	skel->rodata->rows = opts->rows;
	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++) {
		struct bpf_map *map = bpf_object__find_map_by_name(skel->obj,
			shmem_map_descs[SHMEM_ROW_MAP(k)].name);
		unsigned int n = (opts->entries ? opts->entries : default_entries[k]) +
				 lru_slack();

		/* a map must have an entry; one nobody fills costs nothing */
		if (bpf_map__set_max_entries(map, opts->rows & (1U << k) ? n : 1))
			return -1;
	}
	if (!opts->latency && bpf_map__set_max_entries(skel->maps.born, 1))
		return -1;
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
	/* without this check the filter would count nothing, silently */
	if (opts->pid && kill(opts->pid, 0) && errno == ESRCH) {
		fprintf(stderr, "%s: no such process: %d\n", prog, opts->pid);
		return -1;
	}
	if (opts->cgroup) {
		struct statfs fs;

		cgroup_fd = open(opts->cgroup, O_RDONLY | O_DIRECTORY);
		if (cgroup_fd < 0) {
			fprintf(stderr, "%s: cannot open cgroup %s: %s\n", prog,
				opts->cgroup, strerror(errno));
			return -1;
		}
		/* the kernel's answer to another directory is EBADF */
		if (fstatfs(cgroup_fd, &fs) || fs.f_type != CGROUP2_SUPER_MAGIC) {
			fprintf(stderr, "%s: %s is not a cgroup v2 directory\n", prog,
				opts->cgroup);
			close(cgroup_fd);
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
	retarget(t->skel->obj, opts->retarget);
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
	shmem_maps_from_object(t->skel->obj, &t->maps);
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

/* Remove the pins of @t under @dir, which shmem_tracer_pin() made. */
static void remove_pins(struct shmem_tracer *t, const char *dir)
{
	const struct bpf_object_skeleton *s = t->skel->skeleton;
	char path[PATH_MAX];

	for (int i = 0; i < SHMEM_NR_MAPS; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, shmem_map_descs[i].name);
		unlink(path);
	}
	for (int i = 0; i < s->prog_cnt; i++) {
		snprintf(path, sizeof(path), "%s/" LINK_PREFIX "%s", dir,
			 s->progs[i].name);
		unlink(path);
	}
	rmdir(dir);
}

int shmem_tracer_pin(struct shmem_tracer *t, const char *dir, const char *prog)
{
	const struct bpf_object_skeleton *s = t->skel->skeleton;
	char path[PATH_MAX];
	struct statfs fs;

	if (mkdir(dir, 0700)) {
		fprintf(stderr, "%s: cannot pin under %s: %s%s\n", prog, dir,
			strerror(errno), errno == EEXIST ?
			" (stop the tracing pinned there first)" : "");
		return -1;
	}
	/* the kernel's EINVAL for a pin outside bpffs names no cause */
	if (statfs(dir, &fs) || fs.f_type != BPF_FS_MAGIC) {
		fprintf(stderr, "%s: cannot pin under %s: not on a bpffs mount\n",
			prog, dir);
		rmdir(dir);
		return -1;
	}
	if (shmem_maps_pin(t->skel->obj, dir, path, sizeof(path)))
		goto fail;
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
	remove_pins(t, dir);
	return -1;
}

/* Is @path, named @name, a link to one of our programs? */
static bool link_pinned_here(const char *path, const char *name)
{
	struct bpf_link_info link = {};
	struct bpf_prog_info info = {};
	__u32 len = sizeof(link);
	int fd, prog_fd = -1;
	bool ours = false;

	name += strlen(LINK_PREFIX);
	if (prog_index(name) < 0)
		return false;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	if (!bpf_obj_get_info_by_fd(fd, &link, &len))
		prog_fd = bpf_prog_get_fd_by_id(link.prog_id);
	len = sizeof(info);
	/* the kernel keeps the first BPF_OBJ_NAME_LEN - 1 bytes of a name */
	if (prog_fd >= 0 && !bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		ours = !strncmp(info.name, name, BPF_OBJ_NAME_LEN - 1);
	if (prog_fd >= 0)
		close(prog_fd);
	close(fd);
	return ours;
}

int shmem_unpin(const char *dir, const char *prog)
{
	struct statfs fs;
	struct dirent *de;
	char path[PATH_MAX];
	int err = 0;
	DIR *d;

	if (statfs(dir, &fs) || (d = opendir(dir)) == NULL) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog, dir,
			strerror(errno));
		return -1;
	}
	if (fs.f_type != BPF_FS_MAGIC) {
		fprintf(stderr, "%s: %s is not on a bpffs mount: nothing removed\n",
			prog, dir);
		closedir(d);
		return -1;
	}
	/* all or nothing: check every entry before removing any */
	while ((de = readdir(d))) {
		bool ours;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!strncmp(de->d_name, LINK_PREFIX, strlen(LINK_PREFIX)))
			ours = link_pinned_here(path, de->d_name);
		else
			ours = shmem_map_pinned_here(dir, de->d_name);
		if (!ours) {
			fprintf(stderr, "%s: %s is not something shmemtrace start pinned: nothing removed\n",
				prog, path);
			closedir(d);
			return -1;
		}
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path)) {
			fprintf(stderr, "%s: cannot remove %s: %s\n", prog, path,
				strerror(errno));
			err = -1;
		}
	}
	closedir(d);
	if (!err && rmdir(dir)) {
		fprintf(stderr, "%s: cannot remove %s: %s\n", prog, dir,
			strerror(errno));
		err = -1;
	}
	return err;
}

int shmem_source_open(struct shmem_source *src, const char *pinned_dir,
		      const struct shmem_tracer_opts *opts, const char *prog)
{
	memset(src, 0, sizeof(*src));
	src->pin_watch = -1;
	if (pinned_dir) {
		if (shmem_maps_open_pinned(pinned_dir, &src->pinned, prog))
			return -1;
		src->maps = &src->pinned;
		/*
		 * shmemtrace stop unlinks the pins, start makes new ones; the
		 * watch sees both after we drop the right to look in there
		 */
		src->pin_watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (src->pin_watch < 0 ||
		    inotify_add_watch(src->pin_watch, pinned_dir, IN_CREATE |
				      IN_DELETE | IN_MOVE | IN_DELETE_SELF) < 0) {
			fprintf(stderr, "%s: cannot watch %s: %s\n", prog,
				pinned_dir, strerror(errno));
			shmem_source_close(src);
			return -1;
		}
		return 0;
	}
	if (shmem_tracer_start(&src->tracer, opts, prog))
		return -1;
	src->maps = &src->tracer.maps;
	src->live = true;
	return 0;
}

/* When the maps under @dir were pinned (empty), on our clock */
static double pin_time(const char *dir)
{
	char path[PATH_MAX];
	struct timespec real;
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir,
		 shmem_map_descs[SHMEM_MAP_TOTALS].name);
	clock_gettime(CLOCK_REALTIME, &real);
	if (stat(path, &st))
		return shmem_now();
	return shmem_now() - (real.tv_sec - st.st_ctim.tv_sec) -
	       (real.tv_nsec - st.st_ctim.tv_nsec) / 1e9;
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
	base->time = shmem_args.pinned ? pin_time(shmem_args.pinned) : shmem_now();
	base->mthp_since_boot = mthp_since_boot || shmem_args.pinned;
	if (!base->mthp_since_boot)
		shmem_mthp_read(SHMEM_MTHP_DIR, base);
	shmem_missing_signals(&base->info, missing, sizeof(missing));
	if (*missing && !quiet)
		fprintf(stderr, "%s: %s mode, missing on this kernel: %s\n", prog,
			base->info.tracepoints ? "tracepoint" : "fallback", missing);
	return 0;
}

int shmem_source_check(const struct shmem_source *src, const char *prog)
{
	struct pollfd pfd = { .fd = src->pin_watch, .events = POLLIN };

	if (src->pin_watch < 0 || poll(&pfd, 1, 0) <= 0)
		return 0;
	fprintf(stderr, "%s: the maps pinned under %s were removed or replaced (shmemtrace stop): their counts ended; run again to read new ones\n",
		prog, shmem_args.pinned);
	return -1;
}

void shmem_source_close(struct shmem_source *src)
{
	if (src->live)
		shmem_tracer_stop(&src->tracer);
	else
		shmem_maps_close(&src->pinned);
	if (src->pin_watch >= 0)
		close(src->pin_watch);
}
