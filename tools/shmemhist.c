// SPDX-License-Identifier: GPL-2.0
/*
 * shmemhist: distributions of shmem/tmpfs folio activity per interval, in
 * the libbpf-tools mould: folio orders (linear), fallbacks and splits by
 * reason, block-uptodate transitions, bytes zeroed, the kernel's mTHP
 * counters and log2 latency histograms.
 */
#include <argp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "shmem_tools.h"

#define PROG "shmemhist"

static struct {
	double interval;	/* 0: one report at the end */
	long count;		/* 0: until stopped */
	bool timestamp, msecs, json;
} env;

static const char doc[] =
"Summarize shmem/tmpfs folio allocations, fallbacks, splits and latency.\n"
"\n"
"Without INTERVAL, reports once on Ctrl-C or when COMMAND exits.\n"
"\n"
"EXAMPLES:\n"
"    shmemhist                 # trace until Ctrl-C, then report\n"
"    shmemhist -T 1 10         # ten reports, 1 s apart, with timestamps\n"
"    shmemhist -m -- fio job   # latency in milliseconds while fio runs\n"
"    shmemhist -j 1 5          # five JSON reports, 1 s apart\n"
"    shmemhist --pinned /sys/fs/bpf/shmem   # read shmemtrace's maps\n";

static const struct argp_option options[] = {
	{ "interval", 'i', "SECONDS", 0, "Seconds between reports (or INTERVAL)", 0 },
	{ "count", 'n', "COUNT", 0, "Stop after COUNT reports (or COUNT)", 0 },
	{ "timestamp", 'T', NULL, 0, "Print a timestamp with each report", 0 },
	{ "milliseconds", 'm', NULL, 0, "Latency histograms in milliseconds", 0 },
	{ "json", 'j', NULL, 0, "Print one JSON object per report (shmemtop's, without rows)", 0 },
	{ "help", 'h', NULL, 0, "Show this help", -1 },
	{},
};

static const struct argp_child children[] = {
	{ &shmem_version_argp, 0, NULL, 0 },
	{ &shmem_loader_argp, 0, NULL, 0 },
	{ &shmem_pinned_argp, 0, NULL, 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'T':
		env.timestamp = true;
		break;
	case 'm':
		env.msecs = true;
		break;
	case 'j':
		env.json = true;
		break;
	case 'i':
	case 'n':
	case ARGP_KEY_ARG:
		return shmem_parse_interval_count(key, arg, state, &env.interval,
						  &env.count);
	default:
		return shmem_parse_common(key, state);
	}
	return 0;
}

static bool has(const struct shmem_snapshot *d, __u32 signals)
{
	return (d->info.signals & signals) == signals;
}

static void print_bar(__u64 n, __u64 max)
{
	const int width = 40;
	int bar = max ? (int)(n * width / max) : 0;

	printf("|%-*.*s|", width, bar, "****************************************");
}

/* A linear histogram of @counts by order, or "(@none)" */
static void print_order_hist(const __u64 *counts, const char *none)
{
	int first = -1, last = -1;
	__u64 max = 0;
	char size[16];

	for (int o = 0; o < SHMEM_NR_ORDERS; o++) {
		if (!counts[o])
			continue;
		if (first < 0)
			first = o;
		last = o;
		if (counts[o] > max)
			max = counts[o];
	}
	if (last < 0) {
		printf("     (%s)\n", none);
		return;
	}
	printf("%10s %6s : %-10s %s\n", "order", "size", "count", "distribution");
	for (int o = first; o <= last; o++) {
		shmem_order_size(o, size, sizeof(size));
		printf("%10d %6s : %-10llu ", o, size,
		       (unsigned long long)counts[o]);
		print_bar(counts[o], max);
		printf("\n");
	}
}

static void print_orders(const struct shmem_snapshot *d)
{
	const char *note = shmem_fallocate_note(d);
	__u64 counts[SHMEM_NR_ORDERS];
	char size[16];

	printf("Folio allocations by order:\n");
	if (!has(d, SHMEM_SIG_ALLOCS)) {
		printf("     (not observable on this kernel)\n");
		return;
	}
	for (int o = 0; o < SHMEM_NR_ORDERS; o++)
		counts[o] = shmem_order_allocs(d, o);
	print_order_hist(counts, "no allocations");
	printf("\nAllocations by path%s:\n",
	       has(d, SHMEM_SIG_PATHS) ? "" : " (inferred from the caller)");
	for (unsigned int p = 0; p < SHMEM_STAT_NR_PATHS; p++) {
		if (!shmem_path_allocs(d, p))
			continue;
		printf("%10s :", shmem_path_name(p));
		for (int o = 0; o < SHMEM_NR_ORDERS; o++) {
			if (!d->totals.allocs[o][p])
				continue;
			shmem_order_size(o, size, sizeof(size));
			printf(" %s %llu", size,
			       (unsigned long long)d->totals.allocs[o][p]);
		}
		printf("\n");
	}
	if (note)
		printf("%s\n", note);
}

/* Fallbacks by order and reason, or "(@none)" */
static void print_fallback_table(const __u64 (*counts)[SHMEM_STAT_NR_FALLBACKS],
				 const char *none)
{
	char size[16];
	bool any = false;

	for (int o = 0; o < SHMEM_NR_ORDERS; o++) {
		for (int r = 0; r < SHMEM_STAT_NR_FALLBACKS; r++) {
			if (!counts[o][r])
				continue;
			if (!any)
				printf("%10s %12s : %s\n", "size", "reason", "count");
			any = true;
			shmem_order_size(o, size, sizeof(size));
			printf("%10s %12s : %llu\n", size, shmem_fallback_name(r),
			       (unsigned long long)counts[o][r]);
		}
	}
	if (!any)
		printf("     (%s)\n", none);
}

static void print_fallbacks(const struct shmem_snapshot *d)
{
	printf("\nFallbacks (order given up, by reason)%s:\n",
	       has(d, SHMEM_SIG_FB_REASONS) ? "" :
	       " (reasons inferred: alloc from shmem_alloc_folio() failing, the others from errors after it)");
	if (!has(d, SHMEM_SIG_FALLBACKS)) {
		printf("     (not observable on this kernel)\n");
		return;
	}
	print_fallback_table(d->totals.fallbacks, "no fallbacks");
}

/*
 * The allocations and fallbacks above whose order only the append ramp
 * allowed, not the request's length or huge=: the source of the size
 */
static void print_ramp(const struct shmem_snapshot *d)
{
	__u64 ramped = 0, all = 0;

	printf("\nSized by the append ramp (orders larger than the write asked for):\n");
	if (!has(d, SHMEM_SIG_RAMP)) {
		printf("     (not observable on this kernel)\n");
		return;
	}
	for (int o = 0; o < SHMEM_NR_ORDERS; o++) {
		ramped += d->totals.ramp_allocs[o];
		all += shmem_order_allocs(d, o);
	}
	printf("%10s : %llu of %llu folios, the rest sized by the request\n",
	       "ramped", (unsigned long long)ramped, (unsigned long long)all);
	print_order_hist(d->totals.ramp_allocs, "no folio sized by the ramp");
	printf("Fallbacks from orders the ramp chose:\n");
	print_fallback_table(d->totals.ramp_fallbacks,
			     "no fallback from an order the ramp chose");
}

static void print_splits(const struct shmem_snapshot *d)
{
	char size[16];
	bool any = false;

	printf("\nSplits (order before, by reason):\n");
	if (!has(d, SHMEM_SIG_SPLITS)) {
		printf("     (not observable on this kernel)\n");
		return;
	}
	for (int o = 0; o < SHMEM_NR_ORDERS; o++) {
		for (int r = 0; r < SHMEM_STAT_NR_SPLITS; r++) {
			const struct shmem_split_count *c = &d->totals.splits[o][r];

			if (!c->done && !c->failed)
				continue;
			if (!any)
				printf("%10s %12s : %-10s %s\n", "size", "reason",
				       "split", "failed");
			any = true;
			shmem_order_size(o, size, sizeof(size));
			printf("%10s %12s : %-10llu %llu\n", size,
			       shmem_split_name(r), (unsigned long long)c->done,
			       (unsigned long long)c->failed);
		}
	}
	if (!any)
		printf("     (no splits)\n");
}

static void print_blocks(const struct shmem_snapshot *d)
{
	const struct shmem_blocks *b = &d->totals.blocks;

	printf("\nBlock uptodate state of large folios:\n");
	if (!has(d, SHMEM_SIG_BLOCKS)) {
		printf("     (not observable on this kernel)\n");
	} else {
		printf("%24s : %llu events, %llu blocks\n", "became uptodate",
		       (unsigned long long)b->uptodate_events,
		       (unsigned long long)b->uptodate_blocks);
		printf("%24s : %llu events, %llu blocks\n", "cleared",
		       (unsigned long long)b->clear_events,
		       (unsigned long long)b->clear_blocks);
		printf("%24s : %llu large folios\n", "became partial",
		       (unsigned long long)b->became_partial);
		printf("%24s : %llu large folios\n", "became full",
		       (unsigned long long)b->became_full);
		printf("%24s : %llu large folios\n", "partial now",
		       (unsigned long long)d->partial_now);
	}
	printf("\nBytes zeroed:\n");
	if (!has(d, SHMEM_SIG_ZERO)) {
		printf("     (not observable on this kernel)\n");
		return;
	}
	for (int z = 0; z < SHMEM_STAT_NR_ZEROS; z++)
		printf("%24s : %llu\n", shmem_zero_name(z),
		       (unsigned long long)b->zeroed[z]);
}

static void print_mthp(const struct shmem_snapshot *d)
{
	bool any = false;

	if (!d->nr_mthp)
		return;
	printf("\nKernel mTHP counters (sysfs, %s):\n",
	       d->mthp_since_boot ? "since boot" : "this interval");
	for (size_t i = 0; i < d->nr_mthp; i++) {
		const struct shmem_mthp *m = &d->mthp[i];
		char size[16];

		if (!m->alloc && !m->fallback && !m->fallback_charge &&
		    !m->split && !m->split_failed)
			continue;
		if (!any)
			printf("%10s : %12s %12s %12s %12s %12s\n", "size",
			       "shmem_alloc", "fallback", "fb_charge", "split",
			       "split_failed");
		any = true;
		shmem_size_name(m->kb, size, sizeof(size));
		printf("%10s : %12llu %12llu %12llu %12llu %12llu\n", size,
		       (unsigned long long)m->alloc,
		       (unsigned long long)m->fallback,
		       (unsigned long long)m->fallback_charge,
		       (unsigned long long)m->split,
		       (unsigned long long)m->split_failed);
	}
	if (!any)
		printf("     (no shmem mTHP activity)\n");
}

static void print_latency(const struct shmem_snapshot *d)
{
	static const struct {
		unsigned int hist;
		__u32 signal;
		const char *title;
	} hists[] = {
		{ SHMEM_HIST_ALLOC, SHMEM_SIG_LAT_ALLOC, "shmem folio allocation" },
		{ SHMEM_HIST_WRITE, SHMEM_SIG_LAT_WRITE, "write(2) calls" },
		{ SHMEM_HIST_FAULT, SHMEM_SIG_LAT_FAULT, "page faults" },
		{ SHMEM_HIST_FALLOC, SHMEM_SIG_LAT_FALLOC, "fallocate(2) calls" },
		{ SHMEM_HIST_UPTODATE, SHMEM_SIG_LAT_UPTODATE,
		  "large folio: allocated -> fully uptodate" },
	};

	for (size_t i = 0; i < sizeof(hists) / sizeof(hists[0]); i++) {
		printf("\nLatency, %s:\n", hists[i].title);
		if (d->info.disabled & hists[i].signal)
			printf("     (not traced: %s%s turns it on)\n",
			       shmem_args.pinned ? "shmemtrace start " : "",
			       hists[i].signal & SHMEM_SIG_LAT_CALLS ?
			       "--call-latency" : "--latency");
		else if (!has(d, hists[i].signal))
			printf("     (not observable on this kernel)\n");
		else
			shmem_print_log2(stdout, &d->hists[hists[i].hist],
					 env.msecs);
	}
}

/* The per-entity maps of whoever loaded them: what they had to drop */
static void print_rows(const struct shmem_snapshot *d)
{
	if (!d->info.rows)
		return;
	printf("\nRows per file, process, cgroup and file system (LRU maps; the totals above never drop):\n");
	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++)
		if (d->info.rows & (1U << k))
			printf("%10s : %zu of %u, %llu dropped\n",
			       shmem_row_kind_name(k), d->nr_rows[k],
			       d->capacity[k], (unsigned long long)d->dropped[k]);
}

/* Nothing counted in @d: no event, histogram entry, kernel counter or drop */
static bool idle(const struct shmem_snapshot *d)
{
	static const struct shmem_totals none;

	if (memcmp(&d->totals, &none, sizeof(none)) || d->partial_now)
		return false;
	for (int h = 0; h < SHMEM_NR_HISTS; h++)
		if (shmem_hist_count(&d->hists[h]))
			return false;
	for (size_t i = 0; i < d->nr_mthp; i++) {
		const struct shmem_mthp *m = &d->mthp[i];

		if (m->alloc || m->fallback || m->fallback_charge || m->split ||
		    m->split_failed)
			return false;
	}
	for (int k = 0; k < SHMEM_NR_ROW_KINDS; k++)
		if (d->dropped[k])
			return false;
	return true;
}

static void report(const struct shmem_snapshot *d)
{
	if (env.timestamp) {
		char stamp[32];
		time_t now = time(NULL);

		strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&now));
		printf("%s\n", stamp);
	}
	/* an idle interval: one line, not every section's "(no events)" */
	if (idle(d)) {
		printf("No shmem/tmpfs folio events: no allocations, fallbacks, "
		       "splits, block changes or latencies.\n\n");
		fflush(stdout);
		return;
	}
	print_orders(d);
	print_fallbacks(d);
	print_ramp(d);
	print_splits(d);
	print_blocks(d);
	print_mthp(d);
	print_latency(d);
	print_rows(d);
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "[INTERVAL [COUNT]] [-- COMMAND [ARG...]]",
					  doc, children, NULL, NULL };
	struct shmem_snapshot prev = {}, now, delta;
	struct shmem_source src;
	char **cmd;
	pid_t child = 0;
	int status = 0, err = 0;
	long reports = 0;
	bool done = false, exited = false, pinned_once;

	cmd = shmem_split_command(&argc, argv);
	/* histograms need no per-entity rows */
	shmem_args.tracer.rows = 0;
	if (shmem_parse_args(&argp, argc, argv))
		return EX_USAGE;
	pinned_once = shmem_args.pinned && !env.interval;
	shmem_handle_signals();
	if (shmem_source_begin(&src, &prev, false, false, PROG))
		return 1;
	if (cmd) {
		child = shmem_command_start(cmd, PROG);
		if (child < 0) {
			shmem_source_close(&src);
			return 1;
		}
	} else if (!env.interval && !shmem_args.pinned) {
		fprintf(stderr, "Tracing shmem folios... Hit Ctrl-C to end.\n");
	}
	/* a report a signal cut short ends the run: the next would block too */
	while (!done && !ferror(stdout)) {
		/* no interval: one report at Ctrl-C or when the command exits */
		double wait = env.interval ? env.interval : 86400;

		if (!shmem_args.pinned || env.interval)
			if (shmem_wait(wait, child, -1, &status) == 1) {
				done = exited = true;
				child = 0;
			}
		if (shmem_exiting || pinned_once)
			done = true;
		if (shmem_source_check(&src, PROG)) {
			err = 1;
			break;
		}
		if (shmem_snapshot_read(src.maps, SHMEM_MTHP_DIR, &now) ||
		    shmem_snapshot_delta(&now, &prev, &delta)) {
			fprintf(stderr, PROG ": cannot read the maps\n");
			err = 1;
			break;
		}
		if (env.json)
			shmem_print_json(&delta, now.time - prev.time, 0);
		else
			report(&delta);
		shmem_snapshot_free(&delta);
		shmem_snapshot_free(&prev);
		prev = now;
		if (env.count && ++reports >= env.count)
			break;
	}
	if (child > 0) {
		kill(child, SIGTERM);
		waitpid(child, &status, 0);
	}
	shmem_snapshot_free(&prev);
	shmem_source_close(&src);
	/* a command we stopped early did not fail */
	if (!err && exited)
		err = shmem_command_failed(status, cmd[0], PROG);
	return err;
}
