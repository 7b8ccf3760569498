/* input.c - plain or gzip byte streams with first-error reporting. */
#define _POSIX_C_SOURCE 200809L
#include "input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define ZBUF_SIZE (256u * 1024u)

struct input {
	FILE *f;
	const char *path;
	uint64_t file_size;
	int gz;
	int zdone;         /* gzip stream finished and no further member */
	z_stream z;
	unsigned char *zbuf;
	unsigned char peek[2];
	size_t npeek;      /* bytes of peek[] not yet returned (plain files) */
};

int input_open(const char *path, struct input **out, struct prism_err *err)
{
	struct stat sb;
	struct input *in;

	*out = NULL;
	if (stat(path, &sb) != 0)
		return prism_err_set(err, PRISM_EIO, "%s: %s", path, strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return prism_err_set(err, PRISM_EIO, "%s: is a directory, not a trace file", path);
	if (sb.st_size == 0)
		return prism_err_set(err, PRISM_EFORMAT, "%s: byte 0: empty file", path);
	in = calloc(1, sizeof(*in));
	if (!in)
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	in->path = path;
	in->file_size = (uint64_t)sb.st_size;
	in->f = fopen(path, "rb");
	if (!in->f) {
		int e = errno;
		free(in);
		return prism_err_set(err, PRISM_EIO, "%s: %s", path, strerror(e));
	}
	in->npeek = fread(in->peek, 1, 2, in->f);
	if (in->npeek == 2 && in->peek[0] == 0x1f && in->peek[1] == 0x8b) {
		in->gz = 1;
		in->zbuf = malloc(ZBUF_SIZE);
		if (!in->zbuf || inflateInit2(&in->z, 15 + 16) != Z_OK) {
			input_free(in);
			return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
		}
		in->zbuf[0] = 0x1f;
		in->zbuf[1] = 0x8b;
		in->z.next_in = in->zbuf;
		in->z.avail_in = 2;
		in->npeek = 0;
	}
	*out = in;
	return 0;
}

int input_is_gzip(const struct input *in) { return in->gz; }

uint64_t input_file_size(const struct input *in) { return in->file_size; }

static long read_plain(struct input *in, unsigned char *buf, size_t n, struct prism_err *err)
{
	size_t got = 0;

	while (in->npeek && got < n) {
		buf[got++] = in->peek[2 - in->npeek];
		in->npeek--;
	}
	if (got < n) {
		got += fread(buf + got, 1, n - got, in->f);
		if (ferror(in->f))
			return prism_err_set(err, PRISM_EIO, "%s: read error: %s", in->path,
					     strerror(errno));
	}
	return (long)got;
}

static long read_gz(struct input *in, unsigned char *buf, size_t n, struct prism_err *err)
{
	in->z.next_out = buf;
	in->z.avail_out = (uInt)n;
	while (in->z.avail_out > 0 && !in->zdone) {
		int rc;
		if (in->z.avail_in == 0) {
			size_t r = fread(in->zbuf, 1, ZBUF_SIZE, in->f);
			if (ferror(in->f))
				return prism_err_set(err, PRISM_EIO, "%s: read error: %s",
						     in->path, strerror(errno));
			if (r == 0)
				return prism_err_set(err, PRISM_EFORMAT,
						     "%s: compressed byte %lu: truncated gzip data",
						     in->path, (unsigned long)in->z.total_in);
			in->z.next_in = in->zbuf;
			in->z.avail_in = (uInt)r;
		}
		rc = inflate(&in->z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			/* Another member may follow (concatenated gzip). */
			if (in->z.avail_in == 0) {
				size_t r = fread(in->zbuf, 1, ZBUF_SIZE, in->f);
				in->z.next_in = in->zbuf;
				in->z.avail_in = (uInt)r;
			}
			if (in->z.avail_in == 0)
				in->zdone = 1;
			else if (inflateReset(&in->z) != Z_OK)
				return prism_err_set(err, PRISM_EFORMAT, "%s: corrupt gzip data",
						     in->path);
		} else if (rc != Z_OK && rc != Z_BUF_ERROR) {
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s: compressed byte %lu: corrupt gzip data (%s)",
					     in->path, (unsigned long)in->z.total_in,
					     in->z.msg ? in->z.msg : "inflate failed");
		}
	}
	return (long)(n - in->z.avail_out);
}

long input_read(struct input *in, void *buf, size_t n, struct prism_err *err)
{
	if (n == 0)
		return 0;
	return in->gz ? read_gz(in, buf, n, err) : read_plain(in, buf, n, err);
}

void input_free(struct input *in)
{
	if (!in)
		return;
	if (in->gz)
		inflateEnd(&in->z);
	free(in->zbuf);
	if (in->f)
		fclose(in->f);
	free(in);
}
