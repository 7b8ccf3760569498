/*
 * imap.h - open-addressing hash map from int64 keys to uint32 values.
 *
 * Used for correlation ids and (pid, tid) keys: flat arrays, linear
 * probing, no per-entry allocation.  Keys are mixed with the map's own
 * seed (prism.h), so that no input can make them collide on purpose.  The
 * key INT64_MIN is reserved.  Zero-initialise an empty map.
 */
#ifndef PRISM_IMAP_H
#define PRISM_IMAP_H

#include <stddef.h>
#include <stdint.h>

#define IMAP_EMPTY INT64_MIN
#define IMAP_NONE  UINT32_MAX

struct imap {
	int64_t *keys;
	uint32_t *vals;
	size_t cap; /* power of two, 0 before the first insert */
	size_t n;
	uint64_t seed; /* prism_hash_seed, drawn at the first insert */
};

/* Value of key, or IMAP_NONE. */
uint32_t imap_get(const struct imap *m, int64_t key);

/*
 * Insert key -> val.  If key is present its value is left alone and
 * *old receives it (old may be NULL); otherwise *old = IMAP_NONE.
 * 0 or PRISM_ENOMEM.
 */
int imap_put(struct imap *m, int64_t key, uint32_t val, uint32_t *old);

/* Every key removed, the room kept (a map refilled again and again). */
void imap_clear(struct imap *m);

void imap_release(struct imap *m);

#endif
