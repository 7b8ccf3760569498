/*
 * msort.h - a natural merge sort for arrays that come in a few sorted runs.
 *
 * MSORT_RUNS(name, T, field) defines
 *     static void name(T *v, T *tmp, size_t n)
 * which sorts v[0..n) by the member `field` (ascending), tmp n entries of
 * scratch: the runs already in order (each stream's tasks, each rank's
 * steps, one after another) are merged pairwise until one is left, with no
 * allocation (qsort's buffer) and in time linear in n for a few runs.  The
 * merge is stable.
 */
#ifndef PRISM_MSORT_H
#define PRISM_MSORT_H

#include <string.h>

#define MSORT_RUNS(name, T, field)                                                                 \
	static void name(T *v, T *tmp, size_t n)                                                   \
	{                                                                                          \
		T *src = v, *dst = tmp;                                                            \
		for (;;) {                                                                         \
			size_t runs = 0, i = 0;                                                    \
			while (i < n) {                                                            \
				/* Two runs, [i, m) and [m, e), merged into dst. */                \
				size_t m = i + 1, e, a, b, k = i;                                  \
				while (m < n && src[m - 1].field <= src[m].field)                  \
					m++;                                                       \
				e = m < n ? m + 1 : m;                                             \
				while (e < n && src[e - 1].field <= src[e].field)                  \
					e++;                                                       \
				for (a = i, b = m; a < m && b < e;)                                \
					dst[k++] =                                                 \
					    src[b].field < src[a].field ? src[b++] : src[a++];     \
				while (a < m)                                                      \
					dst[k++] = src[a++];                                       \
				while (b < e)                                                      \
					dst[k++] = src[b++];                                       \
				runs++;                                                            \
				i = e;                                                             \
			}                                                                          \
			if (runs <= 1) {                                                           \
				if (dst != v) /* dst holds them; src was already */                \
					memcpy(v, dst, n * sizeof(*v));                            \
				return;                                                            \
			}                                                                          \
			src = dst;                                                                 \
			dst = dst == tmp ? v : tmp;                                                \
		}                                                                                  \
	}

#endif
