/*
 * fuzz_kineto.c - libFuzzer target: any bytes through the trace reader and,
 * when they read, through the graph builder and the invariant checker.
 * Built by scripts/fuzz (clang, -fsanitize=fuzzer,address,undefined).
 * A crash, a leak, a sanitizer report, or a built graph that fails
 * graph_check is a finding.
 */
#include <stdint.h>
#include <stdlib.h>

#include "build.h"
#include "kineto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kineto_trace tr;
	struct strtab st;
	struct prism_err err;
	struct build_opts o;
	struct graph *g = NULL;

	prism_err_clear(&err);
	build_opts_default(&o);
	if (strtab_init(&st))
		return 0;
	if (kineto_read_mem(data, size, "fuzz", &st, &tr, &err) == 0 &&
	    build_graph(&tr, 1, &st, &o, &g, &err) == 0) {
		prism_err_clear(&err);
		if (graph_check(g, &err) != 0)
			abort(); /* the builder made an inconsistent graph */
		graph_free(g);
	}
	kineto_release(&tr);
	strtab_release(&st);
	return 0;
}
