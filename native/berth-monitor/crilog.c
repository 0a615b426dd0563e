/* The CRI log writer: records "<time> <stream> <P|F> <content>\n" appended
 * to a log opened beneath the pod's log directory, never following a
 * symlink (as internal/crilog does for the daemon). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "monitor.h"

#define BENEATH (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
#define LOG_DIR_MODE 0700

static int openat2_retry(int dirfd, const char *name, uint64_t flags, uint64_t mode)
{
	struct open_how how = {.flags = flags, .mode = mode, .resolve = BENEATH};
	for (int try = 0;; try++) {
		int fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof how);
		if (fd >= 0 || (errno != EAGAIN && errno != EINTR) || try >= 8)
			return fd;
	}
}

/* linkerr describes errno, saying what ELOOP and EXDEV mean here. */
static const char *linkerr(int err, char *out, size_t n)
{
	if (err == ELOOP)
		snprintf(out, n, "%s: a symlink, not followed", strerror(err));
	else if (err == EXDEV)
		snprintf(out, n, "%s: leads outside the log directory, not followed", strerror(err));
	else
		snprintf(out, n, "%s", strerror(err));
	return out;
}

/* mkdir_all makes dir and its parents (mode 0700). */
static int mkdir_all(const char *dir)
{
	char tmp[4096];
	if (strlen(dir) >= sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(tmp, dir);
	for (char *p = tmp + 1;; p++) {
		if (*p == '/' || *p == 0) {
			char c = *p;
			*p = 0;
			if (mkdir(tmp, LOG_DIR_MODE) < 0 && errno != EEXIST)
				return -1;
			*p = c;
			if (!c)
				break;
		}
	}
	struct stat st;
	return stat(dir, &st);
}

static bool open_dir(struct crilog *l, const char *dir, struct err *e)
{
	char why[256];
	if (dir[0] != '/') {
		seterr(e, E_OTHER, "container log directory \"%s\": not absolute", dir);
		return false;
	}
	if (mkdir_all(dir) < 0) {
		seterr(e, E_OTHER, "container log directory %s: %s", dir, strerror(errno));
		return false;
	}
	int fd = open(dir, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		seterr(e, E_OTHER, "container log directory %s: %s", dir, linkerr(errno, why, sizeof why));
		return false;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		close(fd);
		if (S_ISLNK(st.st_mode))
			seterr(e, E_OTHER, "container log directory %s: %s", dir, linkerr(ELOOP, why, sizeof why));
		else
			seterr(e, E_OTHER, "container log directory %s: not a directory", dir);
		return false;
	}
	l->dirfd = fd;
	return true;
}

/* clean_rel accepts a plain relative path: no leading '/', no empty, "."
 * or ".." component. */
static bool clean_rel(const char *rel)
{
	if (!rel[0] || rel[0] == '/')
		return false;
	for (const char *p = rel; *p;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!slash)
			break;
		p = slash + 1;
		if (!*p)
			return false;
	}
	return true;
}

/* parent_of opens the directory holding rel's last component beneath the
 * log directory, making each missing one with mkdirat. */
static int parent_of(struct crilog *l, struct err *e)
{
	char why[256];
	int cur = fcntl(l->dirfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0) {
		seterr(e, E_OTHER, "container log directory %s: %s", l->path, strerror(errno));
		return -1;
	}
	char *copy = xstrdup(l->rel);
	char *last = strrchr(copy, '/');
	if (last) {
		*last = 0;
		for (char *part = strtok(copy, "/"); part; part = strtok(NULL, "/")) {
			if (mkdirat(cur, part, LOG_DIR_MODE) < 0 && errno != EEXIST) {
				seterr(e, E_OTHER, "container log directory %s: %s", part, strerror(errno));
				goto fail;
			}
			int next = openat2_retry(cur, part, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
			if (next < 0) {
				seterr(e, E_OTHER, "container log directory %s: %s", part, linkerr(errno, why, sizeof why));
				goto fail;
			}
			close(cur);
			cur = next;
		}
	}
	free(copy);
	return cur;
fail:
	free(copy);
	close(cur);
	return -1;
}

static const char *base_of(const char *rel)
{
	const char *s = strrchr(rel, '/');
	return s ? s + 1 : rel;
}

/* check_log refuses what is not a regular file of one link. */
static bool check_log(int fd, struct stat *st, char *why, size_t n)
{
	if (fstat(fd, st) < 0) {
		snprintf(why, n, "%s", strerror(errno));
		return false;
	}
	if (S_ISLNK(st->st_mode)) {
		linkerr(ELOOP, why, n);
		return false;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(why, n, "not a regular file (mode %#o): refused", st->st_mode);
		return false;
	}
	if (st->st_nlink > 1) {
		snprintf(why, n, "a regular file with %lu links: refused", (unsigned long)st->st_nlink);
		return false;
	}
	return true;
}

/* open_existing opens the log only once it is known to be a regular file
 * of one link: O_PATH first (no driver of a planted device runs), then
 * again through that descriptor, and it must be the file checked. */
static int open_existing(int parent, const char *name, char *why, size_t n)
{
	int pfd = openat2_retry(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	if (pfd < 0) {
		linkerr(errno, why, n);
		return -1;
	}
	struct stat checked, opened;
	if (!check_log(pfd, &checked, why, n)) {
		close(pfd);
		return -1;
	}
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
	int fd = open(proc, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
	int saved = errno;
	close(pfd);
	if (fd < 0) {
		snprintf(why, n, "%s", strerror(saved));
		return -1;
	}
	if (fstat(fd, &opened) < 0 || opened.st_dev != checked.st_dev || opened.st_ino != checked.st_ino) {
		close(fd);
		snprintf(why, n, "changed while it was opened: refused");
		return -1;
	}
	return fd;
}

static int open_beneath(struct crilog *l, bool *created, struct err *e)
{
	char why[256];
	int parent = parent_of(l, e);
	if (parent < 0)
		return -1;
	const char *name = base_of(l->rel);
	uint64_t flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
	int fd = openat2_retry(parent, name, flags | O_CREAT | O_EXCL, 0640);
	*created = fd >= 0;
	if (fd < 0 && errno == EEXIST)
		fd = open_existing(parent, name, why, sizeof why);
	else if (fd < 0)
		linkerr(errno, why, sizeof why);
	close(parent);
	if (fd < 0)
		seterr(e, E_OTHER, "container log %s: %s", l->path, why);
	return fd;
}

bool crilog_open(struct crilog *l, const char *dir, const char *rel, struct err *e)
{
	memset(l, 0, sizeof *l);
	l->dirfd = l->fd = -1;
	if (!clean_rel(rel)) {
		seterr(e, E_OTHER, "container log path \"%s\": not a clean path relative to the log directory", rel);
		return false;
	}
	if (!open_dir(l, dir, e))
		return false;
	l->rel = xstrdup(rel);
	size_t n = strlen(dir) + strlen(rel) + 2;
	l->path = xmalloc(n);
	snprintf(l->path, n, "%s/%s", dir, rel);
	l->fd = open_beneath(l, &l->created, e);
	if (l->fd < 0) {
		crilog_close(l);
		return false;
	}
	return true;
}

void crilog_discard(struct crilog *l)
{
	memset(l, 0, sizeof *l);
	l->dirfd = l->fd = -1;
	l->path = xstrdup("/dev/null");
}

bool crilog_reopen(struct crilog *l, struct err *e)
{
	if (l->dirfd < 0) {
		if (!l->rel)
			return true; /* discarding: nothing to reopen */
		seterr(e, E_OTHER, "container log %s: closed", l->path);
		return false;
	}
	bool created;
	int fd = open_beneath(l, &created, e);
	if (fd < 0)
		return false;
	if (l->fd >= 0)
		close(l->fd);
	l->fd = fd;
	return true;
}

void crilog_abandon(struct crilog *l)
{
	if (l->created && l->dirfd >= 0 && l->fd >= 0) {
		struct err e = {0};
		int parent = parent_of(l, &e);
		struct stat held, now;
		const char *name = base_of(l->rel);
		if (parent >= 0 && fstat(l->fd, &held) == 0 && fstatat(parent, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
		    now.st_dev == held.st_dev && now.st_ino == held.st_ino && unlinkat(parent, name, 0) < 0)
			diag("container log %s: remove: %s", l->path, strerror(errno));
		if (parent >= 0)
			close(parent);
	}
	crilog_close(l);
}

void crilog_close(struct crilog *l)
{
	if (l->fd >= 0)
		close(l->fd);
	if (l->dirfd >= 0)
		close(l->dirfd);
	l->fd = l->dirfd = -1;
	free(l->rel);
	free(l->path);
	l->rel = l->path = NULL;
}

/* crilog_record writes one record with one write; content holds no newline
 * and at most MAX_CONTENT bytes. Write errors cannot reach anyone. */
void crilog_record(struct crilog *l, const char *stream, bool partial, const char *p, size_t n)
{
	if (l->fd < 0 || l->dirfd < 0)
		return;
	char head[80];
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	rfc3339(&t, head, sizeof head);
	size_t h = strlen(head);
	snprintf(head + h, sizeof head - h, " %s %s ", stream, partial ? "P" : "F");
	struct iovec iov[3] = {{head, strlen(head)}, {(void *)p, n}, {"\n", 1}};
	ssize_t w = writev(l->fd, iov, 3);
	(void)w;
}

/* line_complete: buf is a whole line whose content fits in MAX_CONTENT. */
static size_t trimmed_len(const char *p, size_t n)
{
	if (n && p[n - 1] == '\n')
		n--;
	if (n && p[n - 1] == '\r')
		n--;
	return n;
}

/* stream_feed splits what a stream read into records as the Go writer did:
 * lines end at '\n' (a '\r' before it is dropped); content longer than
 * MAX_CONTENT goes out in partial records of MAX_CONTENT bytes. */
void stream_feed(struct stream *s, const char *p, size_t n)
{
	const char *name = s->kind == FRAME_STDERR ? "stderr" : "stdout";
	struct buf *b = &s->pending;
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t seg = nl ? (size_t)(nl - p) + 1 : n;
		buf_add(b, p, seg);
		p += seg;
		n -= seg;
		while (b->len > MAX_CONTENT &&
		       !(b->p[b->len - 1] == '\n' && trimmed_len(b->p, b->len) <= MAX_CONTENT)) {
			crilog_record(&s->c->log, name, true, b->p, MAX_CONTENT);
			buf_consume(b, MAX_CONTENT);
		}
		if (nl) {
			crilog_record(&s->c->log, name, false, b->p, trimmed_len(b->p, b->len));
			b->len = 0;
		}
	}
	if (b->cap > 4 * MAX_CONTENT && b->len == 0)
		buf_free(b); /* keep the scratch within bounds */
}

void stream_flush(struct stream *s)
{
	const char *name = s->kind == FRAME_STDERR ? "stderr" : "stdout";
	if (s->pending.len)
		crilog_record(&s->c->log, name, true, s->pending.p, s->pending.len);
	buf_free(&s->pending);
}
