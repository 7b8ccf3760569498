/* test_evq.c - the event heap against a stable sort of the same entries. */
#include <stdlib.h>

#include "evq.h"
#include "testutil.h"

struct ref {
	int64_t t;
	uint64_t seq;
	uint32_t node;
};

static int cmp_ref(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void test_matches_sorted_reference(void **state)
{
	enum { N = 20000 };
	static struct ref ref[N];
	struct evq q;
	struct evq_entry e;
	(void)state;

	assert_int_equal(evq_init(&q, 4), 0); /* forces growth */
	srand(42);
	for (int round = 0; round < 3; round++) {
		evq_reset(&q);
		for (uint32_t i = 0; i < N; i++) {
			/* Few distinct times: ties must come out in push order. */
			ref[i].t = rand() % 97;
			ref[i].seq = i;
			ref[i].node = i;
			assert_int_equal(evq_push(&q, ref[i].t, i), 0);
		}
		qsort(ref, N, sizeof(ref[0]), cmp_ref);
		for (uint32_t i = 0; i < N; i++) {
			assert_int_equal(evq_pop(&q, &e), 0);
			assert_int_equal(e.time_ns, ref[i].t);
			assert_int_equal(e.node, ref[i].node);
		}
		assert_int_equal(evq_pop(&q, &e), 1);
		assert_int_equal(evq_size(&q), 0);
	}
	evq_release(&q);
}

static void test_interleaved(void **state)
{
	struct evq q;
	struct evq_entry e;
	(void)state;
	assert_int_equal(evq_init(&q, 2), 0);
	evq_push(&q, 30, 1);
	evq_push(&q, 10, 2);
	assert_int_equal(evq_pop(&q, &e), 0);
	assert_int_equal(e.node, 2);
	evq_push(&q, 30, 3);
	evq_push(&q, 5, 4);
	assert_int_equal(evq_pop(&q, &e), 0);
	assert_int_equal(e.node, 4);
	assert_int_equal(evq_pop(&q, &e), 0);
	assert_int_equal(e.node, 1); /* pushed before node 3 at the same time */
	assert_int_equal(evq_pop(&q, &e), 0);
	assert_int_equal(e.node, 3);
	evq_release(&q);
}

/* The entry held beside the heap (evq.h): an entry pushed while it is
 * the earliest is popped first, but one of the same time as an entry
 * pushed before it is not (push order), whether that entry is the held
 * one or the heap's root; an entry pushed before the held one sends the
 * held one into the heap. */
static void test_hot(void **state)
{
	struct evq q;
	struct evq_entry e;
	static const uint32_t want[] = {1, 2, 5, 3, 4, 6, 7, 8};
	(void)state;
	assert_int_equal(evq_init(&q, 1), 0);
	evq_push(&q, 10, 1); /* held */
	evq_push(&q, 10, 2); /* same time, after it: the heap */
	assert_int_equal(evq_size(&q), 2);
	assert_int_equal(evq_pop(&q, &e), 0);
	assert_int_equal(e.node, want[0]);
	assert_int_equal(evq_pop(&q, &e), 0);
	assert_int_equal(e.node, want[1]);
	evq_push(&q, 20, 3); /* held (the heap is empty) */
	evq_push(&q, 20, 4); /* the heap */
	evq_push(&q, 15, 5); /* before the held one: it goes into the heap */
	for (int i = 2; i < 5; i++) {
		assert_int_equal(evq_pop(&q, &e), 0);
		assert_int_equal(e.node, want[i]);
	}
	evq_push(&q, 30, 6); /* held */
	evq_push(&q, 40, 7); /* the heap */
	assert_int_equal(evq_pop(&q, &e), 0);
	assert_int_equal(e.node, want[5]);
	evq_push(&q, 40, 8); /* the root's time, pushed after it: not held */
	for (int i = 6; i < 8; i++) {
		assert_int_equal(evq_pop(&q, &e), 0);
		assert_int_equal(e.node, want[i]);
	}
	assert_int_equal(evq_pop(&q, &e), 1);
	assert_int_equal(evq_size(&q), 0);
	evq_push(&q, 50, 9);
	evq_reset(&q); /* forgets the held entry too */
	assert_int_equal(evq_size(&q), 0);
	assert_int_equal(evq_pop(&q, &e), 1);
	evq_release(&q);
}

/* Pushes and pops interleaved at random (times a little ahead of the last
 * popped, many ties), against the earliest (time, push order) of the
 * pending entries found by a scan. */
static void test_random_interleaved(void **state)
{
	enum { N = 4000 };
	static struct ref pend[N];
	struct evq q;
	struct evq_entry e;
	size_t np = 0;
	uint64_t seq = 0;
	int64_t now = 0;
	(void)state;

	assert_int_equal(evq_init(&q, 1), 0);
	srand(7);
	for (int step = 0; step < 4 * N; step++) {
		if (np < N && (np == 0 || rand() % 5 < 3)) {
			pend[np] = (struct ref){now + rand() % 13, seq++, (uint32_t)step};
			assert_int_equal(evq_push(&q, pend[np].t, pend[np].node), 0);
			np++;
		} else {
			size_t b = 0;
			for (size_t i = 1; i < np; i++)
				if (cmp_ref(&pend[i], &pend[b]) < 0)
					b = i;
			assert_int_equal(evq_pop(&q, &e), 0);
			assert_int_equal(e.time_ns, pend[b].t);
			assert_int_equal(e.seq, pend[b].seq);
			assert_int_equal(e.node, pend[b].node);
			now = e.time_ns;
			pend[b] = pend[--np];
		}
		assert_int_equal(evq_size(&q), np);
	}
	evq_release(&q);
}

/* Sequence numbers renumbered when they reach the queue's limit (set
 * low here; 2^32 - 1 in a simulation): the pending entries' order, and so
 * the order popped, is that of the pushes all the same -- checked against
 * a scan by (time, push order) as above, over many renumberings, with a
 * held entry and many ties among them.  Renumbering the heap's entries
 * where they lie, without sorting them first, fails it. */
static void test_renumber(void **state)
{
	enum { N = 48 };
	static struct ref pend[N];
	struct evq q;
	struct evq_entry e;
	size_t np = 0;
	uint64_t seq = 0, last_seq = 0;
	int64_t now = 0;
	int renumbered = 0;
	(void)state;

	assert_int_equal(evq_init(&q, 1), 0);
	q.seq_limit = 64; /* above the N pending */
	srand(11);
	for (int step = 0; step < 40 * N; step++) {
		if (np < N && (np == 0 || rand() % 5 < 3)) {
			pend[np] = (struct ref){now + rand() % 5, seq++, (uint32_t)step};
			assert_int_equal(evq_push(&q, pend[np].t, pend[np].node), 0);
			renumbered += q.next_seq < last_seq;
			last_seq = q.next_seq;
			np++;
		} else {
			size_t b = 0;
			for (size_t i = 1; i < np; i++)
				if (cmp_ref(&pend[i], &pend[b]) < 0)
					b = i;
			assert_int_equal(evq_pop(&q, &e), 0);
			assert_int_equal(e.time_ns, pend[b].t);
			assert_int_equal(e.node, pend[b].node);
			assert_true(e.seq < q.seq_limit);
			now = e.time_ns;
			pend[b] = pend[--np];
		}
		assert_int_equal(evq_size(&q), np);
	}
	assert_true(renumbered > 10);
	evq_release(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_matches_sorted_reference),
	    cmocka_unit_test(test_interleaved),
	    cmocka_unit_test(test_random_interleaved),
	    cmocka_unit_test(test_hot),
	    cmocka_unit_test(test_renumber),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
