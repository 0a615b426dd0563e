/* A small JSON reader (a tree of values) and string writer: enough for
 * the protocol's requests, runc's log lines and the records written. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor.h"

#define MAX_DEPTH 32

struct parser {
	const char *p, *end;
	struct err *e;
	int depth;
};

static bool fail(struct parser *ps, const char *what)
{
	if (!ps->e->msg[0])
		seterr(ps->e, E_INVALID, "json: %s", what);
	return false;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool read_hex4(struct parser *ps, unsigned *out)
{
	if (ps->end - ps->p < 4)
		return fail(ps, "short \\u escape");
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(ps->p[i]);
		if (h < 0)
			return fail(ps, "bad \\u escape");
		v = v << 4 | (unsigned)h;
	}
	ps->p += 4;
	*out = v;
	return true;
}

static void put_utf8(struct buf *b, unsigned cp)
{
	char u[4];
	size_t n;
	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	buf_add(b, u, n);
}

/* parse_string reads a string whose opening quote is at ps->p. */
static bool parse_string(struct parser *ps, struct buf *out, bool *has_nul)
{
	ps->p++;
	buf_add(out, "", 0);
	while (ps->p < ps->end) {
		unsigned char c = (unsigned char)*ps->p++;
		if (c == '"')
			return true;
		if (c < 0x20)
			return fail(ps, "control character in string");
		if (c != '\\') {
			buf_add(out, &c, 1);
			continue;
		}
		if (ps->p >= ps->end)
			break;
		char esc = *ps->p++;
		const char *simple = strchr("\"\\/bfnrt", esc);
		if (simple && esc) {
			static const char repl[] = "\"\\/\b\f\n\r\t";
			buf_add(out, &repl[simple - "\"\\/bfnrt"], 1);
			continue;
		}
		if (esc != 'u')
			return fail(ps, "bad escape in string");
		unsigned cp;
		if (!read_hex4(ps, &cp))
			return false;
		if (cp >= 0xd800 && cp < 0xdc00) {
			unsigned lo = 0;
			if (ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u') {
				ps->p += 2;
				if (!read_hex4(ps, &lo))
					return false;
			}
			cp = lo >= 0xdc00 && lo < 0xe000 ? 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00) : 0xfffd;
		} else if (cp >= 0xdc00 && cp < 0xe000) {
			cp = 0xfffd;
		}
		if (cp == 0)
			*has_nul = true;
		put_utf8(out, cp);
	}
	return fail(ps, "unterminated string");
}

static struct jv *parse_value(struct parser *ps);

static bool parse_members(struct parser *ps, struct jv *v, bool object)
{
	char close = object ? '}' : ']';
	struct jv **tail = &v->child;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return true;
	}
	for (;;) {
		struct buf key = {0};
		bool nul = false;
		if (object) {
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != '"' || !parse_string(ps, &key, &nul)) {
				buf_free(&key);
				return fail(ps, "want an object key");
			}
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p++ != ':') {
				buf_free(&key);
				return fail(ps, "want ':'");
			}
		}
		struct jv *m = parse_value(ps);
		if (!m) {
			buf_free(&key);
			return false;
		}
		m->key = key.p;
		*tail = m;
		tail = &m->next;
		skip_ws(ps);
		if (ps->p >= ps->end)
			return fail(ps, "unexpected end");
		char c = *ps->p++;
		if (c == close)
			return true;
		if (c != ',')
			return fail(ps, "want ',' or the end of the value");
	}
}

static bool parse_number(struct parser *ps, struct jv *v)
{
	const char *s = ps->p;
	while (ps->p < ps->end && strchr("+-0123456789.eE", *ps->p))
		ps->p++;
	size_t n = (size_t)(ps->p - s);
	if (n == 0 || n > 64)
		return fail(ps, "bad number");
	char tmp[65];
	memcpy(tmp, s, n);
	tmp[n] = 0;
	char *end;
	v->n = strtod(tmp, &end);
	if (*end)
		return fail(ps, "bad number");
	v->t = J_NUM;
	return true;
}

static bool parse_literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return fail(ps, "invalid character");
	ps->p += n;
	return true;
}

static struct jv *parse_value(struct parser *ps)
{
	if (++ps->depth > MAX_DEPTH) {
		fail(ps, "nested too deep");
		return NULL;
	}
	skip_ws(ps);
	struct jv *v = xcalloc(1, sizeof *v);
	bool ok = false;
	if (ps->p >= ps->end) {
		ok = fail(ps, "unexpected end");
	} else if (*ps->p == '{' || *ps->p == '[') {
		v->t = *ps->p == '{' ? J_OBJ : J_ARR;
		ok = parse_members(ps, v, v->t == J_OBJ);
	} else if (*ps->p == '"') {
		struct buf s = {0};
		v->t = J_STR;
		ok = parse_string(ps, &s, &v->has_nul);
		v->s = s.p;
	} else if (*ps->p == 't' || *ps->p == 'f') {
		v->t = J_BOOL;
		v->b = *ps->p == 't';
		ok = parse_literal(ps, v->b ? "true" : "false");
	} else if (*ps->p == 'n') {
		ok = parse_literal(ps, "null");
	} else {
		ok = parse_number(ps, v);
	}
	ps->depth--;
	if (!ok) {
		json_free(v);
		return NULL;
	}
	return v;
}

struct jv *json_parse(const char *p, size_t n, struct err *e)
{
	struct parser ps = {.p = p, .end = p + n, .e = e};
	e->msg[0] = 0;
	struct jv *v = parse_value(&ps);
	if (!v)
		return NULL;
	skip_ws(&ps);
	if (ps.p != ps.end) {
		json_free(v);
		fail(&ps, "data after the value");
		return NULL;
	}
	return v;
}

void json_free(struct jv *v)
{
	while (v) {
		struct jv *next = v->next;
		json_free(v->child);
		free(v->key);
		free(v->s);
		free(v);
		v = next;
	}
}

/* json_get returns obj's member key (the last one, as Go keeps the last). */
struct jv *json_get(const struct jv *obj, const char *key)
{
	struct jv *found = NULL;
	if (!obj || obj->t != J_OBJ)
		return NULL;
	for (struct jv *m = obj->child; m; m = m->next)
		if (strcmp(m->key, key) == 0)
			found = m;
	return found;
}

static bool wrong_type(const char *key, const char *want, struct err *e)
{
	seterr(e, E_INVALID, "request: field %s: want %s", key, want);
	return false;
}

bool jfield_str(const struct jv *obj, const char *key, const char **out, struct err *e)
{
	struct jv *v = json_get(obj, key);
	if (!v || v->t == J_NULL)
		return true;
	if (v->t != J_STR)
		return wrong_type(key, "a string", e);
	if (v->has_nul)
		return wrong_type(key, "a string without NUL", e);
	*out = v->s;
	return true;
}

bool jfield_bool(const struct jv *obj, const char *key, bool *out, struct err *e)
{
	struct jv *v = json_get(obj, key);
	if (!v || v->t == J_NULL)
		return true;
	if (v->t != J_BOOL)
		return wrong_type(key, "a boolean", e);
	*out = v->b;
	return true;
}

bool jfield_int(const struct jv *obj, const char *key, long long *out, struct err *e)
{
	struct jv *v = json_get(obj, key);
	if (!v || v->t == J_NULL)
		return true;
	if (v->t != J_NUM || v->n != (double)(long long)v->n || v->n > 2147483647.0 || v->n < -2147483648.0)
		return wrong_type(key, "an integer", e);
	*out = (long long)v->n;
	return true;
}

/* jw_str writes s as a JSON string. */
void jw_str(struct buf *b, const char *s)
{
	buf_add(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char esc[8];
		switch (*p) {
		case '"':
			buf_add(b, "\\\"", 2);
			break;
		case '\\':
			buf_add(b, "\\\\", 2);
			break;
		case '\n':
			buf_add(b, "\\n", 2);
			break;
		case '\r':
			buf_add(b, "\\r", 2);
			break;
		case '\t':
			buf_add(b, "\\t", 2);
			break;
		default:
			if (*p < 0x20) {
				snprintf(esc, sizeof esc, "\\u%04x", *p);
				buf_adds(b, esc);
			} else {
				buf_add(b, p, 1);
			}
		}
	}
	buf_add(b, "\"", 1);
}
