/*
 * evq.h - the simulator's pending-event queue: a binary min-heap of small
 * by-value entries in one flat array.
 *
 * Entries are ordered by time, then by the order they were pushed (a
 * sequence counter), so ties are broken deterministically.  There is no
 * decrease-key: a caller that needs one pushes a new entry and skips the
 * stale one when it is popped.  The earliest entry may be held beside
 * the heap (evq.hot below); the order popped is the same.  Capacity is reserved once and kept across
 * evq_reset(), so a simulation loop allocates nothing.
 */
#ifndef PRISM_EVQ_H
#define PRISM_EVQ_H

#include <stddef.h>
#include <stdint.h>

struct evq_entry {
	int64_t time_ns;
	uint64_t seq;  /* push order; set by evq_push (renumbered, order kept,
			* when it would pass evq.seq_limit) */
	uint32_t node; /* the caller's payload (a node id) */
};

/* An entry as the heap holds it: 16 bytes, the sequence number and the
 * node in one word (seq << 32 | node), so that (time, key) orders as
 * (time, seq) does -- no two pending entries share a sequence number. */
struct evq_item {
	int64_t time_ns;
	uint64_t key;
};

/* hot: the entry pushed last, held out of the heap while it is the
 * earliest of all (has_hot): a push that the next pop takes -- a folded
 * task's next piece, followed beside a collective -- moves no heap entry.
 * seq_limit: the sequence numbers stay below it (2^32 - 1 from
 * evq_init; a test sets it lower): a push that reaches it first
 * renumbers the pending entries 0, 1, ... in their order, which changes
 * no order popped. */
struct evq {
	struct evq_item *heap;
	size_t n, cap;
	uint64_t next_seq, seq_limit;
	struct evq_item hot;
	int has_hot;
};

/* Empty queue with room for cap entries.  0 or PRISM_ENOMEM. */
int evq_init(struct evq *q, size_t cap);
void evq_release(struct evq *q);

/* Empty the queue, keeping its capacity; sequence numbers restart. */
void evq_reset(struct evq *q);

/* Whether a goes before b: by time, then by push order. */
static inline int evq_before(const struct evq_item *a, const struct evq_item *b)
{
	return a->time_ns < b->time_ns || (a->time_ns == b->time_ns && a->key < b->key);
}

/* evq_push's parts out of line: e into the heap (0 or PRISM_ENOMEM), and
 * the pending entries renumbered (evq.seq_limit). */
int evq_heap_push(struct evq *q, struct evq_item e);
void evq_renumber(struct evq *q);

/* Add (time, node).  Grows if full: 0 or PRISM_ENOMEM.  The held entry
 * is before every entry of the heap (the keys are distinct: no two share
 * a sequence number), so the earliest pending entry is it where there is
 * one, else the heap's root. */
static inline int evq_push(struct evq *q, int64_t time_ns, uint32_t node)
{
	struct evq_item e;

	if (q->next_seq >= q->seq_limit)
		evq_renumber(q);
	e.time_ns = time_ns;
	e.key = q->next_seq++ << 32 | node;
	if (q->has_hot) {
		if (!evq_before(&e, &q->hot))
			return evq_heap_push(q, e);
		/* e goes before the held entry, which goes before the heap. */
		int rc = evq_heap_push(q, q->hot);
		if (rc)
			return rc;
	} else if (q->n > 0 && !evq_before(&e, &q->heap[0])) {
		return evq_heap_push(q, e);
	}
	q->hot = e;
	q->has_hot = 1;
	return 0;
}

/* Remove the earliest entry into *out.  0, or 1 if the queue is empty.
 * The held entry's pop inline; the heap's in evq_pop_heap. */
int evq_pop_heap(struct evq *q, struct evq_entry *out);
static inline int evq_pop(struct evq *q, struct evq_entry *out)
{
	if (!q->has_hot)
		return evq_pop_heap(q, out);
	out->time_ns = q->hot.time_ns;
	out->seq = q->hot.key >> 32;
	out->node = (uint32_t)q->hot.key;
	q->has_hot = 0;
	return 0;
}

static inline size_t evq_size(const struct evq *q)
{
	return q->n + (q->has_hot != 0);
}

#endif
