/*
 * kjson.h - the C face of the JSON reader (simdjson On-Demand, C++ inside).
 *
 * The trace reader (kineto.c) splits a Chrome-trace stream into chunks of
 * whole events and hands each chunk here; no DOM of a trace is ever built.
 * For every event this module fills a struct kjson_event with the fields
 * prism reads and calls back.  Strings in the event point into the parser's
 * buffers and are valid only during the callback.
 *
 * Numbers keep their exact decimal value: `milli` is the value times 1000
 * rounded to an integer, so a timestamp of 1712195495502094.512 us becomes
 * exactly 1712195495502094512 ns, which a double could not hold.
 */
#ifndef PRISM_KJSON_H
#define PRISM_KJSON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct kjson_str {
	const char *p;
	size_t n;
};

enum kjson_type {
	KJSON_ABSENT = 0, /* key not present */
	KJSON_INT,	  /* integer literal */
	KJSON_FRAC,	  /* number with a fraction or exponent */
	KJSON_STR,
	KJSON_NULL,
	KJSON_BOOL,
	KJSON_ARRAY, /* s holds the raw JSON text of the array */
	KJSON_OBJECT
};

struct kjson_val {
	uint8_t type;	    /* enum kjson_type */
	int64_t i;	    /* integer part (numbers), 0/1 (bool) */
	int64_t milli;	    /* value * 1000, rounded (numbers) */
	struct kjson_str s; /* text (strings), raw JSON (arrays) */
};

/* The args keys prism reads; see docs/FORMATS.md for what each means. */
#define KJSON_ARGS_MAP(X)                                                                          \
	X(CORRELATION, "correlation")                                                              \
	X(EXTERNAL_ID, "External id")                                                              \
	X(EXTERNAL_ID_OLD, "external id")                                                          \
	X(STREAM, "stream")                                                                        \
	X(DEVICE, "device")                                                                        \
	X(CBID, "cbid")                                                                            \
	X(BYTES, "bytes")                                                                          \
	X(SEQ, "Sequence number")                                                                  \
	X(FWD_TID, "Fwd thread id")                                                                \
	X(SYNC_KIND, "cuda_sync_kind")                                                             \
	X(WAIT_STREAM, "wait_on_stream")                                                           \
	X(WAIT_RECORD_CORR, "wait_on_cuda_event_record_corr_id")                                   \
	X(COLL_NAME, "Collective name")                                                            \
	X(IN_NELEMS, "In msg nelems")                                                              \
	X(OUT_NELEMS, "Out msg nelems")                                                            \
	X(GROUP_SIZE, "Group size")                                                                \
	X(DTYPE, "dtype")                                                                          \
	X(PG_NAME, "Process Group Name")                                                           \
	X(PG_ID, "Process Group ID")                                                               \
	X(PG_DESC, "Process Group Description")                                                    \
	X(PG_RANKS, "Process Group Ranks")                                                         \
	X(INPUT_DIMS, "Input Dims")                                                                \
	X(INPUT_TYPE, "Input type")                                                                \
	X(NAME, "name")                                                                            \
	X(LABELS, "labels")

enum kjson_arg {
#define KJSON_X_ENUM(e, key) KJSON_ARG_##e,
	KJSON_ARGS_MAP(KJSON_X_ENUM)
#undef KJSON_X_ENUM
	    KJSON_NARGS
};

struct kjson_event {
	uint64_t offset; /* byte offset of the event's '{' in the stream */
	struct kjson_val ph, cat, name, pid, tid, ts, dur, id, bp, s;
	struct kjson_val args[KJSON_NARGS];
};

/* Why a chunk failed: the byte offset (of the bad byte itself, also for
 * text that is not UTF-8 or holds an unescaped control character, or a
 * value that is not JSON), the event (0-based within the chunk), the field
 * ("" if none; the innermost member's key for a value that is not JSON)
 * and what was wrong; nomem 1 when it was an allocation that failed (what
 * is then "out of memory", the input is not at fault, and the parser was
 * reset: nothing half allocated is used). */
struct kjson_fail {
	uint64_t offset;
	size_t event;
	char field[48];
	char what[160];
	int nomem;
};

typedef int (*kjson_event_fn)(void *ctx, const struct kjson_event *ev);

struct kjson_parser;

/* A parser reused across chunks (its buffers grow to the largest chunk). */
struct kjson_parser *kjson_new(void);
void kjson_free(struct kjson_parser *p);

/* Bytes of readable slack kjson_parse_events needs after buf[len]. */
#define KJSON_PADDING 64

/*
 * Parse buf[0..len), a JSON array of event objects, calling fn for each.
 * buf must stay readable up to buf[len + KJSON_PADDING).  base is the
 * stream offset of buf[0], for error positions.  The values read must be
 * JSON (RFC 8259: numbers, true, false, null); those skipped unread are
 * not looked at (the caller checks them: kjson_scalar_len, kjson_check,
 * as the trace reader's splitter does).  Returns 0;
 * a non-zero value returned by fn (stops and is passed back, fail->what
 * then empty); or -1 with *fail set (fail->what not empty), also when out
 * of memory (fail->nomem).
 */
int kjson_parse_events(struct kjson_parser *p, const char *buf, size_t len, uint64_t base,
		       kjson_event_fn fn, void *ctx, struct kjson_fail *fail);

/* Top-level metadata prism reads besides traceEvents. */
#define KJSON_MAX_PG 256
struct kjson_pg {
	struct kjson_str name, desc, ranks; /* ranks: raw JSON array text */
	int64_t size;
};
struct kjson_top {
	int has_rank, has_world, has_base;
	int64_t rank, world_size;
	int64_t base_ns; /* baseTimeNanoseconds */
	struct kjson_str backend;
	size_t npg;
	struct kjson_pg pg[KJSON_MAX_PG];
	struct kjson_str device_name; /* deviceProperties[0].name */
	int64_t device_mem;	      /* its totalGlobalMem, bytes */
	int64_t ndevices;
};

/*
 * Parse the value of top-level key `key` (one of "distributedInfo",
 * "deviceProperties", "baseTimeNanoseconds"; the values of others are
 * only checked, by kjson_check, and nothing allocated) from buf[0..len)
 * (padded as above) into *top.  Strings point into the parser and are valid until its
 * next use.  0, or -1 with *fail set (its field "key" or "key.member").
 */
int kjson_parse_top(struct kjson_parser *p, const char *key, const char *buf, size_t len,
		    uint64_t base, struct kjson_top *top, struct kjson_fail *fail);

/* The length of the JSON literal (true, false, null) or RFC 8259 number
 * at s[0..n) when what follows it may follow a value (nothing,
 * whitespace, ',', ']' or '}'); 0 when s holds none ("+1", ".5", "1.",
 * "01", "1e", "tru", "1x"). */
size_t kjson_scalar_len(const char *s, size_t n);

/*
 * Check that every value outside strings in buf[0..len) is a JSON literal
 * or an RFC 8259 number (simdjson's On-Demand front end checks only the
 * values prism asks for: one skipped unread would pass).  Strings must be
 * closed.  0, or -1 with *fail set: the first bad value's offset (base +
 * its index), the key of the innermost member holding it (field, "" at the
 * top) and what is wrong; fail->event 0.
 */
int kjson_check(const char *buf, size_t len, uint64_t base, struct kjson_fail *fail);

/* Parse the number at s[0..n) into *v: 0, or -1 unless s holds an RFC
 * 8259 number followed by nothing, whitespace, ',', ']' or '}' ("+1",
 * ".5", "1.", "01", "1e", "1x" are not). */
int kjson_number(const char *s, size_t n, struct kjson_val *v);

/*
 * The members of the JSON object buf[0..len) (padded as above; a small
 * document such as a model's config.json, read whole): fn is called with
 * each member's key and value in order, an object's or an array's value
 * as its raw JSON text in v->s (KJSON_OBJECT, KJSON_ARRAY), which the
 * caller may read with kjson_parse_object again (it lies inside buf, so
 * it is padded too).  Keys and strings point into the parser or buf and
 * are valid during the callback only (raw texts: while buf is).  Every
 * value is checked to be JSON (kjson_check) first.  0; fn's non-zero
 * value (stops, passed back, fail->what empty); or -1 with *fail set
 * (its field the member's key), also when out of memory (fail->nomem).
 */
typedef int (*kjson_member_fn)(void *ctx, struct kjson_str key, const struct kjson_val *v);
int kjson_parse_object(struct kjson_parser *p, const char *buf, size_t len, kjson_member_fn fn,
		       void *ctx, struct kjson_fail *fail);

#ifdef __cplusplus
}
#endif
#endif
