/*
 * fuzz_config.c - libFuzzer target: any bytes as a libconfig file, read as
 * a hardware profile, a model and a sweep, and what loads is computed
 * with: collectives on the hardware; the model's counts, memory, analytic
 * estimate, bound and layout rules on a DGX H100; a sweep's first
 * candidates judged, and a small one built and simulated.  A crash, a
 * leak, a sanitizer report (a division by zero, an overflow) or an abort()
 * is a finding.  Built by scripts/fuzz (clang); replayed over
 * tests/fuzz/corpus/config by ctest in every build (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "graph.h"
#include "hw.h"
#include "llm.h"
#include "mem.h"
#include "predict.h"
#include "sweep.h"
#include "synth.h"

#ifndef PRISM_SOURCE_DIR
#define PRISM_SOURCE_DIR "."
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Tasks a fuzzed run may have before it is worth building. */
#define SMALL_RUN 20000

static void try_run(const struct synth_in *in)
{
	struct prism_err err;
	struct predict_out out;
	prism_err_clear(&err);
	if (synth_check(in, &err) != 0)
		return;
	(void)predict_analytic(in);
	(void)synth_lower_bound(in);
	if ((int64_t)(in->steps > 0 ? in->steps : 1) * in->m.layers * in->lay.microbatches *
		SYNTH_MIN_TASKS_PER_LAYER * 4 >
	    SMALL_RUN)
		return;
	prism_err_clear(&err);
	(void)predict_synth(in, &out, NULL, NULL, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hw_profile h100;
	static int have_h100 = -1;
	struct prism_err err;
	struct hw_profile hw;
	struct llm m;
	struct sweep sw;
	char path[64];
	FILE *f;

	if (have_h100 < 0) {
		prism_err_clear(&err);
		have_h100 = hw_load(PRISM_SOURCE_DIR "/configs/hw/h100-dgx.cfg", &h100, &err) == 0;
	}
	snprintf(path, sizeof(path), "/tmp/prism-fuzz-config-%ld.cfg", (long)getpid());
	f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);

	prism_err_clear(&err);
	if (hw_load(path, &hw, &err) == 0) {
		for (int k = 1; k < GC_NKINDS; k++) {
			struct comm_est e;
			struct comm_group g = {hw.gpus_per_node * 2, hw.gpus_per_node};
			(void)comm_time(&hw, k, 1e6, g, 0.8, COMM_AUTO, &e);
			g.n = 2;
			g.per_node = 1;
			(void)comm_time(&hw, k, 1e9, g, 0.8, COMM_AUTO, &e);
			/* Whole NVLink domains, and a group inside one. */
			g = (struct comm_group){hw_domain(&hw) * 2, hw_domain(&hw)};
			(void)comm_time(&hw, k, 1e6, g, 0.8, COMM_AUTO, &e);
			g = (struct comm_group){hw_domain(&hw), hw_domain(&hw)};
			(void)comm_time(&hw, k, 1e6, g, 0.8, COMM_AUTO, &e);
		}
		(void)hw_net_Bps_per_gpu(&hw);
	}
	prism_err_clear(&err);
	if (llm_load(path, &m, &err) == 0 && have_h100) {
		struct synth_in in;
		struct mem_est me;
		(void)llm_params(&m);
		(void)llm_flops_iter(&m, 8, 1);
		(void)llm_score_bytes(&m, 8, 0);
		synth_in_default(&in);
		in.m = m;
		in.hw = &h100;
		in.steps = 1;
		mem_estimate(&in.m, &in.lay, &h100, &me);
		try_run(&in);
	}
	prism_err_clear(&err);
	if (sweep_load(path, &sw, &err) == 0) {
		uint64_t n = sweep_count(&sw);
		int built = 0;
		for (uint64_t i = 0; i < n && i < 64; i++) {
			struct cand c;
			if (sweep_candidate(&sw, i, &c) || c.status != CS_PENDING || built)
				continue;
			c.in.steps = 1;
			try_run(&c.in);
			built = 1;
		}
		sweep_release(&sw);
	}
	unlink(path);
	return 0;
}
