/*
 * strtab.h - string interning.
 *
 * Each distinct string is stored once and named by a dense uint32 id,
 * assigned in order of first appearance (so ids are deterministic for a
 * given input).  Id 0 is always the empty string.  Strings may contain any
 * byte but NUL; they are stored NUL-terminated in one growable block.
 *
 * Ownership: the table owns its memory; pointers from strtab_get() stay
 * valid until the next strtab_intern() (the block may move) or
 * strtab_release().
 */
#ifndef PRISM_STRTAB_H
#define PRISM_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#define STRTAB_NONE UINT32_MAX

struct strtab {
	char *buf;	 /* all strings, NUL-terminated, back to back */
	size_t len, cap; /* bytes used / allocated in buf */
	uint32_t *off;	 /* off[id] = byte offset of string id in buf */
	uint32_t n;	 /* number of strings */
	uint32_t off_cap;
	uint32_t *slots; /* open-addressing hash: id + 1, 0 = empty */
	uint32_t nslots; /* power of two */
	uint64_t seed;	 /* of the hash (prism_hash_seed): ids never depend on it */
};

/* Empty table holding only "" as id 0.  0 or PRISM_ENOMEM. */
int strtab_init(struct strtab *st);
void strtab_release(struct strtab *st);

/* The table emptied to "" alone, as strtab_init leaves it (the same ids
 * from there), its memory kept for the next strings (one table refilled
 * per graph of a search); strtab_init where it holds none.  0 or
 * PRISM_ENOMEM. */
int strtab_clear(struct strtab *st);

/* A deep copy (same ids).  0 or PRISM_ENOMEM (dst then empty). */
int strtab_copy(struct strtab *dst, const struct strtab *src);

/*
 * Id of s[0..len), adding it if new.  Returns 0 and sets *id, or
 * PRISM_ENOMEM / PRISM_ELIMIT (over 4 GiB of strings).
 */
int strtab_intern(struct strtab *st, const char *s, size_t len, uint32_t *id);

/* Id of s[0..len) if present, else STRTAB_NONE. */
uint32_t strtab_find(const struct strtab *st, const char *s, size_t len);

/* The string named by id (id < st->n). */
static inline const char *strtab_get(const struct strtab *st, uint32_t id)
{
	return st->buf + st->off[id];
}

#endif
