/* Connections: one JSON request line and one JSON response line each, or
 * an attach session after its response (internal/monitor's doc.go). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "monitor.h"

void conn_accept(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				diag("pod %s: accept: %s", M.pod, strerror(errno));
			return;
		}
		struct conn *c = xcalloc(1, sizeof *c);
		c->src.kind = SRC_CONN;
		c->src.obj = c;
		c->fd = fd;
		c->deadline = now_ms() + IO_TIMEOUT_MS;
		c->events = EPOLLIN;
		c->next = M.conns;
		M.conns = c;
		loop_add(fd, &c->src, EPOLLIN);
	}
}

/* conn_wait parks a connection whose answer waits for runc: it leaves the
 * epoll set (a client that hangs up meanwhile would otherwise be reported
 * and freed under the job that answers it); the answer's write finds out. */
void conn_wait(struct conn *c)
{
	c->waiting = true;
	loop_del(c->fd);
}

void conn_close(struct conn *c)
{
	for (struct conn **pp = &M.conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (c->session) { /* session_end closes the connection */
		session_end(c);
		return;
	}
	close(c->fd); /* leaves the epoll set with it */
	buf_free(&c->in);
	c->src.dead = true;
	graveyard_add(c);
}

/* conn_respond writes body and a newline, then closes the connection.
 * Responses are small: a socket's buffer holds them, so the write does not
 * wait on the client (it is bounded all the same). */
void conn_respond(struct conn *c, const struct buf *body)
{
	struct timeval tv = {.tv_sec = IO_TIMEOUT_MS / 1000};
	int flags = fcntl(c->fd, F_GETFL);
	if (flags >= 0)
		fcntl(c->fd, F_SETFL, flags & ~O_NONBLOCK);
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	for (size_t off = 0; off < body->len + 1;) {
		const char *p = off < body->len ? body->p + off : "\n";
		size_t n = off < body->len ? body->len - off : 1;
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	conn_close(c);
}

void conn_error(struct conn *c, const struct err *e)
{
	struct buf b = {0};
	buf_printf(&b, "{\"version\":%d,\"error\":", PROTOCOL_VERSION);
	jw_str(&b, e->msg[0] ? e->msg : "unknown error");
	const char *name = classname(e->class);
	if (name)
		buf_printf(&b, ",\"errorClass\":\"%s\"", name);
	buf_adds(&b, "}");
	conn_respond(c, &b);
	buf_free(&b);
}

static void respond_ok(struct conn *c)
{
	struct buf b = {0};
	buf_printf(&b, "{\"version\":%d}", PROTOCOL_VERSION);
	conn_respond(c, &b);
	buf_free(&b);
}

/* start_attach answers an attach request and keeps the connection for the
 * session; rest is what the client sent after the request line. */
static void start_attach(struct conn *c, const struct jv *req, const char *rest, size_t n)
{
	struct err e = {0};
	if (!attach_open(c, req, &e)) {
		diag("pod %s: attach: %s", M.pod, e.msg);
		conn_error(c, &e);
		return;
	}
	char ok[32];
	int len = snprintf(ok, sizeof ok, "{\"version\":%d}\n", PROTOCOL_VERSION);
	if (send(c->fd, ok, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) != len) {
		session_end(c);
		return;
	}
	while (n && strchr(" \t\r\n", *rest))
		rest++, n--;
	struct buf in = {0};
	buf_add(&in, rest, n);
	buf_free(&c->in);
	c->in = in;
	c->deadline = 0; /* the session lasts as long as the container */
	session_events(c);
	attach_input(c);
}

static void dispatch(struct conn *c, const struct jv *req, const char *rest, size_t restn)
{
	struct err e = {0};
	long long version = 0;
	const char *op = "", *id = "";
	if (req->t != J_OBJ) {
		seterr(&e, E_INVALID, "request: want an object");
	} else if (jfield_int(req, "version", &version, &e) && jfield_str(req, "op", &op, &e) &&
		   jfield_str(req, "id", &id, &e) && version != PROTOCOL_VERSION) {
		seterr(&e, E_PRECONDITION, "request version %lld", version);
	}
	if (e.msg[0]) {
		conn_error(c, &e);
		return;
	}
	if (!strcmp(op, "attach"))
		start_attach(c, req, rest, restn);
	else if (!strcmp(op, "create"))
		op_create(c, json_get(req, "create"));
	else if (!strcmp(op, "start"))
		op_start(c, id);
	else if (!strcmp(op, "adopt"))
		op_adopt(c, json_get(req, "adopt"));
	else if (!strcmp(op, "list"))
		op_list(c);
	else if (!strcmp(op, "forget"))
		op_forget(id), respond_ok(c);
	else if (!strcmp(op, "reopen-log"))
		op_reopen(c, id);
	else if (!strcmp(op, "ping"))
		respond_ok(c);
	else if (!strcmp(op, "shutdown"))
		respond_ok(c), M.stop = true;
	else {
		seterr(&e, E_NOT_IMPLEMENTED, "operation \"%s\"", op);
		conn_error(c, &e);
	}
}

/* read_request reads until the request's line is whole. */
static void read_request(struct conn *c)
{
	char chunk[4096];
	for (;;) {
		ssize_t n = recv(c->fd, chunk, sizeof chunk, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		buf_add(&c->in, chunk, (size_t)n);
		char *nl = memchr(c->in.p, '\n', c->in.len);
		if (!nl && c->in.len < MAX_REQUEST)
			continue;
		struct err e = {0};
		if (!nl) {
			seterr(&e, E_INVALID, "request: larger than %d bytes", MAX_REQUEST);
			conn_error(c, &e);
			return;
		}
		loop_mod(c->fd, &c->src, 0);
		c->events = 0;
		c->deadline = 0;
		struct jv *req = json_parse(c->in.p, (size_t)(nl - c->in.p), &e);
		if (!req) {
			errprefix(&e, "request");
			conn_error(c, &e);
			return;
		}
		size_t restn = c->in.len - (size_t)(nl + 1 - c->in.p);
		char *rest = xmalloc(restn + 1);
		memcpy(rest, nl + 1, restn);
		dispatch(c, req, rest, restn);
		free(rest);
		json_free(req);
		return;
	}
}

static bool find_conn(const struct conn *want)
{
	for (struct conn *c = M.conns; c; c = c->next)
		if (c == want)
			return true;
	return false;
}

void conn_event(struct conn *c, uint32_t events)
{
	if (c->waiting)
		return; /* left the epoll set; the event came in the same batch */
	if (!c->session) {
		read_request(c);
		return;
	}
	if (events & EPOLLOUT) {
		attach_writable(c);
		if (!find_conn(c))
			return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		attach_input(c);
}

void conns_timeouts(int64_t now)
{
	for (struct conn *c = M.conns, *next; c; c = next) {
		next = c->next;
		if (c->deadline && now >= c->deadline && !c->waiting)
			conn_close(c);
	}
}
