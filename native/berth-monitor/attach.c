/* Attach sessions and the container's stdin. Output reaches each client
 * through a bounded queue: one that falls behind misses output, it never
 * blocks the container or its log. Only the monitor writes the
 * container's stdin, through a bounded queue of its own: while it is full,
 * the clients' input is not read. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "monitor.h"

/* ttyEOF: a tty's stdin cannot be closed from the master side, so
 * StdinOnce writes the terminal's end-of-file character (^D). */
#define TTY_EOF "\x04"

void session_events(struct conn *conn)
{
	struct session *s = conn->session;
	uint32_t ev = (s->paused || s->closing ? 0 : EPOLLIN) | (s->head ? EPOLLOUT : 0);
	if (ev != conn->events) {
		loop_mod(conn->fd, &conn->src, ev);
		conn->events = ev;
	}
}

bool attach_open(struct conn *conn, const struct jv *req, struct err *e)
{
	const char *id = "";
	const struct jv *body = json_get(req, "attach");
	bool in = false, out = false, err = false, tty = false;
	if (!jfield_str(req, "id", &id, e))
		return false;
	if (!body || body->t != J_OBJ) {
		seterr(e, E_INVALID, "attach: body");
		return false;
	}
	if (!jfield_bool(body, "stdin", &in, e) || !jfield_bool(body, "stdout", &out, e) ||
	    !jfield_bool(body, "stderr", &err, e) || !jfield_bool(body, "tty", &tty, e))
		return false;
	struct container *c = find_container(id);
	if (!c) {
		seterr(e, E_NOT_FOUND, "container %s", id);
		return false;
	}
	if (c->ended || c->exited) {
		seterr(e, E_PRECONDITION, "container %s: exited", id);
		return false;
	}
	if (c->out.fd < 0 && c->err.fd < 0) {
		seterr(e, E_PRECONDITION, "container %s: output ended", id);
		return false;
	}
	struct session *s = xcalloc(1, sizeof *s);
	s->c = c;
	s->out = out;
	s->err = err && !c->tty;
	s->wants_stdin = in && c->stdin;
	s->next = c->sessions;
	c->sessions = s;
	conn->session = s;
	return true;
}

static void queue_chunk(struct session *s, int kind, const char *p, size_t n)
{
	struct chunk *ch = xmalloc(sizeof *ch + FRAME_HEADER + n);
	ch->next = NULL;
	ch->off = 0;
	ch->len = FRAME_HEADER + n;
	ch->data[0] = (char)kind;
	ch->data[1] = (char)(n >> 24);
	ch->data[2] = (char)(n >> 16);
	ch->data[3] = (char)(n >> 8);
	ch->data[4] = (char)n;
	memcpy(ch->data + FRAME_HEADER, p, n);
	if (s->tail)
		s->tail->next = ch;
	else
		s->head = ch;
	s->tail = ch;
	s->queued++;
}

static struct conn *conn_of(struct session *s)
{
	for (struct conn *c = M.conns; c; c = c->next)
		if (c->session == s)
			return c;
	return NULL;
}

/* attach_publish queues a copy of one read for every client that wants it. */
void attach_publish(struct container *c, int kind, const char *p, size_t n)
{
	for (struct session *s = c->sessions, *next; s; s = next) {
		next = s->next;
		if ((kind == FRAME_STDOUT && !s->out) || (kind == FRAME_STDERR && !s->err) || s->closing)
			continue;
		if (s->queued >= ATTACH_QUEUE) {
			s->dropped++;
			continue;
		}
		queue_chunk(s, kind, p, n);
		struct conn *conn = conn_of(s);
		if (conn)
			attach_writable(conn);
	}
}

/* attach_writable sends what is queued; a failed write ends the session,
 * and so does a client that takes nothing for IO_TIMEOUT_MS while output
 * waits for it (conns_timeouts). */
void attach_writable(struct conn *conn)
{
	struct session *s = conn->session;
	bool progress = false;
	while (s->head) {
		struct chunk *ch = s->head;
		ssize_t n = send(conn->fd, ch->data + ch->off, ch->len - ch->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0) {
			session_end(conn);
			return;
		}
		progress = true;
		ch->off += (size_t)n;
		if (ch->off < ch->len)
			continue;
		s->head = ch->next;
		if (!s->head)
			s->tail = NULL;
		s->queued--;
		free(ch);
	}
	if (!s->head && s->closing) {
		session_end(conn);
		return;
	}
	if (!s->head)
		conn->deadline = 0;
	else if (progress || !conn->deadline)
		conn->deadline = now_ms() + IO_TIMEOUT_MS;
	session_events(conn);
}

/* attach_output_ended closes every session once its queue is sent. */
void attach_output_ended(struct container *c)
{
	for (struct session *s = c->sessions, *next; s; s = next) {
		next = s->next;
		s->closing = true;
		struct conn *conn = conn_of(s);
		if (conn)
			attach_writable(conn);
	}
}

static void resize(struct container *c, const unsigned char *p, uint32_t n)
{
	if (n != 4 || !c->tty || c->out.fd < 0)
		return;
	struct winsize ws = {.ws_col = (unsigned short)(p[0] << 8 | p[1]), .ws_row = (unsigned short)(p[2] << 8 | p[3])};
	ioctl(c->out.fd, TIOCSWINSZ, &ws); /* a closed pty means the container ended */
}

/* frame applies one client frame; false ends the session. */
static bool frame(struct session *s, int kind, const unsigned char *p, uint32_t n)
{
	struct container *c = s->c;
	switch (kind) {
	case FRAME_STDIN:
		if (s->wants_stdin)
			container_stdin_write(c, (const char *)p, n);
		return true;
	case FRAME_STDIN_CLOSE:
		if (!s->wants_stdin)
			return true;
		if (!c->stdin_once)
			return false;
		container_stdin_close(c);
		return true;
	case FRAME_RESIZE:
		resize(c, p, n);
		return true;
	}
	return true;
}

/* attach_input reads the client's frames; its hang-up ends the session. */
void attach_input(struct conn *conn)
{
	struct session *s = conn->session;
	char chunk[READ_CHUNK];
	for (;;) {
		while (conn->in.len >= FRAME_HEADER) {
			const unsigned char *h = (const unsigned char *)conn->in.p;
			uint32_t n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
			if (n > MAX_FRAME_PAYLOAD) {
				session_end(conn);
				return;
			}
			if (conn->in.len < FRAME_HEADER + n)
				break;
			if (!frame(s, h[0], h + FRAME_HEADER, n)) {
				session_end(conn);
				return;
			}
			buf_consume(&conn->in, FRAME_HEADER + n);
			if (s->paused)
				return;
		}
		if (s->paused)
			return;
		ssize_t n = recv(conn->fd, chunk, sizeof chunk, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			session_end(conn);
			return;
		}
		buf_add(&conn->in, chunk, (size_t)n);
	}
}

/* session_end closes a client's session; with StdinOnce, the first client
 * that had stdin to detach closes the container's stdin. */
void session_end(struct conn *conn)
{
	struct session *s = conn->session;
	struct container *c = s->c;
	for (struct session **pp = &c->sessions; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	if (s->wants_stdin && c->stdin_once)
		container_stdin_close(c);
	while (s->head) {
		struct chunk *ch = s->head;
		s->head = ch->next;
		free(ch);
	}
	free(s);
	conn->session = NULL;
	conn_close(conn);
	container_maybe_free(c);
}

/* attach_resume reads the clients' input again once stdin drained: what
 * they sent meanwhile is read by attach_kick, from the loop. */
void attach_resume(struct container *c)
{
	for (struct session *s = c->sessions; s; s = s->next) {
		if (!s->paused)
			continue;
		s->paused = false;
		s->kick = true;
		struct conn *conn = conn_of(s);
		if (conn)
			session_events(conn);
	}
}

/* attach_kick reads on for every resumed session. */
void attach_kick(void)
{
	for (struct conn *conn = M.conns, *next; conn; conn = next) {
		next = conn->next;
		if (conn->session && conn->session->kick) {
			conn->session->kick = false;
			attach_input(conn);
		}
	}
}

static void stdin_flush(struct container *c)
{
	while (c->stdin_q.len && c->stdin_fd >= 0) {
		ssize_t n = write(c->stdin_fd, c->stdin_q.p, c->stdin_q.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) { /* the container closed its stdin or exited */
			c->stdin_q.len = 0;
			break;
		}
		buf_consume(&c->stdin_q, (size_t)n);
	}
	bool want = c->stdin_q.len > 0 && c->stdin_fd >= 0;
	if (want != c->stdin_watched && c->stdin_fd >= 0) {
		if (want)
			loop_add(c->stdin_fd, &c->stdin_src, EPOLLOUT);
		else
			loop_del(c->stdin_fd);
		c->stdin_watched = want;
	}
	if (c->stdin_q.len)
		return;
	if (c->stdin_closing && !c->stdin_closed && c->stdin_fd >= 0) {
		c->stdin_closed = true;
		if (!c->tty) {
			close(c->stdin_fd);
			c->stdin_fd = -1;
		}
	}
	attach_resume(c);
}

void container_stdin_write(struct container *c, const char *p, size_t n)
{
	if (c->stdin_fd < 0 || c->stdin_closing)
		return;
	buf_add(&c->stdin_q, p, n);
	stdin_flush(c);
	if (c->stdin_q.len >= STDIN_QUEUE)
		for (struct session *s = c->sessions; s; s = s->next)
			if (s->wants_stdin && !s->paused) {
				s->paused = true;
				struct conn *conn = conn_of(s);
				if (conn)
					session_events(conn);
			}
}

/* container_stdin_close ends the container's stdin once (StdinOnce), after
 * what is queued. */
void container_stdin_close(struct container *c)
{
	if (c->stdin_closing || c->stdin_fd < 0)
		return;
	if (c->tty)
		buf_add(&c->stdin_q, TTY_EOF, 1);
	c->stdin_closing = true;
	stdin_flush(c);
}

void container_stdin_event(struct container *c)
{
	stdin_flush(c);
}
