/* Adopt: take over a container whose monitor died. Its init is not this
 * process's child: a pidfd tells when it ends, and its exit file then says
 * the status is unknown. When its output FIFOs are in its bundle, the
 * monitor reads them on into its log from where the dead monitor stopped;
 * without them (a terminal) its output is not held here. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "monitor.h"

#ifndef PIDFD_NONBLOCK
#define PIDFD_NONBLOCK O_NONBLOCK
#endif

/* open_fifo opens an existing FIFO's read end: non-blocking, no symlink
 * followed, refused if it is not a FIFO; a missing one is -1 with ENOENT. */
static int open_fifo(const char *dir, const char *name, struct err *e)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT)
			seterr(e, E_NOT_FOUND, "fifo %s", path);
		else
			seterr(e, E_OTHER, "fifo %s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		close(fd);
		seterr(e, E_PRECONDITION, "fifo %s: not a named pipe", path);
		return -1;
	}
	return fd;
}

static bool parse_adopt(const struct jv *b, const char **id, long long *pid, const char **bundle, const char **dir,
			const char **rel, bool *started, struct err *e)
{
	if (!b || b->t != J_OBJ) {
		seterr(e, E_INVALID, "adopt: body");
		return false;
	}
	if (!jfield_str(b, "id", id, e) || !jfield_int(b, "pid", pid, e) || !jfield_str(b, "bundle", bundle, e) ||
	    !jfield_str(b, "logDirectory", dir, e) || !jfield_str(b, "logRelPath", rel, e) ||
	    !jfield_bool(b, "started", started, e))
		return false;
	if (!valid_id(*id, e))
		return false;
	if (*pid <= 0) {
		seterr(e, E_INVALID, "container %s: pid %lld", *id, *pid);
		return false;
	}
	return true;
}

void op_adopt(struct conn *conn, const struct jv *body)
{
	struct err e = {0};
	const char *id = "", *bundle = NULL, *dir = NULL, *rel = NULL;
	long long pid = 0;
	bool started = false;
	int out = -1, errfd = -1, pidfd = -1;
	struct crilog log = {.dirfd = -1, .fd = -1};
	if (!parse_adopt(body, &id, &pid, &bundle, &dir, &rel, &started, &e)) {
		conn_error(conn, &e);
		return;
	}
	struct pending *p = reserve(id, &e);
	if (!p) {
		conn_error(conn, &e);
		return;
	}
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, PIDFD_NONBLOCK);
	if (pidfd < 0) {
		if (errno == ESRCH)
			seterr(&e, E_NOT_FOUND, "pid %lld: gone", pid);
		else
			seterr(&e, E_OTHER, "pid %lld: pidfd: %s", pid, strerror(errno));
		goto fail;
	}
	if (bundle && bundle[0]) {
		out = open_fifo(bundle, STDOUT_FIFO, &e);
		if (out >= 0)
			errfd = open_fifo(bundle, STDERR_FIFO, &e);
		if (e.msg[0] && e.class != E_NOT_FOUND)
			goto fail;
		e.msg[0] = 0;
		e.class = E_NONE;
	}
	if (out >= 0 ? !open_log(&log, dir, rel, NULL, &e) : (crilog_discard(&log), false))
		goto fail;
	pending_free(p);
	struct container *c = container_new(id, (pid_t)pid);
	c->adopted = true;
	c->started = started;
	c->log = log;
	stream_init(&c->out, c, out, FRAME_STDOUT);
	stream_init(&c->err, c, errfd, FRAME_STDERR);
	c->pidfd = pidfd;
	loop_add(pidfd, &c->pidfd_src, EPOLLIN);
	diag("pod %s: container %s: adopted, pid %lld, output held: %s", M.pod, id, pid, out >= 0 ? "true" : "false");
	struct buf b = {0};
	buf_printf(&b, "{\"version\":%d}", PROTOCOL_VERSION);
	conn_respond(conn, &b);
	buf_free(&b);
	return;
fail:
	errprefix(&e, "container %s", id);
	if (out >= 0)
		close(out);
	if (errfd >= 0)
		close(errfd);
	if (pidfd >= 0)
		close(pidfd);
	pending_free(p);
	conn_error(conn, &e);
}
