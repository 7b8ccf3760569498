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
	uint64_t seq;  /* push order; set by evq_push */
	uint32_t node; /* the caller's payload (a node id) */
};

/* hot: the entry pushed last, held out of the heap while it is the
 * earliest of all (has_hot): a push that the next pop takes -- a folded
 * task's next piece, followed beside a collective -- moves no heap entry. */
struct evq {
	struct evq_entry *heap;
	size_t n, cap;
	uint64_t next_seq;
	struct evq_entry hot;
	int has_hot;
};

/* Empty queue with room for cap entries.  0 or PRISM_ENOMEM. */
int evq_init(struct evq *q, size_t cap);
void evq_release(struct evq *q);

/* Empty the queue, keeping its capacity; sequence numbers restart. */
void evq_reset(struct evq *q);

/* Add (time, node).  Grows if full: 0 or PRISM_ENOMEM. */
int evq_push(struct evq *q, int64_t time_ns, uint32_t node);

/* Remove the earliest entry into *out.  0, or 1 if the queue is empty. */
int evq_pop(struct evq *q, struct evq_entry *out);

static inline size_t evq_size(const struct evq *q)
{
	return q->n + (q->has_hot != 0);
}

#endif
