/* prism.c - status code table and the first-error record. */
#include "prism.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

const char *prism_status_name(int code)
{
	switch (code) {
#define PRISM_X_NAME(name, val, msg)                                                               \
	case (val):                                                                                \
		return "PRISM_E" #name;
		PRISM_STATUS_MAP(PRISM_X_NAME)
#undef PRISM_X_NAME
	}
	return "PRISM_E?";
}

const char *prism_status_msg(int code)
{
	switch (code) {
#define PRISM_X_MSG(name, val, msg)                                                                \
	case (val):                                                                                \
		return msg;
		PRISM_STATUS_MAP(PRISM_X_MSG)
#undef PRISM_X_MSG
	}
	return "unknown status";
}

void prism_err_clear(struct prism_err *err)
{
	err->code = 0;
	err->msg[0] = '\0';
}

int prism_err_set(struct prism_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err || err->code != 0)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

void prism_err_prefix(struct prism_err *err, const char *fmt, ...)
{
	char old[sizeof(err->msg)];
	size_t n, k, cap = sizeof(err->msg) - 1;
	va_list ap;
	int w;

	if (!err || err->code == 0)
		return;
	memcpy(old, err->msg, sizeof(old));
	va_start(ap, fmt);
	w = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	n = w < 0 ? 0 : (size_t)w < cap ? (size_t)w : cap;
	/* ": " and the old message, as much as fits. */
	for (const char *p = ": "; *p && n < cap; p++)
		err->msg[n++] = *p;
	k = strlen(old);
	if (k > cap - n)
		k = cap - n;
	memcpy(err->msg + n, old, k);
	err->msg[n + k] = '\0';
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 (overlong forms,
 * surrogates and code points past U+10FFFF are invalid). */
static int utf8_len(const unsigned char *s)
{
	unsigned c = s[0], n, cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, cp = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, cp = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return (int)n;
}

void prism_fput_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	putc('"', f);
	while (*p) {
		int n = utf8_len(p);
		if (n == 0) { /* not UTF-8: the replacement character, not the byte */
			fputs("\\ufffd", f);
			p++;
		} else if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p++);
		} else if (*p < 0x20) {
			fprintf(f, "\\u%04x", *p++);
		} else {
			fwrite(p, 1, (size_t)n, f);
			p += n;
		}
	}
	putc('"', f);
}

size_t prism_utf8_check(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		unsigned c = p[i];
		size_t len;
		unsigned lo = 0x80, hi = 0xbf; /* range of the second byte */
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
		else
			return i;
		if (i + 1 >= n || p[i + 1] < lo || p[i + 1] > hi)
			return i;
		for (size_t k = 2; k < len; k++)
			if (i + k >= n || p[i + k] < 0x80 || p[i + k] > 0xbf)
				return i;
		i += len;
	}
	return n;
}

/* Allocation failure injection (tests only): the countdown to the failing
 * allocation, -1 when none; whether failures persist; how many failed. */
static _Atomic long alloc_countdown = -1;
static _Atomic int alloc_persist;
static _Atomic long alloc_failures;

void prism_alloc_fail(long n, int persist)
{
	alloc_persist = persist;
	alloc_failures = 0;
	alloc_countdown = n < 0 ? -1 : n;
}

long prism_alloc_failed(void)
{
	return alloc_failures;
}

/* 1 when this allocation is to fail. */
static int alloc_fails(void)
{
	long c = alloc_countdown;

	if (c < 0)
		return 0;
	if (c > 0) {
		/* Another thread may have taken it meanwhile: then this one
		 * counts again on the next call. */
		if (atomic_compare_exchange_strong(&alloc_countdown, &c, c - 1))
			return 0;
		return alloc_fails();
	}
	if (!alloc_persist)
		alloc_countdown = -1;
	alloc_failures++;
	return 1;
}

void *prism_malloc(size_t n)
{
	return alloc_fails() ? NULL : malloc(n);
}

void *prism_calloc(size_t n, size_t size)
{
	return alloc_fails() ? NULL : calloc(n, size);
}

void *prism_realloc(void *p, size_t n)
{
	return alloc_fails() ? NULL : realloc(p, n);
}

char *prism_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = prism_malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

uint64_t prism_hash_seed(void)
{
	uint64_t seed = 0;
	struct timespec t;

	if (getentropy(&seed, sizeof(seed)) == 0)
		return seed;
	/* No entropy source: the clock and where the stack lies. */
	clock_gettime(CLOCK_MONOTONIC, &t);
	return prism_mix64((uint64_t)t.tv_nsec ^ ((uint64_t)t.tv_sec << 32) ^
			   (uint64_t)(uintptr_t)&t);
}

int prism_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* gzip through stdio: a FILE whose writes go to a gzFile (fopencookie). */
static ssize_t gz_write(void *c, const char *buf, size_t n)
{
	size_t done = 0;
	while (done < n) {
		unsigned k = n - done > (1u << 30) ? 1u << 30 : (unsigned)(n - done);
		int w = gzwrite((gzFile)c, buf + done, k);
		if (w <= 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)w;
	}
	return (ssize_t)n;
}

static int gz_close(void *c)
{
	return gzclose((gzFile)c) == Z_OK ? 0 : -1;
}

/* 1 when path ends in ".gz". */
static int gz_name(const char *path)
{
	size_t n = strlen(path);
	return n > 3 && strcmp(path + n - 3, ".gz") == 0;
}

/* w->f over fd: plain, or gzip for a *.gz path (fd is then the gzFile's,
 * and w->sync_fd a second descriptor of the file, to fsync it once the
 * stream is closed).  fd is closed on failure. */
static int wrap(struct prism_wfile *w, int fd)
{
	static const cookie_io_functions_t gz_io = {NULL, gz_write, NULL, gz_close};
	gzFile gz;

	if (!gz_name(w->path)) {
		if (!(w->f = fdopen(fd, "wb"))) {
			close(fd);
			return -1;
		}
		return 0;
	}
	if ((w->sync_fd = dup(fd)) < 0) {
		close(fd);
		return -1;
	}
	if (!(gz = gzdopen(fd, "wb"))) {
		close(fd);
		close(w->sync_fd);
		w->sync_fd = -1;
		errno = ENOMEM;
		return -1;
	}
	if (!(w->f = fopencookie(gz, "wb", gz_io))) {
		gzclose(gz);
		close(w->sync_fd);
		w->sync_fd = -1;
		return -1;
	}
	return 0;
}

/* prism_wfile_open, or with in_place 0 prism_wfile_replace. */
static int wfile_open(struct prism_wfile *w, const char *path, int in_place)
{
	struct stat sb;
	int fd = -1;

	w->f = NULL;
	w->path = path;
	w->tmp[0] = '\0';
	w->sync_fd = -1;
	/* "-": standard output (after what was printed there before). */
	if (in_place && strcmp(path, "-") == 0) {
		fflush(stdout);
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -1 : wrap(w, fd);
	}
	if (in_place && lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		return fd < 0 ? -1 : wrap(w, fd);
	}
	/* A stale PATH.tmp.PID of an earlier process with our pid is never
	 * overwritten: the next suffix is tried. */
	for (int k = 0; fd < 0 && k < 100; k++) {
		if (snprintf(w->tmp, sizeof(w->tmp), k ? "%s.tmp.%ld.%d" : "%s.tmp.%ld", path,
			     (long)getpid(), k) >= (int)sizeof(w->tmp)) {
			w->tmp[0] = '\0';
			errno = ENAMETOOLONG;
			return -1;
		}
		fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0 || wrap(w, fd)) {
		int e = errno;
		if (fd >= 0)
			unlink(w->tmp);
		w->tmp[0] = '\0';
		errno = e;
		return -1;
	}
	return 0;
}

int prism_wfile_open(struct prism_wfile *w, const char *path)
{
	return wfile_open(w, path, 1);
}

int prism_wfile_replace(struct prism_wfile *w, const char *path)
{
	return wfile_open(w, path, 0);
}

int prism_wfile_commit(struct prism_wfile *w)
{
	int ok = fflush(w->f) == 0 && !ferror(w->f), e;

	/* A gzip stream is complete once closed; then its bytes are synced
	 * through the second descriptor. */
	if (ok && w->tmp[0] && w->sync_fd < 0)
		ok = fsync(fileno(w->f)) == 0;
	e = errno;
	if (fclose(w->f) != 0 && ok) {
		ok = 0;
		e = errno ? errno : EIO;
	}
	w->f = NULL;
	if (w->sync_fd >= 0) {
		if (ok && w->tmp[0] && fsync(w->sync_fd) != 0) {
			ok = 0;
			e = errno;
		}
		close(w->sync_fd);
		w->sync_fd = -1;
	}
	if (ok && w->tmp[0] && rename(w->tmp, w->path) != 0) {
		ok = 0;
		e = errno;
	}
	if (!ok && w->tmp[0])
		unlink(w->tmp);
	w->tmp[0] = '\0';
	if (ok)
		return 0;
	/* A write that failed with no errno of its own (ferror) says EIO. */
	errno = e ? e : EIO;
	return -1;
}

void prism_wfile_abort(struct prism_wfile *w)
{
	if (w->f) {
		fclose(w->f);
		if (w->sync_fd >= 0)
			close(w->sync_fd);
	}
	w->f = NULL;
	w->sync_fd = -1;
	if (w->tmp[0])
		unlink(w->tmp);
	w->tmp[0] = '\0';
}

int prism_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

const char *prism_special_file(const char *path)
{
	struct stat sb;
	if (stat(path, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode))
		return NULL;
	return S_ISFIFO(sb.st_mode)   ? "a FIFO"
	       : S_ISCHR(sb.st_mode)  ? "a character device"
	       : S_ISBLK(sb.st_mode)  ? "a block device"
	       : S_ISSOCK(sb.st_mode) ? "a socket"
				      : "not a file";
}

/* 1 when s is a plain decimal number ("-1.5e-3"): a spreadsheet reads it
 * as one, never as a formula. */
static int csv_number(const char *s)
{
	char *end;
	if (!s[0] || strspn(s, "0123456789+-.eE") != strlen(s))
		return 0;
	(void)strtod(s, &end);
	return *end == '\0';
}

void prism_fput_csv_str(FILE *f, const char *s)
{
	int formula = s[0] && strchr("=+-@\t\r", s[0]) && !csv_number(s);
	if (!strpbrk(s, ",\"\r\n")) {
		if (formula)
			putc('\'', f);
		fputs(s, f);
		return;
	}
	putc('"', f);
	if (formula)
		putc('\'', f);
	for (; *s; s++) {
		if (*s == '"')
			putc('"', f);
		putc(*s, f);
	}
	putc('"', f);
}
