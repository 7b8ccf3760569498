/* infer.c - the longest run of repeated op blocks (infer.h). */
#include "infer.h"

#include <stdlib.h>
#include <string.h>

#include "prism.h"

struct kpos {
	uint32_t key;
	uint32_t pos;
};

static int cmp_kpos(const void *pa, const void *pb)
{
	const struct kpos *a = pa, *b = pb;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (a->pos > b->pos) - (a->pos < b->pos);
}

static int cmp_size(const void *pa, const void *pb)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	return (a > b) - (a < b);
}

struct cand {
	size_t period, n; /* a distance between equal keys, and how often */
};

static int cmp_cand(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	return (a->period > b->period) - (a->period < b->period);
}

static int cmp_u32(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	return (a > b) - (a < b);
}

/* Distinct values in v[0..n), sorted in scratch. */
static size_t distinct(const uint32_t *v, size_t n, uint32_t *scratch)
{
	size_t d = 0;
	memcpy(scratch, v, n * sizeof(*v));
	qsort(scratch, n, sizeof(*scratch), cmp_u32);
	for (size_t i = 0; i < n; i++)
		d += i == 0 || scratch[i] != scratch[i - 1];
	return d;
}

/* The best run of blocks of period p in s (count 0 if none). */
static void check_period(const uint32_t *s, const uint32_t *names, size_t n, size_t p,
			 uint32_t *scratch, struct infer_repeat *best)
{
	size_t i = 0;
	while (i + p < n) {
		size_t j = i, count, cover;
		while (j + p < n && s[j] == s[j + p])
			j++;
		/* s[i..j) equals s[i+p..j+p): blocks of p from i cover j - i + p. */
		count = (j - i + p) / p;
		cover = count * p;
		if (count >= 2 &&
		    (cover > best->period * best->count ||
		     (cover == best->period * best->count && p < best->period)) &&
		    distinct(names + i, p, scratch) >= INFER_MIN_NAMES) {
			best->first = i;
			best->period = p;
			best->count = count;
		}
		i = j + 1;
	}
}

int infer_repeat(const uint32_t *s, const uint32_t *names, size_t n, struct infer_repeat *r)
{
	struct kpos *kp;
	uint32_t *scratch;
	size_t *gap, ng = 0, nc = 0;
	struct cand *c;

	r->first = r->period = r->count = 0;
	if (n < 2 * INFER_MIN_PERIOD)
		return 0;
	kp = prism_malloc(n * sizeof(*kp));
	gap = prism_malloc(n * sizeof(*gap));
	c = prism_malloc(n * sizeof(*c));
	scratch = prism_malloc(n * sizeof(*scratch));
	if (!kp || !gap || !c || !scratch) {
		free(scratch);
		free(kp);
		free(gap);
		free(c);
		return PRISM_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		kp[i].key = s[i];
		kp[i].pos = (uint32_t)i;
	}
	qsort(kp, n, sizeof(*kp), cmp_kpos);
	for (size_t i = 1; i < n; i++) {
		size_t d = (size_t)(kp[i].pos - kp[i - 1].pos);
		if (kp[i].key == kp[i - 1].key && d >= INFER_MIN_PERIOD && d <= n / 2)
			gap[ng++] = d;
	}
	qsort(gap, ng, sizeof(*gap), cmp_size);
	for (size_t i = 0; i < ng;) {
		size_t j = i;
		while (j < ng && gap[j] == gap[i])
			j++;
		c[nc].period = gap[i];
		c[nc++].n = j - i;
		i = j;
	}
	qsort(c, nc, sizeof(*c), cmp_cand);
	for (size_t i = 0; i < nc && i < INFER_MAX_PERIODS; i++)
		check_period(s, names ? names : s, n, c[i].period, scratch, r);
	free(scratch);
	free(kp);
	free(gap);
	free(c);
	return 0;
}
