/*
 * test_faults.c - every allocation that fails ends in a clear error.
 *
 * Each workload below -- the trace reader and graph builder (plain and
 * gzip), the graph file loader and writer, synth and its settling, the
 * simulator and timeline, the graph edits (layers x2 and a pipeline
 * cut), the results store, and a hardware profile with prism kernels'
 * measurement reader --
 * is run again and again with the N-th allocation failing, N = 0, 1, 2,
 * ... until a run meets no failure: once with every allocation after the
 * N-th failing too, once with the N-th alone (SQLite's test_malloc, Lua's
 * ltests).  Every run must return either success or an error whose record
 * says "out of memory"; the sanitizer build (scripts/test) checks that no
 * path crashes, reads freed memory or leaks (LeakSanitizer at exit).
 * SQLite allocates through prism_malloc here (SQLITE_CONFIG_MALLOC), so
 * its own failures are injected too.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "calib.h"
#include "edit.h"
#include "frame.h"
#include "kbench.h"
#include "mem.h"
#include "pipeline.h"
#include "reshape.h"
#include "kineto.h"
#include "metrics.h"
#include "settle.h"
#include "sim.h"
#include "store.h"
#include "sweep.h"
#include "synth.h"
#include "testutil.h"
#include "timeline.h"

static char dir[64]; /* the test's files */
static struct hw_profile hw;
static struct sweep sw;
static char *golden;
static size_t golden_n;

static void path_in(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

/* ---- SQLite through prism_malloc ---------------------------------------- */

/* Each block is preceded by its size (SQLite asks for it back). */
static void *sq_malloc(int n)
{
	int64_t *p = prism_malloc((size_t)n + 8);
	if (!p)
		return NULL;
	p[0] = n;
	return p + 1;
}

static void sq_free(void *p)
{
	if (p)
		free((int64_t *)p - 1);
}

static void *sq_realloc(void *p, int n)
{
	int64_t *q;
	if (!p)
		return sq_malloc(n);
	q = prism_realloc((int64_t *)p - 1, (size_t)n + 8);
	if (!q)
		return NULL;
	q[0] = n;
	return q + 1;
}

static int sq_size(void *p)
{
	return p ? (int)((int64_t *)p - 1)[0] : 0;
}

static int sq_roundup(int n)
{
	return (n + 7) & ~7;
}

static int sq_init(void *x)
{
	(void)x;
	return SQLITE_OK;
}

static void sq_shutdown(void *x)
{
	(void)x;
}

/* ---- the workloads: 0, or a negative code with err set ------------------- */

static int trace_mem(struct prism_err *err)
{
	struct kineto_trace tr;
	struct strtab st;
	struct build_opts o;
	struct graph *g = NULL;
	int rc;

	build_opts_default(&o);
	if (strtab_init(&st))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory (strtab)");
	rc = kineto_read_mem(golden, golden_n, "golden", &st, &tr, err);
	if (rc == 0)
		rc = build_graph(&tr, 1, &st, &o, &g, err);
	if (rc == 0)
		rc = graph_check(g, err);
	graph_free(g);
	kineto_release(&tr);
	strtab_release(&st);
	return rc;
}

static int trace_gzip(struct prism_err *err)
{
	struct kineto_trace tr[2];
	struct strtab st;
	struct build_opts o;
	struct graph *g = NULL;
	char path[128];
	int rc;

	build_opts_default(&o);
	path_in(path, sizeof(path), "golden.json.gz");
	if (strtab_init(&st))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory (strtab)");
	memset(tr, 0, sizeof(tr));
	rc = kineto_read(path, &st, &tr[0], err);
	if (rc == 0)
		rc = kineto_read(TEST_DATA("accum_2024.json"), &st, &tr[1], err);
	tr[1].has_rank = 1;
	tr[1].rank = 1;
	if (rc == 0)
		rc = build_graph(tr, 2, &st, &o, &g, err);
	graph_free(g);
	kineto_release(&tr[0]);
	kineto_release(&tr[1]);
	strtab_release(&st);
	return rc;
}

static int graph_file(struct prism_err *err)
{
	struct graph *g = NULL;
	char path[128], out[128];
	int rc;

	path_in(path, sizeof(path), "golden.prism");
	path_in(out, sizeof(out), "copy.prism");
	rc = graph_load(path, &g, err);
	if (rc == 0)
		rc = graph_save(g, out, err);
	graph_free(g);
	return rc;
}

static int synth_settle(struct prism_err *err)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g = NULL;
	int rc;

	synth_in_default(&in);
	in.m = (struct llm){.layers = 2,
			    .hidden = 256,
			    .heads = 4,
			    .ffn = 1024,
			    .seq = 128,
			    .vocab = 1000,
			    .name = "t"};
	in.hw = &hw;
	in.lay.pp = 2;
	in.lay.microbatches = 2;
	in.steps = 1;
	rc = synth_build(&in, &g, &so, err);
	if (rc == 0) {
		rc = settle_synth(g, &so, &st, err);
		synth_out_release(&so);
	}
	graph_free(g);
	return rc;
}

/* Layers x2 as a graph edit (reshape.h), then cut into two pipeline
 * stages (pipeline.h), simulated and written as a timeline. */
static int simulate(struct prism_err *err)
{
	struct graph *g = NULL, *e = NULL, *p = NULL;
	struct reshape_plan rp;
	struct reshape_stats rs;
	struct pipeline_plan pl;
	struct pipeline_stats ps;
	struct sim *s = NULL;
	struct sim_opts o;
	char path[128], tl[128];
	int32_t copies[64];
	int32_t nl = 0;
	int rc;

	path_in(path, sizeof(path), "layers.prism");
	path_in(tl, sizeof(tl), "timeline.json");
	sim_opts_default(&o);
	if ((rc = graph_load(path, &g, err)))
		return rc;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->layer[u] + 1 > nl)
			nl = g->layer[u] + 1;
	for (int32_t l = 0; l < nl && l < 64; l++)
		copies[l] = 2;
	reshape_plan_init(&rp);
	rp.layer_copies = copies;
	rp.n_layers = nl < 64 ? nl : 64;
	rc = reshape_apply(g, &rp, &e, &rs, err);
	memset(&pl, 0, sizeof(pl));
	pl.pp = 2;
	pl.schedule = LAYOUT_1F1B;
	pl.act_bytes = 1 << 20;
	pl.xfer_ns = 1000;
	pl.cpu_op_ns = pl.launch_ns = pl.event_ns = pl.gpu_lag_ns = 1000;
	if (rc == 0)
		rc = pipeline_split(e, &pl, &p, &ps, err);
	if (rc == 0 && !(s = sim_new(p)))
		rc = prism_err_set(err, PRISM_ENOMEM, "simulation: out of memory");
	if (rc == 0)
		rc = sim_run(s, &o, err);
	if (rc == 0)
		rc = timeline_write(s, tl, NULL, err);
	sim_free(s);
	graph_free(p);
	graph_free(e);
	graph_free(g);
	return rc;
}

static int store(struct prism_err *err)
{
	sqlite3 *db = NULL;
	struct cand c[4];
	struct store_run run = {"screen", 32, "", 0};
	char path[128], **keys = NULL;
	size_t nkeys = 0;
	long long id = 0;
	int resumed = 0, gpus[8], hws[8], seq[8], rc;
	double best[8];

	path_in(path, sizeof(path), "results.db");
	for (int i = 0; i < 4; i++) {
		assert_int_equal(sweep_candidate(&sw, (uint64_t)i, &c[i]), 0);
		c[i].status = i % 2 ? CS_SCREENED : CS_INVALID;
	}
	rc = store_open(path, &db, err);
	if (rc == 0)
		rc = store_sweep(db, &sw, &run, &id, &resumed, err);
	if (rc == 0)
		rc = store_put(db, id, c, 4, NULL, err);
	if (rc == 0)
		rc = store_keys(db, id, &keys, &nkeys, err);
	if (rc == 0)
		store_best(db, id, &sw, gpus, hws, seq, best, 8);
	if (rc == 0)
		rc = store_finish(db, id, err);
	store_keys_free(keys, nkeys);
	sqlite3_close(db);
	unlink(path);
	{
		char side[160];
		snprintf(side, sizeof(side), "%s-wal", path);
		unlink(side);
		snprintf(side, sizeof(side), "%s-shm", path);
		unlink(side);
	}
	/* SQLite's own failures come back as its messages: "out of memory". */
	return rc;
}

/* A hardware profile with its kernels group, and prism kernels' reader
 * over tests/data/kernels, every row predicted; prism calibrate's fits and
 * GEMM and attention shapes of the golden graph. */
static int kernels(struct prism_err *err)
{
	struct hw_profile h;
	struct kbench kb;
	struct graph *g = NULL;
	struct calib_gshape *gs = NULL;
	struct calib_ashape *as = NULL;
	char path[128];
	size_t ngs, nas;
	int rc;

	memset(&kb, 0, sizeof(kb));
	rc = hw_load(PRISM_SOURCE_DIR "/configs/hw/h100-dgx.cfg", &h, err);
	if (rc == 0)
		rc = kbench_read(&kb, TEST_DATA("kernels"), err);
	for (size_t i = 0; rc == 0 && i < kb.n; i++)
		(void)kbench_predict(&h, &kb.rows[i], 0);
	path_in(path, sizeof(path), "golden.prism");
	if (rc == 0)
		rc = graph_load(path, &g, err);
	if (rc == 0)
		rc = calib_gemm_shapes(g, &h, &gs, &ngs, err);
	if (rc == 0)
		rc = calib_attn_shapes(g, &as, &nas, err);
	if (rc == 0) {
		struct calib_class cc[KC_NCLASSES];
		struct calib_kmodel km;
		struct calib_comm cm[GC_NKINDS];
		if (calib_fit(g, &h, cc) || calib_kernel_model(g, &h, &km) ||
		    calib_comm_fit(g, &h, cm))
			rc = prism_err_set(err, PRISM_ENOMEM, "out of memory (calibrate)");
	}
	free(as);
	free(gs);
	graph_free(g);
	kbench_release(&kb);
	return rc;
}

/* The frameworks' files (frame.h): a Gemma 3 config.json (its nested
 * text_config) and DeepSeek-V3's, a Megatron-LM launch script, and a
 * layout exported as Megatron-LM arguments and read back. */
static int frameworks(struct prism_err *err)
{
	static const char *const files[] = {"hf/gemma3-4b.json", "hf/deepseek-v3.json",
					    "megatron/llama3-70b.sh"};
	struct frame_extra x;
	struct llm m, m2;
	struct layout l, l2;
	layout_mask given;
	char *text = NULL;
	size_t n = 0;
	FILE *f;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < sizeof(files) / sizeof(files[0]); i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s%s", TEST_DATA(""), files[i]);
		rc = frame_load_model(path, &m, &x, err);
	}
	if (rc)
		return rc;
	layout_default(&l);
	l.tp = 8;
	l.pp = 4;
	l.dp = 2;
	l.zero = 1;
	if (!(f = open_memstream(&text, &n)))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory (memstream)");
	rc = frame_export(f, FRAME_MEGATRON, &m, &l);
	fclose(f);
	if (rc)
		rc = prism_err_set(err, rc, "out of memory (export)");
	else
		rc = frame_import(FRAME_MEGATRON, "export", text, n, NULL, &m2, &l2, &given, &x,
				  err);
	free(text);
	return rc;
}

/* Run w with the n-th allocation failing, for n = 0, 1, ... until a run
 * meets none; each run succeeds or says "out of memory" (sqlite: a
 * failure SQLite reports in its words, but never that the database is
 * damaged or not prism's: out of memory is not the file's fault). */
static void inject(const char *name, int (*w)(struct prism_err *), int sqlite)
{
	long runs = 0;

	for (int persist = 1; persist >= 0; persist--) {
		for (long n = 0;; n++) {
			struct prism_err err;
			long failed;
			int rc;
			prism_err_clear(&err);
			prism_alloc_fail(n, persist);
			rc = w(&err);
			failed = prism_alloc_failed();
			prism_alloc_fail(-1, 0);
			runs++;
			if (!failed) {
				if (rc != 0)
					print_error("%s: %s\n", name, err.msg);
				assert_int_equal(rc, 0);
				break;
			}
			if (rc != 0 && (err.code == 0 || !err.msg[0] ||
					(!sqlite && !strstr(err.msg, "out of memory")) ||
					(sqlite && (strstr(err.msg, "not a results database") ||
						    strstr(err.msg, "damaged") ||
						    strstr(err.msg, "not a prism"))))) {
				print_error("%s: allocation %ld failing%s: rc %d, code %d: '%s'\n",
					    name, n, persist ? " (and after)" : "", rc, err.code,
					    err.msg);
				fail();
			}
		}
	}
	print_message("%s: %ld runs with an allocation failing\n", name, runs);
}

static void test_trace_mem(void **state)
{
	(void)state;
	inject("trace reader and builder", trace_mem, 0);
}

static void test_trace_gzip(void **state)
{
	(void)state;
	inject("gzip traces, two ranks", trace_gzip, 0);
}

static void test_graph_file(void **state)
{
	(void)state;
	inject("graph file load and save", graph_file, 0);
}

static void test_synth(void **state)
{
	(void)state;
	inject("synth and settle", synth_settle, 0);
}

static void test_simulate(void **state)
{
	(void)state;
	inject("layers x2, pipeline cut, simulation, timeline", simulate, 0);
}

static void test_store(void **state)
{
	(void)state;
	inject("results store", store, 1);
}

static void test_kernels(void **state)
{
	(void)state;
	inject("hardware profile and kernel measurements", kernels, 0);
}

static void test_frameworks(void **state)
{
	(void)state;
	inject("config.json, Megatron-LM arguments, export and import", frameworks, 0);
}

/* Inputs made once, without failures. */
static int setup(void **state)
{
	struct prism_err err;
	struct kineto_trace tr;
	struct strtab st;
	struct build_opts o;
	struct graph *g = NULL;
	char cmd[512], path[128];
	FILE *f;
	(void)state;

	/* In memory where there is a tmpfs: the store syncs each transaction. */
	strcpy(dir, access("/dev/shm", W_OK) == 0 ? "/dev/shm/prism-faults-XXXXXX"
						  : "/tmp/prism-faults-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	prism_err_clear(&err);
	if (hw_load(PRISM_SOURCE_DIR "/configs/hw/h100-dgx.cfg", &hw, &err) ||
	    sweep_load(TEST_DATA("sweeps/small.cfg"), &sw, &err))
		return -1;
	f = fopen(TEST_DATA("golden_2023.json"), "rb");
	if (!f)
		return -1;
	golden = malloc(1 << 20);
	golden_n = fread(golden, 1, 1 << 20, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gzip -c '%s' > '%s/golden.json.gz'",
		 TEST_DATA("golden_2023.json"), dir);
	if (system(cmd) != 0)
		return -1;
	build_opts_default(&o);
	for (int i = 0; i < 2; i++) {
		if (strtab_init(&st) ||
		    kineto_read(i ? TEST_DATA("layers_2024.json") : TEST_DATA("golden_2023.json"),
				&st, &tr, &err) ||
		    build_graph(&tr, 1, &st, &o, &g, &err))
			return -1;
		path_in(path, sizeof(path), i ? "layers.prism" : "golden.prism");
		if (graph_save(g, path, &err))
			return -1;
		graph_free(g);
		kineto_release(&tr);
		strtab_release(&st);
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	free(golden);
	sweep_release(&sw);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	static const sqlite3_mem_methods mem = {sq_malloc,  sq_free, sq_realloc,  sq_size,
						sq_roundup, sq_init, sq_shutdown, NULL};
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trace_mem),  cmocka_unit_test(test_trace_gzip),
	    cmocka_unit_test(test_graph_file), cmocka_unit_test(test_synth),
	    cmocka_unit_test(test_simulate),   cmocka_unit_test(test_store),
	    cmocka_unit_test(test_kernels),    cmocka_unit_test(test_frameworks),
	};
	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &mem) != SQLITE_OK ||
	    sqlite3_initialize() != SQLITE_OK)
		return 1;
	return cmocka_run_group_tests(tests, setup, teardown);
}
