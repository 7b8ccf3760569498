/*
 * testutil.h - what every prism test includes: cmocka, helpers it lacks
 * in 1.1.5 (no assert_double_equal there), and the graph tests' edge
 * lookup.
 */
#ifndef PRISM_TESTUTIL_H
#define PRISM_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <cmocka.h>

#include "graph.h"

/* |a - b| <= rel * max(|a|, |b|), with a message naming both. */
#define assert_rel_close(a, b, rel)                                                                \
	do {                                                                                       \
		double a_ = (a), b_ = (b);                                                         \
		double m_ = fabs(a_) > fabs(b_) ? fabs(a_) : fabs(b_);                             \
		if (fabs(a_ - b_) > (rel)*m_) {                                                    \
			print_error("%.9g and %.9g differ by more than %g relative\n", a_, b_,     \
				    (double)(rel));                                                \
			fail();                                                                    \
		}                                                                                  \
	} while (0)

/* 1 if g has an edge src -> dst of this kind (GE_INFERRED included). */
static inline int has_edge(const struct graph *g, uint32_t src, uint32_t dst, uint8_t kind)
{
	for (uint32_t e = g->out_off[src]; e < g->out_off[src + 1]; e++)
		if (g->out_dst[e] == dst && g->out_kind[e] == kind)
			return 1;
	return 0;
}

#ifndef PRISM_SOURCE_DIR
#define PRISM_SOURCE_DIR "."
#endif
#define TEST_DATA(name) PRISM_SOURCE_DIR "/tests/data/" name

#endif
