/*
 * vec.h - growable flat arrays.
 *
 * A VEC(T) is { T *v; size_t n, cap; }: v owns n live elements of cap
 * allocated.  Zero-initialise to get an empty vector; free(v.v) releases
 * it.  Growth doubles, so pushes are amortised O(1) and there is no
 * per-element allocation.
 */
#ifndef PRISM_VEC_H
#define PRISM_VEC_H

#include <stdlib.h>

#include "prism.h"

#define VEC(T)                                                                                     \
	struct {                                                                                   \
		T *v;                                                                              \
		size_t n;                                                                          \
		size_t cap;                                                                        \
	}

/* Ensure *cap >= need elements of size elem; 0 or PRISM_ENOMEM. */
static inline int vec_reserve_(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *nv;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	if (ncap > SIZE_MAX / elem)
		return PRISM_ENOMEM;
	nv = prism_realloc(*v, ncap * elem);
	if (!nv)
		return PRISM_ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

#define VEC_RESERVE(vec, need) vec_reserve_((void **)&(vec).v, &(vec).cap, (need), sizeof(*(vec).v))

/* The address of element i, or NULL while the array is unallocated (an
 * offset from a null pointer is undefined even when it is 0). */
#define VEC_AT(vec, i) ((vec).v ? (vec).v + (i) : NULL)

/* Append x; evaluates to 0 or PRISM_ENOMEM. */
#define VEC_PUSH(vec, x)                                                                           \
	(VEC_RESERVE((vec), (vec).n + 1) ? PRISM_ENOMEM : ((vec).v[(vec).n++] = (x), 0))

/* dst takes src's array, emptied (its room kept); src is left empty.  The
 * two may be distinct VEC types of the same element type. */
#define VEC_TAKE(dst, src)                                                                         \
	do {                                                                                       \
		(dst).v = (src).v;                                                                 \
		(dst).cap = (src).cap;                                                             \
		(dst).n = 0;                                                                       \
		(src).v = NULL;                                                                    \
		(src).n = (src).cap = 0;                                                           \
	} while (0)

#define VEC_FREE(vec)                                                                              \
	do {                                                                                       \
		free((vec).v);                                                                     \
		(vec).v = NULL;                                                                    \
		(vec).n = (vec).cap = 0;                                                           \
	} while (0)

#endif
