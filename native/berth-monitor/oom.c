/* OOM kill counting: the kernel's oom_kill count of a container's memory
 * cgroup at create, against the highest count seen by its exit. On cgroup
 * v2 the systemd driver's scope (and its memory.events) may be gone before
 * the init is reaped, so memory.events is also watched, through the
 * monitor's one inotify instance, and the highest count kept. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "monitor.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

static int inotify_fd = -1;
static bool inotify_warned;
static struct src inotify_src = {SRC_INOTIFY, NULL, false};

/* The counters being watched; few per pod. */
static struct oom **watched;
static size_t nwatched;

int oom_watch_fd(void)
{
	return inotify_fd;
}

/* expand_slice turns "a-b.slice" into "/a.slice/a-b.slice". */
static bool expand_slice(const char *slice, struct buf *out)
{
	size_t n = strlen(slice);
	if (n < 6 || strcmp(slice + n - 6, ".slice") != 0 || strchr(slice, '/'))
		return false;
	if (n == 7 && slice[0] == '-') {
		buf_adds(out, "/");
		return true;
	}
	char *base = xmalloc(n - 5);
	memcpy(base, slice, n - 6);
	base[n - 6] = 0;
	struct buf prefix = {0};
	bool ok = true;
	for (char *p = base;;) {
		char *dash = strchr(p, '-');
		size_t len = dash ? (size_t)(dash - p) : strlen(p);
		if (len == 0) {
			ok = false;
			break;
		}
		buf_add(&prefix, p, len);
		buf_adds(out, "/");
		buf_add(out, prefix.p, prefix.len);
		buf_adds(out, ".slice");
		if (!dash)
			break;
		buf_adds(&prefix, "-");
		p = dash + 1;
	}
	free(base);
	buf_free(&prefix);
	return ok;
}

static bool unit_part(const char *v)
{
	return v[0] && strcmp(v, ".") && strcmp(v, "..") && !strpbrk(v, ":/");
}

/* cgroup_dir turns an OCI cgroupsPath, in either driver's form, into the
 * cgroup's directory below the hierarchy's root (internal/cgrouppath.Dir). */
static bool cgroup_dir(const char *cg, struct buf *out)
{
	if (!cg || !cg[0])
		return false;
	if (!strchr(cg, ':')) {
		if (cg[0] != '/')
			buf_adds(out, "/");
		buf_adds(out, cg);
		return !strstr(out->p, "/../") && !strstr(out->p, "/./") &&
		       (out->len < 3 || strcmp(out->p + out->len - 3, "/..") != 0);
	}
	char *copy = xstrdup(cg), *slice = copy, *prefix, *name;
	bool ok = false;
	prefix = strchr(slice, ':');
	*prefix++ = 0;
	name = strchr(prefix, ':');
	if (!name || strchr(name + 1, ':'))
		goto done;
	*name++ = 0;
	if (!expand_slice(slice[0] ? slice : "system.slice", out) || !unit_part(name))
		goto done;
	if (strcmp(out->p, "/") == 0)
		out->len = 0;
	size_t n = strlen(name);
	if (n >= 6 && strcmp(name + n - 6, ".slice") == 0) {
		buf_printf(out, "/%s", name);
	} else {
		if (strchr(prefix, '/'))
			goto done;
		buf_printf(out, "/%s-%s.scope", prefix, name);
	}
	ok = true;
done:
	free(copy);
	return ok;
}

/* read_kills returns the "oom_kill" value of a cgroup memory file. */
static bool read_kills(const char *file, uint64_t *out)
{
	char data[4096];
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, data, sizeof data - 1);
	close(fd);
	if (n < 0)
		return false;
	data[n] = 0;
	*out = 0;
	for (char *line = data; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (strncmp(line, "oom_kill ", 9) == 0)
			*out = strtoull(line + 9, NULL, 10);
		line = nl ? nl + 1 : NULL;
	}
	return true;
}

static void update(struct oom *o)
{
	uint64_t count;
	if (o->file && read_kills(o->file, &count) && count > o->seen)
		o->seen = count;
}

static bool watch(struct oom *o)
{
	if (inotify_fd < 0) {
		inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
		if (inotify_fd < 0) {
			if (!inotify_warned) {
				inotify_warned = true;
				diag("pod %s: OOM watch of memory.events: inotify instance: %s; OOM kills are read at exit only",
				     M.pod, strerror(errno));
			}
			return false;
		}
		loop_add(inotify_fd, &inotify_src, EPOLLIN);
	}
	o->wd = inotify_add_watch(inotify_fd, o->file, IN_MODIFY);
	if (o->wd < 0)
		return false; /* no file (no memory controller), or no watches left */
	watched = realloc(watched, (nwatched + 1) * sizeof *watched);
	if (!watched)
		abort();
	watched[nwatched++] = o;
	return true;
}

void oom_init(struct oom *o, const char *cgroup_path)
{
	memset(o, 0, sizeof *o);
	o->wd = -1;
	struct buf rel = {0};
	if (!cgroup_dir(cgroup_path, &rel)) {
		buf_free(&rel);
		return; /* none, or not one berth builds: OOM kills go unnoticed */
	}
	struct stat st;
	bool v1 = stat(CGROUP_ROOT "/memory", &st) == 0 && S_ISDIR(st.st_mode);
	struct buf file = {0};
	buf_printf(&file, "%s%s%s/%s", CGROUP_ROOT, v1 ? "/memory" : "", rel.p, v1 ? "memory.oom_control" : "memory.events");
	buf_free(&rel);
	o->file = file.p;
	if (!read_kills(o->file, &o->baseline))
		o->baseline = 0; /* a missing file counts as 0 */
	o->seen = o->baseline;
	if (!v1)
		watch(o); /* after the baseline: the watch updates seen */
}

bool oom_killed(struct oom *o)
{
	update(o);
	return o->seen > o->baseline;
}

void oom_stop(struct oom *o)
{
	size_t shared = 0;
	for (size_t i = 0; i < nwatched; i++) {
		if (watched[i] == o) {
			watched[i--] = watched[--nwatched];
			continue;
		}
		if (watched[i]->wd == o->wd)
			shared++;
	}
	if (o->wd >= 0 && !shared && inotify_fd >= 0)
		inotify_rm_watch(inotify_fd, o->wd); /* a removed file's watch is gone already */
	o->wd = -1;
	free(o->file);
	o->file = NULL;
}

void oom_events(int fd)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n <= 0)
			return;
		for (char *p = buf; p + sizeof(struct inotify_event) <= buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			for (size_t i = 0; i < nwatched; i++)
				if (watched[i]->wd == ev->wd)
					update(watched[i]);
			p += sizeof *ev + ev->len;
		}
	}
}
