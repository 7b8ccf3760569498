/*
 * kineto.c - streaming Kineto trace reader.
 *
 * Two layers: a splitter that walks the JSON text just far enough to find
 * the top-level keys and the boundaries of the events inside
 * `traceEvents` (strings and nesting only, no values), and on_event(),
 * which turns each event the adapter parsed into a compact struct
 * kt_event.  The splitter hands the adapter chunks of about 1 MiB of whole
 * events, in place: the delimiter before the first event becomes '[' and
 * the byte after the last one ']' for the duration of the call.
 */
#include "kineto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "kjson.h"

#define READ_BLOCK   (4u << 20)
#define CHUNK_TARGET (1u << 20)
#define SCAN_MORE    ((size_t)-1)
#define SCAN_BAD     ((size_t)-2)

enum top_state { ST_OPEN, ST_KEY, ST_COLON, ST_VALUE, ST_NEXT, ST_EVENTS, ST_DONE };

struct reader {
	const char *path;
	struct input *in;
	struct kjson_parser *kp;
	struct strtab *st;
	struct kineto_trace *tr;
	struct prism_err *err;
	char *buf;
	size_t cap, len, pos; /* buf[pos..len) is unread */
	uint64_t base;	      /* stream offset of buf[0] */
	int eof;
	int saw_events;	   /* a traceEvents array was found */
	uint64_t ev_index; /* events handed to on_event so far */
	uint32_t *tslot;   /* threads by (pid, tid, gpu): index + 1, 0 empty */
	size_t tcap;	   /* power of two */
	uint64_t tseed;
	char key[64];
};

const char *kineto_kind_name(int kind)
{
	static const char *const names[KT_NKINDS] = {
	    "cpu_op",	  "user_annotation", "python_function", "cuda_runtime",	       "kernel",
	    "gpu_memcpy", "gpu_memset",	     "cuda_sync",	"gpu_user_annotation",
	};
	return kind >= 0 && kind < KT_NKINDS ? names[kind] : "?";
}

/* ---- the splitter ------------------------------------------------------ */

/* Bytes the splitter stops at (strings and nesting), and those between
 * values (whitespace, ',', ':'); the rest are values (numbers, literals). */
static const unsigned char special[256] = {
    ['"'] = 1, ['{'] = 1, ['['] = 1, ['}'] = 1, [']'] = 1,
};
static const unsigned char between[256] = {
    [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1, [','] = 1, [':'] = 1,
};

static size_t skip_ws(const char *b, size_t i, size_t len)
{
	while (i < len && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t'))
		i++;
	return i;
}

/* b[i] == '"': index past the closing quote, or SCAN_MORE. */
static size_t scan_string(const char *b, size_t i, size_t len)
{
	i++;
	for (;;) {
		const char *q = memchr(b + i, '"', len - i);
		size_t j, k;
		if (!q)
			return SCAN_MORE;
		j = (size_t)(q - b);
		for (k = j; b[k - 1] == '\\'; k--)
			;
		if (((j - k) & 1) == 0)
			return j + 1;
		i = j + 1;
	}
}

/* b[i] is '{' or '[': index past the matching close, or SCAN_MORE.
 * Mismatched brackets are left for the JSON parser to report.  With check,
 * each value outside strings is checked on the way to be JSON (the JSON
 * parser looks only at those prism reads): SCAN_BAD when one is not. */
static size_t scan_compound(const char *b, size_t i, size_t len, int check)
{
	int depth = 0;

	while (i < len) {
		if (check)
			while (i < len && between[(unsigned char)b[i]])
				i++;
		else
			while (i < len && !special[(unsigned char)b[i]])
				i++;
		if (i >= len)
			break;
		if (!special[(unsigned char)b[i]]) {
			size_t n, e = i;
			/* The common value, a whole number, here (digits, the
			 * first not 0, then what may follow a value); the rest
			 * by kjson's grammar. */
			if (b[i] >= '1' && b[i] <= '9') {
				for (e = i + 1; e < len && b[e] >= '0' && b[e] <= '9'; e++)
					;
				if (e < len && b[e] != ':' &&
				    (between[(unsigned char)b[e]] || b[e] == '}' || b[e] == ']')) {
					i = e;
					continue;
				}
			}
			n = kjson_scalar_len(b + i, len - i);
			e = i;
			if (n == 0) {
				/* One cut by the end of what is read may end well. */
				while (e < len && !special[(unsigned char)b[e]] &&
				       !between[(unsigned char)b[e]])
					e++;
				return e == len ? SCAN_MORE : SCAN_BAD;
			}
			i += n;
			continue;
		}
		switch (b[i]) {
		case '"':
			i = scan_string(b, i, len);
			if (i == SCAN_MORE)
				return SCAN_MORE;
			continue;
		case '{':
		case '[':
			depth++;
			break;
		default:
			if (--depth == 0)
				return i + 1;
		}
		i++;
	}
	return SCAN_MORE;
}

/* Any JSON value at b[i]: index past it, or SCAN_MORE. */
static size_t scan_any(const char *b, size_t i, size_t len)
{
	if (b[i] == '{' || b[i] == '[')
		return scan_compound(b, i, len, 0);
	if (b[i] == '"')
		return scan_string(b, i, len);
	while (i < len && !strchr(",}] \t\r\n", b[i]))
		i++;
	return i < len ? i : SCAN_MORE;
}

static int fail_at(struct reader *r, uint64_t offset, const char *fmt, ...) PRISM_PRINTF(3, 4);
static int fail_at(struct reader *r, uint64_t offset, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return prism_err_set(r->err, PRISM_EFORMAT, "%s: byte %" PRIu64 ": %s", r->path, offset,
			     what);
}

/* Read more input behind buf[pos..len), moving that to the front first.
 * Returns bytes added, 0 at the end of input, or a negative code. */
static long fill(struct reader *r)
{
	long got;

	if (r->pos > 0) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->base += r->pos;
		r->len -= r->pos;
		r->pos = 0;
	}
	if (r->eof)
		return 0;
	if (r->len + READ_BLOCK + KJSON_PADDING > r->cap) {
		size_t ncap = r->cap * 2;
		char *nb;
		if (ncap < r->len + READ_BLOCK + KJSON_PADDING)
			ncap = r->len + READ_BLOCK + KJSON_PADDING;
		nb = prism_realloc(r->buf, ncap);
		if (!nb)
			return prism_err_set(r->err, PRISM_ENOMEM, "%s: out of memory", r->path);
		r->buf = nb;
		r->cap = ncap;
	}
	got = input_read(r->in, r->buf + r->len, READ_BLOCK, r->err);
	if (got < 0)
		return got;
	if (got == 0)
		r->eof = 1;
	r->len += (size_t)got;
	memset(r->buf + r->len, 0, KJSON_PADDING);
	return got;
}

static int on_event(void *ctx, const struct kjson_event *ev);

/* Parse buf[from..to] (delimiter, events, one byte after) as one chunk. */
static int flush(struct reader *r, size_t from, size_t to)
{
	struct kjson_fail fail;
	char c0 = r->buf[from], c1 = r->buf[to];
	uint64_t first = r->ev_index; /* the chunk's first event */
	int rc;

	r->buf[from] = '[';
	r->buf[to] = ']';
	rc = kjson_parse_events(r->kp, r->buf + from, to - from + 1, r->base + from, on_event, r,
				&fail);
	r->buf[from] = c0;
	r->buf[to] = c1;
	if (fail.nomem)
		return prism_err_set(r->err, PRISM_ENOMEM, "%s: out of memory", r->path);
	if (fail.what[0]) { /* the JSON's fault, not on_event's */
		if (fail.field[0])
			return prism_err_set(
			    r->err, PRISM_EFORMAT,
			    "%s: event %" PRIu64 " (byte %" PRIu64 "): field \"%s\": %s", r->path,
			    first + fail.event, fail.offset, fail.field, fail.what);
		return prism_err_set(r->err, PRISM_EFORMAT,
				     "%s: event %" PRIu64 " (byte %" PRIu64 "): %s", r->path,
				     first + fail.event, fail.offset, fail.what);
	}
	return rc;
}

/* The error of the value scan_compound found not JSON in the event at
 * buf[j], the event-th: kjson_check names it and the member holding it. */
static int bad_value(struct reader *r, size_t j, uint64_t event)
{
	struct kjson_fail fail;

	if (kjson_check(r->buf + j, r->len - j, r->base + j, &fail) == 0 || !fail.field[0])
		return prism_err_set(r->err, PRISM_EFORMAT,
				     "%s: event %" PRIu64 " (byte %" PRIu64 "): not JSON", r->path,
				     event, fail.offset ? fail.offset : r->base + j);
	return prism_err_set(r->err, PRISM_EFORMAT,
			     "%s: event %" PRIu64 " (byte %" PRIu64 "): field \"%s\": %s", r->path,
			     event, fail.offset, fail.field, fail.what);
}

/* More input, or the error of a traceEvents array cut short. */
static int more_events(struct reader *r)
{
	long got = fill(r);
	if (got < 0)
		return (int)got;
	if (got == 0)
		return fail_at(r, r->base + r->len,
			       "unexpected end of input inside \"traceEvents\" (truncated file?)");
	return 0;
}

/*
 * r->pos is at the '[' or ',' before the next event.  Consume events up to
 * and including the closing ']'.  Whitespace, however much, streams past:
 * what is held is the events of one chunk and the read block.
 */
static int read_events(struct reader *r)
{
	int after = 0; /* an event was parsed alone: ',' or ']' comes next */

	for (;;) {
		size_t delim, j, last_end = 0, last_delim = 0;
		size_t nev = 0;
		int rc;

		if (after) {
			size_t k = skip_ws(r->buf, r->pos, r->len);
			if (k == r->len) {
				r->pos = k; /* dropped */
				if ((rc = more_events(r)))
					return rc;
				continue;
			}
			if (r->buf[k] == ']') {
				r->pos = k + 1;
				return 0;
			}
			if (r->buf[k] != ',')
				return fail_at(r, r->base + k,
					       "expected ',' or ']' after event %" PRIu64,
					       r->ev_index - 1);
			r->pos = k;
			after = 0;
		}
		delim = r->pos;
		j = delim + 1;
		for (;;) {
			size_t e, k;
			j = skip_ws(r->buf, j, r->len);
			if (j == r->len) {
				/* Whitespace to the end of what is read: drop it,
				 * keeping the delimiter (a byte of it stands in). */
				if (nev == 0 && j > delim + 1) {
					r->buf[j - 1] = r->buf[delim];
					r->pos = delim = j - 1;
				}
				break;
			}
			if (r->buf[j] == ']' && nev == 0 && r->buf[delim] == '[') {
				if (r->ev_index == 0)
					return fail_at(r, r->base + j, "\"traceEvents\" is empty");
			}
			if (r->buf[j] != '{')
				return fail_at(r, r->base + j,
					       "event %" PRIu64 ": expected a JSON object",
					       r->ev_index + nev);
			e = scan_compound(r->buf, j, r->len, 1);
			if (e == SCAN_BAD)
				return bad_value(r, j, r->ev_index + nev);
			/* Checked whole or not, so that the limit does not
			 * depend on how the input was read. */
			if ((e == SCAN_MORE ? r->len : e) - j > KINETO_MAX_EVENT)
				return fail_at(r, r->base + j,
					       "event %" PRIu64 " is longer than %u bytes",
					       r->ev_index + nev, KINETO_MAX_EVENT);
			if (e == SCAN_MORE)
				break;
			k = skip_ws(r->buf, e, r->len);
			if (k == r->len) {
				/* Whitespace after a whole event to the end of what
				 * is read: parse the event alone now, then stream
				 * past the whitespace. */
				if (nev == 0) {
					if ((rc = flush(r, delim, e)))
						return rc;
					r->pos = e;
					after = 1;
				}
				break;
			}
			if (r->buf[k] == ',') {
				nev++;
				last_end = e;
				last_delim = k;
				if (k - delim >= CHUNK_TARGET)
					break;
				j = k + 1;
				continue;
			}
			if (r->buf[k] == ']') {
				rc = flush(r, delim, e);
				if (rc)
					return rc;
				r->pos = k + 1;
				return 0;
			}
			return fail_at(r, r->base + k, "expected ',' or ']' after event %" PRIu64,
				       r->ev_index + nev);
		}
		if (nev > 0) {
			rc = flush(r, delim, last_end);
			if (rc)
				return rc;
			r->pos = last_delim;
			if (last_delim - delim >= CHUNK_TARGET)
				continue; /* a full chunk, not a short buffer */
		}
		if ((rc = more_events(r)))
			return rc;
	}
}

/* A count of the top-level value at buf[i] (its member `name`) in 0..max:
 * 0, or the error naming it. */
static int top_count(struct reader *r, size_t i, const char *name, int64_t v, int64_t max)
{
	if (v >= 0 && v <= max)
		return 0;
	return fail_at(r, r->base + i, "field \"%s.%s\": %" PRId64 " is out of range 0..%" PRId64,
		       r->key, name, v, max);
}

static int read_top_value(struct reader *r, size_t i, size_t end)
{
	struct kjson_top top;
	struct kjson_fail fail;
	struct kineto_trace *tr = r->tr;
	char c = r->buf[end];
	int rc;

	/* Every value is parsed, those prism does not read only checked to be
	 * JSON. */
	memset(&top, 0, sizeof(top));
	r->buf[end] = ' ';
	rc = kjson_parse_top(r->kp, r->key, r->buf + i, end - i, r->base + i, &top, &fail);
	r->buf[end] = c;
	if (rc && fail.nomem)
		return prism_err_set(r->err, PRISM_ENOMEM, "%s: out of memory", r->path);
	if (rc)
		return prism_err_set(r->err, PRISM_EFORMAT,
				     "%s: byte %" PRIu64 ": field \"%s\": %s", r->path, fail.offset,
				     fail.field, fail.what);
	/* Counts within what a job may have, before a graph or a cost
	 * model takes them. */
	if ((top.has_world &&
	     (rc = top_count(r, i, "world_size", top.world_size, KINETO_MAX_RANKS))) ||
	    (top.has_rank && (rc = top_count(r, i, "rank", top.rank, KINETO_MAX_RANKS - 1))))
		return rc;
	for (size_t k = 0; k < top.npg; k++)
		if ((rc = top_count(r, i, "pg_config[].pg_size", top.pg[k].size, KINETO_MAX_RANKS)))
			return rc;
	if (top.has_rank) {
		tr->has_rank = 1;
		tr->rank = top.rank;
	}
	if (top.has_world) {
		tr->has_world = 1;
		tr->world_size = top.world_size;
	}
	if (top.has_base) {
		tr->has_base = 1;
		tr->base_ns = top.base_ns;
	}
	if (top.backend.p &&
	    (rc = strtab_intern(r->st, top.backend.p, top.backend.n, &tr->backend)))
		return prism_err_set(r->err, rc, "%s: out of memory", r->path);
	if (top.device_name.p &&
	    (rc = strtab_intern(r->st, top.device_name.p, top.device_name.n, &tr->device_name)))
		return prism_err_set(r->err, rc, "%s: out of memory", r->path);
	if (top.device_mem)
		tr->device_mem = top.device_mem;
	for (size_t k = 0; k < top.npg; k++) {
		struct kt_pg pg = {0, 0, 0, top.pg[k].size};
		if (strtab_intern(r->st, top.pg[k].name.p ? top.pg[k].name.p : "", top.pg[k].name.n,
				  &pg.name) ||
		    strtab_intern(r->st, top.pg[k].desc.p ? top.pg[k].desc.p : "", top.pg[k].desc.n,
				  &pg.desc) ||
		    strtab_intern(r->st, top.pg[k].ranks.p ? top.pg[k].ranks.p : "",
				  top.pg[k].ranks.n, &pg.ranks) ||
		    VEC_PUSH(tr->pgs, pg))
			return prism_err_set(r->err, PRISM_ENOMEM, "%s: out of memory", r->path);
	}
	return 0;
}

/* The top-level object: keys, and traceEvents streamed by read_events. */
static int read_stream(struct reader *r)
{
	enum top_state state = ST_OPEN;
	long got;

	if ((got = fill(r)) < 0)
		return (int)got;
	for (;;) {
		size_t i = skip_ws(r->buf, r->pos, r->len), e;
		int rc;

		if (i == r->len) {
			r->pos = i;
			if ((got = fill(r)) < 0)
				return (int)got;
			if (got == 0)
				break;
			continue;
		}
		switch (state) {
		case ST_OPEN:
			if (r->buf[i] == '[') { /* the JSON Array Format of Chrome traces */
				r->pos = i;
				if ((rc = read_events(r)))
					return rc;
				r->saw_events = 1;
				state = ST_DONE;
				continue;
			}
			if (r->buf[i] != '{')
				return fail_at(
				    r, r->base + i,
				    "not a JSON object (a Chrome trace starts with '{')");
			r->pos = i + 1;
			state = ST_KEY;
			continue;
		case ST_KEY:
			if (r->buf[i] == '}') {
				r->pos = i + 1;
				state = ST_DONE;
				continue;
			}
			if (r->buf[i] != '"')
				return fail_at(r, r->base + i,
					       "expected a key in the top-level object");
			e = scan_string(r->buf, i, r->len);
			break;
		case ST_COLON:
			if (r->buf[i] != ':')
				return fail_at(r, r->base + i, "expected ':' after key \"%s\"",
					       r->key);
			r->pos = i + 1;
			state = ST_VALUE;
			continue;
		case ST_VALUE:
			if (strcmp(r->key, "traceEvents") == 0) {
				if (r->buf[i] != '[')
					return fail_at(r, r->base + i,
						       "field \"traceEvents\": expected an array");
				r->pos = i;
				if ((rc = read_events(r)))
					return rc;
				r->saw_events = 1;
				state = ST_NEXT;
				continue;
			}
			e = scan_any(r->buf, i, r->len);
			break;
		case ST_NEXT:
			if (r->buf[i] == ',') {
				r->pos = i + 1;
				state = ST_KEY;
			} else if (r->buf[i] == '}') {
				r->pos = i + 1;
				state = ST_DONE;
			} else {
				return fail_at(r, r->base + i,
					       "expected ',' or '}' in the top-level object");
			}
			continue;
		case ST_DONE:
		default:
			return fail_at(r, r->base + i, "unexpected data after the end of the JSON");
		}
		/* A key or a value at i that may need more input. */
		if ((e == SCAN_MORE ? r->len : e) - i > KINETO_MAX_TOP)
			return fail_at(r, r->base + i, "%s longer than %u bytes",
				       state == ST_KEY ? "a top-level key is"
						       : "the value of a top-level key is",
				       KINETO_MAX_TOP);
		if (e == SCAN_MORE) {
			r->pos = i;
			if ((got = fill(r)) < 0)
				return (int)got;
			if (got == 0)
				break;
			continue;
		}
		if (state == ST_KEY) {
			size_t n = e - i - 2;
			if (n >= sizeof(r->key))
				n = sizeof(r->key) - 1;
			memcpy(r->key, r->buf + i + 1, n);
			r->key[n] = '\0';
			state = ST_COLON;
		} else {
			if ((rc = read_top_value(r, i, e)))
				return rc;
			state = ST_NEXT;
		}
		r->pos = e;
	}
	if (state != ST_DONE)
		return fail_at(r, r->base + r->len, "unexpected end of input (truncated file?)");
	if (!r->saw_events)
		return fail_at(r, 0, "no \"traceEvents\" array: not a Kineto/Chrome trace");
	return 0;
}

/* ---- events ------------------------------------------------------------ */

static int ev_fail(struct reader *r, const struct kjson_event *ev, const char *field,
		   const char *fmt, ...) PRISM_PRINTF(4, 5);
static int ev_fail(struct reader *r, const struct kjson_event *ev, const char *field,
		   const char *fmt, ...)
{
	char what[200];
	char name[80] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (ev->name.type == KJSON_STR)
		snprintf(name, sizeof(name), " '%.*s'",
			 (int)(ev->name.s.n > 60 ? 60 : ev->name.s.n), ev->name.s.p);
	if (field)
		return prism_err_set(r->err, PRISM_EFORMAT,
				     "%s: event %" PRIu64 " (byte %" PRIu64 ")%s: field \"%s\": %s",
				     r->path, r->ev_index, ev->offset, name, field, what);
	return prism_err_set(r->err, PRISM_EFORMAT,
			     "%s: event %" PRIu64 " (byte %" PRIu64 ")%s: %s", r->path, r->ev_index,
			     ev->offset, name, what);
}

static const char *type_name(int t)
{
	static const char *const n[] = {"nothing", "an integer", "a number", "a string",
					"null",	   "a boolean",	 "an array", "an object"};
	return t >= 0 && t <= KJSON_OBJECT ? n[t] : "?";
}

static int str_is(const struct kjson_val *v, const char *s)
{
	size_t n = strlen(s);
	return v->type == KJSON_STR && v->s.n == n && memcmp(v->s.p, s, n) == 0;
}

static int str_prefix(const char *p, size_t n, const char *s)
{
	size_t k = strlen(s);
	return n >= k && memcmp(p, s, k) == 0;
}

/* A time field (ts, dur) in microseconds -> nanoseconds. */
static int get_time(struct reader *r, const struct kjson_event *ev, const struct kjson_val *v,
		    const char *field, int64_t *out)
{
	if (v->type == KJSON_ABSENT)
		return ev_fail(r, ev, NULL, "missing \"%s\"", field);
	if (v->type != KJSON_INT && v->type != KJSON_FRAC)
		return ev_fail(r, ev, field, "expected a number, got %s", type_name(v->type));
	if (v->milli > PRISM_TIME_MAX || v->milli < -PRISM_TIME_MAX)
		return ev_fail(r, ev, field, "value out of range (more than %" PRId64 " us)",
			       PRISM_TIME_MAX / 1000);
	*out = v->milli;
	return 0;
}

/* An optional integer arg; KT_NO_ID when absent. */
static int get_int_arg(struct reader *r, const struct kjson_event *ev, int arg, const char *field,
		       int64_t *out)
{
	const struct kjson_val *v = &ev->args[arg];
	*out = KT_NO_ID;
	if (v->type == KJSON_ABSENT || v->type == KJSON_NULL)
		return 0;
	if (v->type == KJSON_STR && arg == KJSON_ARG_STREAM) {
		/* A stream written as a string: ROCm 6.2 gives HIP runtime
		 * events' as "0x0". */
		char buf[32], *end;
		long long x;
		if (v->s.n == 0 || v->s.n >= sizeof(buf))
			return ev_fail(r, ev, field, "expected an integer, got \"%.*s\"",
				       (int)(v->s.n < 24 ? v->s.n : 24), v->s.p);
		memcpy(buf, v->s.p, v->s.n);
		buf[v->s.n] = '\0';
		errno = 0;
		x = strtoll(buf, &end, 0);
		if (*end || errno || x < 0)
			return ev_fail(r, ev, field, "expected an integer, got \"%s\"", buf);
		*out = x;
		return 0;
	}
	if (v->type != KJSON_INT)
		return ev_fail(r, ev, field, "expected an integer, got %s", type_name(v->type));
	*out = v->i;
	return 0;
}

/* pid/tid as an integer: numbers, numeric strings, "stream 7"; other
 * strings map to a reserved negative range by their interned id. */
static int id_of(struct reader *r, const struct kjson_val *v, int64_t *out)
{
	if (v->type == KJSON_INT) {
		*out = v->i;
		return 0;
	}
	if (v->type == KJSON_STR) {
		const char *p = v->s.p;
		size_t n = v->s.n, k = 0;
		int64_t x = 0;
		uint32_t id;
		if (str_prefix(p, n, "stream "))
			k = 7;
		if (k < n) {
			size_t d = k;
			while (d < n && p[d] >= '0' && p[d] <= '9' && x < INT64_MAX / 10)
				x = x * 10 + (p[d++] - '0');
			if (d == n && d > k) {
				*out = x;
				return 0;
			}
		}
		if (strtab_intern(r->st, p, n, &id))
			return PRISM_ENOMEM;
		*out = -((int64_t)1 << 40) - (int64_t)id;
		return 0;
	}
	*out = -1;
	return 0;
}

/* The slot of (pid, tid, gpu) in the reader's thread table: the whole key
 * is hashed and compared, so distinct threads never share an entry, and
 * the table's seed keeps crafted ids from sharing a chain. */
static size_t thread_slot(const struct reader *r, int64_t pid, int64_t tid, int gpu, size_t cap)
{
	uint64_t h = prism_mix64((uint64_t)pid + r->tseed);
	return (size_t)prism_mix64(h ^ ((uint64_t)tid * 2u + (uint64_t)gpu)) & (cap - 1);
}

static int thread_of(struct reader *r, int64_t pid, int64_t tid, int gpu, uint32_t *out)
{
	struct kineto_trace *tr = r->tr;
	struct kt_thread t = {pid, tid, (uint8_t)gpu};
	size_t i;

	if (r->tcap) {
		for (i = thread_slot(r, pid, tid, gpu, r->tcap); r->tslot[i];
		     i = (i + 1) & (r->tcap - 1)) {
			const struct kt_thread *c = &tr->threads.v[r->tslot[i] - 1];
			if (c->pid == pid && c->tid == tid && c->gpu == gpu) {
				*out = r->tslot[i] - 1;
				return 0;
			}
		}
	}
	if ((tr->threads.n + 1) * 2 > r->tcap) {
		size_t ncap = r->tcap ? r->tcap * 2 : 64;
		uint32_t *ns = prism_calloc(ncap, sizeof(*ns));
		if (!ns)
			return PRISM_ENOMEM;
		if (!r->tcap)
			r->tseed = prism_hash_seed();
		for (size_t k = 0; k < tr->threads.n; k++) {
			const struct kt_thread *c = &tr->threads.v[k];
			for (i = thread_slot(r, c->pid, c->tid, c->gpu, ncap); ns[i];
			     i = (i + 1) & (ncap - 1))
				;
			ns[i] = (uint32_t)k + 1;
		}
		free(r->tslot);
		r->tslot = ns;
		r->tcap = ncap;
	}
	if (VEC_PUSH(tr->threads, t))
		return PRISM_ENOMEM;
	*out = (uint32_t)(tr->threads.n - 1);
	for (i = thread_slot(r, pid, tid, gpu, r->tcap); r->tslot[i]; i = (i + 1) & (r->tcap - 1))
		;
	r->tslot[i] = *out + 1;
	return 0;
}

/* Product of the first shape in an "Input Dims" array, or -1. */
static int64_t first_dims_nelems(const struct kjson_str *s)
{
	const char *p = s->p, *end = s->p + s->n;
	int64_t prod = 1;
	int any = 0;

	while (p < end && *p != '[')
		p++;
	p++;
	while (p < end && (*p == ' ' || *p == '\n'))
		p++;
	if (p >= end || *p != '[')
		return -1;
	for (p++; p < end && *p != ']'; p++) {
		if (*p >= '0' && *p <= '9') {
			int64_t x = 0;
			while (p < end && *p >= '0' && *p <= '9') {
				if (x > (INT64_MAX - 9) / 10)
					return -1; /* no tensor has 2^63 elements */
				x = x * 10 + (*p++ - '0');
			}
			if (x > 0 && prod > INT64_MAX / x)
				return -1;
			prod *= x;
			any = 1;
			p--;
		}
	}
	return any ? prod : -1;
}

/* First string of a JSON array of strings, e.g. "Input type". */
static struct kjson_str first_string(const struct kjson_str *s)
{
	struct kjson_str out = {"", 0};
	const char *p = memchr(s->p, '"', s->n), *q;
	if (p) {
		q = memchr(p + 1, '"', s->n - (size_t)(p + 1 - s->p));
		if (q) {
			out.p = p + 1;
			out.n = (size_t)(q - p - 1);
		}
	}
	return out;
}

static int intern_val(struct reader *r, const struct kjson_val *v, uint32_t *out)
{
	char tmp[32];
	*out = 0;
	if (v->type == KJSON_STR)
		return strtab_intern(r->st, v->s.p, strnlen(v->s.p, v->s.n), out);
	if (v->type == KJSON_INT) {
		int n = snprintf(tmp, sizeof(tmp), "%" PRId64, v->i);
		return strtab_intern(r->st, tmp, (size_t)n, out);
	}
	return 0;
}

static int is_comm_op(const struct kjson_event *ev)
{
	const char *p = ev->name.s.p;
	size_t n = ev->name.s.n;
	if (ev->name.type != KJSON_STR)
		return 0;
	return str_prefix(p, n, "c10d::") || str_prefix(p, n, "nccl:") ||
	       (n == 18 && memcmp(p, "record_param_comms", 18) == 0);
}

static int add_comm(struct reader *r, const struct kjson_event *ev, struct kt_event *out)
{
	const struct kjson_val *a = ev->args;
	struct kt_comm c;
	int has = a[KJSON_ARG_COLL_NAME].type || a[KJSON_ARG_IN_NELEMS].type ||
		  a[KJSON_ARG_GROUP_SIZE].type || a[KJSON_ARG_PG_NAME].type ||
		  a[KJSON_ARG_PG_ID].type || a[KJSON_ARG_PG_RANKS].type;
	int rc = 0;

	if (!has && !(a[KJSON_ARG_INPUT_DIMS].type == KJSON_ARRAY && is_comm_op(ev)))
		return 0;
	memset(&c, 0, sizeof(c));
	c.in_nelems = a[KJSON_ARG_IN_NELEMS].type == KJSON_INT ? a[KJSON_ARG_IN_NELEMS].i : -1;
	c.out_nelems = a[KJSON_ARG_OUT_NELEMS].type == KJSON_INT ? a[KJSON_ARG_OUT_NELEMS].i : -1;
	c.group_size = a[KJSON_ARG_GROUP_SIZE].type == KJSON_INT ? a[KJSON_ARG_GROUP_SIZE].i : -1;
	c.dims_nelems = a[KJSON_ARG_INPUT_DIMS].type == KJSON_ARRAY
			    ? first_dims_nelems(&a[KJSON_ARG_INPUT_DIMS].s)
			    : -1;
	rc |= intern_val(r, &a[KJSON_ARG_COLL_NAME], &c.coll);
	if (!c.coll && is_comm_op(ev)) /* "nccl:all_to_all" says what it is */
		rc |= strtab_intern(r->st, ev->name.s.p, ev->name.s.n, &c.coll);
	if (a[KJSON_ARG_DTYPE].type == KJSON_STR) {
		rc |= intern_val(r, &a[KJSON_ARG_DTYPE], &c.dtype);
	} else if (a[KJSON_ARG_INPUT_TYPE].type == KJSON_ARRAY) {
		struct kjson_str s = first_string(&a[KJSON_ARG_INPUT_TYPE].s);
		rc |= strtab_intern(r->st, s.p, s.n, &c.dtype);
	}
	rc |= intern_val(r, a[KJSON_ARG_PG_NAME].type ? &a[KJSON_ARG_PG_NAME] : &a[KJSON_ARG_PG_ID],
			 &c.pg_name);
	rc |= intern_val(r, &a[KJSON_ARG_PG_DESC], &c.pg_desc);
	rc |= intern_val(r, &a[KJSON_ARG_PG_RANKS], &c.pg_ranks);
	if (rc || VEC_PUSH(r->tr->comms, c))
		return PRISM_ENOMEM;
	out->comm = (uint32_t)(r->tr->comms.n - 1);
	return 0;
}

static int kind_of_cat(const struct kjson_val *cat)
{
	const char *p = cat->s.p;
	size_t n = cat->s.n;

	if (cat->type != KJSON_STR)
		return -1;
#define IS(s) (n == sizeof(s) - 1 && memcmp(p, s, n) == 0)
	if (IS("cpu_op") || IS("Operator"))
		return KT_CPU_OP;
	if (IS("cuda_runtime") || IS("Runtime") || IS("cuda_driver"))
		return KT_RUNTIME;
	if (IS("kernel") || IS("Kernel"))
		return KT_KERNEL;
	if (IS("user_annotation"))
		return KT_USER_ANN;
	if (IS("gpu_memcpy") || IS("Memcpy"))
		return KT_MEMCPY;
	if (IS("gpu_memset") || IS("Memset"))
		return KT_MEMSET;
	if (IS("python_function"))
		return KT_PY_FUNC;
	if (IS("cuda_sync"))
		return KT_CUDA_SYNC;
	if (IS("gpu_user_annotation"))
		return KT_GPU_ANN;
#undef IS
	return -1;
}

static int sync_kind_of(const struct kjson_val *v)
{
	if (v->type != KJSON_STR)
		return KT_SYNC_NONE;
	if (str_is(v, "Stream Wait Event"))
		return KT_SYNC_STREAM_WAIT_EVENT;
	if (str_is(v, "Event Sync"))
		return KT_SYNC_EVENT;
	if (str_is(v, "Stream Sync"))
		return KT_SYNC_STREAM;
	if (str_is(v, "Context Sync"))
		return KT_SYNC_CONTEXT;
	return KT_SYNC_OTHER;
}

static int on_complete(struct reader *r, const struct kjson_event *ev)
{
	struct kineto_trace *tr = r->tr;
	struct kt_event e;
	int64_t pid, tid, dev, stream;
	int kind, gpu, rc;

	memset(&e, 0, sizeof(e));
	if ((rc = get_time(r, ev, &ev->ts, "ts", &e.ts_ns)) ||
	    (rc = get_time(r, ev, &ev->dur, "dur", &e.dur_ns)))
		return rc;
	if (e.dur_ns < 0)
		return ev_fail(r, ev, "dur", "negative duration (%" PRId64 " ns)", e.dur_ns);
	/* Both within +-PRISM_TIME_MAX: the sum cannot overflow. */
	if (e.ts_ns + e.dur_ns > PRISM_TIME_MAX)
		return ev_fail(r, ev, "dur", "the event ends beyond %" PRId64 " us",
			       PRISM_TIME_MAX / 1000);
	tr->counts[KT_N_X]++;
	kind = kind_of_cat(&ev->cat);
	if (kind < 0) {
		if (str_is(&ev->cat, "Trace")) {
			tr->window_start_ns = e.ts_ns;
			tr->window_end_ns = e.ts_ns + e.dur_ns;
		}
		tr->counts[KT_N_OTHER_X]++;
		return 0;
	}
	if (ev->name.type != KJSON_ABSENT && ev->name.type != KJSON_STR)
		return ev_fail(r, ev, "name", "expected a string, got %s",
			       type_name(ev->name.type));
	if (ev->name.type == KJSON_STR && ev->name.s.n > KINETO_MAX_NAME)
		return ev_fail(r, ev, "name", "%zu bytes long, more than %u", ev->name.s.n,
			       KINETO_MAX_NAME);
	if ((ev->pid.type == KJSON_STR && ev->pid.s.n > KINETO_MAX_NAME) ||
	    (ev->tid.type == KJSON_STR && ev->tid.s.n > KINETO_MAX_NAME))
		return ev_fail(r, ev,
			       ev->pid.type == KJSON_STR && ev->pid.s.n > KINETO_MAX_NAME ? "pid"
											  : "tid",
			       "longer than %u bytes", KINETO_MAX_NAME);
	if ((rc = get_int_arg(r, ev, KJSON_ARG_CORRELATION, "correlation", &e.corr)) ||
	    (rc = get_int_arg(r, ev, KJSON_ARG_EXTERNAL_ID, "External id", &e.ext)) ||
	    (rc = get_int_arg(r, ev, KJSON_ARG_STREAM, "stream", &stream)) ||
	    (rc = get_int_arg(r, ev, KJSON_ARG_DEVICE, "device", &dev)))
		return rc;
	if (e.ext == KT_NO_ID &&
	    (rc = get_int_arg(r, ev, KJSON_ARG_EXTERNAL_ID_OLD, "external id", &e.ext)))
		return rc;
	/* A group of 2^40 ranks became an int of the cost model's. */
	if (ev->args[KJSON_ARG_GROUP_SIZE].type == KJSON_INT &&
	    (ev->args[KJSON_ARG_GROUP_SIZE].i < 0 ||
	     ev->args[KJSON_ARG_GROUP_SIZE].i > KINETO_MAX_RANKS))
		return ev_fail(r, ev, "Group size", "%" PRId64 " is out of range 0..%d",
			       ev->args[KJSON_ARG_GROUP_SIZE].i, KINETO_MAX_RANKS);
	if (id_of(r, &ev->pid, &pid) || id_of(r, &ev->tid, &tid))
		return prism_err_set(r->err, PRISM_ENOMEM, "%s: out of memory", r->path);
	gpu = kind == KT_KERNEL || kind == KT_MEMCPY || kind == KT_MEMSET || kind == KT_CUDA_SYNC ||
	      kind == KT_GPU_ANN;
	if (gpu) {
		if (dev != KT_NO_ID)
			pid = dev;
		if (stream != KT_NO_ID)
			tid = stream;
		e.a = tid;
	}
	if ((kind == KT_KERNEL || kind == KT_MEMCPY || kind == KT_MEMSET) && e.corr == KT_NO_ID)
		return ev_fail(r, ev, NULL, "GPU event without \"correlation\" in args");
	switch (kind) {
	case KT_MEMCPY:
	case KT_MEMSET:
		e.b =
		    ev->args[KJSON_ARG_BYTES].type == KJSON_INT ? ev->args[KJSON_ARG_BYTES].i : -1;
		break;
	case KT_CUDA_SYNC:
		e.sync = (uint8_t)sync_kind_of(&ev->args[KJSON_ARG_SYNC_KIND]);
		if ((rc = get_int_arg(r, ev, KJSON_ARG_WAIT_STREAM, "wait_on_stream", &e.b)) ||
		    (rc = get_int_arg(r, ev, KJSON_ARG_WAIT_RECORD_CORR,
				      "wait_on_cuda_event_record_corr_id", &e.c)))
			return rc;
		e.a = stream;
		break;
	case KT_CPU_OP:
	case KT_USER_ANN:
		/* Shapes, kept as written: the cost model parses the few ops it
		 * needs (GEMMs) and the rest is interned once per distinct text. */
		if (ev->args[KJSON_ARG_INPUT_DIMS].type == KJSON_ARRAY &&
		    strtab_intern(r->st, ev->args[KJSON_ARG_INPUT_DIMS].s.p,
				  ev->args[KJSON_ARG_INPUT_DIMS].s.n, &e.dims))
			return prism_err_set(r->err, PRISM_ENOMEM, "%s: out of memory", r->path);
		if (ev->args[KJSON_ARG_INPUT_TYPE].type == KJSON_ARRAY &&
		    strtab_intern(r->st, ev->args[KJSON_ARG_INPUT_TYPE].s.p,
				  ev->args[KJSON_ARG_INPUT_TYPE].s.n, &e.types))
			return prism_err_set(r->err, PRISM_ENOMEM, "%s: out of memory", r->path);
		e.a = ev->args[KJSON_ARG_SEQ].type == KJSON_INT ? ev->args[KJSON_ARG_SEQ].i : -1;
		e.b = ev->args[KJSON_ARG_FWD_TID].type == KJSON_INT ? ev->args[KJSON_ARG_FWD_TID].i
								    : -1;
		break;
	case KT_RUNTIME:
		e.a = ev->args[KJSON_ARG_CBID].type == KJSON_INT ? ev->args[KJSON_ARG_CBID].i : -1;
		break;
	}
	e.comm = UINT32_MAX;
	if ((rc = thread_of(r, pid, tid, gpu, &e.thread)) ||
	    (rc = strtab_intern(r->st, ev->name.s.p ? ev->name.s.p : "",
				ev->name.s.p ? strnlen(ev->name.s.p, ev->name.s.n) : 0, &e.name)) ||
	    (rc = add_comm(r, ev, &e)))
		return prism_err_set(r->err, rc, "%s: out of memory", r->path);
	if (r->ev_index > UINT32_MAX)
		return prism_err_set(r->err, PRISM_ELIMIT, "%s: more than 2^32 events", r->path);
	e.index = (uint32_t)r->ev_index;
	e.kind = (uint8_t)kind;
	if (VEC_PUSH(tr->events, e))
		return prism_err_set(r->err, PRISM_ENOMEM, "%s: out of memory", r->path);
	tr->counts[KT_N_KEPT]++;
	tr->kind_counts[kind]++;
	return 0;
}

static int on_event(void *ctx, const struct kjson_event *ev)
{
	struct reader *r = ctx;
	struct kineto_trace *tr = r->tr;
	int rc = 0;

	tr->counts[KT_N_EVENTS]++;
	if (ev->ph.type == KJSON_ABSENT)
		rc = ev_fail(r, ev, NULL, "missing \"ph\"");
	else if (ev->ph.type != KJSON_STR || ev->ph.s.n == 0)
		rc = ev_fail(r, ev, "ph", "expected a one-letter string, got %s",
			     type_name(ev->ph.type));
	else {
		switch (ev->ph.s.p[0]) {
		case 'X':
			rc = on_complete(r, ev);
			break;
		case 'i':
		case 'I':
			tr->counts[KT_N_INSTANT]++;
			break;
		case 's':
			tr->counts[KT_N_FLOW_S]++;
			break;
		case 'f':
			tr->counts[KT_N_FLOW_F]++;
			break;
		case 'M':
			tr->counts[KT_N_META]++;
			break;
		default:
			tr->counts[KT_N_OTHER_PH]++;
		}
	}
	r->ev_index++;
	return rc;
}

static int read_input(struct input *in, const char *path, struct strtab *st,
		      struct kineto_trace *tr, struct prism_err *err);

int kineto_read(const char *path, struct strtab *st, struct kineto_trace *tr, struct prism_err *err)
{
	struct input *in;
	int rc;

	memset(tr, 0, sizeof(*tr));
	tr->path = path;
	if ((rc = input_open(path, &in, err)))
		return rc;
	return read_input(in, path, st, tr, err);
}

int kineto_read_mem(const void *data, size_t len, const char *name, struct strtab *st,
		    struct kineto_trace *tr, struct prism_err *err)
{
	struct input *in;
	int rc;

	memset(tr, 0, sizeof(*tr));
	tr->path = name;
	if ((rc = input_open_mem(data, len, name, &in, err)))
		return rc;
	return read_input(in, name, st, tr, err);
}

/* baseTimeNanoseconds onto every time; each stays within +-PRISM_TIME_MAX
 * (base and times are each within it, so the sums cannot overflow). */
static int apply_base(struct kineto_trace *tr, struct prism_err *err)
{
	int64_t base = tr->base_ns;

	if (base > PRISM_TIME_MAX || base < -PRISM_TIME_MAX)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: field \"baseTimeNanoseconds\": %" PRId64
				     " is out of range (more than %" PRId64 " ns)",
				     tr->path, base, PRISM_TIME_MAX);
	for (size_t k = 0; k < tr->events.n; k++) {
		struct kt_event *e = &tr->events.v[k];
		int64_t ts = e->ts_ns + base;
		if (ts < -PRISM_TIME_MAX || ts > PRISM_TIME_MAX - e->dur_ns)
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s: event %" PRIu32 ": \"ts\" + \"dur\" + "
					     "baseTimeNanoseconds is beyond %" PRId64 " ns",
					     tr->path, e->index, PRISM_TIME_MAX);
		e->ts_ns = ts;
	}
	if (tr->window_start_ns != INT64_MIN) {
		int64_t ws = tr->window_start_ns + base, we = tr->window_end_ns + base;
		if (ws < -PRISM_TIME_MAX || we > PRISM_TIME_MAX)
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s: the profiler window + baseTimeNanoseconds is "
					     "beyond %" PRId64 " ns",
					     tr->path, PRISM_TIME_MAX);
		tr->window_start_ns = ws;
		tr->window_end_ns = we;
	}
	return 0;
}

/* Read the whole stream in (which it frees) into tr. */
static int read_input(struct input *in, const char *path, struct strtab *st,
		      struct kineto_trace *tr, struct prism_err *err)
{
	struct reader r;
	int rc;

	tr->window_start_ns = tr->window_end_ns = INT64_MIN;
	memset(&r, 0, sizeof(r));
	r.path = path;
	r.st = st;
	r.tr = tr;
	r.err = err;
	r.in = in;
	r.kp = kjson_new();
	if (!r.kp) {
		input_free(r.in);
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	}
	rc = read_stream(&r);
	tr->json_bytes = r.base + r.len;
	if (rc == 0 && tr->has_base)
		rc = apply_base(tr, err);
	kjson_free(r.kp);
	input_free(r.in);
	free(r.buf);
	free(r.tslot);
	return rc;
}

int kineto_split(struct kineto_trace *tr, struct kineto_trace **out, size_t *n)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	struct kineto_trace *v;
	uint32_t *tmap = NULL;
	size_t nr;

	*out = NULL;
	*n = 0;
	if (tr->has_rank || !tr->has_world || tr->world_size < 2 || !tr->threads.n)
		return 0;
	for (size_t t = 0; t < tr->threads.n; t++) {
		int64_t r = tr->threads.v[t].pid / TIMELINE_RANK_PID - 1;
		if (tr->threads.v[t].pid < TIMELINE_RANK_PID || r >= tr->world_size)
			continue; /* its own process (the critical path): passed by */
		lo = r < lo ? r : lo;
		hi = r > hi ? r : hi;
	}
	/* Not a prism timeline of several ranks: one rank, or more ranks than
	 * threads (each rank of one has its threads; a crafted pid asks for
	 * a trace per rank up to 2^40). */
	if (lo == INT64_MAX || lo == hi || (uint64_t)(hi - lo) >= tr->threads.n)
		return 0;
	nr = (size_t)(hi - lo + 1);
	if (!(v = prism_calloc(nr, sizeof(*v))) ||
	    !(tmap = prism_malloc(tr->threads.n * sizeof(*tmap)))) {
		free(v);
		return PRISM_ENOMEM;
	}
	for (size_t k = 0; k < nr; k++) {
		v[k] = *tr;
		memset(&v[k].events, 0, sizeof(v[k].events));
		memset(&v[k].threads, 0, sizeof(v[k].threads));
		memset(&v[k].comms, 0, sizeof(v[k].comms));
		memset(&v[k].pgs, 0, sizeof(v[k].pgs));
		v[k].has_rank = 1;
		v[k].rank = lo + (int64_t)k;
	}
	for (size_t t = 0; t < tr->threads.n; t++) {
		struct kt_thread x = tr->threads.v[t];
		int64_t r = x.pid / TIMELINE_RANK_PID - 1;
		struct kineto_trace *d;
		tmap[t] = UINT32_MAX;
		if (x.pid < TIMELINE_RANK_PID || r < lo || r > hi)
			continue;
		d = &v[r - lo];
		x.pid %= TIMELINE_RANK_PID;
		tmap[t] = (uint32_t)d->threads.n;
		if (VEC_PUSH(d->threads, x))
			goto oom;
	}
	for (size_t k = 0; k < nr; k++) {
		/* The job's process groups (at most KJSON_MAX_PG): every rank
		 * keeps them all. */
		if (VEC_RESERVE(v[k].pgs, tr->pgs.n + 1))
			goto oom;
		if (tr->pgs.n)
			memcpy(v[k].pgs.v, tr->pgs.v, tr->pgs.n * sizeof(*tr->pgs.v));
		v[k].pgs.n = tr->pgs.n;
	}
	for (size_t i = 0; i < tr->events.n; i++) {
		struct kt_event e = tr->events.v[i];
		struct kineto_trace *d;
		if (e.thread >= tr->threads.n || tmap[e.thread] == UINT32_MAX)
			continue;
		d = &v[tr->threads.v[e.thread].pid / TIMELINE_RANK_PID - 1 - lo];
		e.thread = tmap[e.thread];
		/* An event's communication goes with it to its rank (each rank
		 * a copy of all of them would be ranks x events). */
		if (e.comm != UINT32_MAX && e.comm < tr->comms.n) {
			if (VEC_PUSH(d->comms, tr->comms.v[e.comm]))
				goto oom;
			e.comm = (uint32_t)(d->comms.n - 1);
		} else {
			e.comm = UINT32_MAX;
		}
		if (VEC_PUSH(d->events, e))
			goto oom;
	}
	free(tmap);
	kineto_release(tr);
	*out = v;
	*n = nr;
	return 0;
oom:
	for (size_t k = 0; k < nr; k++)
		kineto_release(&v[k]);
	free(v);
	free(tmap);
	return PRISM_ENOMEM;
}

void kineto_release(struct kineto_trace *tr)
{
	VEC_FREE(tr->events);
	VEC_FREE(tr->threads);
	VEC_FREE(tr->comms);
	VEC_FREE(tr->pgs);
}
