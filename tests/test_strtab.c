/* test_strtab.c - interning against a naive list, ids dense and stable. */
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_is_id_zero),
		cmocka_unit_test(test_against_naive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
