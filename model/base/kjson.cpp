/*
 * kjson.cpp - simdjson On-Demand adapter behind kjson.h.
 *
 * This is the only C++ in prism.  It knows JSON, not traces: it pulls the
 * fields named in kjson.h out of each event object and hands them to C.
 * Values prism does not read are skipped by the On-Demand iterator without
 * being materialised.
 */
#include "kjson.h"

#include <simdjson.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

using namespace simdjson;

struct kjson_parser {
	ondemand::parser parser;
};

extern "C" void *prism_malloc(size_t n); /* prism.h */

/*
 * Every C++ allocation goes through prism_malloc: the global operator new
 * and delete are replaced (the C++ standard provides for it), so that
 * simdjson's buffers, allocated on first use, meet allocation failure
 * injection (tests/test_faults.c) like prism's own.  And a failure is
 * counted for its thread: simdjson does not check every allocation
 * (ondemand::parser::allocate leaves its string buffer null, reports
 * success, and the parse then writes through it), so a parse during which
 * one failed is never used: the parser is reset and the parse ends in "out
 * of memory".  A thread's count, as simdjson has no hook to pass a context
 * through; it only grows.
 */
static thread_local unsigned long alloc_failures;

static void *cxx_alloc(std::size_t n) noexcept
{
	void *p = prism_malloc(n ? n : 1);
	if (!p)
		alloc_failures++;
	return p;
}

void *operator new(std::size_t n)
{
	void *p = cxx_alloc(n);
	if (!p)
		throw std::bad_alloc();
	return p;
}

void *operator new[](std::size_t n)
{
	return operator new(n);
}

void *operator new(std::size_t n, const std::nothrow_t &) noexcept
{
	return cxx_alloc(n);
}

void *operator new[](std::size_t n, const std::nothrow_t &) noexcept
{
	return cxx_alloc(n);
}

void operator delete(void *p) noexcept
{
	std::free(p);
}

void operator delete[](void *p) noexcept
{
	std::free(p);
}

void operator delete(void *p, std::size_t) noexcept
{
	std::free(p);
}

void operator delete[](void *p, std::size_t) noexcept
{
	std::free(p);
}

void operator delete(void *p, const std::nothrow_t &) noexcept
{
	std::free(p);
}

void operator delete[](void *p, const std::nothrow_t &) noexcept
{
	std::free(p);
}

/* The parser's own block comes from prism_malloc too. */
extern "C" struct kjson_parser *kjson_new(void)
{
	void *m = prism_malloc(sizeof(kjson_parser));
	return m ? new (m) kjson_parser() : nullptr;
}

extern "C" void kjson_free(struct kjson_parser *p)
{
	if (p) {
		p->~kjson_parser();
		std::free(p);
	}
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* 1 when c may follow a JSON value: whitespace, ',', ']' or '}'. */
static bool ends_scalar(char c)
{
	return is_ws(c) || c == ',' || c == ']' || c == '}';
}

/* The length of the number at s[0..n) by RFC 8259's grammar,
 *   -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
 * when what follows it ends a scalar; 0 when s holds none ("+1", ".5",
 * "1.", "01", "1e", "1x"). */
static size_t json_number_len(const char *s, size_t n)
{
	const char *p = s, *end = s + n;
	size_t k;

	if (p < end && *p == '-')
		p++;
	if (p >= end || !is_digit(*p))
		return 0;
	if (*p++ != '0')
		while (p < end && is_digit(*p))
			p++;
	if (p < end && *p == '.') {
		if (++p >= end || !is_digit(*p))
			return 0;
		while (p < end && is_digit(*p))
			p++;
	}
	k = (size_t)(p - s);
	if (k < n && (s[k] == 'e' || s[k] == 'E')) {
		if (++k < n && (s[k] == '+' || s[k] == '-'))
			k++;
		if (k >= n || !is_digit(s[k]))
			return 0;
		while (k < n && is_digit(s[k]))
			k++;
	}
	return k == n || ends_scalar(s[k]) ? k : 0;
}

extern "C" int kjson_number(const char *s, size_t n, struct kjson_val *v)
{
	size_t k = 0, d0;
	bool neg = false, frac = false, over = false;
	int64_t ip = 0, f3 = 0;
	int nf = 0, round = 0;

	if (k < n && s[k] == '-') {
		neg = true;
		k++;
	}
	if (k >= n || !is_digit(s[k]))
		return -1;
	for (d0 = k; k < n && is_digit(s[k]); k++) {
		if (ip > (INT64_MAX - 9) / 10)
			over = true;
		else
			ip = ip * 10 + (s[k] - '0');
	}
	if (s[d0] == '0' && k - d0 > 1)
		return -1; /* RFC 8259: no leading zeros */
	if (k < n && s[k] == '.') {
		frac = true;
		k++;
		if (k >= n || !is_digit(s[k]))
			return -1;
		for (; k < n && is_digit(s[k]); k++, nf++) {
			if (nf < 3)
				f3 = f3 * 10 + (s[k] - '0');
			else if (nf == 3)
				round = s[k] >= '5';
		}
		for (; nf < 3; nf++)
			f3 *= 10;
	}
	if (k < n && (s[k] == 'e' || s[k] == 'E')) {
		/* Rare in traces: take the slow, approximate path. */
		char tmp[64];
		size_t m = json_number_len(s, n);
		if (m == 0)
			return -1;
		m = m < sizeof(tmp) - 1 ? m : sizeof(tmp) - 1;
		std::memcpy(tmp, s, m);
		tmp[m] = '\0';
		double d = std::strtod(tmp, nullptr);
		v->type = KJSON_FRAC;
		v->i = std::fabs(d) < 9.2e18 ? (int64_t)d : (d < 0 ? INT64_MIN : INT64_MAX);
		v->milli = std::fabs(d) < 9.2e15 ? (int64_t)std::llround(d * 1000.0)
						 : (d < 0 ? INT64_MIN : INT64_MAX);
		return 0;
	}
	if (k < n && !ends_scalar(s[k]))
		return -1;
	v->type = frac ? KJSON_FRAC : KJSON_INT;
	v->i = over ? INT64_MAX : ip;
	if (over || ip > (INT64_MAX - 1000) / 1000)
		v->milli = INT64_MAX;
	else
		v->milli = ip * 1000 + f3 + round;
	if (neg) {
		v->i = -v->i;
		v->milli = -v->milli;
	}
	return 0;
}

static void fail_set(struct kjson_fail *fail, uint64_t offset, size_t event, const char *field,
		     const char *what)
{
	fail->offset = offset;
	fail->event = event;
	std::snprintf(fail->field, sizeof(fail->field), "%s", field);
	std::snprintf(fail->what, sizeof(fail->what), "%s", what);
}

extern "C" size_t prism_utf8_check(const char *s, size_t n); /* prism.h */

/*
 * Where a whole-buffer error of simdjson's first stage lies (it reports
 * the buffer, not the byte): the first byte that is not UTF-8, or the
 * first unescaped control character inside a string.  Sets *at (offset in
 * buf) and *event (events of buf whose '{' opens before it, minus one, for
 * an array of events; 0 otherwise) and returns a message, or NULL when e
 * is another error.
 */
static const char *stage1_where(error_code e, const char *buf, size_t len, size_t *at,
				size_t *event)
{
	size_t bad = len, ev = 0;
	int depth = 0, in_str = 0, esc = 0, events = 0;
	const char *what;

	if (e == UTF8_ERROR) {
		bad = prism_utf8_check(buf, len);
		what = "not valid UTF-8";
	} else if (e == UNESCAPED_CHARS) {
		what = "a control character inside a string (it must be escaped)";
	} else {
		return nullptr;
	}
	for (size_t i = 0; i < len && i < bad; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (in_str) {
			if (esc)
				esc = 0;
			else if (c == '\\')
				esc = 1;
			else if (c == '"')
				in_str = 0;
			else if (c < 0x20 && e == UNESCAPED_CHARS)
				bad = i;
			continue;
		}
		if (c == '"')
			in_str = 1;
		else if (c == '[' || c == '{') {
			if (++depth == 2 && c == '{')
				events++;
		} else if (c == ']' || c == '}')
			depth--;
	}
	if (bad == len)
		return nullptr;
	ev = events > 0 ? (size_t)events - 1 : 0;
	*at = bad;
	*event = ev;
	return what;
}

/* Bytes outside strings, as kjson_check takes them. */
enum { B_VALUE, B_SKIP, B_QUOTE, B_OPEN, B_CLOSE };
struct byte_classes {
	unsigned char c[256];
	constexpr byte_classes() : c()
	{
		c[(unsigned char)' '] = c[(unsigned char)'\t'] = c[(unsigned char)'\n'] = B_SKIP;
		c[(unsigned char)'\r'] = c[(unsigned char)','] = c[(unsigned char)':'] = B_SKIP;
		c[(unsigned char)'"'] = B_QUOTE;
		c[(unsigned char)'{'] = c[(unsigned char)'['] = B_OPEN;
		c[(unsigned char)'}'] = c[(unsigned char)']'] = B_CLOSE;
	}
};
static constexpr byte_classes byte_class;

extern "C" size_t kjson_scalar_len(const char *s, size_t n)
{
	std::string_view l = s[0] == 't'   ? "true"
			     : s[0] == 'f' ? "false"
			     : s[0] == 'n' ? "null"
					   : "";
	if (l.empty())
		return json_number_len(s, n);
	if (n >= l.size() && std::string_view(s, l.size()) == l)
		return n == l.size() || ends_scalar(s[l.size()]) ? l.size() : 0;
	return 0;
}

extern "C" int kjson_check(const char *buf, size_t len, uint64_t base, struct kjson_fail *fail)
{
	enum { KEY_DEPTH = 32 };
	std::string_view key[KEY_DEPTH]; /* the member read at each depth */
	size_t i = 0;
	int depth = 0;

	std::memset(fail, 0, sizeof(*fail));
	for (;;) {
		while (i < len && byte_class.c[(unsigned char)buf[i]] == B_SKIP)
			i++;
		if (i >= len)
			return 0;
		switch (byte_class.c[(unsigned char)buf[i]]) {
		case B_QUOTE: {
			size_t j = i + 1, k;
			const char *q;
			for (;;) { /* past the closing quote, escapes aside */
				if (!(q = (const char *)std::memchr(buf + j, '"', len - j)))
					return 0; /* unclosed: stage 1 says so */
				for (k = (size_t)(q - buf); buf[k - 1] == '\\'; k--)
					;
				j = (size_t)(q - buf) + 1;
				if (((size_t)(q - buf) - k) % 2 == 0)
					break;
			}
			for (k = j; k < len && is_ws(buf[k]); k++)
				;
			if (k < len && buf[k] == ':' && depth > 0 && depth < KEY_DEPTH)
				key[depth] = std::string_view(buf + i + 1, j - i - 2);
			i = j;
			continue;
		}
		case B_OPEN:
			if (++depth > 0 && depth < KEY_DEPTH)
				key[depth] = std::string_view();
			i++;
			continue;
		case B_CLOSE:
			depth--;
			i++;
			continue;
		}
		size_t n = kjson_scalar_len(buf + i, len - i);
		if (n == 0) {
			char c = buf[i];
			std::string_view field;
			while (i + n < len && byte_class.c[(unsigned char)buf[i + n]] == B_VALUE)
				n++;
			for (int d = depth < KEY_DEPTH ? depth : KEY_DEPTH - 1;
			     d > 0 && field.empty(); d--)
				field = key[d];
			fail->offset = base + i;
			std::snprintf(fail->field, sizeof(fail->field), "%.*s",
				      (int)(field.size() < sizeof(fail->field) - 1
						? field.size()
						: sizeof(fail->field) - 1),
				      field.data());
			std::snprintf(fail->what, sizeof(fail->what), "%s: %.*s",
				      c == '-' || c == '+' || c == '.' || is_digit(c)
					  ? "not a JSON number (RFC 8259)"
					  : "not a JSON value",
				      (int)(n < 32 ? n : 32), buf + i);
			return -1;
		}
		i += n;
	}
}

/* Out of memory in a parse: the parser, perhaps half allocated, is
 * replaced by a new one (which allocates on first use). */
static int nomem(struct kjson_parser *p, uint64_t base, struct kjson_fail *fail)
{
	p->parser = ondemand::parser();
	fail_set(fail, base, 0, "", "out of memory");
	fail->nomem = 1;
	return -1;
}

/* Offset of the iterator in the stream, or the chunk start if unknown. */
static uint64_t where(ondemand::document &doc, const char *buf, uint64_t base)
{
	const char *loc = nullptr;
	if (doc.current_location().get(loc) == SUCCESS && loc)
		return base + (uint64_t)(loc - buf);
	return base;
}

/* Read any JSON value into *out.  Returns the simdjson error. */
static error_code get_val(ondemand::value v, struct kjson_val *out)
{
	ondemand::json_type t;
	error_code e = v.type().get(t);
	if (e)
		return e;
	switch (t) {
	case ondemand::json_type::number: {
		std::string_view tok;
		tok = v.raw_json_token();
		if (kjson_number(tok.data(), tok.size(), out) != 0)
			return NUMBER_ERROR;
		return SUCCESS;
	}
	case ondemand::json_type::string: {
		std::string_view sv;
		if ((e = v.get_string().get(sv)))
			return e;
		out->type = KJSON_STR;
		out->s.p = sv.data();
		out->s.n = sv.size();
		return SUCCESS;
	}
	case ondemand::json_type::array: {
		ondemand::array a;
		std::string_view raw;
		if ((e = v.get_array().get(a)) || (e = a.raw_json().get(raw)))
			return e;
		out->type = KJSON_ARRAY;
		out->s.p = raw.data();
		out->s.n = raw.size();
		return SUCCESS;
	}
	case ondemand::json_type::object:
		out->type = KJSON_OBJECT;
		return SUCCESS;
	case ondemand::json_type::boolean: {
		bool b;
		if ((e = v.get_bool().get(b)))
			return e;
		out->type = KJSON_BOOL;
		out->i = b;
		return SUCCESS;
	}
	case ondemand::json_type::null: {
		bool isnull = false;
		if ((e = v.is_null().get(isnull)))
			return e;
		if (!isnull)
			return N_ATOM_ERROR; /* "nul", "nulx": only the first byte said null */
		out->type = KJSON_NULL;
		return SUCCESS;
	}
	}
	return INCORRECT_TYPE;
}

struct key_slot {
	std::string_view key;
	int arg;
};

static const key_slot arg_keys[] = {
#define KJSON_X_KEY(e, key) {key, KJSON_ARG_##e},
    KJSON_ARGS_MAP(KJSON_X_KEY)
#undef KJSON_X_KEY
};

static struct kjson_val *event_slot(struct kjson_event *ev, std::string_view k)
{
	switch (k.size()) {
	case 1:
		if (k[0] == 's')
			return &ev->s;
		break;
	case 2:
		if (k == "ph")
			return &ev->ph;
		if (k == "ts")
			return &ev->ts;
		if (k == "id")
			return &ev->id;
		if (k == "bp")
			return &ev->bp;
		break;
	case 3:
		if (k == "cat")
			return &ev->cat;
		if (k == "pid")
			return &ev->pid;
		if (k == "tid")
			return &ev->tid;
		if (k == "dur")
			return &ev->dur;
		break;
	case 4:
		if (k == "name")
			return &ev->name;
		break;
	}
	return nullptr;
}

static error_code read_args(ondemand::object args, struct kjson_event *ev, std::string_view *field)
{
	for (auto fr : args) {
		ondemand::field f;
		std::string_view k;
		error_code e;
		if ((e = std::move(fr).get(f)) || (e = f.unescaped_key().get(k)))
			return e;
		for (const key_slot &ks : arg_keys) {
			if (ks.key.size() == k.size() && ks.key == k) {
				*field = ks.key;
				if ((e = get_val(f.value(), &ev->args[ks.arg])))
					return e;
				break;
			}
		}
	}
	*field = std::string_view();
	return SUCCESS;
}

static int parse_events(struct kjson_parser *p, const char *buf, size_t len, uint64_t base,
			kjson_event_fn fn, void *ctx, struct kjson_fail *fail)
{
	unsigned long failures = alloc_failures;
	ondemand::document doc;
	ondemand::array arr;
	size_t index = 0;
	error_code e;
	struct kjson_event ev;

	e = p->parser.iterate(padded_string_view(buf, len, len + KJSON_PADDING)).get(doc);
	if (alloc_failures != failures)
		return nomem(p, base, fail);
	if (e) {
		size_t at = 0, event = 0;
		const char *what = stage1_where(e, buf, len, &at, &event);
		fail_set(fail, base + at, event, "", what ? what : error_message(e));
		return -1;
	}
	if ((e = doc.get_array().get(arr))) {
		fail_set(fail, base, 0, "", error_message(e));
		return -1;
	}
	for (auto elr : arr) {
		ondemand::value el;
		ondemand::object obj;
		const char *loc = nullptr;
		std::string_view field;

		if ((e = std::move(elr).get(el)))
			goto bad;
		if (el.current_location().get(loc) != SUCCESS)
			loc = buf;
		if ((e = el.get_object().get(obj))) {
			fail_set(fail, base + (uint64_t)(loc - buf), index, "",
				 "event is not a JSON object");
			return -1;
		}
		std::memset(&ev, 0, sizeof(ev));
		ev.offset = base + (uint64_t)(loc - buf);
		for (auto fr : obj) {
			ondemand::field f;
			std::string_view k;
			if ((e = std::move(fr).get(f)) || (e = f.unescaped_key().get(k)))
				goto bad;
			if (k == "args") {
				ondemand::object args;
				field = "args";
				if (f.value().get_object().get(args) == SUCCESS) {
					if ((e = read_args(args, &ev, &field)))
						goto bad;
				}
				field = std::string_view();
				continue;
			}
			struct kjson_val *slot = event_slot(&ev, k);
			if (slot) {
				field = k;
				if ((e = get_val(f.value(), slot)))
					goto bad;
				field = std::string_view();
			}
		}
		{
			int rc = fn(ctx, &ev);
			if (rc)
				return rc;
		}
		index++;
		continue;
	bad : {
		char what[160];
		char fname[48];
		size_t fl = field.size() < sizeof(fname) - 1 ? field.size() : sizeof(fname) - 1;
		if (fl)
			std::memcpy(fname, field.data(), fl);
		fname[fl] = '\0';
		std::snprintf(what, sizeof(what), "invalid JSON (%s)", error_message(e));
		fail_set(fail, where(doc, buf, base), index, fname, what);
		return -1;
	}
	}
	return alloc_failures != failures ? nomem(p, base, fail) : 0;
}

extern "C" int kjson_parse_events(struct kjson_parser *p, const char *buf, size_t len,
				  uint64_t base, kjson_event_fn fn, void *ctx,
				  struct kjson_fail *fail)
{
	std::memset(fail, 0, sizeof(*fail));
	try {
		return parse_events(p, buf, len, base, fn, ctx, fail);
	} catch (const std::bad_alloc &) {
		return nomem(p, base, fail);
	}
}

static error_code read_dist(ondemand::object o, struct kjson_top *top)
{
	for (auto fr : o) {
		ondemand::field f;
		std::string_view k;
		struct kjson_val v;
		error_code e;
		if ((e = std::move(fr).get(f)) || (e = f.unescaped_key().get(k)))
			return e;
		if (k == "pg_config") {
			ondemand::array pgs;
			if (f.value().get_array().get(pgs) != SUCCESS)
				continue;
			for (auto pgr : pgs) {
				ondemand::object pg;
				if (pgr.get_object().get(pg) != SUCCESS || top->npg >= KJSON_MAX_PG)
					continue;
				struct kjson_pg *out = &top->pg[top->npg++];
				std::memset(out, 0, sizeof(*out));
				for (auto pfr : pg) {
					ondemand::field pf;
					std::string_view pk;
					if ((e = std::move(pfr).get(pf)) ||
					    (e = pf.unescaped_key().get(pk)))
						return e;
					std::memset(&v, 0, sizeof(v));
					if ((e = get_val(pf.value(), &v)))
						return e;
					if (pk == "pg_name" && v.type == KJSON_STR)
						out->name = v.s;
					else if (pk == "pg_desc" && v.type == KJSON_STR)
						out->desc = v.s;
					else if (pk == "ranks" && v.type == KJSON_ARRAY)
						out->ranks = v.s;
					else if (pk == "pg_size" && v.type == KJSON_INT)
						out->size = v.i;
				}
			}
			continue;
		}
		std::memset(&v, 0, sizeof(v));
		if ((e = get_val(f.value(), &v)))
			return e;
		if (k == "rank" && v.type == KJSON_INT) {
			top->has_rank = 1;
			top->rank = v.i;
		} else if (k == "world_size" && v.type == KJSON_INT) {
			top->has_world = 1;
			top->world_size = v.i;
		} else if (k == "backend" && v.type == KJSON_STR) {
			top->backend = v.s;
		}
	}
	return SUCCESS;
}

static error_code read_devices(ondemand::array a, struct kjson_top *top)
{
	for (auto dr : a) {
		ondemand::object d;
		error_code e;
		if ((e = dr.get_object().get(d)))
			return e;
		top->ndevices++;
		for (auto fr : d) {
			ondemand::field f;
			std::string_view k;
			struct kjson_val v;
			if ((e = std::move(fr).get(f)) || (e = f.unescaped_key().get(k)))
				return e;
			if (top->ndevices != 1)
				continue;
			std::memset(&v, 0, sizeof(v));
			if ((e = get_val(f.value(), &v)))
				return e;
			if (k == "name" && v.type == KJSON_STR)
				top->device_name = v.s;
			else if (k == "totalGlobalMem" && v.type == KJSON_INT)
				top->device_mem = v.i;
		}
	}
	return SUCCESS;
}

/* kjson_check of the value of top-level key `key`, its field named from
 * the key ("distributedInfo.x"). */
static int check_top(const char *key, const char *buf, size_t len, uint64_t base,
		     struct kjson_fail *fail)
{
	char full[2 * sizeof(fail->field) + 64];

	if (kjson_check(buf, len, base, fail) == 0)
		return 0;
	std::snprintf(full, sizeof(full), "%s%s%s", key, fail->field[0] ? "." : "", fail->field);
	std::snprintf(fail->field, sizeof(fail->field), "%.*s", (int)sizeof(fail->field) - 1, full);
	return -1;
}

static int parse_top(struct kjson_parser *p, const char *key, const char *buf, size_t len,
		     uint64_t base, struct kjson_top *top, struct kjson_fail *fail)
{
	unsigned long failures = alloc_failures;
	ondemand::document doc;
	error_code e;
	bool started;

	/* A value prism does not read is checked, not parsed: memory for a
	 * parse of its up to KINETO_MAX_TOP bytes would buy nothing. */
	if (std::strcmp(key, "distributedInfo") != 0 && std::strcmp(key, "deviceProperties") != 0 &&
	    std::strcmp(key, "baseTimeNanoseconds") != 0)
		return check_top(key, buf, len, base, fail);
	e = p->parser.iterate(padded_string_view(buf, len, len + KJSON_PADDING)).get(doc);
	started = !e; /* a document that never started has no location */
	if (alloc_failures != failures)
		return nomem(p, base, fail);
	if (!e && check_top(key, buf, len, base, fail))
		return -1;
	if (!e) {
		if (std::strcmp(key, "distributedInfo") == 0) {
			ondemand::object o;
			if (!(e = doc.get_object().get(o)))
				e = read_dist(o, top);
		} else if (std::strcmp(key, "deviceProperties") == 0) {
			ondemand::array a;
			if (!(e = doc.get_array().get(a)))
				e = read_devices(a, top);
		} else if (std::strcmp(key, "baseTimeNanoseconds") == 0) {
			std::string_view tok;
			struct kjson_val v;
			std::memset(&v, 0, sizeof(v));
			if (!(e = doc.raw_json_token().get(tok))) {
				if (kjson_number(tok.data(), tok.size(), &v) != 0 ||
				    v.type != KJSON_INT)
					e = NUMBER_ERROR;
				else {
					top->has_base = 1;
					top->base_ns = v.i;
				}
			}
		}
	}
	if (e) {
		size_t at = 0, event = 0;
		const char *what = started ? nullptr : stage1_where(e, buf, len, &at, &event);
		fail_set(fail,
			 what	   ? base + at
			 : started ? where(doc, buf, base)
				   : base,
			 0, key, what ? what : error_message(e));
		return -1;
	}
	return alloc_failures != failures ? nomem(p, base, fail) : 0;
}

extern "C" int kjson_parse_top(struct kjson_parser *p, const char *key, const char *buf, size_t len,
			       uint64_t base, struct kjson_top *top, struct kjson_fail *fail)
{
	std::memset(fail, 0, sizeof(*fail));
	try {
		return parse_top(p, key, buf, len, base, top, fail);
	} catch (const std::bad_alloc &) {
		return nomem(p, base, fail);
	}
}

static int parse_object(struct kjson_parser *p, const char *buf, size_t len, kjson_member_fn fn,
			void *ctx, struct kjson_fail *fail)
{
	unsigned long failures = alloc_failures;
	ondemand::document doc;
	ondemand::object obj;
	error_code e;

	if (kjson_check(buf, len, 0, fail))
		return -1;
	e = p->parser.iterate(padded_string_view(buf, len, len + KJSON_PADDING)).get(doc);
	if (alloc_failures != failures)
		return nomem(p, 0, fail);
	if (e) {
		size_t at = 0, event = 0;
		const char *what = stage1_where(e, buf, len, &at, &event);
		fail_set(fail, at, 0, "", what ? what : error_message(e));
		return -1;
	}
	if ((e = doc.get_object().get(obj))) {
		fail_set(fail, 0, 0, "", "not a JSON object");
		return -1;
	}
	for (auto fr : obj) {
		ondemand::field f;
		std::string_view k;
		struct kjson_val v;
		struct kjson_str key;
		int rc;

		std::memset(&v, 0, sizeof(v));
		if ((e = std::move(fr).get(f)) || (e = f.unescaped_key().get(k))) {
			fail_set(fail, where(doc, buf, 0), 0, "", error_message(e));
			return -1;
		}
		key.p = k.data();
		key.n = k.size();
		if (f.value().type() == ondemand::json_type::object) {
			ondemand::object o;
			std::string_view raw;
			if (!(e = f.value().get_object().get(o)) && !(e = o.raw_json().get(raw))) {
				v.type = KJSON_OBJECT;
				v.s.p = raw.data();
				v.s.n = raw.size();
			}
		} else {
			e = get_val(f.value(), &v);
		}
		if (e) {
			char field[48];
			std::snprintf(
			    field, sizeof(field), "%.*s",
			    (int)(k.size() < sizeof(field) - 1 ? k.size() : sizeof(field) - 1),
			    k.data());
			fail_set(fail, where(doc, buf, 0), 0, field, error_message(e));
			return -1;
		}
		if ((rc = fn(ctx, key, &v)) != 0)
			return rc;
	}
	if (alloc_failures != failures)
		return nomem(p, 0, fail);
	return 0;
}

extern "C" int kjson_parse_object(struct kjson_parser *p, const char *buf, size_t len,
				  kjson_member_fn fn, void *ctx, struct kjson_fail *fail)
{
	std::memset(fail, 0, sizeof(*fail));
	try {
		return parse_object(p, buf, len, fn, ctx, fail);
	} catch (const std::bad_alloc &) {
		return nomem(p, 0, fail);
	}
}
