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
#include <string_view>

using namespace simdjson;

struct kjson_parser {
	ondemand::parser parser;
};

extern "C" void *prism_malloc(size_t n); /* prism.h */

/* The parser's own block comes from prism_malloc (failure injection reaches
 * it); simdjson's buffers, allocated on first use, report their own
 * failures (MEMALLOC), which become errors like any other. */
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

extern "C" int kjson_number(const char *s, size_t n, struct kjson_val *v)
{
	size_t k = 0;
	bool neg = false, frac = false, over = false;
	int64_t ip = 0, f3 = 0;
	int nf = 0, round = 0;

	if (k < n && s[k] == '-') {
		neg = true;
		k++;
	}
	if (k >= n || s[k] < '0' || s[k] > '9')
		return -1;
	for (; k < n && s[k] >= '0' && s[k] <= '9'; k++) {
		if (ip > (INT64_MAX - 9) / 10)
			over = true;
		else
			ip = ip * 10 + (s[k] - '0');
	}
	if (k < n && s[k] == '.') {
		frac = true;
		k++;
		if (k >= n || s[k] < '0' || s[k] > '9')
			return -1;
		for (; k < n && s[k] >= '0' && s[k] <= '9'; k++, nf++) {
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
		size_t m = n < sizeof(tmp) - 1 ? n : sizeof(tmp) - 1;
		std::memcpy(tmp, s, m);
		tmp[m] = '\0';
		double d = std::strtod(tmp, nullptr);
		v->type = KJSON_FRAC;
		v->i = std::fabs(d) < 9.2e18 ? (int64_t)d : (d < 0 ? INT64_MIN : INT64_MAX);
		v->milli = std::fabs(d) < 9.2e15 ? (int64_t)std::llround(d * 1000.0)
						 : (d < 0 ? INT64_MIN : INT64_MAX);
		return 0;
	}
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

extern "C" int kjson_parse_events(struct kjson_parser *p, const char *buf, size_t len,
				  uint64_t base, kjson_event_fn fn, void *ctx,
				  struct kjson_fail *fail)
{
	ondemand::document doc;
	ondemand::array arr;
	size_t index = 0;
	error_code e;
	struct kjson_event ev;

	e = p->parser.iterate(padded_string_view(buf, len, len + KJSON_PADDING)).get(doc);
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
	return 0;
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

extern "C" int kjson_parse_top(struct kjson_parser *p, const char *key, const char *buf, size_t len,
			       uint64_t base, struct kjson_top *top, struct kjson_fail *fail)
{
	ondemand::document doc;
	error_code e =
	    p->parser.iterate(padded_string_view(buf, len, len + KJSON_PADDING)).get(doc);
	bool started = !e; /* a document that never started has no location */

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
	return 0;
}
