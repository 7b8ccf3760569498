/* evq.c - binary min-heap ordered by (time, sequence). */
#include "evq.h"

#include <stdlib.h>

#include "prism.h"

static int before(const struct evq_entry *a, const struct evq_entry *b)
{
	return a->time_ns < b->time_ns || (a->time_ns == b->time_ns && a->seq < b->seq);
}

int evq_init(struct evq *q, size_t cap)
{
	q->heap = prism_malloc((cap ? cap : 1) * sizeof(*q->heap));
	q->n = 0;
	q->cap = cap ? cap : 1;
	q->next_seq = 0;
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

/* e into the heap. */
static int heap_push(struct evq *q, struct evq_entry e)
{
	size_t i;

	if (q->n == q->cap) {
		struct evq_entry *h = prism_realloc(q->heap, q->cap * 2 * sizeof(*h));
		if (!h)
			return PRISM_ENOMEM;
		q->heap = h;
		q->cap *= 2;
	}
	i = q->n++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!before(&e, &q->heap[parent]))
			break;
		q->heap[i] = q->heap[parent];
		i = parent;
	}
	q->heap[i] = e;
	return 0;
}

/* The hot entry is before every entry of the heap (the keys are
 * distinct: no two share a sequence number), so the earliest pending entry
 * is it where there is one, else the heap's root. */
int evq_push(struct evq *q, int64_t time_ns, uint32_t node)
{
	struct evq_entry e = {time_ns, q->next_seq++, node};

	if (q->has_hot) {
		if (!before(&e, &q->hot))
			return heap_push(q, e);
		/* e goes before the hot entry, which goes before the heap. */
		if (heap_push(q, q->hot))
			return PRISM_ENOMEM;
	} else if (q->n > 0 && !before(&e, &q->heap[0])) {
		return heap_push(q, e);
	}
	q->hot = e;
	q->has_hot = 1;
	return 0;
}

int evq_pop(struct evq *q, struct evq_entry *out)
{
	struct evq_entry last;
	size_t i = 0;

	if (q->has_hot) {
		*out = q->hot;
		q->has_hot = 0;
		return 0;
	}
	if (q->n == 0)
		return 1;
	*out = q->heap[0];
	last = q->heap[--q->n];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->n)
			break;
		if (c + 1 < q->n && before(&q->heap[c + 1], &q->heap[c]))
			c++;
		if (!before(&q->heap[c], &last))
			break;
		q->heap[i] = q->heap[c];
		i = c;
	}
	if (q->n)
		q->heap[i] = last;
	return 0;
}
