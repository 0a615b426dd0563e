/* berth-monitor: flags, the socket, the event loop and the reaper. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "monitor.h"

#define READY_FD 3
#define READY_MESSAGE "ready\n"

struct monitor M = {.runc = "runc", .epfd = -1, .devnull = -1};

void loop_add(int fd, struct src *s, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = s};
	if (epoll_ctl(M.epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		diag("pod %s: epoll add fd %d: %s", M.pod, fd, strerror(errno));
}

void loop_mod(int fd, struct src *s, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = s};
	if (epoll_ctl(M.epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		diag("pod %s: epoll mod fd %d: %s", M.pod, fd, strerror(errno));
}

void loop_del(int fd)
{
	epoll_ctl(M.epfd, EPOLL_CTL_DEL, fd, NULL);
}

static void **graveyard;
static size_t graveyard_n;

void graveyard_add(void *p)
{
	void **g = realloc(graveyard, (graveyard_n + 1) * sizeof *g);
	if (!g) {
		diag("out of memory (graveyard)");
		abort();
	}
	graveyard = g;
	graveyard[graveyard_n++] = p;
}

static void graveyard_free(void)
{
	for (size_t i = 0; i < graveyard_n; i++)
		free(graveyard[i]);
	graveyard_n = 0;
}

bool orphan_claim(pid_t pid, int *status)
{
	for (struct exitrec **pp = &M.orphans; *pp; pp = &(*pp)->next) {
		struct exitrec *r = *pp;
		if (r->pid == pid) {
			*status = r->status;
			*pp = r->next;
			free(r);
			return true;
		}
	}
	return false;
}

void orphans_clear(void)
{
	while (M.orphans) {
		struct exitrec *r = M.orphans;
		M.orphans = r->next;
		free(r);
	}
}

/* reap waits for every child that ended: a runc job, a container's init,
 * or an orphan the subreaper inherited. */
static void reap(void)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			return;
		struct job *j = M.jobs;
		while (j && j->pid != pid)
			j = j->next;
		if (j)
			job_finished(j, status);
		else
			container_reaped(pid, status);
	}
}

static int dial(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof addr.sun_path)
		return -1;
	strcpy(addr.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int rc = connect(fd, (struct sockaddr *)&addr, sizeof addr);
	close(fd);
	return rc;
}

static void mkdir_parents(const char *path, mode_t mode)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(tmp, mode);
		*p = '/';
	}
	mkdir(tmp, mode);
}

/* listen_socket binds the socket in a private directory beside it (so it
 * is never reachable before its mode is 0600) and links it into place,
 * replacing a stale socket but not a live monitor's. */
static int listen_socket(const char *path)
{
	if (dial(path) == 0) {
		diag("socket %s: a monitor is listening: already exists", path);
		return -1;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		diag("socket %s: stale: %s", path, strerror(errno));
		return -1;
	}
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof dir, ".");
	mkdir_parents(dir, 0700);
	char priv[4096];
	snprintf(priv, sizeof priv, "%s/.sock-XXXXXX", dir);
	if (!mkdtemp(priv)) {
		diag("socket %s: private directory: %s", path, strerror(errno));
		return -1;
	}
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int n = snprintf(addr.sun_path, sizeof addr.sun_path, "%s/s", priv);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool ok = n > 0 && (size_t)n < sizeof addr.sun_path && fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
		  chmod(addr.sun_path, 0600) == 0 && listen(fd, 128) == 0 && link(addr.sun_path, path) == 0;
	if (!ok)
		diag("socket %s: %s", path, strerror(errno));
	unlink(addr.sun_path);
	rmdir(priv);
	if (!ok) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void usage_flags(int argc, char **argv)
{
	static const struct option opts[] = {
		{"pod", required_argument, NULL, 'p'},	    {"socket", required_argument, NULL, 's'},
		{"exit-dir", required_argument, NULL, 'e'}, {"runc", required_argument, NULL, 'r'},
		{"runc-root", required_argument, NULL, 'R'}, {"log", required_argument, NULL, 'l'},
		{NULL, 0, NULL, 0},
	};
	const char *log = NULL;
	int o;
	while ((o = getopt_long_only(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'p': M.pod = optarg; break;
		case 's': M.socket = optarg; break;
		case 'e': M.exit_dir = optarg; break;
		case 'r': M.runc = optarg; break;
		case 'R': M.runc_root = optarg; break;
		case 'l': log = optarg; break;
		default: exit(2);
		}
	}
	if (log && log[0]) {
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
		if (fd < 0) {
			fprintf(stderr, "berth-monitor: log %s: %s\n", log, strerror(errno));
			exit(1);
		}
		dup2(fd, 2);
		close(fd);
	}
	if (!M.pod || !M.socket || !M.exit_dir || !M.pod[0] || !M.socket[0] || !M.exit_dir[0]) {
		diag("monitor: pod, socket and exit dir are required: invalid argument");
		exit(1);
	}
}

static int setup_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* signals handles what the signalfd holds; false asks the loop to stop. */
static bool signals(int fd)
{
	struct signalfd_siginfo si;
	bool more = true;
	while (read(fd, &si, sizeof si) == sizeof si) {
		if (si.ssi_signo == SIGCHLD)
			continue;
		diag("pod %s: signal %s", M.pod, strsignal((int)si.ssi_signo));
		more = false;
	}
	reap();
	return more;
}

static void ready(void)
{
	struct stat st;
	if (fstat(READY_FD, &st) < 0 || !S_ISFIFO(st.st_mode))
		return;
	ssize_t w = write(READY_FD, READY_MESSAGE, strlen(READY_MESSAGE));
	(void)w; /* the launcher may be gone */
	close(READY_FD);
}

static void serve(int lfd, int sfd)
{
	struct src lsrc = {SRC_LISTEN, NULL, false}, ssrc = {SRC_SIGNAL, NULL, false};
	loop_add(lfd, &lsrc, EPOLLIN);
	loop_add(sfd, &ssrc, EPOLLIN);
	reap();
	while (!M.stop) {
		int64_t next = next_deadline(), now = now_ms();
		int timeout = next == INT64_MAX ? -1 : next <= now ? 0 : (int)(next - now < 60000 ? next - now : 60000);
		struct epoll_event evs[32];
		int n = epoll_wait(M.epfd, evs, 32, timeout);
		if (n < 0 && errno != EINTR) {
			diag("pod %s: epoll: %s", M.pod, strerror(errno));
			return;
		}
		/* Every ready source gets its turn (one always ready must not
		 * starve the others); what a handler frees waits in the
		 * graveyard until the batch is done. */
		for (int i = 0; i < n && !M.stop; i++) {
			struct src *s = evs[i].data.ptr;
			if (s->dead)
				continue;
			switch (s->kind) {
			case SRC_LISTEN: conn_accept(lfd); break;
			case SRC_SIGNAL: M.stop = !signals(sfd); break;
			case SRC_INOTIFY: oom_events(oom_watch_fd()); break;
			case SRC_CONN: conn_event(s->obj, evs[i].events); break;
			case SRC_STREAM: container_stream_event(s->obj, evs[i].events); break;
			case SRC_PIDFD: container_pidfd_event(s->obj); break;
			case SRC_STDIN: container_stdin_event(s->obj); break;
			}
		}
		graveyard_free();
		attach_kick();
		now = now_ms();
		containers_timeouts(now);
		conns_timeouts(now);
	}
}

int main(int argc, char **argv)
{
	usage_flags(argc, argv);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		diag("monitor %s: child subreaper: %s", M.pod, strerror(errno));
		return 1;
	}
	int sfd = setup_signals();
	M.epfd = epoll_create1(EPOLL_CLOEXEC);
	M.devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (sfd < 0 || M.epfd < 0 || M.devnull < 0) {
		diag("monitor %s: setup: %s", M.pod, strerror(errno));
		return 1;
	}
	mkdir_parents(M.exit_dir, 0700);
	struct stat st;
	if (stat(M.exit_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		diag("monitor %s: exit dir: %s", M.pod, strerror(errno));
		return 1;
	}
	int lfd = listen_socket(M.socket);
	if (lfd < 0)
		return 1;
	ready();
	diag("pod %s: listening on %s", M.pod, M.socket);
	serve(lfd, sfd);
	unlink(M.socket);
	/* Reap what ended before leaving (a container runc delete --force just
	 * killed): an orphaned zombie would wait on the host's init. */
	reap();
	int running = 0;
	for (struct container *c = M.containers; c; c = c->next)
		running += c->listed && !c->exited;
	diag("pod %s: exiting with %d container(s) running", M.pod, running);
	return 0;
}
