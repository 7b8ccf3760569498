/*
 * infer.h - layers found from repeated op sequences.
 *
 * A trace recorded without prism:: ranges still shows its layers: a
 * transformer's forward pass launches the same ops, with the same input
 * shapes, once per layer.  infer_repeat() finds the longest such run in a
 * sequence of op keys (name and shapes as one id): the block of `period`
 * ops that repeats `count` >= 2 times back to back from `first`, covering
 * the most ops (ties: the shorter block, then the earlier start), among
 * blocks of at least INFER_MIN_NAMES distinct op names (so that 150
 * parameter copies in a row are not taken for layers).  The run starts as
 * early as the repetition does, so where the op before the first layer
 * equals a layer's last op the blocks come out rotated by that much.
 *
 * Candidate periods are the distances between consecutive occurrences of
 * the same key, the most frequent first; each is checked in one pass, so
 * the work is O(n log n + n * INFER_MAX_PERIODS) (sorting the keys, then
 * the passes), not quadratic in n.
 */
#ifndef PRISM_INFER_H
#define PRISM_INFER_H

#include <stddef.h>
#include <stdint.h>

#define INFER_MIN_PERIOD  2 /* a single repeated op is not a layer */
#define INFER_MIN_NAMES	  3 /* distinct op names in a block */
#define INFER_MAX_PERIODS 32

struct infer_repeat {
	size_t first;  /* index of the first op of the first block */
	size_t period; /* ops per block */
	size_t count;  /* blocks, 0 if no repeat was found */
};

/* The best repeat in s[0..n) (r->count = 0 if none); names[i] is op i's
 * name (s itself if NULL).  0, or PRISM_ENOMEM. */
int infer_repeat(const uint32_t *s, const uint32_t *names, size_t n, struct infer_repeat *r);

#endif
