// SPDX-License-Identifier: GPL-2.0
/*
 * shmemtop: which files, processes and cgroups allocate shmem/tmpfs folios
 * of which sizes, and how often they fall back, split, stay partly
 * uptodate, and how long allocating takes.  Live (ncurses), batch text or
 * one JSON object per interval.
 */
#define _GNU_SOURCE		/* wcwidth() */
#define NCURSES_WIDECHAR 1	/* ncursesw's wide-character calls */
#include <argp.h>
#include <curses.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include "shmem_tools.h"

#define PROG "shmemtop"
#define OPT_MOUNT 0x200

static struct {
	double interval;
	long count;		/* 0: until stopped */
	long max_rows;
	enum shmem_sort sort;
	enum shmem_row_kind view;
	bool batch, json;
	bool interval_given;
	/* totals since start, not the last interval's (c in the live view) */
	bool cumulative;
	const char *mount;	/* --mount: its rows only */
	__u32 mount_dev;
} env = {
	.interval = 1,
	.max_rows = 20,
	.sort = SHMEM_SORT_ALLOCS,
};

static const char doc[] =
"Show shmem/tmpfs folio allocations by file, process or cgroup.\n"
"\n"
"With a COMMAND, trace while it runs and stop when it exits; without -i,\n"
"-b and --json report once, when it exits.\n"
"Keys in the live view: v cycles files, processes, cgroups and file systems;\n"
"s cycles the sort key; c toggles totals since start; q quits.\n"
"\n"
"EXAMPLES:\n"
"    shmemtop                  # live view, 1 s refresh\n"
"    shmemtop -b 2 5           # five text reports, 2 s apart (-i 2 -n 5)\n"
"    shmemtop -C               # live view of the totals since start\n"
"    shmemtop --json -- fallocate -l 8M /mnt/f   # JSON for one command\n"
"    shmemtop --pinned /sys/fs/bpf/shmem -b -n 1  # read shmemtrace's maps\n";

static const struct argp_option options[] = {
	{ "batch", 'b', NULL, 0, "Print plain text reports, no live view", 0 },
	{ "cumulative", 'C', NULL, 0,
	  "Report the totals since start, not each interval's (c toggles it in the live view)", 0 },
	{ "count", 'n', "COUNT", 0, "Stop after COUNT reports", 0 },
	{ "interval", 'i', "SECONDS", 0, "Seconds between reports (default 1)", 0 },
	{ "json", 'j', NULL, 0, "Print one JSON object per report", 0 },
	{ "rows", 'r', "ROWS", 0, "Rows per report (default 20)", 0 },
	{ "sort", 's', "KEY", 0,
	  "Sort by allocs, large, fallbacks, splits, partial, latency, ramp or name", 0 },
	{ "view", 'k', "VIEW", 0,
	  "Rows per files, procs, cgroups or fses (file systems: pinned maps)", 0 },
	{ "mount", OPT_MOUNT, "PATH", 0,
	  "File and file-system rows of the tmpfs mounted at PATH only", 0 },
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
	long v;

	switch (key) {
	case 'b':
		env.batch = true;
		break;
	case 'C':
		env.cumulative = true;
		break;
	case 'i':
	case 'n':
	case ARGP_KEY_ARG:
		env.interval_given |= key != 'n';
		return shmem_parse_interval_count(key, arg, state, &env.interval,
						  &env.count);
	case 'j':
		env.json = true;
		break;
	case 'r':
		if (shmem_parse_long(arg, 1, 100000, &env.max_rows))
			return shmem_arg_error(state, "invalid rows: %s", arg);
		break;
	case 's':
		if (shmem_sort_parse(arg, &env.sort))
			return shmem_arg_error(state, "invalid sort key: %s", arg);
		break;
	case 'k':
		for (v = 0; v < SHMEM_NR_ROW_KINDS; v++)
			if (!strcmp(arg, shmem_row_kind_name(v)))
				break;
		if (v == SHMEM_NR_ROW_KINDS)
			return shmem_arg_error(state, "invalid view: %s", arg);
		env.view = v;
		break;
	case OPT_MOUNT:
		env.mount = arg;
		break;
	default:
		return shmem_parse_common(key, state);
	}
	return 0;
}

/* Order classes of the table's columns: 4K | 8K-32K | 64K-1M | 2M+ */
static const struct {
	const char *title;
	unsigned int lo, hi;
} classes[] = {
	{ "4K", 0, 0 }, { "8-32K", 1, 3 }, { "64K-1M", 4, 8 },
	{ "2M+", 9, SHMEM_NR_ORDERS - 1 },
};
#define NR_CLASSES (sizeof(classes) / sizeof(classes[0]))

static __u64 class_allocs(const struct shmem_row *row, unsigned int c)
{
	__u64 n = 0;

	for (unsigned int o = classes[c].lo; o <= classes[c].hi; o++)
		n += row->allocs[o];
	return n;
}

static const char *const id_titles[SHMEM_NR_ROW_KINDS] = {
	"DEV:INO", "PID", "CGROUP-ID", "DEV",
};

/*
 * The columns after NAME, in the order they show, with their width (the
 * space before each included).  A narrow live view drops them in
 * drop_order until the rest fit; the sort key's column stays.
 */
enum column {
	COL_ID, COL_CLASS0,	/* COL_CLASS0 + c: the order classes */
	COL_RAMP = COL_CLASS0 + NR_CLASSES, COL_FALLBK, COL_SPLIT,
	COL_PART_NOW, COL_ZEROED, COL_ALLOC_US, NR_COLUMNS,
};
#define ALL_COLUMNS ((1U << NR_COLUMNS) - 1)
#define NAME_WIDTH 16
#define NAME_WIDTH_MAX 40

static const struct {
	const char *title;
	int width;
} columns[NR_COLUMNS] = {
	[COL_ID] = { NULL, 15 },
	[COL_CLASS0 ... COL_CLASS0 + NR_CLASSES - 1] = { NULL, 9 },
	[COL_RAMP] = { "RAMP", 7 }, [COL_FALLBK] = { "FALLBK", 8 },
	[COL_SPLIT] = { "SPLIT", 7 }, [COL_PART_NOW] = { "PART-NOW", 9 },
	[COL_ZEROED] = { "ZEROED", 11 }, [COL_ALLOC_US] = { "ALLOC-us", 10 },
};

/* Lowest priority first: at 80 columns the first four go */
static const enum column drop_order[NR_COLUMNS] = {
	COL_ZEROED, COL_RAMP, COL_ID, COL_CLASS0 + 1, COL_CLASS0 + 2,
	COL_SPLIT, COL_PART_NOW, COL_ALLOC_US, COL_CLASS0, COL_FALLBK,
	COL_CLASS0 + 3,
};

static const int sort_columns[SHMEM_NR_SORTS] = {
	[SHMEM_SORT_ALLOCS] = -1, [SHMEM_SORT_LARGE] = COL_CLASS0 + 3,
	[SHMEM_SORT_FALLBACKS] = COL_FALLBK, [SHMEM_SORT_SPLITS] = COL_SPLIT,
	[SHMEM_SORT_PARTIAL] = COL_PART_NOW, [SHMEM_SORT_LATENCY] = COL_ALLOC_US,
	[SHMEM_SORT_RAMP] = COL_RAMP, [SHMEM_SORT_NAME] = -1,
};

struct layout {
	unsigned int shown;	/* 1 << enum column */
	int name_width;
};

/* The columns that fit in @width; NAME takes what is left, up to its maximum */
static struct layout fit_columns(int width)
{
	struct layout l = { ALL_COLUMNS, NAME_WIDTH };
	int used = NAME_WIDTH;

	for (int c = 0; c < NR_COLUMNS; c++)
		used += columns[c].width;
	for (int i = 0; i < NR_COLUMNS && used > width; i++) {
		enum column c = drop_order[i];

		if ((int)c == sort_columns[env.sort])
			continue;
		l.shown &= ~(1U << c);
		used -= columns[c].width;
	}
	if (used < width)
		l.name_width += width - used < NAME_WIDTH_MAX - NAME_WIDTH ?
				width - used : NAME_WIDTH_MAX - NAME_WIDTH;
	return l;
}

static const struct layout full_layout = { ALL_COLUMNS, NAME_WIDTH };

/* The first @chars characters of UTF-8 @s, padded to that width */
static int utf8_column(char *buf, size_t len, const char *s, int chars)
{
	size_t n = 0;
	int seen = 0;

	while (s[n] && seen < chars) {
		n++;
		while ((s[n] & 0xc0) == 0x80)
			n++;
		seen++;
	}
	return snprintf(buf, len, "%.*s%*s", (int)n, s, chars - seen, "");
}

static void format_header(char *buf, size_t len, const struct layout *l)
{
	size_t used = snprintf(buf, len, "%-*s", l->name_width, "NAME");

	for (int c = 0; c < NR_COLUMNS && used < len; c++) {
		const char *title = columns[c].title;

		if (!(l->shown & (1U << c)))
			continue;
		if (c == COL_ID)
			used += snprintf(buf + used, len - used, " %-14s",
					 id_titles[env.view]);
		else
			used += snprintf(buf + used, len - used, " %*s",
					 columns[c].width - 1,
					 title ? title : classes[c - COL_CLASS0].title);
	}
}

static struct shmem_mounts mounts;

/* "MAJOR:MINOR", or "shm" for the kernel's internal shm mount */
static void dev_name(__u32 dev, char *buf, size_t len)
{
	if (mounts.internal_dev && dev == mounts.internal_dev)
		snprintf(buf, len, "shm");
	else
		shmem_dev_name(dev, buf, len);
}

/* " N" in @width, or "-" where this kernel cannot observe it: not a 0 */
static size_t count_cell(char *buf, size_t len, int width, __u64 v,
			 bool observed)
{
	if (!observed)
		return snprintf(buf, len, " %*s", width, "-");
	return snprintf(buf, len, " %*llu", width, (unsigned long long)v);
}

/* Column @c of @e's row */
static size_t format_cell(char *buf, size_t len, int c,
			  const struct shmem_row_entry *e, __u32 signals)
{
	const struct shmem_row *row = &e->row;
	int width = columns[c].width - 1;
	char id[32];

	switch (c) {
	case COL_ID:
		if (env.view == SHMEM_ROWS_FILES) {
			dev_name(e->dev, id, sizeof(id));
			snprintf(id + strlen(id), sizeof(id) - strlen(id), ":%llu",
				 (unsigned long long)e->id);
		} else if (env.view == SHMEM_ROWS_FSES) {
			dev_name(e->dev, id, sizeof(id));
		} else {
			snprintf(id, sizeof(id), "%llu", (unsigned long long)e->id);
		}
		return snprintf(buf, len, " %-14s", id);
	case COL_RAMP:
		/* of the allocations, the folios whose order the append ramp chose */
		return count_cell(buf, len, width, shmem_row_ramped(row),
				  signals & SHMEM_SIG_RAMP);
	case COL_FALLBK:
		return count_cell(buf, len, width, row->fallbacks, true);
	case COL_SPLIT:
		return count_cell(buf, len, width, row->splits,
				  signals & SHMEM_SIG_SPLITS);
	case COL_PART_NOW:
		return count_cell(buf, len, width, e->partial_now,
				  signals & SHMEM_SIG_BLOCKS);
	case COL_ZEROED:
		return count_cell(buf, len, width, row->zeroed,
				  signals & SHMEM_SIG_ZERO);
	case COL_ALLOC_US:
		/* "-": not traced, or no allocation of the row's timed */
		if ((signals & SHMEM_SIG_LAT_ALLOC) && row->alloc_calls)
			return snprintf(buf, len, " %*.1f", width,
					shmem_row_latency(row) / 1e3);
		return snprintf(buf, len, " %*s", width, "-");
	default:
		return count_cell(buf, len, width, class_allocs(row, c - COL_CLASS0),
				  true);
	}
}

static void format_row(char *buf, size_t len, const struct shmem_row_entry *e,
		       __u32 signals, const struct layout *l)
{
	size_t used = utf8_column(buf, len, e->name, l->name_width);

	for (int c = 0; c < NR_COLUMNS && used < len; c++)
		if (l->shown & (1U << c))
			used += format_cell(buf + used, len - used, c, e, signals);
}

static void format_summary(char *buf, size_t len, const struct shmem_snapshot *d)
{
	size_t used = snprintf(buf, len, "allocs:");
	char size[16];
	__u64 fallbacks = 0, splits = 0, ramped = 0, ramped_fallbacks = 0;
	bool ramp = d->info.signals & SHMEM_SIG_RAMP;

	for (unsigned int o = 0; o < SHMEM_NR_ORDERS && used < len; o++) {
		__u64 n = shmem_order_allocs(d, o);

		if (!n)
			continue;
		shmem_order_size(o, size, sizeof(size));
		used += snprintf(buf + used, len - used, " %s %llu", size,
				 (unsigned long long)n);
	}
	for (unsigned int o = 0; o < SHMEM_NR_ORDERS; o++) {
		ramped += d->totals.ramp_allocs[o];
		for (unsigned int r = 0; r < SHMEM_STAT_NR_FALLBACKS; r++) {
			fallbacks += d->totals.fallbacks[o][r];
			ramped_fallbacks += d->totals.ramp_fallbacks[o][r];
		}
		for (unsigned int r = 0; r < SHMEM_STAT_NR_SPLITS; r++)
			splits += d->totals.splits[o][r].done;
	}
	if (used < len)
		used += snprintf(buf + used, len - used, " | ramped");
	if (used < len)
		used += count_cell(buf + used, len - used, 0, ramped, ramp);
	if (used < len)
		used += snprintf(buf + used, len - used, " | fallbacks %llu",
				 (unsigned long long)fallbacks);
	if (ramp && used < len)
		used += snprintf(buf + used, len - used, " (%llu ramped)",
				 (unsigned long long)ramped_fallbacks);
	if (used < len)
		used += snprintf(buf + used, len - used, " | splits");
	if (used < len)
		used += count_cell(buf + used, len - used, 0, splits,
				   d->info.signals & SHMEM_SIG_SPLITS);
	if (used < len)
		used += snprintf(buf + used, len - used, " | became partial");
	if (used < len)
		used += count_cell(buf + used, len - used, 0,
				   d->totals.blocks.became_partial,
				   d->info.signals & SHMEM_SIG_BLOCKS);
	if (used < len)
		used += snprintf(buf + used, len - used, " | partial now");
	if (used < len)
		count_cell(buf + used, len - used, 0, d->partial_now,
			   d->info.signals & SHMEM_SIG_BLOCKS);
}

/* Rows the LRU maps dropped this interval, or "" */
static void format_dropped(char *buf, size_t len, const struct shmem_snapshot *d)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int k = 0; k < SHMEM_NR_ROW_KINDS && used < len; k++)
		if (d->dropped[k])
			used += snprintf(buf + used, len - used, "%s %s %llu",
					 used ? "," : "rows dropped (maps full, -E to enlarge):",
					 shmem_row_kind_name(k),
					 (unsigned long long)d->dropped[k]);
}

/* When the cumulative totals began (the pin, for pinned maps): "HH:MM:SS" */
static char totals_start[16];

static void print_text(const struct shmem_snapshot *d)
{
	const char *note = shmem_fallocate_note(d);
	char line[256];
	char stamp[32];
	time_t now = time(NULL);
	long shown = 0;

	strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&now));
	format_summary(line, sizeof(line), d);
	if (env.cumulative)
		printf("%s (cumulative since %s) %s\n", stamp, totals_start, line);
	else
		printf("%s %s\n", stamp, line);
	format_dropped(line, sizeof(line), d);
	if (*line)
		printf("%s\n", line);
	if (note)
		printf("%s\n", note);
	format_header(line, sizeof(line), &full_layout);
	printf("%s\n", line);
	for (size_t i = 0; i < d->nr_rows[env.view] && shown < env.max_rows; i++) {
		if (!shmem_row_active(&d->rows[env.view][i].row))
			continue;
		format_row(line, sizeof(line), &d->rows[env.view][i],
			   d->info.signals, &full_layout);
		printf("%s\n", line);
		shown++;
	}
	printf("\n");
	fflush(stdout);
}

/* @line on row @y, cut at the screen's width in columns (a name may be wide) */
static void draw_line(int y, const char *line)
{
	wchar_t wide[256];
	size_t n = mbstowcs(wide, line, 255), i;
	int cols = 0;

	/* not UTF-8 in this locale: the line as bytes */
	if (n == (size_t)-1) {
		mvaddnstr(y, 0, line, COLS);
		return;
	}
	for (i = 0; i < n; i++) {
		int w = wcwidth(wide[i]);

		if (cols + (w > 0 ? w : 1) > COLS)
			break;
		cols += w > 0 ? w : 1;
	}
	mvaddnwstr(y, 0, wide, i);
}

static void draw(const struct shmem_snapshot *d, const char *missing)
{
	struct layout l = fit_columns(COLS);
	const char *note = shmem_fallocate_note(d);
	char line[640];
	/* five lines above the rows, the fallocate note's below them */
	int y = 0, rows = LINES - 6;

	erase();
	/* every line cut at the screen's width: none wraps */
	snprintf(line, sizeof(line),
		 "shmemtop - %s, sorted by %s, every %gs, %s%s  (v: view, s: sort, c: cumulative, q: quit)",
		 shmem_row_kind_name(env.view), shmem_sort_name(env.sort),
		 env.interval, env.cumulative ? "cumulative since " : "per interval",
		 env.cumulative ? totals_start : "");
	draw_line(y++, line);
	if (*missing) {
		snprintf(line, sizeof(line), "missing on this kernel: %s", missing);
		draw_line(y, line);
	}
	y++;
	format_summary(line, sizeof(line), d);
	draw_line(y++, line);
	format_dropped(line, sizeof(line), d);
	draw_line(y++, line);
	format_header(line, sizeof(line), &l);
	attron(A_REVERSE);
	mvprintw(y++, 0, "%-*.*s", COLS, COLS, line);
	attroff(A_REVERSE);
	for (size_t i = 0; i < d->nr_rows[env.view] && rows > 0; i++) {
		if (!shmem_row_active(&d->rows[env.view][i].row))
			continue;
		format_row(line, sizeof(line), &d->rows[env.view][i],
			   d->info.signals, &l);
		draw_line(y++, line);
		rows--;
	}
	if (note)
		draw_line(LINES - 1, note);
	refresh();
}

/*
 * The mounts as they are now, for @d's rows: file systems named by their
 * mount point (the internal shm mount as such, not "tmpfs"); with
 * --mount, only the file and file-system rows on it
 */
static void mount_rows(struct shmem_snapshot *d)
{
	static const enum shmem_row_kind kinds[] = {
		SHMEM_ROWS_FILES, SHMEM_ROWS_FSES,
	};

	shmem_mounts_free(&mounts);
	shmem_mounts_read("/proc/self/mountinfo", &mounts);
	d->mounts = &mounts;
	for (size_t i = 0; i < d->nr_rows[SHMEM_ROWS_FSES]; i++) {
		struct shmem_row_entry *e = &d->rows[SHMEM_ROWS_FSES][i];
		const char *name = shmem_mount_name(&mounts, e->dev);

		if (*name)
			snprintf(e->name, sizeof(e->name), "%s", name);
	}
	if (!env.mount)
		return;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct shmem_row_entry *rows = d->rows[kinds[k]];
		size_t kept = 0;

		for (size_t i = 0; i < d->nr_rows[kinds[k]]; i++)
			if (rows[i].dev == env.mount_dev)
				rows[kept++] = rows[i];
		d->nr_rows[kinds[k]] = kept;
	}
}

/* --mount PATH: the device of the tmpfs there, or a usage error */
static int mount_dev(const char *path, __u32 *dev)
{
	const struct shmem_mount *m;
	struct shmem_mounts all;
	struct stat st;
	int err = 0;

	if (stat(path, &st)) {
		fprintf(stderr, PROG ": invalid mount: %s: %m\n", path);
		return EX_USAGE;
	}
	*dev = major(st.st_dev) << 20 | minor(st.st_dev);
	shmem_mounts_read("/proc/self/mountinfo", &all);
	m = shmem_mount_find(&all, *dev);
	if (!m || strcmp(m->fstype, "tmpfs")) {
		fprintf(stderr, PROG ": invalid mount: %s is not on a tmpfs mount\n",
			path);
		err = EX_USAGE;
	}
	shmem_mounts_free(&all);
	return err;
}

/* A key press: true to quit.  @rows: the row maps there are. */
static bool handle_key(int ch, __u32 rows)
{
	switch (ch) {
	case 'q':
	case 'Q':
		return true;
	case 'v':
		do
			env.view = (env.view + 1) % SHMEM_NR_ROW_KINDS;
		while (!(rows & (1U << env.view)));
		break;
	case 's':
		env.sort = (env.sort + 1) % SHMEM_NR_SORTS;
		break;
	case 'c':
		env.cumulative = !env.cumulative;
		break;
	}
	return false;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg,
					  "[INTERVAL [COUNT]] [-- COMMAND [ARG...]]", doc, children, NULL, NULL };
	/* the first report counts from the start: from empty maps */
	struct shmem_snapshot prev = {}, now, delta = {}, since_start = {};
	/* the report shown: the last interval's, or the totals since start */
	struct shmem_snapshot *shown;
	struct shmem_source src;
	char missing[512];
	char **cmd;
	pid_t child = 0;
	int status = 0, err = 0;
	bool live_view, once, done = false, have_delta = false;
	double next, start;
	time_t started;
	long reports = 0;

	cmd = shmem_split_command(&argc, argv);
	if (shmem_parse_args(&argp, argc, argv))
		return EX_USAGE;
	if (env.mount && (err = mount_dev(env.mount, &env.mount_dev)))
		return err;
	live_view = !env.batch && !env.json;
	/* a command's report, once, unless asked for intervals */
	once = cmd && !live_view && !env.interval_given;
	/* per file system is the exporter's; pinned maps may have it */
	shmem_args.tracer.rows = SHMEM_ALL_ROWS & ~(1U << SHMEM_ROWS_FSES);
	if (live_view && !isatty(STDOUT_FILENO)) {
		fprintf(stderr, PROG ": the live view needs a terminal: use -b or --json\n");
		return 1;
	}
	shmem_handle_signals();
	/* the live view shows what is missing on its own screen */
	if (shmem_source_begin(&src, &prev, false, live_view, PROG))
		return 1;
	if (!(prev.info.rows & (1U << env.view))) {
		fprintf(stderr, PROG ": no %s rows in these maps\n",
			shmem_row_kind_name(env.view));
		shmem_source_close(&src);
		return 1;
	}
	shmem_missing_signals(&prev.info, missing, sizeof(missing));
	/* the baseline's time: now, or when the pinned maps were pinned */
	start = prev.time;
	started = time(NULL) - (time_t)(shmem_now() - start + 0.5);
	strftime(totals_start, sizeof(totals_start), "%H:%M:%S", localtime(&started));
	if (cmd) {
		child = shmem_command_start(cmd, PROG);
		if (child < 0) {
			shmem_source_close(&src);
			return 1;
		}
	}
	if (live_view) {
		/* the user's character set, so names in UTF-8 show as text */
		setlocale(LC_CTYPE, "");
		initscr();
		cbreak();
		noecho();
		curs_set(0);
		nodelay(stdscr, TRUE);
	}
	/*
	 * The next refresh is due at a fixed time: a key press repaints and
	 * waits for what is left of the interval, so a held key (autorepeat)
	 * cannot keep the view from refreshing
	 */
	next = shmem_now() + env.interval;
	while (!done && !shmem_exiting) {
		double left = next - shmem_now();
		bool key = false;
		int ch;

		if (shmem_wait(left > 0 ? left : 0, child,
			       live_view ? STDIN_FILENO : -1, &status) == 1) {
			done = true;
			child = 0;
		}
		if (once && !done && !shmem_exiting) {
			next = shmem_now() + env.interval;
			continue;
		}
		if (live_view) {
			bool quit = false;

			while ((ch = getch()) != ERR) {
				quit |= handle_key(ch, prev.info.rows);
				key = true;
			}
			if (quit)
				break;
		}
		shown = env.cumulative ? &since_start : &delta;
		/*
		 * After a key the next draw repaints the whole screen, not only
		 * what changed, whether it is the repaint below or a report due
		 */
		if (key)
			clear();
		if (key && !done && have_delta && shmem_now() < next) {
			/* the last report in the new view or mode */
			shmem_rows_sort(shown, env.view, env.sort);
			draw(shown, missing);
			continue;
		}
		shmem_snapshot_free(&delta);
		if (shmem_source_check(&src, PROG)) {
			err = 1;
			break;
		}
		if (shmem_snapshot_read(src.maps, SHMEM_MTHP_DIR, &now)) {
			fprintf(stderr, PROG ": cannot read the maps\n");
			err = 1;
			break;
		}
		if (shmem_snapshot_delta(&now, &prev, &delta)) {
			fprintf(stderr, PROG ": out of memory\n");
			shmem_snapshot_free(&now);
			err = 1;
			break;
		}
		mount_rows(&delta);
		if (shmem_snapshot_add(&since_start, &delta)) {
			fprintf(stderr, PROG ": out of memory\n");
			shmem_snapshot_free(&now);
			err = 1;
			break;
		}
		have_delta = true;
		next += env.interval;
		if (next < shmem_now())
			next = shmem_now() + env.interval;
		shmem_rows_sort(shown, env.view, env.sort);
		if (env.json)
			shmem_print_json(shown, now.time - (env.cumulative ? start : prev.time),
					 env.max_rows);
		else if (env.batch)
			print_text(shown);
		else
			draw(shown, missing);
		shmem_snapshot_free(&prev);
		prev = now;
		if (env.count && ++reports >= env.count)
			break;
	}
	if (live_view)
		endwin();
	if (child > 0) {
		kill(child, SIGTERM);
		waitpid(child, &status, 0);
	}
	shmem_snapshot_free(&delta);
	shmem_snapshot_free(&since_start);
	shmem_snapshot_free(&prev);
	shmem_source_close(&src);
	shmem_mounts_free(&mounts);
	/* a command we stopped early did not fail */
	if (!err && done)
		err = shmem_command_failed(status, cmd[0], PROG);
	return err;
}
