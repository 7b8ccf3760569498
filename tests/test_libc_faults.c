/*
 * test_libc_faults.c - the readers whose parsing is another library's --
 * libconfig's (hardware profiles, models, sweeps) and simdjson's (traces,
 * plain and gzip) -- with the C library's allocator failing.
 *
 * This executable defines malloc, calloc and realloc, which take the C
 * library's place for every caller: prism, libconfig (its renamed calls
 * reach prism_malloc: model/base/cfg.c), simdjson (through operator new:
 * model/base/kjson.cpp), zlib, the C library itself (fopen's FILE, stdio's
 * buffers).  They forward to the C library's (under AddressSanitizer, to
 * its interceptors) but where a countdown says fail.  Each reader runs
 * again and again with the N-th allocation failing, N = 0, 1, 2, ...
 * until a run meets no failure, once with every allocation after the N-th
 * failing too, once with the N-th alone (as test_faults.c does through
 * prism_malloc).  Every run must either end in "out of memory"
 * (PRISM_ENOMEM) or give exactly what the reader gives without failures:
 * a setting libconfig dropped, its default read instead, is a failure here.
 * The sanitizer build (scripts/test) checks that no path crashes, reads
 * freed memory or leaks (LeakSanitizer at exit).  Every N is run: about
 * 2,200 runs in all, under a second (3 s under ASan).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hw.h"
#include "kineto.h"
#include "llm.h"
#include "sweep.h"
#include "testutil.h"

/* ---- the C library's allocator, failing on demand ------------------------ */

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifdef UNDER_ASAN
#define REAL(f) __interceptor_##f
#else
#define REAL(f) __libc_##f
#endif
void *REAL(malloc)(size_t n);
void *REAL(calloc)(size_t n, size_t size);
void *REAL(realloc)(void *p, size_t n);

static long countdown = -1; /* allocations to go before one fails; -1: none */
static int persist;	    /* every one after it fails too */
static long failed;	    /* how many failed */

static int fails(void)
{
	if (countdown < 0)
		return 0;
	if (countdown > 0) {
		countdown--;
		return 0;
	}
	if (!persist)
		countdown = -1;
	failed++;
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	return fails() ? NULL : REAL(malloc)(n);
}

void *calloc(size_t n, size_t size)
{
	return fails() ? NULL : REAL(calloc)(n, size);
}

void *realloc(void *p, size_t n)
{
	return fails() ? NULL : REAL(realloc)(p, n);
}

/* ---- the readers: 0 with what they read in out, or an error --------------- */

/* What a reader read, to compare with a run without failures. */
struct got {
	struct hw_profile hw;
	struct llm m;
	char text[1024]; /* a summary of what is not a plain struct */
};

static int hw(struct got *out, struct prism_err *err)
{
	return hw_load(PRISM_SOURCE_DIR "/configs/hw/h100-dgx.cfg", &out->hw, err);
}

static int model(struct got *out, struct prism_err *err)
{
	return llm_load(PRISM_SOURCE_DIR "/configs/models/deepseek-v3.cfg", &out->m, err);
}

static char dir[64]; /* the test's files */
static char sweep_path[128], gz_path[128];

/* A sweep (and the model and hardware it names), its first candidate.  It
 * names them by path: a name is looked up with fopen (search/cli.c), which
 * a failing allocation makes "no such file". */
static int sweep(struct got *out, struct prism_err *err)
{
	struct sweep s;
	struct cand c;
	int rc = sweep_load(sweep_path, &s, err);

	if (rc)
		return rc;
	out->hw = s.hw[0];
	out->m = s.m;
	rc = sweep_candidate(&s, 0, &c);
	snprintf(out->text, sizeof(out->text), "%.60s %.60s %.60s %d %g %g %d %d %zu %zu %d %d",
		 s.name, s.model_name, s.hw_name[0], s.global_batch, s.tokens, s.margin, s.gpus.n,
		 s.n_order, strlen(s.text), s.canon ? strlen(s.canon) : 0, rc, c.status);
	sweep_release(&s);
	return 0;
}

static int trace(const char *path, struct got *out, struct prism_err *err)
{
	struct kineto_trace tr;
	struct strtab st;
	int rc;

	if (strtab_init(&st))
		return prism_err_set(err, PRISM_ENOMEM, "out of memory (strtab)");
	rc = kineto_read(path, &st, &tr, err);
	if (rc == 0)
		snprintf(out->text, sizeof(out->text),
			 "%zu events %zu threads %zu comms %" PRId64 "/%" PRId64 " %" PRId64
			 " %" PRIu64 " %" PRIu64 " %u strings",
			 tr.events.n, tr.threads.n, tr.comms.n, tr.rank, tr.world_size,
			 tr.device_mem, tr.counts[KT_N_EVENTS], tr.counts[KT_N_KEPT], st.n);
	kineto_release(&tr);
	strtab_release(&st);
	return rc;
}

static int trace_plain(struct got *out, struct prism_err *err)
{
	return trace(TEST_DATA("golden_2023.json"), out, err);
}

static int trace_gzip(struct got *out, struct prism_err *err)
{
	return trace(gz_path, out, err);
}

/* Run r with the n-th allocation failing, n = 0, 1, ... until a run meets
 * none, every run out of memory or what a run without failures reads. */
static void inject(const char *name, int (*r)(struct got *, struct prism_err *))
{
	static struct got want, got;
	struct prism_err err;
	long runs = 0;

	countdown = -1; /* a test before that crashed may have left it */
	memset(&want, 0, sizeof(want));
	prism_err_clear(&err);
	if (r(&want, &err)) {
		print_error("%s: %s\n", name, err.msg);
		fail();
	}
	for (persist = 1; persist >= 0; persist--) {
		for (long n = 0;; n++, runs++) {
			int rc;
			memset(&got, 0, sizeof(got));
			prism_err_clear(&err);
			failed = 0;
			countdown = n;
			rc = r(&got, &err);
			countdown = -1;
			if (!failed) {
				assert_int_equal(rc, 0);
				break;
			}
			if (rc != 0 &&
			    (err.code != PRISM_ENOMEM || !strstr(err.msg, "out of memory"))) {
				print_error("%s: allocation %ld failing%s: code %d: '%s'\n", name,
					    n, persist ? " (and after)" : "", err.code, err.msg);
				fail();
			}
			if (rc == 0 && memcmp(&got, &want, sizeof(got)) != 0) {
				print_error(
				    "%s: allocation %ld failing%s: read something else: '%s' "
				    "for '%s'\n",
				    name, n, persist ? " (and after)" : "", got.text, want.text);
				fail();
			}
		}
	}
	print_message("%s: %ld runs with an allocation failing\n", name, runs);
}

/* Each reader is a test, named after what it reads. */
struct reader {
	const char *name;
	int (*read)(struct got *out, struct prism_err *err);
};

static void test_reader(void **state)
{
	const struct reader *r = *state;
	inject(r->name, r->read);
}

/* The gzip trace, and configs/sweeps/mixtral-8x7b-ep.cfg naming its model
 * and hardware by path. */
static int setup(void **state)
{
	char cmd[1024];
	(void)state;
	strcpy(dir, "/tmp/prism-libc-faults-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(gz_path, sizeof(gz_path), "%s/t.json.gz", dir);
	snprintf(sweep_path, sizeof(sweep_path), "%s/sweep.cfg", dir);
	snprintf(cmd, sizeof(cmd), "gzip -c '%s' > '%s'", TEST_DATA("golden_2023.json"), gz_path);
	if (system(cmd) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "sed -e 's|^model = \"|model = \"%s/configs/models/|; s|^model = \"\\(.*\\)\";|"
		 "model = \"\\1.cfg\";|' -e 's|^hw = \"h100-dgx\"|hw = \"%s/configs/hw/"
		 "h100-dgx.cfg\"|' '%s/configs/sweeps/mixtral-8x7b-ep.cfg' > '%s'",
		 PRISM_SOURCE_DIR, PRISM_SOURCE_DIR, PRISM_SOURCE_DIR, sweep_path);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	static struct reader readers[] = {
	    {"hardware profile (libconfig)", hw},
	    {"model (libconfig)", model},
	    {"sweep, its model and hardware (libconfig)", sweep},
	    {"trace (simdjson)", trace_plain},
	    {"gzip trace (simdjson, zlib)", trace_gzip},
	};
	struct CMUnitTest tests[sizeof(readers) / sizeof(readers[0])];

	for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++)
		tests[i] =
		    (struct CMUnitTest){readers[i].name, test_reader, NULL, NULL, &readers[i]};
	return cmocka_run_group_tests(tests, setup, teardown);
}
