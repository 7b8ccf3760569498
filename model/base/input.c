/* input.c - plain or gzip byte streams with first-error reporting. */
#define _POSIX_C_SOURCE 200809L
#include "input.h"

#include <errno.h>
#include <inttypes.h>
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
	int zdone;	    /* gzip stream finished and no further member */
	uint64_t member_at; /* compressed offset of the current gzip member */
	z_stream z;
	unsigned char *zbuf;
	unsigned char peek[2];
	size_t npeek;		  /* bytes of peek[] not yet returned (plain files) */
	const unsigned char *mem; /* memory input, or NULL */
	size_t mem_len, mem_pos;
};

/* Next compressed or plain bytes from the file or the buffer. */
static size_t raw_read(struct input *in, void *buf, size_t n)
{
	if (in->mem) {
		size_t k = in->mem_len - in->mem_pos < n ? in->mem_len - in->mem_pos : n;
		memcpy(buf, in->mem + in->mem_pos, k);
		in->mem_pos += k;
		return k;
	}
	return fread(buf, 1, n, in->f);
}

/* zlib's allocations go through prism_calloc too. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
	(void)opaque;
	return prism_calloc(items, size);
}

static void z_free(voidpf opaque, voidpf p)
{
	(void)opaque;
	free(p);
}

static int start_gzip(struct input *in, struct prism_err *err)
{
	in->gz = 1;
	in->zbuf = prism_malloc(ZBUF_SIZE);
	in->z.zalloc = z_alloc;
	in->z.zfree = z_free;
	in->z.opaque = Z_NULL;
	if (!in->zbuf || inflateInit2(&in->z, 15 + 16) != Z_OK) {
		free(in->zbuf);
		in->zbuf = NULL;
		in->gz = 0;
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", in->path);
	}
	in->zbuf[0] = 0x1f;
	in->zbuf[1] = 0x8b;
	in->z.next_in = in->zbuf;
	in->z.avail_in = 2;
	in->npeek = 0;
	return 0;
}

int input_open_mem(const void *data, size_t len, const char *name, struct input **out,
		   struct prism_err *err)
{
	struct input *in;

	*out = NULL;
	if (len == 0)
		return prism_err_set(err, PRISM_EFORMAT, "%s: byte 0: empty file", name);
	in = prism_calloc(1, sizeof(*in));
	if (!in)
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", name);
	in->path = name;
	in->file_size = len;
	in->mem = data;
	in->mem_len = len;
	in->npeek = raw_read(in, in->peek, 2);
	if (in->npeek == 2 && in->peek[0] == 0x1f && in->peek[1] == 0x8b) {
		int rc = start_gzip(in, err);
		if (rc) {
			free(in);
			return rc;
		}
	}
	*out = in;
	return 0;
}

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
	in = prism_calloc(1, sizeof(*in));
	if (!in)
		return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
	in->path = path;
	in->file_size = (uint64_t)sb.st_size;
	in->f = fopen(path, "rb");
	if (!in->f) {
		int e = errno;
		free(in);
		if (e == ENOMEM) /* the C library's FILE */
			return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", path);
		return prism_err_set(err, PRISM_EIO, "%s: %s", path, strerror(e));
	}
	in->npeek = raw_read(in, in->peek, 2);
	if (in->npeek == 2 && in->peek[0] == 0x1f && in->peek[1] == 0x8b) {
		int rc = start_gzip(in, err);
		if (rc) {
			input_free(in);
			return rc;
		}
	}
	*out = in;
	return 0;
}

int input_is_gzip(const struct input *in)
{
	return in->gz;
}

uint64_t input_file_size(const struct input *in)
{
	return in->file_size;
}

static long read_plain(struct input *in, unsigned char *buf, size_t n, struct prism_err *err)
{
	size_t got = 0;

	while (in->npeek && got < n) {
		buf[got++] = in->peek[2 - in->npeek];
		in->npeek--;
	}
	if (got < n) {
		got += raw_read(in, buf + got, n - got);
		if (in->f && ferror(in->f))
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
			size_t r = raw_read(in, in->zbuf, ZBUF_SIZE);
			if (in->f && ferror(in->f))
				return prism_err_set(err, PRISM_EIO, "%s: read error: %s", in->path,
						     strerror(errno));
			if (r == 0)
				return prism_err_set(err, PRISM_EFORMAT,
						     "%s: compressed byte %" PRIu64
						     ": truncated gzip data",
						     in->path, in->member_at + in->z.total_in);
			in->z.next_in = in->zbuf;
			in->z.avail_in = (uInt)r;
		}
		rc = inflate(&in->z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			/* Another member may follow (concatenated gzip). */
			if (in->z.avail_in == 0) {
				size_t r = raw_read(in, in->zbuf, ZBUF_SIZE);
				in->z.next_in = in->zbuf;
				in->z.avail_in = (uInt)r;
			}
			if (in->z.avail_in == 0) {
				in->zdone = 1;
			} else {
				/* total_in restarts with each member: offsets in
				 * messages count from the file's start. */
				in->member_at += in->z.total_in;
				if (inflateReset(&in->z) != Z_OK)
					return prism_err_set(err, PRISM_EFORMAT,
							     "%s: corrupt gzip data", in->path);
			}
		} else if (rc == Z_MEM_ERROR) {
			return prism_err_set(err, PRISM_ENOMEM, "%s: out of memory", in->path);
		} else if (rc != Z_OK && rc != Z_BUF_ERROR) {
			if (in->member_at > 0 && in->z.total_out == 0)
				return prism_err_set(
				    err, PRISM_EFORMAT,
				    "%s: compressed byte %" PRIu64
				    ": not a gzip member after the one that ends there "
				    "(%s; trailing garbage?)",
				    in->path, in->member_at,
				    in->z.msg ? in->z.msg : "inflate failed");
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s: compressed byte %" PRIu64
					     ": corrupt gzip data (%s)",
					     in->path, in->member_at + in->z.total_in,
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
