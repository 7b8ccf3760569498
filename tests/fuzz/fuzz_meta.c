/*
 * fuzz_meta.c - libFuzzer target: any bytes as a trace's run description
 * ("prism::model#name=...;layers=...;tp=..."): parsed (synth_meta_parse),
 * checked, and a small run built, settled and checked; the description it
 * writes must parse back and write the same text again.  A crash, a leak, a sanitizer
 * report or an abort() is a finding.  Built by scripts/fuzz (clang);
 * replayed over tests/fuzz/corpus/meta by ctest in every build (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "hw.h"
#include "settle.h"
#include "synth.h"

#ifndef PRISM_SOURCE_DIR
#define PRISM_SOURCE_DIR "."
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hw_profile hw;
	static int have_hw = -1;
	struct prism_err err;
	struct synth_in in, back;
	char text[4096], again[512], third[512];

	if (have_hw < 0) {
		prism_err_clear(&err);
		have_hw = hw_load(PRISM_SOURCE_DIR "/configs/hw/h100-dgx.cfg", &hw, &err) == 0;
	}
	if (!have_hw || size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	synth_in_default(&in);
	in.hw = &hw;
	prism_err_clear(&err);
	if (synth_meta_parse(text, &in, &err) != 0)
		return 0;
	in.hw = &hw;
	in.steps = 1;
	prism_err_clear(&err);
	if (synth_check(&in, &err) != 0)
		return 0;
	/* What synth writes, it reads back: writing what it read gives the
	 * same text (defaults, such as a missing name, are written out). */
	synth_meta(&in, again, sizeof(again));
	synth_in_default(&back);
	back.hw = &hw;
	prism_err_clear(&err);
	if (synth_meta_parse(again, &back, &err) != 0) {
		fprintf(stderr, "run description does not read back: %s (%s)\n", again, err.msg);
		abort();
	}
	synth_meta(&back, third, sizeof(third));
	if (strcmp(again, third) != 0) {
		fprintf(stderr, "run description changes when read back:\n%s\n%s\n", again, third);
		abort();
	}
	if ((int64_t)in.m.layers * in.lay.microbatches * SYNTH_MIN_TASKS_PER_LAYER * 4 <= 20000) {
		struct synth_out so;
		struct settle_out st;
		struct graph *g = NULL;
		prism_err_clear(&err);
		if (synth_build(&in, &g, &so, &err) == 0) {
			if (graph_check(g, &err) != 0)
				abort();
			(void)settle_synth(g, &so, &st, &err);
			synth_out_release(&so);
			graph_free(g);
		}
	}
	return 0;
}
