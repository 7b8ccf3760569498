/* test_strtab.c - interning against a naive list, ids dense and stable;
 * strings written as JSON; the int64 map's clearing (imap.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prism.h"
#include "imap.h"
#include "strtab.h"
#include "testutil.h"

static void test_empty_is_id_zero(void **state)
{
	struct strtab st;
	uint32_t id = 99;
	(void)state;
	assert_int_equal(strtab_init(&st), 0);
	assert_int_equal(st.n, 1);
	assert_int_equal(strtab_intern(&st, "", 0, &id), 0);
	assert_int_equal(id, 0);
	assert_string_equal(strtab_get(&st, 0), "");
	strtab_release(&st);
}

static void test_against_naive(void **state)
{
	/* 5000 pushes of 1500 distinct strings: ids must be first-seen order. */
	static char names[1500][24];
	uint32_t naive_n = 1; /* "" is id 0 */
	uint32_t expect[1500];
	struct strtab st;
	(void)state;

	for (int i = 0; i < 1500; i++) {
		snprintf(names[i], sizeof(names[i]), "kernel_%d_%x", i, i * 7919);
		expect[i] = UINT32_MAX;
	}
	assert_int_equal(strtab_init(&st), 0);
	srand(7);
	for (int k = 0; k < 5000; k++) {
		int i = rand() % 1500;
		uint32_t id;
		assert_int_equal(strtab_intern(&st, names[i], strlen(names[i]), &id), 0);
		if (expect[i] == UINT32_MAX)
			expect[i] = naive_n++;
		assert_int_equal(id, expect[i]);
	}
	assert_int_equal(st.n, naive_n);
	for (int i = 0; i < 1500; i++) {
		if (expect[i] == UINT32_MAX) {
			assert_int_equal(strtab_find(&st, names[i], strlen(names[i])), STRTAB_NONE);
			continue;
		}
		assert_string_equal(strtab_get(&st, expect[i]), names[i]);
		assert_int_equal(strtab_find(&st, names[i], strlen(names[i])), expect[i]);
	}
	/* A prefix of a stored string is a different string. */
	assert_int_equal(strtab_find(&st, "kernel_1", 8), STRTAB_NONE);
	strtab_release(&st);
}

/* Escapes, controls, valid multi-byte UTF-8 kept, and every invalid form
 * (a lone continuation, a truncated sequence, an overlong '/', a surrogate,
 * past U+10FFFF, 0xFF) replaced byte by byte. */
static void test_json_str(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"a\"b\\c\n", "\"a\\\"b\\\\c\\u000a\""},
	    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	     "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
	    {"\x80x", "\"\\ufffdx\""},
	    {"\xe2\x82", "\"\\ufffd\\ufffd\""},
	    {"\xc0\xaf", "\"\\ufffd\\ufffd\""},
	    {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},
	    {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},
	    {"\xff", "\"\\ufffd\""},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		assert_non_null(f);
		prism_fput_json_str(f, cases[i].in);
		fclose(f);
		assert_string_equal(buf, cases[i].out);
		free(buf);
	}
}

/* imap_clear: every key gone (imap_get finds none, a put is new again and
 * takes its new value), the room kept; the keys put back after it found
 * as put, through a growth past the room. */
static void test_imap_clear(void **state)
{
	struct imap m = {0};
	uint32_t old;
	size_t cap;
	(void)state;
	for (int64_t k = 0; k < 100; k++)
		assert_int_equal(imap_put(&m, k * 7919, (uint32_t)k, &old), 0);
	cap = m.cap;
	imap_clear(&m);
	assert_int_equal(m.n, 0);
	assert_int_equal(m.cap, cap);
	for (int64_t k = 0; k < 100; k++)
		assert_int_equal(imap_get(&m, k * 7919), IMAP_NONE);
	for (int64_t k = 0; k < 300; k++) {
		assert_int_equal(imap_put(&m, k * 7919, (uint32_t)(k + 1000), &old), 0);
		assert_int_equal(old, IMAP_NONE);
	}
	for (int64_t k = 0; k < 300; k++)
		assert_int_equal(imap_get(&m, k * 7919), (uint32_t)(k + 1000));
	assert_true(m.cap > cap);
	imap_release(&m);
}

/* A cleared table is a new one with its memory: the same ids for the
 * same strings interned again (after it grew and rehashed), none of the
 * old strings found, "" id 0; its blocks kept.  A zeroed table (never
 * started) is started. */
static void test_clear(void **state)
{
	struct strtab st, fresh, none;
	char s[24];
	uint32_t id, want, nslots;
	const char *buf;
	(void)state;

	assert_int_equal(strtab_init(&st), 0);
	for (int i = 0; i < 3000; i++) {
		snprintf(s, sizeof(s), "old_%d", i);
		assert_int_equal(strtab_intern(&st, s, strlen(s), &id), 0);
	}
	nslots = st.nslots;
	buf = st.buf;
	assert_true(nslots > 1024); /* rehashed */
	assert_int_equal(strtab_clear(&st), 0);
	assert_int_equal(st.n, 1);
	assert_int_equal(st.nslots, nslots);
	assert_ptr_equal(st.buf, buf);
	assert_string_equal(strtab_get(&st, 0), "");
	assert_int_equal(strtab_find(&st, "old_5", 5), STRTAB_NONE);
	assert_int_equal(strtab_init(&fresh), 0);
	for (int k = 0; k < 500; k++) {
		snprintf(s, sizeof(s), "new_%d", (k * 37) % 211);
		assert_int_equal(strtab_intern(&fresh, s, strlen(s), &want), 0);
		assert_int_equal(strtab_intern(&st, s, strlen(s), &id), 0);
		assert_int_equal(id, want);
	}
	assert_int_equal(st.n, fresh.n);
	assert_int_equal(st.len, fresh.len);
	memset(&none, 0, sizeof(none));
	assert_int_equal(strtab_clear(&none), 0);
	assert_int_equal(none.n, 1);
	assert_int_equal(strtab_find(&none, "", 0), 0);
	strtab_release(&none);
	strtab_release(&fresh);
	strtab_release(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty_is_id_zero),
	    cmocka_unit_test(test_against_naive),
	    cmocka_unit_test(test_json_str),
	    cmocka_unit_test(test_imap_clear),
	    cmocka_unit_test(test_clear),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
