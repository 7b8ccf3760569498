/*
 * hash.h - the 64-bit hashes of in-memory keys (memos and tables keyed by
 * a struct's bytes).  Nothing stored depends on them but sweep.c's input
 * hash (FNV-1a, written into the store's run row).
 */
#ifndef PRISM_HASH_H
#define PRISM_HASH_H

#include <stdint.h>
#include <string.h>

#define HASH_SEED 0xcbf29ce484222325u /* FNV-1a's offset basis */

/* FNV-1a (64 bits) continued from h over the bytes p[0..n). */
static inline uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3u;
	return h;
}

/* The 64-bit words of p[0..n) mixed into h (FNV's prime, then a shift
 * folding the high bits down; n a multiple of 8, a tail left out): a
 * struct's key 8 bytes a step. */
static inline uint64_t hash_words(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0x100000001b3u;
		h ^= h >> 29;
	}
	return h;
}

#endif
