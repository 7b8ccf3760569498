/*
 * fixtures.h - the setups the C tests share: the small GPT most cases
 * start from, a synthesis input of it on a profile, and a case row's
 * pipeline shape laid into that input.  Header-only (each test is one
 * executable); what a test asserts stays in the test.
 */
#ifndef PRISM_FIXTURES_H
#define PRISM_FIXTURES_H

#include "hw.h"
#include "llm.h"
#include "synth.h"

/* The small GPT: 8 layers, hidden 1024, 16 heads (each its own K and V),
 * FFN 4h, sequence 1024, vocabulary 32,000, named "t"; GeLU, tied,
 * learned positions (every other field 0). */
static inline struct llm fixture_small_gpt(void)
{
	return (struct llm){.layers = 8,
			    .hidden = 1024,
			    .heads = 16,
			    .ffn = 4096,
			    .seq = 1024,
			    .vocab = 32000,
			    .name = "t"};
}

/* synth_in_default with the small GPT on hw. */
static inline void fixture_small_in(struct synth_in *in, const struct hw_profile *hw)
{
	synth_in_default(in);
	in->m = fixture_small_gpt();
	in->hw = hw;
}

/* A case row c's pipeline shape into in->lay: its fields tp, pp, dp, vp,
 * m (microbatches), sched, rec, zero and sp, by those names. */
#define FIXTURE_SHAPE(in, c)                                                                       \
	do {                                                                                       \
		(in)->lay.tp = (c).tp;                                                             \
		(in)->lay.pp = (c).pp;                                                             \
		(in)->lay.dp = (c).dp;                                                             \
		(in)->lay.vp = (c).vp;                                                             \
		(in)->lay.microbatches = (c).m;                                                    \
		(in)->lay.schedule = (c).sched;                                                    \
		(in)->lay.recompute = (c).rec;                                                     \
		(in)->lay.zero = (c).zero;                                                         \
		(in)->lay.sp = (c).sp;                                                             \
	} while (0)

#endif
