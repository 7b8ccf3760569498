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

const char *prism_status_name(int code)
{
	switch (code) {
#define PRISM_X_NAME(name, val, msg) \
	case (val):                  \
		return "PRISM_E" #name;
		PRISM_STATUS_MAP(PRISM_X_NAME)
#undef PRISM_X_NAME
	}
	return "PRISM_E?";
}

const char *prism_status_msg(int code)
{
	switch (code) {
#define PRISM_X_MSG(name, val, msg) \
	case (val):                 \
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

void prism_fput_json_str(FILE *f, const char *s)
{
	putc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			putc(c, f);
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

int prism_wfile_open(struct prism_wfile *w, const char *path)
{
	struct stat sb;
	int fd = -1;

	w->f = NULL;
	w->path = path;
	w->tmp[0] = '\0';
	if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		w->f = fopen(path, "wb");
		return w->f ? 0 : -1;
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
	if (fd < 0 || !(w->f = fdopen(fd, "wb"))) {
		int e = errno;
		if (fd >= 0) {
			close(fd);
			unlink(w->tmp);
		}
		w->tmp[0] = '\0';
		errno = e;
		return -1;
	}
	return 0;
}

int prism_wfile_commit(struct prism_wfile *w)
{
	int ok = fflush(w->f) == 0 && !ferror(w->f), e;

	if (ok && w->tmp[0])
		ok = fsync(fileno(w->f)) == 0;
	e = errno;
	if (fclose(w->f) != 0 && ok) {
		ok = 0;
		e = errno;
	}
	w->f = NULL;
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
	if (w->f)
		fclose(w->f);
	w->f = NULL;
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
