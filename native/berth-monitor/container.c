/* A container's life in the monitor: its output copied into the log and
 * to attached clients, its stdin, its end (reaped, or a pidfd for an
 * adopted one), the drain of its output and its exit file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "monitor.h"

bool valid_id(const char *id, struct err *e)
{
	if (!id[0] || !strcmp(id, ".") || !strcmp(id, "..") || strchr(id, '/') || strlen(id) > 255) {
		seterr(e, E_INVALID, "container id \"%s\"", id);
		return false;
	}
	return true;
}

struct container *find_container(const char *id)
{
	for (struct container *c = M.containers; c; c = c->next)
		if (c->listed && !strcmp(c->id, id))
			return c;
	return NULL;
}

struct container *find_container_obj(const struct container *want)
{
	for (struct container *c = M.containers; c; c = c->next)
		if (c == want)
			return c;
	return NULL;
}

void stream_init(struct stream *s, struct container *c, int fd, int kind)
{
	s->src.kind = SRC_STREAM;
	s->src.obj = s;
	s->c = c;
	s->fd = fd;
	s->kind = kind;
	if (fd >= 0)
		loop_add(fd, &s->src, EPOLLIN);
}

struct container *container_new(const char *id, pid_t pid)
{
	struct container *c = xcalloc(1, sizeof *c);
	c->id = xstrdup(id);
	c->pid = pid;
	c->listed = true;
	c->stdin_fd = c->pidfd = -1;
	c->out.fd = c->err.fd = -1;
	c->oom.wd = -1;
	c->stdin_src.kind = SRC_STDIN;
	c->stdin_src.obj = c;
	c->pidfd_src.kind = SRC_PIDFD;
	c->pidfd_src.obj = c;
	c->next = M.containers;
	M.containers = c;
	return c;
}

static void container_free(struct container *c)
{
	for (struct container **pp = &M.containers; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	free(c->id);
	c->id = NULL;
	c->out.src.dead = c->err.src.dead = c->stdin_src.dead = c->pidfd_src.dead = true;
	graveyard_add(c);
}

static void container_end(struct container *c, int status, bool unknown);

/* container_from makes the container a create made: the monitor's ends of
 * its stdio move from the pending create. */
struct container *container_from(struct pending *p, pid_t pid, int master)
{
	struct container *c = container_new(p->id, pid);
	c->log = p->log;
	p->log.dirfd = p->log.fd = -1;
	p->log.rel = p->log.path = NULL;
	c->started = p->run;
	c->tty = p->tty;
	c->stdin = p->stdin;
	c->stdin_once = p->stdin_once;
	if (p->tty) {
		stream_init(&c->out, c, master, FRAME_STDOUT);
		c->err.kind = FRAME_STDERR;
		c->stdin_fd = fcntl(master, F_DUPFD_CLOEXEC, 3); /* written apart from the reads */
	} else {
		stream_init(&c->out, c, p->out_r, FRAME_STDOUT);
		stream_init(&c->err, c, p->err_r, FRAME_STDERR);
		c->stdin_fd = p->in_w;
		p->out_r = p->err_r = p->in_w = -1;
	}
	oom_init(&c->oom, p->cgroup);
	int status;
	if (orphan_claim(pid, &status))
		container_end(c, status, false);
	return c;
}

static void close_stream(struct stream *s)
{
	if (s->fd < 0)
		return;
	stream_flush(s);
	loop_del(s->fd);
	close(s->fd);
	s->fd = -1;
}

static bool output_open(const struct container *c)
{
	return c->out.fd >= 0 || c->err.fd >= 0;
}

static void write_exit_file(struct container *c);

/* finish ends a container whose init is gone once its output is drained
 * (or the drain timed out): the monitor's ends close, the exit file is
 * written, then list reports it. */
static void finish(struct container *c)
{
	close_stream(&c->out);
	close_stream(&c->err);
	attach_output_ended(c);
	if (c->stdin_fd >= 0) {
		if (c->stdin_watched)
			loop_del(c->stdin_fd);
		close(c->stdin_fd);
		c->stdin_fd = -1;
	}
	buf_free(&c->stdin_q);
	crilog_close(&c->log);
	write_exit_file(c);
	c->exited = true;
	c->drain_deadline = 0;
	diag("pod %s: container %s: %s", M.pod, c->id, c->unknown ? "adopted container ended, status unknown" : "exited");
	container_maybe_free(c);
}

/* container_maybe_free frees a container nothing refers to any more:
 * forgotten, exited, no client attached. */
void container_maybe_free(struct container *c)
{
	if (!c->listed && c->exited && !c->sessions)
		container_free(c);
}

static void container_end(struct container *c, int status, bool unknown)
{
	clock_gettime(CLOCK_REALTIME, &c->finished);
	c->ended = true;
	c->status = status;
	c->unknown = unknown;
	if (unknown) {
		c->exit_code = 255;
	} else if (WIFSIGNALED(status)) {
		c->signal = WTERMSIG(status);
		c->exit_code = 128 + c->signal;
	} else {
		c->exit_code = WEXITSTATUS(status);
	}
	/* Read the OOM count now, before draining output: under the systemd
	 * driver the scope (and its memory.events) may go at any moment. */
	c->oom_killed = !unknown && oom_killed(&c->oom);
	if (c->oom_killed)
		diag("pod %s: container %s: OOM-killed, counted in %s", M.pod, c->id, c->oom.file);
	oom_stop(&c->oom);
	if (c->pidfd >= 0) {
		loop_del(c->pidfd);
		close(c->pidfd);
		c->pidfd = -1;
	}
	if (!output_open(c)) {
		finish(c);
		return;
	}
	c->drain_deadline = now_ms() + DRAIN_TIMEOUT_MS;
}

void container_reaped(pid_t pid, int status)
{
	for (struct container *c = M.containers; c; c = c->next) {
		if (c->pid == pid && !c->adopted && !c->ended) {
			container_end(c, status, false);
			return;
		}
	}
	if (M.creating > 0) { /* maybe the init of a create not yet claimed */
		struct exitrec *r = xcalloc(1, sizeof *r);
		r->pid = pid;
		r->status = status;
		r->next = M.orphans;
		M.orphans = r;
	}
}

void container_pidfd_event(struct container *c)
{
	if (!c->ended)
		container_end(c, 0, true);
}

/* container_stream_event reads what is there; the end of the stream (EOF,
 * or EIO from a pty whose other side closed) closes it. */
void container_stream_event(struct stream *s, uint32_t events)
{
	char chunk[READ_CHUNK];
	struct container *c = s->c;
	(void)events;
	if (s->fd < 0)
		return; /* closed earlier in the same batch */
	for (int reads = 0; reads < 16; reads++) {
		ssize_t n = read(s->fd, chunk, sizeof chunk);
		if (n > 0) {
			attach_publish(c, s->kind, chunk, (size_t)n);
			stream_feed(s, chunk, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		close_stream(s);
		break;
	}
	if (s->fd >= 0)
		return;
	if (!output_open(c)) {
		if (c->ended)
			finish(c);
		else
			attach_output_ended(c);
	}
}

void containers_timeouts(int64_t now)
{
	for (struct container *c = M.containers, *next; c; c = next) {
		next = c->next;
		if (c->ended && !c->exited && c->drain_deadline && now >= c->drain_deadline) {
			diag("pod %s: container %s: output still open after %ds", M.pod, c->id, DRAIN_TIMEOUT_MS / 1000);
			finish(c);
		}
	}
	for (struct job *j = M.jobs; j; j = j->next) {
		if (!j->killed && now >= j->deadline) {
			j->killed = true;
			kill(j->pid, SIGKILL); /* not reaped yet: still ours */
		}
	}
}

int64_t next_deadline(void)
{
	int64_t next = INT64_MAX;
	for (struct container *c = M.containers; c; c = c->next)
		if (c->ended && !c->exited && c->drain_deadline && c->drain_deadline < next)
			next = c->drain_deadline;
	for (struct job *j = M.jobs; j; j = j->next)
		if (!j->killed && j->deadline < next)
			next = j->deadline;
	for (struct conn *c = M.conns; c; c = c->next)
		if (c->deadline && c->deadline < next)
			next = c->deadline;
	return next;
}

static void exit_json(struct buf *b, const struct container *c)
{
	char when[64];
	rfc3339(&c->finished, when, sizeof when);
	buf_printf(b, "{\"version\":%d,\"id\":", EXIT_RECORD_VERSION);
	jw_str(b, c->id);
	buf_printf(b, ",\"pid\":%d,\"exitCode\":%d", (int)c->pid, c->exit_code);
	if (c->signal)
		buf_printf(b, ",\"signal\":%d", c->signal);
	if (c->oom_killed)
		buf_adds(b, ",\"oomKilled\":true");
	buf_printf(b, ",\"finishedAt\":\"%s\"", when);
	if (c->unknown)
		buf_adds(b, ",\"unknown\":true");
	buf_adds(b, "}");
}

static void write_exit_file(struct container *c)
{
	char tmp[4096], path[4096];
	struct buf b = {0};
	exit_json(&b, c);
	snprintf(path, sizeof path, "%s/%s.json", M.exit_dir, c->id);
	snprintf(tmp, sizeof tmp, "%s/.%s.json.tmp-XXXXXX", M.exit_dir, c->id);
	/* Atomic, not flushed: the exit dir is under the state directory,
	 * which a reboot clears; a kill -9 after the rename loses nothing. */
	int fd = mkostemp(tmp, O_CLOEXEC);
	bool ok = fd >= 0 && fchmod(fd, 0600) == 0 && write(fd, b.p, b.len) == (ssize_t)b.len;
	if (fd >= 0 && close(fd) < 0)
		ok = false;
	if (ok && rename(tmp, path) < 0)
		ok = false;
	if (!ok) {
		diag("pod %s: container %s: exit file %s: %s", M.pod, c->id, path, strerror(errno));
		if (fd >= 0)
			unlink(tmp);
	}
	buf_free(&b);
}

void op_list(struct conn *conn)
{
	struct buf b = {0};
	bool first = true;
	buf_printf(&b, "{\"version\":%d", PROTOCOL_VERSION);
	for (struct container *c = M.containers; c; c = c->next) {
		if (!c->listed)
			continue;
		buf_adds(&b, first ? ",\"containers\":[{\"id\":" : ",{\"id\":");
		first = false;
		jw_str(&b, c->id);
		buf_printf(&b, ",\"pid\":%d,\"running\":%s", (int)c->pid, c->exited ? "false" : "true");
		if (c->exited) {
			buf_adds(&b, ",\"exit\":");
			exit_json(&b, c);
		}
		buf_adds(&b, "}");
	}
	if (!first)
		buf_adds(&b, "]");
	buf_adds(&b, "}");
	conn_respond(conn, &b);
	buf_free(&b);
}

/* op_forget drops a container's record; its exit, if still to come, is
 * written all the same. Unknown ids are not an error. */
void op_forget(const char *id)
{
	struct container *c = find_container(id);
	if (!c)
		return;
	c->listed = false;
	container_maybe_free(c);
}

void op_reopen(struct conn *conn, const char *id)
{
	struct err e = {0};
	struct container *c = find_container(id);
	if (!c)
		seterr(&e, E_NOT_FOUND, "container %s", id);
	else if (c->exited)
		seterr(&e, E_OTHER, "container log %s: closed", c->id);
	else
		crilog_reopen(&c->log, &e);
	if (e.msg[0]) {
		conn_error(conn, &e);
		return;
	}
	struct buf b = {0};
	buf_printf(&b, "{\"version\":%d}", PROTOCOL_VERSION);
	conn_respond(conn, &b);
	buf_free(&b);
}
