/* Create (runc create, or runc run --detach) and start, as asynchronous
 * jobs. Every step of a create is undone when a later one fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "monitor.h"

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void remove_scratch(struct pending *p)
{
	if (!p->scratch[0])
		return;
	char path[128];
	static const char *const names[] = {"init.pid", "c.sock"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", p->scratch, names[i]);
		unlink(path);
	}
	rmdir(p->scratch);
	p->scratch[0] = 0;
}

static void close_runc_side(struct pending *p)
{
	close_fd(&p->out_w);
	close_fd(&p->err_w);
	close_fd(&p->in_r);
	close_fd(&p->console);
}

void pending_free(struct pending *p)
{
	for (struct pending **pp = &M.pending; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	close_runc_side(p);
	close_fd(&p->out_r);
	close_fd(&p->err_r);
	close_fd(&p->in_w);
	remove_scratch(p);
	free(p->id);
	free(p->bundle);
	free(p->cgroup);
	free(p);
}

/* taken reports whether id names a container or one under way. */
static bool taken(const char *id)
{
	if (find_container(id))
		return true;
	for (struct pending *p = M.pending; p; p = p->next)
		if (!strcmp(p->id, id))
			return true;
	return false;
}

struct pending *reserve(const char *id, struct err *e)
{
	if (taken(id)) {
		seterr(e, E_EXISTS, "container %s", id);
		return NULL;
	}
	struct pending *p = xcalloc(1, sizeof *p);
	p->id = xstrdup(id);
	p->out_r = p->out_w = p->err_r = p->err_w = p->in_r = p->in_w = p->console = -1;
	p->log.dirfd = p->log.fd = -1;
	p->next = M.pending;
	M.pending = p;
	return p;
}

/* make_fifo (re)makes the FIFO name in the bundle and opens the monitor's
 * read end (non-blocking) and runc's write end (blocking: the container
 * inherits it). */
static bool make_fifo(const char *bundle, const char *name, int *r, int *w, struct err *e)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", bundle, name);
	if ((unlink(path) < 0 && errno != ENOENT) || mkfifo(path, 0600) < 0) {
		seterr(e, E_OTHER, "fifo %s: %s", path, strerror(errno));
		return false;
	}
	*r = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (*r < 0 || fstat(*r, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		seterr(e, E_OTHER, "fifo %s: %s", path, *r < 0 ? strerror(errno) : "not a named pipe");
		return false;
	}
	*w = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (*w < 0) {
		seterr(e, E_OTHER, "fifo %s: write end: %s", path, strerror(errno));
		return false;
	}
	return true;
}

static bool listen_console(struct pending *p, struct err *e)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof addr.sun_path, "%s/c.sock", p->scratch);
	p->console = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->console < 0 || bind(p->console, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(p->console, 1) < 0) {
		seterr(e, E_OTHER, "console socket %s: %s", addr.sun_path, strerror(errno));
		return false;
	}
	return true;
}

/* open_stdio makes a terminal's console socket, or the output FIFOs in the
 * bundle and a stdin pipe. */
static bool open_stdio(struct pending *p, struct err *e)
{
	if (p->tty)
		return listen_console(p, e);
	if (!make_fifo(p->bundle, STDOUT_FIFO, &p->out_r, &p->out_w, e) ||
	    !make_fifo(p->bundle, STDERR_FIFO, &p->err_r, &p->err_w, e))
		return false;
	if (p->stdin) {
		int fds[2];
		if (pipe2(fds, O_CLOEXEC) < 0) {
			seterr(e, E_OTHER, "stdin pipe: %s", strerror(errno));
			return false;
		}
		p->in_r = fds[0];
		p->in_w = fds[1];
		fcntl(p->in_w, F_SETFL, O_NONBLOCK);
	}
	return true;
}

/* open_log opens the container's log beneath the pod's log directory; a
 * request that names only logPath (an older daemon) has its directory as
 * the trusted part; none at all discards output, as CRI allows. */
bool open_log(struct crilog *l, const char *dir, const char *rel, const char *path, struct err *e)
{
	char d[4096];
	if ((!dir || !dir[0]) && path && path[0]) {
		snprintf(d, sizeof d, "%s", path);
		char *slash = strrchr(d, '/');
		if (slash && slash != d) {
			*slash = 0;
			rel = slash + 1;
		} else {
			rel = d;
			snprintf(d, sizeof d, ".");
		}
		dir = d;
	}
	if (!dir || !dir[0]) {
		crilog_discard(l);
		return true;
	}
	return crilog_open(l, dir, rel ? rel : "", e);
}

static bool parse_create(const struct jv *b, struct pending **out, const char **logdir, const char **logrel,
			 const char **logpath, struct err *e)
{
	const char *id = NULL, *bundle = NULL, *cgroup = NULL;
	bool run = false, tty = false, in = false, once = false, systemd = false;
	if (!b || b->t != J_OBJ) {
		seterr(e, E_INVALID, "create: body");
		return false;
	}
	if (!jfield_str(b, "id", &id, e) || !jfield_str(b, "bundle", &bundle, e) || !jfield_str(b, "cgroupPath", &cgroup, e) ||
	    !jfield_str(b, "logDirectory", logdir, e) || !jfield_str(b, "logRelPath", logrel, e) ||
	    !jfield_str(b, "logPath", logpath, e) || !jfield_bool(b, "run", &run, e) || !jfield_bool(b, "terminal", &tty, e) ||
	    !jfield_bool(b, "stdin", &in, e) || !jfield_bool(b, "stdinOnce", &once, e) ||
	    !jfield_bool(b, "systemdCgroup", &systemd, e))
		return false;
	if (!valid_id(id ? id : "", e))
		return false;
	if (!bundle || !bundle[0]) {
		seterr(e, E_INVALID, "container %s: bundle is required", id);
		return false;
	}
	struct pending *p = reserve(id, e);
	if (!p)
		return false;
	p->bundle = xstrdup(bundle);
	p->cgroup = cgroup ? xstrdup(cgroup) : NULL;
	p->run = run, p->tty = tty, p->stdin = in, p->stdin_once = once, p->systemd = systemd;
	*out = p;
	return true;
}

void op_create(struct conn *c, const struct jv *body)
{
	struct err e = {0};
	struct pending *p = NULL;
	const char *logdir = NULL, *logrel = NULL, *logpath = NULL;
	if (!parse_create(body, &p, &logdir, &logrel, &logpath, &e)) {
		conn_error(c, &e);
		return;
	}
	if (!open_log(&p->log, logdir, logrel, logpath, &e))
		goto fail;
	snprintf(p->scratch, sizeof p->scratch, "/tmp/berth-create-XXXXXX");
	if (!mkdtemp(p->scratch)) {
		seterr(&e, E_OTHER, "pid file directory: %s", strerror(errno));
		p->scratch[0] = 0;
		goto fail;
	}
	if (!open_stdio(p, &e))
		goto fail;
	char pidfile[128], console[128];
	snprintf(pidfile, sizeof pidfile, "%s/init.pid", p->scratch);
	snprintf(console, sizeof console, "%s/c.sock", p->scratch);
	const char *args[12];
	int n = 0;
	args[n++] = p->run ? "run" : "create";
	args[n++] = "--bundle";
	args[n++] = p->bundle;
	if (p->run)
		args[n++] = "--detach";
	args[n++] = "--pid-file";
	args[n++] = pidfile;
	if (p->tty) {
		args[n++] = "--console-socket";
		args[n++] = console;
	}
	args[n++] = p->id;
	args[n] = NULL;
	struct job *j = runc_spawn(JOB_CREATE, args[0], p->id, args, p->in_r, p->out_w, p->err_w, p->systemd, &e);
	if (!j)
		goto fail;
	j->conn = c;
	j->p = p;
	conn_wait(c);
	M.creating++;
	return;
fail:
	errprefix(&e, "container %s", p->id);
	crilog_abandon(&p->log);
	pending_free(p);
	conn_error(c, &e);
}

static bool read_pidfile(struct pending *p, pid_t *pid, struct err *e)
{
	char path[128], data[32];
	snprintf(path, sizeof path, "%s/init.pid", p->scratch);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, data, sizeof data - 1);
	if (fd >= 0)
		close(fd);
	if (n < 0) {
		seterr(e, E_OTHER, "pid file: %s", strerror(errno));
		return false;
	}
	data[n] = 0;
	char *end;
	long v = strtol(data, &end, 10);
	while (*end == '\n' || *end == ' ')
		end++;
	if (*end || v <= 0 || end == data) {
		seterr(e, E_OTHER, "pid file \"%s\": not a pid", data);
		return false;
	}
	*pid = (pid_t)v;
	return true;
}

/* receive_console accepts runc's connection and takes the one fd it sent:
 * runc has returned, so it is queued already. */
static int receive_console(struct pending *p, struct err *e)
{
	struct pollfd pfd = {.fd = p->console, .events = POLLIN};
	if (poll(&pfd, 1, CONSOLE_TIMEOUT_MS) != 1) {
		seterr(e, E_OTHER, "console socket %s/c.sock: no pty master after %ds", p->scratch, CONSOLE_TIMEOUT_MS / 1000);
		return -1;
	}
	int conn = accept4(p->console, NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0) {
		seterr(e, E_OTHER, "console socket: accept: %s", strerror(errno));
		return -1;
	}
	struct timeval tv = {.tv_sec = 30};
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	char name[4096];
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {name, sizeof name};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
	ssize_t n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
	close(conn);
	int fd = -1, count = 0;
	for (struct cmsghdr *cm = n < 0 ? NULL : CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int got;
			memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof got);
			if (count++ == 0)
				fd = got;
			else
				close(got);
		}
	}
	if (n < 0 || count != 1) {
		if (fd >= 0)
			close(fd);
		seterr(e, E_OTHER, "console socket: %s", n < 0 ? strerror(errno) : "control message: want exactly one fd");
		return -1;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static void fail_create(struct job *j, struct err *e)
{
	struct pending *p = j->p;
	struct conn *c = j->conn;
	errprefix(e, "container %s", p->id);
	diag("pod %s: create %s: %s", M.pod, p->id, e->msg);
	crilog_abandon(&p->log);
	pending_free(p);
	M.creating--;
	conn_error(c, e);
}

static void create_done(struct job *j, int status)
{
	struct err e = {0};
	struct pending *p = j->p;
	pid_t pid = 0;
	int master = -1;
	runc_done(j, status, &e);
	if (e.msg[0]) {
		fail_create(j, &e);
		return;
	}
	if (read_pidfile(p, &pid, &e) && p->tty)
		master = receive_console(p, &e);
	if (e.msg[0]) {
		/* runc made the container: delete it before answering. */
		const char *args[] = {"delete", "--force", p->id, NULL};
		struct err de = {0};
		struct job *rb = runc_spawn(JOB_ROLLBACK, "delete", p->id, args, -1, -1, -1, p->systemd, &de);
		if (rb) {
			rb->conn = j->conn;
			rb->p = p;
			rb->rollback_err = e;
			return;
		}
		diag("pod %s: container %s: rollback: %s", M.pod, p->id, de.msg);
		fail_create(j, &e);
		return;
	}
	struct container *c = container_from(p, pid, master);
	struct conn *conn = j->conn;
	struct buf body = {0};
	buf_printf(&body, "{\"version\":%d,\"pid\":%d%s}", PROTOCOL_VERSION, (int)pid, p->run ? ",\"started\":true" : "");
	diag("pod %s: container %s: %s, pid %d", M.pod, c->id, p->run ? "started" : "created", (int)pid);
	pending_free(p);
	M.creating--;
	conn_respond(conn, &body);
	buf_free(&body);
}

static void start_done(struct job *j, int status)
{
	struct err e = {0};
	runc_done(j, status, &e);
	struct container *c = find_container_obj(j->c);
	if (e.msg[0]) {
		if (c)
			c->started = false;
		errprefix(&e, "container %s", j->id);
		conn_error(j->conn, &e);
		return;
	}
	struct buf body = {0};
	buf_printf(&body, "{\"version\":%d}", PROTOCOL_VERSION);
	conn_respond(j->conn, &body);
	buf_free(&body);
}

void job_finished(struct job *j, int status)
{
	switch (j->kind) {
	case JOB_CREATE:
		create_done(j, status);
		break;
	case JOB_ROLLBACK: {
		struct err de = {0};
		runc_done(j, status, &de);
		if (de.msg[0])
			diag("pod %s: container %s: rollback: %s", M.pod, j->p->id, de.msg);
		struct err e = j->rollback_err;
		fail_create(j, &e);
		break;
	}
	case JOB_START:
		start_done(j, status);
		break;
	}
	job_free(j);
	if (M.creating == 0)
		orphans_clear();
}

void op_start(struct conn *conn, const char *id)
{
	struct err e = {0};
	struct container *c = find_container(id);
	if (!c)
		seterr(&e, E_NOT_FOUND, "container %s", id);
	else if (c->exited)
		seterr(&e, E_PRECONDITION, "container %s: exited", id);
	else if (c->started)
		seterr(&e, E_PRECONDITION, "container %s: already started", id);
	if (e.msg[0]) {
		conn_error(conn, &e);
		return;
	}
	c->started = true;
	const char *args[] = {"start", id, NULL};
	struct job *j = runc_spawn(JOB_START, "start", id, args, -1, -1, -1, false, &e);
	if (!j) {
		c->started = false;
		errprefix(&e, "container %s", id);
		conn_error(conn, &e);
		return;
	}
	j->conn = conn;
	j->c = c;
	conn_wait(conn);
}
