/* test_pareto.c - a sweep's results ranked (search/pareto.h), on rows made
 * by hand. */
#include <stdlib.h>
#include <string.h>

#include "pareto.h"
#include "testutil.h"

/* A simulated row: gpus, iter_s, ZeRO stage; the rest as one layout. */
static struct pareto_row row(const char *key, int gpus, double iter_s, int zero)
{
	struct pareto_row r;
	memset(&r, 0, sizeof(r));
	snprintf(r.key, sizeof(r.key), "%s", key);
	r.gpus = gpus;
	r.iter_s = iter_s;
	r.gpuh = gpus * iter_s / 3600;
	r.mem_gb = 40;
	snprintf(r.partition, sizeof(r.partition), "even");
	r.v[LK_tp] = r.v[LK_pp] = r.v[LK_vp] = r.v[LK_mbs] = 1;
	r.v[LK_dp] = gpus;
	r.v[LK_schedule] = LAYOUT_1F1B;
	r.v[LK_zero] = zero;
	return r;
}

/*
 * At 8 GPUs: a (1.0 s) and b (1.0 s, ZeRO-1, same memory) are one run
 * under two names, collapsed into the simpler a; c (1.05 s) is within the
 * 8.7 % tie of the best, d (1.2 s) is not.  At 16 GPUs e (0.6 s): faster
 * than 8 GPUs (the time front), but 9.6 GPU-seconds against 8 (not on the
 * GPU-hours front).
 */
static void test_rank(void **state)
{
	struct pareto P;
	(void)state;
	memset(&P, 0, sizeof(P));
	P.n = 5;
	P.rows = malloc(P.n * sizeof(*P.rows));
	assert_non_null(P.rows);
	/* Sorted by gpus, iter_s, key, as pareto_read gives them. */
	P.rows[0] = row("b", 8, 1.0, 1);
	P.rows[1] = row("a", 8, 1.0, 0);
	P.rows[2] = row("c", 8, 1.05, 0);
	P.rows[3] = row("d", 8, 1.2, 0);
	P.rows[4] = row("e", 16, 0.6, 0);
	assert_int_equal(pareto_rank(&P, 0.087), 0);
	assert_int_equal(P.nb, 2);
	assert_int_equal(P.best[0], 0);
	assert_int_equal(P.best[1], 4);
	/* The simpler name heads the run. */
	assert_string_equal(P.rows[0].key, "a");
	assert_int_equal(P.rows[0].n_same, 1);
	assert_string_equal(P.rows[1].key, "b");
	assert_int_equal(P.rows[1].same_as, 0);
	assert_int_equal(P.collapsed[PARETO_SAME_ZERO], 1);
	assert_int_equal(P.rows[2].near_tie, 1);
	assert_int_equal(P.rows[3].near_tie, 0);
	assert_int_equal(pareto_near_ties(&P, 0), 1);
	assert_int_equal(P.on_time[0], 1);
	assert_int_equal(P.on_time[1], 1);
	assert_int_equal(P.on_hours[0], 1);
	assert_int_equal(P.on_hours[1], 0);
	/* Another knob apart: two runs, not collapsed. */
	P.rows[0] = row("a", 8, 1.0, 0);
	P.rows[1] = row("b", 8, 1.0, 1);
	P.rows[1].v[LK_bucket_mb] = 25;
	assert_int_equal(pareto_rank(&P, 0.087), 0);
	assert_int_equal(P.rows[1].same_as, -1);
	assert_int_equal(P.rows[1].near_tie, 1);
	pareto_release(&P);
}

/* Rows' knobs as text: names canonical or "?", the partition as stored. */
static void test_text(void **state)
{
	struct pareto_row r = row("a", 8, 1, 0);
	char v[64];
	(void)state;
	pareto_knob_text(&r, LK_schedule, v, sizeof(v));
	assert_string_equal(v, "1f1b");
	r.v[LK_recompute] = -1; /* not a name prism knows */
	pareto_knob_text(&r, LK_recompute, v, sizeof(v));
	assert_string_equal(v, "?");
	pareto_knob_text(&r, LK_partition, v, sizeof(v));
	assert_string_equal(v, "even");
	pareto_knob_text(&r, LK_dp, v, sizeof(v));
	assert_string_equal(v, "8");
	assert_true(pareto_knob(LK_tp) && !pareto_knob(LK_imbalance));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rank),
	    cmocka_unit_test(test_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
