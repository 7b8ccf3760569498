/*
 * test_replay.c - `prism replay` end to end: its timeline reads back with
 * `prism ingest`, no two events of one processor overlap in it, and its
 * ProfilerStep spans equal the host spans replay reported; a step's time is
 * its GPU side where a host ran ahead (hand-made traces, worked by hand).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kineto.h"
#include "testutil.h"

/* Run a command; its stdout into out (NUL-terminated); returns status. */
static int capture(const char *cmd, char *out, size_t n)
{
	FILE *p = popen(cmd, "r");
	size_t got;
	assert_non_null(p);
	got = fread(out, 1, n - 1, p);
	out[got] = '\0';
	return pclose(p);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void check_trace(const char *trace)
{
	static char out[1 << 20];
	char tl[] = "/tmp/prism-timeline-XXXXXX", cmd[1024];
	int fd = mkstemp(tl);
	struct kineto_trace tr;
	struct strtab st;
	struct prism_err err;
	int64_t *pred = NULL;
	size_t npred = 0, nsteps = 0;
	int64_t *steps;

	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "'%s' replay --json --timeline '%s' %s", PRISM_BIN, tl, trace);
	assert_int_equal(capture(cmd, out, sizeof(out)), 0);
	/* The predicted host spans replay reported. */
	for (const char *p = out; (p = strstr(p, "\"predicted_host_ns\":")); p++) {
		pred = realloc(pred, (npred + 1) * sizeof(*pred));
		pred[npred++] = strtoll(p + 20, NULL, 10);
	}
	assert_true(npred > 0);

	/* The timeline ingests... */
	snprintf(cmd, sizeof(cmd), "'%s' ingest '%s' > /dev/null", PRISM_BIN, tl);
	assert_int_equal(system(cmd), 0);

	/* ...no processor runs two things at once... */
	prism_err_clear(&err);
	assert_int_equal(strtab_init(&st), 0);
	assert_int_equal(kineto_read(tl, &st, &tr, &err), 0);
	for (size_t t = 0; t < tr.threads.n; t++) {
		int64_t last_end = INT64_MIN;
		size_t n = 0;
		int64_t(*iv)[2] = malloc(tr.events.n * sizeof(*iv));
		for (size_t k = 0; k < tr.events.n; k++) {
			const struct kt_event *e = &tr.events.v[k];
			if (e->thread != t || e->kind == KT_USER_ANN || e->kind == KT_CPU_OP)
				continue;
			iv[n][0] = e->ts_ns;
			iv[n][1] = e->ts_ns + e->dur_ns;
			n++;
		}
		qsort(iv, n, sizeof(*iv), cmp_i64);
		for (size_t k = 0; k < n; k++) {
			if (iv[k][0] < last_end) {
				print_error("thread %zu: an event at %" PRId64
					    " ns starts before the "
					    "previous ends (%" PRId64 ")\n",
					    t, iv[k][0], last_end);
				fail();
			}
			last_end = iv[k][1];
		}
		free(iv);
	}
	/* ...and its steps last what replay said, to the nanosecond. */
	steps = malloc(tr.events.n * sizeof(*steps));
	for (size_t k = 0; k < tr.events.n; k++) {
		const struct kt_event *e = &tr.events.v[k];
		if (e->kind == KT_USER_ANN &&
		    strncmp(strtab_get(&st, e->name), "ProfilerStep#", 13) == 0)
			steps[nsteps++] = e->dur_ns;
	}
	assert_int_equal(nsteps, npred);
	for (size_t i = 0; i < nsteps; i++)
		assert_int_equal(steps[i], pred[i]);
	free(steps);
	free(pred);
	kineto_release(&tr);
	strtab_release(&st);
	unlink(tl);
}

static void test_golden_timelines(void **state)
{
	(void)state;
	check_trace(TEST_DATA("golden_2023.json"));
	check_trace(TEST_DATA("golden_2021.json"));
}

/* The first n values of "key":N in s, into v. */
static size_t json_ints(const char *s, const char *key, int64_t *v, size_t n)
{
	char pat[64];
	size_t k = 0;
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	for (const char *p = s; k < n && (p = strstr(p, pat)); p++)
		v[k++] = strtoll(p + strlen(pat), NULL, 10);
	return k;
}

/*
 * ahead_2024.json: two 1 ms host steps each launch a 5 ms kernel at +10 us;
 * the kernels run back to back from 20 us.  Step 1's GPU side is from its
 * kernel's start to step 2's (20 -> 5,020 us), step 2's its own kernel
 * (5,020 -> 10,020): both 5 ms, longer than the 1 ms host spans, so both
 * steps take 5 ms measured and predicted.  hostbound_2024.json: the same
 * with 10 us kernels: host spans (1 ms) decide, the GPU idles 99% and the
 * run is called host-bound.
 */
static void test_gpu_side(void **state)
{
	static char out[1 << 16];
	char cmd[1024];
	int64_t v[4];
	(void)state;
	snprintf(cmd, sizeof(cmd), "'%s' replay --json %s", PRISM_BIN,
		 TEST_DATA("ahead_2024.json"));
	assert_int_equal(capture(cmd, out, sizeof(out)), 0);
	assert_int_equal(json_ints(out, "measured_ns", v, 4), 2);
	assert_int_equal(v[0], 5000000);
	assert_int_equal(v[1], 5000000);
	assert_int_equal(json_ints(out, "host_ns", v, 4), 2);
	assert_int_equal(v[0], 1000000);
	assert_int_equal(json_ints(out, "gpu_ns", v, 4), 2);
	assert_int_equal(v[0], 5000000);
	assert_int_equal(v[1], 5000000);
	assert_int_equal(json_ints(out, "predicted_ns", v, 4), 2);
	assert_int_equal(v[0], 5000000);
	assert_int_equal(v[1], 5000000);
	snprintf(cmd, sizeof(cmd), "'%s' replay %s", PRISM_BIN, TEST_DATA("ahead_2024.json"));
	assert_int_equal(capture(cmd, out, sizeof(out)), 0);
	assert_null(strstr(out, "host-bound"));

	snprintf(cmd, sizeof(cmd), "'%s' replay --json %s", PRISM_BIN,
		 TEST_DATA("hostbound_2024.json"));
	assert_int_equal(capture(cmd, out, sizeof(out)), 0);
	assert_int_equal(json_ints(out, "measured_ns", v, 4), 2);
	assert_int_equal(v[0], 1000000);
	assert_int_equal(v[1], 1000000);
	assert_int_equal(json_ints(out, "gpu_ns", v, 4), 2);
	assert_int_equal(v[0], 1000000); /* kernel 1 at 20 us, kernel 2 at 1,020 us */
	assert_int_equal(v[1], 10000);	 /* the last step: its kernel alone */
	snprintf(cmd, sizeof(cmd), "'%s' replay %s", PRISM_BIN, TEST_DATA("hostbound_2024.json"));
	assert_int_equal(capture(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "host-bound: the GPU is idle 99% of every step"));
	check_trace(TEST_DATA("ahead_2024.json"));
}

/* A timeline of several ranks re-ingests as those ranks (issue 19: it
 * came back as one rank with every stream), and replays as the original. */
static void test_multirank_timeline(void **state)
{
	static char out[1 << 16], again[1 << 16];
	char tl[] = "/tmp/prism-timeline-XXXXXX", cmd[1024];
	const char *ranks =
	    TEST_DATA("mismatch_2024.rank0.json") " " TEST_DATA("mismatch_2024.rank1.json");
	int fd = mkstemp(tl);
	(void)state;

	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "'%s' replay --timeline '%s' %s | grep '^ProfilerStep'",
		 PRISM_BIN, tl, ranks);
	assert_int_equal(capture(cmd, out, sizeof(out)), 0);
	snprintf(cmd, sizeof(cmd), "'%s' ingest --json '%s' | grep -o '\"rank\":[0-9]*'", PRISM_BIN,
		 tl);
	assert_int_equal(capture(cmd, again, sizeof(again)), 0);
	assert_string_equal(again, "\"rank\":0\n\"rank\":1\n");
	/* The predicted steps, per rank, as the original replay's. */
	snprintf(cmd, sizeof(cmd),
		 "'%s' replay '%s' | grep '^ProfilerStep' | awk '{print $1, $2, $4}'", PRISM_BIN,
		 tl);
	assert_int_equal(capture(cmd, again, sizeof(again)), 0);
	snprintf(cmd, sizeof(cmd),
		 "'%s' replay %s | grep '^ProfilerStep' | awk '{print $1, $2, $4}'", PRISM_BIN,
		 ranks);
	assert_int_equal(capture(cmd, out, sizeof(out)), 0);
	assert_string_equal(again, out);
	unlink(tl);
}

static void test_shared_timelines(void **state)
{
	const char *dlrm = PRISM_SOURCE_DIR "/../shared/traces/param-dlrm-8rank-v100";
	const char *resnet = PRISM_SOURCE_DIR "/../shared/traces/kineto-resnet50-v100-torch19/"
					      "worker0.1623143089861.pt.trace.json.gz";
	char all[512];
	(void)state;
	if (access(resnet, R_OK) != 0 || access(dlrm, R_OK) != 0) {
		print_message("skipped: ../shared/traces not found beside the checkout\n");
		skip();
	}
	check_trace(resnet);
	snprintf(all, sizeof(all), "%s/*.json.gz", dlrm); /* the shell expands it */
	check_trace(all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_golden_timelines),
	    cmocka_unit_test(test_gpu_side),
	    cmocka_unit_test(test_multirank_timeline),
	    cmocka_unit_test(test_shared_timelines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
