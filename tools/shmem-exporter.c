// SPDX-License-Identifier: GPL-2.0
/*
 * shmem-exporter: the shmem folio maps, the kernel's per-size mTHP counters
 * and the Shmem fields of /proc/meminfo as Prometheus metrics on /metrics,
 * and a self-contained page plotting them on /.
 */
#define _GNU_SOURCE
#include <argp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <microhttpd.h>
#include "shmem_tools.h"
#include "page.h"

#define PROG "shmem-exporter"
#define DEFAULT_PORT 9743

#define MAX_CONNECTIONS 64

static struct {
	const char *address;
	long port;
	long top_files;
	long file_idle;
	bool filesystems;
	long timeout;
	long request_time;
	long header_time;
	long per_client;
	const char *user;
} env = {
	.address = "127.0.0.1",
	.port = DEFAULT_PORT,
	.timeout = 10,
	.request_time = 30,
	.header_time = 2,
	.per_client = 16,
	.file_idle = 600,
	.user = "nobody",
};

enum { OPT_FILE_IDLE = 0x100 };

static const char doc[] =
"Serve shmem folio metrics for Prometheus on /metrics and a live page on /.\n"
"\n"
"EXAMPLES:\n"
"    shmem-exporter                    # 127.0.0.1:9743, own programs\n"
"    shmem-exporter --pinned /sys/fs/bpf/shmem   # beside shmemtrace\n"
"    shmem-exporter -a 0.0.0.0 -f 20   # all addresses, series for 20 files\n"
"    shmem-exporter -F --latency       # per file system, allocation times\n";

static const struct argp_option options[] = {
	{ "address", 'a', "ADDR", 0, "IPv4 address to listen on (default 127.0.0.1)", 0 },
	{ "port", 'P', "PORT", 0, "TCP port (default 9743)", 0 },
	{ "files", 'f', "N", 0,
	  "Per-file series for at most N files, the rest in one (default 0)", 0 },
	{ "file-idle", OPT_FILE_IDLE, "SECONDS", 0,
	  "A file's series may go to another file once it has allocated "
	  "nothing this long (default 600)", 0 },
	{ "filesystems", 'F', NULL, 0,
	  "Per-file-system series (loading: a row per file system, a hash "
	  "lookup more per event)", 0 },
	{ "timeout", 't', "SECONDS", 0, "Drop a client idle this long (default 10)", 0 },
	{ "request-time", 'R', "SECONDS", 0,
	  "Drop a client whose request, and its answer, take longer (default 30)", 0 },
	{ "header-time", 'H', "SECONDS", 0,
	  "Drop a client that has not sent a whole request this long after "
	  "connecting (default 2)", 0 },
	{ "per-client", 'C', "N", 0,
	  "Connections one client address may hold (default 16, of 64)", 0 },
	{ "user", 'u', "USER", 0,
	  "Run as USER once the programs are attached (default nobody)", 0 },
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
	struct in_addr addr;

	switch (key) {
	case 'a':
		if (inet_pton(AF_INET, arg, &addr) != 1)
			return shmem_arg_error(state, "invalid IPv4 address: %s", arg);
		env.address = arg;
		break;
	case 'P':
		if (shmem_parse_long(arg, 1, 65535, &env.port))
			return shmem_arg_error(state, "invalid port: %s", arg);
		break;
	case 'f':
		if (shmem_parse_long(arg, 0, 10000, &env.top_files))
			return shmem_arg_error(state, "invalid number of files: %s", arg);
		break;
	case OPT_FILE_IDLE:
		if (shmem_parse_long(arg, 1, 86400 * 365, &env.file_idle))
			return shmem_arg_error(state, "invalid file idle time: %s", arg);
		break;
	case 'F':
		env.filesystems = true;
		break;
	case 't':
		if (shmem_parse_long(arg, 1, 3600, &env.timeout))
			return shmem_arg_error(state, "invalid timeout: %s", arg);
		break;
	case 'R':
		if (shmem_parse_long(arg, 1, 3600, &env.request_time))
			return shmem_arg_error(state, "invalid request time: %s", arg);
		break;
	case 'H':
		if (shmem_parse_long(arg, 1, 3600, &env.header_time))
			return shmem_arg_error(state, "invalid header time: %s", arg);
		break;
	case 'C':
		if (shmem_parse_long(arg, 1, MAX_CONNECTIONS, &env.per_client))
			return shmem_arg_error(state, "invalid connections per client: %s", arg);
		break;
	case 'u':
		env.user = arg;
		break;
	case ARGP_KEY_ARG:
		return shmem_arg_error(state, "unexpected argument: %s", arg);
	default:
		return shmem_parse_common(key, state);
	}
	return 0;
}

static struct shmem_source src;
/* -f: the per-file series, kept across scrapes */
static struct shmem_file_series file_series;
/* one scrape reads the maps at a time; concurrent ones wait their turn */
static pthread_mutex_t scrape_lock = PTHREAD_MUTEX_INITIALIZER;

/* the pinned maps were replaced or removed: main exits once that is said */
static _Atomic bool pins_ended;

/*
 * When this process started (process_start_time_seconds, read once): a
 * scraper tells a restart by it
 */
static double start_time;

/* @text and this process's own metrics after it; @text is freed */
static char *with_process(char *text)
{
	struct shmem_process p;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	if (!text)
		return NULL;
	f = open_memstream(&out, &len);
	if (f) {
		fputs(text, f);
		/* one unreadable /proc file leaves them out, not the scrape */
		if (!shmem_process_read("/proc/self", &p))
			shmem_process_print(f, &p, start_time);
		if (fclose(f)) {
			free(out);
			out = NULL;
		}
	}
	free(text);
	return out;
}

static char *scrape(void)
{
	struct shmem_snapshot s;
	struct shmem_mounts mounts;
	char *text = NULL;

	pthread_mutex_lock(&scrape_lock);
	/* frozen counts served as live would hide that tracing stopped */
	if (!pins_ended && shmem_source_check(&src, PROG))
		pins_ended = true;
	if (!pins_ended && !shmem_snapshot_read(src.maps, SHMEM_MTHP_DIR, &s)) {
		shmem_mounts_read("/proc/self/mountinfo", &mounts);
		/* pinned maps (shmemtrace) keep every row kind: -F decides */
		if (!env.filesystems)
			s.info.rows &= ~(1U << SHMEM_ROWS_FSES);
		if (!env.top_files || !shmem_file_series_update(&file_series, &s))
			text = with_process(shmem_metrics_text(&s, &mounts,
						env.top_files ? &file_series : NULL));
		shmem_mounts_free(&mounts);
		shmem_snapshot_free(&s);
	}
	pthread_mutex_unlock(&scrape_lock);
	return text;
}

/*
 * Slow clients: a scraper sends its request at once, so a connection that
 * has not sent a whole request -H seconds after connecting is dropped, and
 * one whose request and answer take longer than -R (a byte now and then
 * keeps MHD's idle timeout away).  A reaper shuts down the socket of a
 * connection past its deadline, and MHD closes it.
 *
 * The connection cap is ours (admit()): at MAX_CONNECTIONS a newcomer takes
 * the slot of a connection that never completed a request, oldest first;
 * or of one whose answer has been ready for more than -H seconds and is
 * not taken yet (a client reading slowly, once the answer is larger than
 * the sockets' buffers), answer ready longest first; or of one waiting for
 * its next request, oldest first (evict_rank()).  One being answered more
 * recently is never taken.  One that has waited less than a second for
 * its first request (a scraper about to send it) is taken only after the
 * slow readers.
 *
 * An address that lost a connection to make room takes none itself for
 * the next -H seconds: a slow reader dropped and connecting again at once
 * waits for a free slot.  Without that, each one dropped took the slot
 * of another slow reader past -H, in a chain through all of them, and
 * the next -H seconds, every one of them protected, refused every scrape
 * (half the scrapes of a siege).  So a scrape gets in, refused at most
 * in the first -H seconds of a siege by slow readers.  MHD's own limit
 * leaves room for connections shut down but not yet closed.
 */
struct slot {
	int fd;			/* -1: a free slot */
	in_addr_t addr;		/* the client's address */
	bool evicted;		/* shut down to make room: closing */
	bool answering;		/* its request is complete: being answered */
	bool answered;		/* it completed a request before */
	double waiting_since;	/* connected, or last answered */
	double ready_since;	/* answering: its answer was queued (0: not yet) */
	double deadline;
};

#define NR_SLOTS (2 * MAX_CONNECTIONS)
static struct slot slots[NR_SLOTS];
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;

/* addresses that lost a connection to make room, and until when */
static struct {
	in_addr_t addr;
	double until;
} evicted_addrs[NR_SLOTS];

static in_addr_t addr_of(const struct sockaddr *sa, socklen_t len)
{
	if (sa && len >= sizeof(struct sockaddr_in) && sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
	return 0;
}

/* Did @addr lose a connection to make room in the last -H seconds? */
static bool lost_one(in_addr_t addr, double now)
{
	for (int i = 0; i < NR_SLOTS; i++)
		if (evicted_addrs[i].addr == addr && evicted_addrs[i].until > now)
			return true;
	return false;
}

static void remember_loss(in_addr_t addr, double now)
{
	int oldest = 0;

	for (int i = 0; i < NR_SLOTS; i++) {
		if (evicted_addrs[i].addr == addr || evicted_addrs[i].until <= now) {
			oldest = i;
			break;
		}
		if (evicted_addrs[i].until < evicted_addrs[oldest].until)
			oldest = i;
	}
	evicted_addrs[oldest].addr = addr;
	evicted_addrs[oldest].until = now + env.header_time;
}

/* May @sl be taken to make room at @now? */
static bool evictable(const struct slot *sl, double now)
{
	return !sl->answering ||
	       (sl->ready_since && now - sl->ready_since > env.header_time);
}

/*
 * The order in which connections are taken to make room: one that never
 * completed a request and has waited a second or more for one; one whose
 * answer has been ready for more than -H seconds; one that has waited
 * less than a second for its first request (a scraper about to send it:
 * not for a slow reader that lost its slot and connects again at once);
 * one that was answered, waiting for its next request.
 */
static int evict_rank(const struct slot *sl, double now)
{
	if (sl->answering)
		return 1;
	if (sl->answered)
		return 3;
	return now - sl->waiting_since < 1 ? 2 : 0;
}

/* Should @a be taken before @b to make room at @now? */
static bool evict_before(const struct slot *a, const struct slot *b, double now)
{
	int ra = evict_rank(a, now), rb = evict_rank(b, now);

	if (ra != rb)
		return ra < rb;
	if (a->answering)
		return a->ready_since < b->ready_since;
	return a->waiting_since < b->waiting_since;
}

static enum MHD_Result admit(void *cls, const struct sockaddr *sa,
			     socklen_t len)
{
	struct slot *victim = NULL;
	double now = shmem_now();
	in_addr_t addr = addr_of(sa, len);
	int held = 0;

	(void)cls;
	pthread_mutex_lock(&slot_lock);
	for (int i = 0; i < NR_SLOTS; i++) {
		if (slots[i].fd < 0 || slots[i].evicted)
			continue;
		held++;
		if (evictable(&slots[i], now) &&
		    (!victim || evict_before(&slots[i], victim, now)))
			victim = &slots[i];
	}
	if (held >= MAX_CONNECTIONS) {
		if (!victim || lost_one(addr, now)) {
			pthread_mutex_unlock(&slot_lock);
			return MHD_NO;
		}
		victim->evicted = true;
		remember_loss(victim->addr, now);
		shutdown(victim->fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&slot_lock);
	return MHD_YES;
}

static void notify_connection(void *cls, struct MHD_Connection *conn,
			      void **socket_context,
			      enum MHD_ConnectionNotificationCode code)
{
	const union MHD_ConnectionInfo *fd, *client;

	(void)cls;
	pthread_mutex_lock(&slot_lock);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		client = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		for (int i = 0; fd && i < NR_SLOTS; i++) {
			if (slots[i].fd >= 0)
				continue;
			slots[i] = (struct slot){
				.fd = fd->connect_fd,
				.addr = client ? addr_of(client->client_addr,
							 sizeof(struct sockaddr_in)) : 0,
				.waiting_since = shmem_now(),
				.deadline = shmem_now() + env.header_time,
			};
			*socket_context = &slots[i];
			break;
		}
	} else if (*socket_context) {
		/* before MHD closes the socket: the fd is not reused yet */
		((struct slot *)*socket_context)->fd = -1;
	}
	pthread_mutex_unlock(&slot_lock);
}

static struct slot *slot_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *info;

	info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return info ? info->socket_context : NULL;
}

/* A request is complete: it and its answer have -R seconds */
static void request_started(struct MHD_Connection *conn)
{
	struct slot *sl = slot_of(conn);

	if (!sl)
		return;
	pthread_mutex_lock(&slot_lock);
	sl->answering = true;
	sl->ready_since = 0;
	sl->deadline = shmem_now() + env.request_time;
	pthread_mutex_unlock(&slot_lock);
}

/* The answer is queued: from now on the client only has to take it */
static void answer_ready(struct MHD_Connection *conn)
{
	struct slot *sl = slot_of(conn);

	if (!sl)
		return;
	pthread_mutex_lock(&slot_lock);
	sl->ready_since = shmem_now();
	pthread_mutex_unlock(&slot_lock);
}

/*
 * Answered: the next request on this connection must come whole within
 * -t; or, the pinned maps gone, main exits now the client was told.
 */
static void request_completed(void *cls, struct MHD_Connection *conn,
			      void **state, enum MHD_RequestTerminationCode toe)
{
	struct slot *sl = slot_of(conn);

	(void)cls;
	(void)state;
	(void)toe;
	if (pins_ended)
		kill(getpid(), SIGUSR1);
	if (!sl)
		return;
	pthread_mutex_lock(&slot_lock);
	sl->answering = false;
	sl->ready_since = 0;
	sl->answered = true;
	sl->waiting_since = shmem_now();
	sl->deadline = shmem_now() + env.timeout;
	pthread_mutex_unlock(&slot_lock);
}

static void *reap(void *arg)
{
	(void)arg;
	for (;;) {
		double now;

		sleep(1);
		now = shmem_now();
		pthread_mutex_lock(&slot_lock);
		for (int i = 0; i < NR_SLOTS; i++)
			if (slots[i].fd >= 0 && slots[i].deadline < now)
				shutdown(slots[i].fd, SHUT_RDWR);
		pthread_mutex_unlock(&slot_lock);
	}
	return NULL;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
			     const char *type, void *body, size_t len,
			     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, body, mode);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES)
		answer_ready(conn);
	return ret;
}

#define TEXT(s) (void *)(s), sizeof(s) - 1, MHD_RESPMEM_PERSISTENT

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **state)
{
	static int first_call;
	char *text;

	(void)cls;
	(void)version;
	(void)upload;
	/* a body, if any, arrives in later calls: answer once it has */
	if (!*state) {
		*state = &first_call;
		request_started(conn);
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
			     TEXT("only GET and HEAD\n"));
	if (!strcmp(url, "/metrics")) {
		text = scrape();
		if (!text && pins_ended)
			return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
				     TEXT("the pinned maps were removed or replaced: exiting\n"));
		if (!text)
			return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				     "text/plain", TEXT("cannot read the maps\n"));
		return reply(conn, MHD_HTTP_OK,
			     "text/plain; version=0.0.4; charset=utf-8", text,
			     strlen(text), MHD_RESPMEM_MUST_FREE);
	}
	if (!strcmp(url, "/"))
		return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8",
			     (void *)page_html, page_html_len, MHD_RESPMEM_PERSISTENT);
	return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain",
		     TEXT("not found: try /metrics or /\n"));
}

static int listen_on(const char *address, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	inet_pton(AF_INET, address, &sa.sin_addr);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		fprintf(stderr, PROG ": cannot listen on %s:%d: %s\n", address,
			port, errno == EADDRINUSE ? "the port is in use" :
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * The maps are open and the socket bound: no capability is needed now,
 * nor root's files.  As root: the bounding set first (that takes
 * CAP_SETPCAP), then @pw's user and group, which clears the rest; with
 * only CAP_BPF and CAP_PERFMON, the user stays and the capabilities go.
 * no_new_privs keeps them gone across exec.
 */
static int drop_privileges(const struct passwd *pw)
{
	cap_t none = cap_init(), have = cap_get_proc();
	cap_flag_value_t setpcap = CAP_CLEAR;
	const char *what = "capabilities";
	int err = !none || !have;

	if (!err)
		cap_get_flag(have, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
	for (cap_value_t c = 0; !err && setpcap && c <= CAP_LAST_CAP; c++)
		if (CAP_IS_SUPPORTED(c) && cap_drop_bound(c))
			err = 1;
	if (!err && geteuid() == 0) {
		what = "user";
		err = setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid);
	}
	if (!err) {
		what = "capabilities";
		err = cap_set_proc(none) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	}
	cap_free(none);
	cap_free(have);
	if (err) {
		fprintf(stderr, PROG ": cannot drop %s: %s\n", what,
			strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, NULL, doc, children, NULL, NULL };
	struct MHD_Daemon *daemon;
	struct shmem_snapshot base;
	struct passwd *pw;
	pthread_t reaper;
	sigset_t quit;
	int fd, sig;

	if (shmem_parse_args(&argp, argc, argv))
		return EX_USAGE;
	if (shmem_process_start_time("/proc/self", "/proc/stat", &start_time)) {
		fprintf(stderr, PROG ": cannot read its start time from /proc/self/stat and /proc/stat\n");
		return 1;
	}
	shmem_file_series_init(&file_series, env.top_files, env.file_idle);
	/* counting only, unless rows are asked for */
	shmem_args.tracer.rows = (env.filesystems ? 1U << SHMEM_ROWS_FSES : 0) |
				 (env.top_files ? 1U << SHMEM_ROWS_FILES : 0);
	errno = 0;
	pw = getpwnam(env.user);
	if (!pw) {
		fprintf(stderr, PROG ": unknown user %s%s%s\n", env.user,
			errno ? ": " : "", errno ? strerror(errno) : "");
		return 1;
	}
	if (pw->pw_uid == 0) {
		fprintf(stderr, PROG ": --user %s is root: name an unprivileged user\n",
			env.user);
		return 1;
	}
	fd = listen_on(env.address, env.port);
	if (fd < 0)
		return 1;
	if (shmem_source_begin(&src, &base, true, false, PROG)) {
		close(fd);
		return 1;
	}
	if (drop_privileges(pw)) {
		shmem_source_close(&src);
		return 1;
	}

	/* the server's threads must not take the signals main waits for */
	sigemptyset(&quit);
	sigaddset(&quit, SIGINT);
	sigaddset(&quit, SIGTERM);
	sigaddset(&quit, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &quit, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < NR_SLOTS; i++)
		slots[i].fd = -1;
	if (pthread_create(&reaper, NULL, reap, NULL)) {
		fprintf(stderr, PROG ": cannot start a thread\n");
		shmem_source_close(&src);
		return 1;
	}
	daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
				  MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL,
				  0, admit, NULL, handle, NULL,
				  MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)env.timeout,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)NR_SLOTS,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)env.per_client,
				  MHD_OPTION_NOTIFY_CONNECTION, notify_connection, NULL,
				  MHD_OPTION_NOTIFY_COMPLETED, request_completed, NULL,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
				  MHD_OPTION_END);
	if (!daemon) {
		fprintf(stderr, PROG ": cannot start the HTTP server\n");
		shmem_source_close(&src);
		return 1;
	}
	fprintf(stderr, PROG ": serving http://%s:%ld/metrics\n", env.address,
		env.port);
	sigwait(&quit, &sig);
	MHD_stop_daemon(daemon);
	shmem_file_series_free(&file_series);
	shmem_source_close(&src);
	return sig == SIGUSR1;
}
