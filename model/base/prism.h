/*
 * prism.h - project-wide basics: status codes, the error record, helpers.
 *
 * Every function that can fail returns an int: 0 on success, a negative
 * PRISM_E* code otherwise.  The codes, their names and their messages come
 * from one X-macro table, so they cannot drift apart.
 *
 * Input-facing code (trace reader, graph cache, later the config and the
 * database) also fills a caller-owned struct prism_err.  It keeps the FIRST
 * error only, with its context already formatted into one line, e.g.
 *   trace.json: event 812 'ncclDevKernel_AllReduce': missing "dur"
 * model/ and sim/ never print or exit; only the command layer does.
 */
#ifndef PRISM_H
#define PRISM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PRISM_STATUS_MAP(X)                                                                        \
	X(OK, 0, "success")                                                                        \
	X(NOMEM, -1, "out of memory")                                                              \
	X(IO, -2, "input/output error")                                                            \
	X(FORMAT, -3, "malformed input")                                                           \
	X(VERSION, -4, "unsupported file version")                                                 \
	X(ARG, -5, "invalid argument")                                                             \
	X(INTERNAL, -6, "internal error")                                                          \
	X(LIMIT, -7, "input exceeds a built-in limit")

enum prism_status {
#define PRISM_X_ENUM(name, val, msg) PRISM_E##name = (val),
	PRISM_STATUS_MAP(PRISM_X_ENUM)
#undef PRISM_X_ENUM
};

/* Name ("PRISM_EFORMAT") and message of a status code; never NULL. */
const char *prism_status_name(int code);
const char *prism_status_msg(int code);

#define PRISM_ERR_MSG_MAX 512

/*
 * The first error that happened, with its context.  Zero-initialise it (or
 * call prism_err_clear) before use; code stays 0 while nothing failed.
 */
struct prism_err {
	int code;
	char msg[PRISM_ERR_MSG_MAX];
};

void prism_err_clear(struct prism_err *err);

/*
 * Record an error unless one is already recorded; returns code so callers
 * can write `return prism_err_set(err, PRISM_EFORMAT, "...", ...)`.
 * err may be NULL (the code is still returned).
 */
#if defined(__GNUC__)
#define PRISM_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define PRISM_PRINTF(fmt, args)
#endif

int prism_err_set(struct prism_err *err, int code, const char *fmt, ...) PRISM_PRINTF(3, 4);

/* Put "PREFIX: " before err's message (when it is set). */
void prism_err_prefix(struct prism_err *err, const char *fmt, ...) PRISM_PRINTF(2, 3);

/* Write s to f as a JSON string literal, quotes included; a byte that
 * does not begin valid UTF-8 is written as U+FFFD, so the output is JSON
 * whatever s holds. */
void prism_fput_json_str(FILE *f, const char *s);

/* A CSV field: quoted, quotes doubled, where it holds a comma, a quote or
 * a line break.  Text (from a database, a file) that a spreadsheet would run as a
 * formula (starting with '=', '+', '-', '@', a tab or a carriage return:
 * "=HYPERLINK(...)") is written after a single quote, which spreadsheets
 * read as "this is text"; numbers stay numbers. */
void prism_fput_csv_str(FILE *f, const char *s);

/*
 * A file written whole or not at all.  prism_wfile_open creates a new file
 * beside path (PATH.tmp.PID, O_EXCL) and prism_wfile_commit flushes it,
 * syncs it and renames it over path, so the previous file at path stays
 * intact until the new one is complete: a full disk, a failed write or a
 * kill leaves it as it was.  Where path exists and is not a regular file
 * (a device such as /dev/stdout, a pipe, a symlink) it is written in place,
 * as before; prism_wfile_open's "-" is standard output (stdout flushed
 * first).  A path that ends in ".gz" is written gzip-compressed (f
 * compresses what is written to it).  prism_wfile_abort removes the new
 * file.  Each returns 0, or -1 with errno set (the file is then removed,
 * path untouched).
 */
struct prism_wfile {
	FILE *f;	  /* write here */
	const char *path; /* the caller's; not copied */
	char tmp[4096];	  /* the new file, "" when written in place */
	int sync_fd;	  /* gzip: the file's descriptor for fsync; else -1 */
};

int prism_wfile_open(struct prism_wfile *w, const char *path);

/* As prism_wfile_open, except that path is always replaced by the new
 * file, never written in place: a link, FIFO or device there is replaced,
 * not followed (outputs of fixed names in a folder others may write, where
 * a planted link would send them onto another file of the user's). */
int prism_wfile_replace(struct prism_wfile *w, const char *path);
int prism_wfile_commit(struct prism_wfile *w);
void prism_wfile_abort(struct prism_wfile *w);

/* 1 when paths a and b name the same existing file (device and inode). */
int prism_same_file(const char *a, const char *b);

/* What path names (links followed) when it is a file opened by name that
 * could block its reader or holds no file's bytes: "a FIFO", "a character
 * device", "a block device", "a socket"; NULL when it is a regular file, a
 * folder or absent (whoever opens it then says what else is wrong). */
const char *prism_special_file(const char *path);

/*
 * Times and durations in nanoseconds stay within +-PRISM_TIME_MAX (2^62 - 1,
 * about 146 years) wherever prism holds them: the readers refuse anything
 * beyond, the simulator refuses a run that would end beyond, and the sum
 * or difference of two such values cannot overflow an int64_t, so code
 * adds two and checks the result against the bound.
 */
#define PRISM_TIME_MAX (INT64_MAX / 2)

/* A duration computed in floating point (ns) as whole nanoseconds, rounded,
 * held to 0..PRISM_TIME_MAX (NaN and beyond: PRISM_TIME_MAX, which the
 * simulator then refuses rather than wrapping). */
static inline int64_t prism_ns_round(double ns)
{
	if (!(ns < (double)PRISM_TIME_MAX))
		return PRISM_TIME_MAX;
	return ns > 0 ? (int64_t)(ns + 0.5) : 0;
}

/* llround(x) (half away from zero) for |x| < 2^63, inline: the
 * simulator's contention path rounds every retimed end (15 M calls in
 * a ZeRO-2 GPT-3 175B candidate, 27 instructions each into libm).  The
 * truncation is exact there, and so is a - i: below 2^52 both lie
 * within a factor 2 of each other (or i is 0), above it a is whole. */
static inline int64_t prism_llround(double x)
{
	double a = x < 0 ? -x : x;
	int64_t i = (int64_t)a;
	i += a - (double)i >= 0.5;
	return x < 0 ? -i : i;
}

/* a + b and k x d for times and durations within +-PRISM_TIME_MAX (k >= 0),
 * held to +-PRISM_TIME_MAX (an edit that makes a run longer than that
 * leaves the simulator to refuse it). */
static inline int64_t prism_time_add(int64_t a, int64_t b)
{
	int64_t t = a + b; /* cannot overflow: each is within PRISM_TIME_MAX */
	return t > PRISM_TIME_MAX ? PRISM_TIME_MAX : t < -PRISM_TIME_MAX ? -PRISM_TIME_MAX : t;
}

/* a + b for any two int64_t (a time and a shift that may exceed the
 * bound), held to +-PRISM_TIME_MAX. */
static inline int64_t prism_time_shift(int64_t a, int64_t b)
{
	int64_t t;
	if (__builtin_add_overflow(a, b, &t))
		return b > 0 ? PRISM_TIME_MAX : -PRISM_TIME_MAX;
	return t > PRISM_TIME_MAX ? PRISM_TIME_MAX : t < -PRISM_TIME_MAX ? -PRISM_TIME_MAX : t;
}

static inline int64_t prism_time_mul(int64_t k, int64_t d)
{
	if (d != 0 && k > PRISM_TIME_MAX / (d < 0 ? -d : d))
		return d < 0 ? -PRISM_TIME_MAX : PRISM_TIME_MAX;
	return k * d;
}

/* a + b for a, b >= 0, held at INT64_MAX (totals of many durations or
 * sizes, for reports). */
static inline int64_t prism_add_sat(int64_t a, int64_t b)
{
	return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* The length of the longest prefix of s[0..n) that is well-formed UTF-8
 * (RFC 3629: no overlong forms, surrogates or code points beyond
 * U+10FFFF): n when all of it is; else the offset of the first bad byte. */
size_t prism_utf8_check(const char *s, size_t n);

/*
 * Hash tables (imap, strtab, the trace reader's threads) mix their keys
 * with a seed of their own, drawn when they are made: keys crafted to
 * collide (correlation ids 2^47 apart filled one slot chain: 50,000
 * launches took 11 s) collide only by chance whatever the input.  Results
 * never depend on it: no table is iterated in slot order.
 */
uint64_t prism_hash_seed(void);

/* splitmix64's finaliser: a bijection of 64 bits that mixes every bit of
 * x into every bit of the result. */
static inline uint64_t prism_mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * Every allocation of prism's own goes through these (free() releases what
 * they return): malloc, calloc, realloc and strdup, except that a test may
 * make them fail.  prism_alloc_fail(n, persist): the n-th allocation from
 * now (0: the next) fails, and with persist every one after it too; n < 0
 * stops failing.  prism_alloc_failed(): how many have failed since the last
 * prism_alloc_fail.  Counters are atomic; production never sets them.
 * (Libraries allocate for themselves -- libconfig, GSL, the C library's
 * opendir, open_memstream and fopencookie, zlib for .gz outputs -- except
 * zlib's inflate and SQLite, which the trace reader and tests/test_faults.c
 * point here.)
 */
void *prism_malloc(size_t n);
void *prism_calloc(size_t n, size_t size);
void *prism_realloc(void *p, size_t n);
char *prism_strdup(const char *s);
void prism_alloc_fail(long n, int persist);
long prism_alloc_failed(void);

/* qsort comparator of int64_t, ascending. */
int prism_cmp_i64(const void *a, const void *b);

#endif
