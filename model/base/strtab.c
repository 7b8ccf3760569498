/* strtab.c - string interning with an open-addressing hash of ids. */
#include "strtab.h"

#include <stdlib.h>
#include <string.h>

#include "prism.h"

static uint64_t hash_bytes(const char *s, size_t len, uint64_t seed)
{
	/* Eight bytes a step (kernel names run to hundreds of bytes), then a
	 * final avalanche; memcpy keeps unaligned reads well-defined.  The
	 * table's seed makes crafted names collide by chance only. */
	uint64_t h = 0x9E3779B97F4A7C15ull ^ len ^ seed;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	if (i < len) {
		uint64_t w = 0;
		memcpy(&w, s + i, len - i);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static int rehash(struct strtab *st, uint32_t nslots)
{
	uint32_t *slots = prism_calloc(nslots, sizeof(*slots));
	if (!slots)
		return PRISM_ENOMEM;
	for (uint32_t id = 0; id < st->n; id++) {
		const char *s = st->buf + st->off[id];
		uint64_t h = hash_bytes(s, strlen(s), st->seed);
		uint32_t i = (uint32_t)h & (nslots - 1);
		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = id + 1;
	}
	free(st->slots);
	st->slots = slots;
	st->nslots = nslots;
	return 0;
}

int strtab_init(struct strtab *st)
{
	uint32_t id;

	memset(st, 0, sizeof(*st));
	st->seed = prism_hash_seed();
	/* A table that failed to start holds nothing: no release needed. */
	if (rehash(st, 1024) || strtab_intern(st, "", 0, &id)) {
		strtab_release(st);
		return PRISM_ENOMEM;
	}
	return 0;
}

int strtab_clear(struct strtab *st)
{
	uint32_t id;

	if (!st->slots)
		return strtab_init(st);
	memset(st->slots, 0, st->nslots * sizeof(*st->slots));
	st->len = 0;
	st->n = 0;
	return strtab_intern(st, "", 0, &id);
}

void strtab_release(struct strtab *st)
{
	free(st->buf);
	free(st->off);
	free(st->slots);
	memset(st, 0, sizeof(*st));
}

int strtab_copy(struct strtab *dst, const struct strtab *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->buf = prism_malloc(src->cap ? src->cap : 1);
	dst->off = prism_malloc((src->off_cap ? src->off_cap : 1) * sizeof(*dst->off));
	dst->slots = prism_malloc((src->nslots ? src->nslots : 1) * sizeof(*dst->slots));
	if (!dst->buf || !dst->off || !dst->slots) {
		strtab_release(dst);
		return PRISM_ENOMEM;
	}
	memcpy(dst->buf, src->buf, src->len);
	memcpy(dst->off, src->off, src->n * sizeof(*dst->off));
	memcpy(dst->slots, src->slots, src->nslots * sizeof(*dst->slots));
	dst->len = src->len;
	dst->cap = src->cap ? src->cap : 1;
	dst->n = src->n;
	dst->off_cap = src->off_cap ? src->off_cap : 1;
	dst->nslots = src->nslots;
	dst->seed = src->seed;
	return 0;
}

/* The length of string id: strings are stored back to back, each with its
 * NUL, in id order.  (Comparing len bytes of a shorter stored string would
 * read past it, and past the buffer for the last one.) */
static size_t stored_len(const struct strtab *st, uint32_t id)
{
	return (id + 1 < st->n ? st->off[id + 1] : st->len) - st->off[id] - 1;
}

uint32_t strtab_find(const struct strtab *st, const char *s, size_t len)
{
	uint32_t i = (uint32_t)hash_bytes(s, len, st->seed) & (st->nslots - 1);
	for (; st->slots[i]; i = (i + 1) & (st->nslots - 1)) {
		uint32_t id = st->slots[i] - 1;
		if (stored_len(st, id) == len && memcmp(st->buf + st->off[id], s, len) == 0)
			return id;
	}
	return STRTAB_NONE;
}

int strtab_intern(struct strtab *st, const char *s, size_t len, uint32_t *id)
{
	uint64_t h = hash_bytes(s, len, st->seed);
	uint32_t i = (uint32_t)h & (st->nslots - 1);

	for (; st->slots[i]; i = (i + 1) & (st->nslots - 1)) {
		uint32_t cand = st->slots[i] - 1;
		if (stored_len(st, cand) == len && memcmp(st->buf + st->off[cand], s, len) == 0) {
			*id = cand;
			return 0;
		}
	}
	if (st->len + len + 1 > UINT32_MAX || st->n == UINT32_MAX - 1)
		return PRISM_ELIMIT;
	if (st->len + len + 1 > st->cap) {
		size_t ncap = st->cap ? st->cap : 4096;
		while (ncap < st->len + len + 1)
			ncap *= 2;
		char *nb = prism_realloc(st->buf, ncap);
		if (!nb)
			return PRISM_ENOMEM;
		st->buf = nb;
		st->cap = ncap;
	}
	if (st->n == st->off_cap) {
		uint32_t ncap = st->off_cap ? st->off_cap * 2 : 256;
		uint32_t *no = prism_realloc(st->off, ncap * sizeof(*no));
		if (!no)
			return PRISM_ENOMEM;
		st->off = no;
		st->off_cap = ncap;
	}
	memcpy(st->buf + st->len, s, len);
	st->buf[st->len + len] = '\0';
	st->off[st->n] = (uint32_t)st->len;
	st->len += len + 1;
	st->slots[i] = st->n + 1;
	*id = st->n++;
	if ((uint64_t)st->n * 2 > st->nslots)
		return rehash(st, st->nslots * 2) ? PRISM_ENOMEM : 0;
	return 0;
}
