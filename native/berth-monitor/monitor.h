/* berth-monitor: the per-pod monitor, in C. berth serve launches one per
 * pod (internal/monitor's Launch); it serves internal/monitor's protocol on
 * a unix socket (JSON request and response lines, framed attach sessions),
 * runs runc create / run --detach / start for the pod's containers, holds
 * their stdio, writes their CRI logs and an exit file when each init exits.
 * Why C: docs/architecture.md ("The per-pod monitor is C").
 *
 * Rules:
 *   - One thread, one epoll loop (main.c). Nothing blocks it but short
 *     file work: runc runs as an asynchronous job (runc.c) whose end the
 *     reaper reports; a connection waiting on one leaves the epoll set.
 *   - The process is a child subreaper, so every container init becomes
 *     its child. One reaper owns waitpid(-1) (main.c). An init's pid is
 *     known only after runc returns: exits reaped while a create is under
 *     way are kept (M.orphans) and claimed by pid, so none is lost.
 *   - On an init's exit the OOM count of its cgroup is compared with its
 *     value at create (on cgroup v2 also the highest count an inotify watch
 *     of memory.events saw: under the systemd driver the scope may be gone
 *     by then; one inotify instance for all containers, oom.c), output is
 *     drained for at most DRAIN_TIMEOUT_MS, then the exit file is written
 *     (atomically, not flushed) before list reports the exit.
 *   - Output is read once, into the log (crilog.c, opened beneath the pod's
 *     log directory with openat2: no symlink followed) and to attached
 *     clients through bounded queues that drop, never block (attach.c).
 *     Only the monitor writes a container's stdin and only it closes it.
 *   - stdout and stderr are FIFOs in the bundle, not pipes: the daemon holds
 *     a read end, so a container's writes never fail while no monitor runs,
 *     and a monitor that adopts the container (adopt.c) opens them by path.
 *   - The daemon may die at any moment: the monitor never needs it. It
 *     exits only on shutdown or SIGTERM/SIGINT; SIGHUP and SIGPIPE are
 *     ignored, and runc (so the container) gets every signal at default.
 *   - Memory is paid per pod: no buffer larger than a read (4 KiB) or a
 *     record (16 KiB) is held for long; glibc only, linked statically. */
#ifndef BERTH_MONITOR_H
#define BERTH_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Protocol constants, as internal/monitor defines them. */
#define PROTOCOL_VERSION 1
#define EXIT_RECORD_VERSION 1
#define MAX_REQUEST (1 << 20)
#define MAX_FRAME_PAYLOAD (32 << 10)
#define FRAME_HEADER 5
#define FRAME_STDOUT 1
#define FRAME_STDERR 2
#define FRAME_STDIN 3
#define FRAME_STDIN_CLOSE 4
#define FRAME_RESIZE 5
#define STDOUT_FIFO "stdout.fifo"
#define STDERR_FIFO "stderr.fifo"

/* Limits and timeouts, as the Go monitor had them. */
#define MAX_CONTENT (16 * 1024) /* one CRI log record's content */
#define READ_CHUNK 4096
#define ATTACH_QUEUE 64        /* output chunks queued per attached client */
#define STDIN_QUEUE (64 << 10) /* stdin bytes queued before clients wait */
#define IO_TIMEOUT_MS 10000
#define OP_TIMEOUT_MS (2 * 60 * 1000)
#define DRAIN_TIMEOUT_MS 2000
#define CONSOLE_TIMEOUT_MS 10000

/* Error classes of a Response (internal/errdefs). */
enum errclass { E_NONE, E_NOT_FOUND, E_EXISTS, E_INVALID, E_PRECONDITION, E_UNAVAILABLE, E_NOT_IMPLEMENTED, E_OTHER };

/* An error: a class and a message that already ends with the class's
 * text where there is one (as Go's %w does). */
struct err {
	enum errclass class;
	char msg[1024];
};
void seterr(struct err *e, enum errclass class, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* prefix puts "what: " before e's message. */
void errprefix(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *classtext(enum errclass class);
const char *classname(enum errclass class);

/* A growable byte buffer. */
struct buf {
	char *p;
	size_t len, cap;
};
void buf_add(struct buf *b, const void *p, size_t n);
void buf_adds(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);

/* Clocks. */
int64_t now_ms(void); /* monotonic */
/* rfc3339 writes t in RFC 3339 with nanoseconds, trailing zeros cut, in
 * local time, as Go's time.RFC3339Nano does. out holds at least 40. */
void rfc3339(const struct timespec *t, char *out, size_t n);

/* Diagnostics, to the file given by --log (stderr). */
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* JSON (json.c). */
enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
struct jv {
	enum jtype t;
	char *key; /* member name inside an object */
	char *s;   /* J_STR: NUL-terminated; has_nul when it held \u0000 */
	bool has_nul;
	bool b;
	double n;
	struct jv *child, *next;
};
struct jv *json_parse(const char *p, size_t n, struct err *e);
void json_free(struct jv *v);
struct jv *json_get(const struct jv *obj, const char *key);
/* Field readers: absent or null leaves the default; a wrong type is an
 * invalid argument naming the field. */
bool jfield_str(const struct jv *obj, const char *key, const char **out, struct err *e);
bool jfield_bool(const struct jv *obj, const char *key, bool *out, struct err *e);
bool jfield_int(const struct jv *obj, const char *key, long long *out, struct err *e);
void jw_str(struct buf *b, const char *s);

/* The event loop's sources: every epoll registration points at one. */
enum srckind { SRC_LISTEN, SRC_SIGNAL, SRC_INOTIFY, SRC_CONN, SRC_STREAM, SRC_PIDFD, SRC_STDIN };
struct src {
	enum srckind kind;
	void *obj;
	bool dead; /* its object is gone: an event still in the batch is skipped */
};
/* graveyard_add frees p once the loop's current batch of events is done:
 * an event later in the batch may still point at it (marked dead). */
void graveyard_add(void *p);
void loop_add(int fd, struct src *s, uint32_t events);
void loop_mod(int fd, struct src *s, uint32_t events);
void loop_del(int fd);

/* The CRI log writer (crilog.c). */
struct crilog {
	int dirfd; /* the pod's log directory (O_PATH); -1 discards */
	char *rel;
	char *path; /* for messages */
	int fd;     /* -1 once closed */
	bool created;
};
bool crilog_open(struct crilog *l, const char *dir, const char *rel, struct err *e);
void crilog_discard(struct crilog *l);
bool crilog_reopen(struct crilog *l, struct err *e);
void crilog_abandon(struct crilog *l); /* close, and remove a log it created */
void crilog_close(struct crilog *l);
void crilog_record(struct crilog *l, const char *stream, bool partial, const char *p, size_t n);

/* One output stream of a container, split into CRI records. */
struct stream {
	struct src src;
	struct container *c;
	int fd; /* the monitor's read end; -1 once closed */
	int kind; /* FRAME_STDOUT or FRAME_STDERR */
	struct buf pending; /* a line not yet ended */
};
void stream_feed(struct stream *s, const char *p, size_t n);
void stream_flush(struct stream *s); /* the rest as a partial record */

/* OOM kill counting (oom.c). */
struct oom {
	char *file; /* memory.oom_control (v1) or memory.events (v2); NULL: unknown */
	uint64_t baseline, seen;
	int wd; /* inotify watch, -1 without */
};
void oom_init(struct oom *o, const char *cgroup_path);
bool oom_killed(struct oom *o);
void oom_stop(struct oom *o);
void oom_events(int fd); /* the inotify instance is readable */
int oom_watch_fd(void);

/* An attached client (attach.c). */
struct chunk {
	struct chunk *next;
	size_t len, off;
	char data[];
};
struct conn;
struct session {
	struct container *c;
	struct session *next; /* in c->sessions */
	bool out, err, wants_stdin;
	struct chunk *head, *tail;
	int queued, dropped;
	bool closing; /* output ended: close once the queue is sent */
	bool paused;  /* not reading: the container's stdin queue is full */
	bool kick;    /* resumed: read what the client sent meanwhile */
};

/* One container the monitor created or adopted (container.c). */
struct container {
	struct container *next;
	char *id;
	pid_t pid;
	bool listed; /* known to list/start/attach (not forgotten) */
	bool started, adopted, tty, stdin, stdin_once;
	struct crilog log;
	struct stream out, err;
	/* stdin: the pipe's write end or a dup of the pty master */
	int stdin_fd;
	struct src stdin_src;
	struct buf stdin_q;
	bool stdin_closing, stdin_closed, stdin_watched;
	struct oom oom;
	int pidfd; /* adopted: tells the init's end */
	struct src pidfd_src;
	bool ended;             /* init gone; draining output */
	int64_t drain_deadline; /* while ended and output open */
	struct timespec finished;
	int status;
	bool oom_killed;
	bool exited; /* exit record written */
	int exit_code, signal;
	bool unknown;
	struct session *sessions;
};

/* A client connection (conn.c): one request, or an attach session. */
struct conn {
	struct src src;
	struct conn *next;
	int fd;
	struct buf in;
	int64_t deadline; /* read deadline while the request is read */
	bool waiting;     /* its request waits for runc */
	struct session *session;
	uint32_t events;
};

/* The monitor's state (main.c). */
struct monitor {
	const char *pod, *socket, *exit_dir, *runc, *runc_root;
	int epfd, devnull;
	struct container *containers;
	struct conn *conns;
	struct job *jobs;
	struct pending *pending; /* creates and adopts under way: their ids are taken */
	int creating;            /* creates whose init pid is not known yet */
	struct exitrec *orphans; /* exits reaped while a create was under way */
	bool stop;
};
extern struct monitor M;

/* A reaped exit nobody claimed yet. */
struct exitrec {
	struct exitrec *next;
	pid_t pid;
	int status;
};

/* runc, run asynchronously (runc.c). */
enum jobkind { JOB_CREATE, JOB_START, JOB_ROLLBACK };
struct job {
	struct job *next;
	enum jobkind kind;
	pid_t pid;
	int64_t deadline;
	bool killed;
	char *what;    /* "runc create <id>", for messages */
	char *id;
	char *logpath; /* runc's JSON log */
	struct conn *conn;
	struct pending *p;       /* JOB_CREATE, JOB_ROLLBACK */
	struct container *c;     /* JOB_START */
	struct err rollback_err; /* JOB_ROLLBACK: what the caller is told */
};
struct job *runc_spawn(enum jobkind kind, const char *sub, const char *id, const char *const *args, int in, int out, int errfd,
		       bool systemd, struct err *e);
void runc_done(struct job *j, int status, struct err *e); /* e set unless it exited 0 */
void job_free(struct job *j);

/* create.c and container.c share these. */
struct pending *reserve(const char *id, struct err *e);
void pending_free(struct pending *p);
bool open_log(struct crilog *l, const char *dir, const char *rel, const char *path, struct err *e);
struct container *container_from(struct pending *p, pid_t pid, int master);
struct container *find_container_obj(const struct container *c);
struct container *container_new(const char *id, pid_t pid);
void container_maybe_free(struct container *c);
void stream_init(struct stream *s, struct container *c, int fd, int kind);
void orphans_clear(void);
bool orphan_claim(pid_t pid, int *status);

/* A create under way (container.c). */
struct pending {
	struct pending *next;
	char *id, *bundle;
	bool run, tty, stdin, stdin_once, systemd;
	char *cgroup;
	struct crilog log;
	int out_r, out_w, err_r, err_w, in_r, in_w;
	int console; /* listening console socket, -1 */
	char scratch[64]; /* holds init.pid, the console socket, runc's log */
};

/* Requests (conn.c), and what they do (container.c, attach.c). */
void conn_accept(int lfd);
void conn_event(struct conn *c, uint32_t events);
void conn_respond(struct conn *c, const struct buf *body);
void conn_error(struct conn *c, const struct err *e);
void conn_close(struct conn *c);
void conn_wait(struct conn *c);
void conns_timeouts(int64_t now);

void op_create(struct conn *c, const struct jv *body);
void op_start(struct conn *c, const char *id);
void op_adopt(struct conn *c, const struct jv *body);
void op_list(struct conn *c);
void op_forget(const char *id);
void op_reopen(struct conn *c, const char *id);
void job_finished(struct job *j, int status);
void container_reaped(pid_t pid, int status);
void container_stream_event(struct stream *s, uint32_t events);
void container_pidfd_event(struct container *c);
void container_stdin_event(struct container *c);
void containers_timeouts(int64_t now);
int64_t next_deadline(void);
struct container *find_container(const char *id);
bool valid_id(const char *id, struct err *e);
void container_stdin_write(struct container *c, const char *p, size_t n);
void container_stdin_close(struct container *c);

bool attach_open(struct conn *conn, const struct jv *req, struct err *e);
void attach_input(struct conn *conn);
void attach_writable(struct conn *conn);
void attach_publish(struct container *c, int kind, const char *p, size_t n);
void attach_output_ended(struct container *c);
void attach_resume(struct container *c);
void attach_kick(void);
void session_end(struct conn *conn);
void session_events(struct conn *conn); /* what the session waits for */

#endif
