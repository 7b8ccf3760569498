/* test_kjson.c - exact decimal numbers, and events through the adapter. */
#include <string.h>

#include "kjson.h"
#include "testutil.h"

static void check_num(const char *s, int type, int64_t i, int64_t milli)
{
	struct kjson_val v;
	memset(&v, 0, sizeof(v));
	assert_int_equal(kjson_number(s, strlen(s), &v), 0);
	assert_int_equal(v.type, type);
	assert_int_equal(v.i, i);
	assert_int_equal(v.milli, milli);
}

static void test_numbers(void **state)
{
	(void)state;
	check_num("0", KJSON_INT, 0, 0);
	check_num("1712867402348256", KJSON_INT, 1712867402348256, 1712867402348256000);
	/* A double would round this to ...094.5; nanoseconds must be exact. */
	check_num("1712195495502094.512", KJSON_FRAC, 1712195495502094, 1712195495502094512);
	check_num("4458676416788.066", KJSON_FRAC, 4458676416788, 4458676416788066);
	check_num("222442.191", KJSON_FRAC, 222442, 222442191);
	check_num("1.5", KJSON_FRAC, 1, 1500);
	check_num("2.0005", KJSON_FRAC, 2, 2001); /* rounds half up on the 4th digit */
	check_num("2.00049", KJSON_FRAC, 2, 2000);
	check_num("-3.25", KJSON_FRAC, -3, -3250);
	check_num("1e3", KJSON_FRAC, 1000, 1000000);
	check_num("12, ", KJSON_INT, 12, 12000); /* stops at the token's end */
	{
		struct kjson_val v;
		assert_int_equal(kjson_number("abc", 3, &v), -1);
		assert_int_equal(kjson_number("1.", 2, &v), -1);
		assert_int_equal(kjson_number("-", 1, &v), -1);
	}
}

struct seen {
	int n;
	struct kjson_event ev[4];
	char names[4][32];
};

static int collect(void *ctx, const struct kjson_event *ev)
{
	struct seen *s = ctx;
	if (s->n < 4) {
		s->ev[s->n] = *ev;
		snprintf(s->names[s->n], sizeof(s->names[0]), "%.*s", (int)ev->name.s.n,
			 ev->name.s.p);
	}
	s->n++;
	return 0;
}

static void test_events(void **state)
{
	char buf[512 + KJSON_PADDING];
	const char *doc =
	    "[{\"ph\":\"X\",\"name\":\"k\\u0041\",\"ts\":1.5,\"dur\":2,\"pid\":\"stream 7\","
	    "\"args\":{\"correlation\":9,\"Input Dims\":[[2,3],[]],\"skip\":{\"a\":[1]}}},"
	    " {\"ph\":\"i\",\"ts\":3}]";
	struct kjson_parser *p = kjson_new();
	struct kjson_fail fail;
	struct seen s;
	(void)state;

	memset(&s, 0, sizeof(s));
	memset(buf, 0, sizeof(buf));
	strcpy(buf, doc);
	assert_non_null(p);
	assert_int_equal(kjson_parse_events(p, buf, strlen(doc), 100, collect, &s, &fail), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "kA");
	assert_int_equal(s.ev[0].ts.milli, 1500);
	assert_int_equal(s.ev[0].dur.type, KJSON_INT);
	assert_int_equal(s.ev[0].pid.type, KJSON_STR);
	assert_int_equal(s.ev[0].args[KJSON_ARG_CORRELATION].i, 9);
	assert_int_equal(s.ev[0].args[KJSON_ARG_INPUT_DIMS].type, KJSON_ARRAY);
	assert_int_equal(s.ev[0].offset, 101);
	assert_int_equal(s.ev[1].ts.i, 3);
	assert_int_equal(s.ev[1].dur.type, KJSON_ABSENT);

	/* A broken value: the failure names the event and the field. */
	strcpy(buf, "[{\"ph\":\"X\",\"ts\":nul}]");
	memset(&s, 0, sizeof(s));
	assert_int_equal(kjson_parse_events(p, buf, strlen(buf), 0, collect, &s, &fail), -1);
	assert_int_equal(fail.event, 0);
	assert_string_equal(fail.field, "ts");
	kjson_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_numbers),
	    cmocka_unit_test(test_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
