/* Errors, buffers, clocks and diagnostics. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "monitor.h"

static const char *const class_texts[] = {
	[E_NOT_FOUND] = "not found",	       [E_EXISTS] = "already exists",
	[E_INVALID] = "invalid argument",      [E_PRECONDITION] = "failed precondition",
	[E_UNAVAILABLE] = "unavailable",       [E_NOT_IMPLEMENTED] = "not implemented",
};
static const char *const class_names[] = {
	[E_NOT_FOUND] = "not_found",	       [E_EXISTS] = "already_exists",
	[E_INVALID] = "invalid_argument",      [E_PRECONDITION] = "failed_precondition",
	[E_UNAVAILABLE] = "unavailable",       [E_NOT_IMPLEMENTED] = "not_implemented",
};

const char *classtext(enum errclass class)
{
	return class > E_NONE && class < E_OTHER ? class_texts[class] : NULL;
}

const char *classname(enum errclass class)
{
	return class > E_NONE && class < E_OTHER ? class_names[class] : NULL;
}

/* seterr formats the message and, for a class, appends ": <class text>". */
void seterr(struct err *e, enum errclass class, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	e->class = class;
	const char *t = classtext(class);
	if (t) {
		size_t n = strlen(e->msg);
		snprintf(e->msg + n, sizeof e->msg - n, ": %s", t);
	}
}

void errprefix(struct err *e, const char *fmt, ...)
{
	char head[512], old[sizeof e->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(head, sizeof head, fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof old);
	snprintf(e->msg, sizeof e->msg, "%s: %s", head, old);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		diag("out of memory (%zu bytes)", n);
		abort();
	}
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		diag("out of memory (%zu bytes)", n * size);
		abort();
	}
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

void buf_add(struct buf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *q = realloc(b->p, cap);
		if (!q) {
			diag("out of memory (%zu bytes)", cap);
			abort();
		}
		b->p = q;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = 0;
}

void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof tmp) {
		buf_add(b, tmp, (size_t)n);
		return;
	}
	char *big = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	buf_add(b, big, (size_t)n);
	free(big);
}

/* buf_consume drops the first n bytes. */
void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
	} else {
		memmove(b->p, b->p + n, b->len - n);
		b->len -= n;
	}
	if (b->p)
		b->p[b->len] = 0;
}

void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void rfc3339(const struct timespec *t, char *out, size_t n)
{
	struct tm tm;
	time_t sec = t->tv_sec;
	localtime_r(&sec, &tm);
	size_t len = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
	if (t->tv_nsec) {
		char frac[16];
		snprintf(frac, sizeof frac, ".%09ld", t->tv_nsec);
		size_t f = strlen(frac);
		while (frac[f - 1] == '0')
			frac[--f] = 0;
		len += (size_t)snprintf(out + len, n - len, "%s", frac);
	}
	long off = tm.tm_gmtoff;
	if (off == 0) {
		snprintf(out + len, n - len, "Z");
		return;
	}
	char sign = off < 0 ? '-' : '+';
	if (off < 0)
		off = -off;
	snprintf(out + len, n - len, "%c%02ld:%02ld", sign, off / 3600, off / 60 % 60);
}

/* logf writes one line as Go's log package did with LstdFlags and
 * Lmicroseconds, in one write. */
void diag(const char *fmt, ...)
{
	char line[2048];
	struct timespec t;
	struct tm tm;
	int saved = errno;
	clock_gettime(CLOCK_REALTIME, &t);
	localtime_r(&t.tv_sec, &tm);
	size_t n = strftime(line, sizeof line, "%Y/%m/%d %H:%M:%S", &tm);
	n += (size_t)snprintf(line + n, sizeof line - n, ".%06ld ", t.tv_nsec / 1000);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
	va_end(ap);
	if (m > 0)
		n += (size_t)m < sizeof line - n - 1 ? (size_t)m : sizeof line - n - 2;
	line[n++] = '\n';
	ssize_t w = write(2, line, n);
	(void)w; /* diagnostics only */
	errno = saved;
}
