/*
 * input.h - a byte stream from a file, plain or gzip-compressed.
 *
 * Compression is detected from the content (gzip magic 1f 8b), not the file
 * name.  Concatenated gzip members are read as one stream.  Nothing is
 * buffered beyond a fixed block, so a trace of any size streams through in
 * constant memory.
 *
 * Errors name the file: "x.json.gz: corrupt gzip data at compressed byte 512
 * (invalid distance too far back)".  A directory, an unreadable file and a
 * 0-byte file are refused by input_open().
 */
#ifndef PRISM_INPUT_H
#define PRISM_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "prism.h"

struct input;

/* Open path for reading.  Returns 0 and *out (caller frees with
 * input_free), or a negative code with err filled in. */
int input_open(const char *path, struct input **out, struct prism_err *err);

/* A stream over the caller's buffer (kept, not copied; it must outlive the
 * stream).  name is used in messages.  Gzip is detected as for files. */
int input_open_mem(const void *data, size_t len, const char *name, struct input **out,
		   struct prism_err *err);

/* Read up to n bytes into buf.  Returns the number read (0 at the end of
 * the stream) or a negative code with err filled in. */
long input_read(struct input *in, void *buf, size_t n, struct prism_err *err);

/* 1 if the stream is gzip-compressed. */
int input_is_gzip(const struct input *in);

/* Size of the file on disk, in bytes. */
uint64_t input_file_size(const struct input *in);

void input_free(struct input *in);

#endif
