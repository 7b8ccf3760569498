/* prism.c - status code table and the first-error record. */
#include "prism.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

int prism_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}
