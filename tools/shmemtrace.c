// SPDX-License-Identifier: GPL-2.0
/*
 * shmemtrace: load and attach the shmem BPF programs and pin their maps
 * and links, so tracing outlives this command and runs across a benchmark;
 * read the results with shmemtop/shmemhist --pinned DIR or bpftool; stop
 * removes them again.
 */
#define _GNU_SOURCE		/* sigabbrev_np() */
#include <argp.h>
#include <signal.h>
#include <string.h>
#include "shmem_tools.h"

#define PROG "shmemtrace"

static struct {
	const char *dir;
	const char *command;
	bool json;
} env = {
	.dir = SHMEM_PIN_DEFAULT,
};

static const char doc[] =
"Pin shmem folio tracing under a bpffs directory, report on it, remove it.\n"
"\n"
"  start   load, attach and pin maps and links under DIR\n"
"  status  say what the pinned programs observe on this kernel\n"
"  stop    unpin what start pinned under DIR and remove it (refused,\n"
"          removing nothing, if DIR holds anything else)\n"
"\n"
"EXAMPLES:\n"
"    shmemtrace start && ./benchmark && shmemhist --pinned " SHMEM_PIN_DEFAULT "\n"
"    bpftool map dump pinned " SHMEM_PIN_DEFAULT "/files\n"
"    shmemtrace stop\n";

static const struct argp_option options[] = {
	{ "dir", 'd', "DIR", 0, "bpffs directory (default " SHMEM_PIN_DEFAULT ")", 0 },
	{ "json", 'j', NULL, 0, "start, status: say it in one JSON object", 0 },
	{ "help", 'h', NULL, 0, "Show this help", -1 },
	{},
};

static const struct argp_child children[] = {
	{ &shmem_version_argp, 0, NULL, 0 },
	{ &shmem_loader_argp, 0, NULL, 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'd':
		env.dir = arg;
		break;
	case 'j':
		env.json = true;
		break;
	case ARGP_KEY_ARG:
		if (state->arg_num)
			return shmem_arg_error(state, "unexpected argument: %s", arg);
		if (strcmp(arg, "start") && strcmp(arg, "stop") &&
		    strcmp(arg, "status"))
			return shmem_arg_error(state, "unknown command: %s", arg);
		env.command = arg;
		break;
	case ARGP_KEY_END:
		if (!env.command)
			return shmem_arg_error(state, "missing command: start, status or stop");
		break;
	default:
		return shmem_parse_common(key, state);
	}
	return 0;
}

static int print_status(const struct shmem_info *info)
{
	char missing[512];

	if (env.json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "mode", json_object_new_string(
			info->tracepoints ? "tracepoints" : "fallback"));
		json_object_object_add(o, "dir", json_object_new_string(env.dir));
		json_object_object_add(o, "missing", shmem_missing_json(info));
		json_object_object_add(o, "not_traced", shmem_not_traced_json(info));
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
		return 0;
	}
	shmem_missing_signals(info, missing, sizeof(missing));
	printf("%s: %s mode under %s; missing on this kernel: %s\n", PROG,
	       info->tracepoints ? "tracepoint" : "fallback", env.dir,
	       *missing ? missing : "nothing");
	return 0;
}

/*
 * Ctrl-C (or SIGTERM, SIGHUP) during start is held until the programs
 * are loaded and pinned, and then undoes the pins: killed midway, start
 * left some pinned, and the next start refused to pin over them.
 */
static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define NR_STOP_SIGNALS (sizeof(stop_signals) / sizeof(stop_signals[0]))

/* The stop signal held meanwhile, or 0 */
static int stop_signal_pending(void)
{
	sigset_t pending;

	sigpending(&pending);
	for (size_t i = 0; i < NR_STOP_SIGNALS; i++)
		if (sigismember(&pending, stop_signals[i]))
			return stop_signals[i];
	return 0;
}

static int start(void)
{
	struct shmem_tracer t;
	sigset_t held;
	int err, sig;

	sigemptyset(&held);
	for (size_t i = 0; i < NR_STOP_SIGNALS; i++)
		sigaddset(&held, stop_signals[i]);
	sigprocmask(SIG_BLOCK, &held, NULL);
	if (shmem_tracer_start(&t, &shmem_args.tracer, PROG))
		return 1;
	err = shmem_tracer_pin(&t, env.dir, PROG);
	sig = stop_signal_pending();
	if (!err && sig) {
		/* shmem_unpin() says in one line why it could not */
		if (!shmem_unpin(env.dir, PROG))
			fprintf(stderr, PROG ": start interrupted (SIG%s): nothing left pinned under %s\n",
				sigabbrev_np(sig), env.dir);
		shmem_tracer_stop(&t);
		/* as a shell reports a command a signal ended */
		return 128 + sig;
	}
	if (!err)
		print_status(&t.info);
	/* the pins keep the programs attached after we exit */
	shmem_tracer_stop(&t);
	return err ? 1 : 0;
}

static int status(void)
{
	struct shmem_maps maps;
	struct shmem_info info;
	int err;

	if (shmem_maps_open_pinned(env.dir, &maps, PROG))
		return 1;
	err = shmem_info_read(&maps, &info);
	if (err)
		fprintf(stderr, PROG ": cannot read %s/info\n", env.dir);
	else
		print_status(&info);
	shmem_maps_close(&maps);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg,
					  "start|status|stop", doc, children, NULL, NULL };

	shmem_args.tracer.rows = SHMEM_ALL_ROWS;
	if (shmem_parse_args(&argp, argc, argv))
		return EX_USAGE;
	if (!strcmp(env.command, "start"))
		return start();
	if (!strcmp(env.command, "status"))
		return status();
	return shmem_unpin(env.dir, PROG) ? 1 : 0;
}
