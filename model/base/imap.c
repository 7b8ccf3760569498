/* imap.c - int64 -> uint32 open-addressing map. */
#include "imap.h"

#include <stdlib.h>
#include <string.h>

#include "prism.h"

static size_t slot_of(const struct imap *m, int64_t key, size_t cap)
{
	return (size_t)prism_mix64((uint64_t)key + m->seed) & (cap - 1);
}

uint32_t imap_get(const struct imap *m, int64_t key)
{
	if (m->cap == 0)
		return IMAP_NONE;
	for (size_t i = slot_of(m, key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key)
			return m->vals[i];
		if (m->keys[i] == IMAP_EMPTY)
			return IMAP_NONE;
	}
}

static int grow(struct imap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	int64_t *keys = prism_malloc(ncap * sizeof(*keys));
	uint32_t *vals = prism_malloc(ncap * sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return PRISM_ENOMEM;
	}
	if (m->cap == 0)
		m->seed = prism_hash_seed();
	for (size_t i = 0; i < ncap; i++)
		keys[i] = IMAP_EMPTY;
	for (size_t j = 0; j < m->cap; j++) {
		if (m->keys[j] == IMAP_EMPTY)
			continue;
		size_t i = slot_of(m, m->keys[j], ncap);
		while (keys[i] != IMAP_EMPTY)
			i = (i + 1) & (ncap - 1);
		keys[i] = m->keys[j];
		vals[i] = m->vals[j];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = ncap;
	return 0;
}

int imap_put(struct imap *m, int64_t key, uint32_t val, uint32_t *old)
{
	if ((m->n + 1) * 2 > m->cap && grow(m))
		return PRISM_ENOMEM;
	for (size_t i = slot_of(m, key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			if (old)
				*old = m->vals[i];
			return 0;
		}
		if (m->keys[i] == IMAP_EMPTY) {
			m->keys[i] = key;
			m->vals[i] = val;
			m->n++;
			if (old)
				*old = IMAP_NONE;
			return 0;
		}
	}
}

void imap_clear(struct imap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		m->keys[i] = IMAP_EMPTY;
	m->n = 0;
}

void imap_release(struct imap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
