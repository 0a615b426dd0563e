/* runc, run asynchronously: a job is started with posix_spawn and ends
 * when the reaper sees its pid; its private JSON log gives the error. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "monitor.h"

extern char **environ;

/* make_log makes runc's private log file in a fresh directory under /tmp. */
static char *make_log(struct err *e)
{
	char tmpl[] = "/tmp/runc-log-XXXXXX";
	if (!mkdtemp(tmpl)) {
		seterr(e, E_OTHER, "log file: %s", strerror(errno));
		return NULL;
	}
	size_t n = strlen(tmpl) + 16;
	char *path = xmalloc(n);
	snprintf(path, n, "%s/log.json", tmpl);
	return path;
}

static void remove_log(char *path)
{
	if (!path)
		return;
	unlink(path);
	char *slash = strrchr(path, '/');
	*slash = 0;
	rmdir(path);
	free(path);
}

static int spawn(char **argv, int in, int out, int errfd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in >= 0 ? in : M.devnull, 0);
	posix_spawn_file_actions_adddup2(&fa, out >= 0 ? out : M.devnull, 1);
	posix_spawn_file_actions_adddup2(&fa, errfd >= 0 ? errfd : M.devnull, 2);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigemptyset(&dfl);
	/* What the monitor blocks or ignores, runc (and so the container)
	 * gets back at its defaults. */
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGHUP);
	sigaddset(&dfl, SIGCHLD);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGINT);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	int rc = posix_spawnp(pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return rc;
}

/* runc_spawn starts "runc <global flags> <args...>"; args end with NULL.
 * sub and id name the job in messages. */
struct job *runc_spawn(enum jobkind kind, const char *sub, const char *id, const char *const *args, int in, int out, int errfd,
		       bool systemd, struct err *e)
{
	struct job *j = xcalloc(1, sizeof *j);
	size_t wn = strlen(sub) + strlen(id) + 8;
	j->what = xmalloc(wn);
	snprintf(j->what, wn, "runc %s %s", sub, id);
	j->kind = kind;
	j->id = xstrdup(id);
	j->logpath = make_log(e);
	if (!j->logpath) {
		errprefix(e, "%s", j->what);
		job_free(j);
		return NULL;
	}
	const char *argv[32];
	int n = 0;
	argv[n++] = M.runc;
	argv[n++] = "--log";
	argv[n++] = j->logpath;
	argv[n++] = "--log-format";
	argv[n++] = "json";
	if (M.runc_root && M.runc_root[0]) {
		argv[n++] = "--root";
		argv[n++] = M.runc_root;
	}
	if (systemd)
		argv[n++] = "--systemd-cgroup";
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	int rc = spawn((char **)argv, in, out, errfd, &j->pid);
	if (rc != 0) {
		seterr(e, E_OTHER, "%s: fork/exec %s: %s", j->what, M.runc, strerror(rc));
		job_free(j);
		return NULL;
	}
	j->deadline = now_ms() + OP_TIMEOUT_MS;
	j->next = M.jobs;
	M.jobs = j;
	return j;
}

/* last_error returns the message of the last error-level entry of runc's
 * JSON log, or "". */
static void last_error(const char *path, char *out, size_t n)
{
	out[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct buf data = {0};
	char chunk[4096];
	ssize_t r;
	while ((r = read(fd, chunk, sizeof chunk)) > 0 && data.len < (1 << 20))
		buf_add(&data, chunk, (size_t)r);
	close(fd);
	for (char *line = data.p; line && *line;) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		struct err e;
		struct jv *v = json_parse(line, len, &e);
		const char *level = NULL, *msg = NULL;
		if (v && jfield_str(v, "level", &level, &e) && jfield_str(v, "msg", &msg, &e) && level && msg && msg[0] &&
		    (!strcmp(level, "error") || !strcmp(level, "fatal")))
			snprintf(out, n, "%s", msg);
		json_free(v);
		line = nl ? nl + 1 : NULL;
	}
	buf_free(&data);
}

/* runc_done sets e unless the job exited 0: runc's last logged error,
 * classed as internal/runc does, or how it ended. */
void runc_done(struct job *j, int status, struct err *e)
{
	e->class = E_NONE;
	e->msg[0] = 0;
	if (j->killed) {
		seterr(e, E_OTHER, "%s: context deadline exceeded", j->what);
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	char msg[768];
	last_error(j->logpath, msg, sizeof msg);
	if (!msg[0]) {
		if (WIFSIGNALED(status))
			seterr(e, E_OTHER, "%s: killed by signal %d", j->what, WTERMSIG(status));
		else
			seterr(e, E_OTHER, "%s: exit status %d", j->what, WEXITSTATUS(status));
	} else if (strstr(msg, "does not exist")) {
		seterr(e, E_NOT_FOUND, "%s: %s", j->what, msg);
	} else if (strstr(msg, "already exists")) {
		seterr(e, E_EXISTS, "%s: %s", j->what, msg);
	} else {
		seterr(e, E_OTHER, "%s: %s", j->what, msg);
	}
}

void job_free(struct job *j)
{
	for (struct job **pp = &M.jobs; *pp; pp = &(*pp)->next) {
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	}
	remove_log(j->logpath);
	free(j->what);
	free(j->id);
	free(j);
}
