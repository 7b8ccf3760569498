/* evq.c - binary min-heap ordered by (time, sequence). */
#include "evq.h"

#include <stdlib.h>

#include "prism.h"

#define SEQ_MAX 0xffffffffu /* sequence numbers below it: 32 bits */

int evq_init(struct evq *q, size_t cap)
{
	q->heap = prism_malloc((cap ? cap : 1) * sizeof(*q->heap));
	q->n = 0;
	q->cap = cap ? cap : 1;
	q->next_seq = 0;
	q->seq_limit = SEQ_MAX;
	q->has_hot = 0;
	return q->heap ? 0 : PRISM_ENOMEM;
}

void evq_release(struct evq *q)
{
	free(q->heap);
	q->heap = NULL;
	q->n = q->cap = 0;
	q->has_hot = 0;
}

void evq_reset(struct evq *q)
{
	q->n = 0;
	q->next_seq = 0;
	q->has_hot = 0;
}

int evq_heap_push(struct evq *q, struct evq_item e)
{
	size_t i;

	if (q->n == q->cap) {
		struct evq_item *h = prism_realloc(q->heap, q->cap * 2 * sizeof(*h));
		if (!h)
			return PRISM_ENOMEM;
		q->heap = h;
		q->cap *= 2;
	}
	i = q->n++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!evq_before(&e, &q->heap[parent]))
			break;
		q->heap[i] = q->heap[parent];
		i = parent;
	}
	q->heap[i] = e;
	return 0;
}

static int cmp_item(const void *x, const void *y)
{
	const struct evq_item *a = x, *b = y;
	return evq_before(a, b) ? -1 : evq_before(b, a);
}

/* The pending entries' sequence numbers made 0, 1, ... in their order:
 * the heap sorted is a heap, and the held entry is before all of it. */
void evq_renumber(struct evq *q)
{
	uint64_t seq = 0;
	qsort(q->heap, q->n, sizeof(*q->heap), cmp_item);
	if (q->has_hot)
		q->hot.key = seq++ << 32 | (q->hot.key & SEQ_MAX);
	for (size_t i = 0; i < q->n; i++)
		q->heap[i].key = seq++ << 32 | (q->heap[i].key & SEQ_MAX);
	q->next_seq = seq;
}

int evq_pop_heap(struct evq *q, struct evq_entry *out)
{
	struct evq_item last;
	size_t i = 0;

	if (q->n == 0)
		return 1;
	out->time_ns = q->heap[0].time_ns;
	out->seq = q->heap[0].key >> 32;
	out->node = (uint32_t)q->heap[0].key;
	last = q->heap[--q->n];
	if (q->n == 0)
		return 0;
	/* The hole down to a leaf by the earlier child, then the last entry
	 * up from there (it belongs near the bottom): a comparison a level
	 * fewer than sifting it down.  Any heap of the same entries pops in
	 * the same order (no two keys are equal). */
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->n)
			break;
		if (c + 1 < q->n && evq_before(&q->heap[c + 1], &q->heap[c]))
			c++;
		q->heap[i] = q->heap[c];
		i = c;
	}
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!evq_before(&last, &q->heap[parent]))
			break;
		q->heap[i] = q->heap[parent];
		i = parent;
	}
	q->heap[i] = last;
	return 0;
}
