// SPDX-License-Identifier: GPL-2.0
/*
 * Command-line plumbing shared by the tools: one-line argument errors, a
 * workload command run while tracing, waiting for the next report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "shmem_tools.h"

/* argp calls ARGP_KEY_ERROR after any error: report only the first */
static bool arg_error_reported;

int shmem_arg_error(struct argp_state *state, const char *fmt, ...)
{
	va_list ap;

	arg_error_reported = true;
	fprintf(stderr, "%s: ", state->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return EINVAL;
}

error_t shmem_parse_common(int key, struct argp_state *state)
{
	if (key == 'h') {
		argp_help(state->root_argp, stdout, ARGP_HELP_STD_HELP,
			  state->name);
		exit(0);
	}
	if (key == ARGP_KEY_ERROR && !arg_error_reported && state->next > 0 &&
	    state->next <= state->argc)
		return shmem_arg_error(state, "bad option %s (unknown, or missing its value; see --help)",
				       state->argv[state->next - 1]);
	return ARGP_ERR_UNKNOWN;
}

#ifndef SHMEM_VERSION
#define SHMEM_VERSION "unknown"
#endif
const char shmem_version[] = SHMEM_VERSION;
struct shmem_args shmem_args;

enum { OPT_PINNED = 0x1000, OPT_TEST_RETARGET };

static const struct argp_option loader_options[] = {
	{ "pid", 'p', "PID", 0, "Trace this process only", 0 },
	{ "cgroup", 'c', "PATH", 0, "Trace this cgroup (v2 directory) only", 0 },
	{ "latency", 'l', NULL, 0,
	  "Folio allocation and allocated-to-uptodate time histograms too", 0 },
	{ "call-latency", 'L', NULL, 0,
	  "Write, fault and fallocate call time histograms too, and -l's "
	  "(fentry/fexit pairs on every call: several times the cost of "
	  "counting)", 0 },
	{ "entries", 'E', "N", 0,
	  "Rows each per-file, -process, -cgroup and -file-system map holds "
	  "before it drops one (default 10240, 4096, 1024, 256; the maps "
	  "have 128 more per CPU for the kernel's per-CPU free lists); a "
	  "full map drops its least recently used row and counts it", 0 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's messages", 0 },
	/* the tests' only (tools/lib/tracer.c, retarget()): not in --help */
	{ "test-retarget", OPT_TEST_RETARGET, "PROG=FUNC,...", OPTION_HIDDEN,
	  "Point programs at other kernel functions (tests)", 0 },
	{},
};

static const struct argp_option pinned_options[] = {
	{ "pinned", OPT_PINNED, "DIR", 0,
	  "Read the maps pinned under DIR by shmemtrace", 0 },
	{},
};

/* -E: rows per map; LRU hash maps of more are slow to create */
#define MAX_ENTRIES (1 << 24)

static error_t parse_shared(int key, char *arg, struct argp_state *state)
{
	struct shmem_tracer_opts *t = &shmem_args.tracer;
	long pid, entries;

	switch (key) {
	case 'p':
		if (shmem_parse_long(arg, 1, 4194304, &pid))
			return shmem_arg_error(state, "invalid PID: %s", arg);
		t->pid = pid;
		break;
	case 'c':
		t->cgroup = arg;
		break;
	case 'l':
		t->latency = true;
		break;
	case 'L':
		/* everything: call times beside the folio ones */
		t->latency = true;
		t->call_latency = true;
		break;
	case 'E':
		if (shmem_parse_long(arg, 1, MAX_ENTRIES, &entries))
			return shmem_arg_error(state, "invalid number of entries: %s (1 to %d)",
					       arg, MAX_ENTRIES);
		t->entries = entries;
		break;
	case 'v':
		t->verbose = true;
		break;
	case OPT_TEST_RETARGET:
		t->retarget = arg;
		break;
	case OPT_PINNED:
		shmem_args.pinned = arg;
		break;
	case ARGP_KEY_END:
		if (shmem_args.pinned && (t->pid || t->cgroup || t->latency ||
					  t->entries))
			return shmem_arg_error(state, "--pid, --cgroup, --latency, --call-latency and --entries apply when loading; shmemtrace takes them");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_option version_options[] = {
	{ "version", 'V', NULL, 0, "Print the version", -1 },
	{},
};

static error_t parse_version(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	if (key != 'V')
		return ARGP_ERR_UNKNOWN;
	printf("%s %s\n", state->name, shmem_version);
	exit(0);
}

const struct argp shmem_version_argp = {
	version_options, parse_version, NULL, NULL, NULL, NULL, NULL,
};
const struct argp shmem_loader_argp = {
	loader_options, parse_shared, NULL, NULL, NULL, NULL, NULL,
};
const struct argp shmem_pinned_argp = {
	pinned_options, parse_shared, NULL, NULL, NULL, NULL, NULL,
};

int shmem_parse_args(const struct argp *argp, int argc, char **argv)
{
	/*
	 * ARGP_NO_ERRS: our errors are one line, without argp's hint; it
	 * would silence argp's own --help too, so the tools bring theirs.
	 */
	return argp_parse(argp, argc, argv, ARGP_NO_ERRS | ARGP_NO_HELP,
			  NULL, NULL) ? -1 : 0;
}

/* Seconds between reports: 0.01 to 86400 */
static int parse_interval(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v >= 0.01) || v > 86400)
		return -1;
	*out = v;
	return 0;
}

int shmem_parse_interval_count(int key, char *arg, struct argp_state *state,
			       double *interval, long *count)
{
	if (key == ARGP_KEY_ARG)
		key = state->arg_num == 0 ? 'i' : state->arg_num == 1 ? 'n' : 0;
	if (key == 'i') {
		if (parse_interval(arg, interval))
			return shmem_arg_error(state, "invalid interval: %s", arg);
		return 0;
	}
	if (key == 'n') {
		if (shmem_parse_long(arg, 1, 1000000000, count))
			return shmem_arg_error(state, "invalid count: %s", arg);
		return 0;
	}
	return shmem_arg_error(state, "unexpected argument: %s (a command goes after --)",
			       arg);
}

char **shmem_split_command(int *argc, char **argv)
{
	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--"))
			continue;
		argv[i] = NULL;
		*argc = i;
		return argv[i + 1] ? &argv[i + 1] : NULL;
	}
	return NULL;
}

volatile int shmem_exiting;

static void on_signal(int sig)
{
	(void)sig;
	shmem_exiting = 1;
}

static void on_child(int sig)
{
	(void)sig;
}

/*
 * A SIGINT or SIGTERM interrupts a write to stdout that a reader no longer
 * reading blocks (no SA_RESTART); the stream is then in error, and what it
 * still holds is dropped at exit rather than flushed into the same block.
 */
static void drop_unwritten_output(void)
{
	if (ferror(stdout))
		__fpurge(stdout);
}

/*
 * SIGCHLD stays blocked except inside shmem_wait()'s ppoll(): it only
 * wakes the wait, and elsewhere would interrupt our writes.
 */
void shmem_handle_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t set;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	atexit(drop_unwritten_output);
}

pid_t shmem_command_start(char **cmd, const char *prog)
{
	int pipefd[2], child_errno;
	pid_t pid;
	ssize_t n;

	if (pipe2(pipefd, O_CLOEXEC)) {
		fprintf(stderr, "%s: pipe: %s\n", prog, strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
		return -1;
	}
	if (!pid) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		close(pipefd[0]);
		/* our reports alone on stdout: the command's output on stderr */
		if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(126);
		execvp(cmd[0], cmd);
		child_errno = errno;
		if (write(pipefd[1], &child_errno, sizeof(child_errno)) < 0)
			_exit(126);
		_exit(127);
	}
	close(pipefd[1]);
	n = read(pipefd[0], &child_errno, sizeof(child_errno));
	close(pipefd[0]);
	if (n == sizeof(child_errno)) {
		fprintf(stderr, "%s: cannot run %s: %s\n", prog, cmd[0],
			strerror(child_errno));
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

int shmem_command_failed(int status, const char *cmd, const char *prog)
{
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "%s: %s was killed by signal %d\n", prog, cmd,
			WTERMSIG(status));
		/* as a shell reports it */
		return 128 + WTERMSIG(status);
	}
	fprintf(stderr, "%s: %s exited with status %d\n", prog, cmd,
		WEXITSTATUS(status));
	return WEXITSTATUS(status);
}

int shmem_wait(double secs, pid_t child, int fd, int *status)
{
	struct timespec end, now, left;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	sigset_t none, quit, outside;
	int exited = 0;

	sigemptyset(&none);
	/*
	 * From the check of shmem_exiting to ppoll(), SIGINT and SIGTERM
	 * stay pending for ppoll() to take, not handled before it sleeps.
	 */
	sigemptyset(&quit);
	sigaddset(&quit, SIGINT);
	sigaddset(&quit, SIGTERM);
	sigprocmask(SIG_BLOCK, &quit, &outside);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)secs;
	end.tv_nsec += (long)((secs - (time_t)secs) * 1e9);
	if (end.tv_nsec >= 1000000000) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000;
	}
	while (!shmem_exiting) {
		if (child > 0 && waitpid(child, status, WNOHANG) == child) {
			exited = 1;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000;
		}
		if (left.tv_sec < 0 || ppoll(&pfd, fd >= 0, &left, &none) > 0)
			break;
	}
	sigprocmask(SIG_SETMASK, &outside, NULL);
	return exited;
}
