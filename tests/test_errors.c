/*
 * test_errors.c - bad input to `prism ingest`: one line naming the file,
 * the byte offset or event index and the field; exit status 2; no crash
 * (this test also runs in the sanitizer build, where a leak or an
 * out-of-bounds access changes the exit status and fails it).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prism.h"
#include "testutil.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/prism-errors-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fwrite(text, 1, strlen(text), f);
	fclose(f);
}

/* Run prism ingest on path; return its exit status, stderr in err. */
static int run_ingest(const char *path, char *err, size_t n)
{
	char cmd[512], errpath[128];
	FILE *f;
	size_t got;
	int st;

	snprintf(errpath, sizeof(errpath), "%s/stderr.txt", dir);
	snprintf(cmd, sizeof(cmd), "'%s' ingest '%s' >/dev/null 2>'%s'", PRISM_BIN, path, errpath);
	st = system(cmd);
	f = fopen(errpath, "rb");
	assert_non_null(f);
	got = fread(err, 1, n - 1, f);
	err[got] = '\0';
	fclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The file gets `text`; stderr must be "prism: <path><msg>\n", status 2. */
static void expect(const char *name, const char *text, const char *msg)
{
	char path[128], want[512], err[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (text)
		write_file(path, text);
	snprintf(want, sizeof(want), "prism: %s%s\n", path, msg);
	assert_int_equal(run_ingest(path, err, sizeof(err)), 2);
	assert_string_equal(err, want);
}

#define K "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,"
#define R                                                                                          \
	"{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"

static void test_json_errors(void **state)
{
	(void)state;
	expect("truncated.json", "{\"traceEvents\": [" K "\"ts\": 1",
	       ": byte 76: unexpected end of input inside \"traceEvents\" (truncated file?)");
	expect("not-json.json", "hello, world\n",
	       ": byte 0: not a JSON object (a Chrome trace starts with '{')");
	expect("empty-events.json", "{\"traceEvents\": [ ]}",
	       ": byte 18: \"traceEvents\" is empty");
	expect("no-events.json", "{\"schemaVersion\": 1}",
	       ": byte 0: no \"traceEvents\" array: not a Kineto/Chrome trace");
	expect("bad-array.json", "{\"traceEvents\": [" K "\"ts\":1,\"dur\":1} 7]}",
	       ": byte 85: expected ',' or ']' after event 0");
	expect("bad-value.json", "{\"traceEvents\": [" K "\"ts\":1,\"dur\":tru}]}",
	       ": event 0 (byte 82): field \"dur\": not a JSON value: tru");
	/* Numbers by RFC 8259, in a field prism reads or not, an event's or
	 * the top level's: no '+', no leading zeros, digits on both sides of
	 * '.', an exponent with digits. */
	static const struct {
		const char *name, *text, *msg;
	} numbers[] = {
	    {"plus.json", "{\"traceEvents\": [" K "\"ts\":1,\"dur\":+5}]}",
	     ": event 0 (byte 82): field \"dur\": not a JSON number (RFC 8259): +5"},
	    {"dot.json", "{\"traceEvents\": [" K "\"ts\":.5,\"dur\":1}]}",
	     ": event 0 (byte 74): field \"ts\": not a JSON number (RFC 8259): .5"},
	    {"point.json",
	     "{\"traceEvents\": [" K "\"ts\":1,\"dur\":1}," K
	     "\"ts\":2,\"dur\":1,\"args\":{\"x\":[1.]}}]}",
	     ": event 1 (byte 165): field \"x\": not a JSON number (RFC 8259): 1."},
	    {"zero.json", "{\"traceEvents\": [" K "\"ts\":1,\"dur\":1,\"y\":01}]}",
	     ": event 0 (byte 88): field \"y\": not a JSON number (RFC 8259): 01"},
	    {"exp.json", "{\"traceEvents\": [" K "\"ts\":1e,\"dur\":1}]}",
	     ": event 0 (byte 74): field \"ts\": not a JSON number (RFC 8259): 1e"},
	    {"top-plus.json", "{\"schemaVersion\": +1, \"traceEvents\": [" K "\"ts\":1}]}",
	     ": byte 18: field \"schemaVersion\": not a JSON number (RFC 8259): +1"},
	    {"top-inner.json",
	     "{\"distributedInfo\": {\"rank\": 0, \"x\": [.5]}, \"traceEvents\": []}",
	     ": byte 38: field \"distributedInfo.x\": not a JSON number (RFC 8259): .5"},
	};
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++)
		expect(numbers[i].name, numbers[i].text, numbers[i].msg);
	/* Text that is not UTF-8, or a raw control character in a string, is
	 * reported at the byte itself and its event (simdjson's first stage
	 * names only the start of the chunk). */
	expect("utf8.json",
	       "{\"traceEvents\": [" K "\"ts\":1,\"dur\":1}," K
	       "\"ts\":2,\"dur\":1,\"x\":\"a\xc3(\"}]}",
	       ": event 1 (byte 158): not valid UTF-8");
	expect("control.json",
	       "{\"traceEvents\": [" K "\"ts\":1,\"dur\":1}," K
	       "\"ts\":2,\"dur\":1,\"x\":\"ab\x01\"}]}",
	       ": event 1 (byte 159): a control character inside a string (it must be escaped)");
	expect("utf8-top.json",
	       "{\"distributedInfo\": {\"backend\": \"n\xff\"}, \"traceEvents\": []}",
	       ": byte 34: field \"distributedInfo\": not valid UTF-8");
}

static void test_event_errors(void **state)
{
	(void)state;
	expect("ts-type.json", "{\"traceEvents\": [" K "\"ts\":\"12\",\"dur\":3}]}",
	       ": event 0 (byte 17) 'k': field \"ts\": expected a number, got a string");
	expect("no-ts.json", "{\"traceEvents\": [" K "\"dur\":3}]}",
	       ": event 0 (byte 17) 'k': missing \"ts\"");
	expect("no-dur.json",
	       "{\"traceEvents\": [" R "\"ts\":1,\"args\":{\"correlation\":1}}," K "\"ts\":5}]}",
	       ": event 0 (byte 17) 'cudaLaunchKernel': missing \"dur\"");
	expect("neg-dur.json", "{\"traceEvents\": [" K "\"ts\":1,\"dur\":-5,\"args\":{}}]}",
	       ": event 0 (byte 17) 'k': field \"dur\": negative duration (-5000 ns)");
	expect("corr-type.json",
	       "{\"traceEvents\": [" K "\"ts\":1,\"dur\":5,\"args\":{\"correlation\":\"9\"}}]}",
	       ": event 0 (byte 17) 'k': field \"correlation\": expected an integer, got a string");
	expect("no-corr.json", "{\"traceEvents\": [" K "\"ts\":1,\"dur\":5,\"args\":{}}]}",
	       ": event 0 (byte 17) 'k': GPU event without \"correlation\" in args");
	expect("no-ph.json", "{\"traceEvents\": [{\"name\":\"x\",\"ts\":1}]}",
	       ": event 0 (byte 17) 'x': missing \"ph\"");
	expect("stream-str.json",
	       "{\"traceEvents\": [" K "\"ts\":1,\"dur\":5,\"args\":{\"correlation\":1,"
	       "\"stream\":\"seven\"}}]}",
	       ": event 0 (byte 17) 'k': field \"stream\": expected an integer, got \"seven\"");
	/* CPU ops alone: nothing to simulate (issue 19: a CPU-only or MTIA
	 * trace built 0 tasks and every command said 0.000 ms). */
	expect("cpu-only.json",
	       "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\","
	       "\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":5}]}",
	       ": no GPU kernels, copies or runtime calls (cuda_runtime, kernel, gpu_memcpy "
	       "events): nothing to simulate -- a CPU-only trace, or another accelerator's");
	expect("dup-corr.json",
	       "{\"traceEvents\": [" R "\"ts\":1,\"dur\":2,\"args\":{\"correlation\":4}}," R
	       "\"ts\":5,\"dur\":2,\"args\":{\"correlation\":4}}]}",
	       ": event 1 'cudaLaunchKernel': duplicate correlation id 4");
	expect("dangling.json",
	       "{\"traceEvents\": [" R "\"ts\":1,\"dur\":2,\"args\":{\"correlation\":4}}," K
	       "\"ts\":5,\"dur\":2,\"args\":{\"correlation\":9}}]}",
	       ": event 1 'k': dangling correlation id 9: GPU work inside the window without its "
	       "launch call (--allow-dangling places it anyway)");
}

static void test_file_errors(void **state)
{
	char path[128], err[1024], cmd[512];
	(void)state;

	expect("zero.json", "", ": byte 0: empty file");
	snprintf(path, sizeof(path), "%s/a-dir", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	expect("a-dir", NULL, ": is a directory, not a trace file");

	/* Corrupt gzip: a valid stream with its middle overwritten. */
	snprintf(path, sizeof(path), "%s/corrupt.json.gz", dir);
	snprintf(cmd, sizeof(cmd),
		 "gzip -c '%s' > '%s' && printf 'XXXXXXXXXXXXXXXX' | dd of='%s' bs=1 seek=40 "
		 "conv=notrunc 2>/dev/null",
		 TEST_DATA("golden_2023.json"), path, path);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(run_ingest(path, err, sizeof(err)), 2);
	assert_non_null(strstr(err, "corrupt.json.gz: compressed byte "));
	assert_non_null(strstr(err, ": corrupt gzip data ("));
	assert_non_null(strchr(err, '\n'));
	assert_null(strchr(err, '\n') + 1 == NULL ? NULL : strchr(strchr(err, '\n') + 1, '\n'));

	/* A truncated gzip stream. */
	snprintf(path, sizeof(path), "%s/short.json.gz", dir);
	snprintf(cmd, sizeof(cmd), "gzip -c '%s' | head -c 300 > '%s'",
		 TEST_DATA("golden_2023.json"), path);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(run_ingest(path, err, sizeof(err)), 2);
	assert_non_null(strstr(err, "short.json.gz: compressed byte 300: truncated gzip data\n"));

	/* After a whole member, bytes that are no gzip member: reported where
	 * they start (offsets count from the file's start, not the member's). */
	snprintf(path, sizeof(path), "%s/trailing.json.gz", dir);
	snprintf(cmd, sizeof(cmd), "gzip -c '%s' > '%s' && printf 'garbage!' >> '%s'",
		 TEST_DATA("golden_2023.json"), path, path);
	assert_int_equal(system(cmd), 0);
	{
		struct stat sb;
		char want[256];
		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(run_ingest(path, err, sizeof(err)), 2);
		snprintf(want, sizeof(want),
			 "trailing.json.gz: compressed byte %lld: not a gzip member after the one "
			 "that ends there (incorrect header check; trailing garbage?)\n",
			 (long long)sb.st_size - 8);
		assert_non_null(strstr(err, want));
	}
	/* Two members, the second cut short: at the end of the file. */
	snprintf(path, sizeof(path), "%s/two.json.gz", dir);
	snprintf(cmd, sizeof(cmd),
		 "(printf '{\"traceEvents\": [' | gzip -c; gzip -c '%s' | head -c 100) > '%s'",
		 TEST_DATA("golden_2023.json"), path);
	assert_int_equal(system(cmd), 0);
	{
		struct stat sb;
		char want[256];
		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(run_ingest(path, err, sizeof(err)), 2);
		snprintf(want, sizeof(want),
			 "two.json.gz: compressed byte %lld: truncated gzip data\n",
			 (long long)sb.st_size);
		assert_non_null(strstr(err, want));
	}
}

static void test_graph_version(void **state)
{
	char path[128], cmd[512], want[256], err[1024];
	(void)state;

	snprintf(path, sizeof(path), "%s/g.prism", dir);
	snprintf(cmd, sizeof(cmd), "'%s' ingest -o '%s' '%s' >/dev/null", PRISM_BIN, path,
		 TEST_DATA("golden_2023.json"));
	assert_int_equal(system(cmd), 0);
	/* The saved graph loads back... */
	snprintf(cmd, sizeof(cmd), "'%s' ingest '%s' >/dev/null", PRISM_BIN, path);
	assert_int_equal(system(cmd), 0);
	/* ...and one of another version is refused.  Bytes 8..11: version. */
	snprintf(cmd, sizeof(cmd),
		 "printf '\\143\\0\\0\\0' | dd of='%s' bs=1 seek=8 conv=notrunc "
		 "2>/dev/null",
		 path);
	assert_int_equal(system(cmd), 0);
	snprintf(want, sizeof(want),
		 "prism: %s: byte 8: graph file version 99 (this prism reads version 5); ingest "
		 "the trace again\n",
		 path);
	assert_int_equal(run_ingest(path, err, sizeof(err)), 2);
	assert_string_equal(err, want);
}

/* Inputs the fuzzer once crashed on (tests/data/fuzz/): now one clear
 * message, or a graph with the contradicting edge dropped. */
/* prism_err_prefix: "PREFIX: " before a set message, nothing on a clear
 * one, and a long result cut at the buffer, still terminated. */
static void test_err_prefix(void **state)
{
	struct prism_err e;
	char big[PRISM_ERR_MSG_MAX * 2];
	(void)state;
	prism_err_clear(&e);
	prism_err_prefix(&e, "file %d", 1);
	assert_int_equal(e.code, 0);
	assert_string_equal(e.msg, "");
	prism_err_set(&e, PRISM_EARG, "no run description");
	prism_err_prefix(&e, "base %s", "a.json");
	assert_string_equal(e.msg, "base a.json: no run description");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	prism_err_prefix(&e, "%s", big);
	assert_int_equal(strlen(e.msg), PRISM_ERR_MSG_MAX - 1);
}

static void test_fuzz_findings(void **state)
{
	char err[1024], want[512];
	(void)state;
	snprintf(want, sizeof(want),
		 "prism: %s: byte 99: field \"deviceProperties\": a control character "
		 "inside a string (it must be escaped)\n",
		 TEST_DATA("fuzz/top-value-never-starts.json"));
	assert_int_equal(
	    run_ingest(TEST_DATA("fuzz/top-value-never-starts.json"), err, sizeof(err)), 2);
	assert_string_equal(err, want);
	assert_int_equal(run_ingest(TEST_DATA("fuzz/sync-before-its-copy.json"), err, sizeof(err)),
			 0);
	assert_string_equal(err, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json_errors),	  cmocka_unit_test(test_event_errors),
	    cmocka_unit_test(test_file_errors),	  cmocka_unit_test(test_err_prefix),
	    cmocka_unit_test(test_graph_version), cmocka_unit_test(test_fuzz_findings),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
