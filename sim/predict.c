/* predict.c - one candidate, end to end. */
#include "predict.h"

#include <string.h>

void predict_derive(const struct synth_in *in, double iter_s, struct predict_out *out)
{
	double peak = in->hw->peak_flops[in->dtype];
	out->iter_s = iter_s;
	out->gpus = in->lay.tp * in->lay.pp * in->lay.dp;
	out->global_batch = (double)in->lay.mbs * in->lay.microbatches * in->lay.dp;
	out->tokens_per_s = iter_s > 0 ? out->global_batch * in->m.seq / iter_s : 0;
	out->mfu = iter_s > 0 && peak > 0
			   ? llm_flops_iter(&in->m, out->global_batch, 0) / (iter_s * out->gpus * peak)
			   : 0;
	out->gpu_hours = out->gpus * iter_s / 3600.0;
	synth_mem(in, &out->mem);
}

double predict_analytic(const struct synth_in *in)
{
	struct analytic_in ai;
	struct analytic_out ao;
	struct prism_err err;

	prism_err_clear(&err);
	analytic_in_default(&ai);
	ai.m = in->m;
	ai.hw = in->hw;
	ai.dtype = in->dtype;
	ai.fp8_attention = in->fp8_attention;
	ai.global_batch = (double)in->lay.mbs * in->lay.microbatches * in->lay.dp;
	synth_mem_layout(in, &ai.lay);
	ai.compute_eff = PREDICT_ANALYTIC_EFF;
	return analytic_estimate(&ai, &ao, &err) == 0 ? ao.t_iter : 0;
}

int predict_synth(const struct synth_in *in, struct predict_out *out, struct graph **keep_g,
		  struct synth_out *keep_so, struct prism_err *err)
{
	struct graph *g = NULL;
	struct synth_out so;
	struct settle_out st;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = synth_build(in, &g, &so, err)))
		return rc;
	if ((rc = settle_synth(g, &so, &st, err)) == 0) {
		predict_derive(in, st.iter_s, out);
		out->bubble = st.bubble;
		out->exposed_compute_s = st.exposed_compute_s;
		out->exposed_comm_s = st.exposed_comm_s;
		out->overlap_s = st.overlap_s;
		out->idle_s = st.idle_s;
		out->tasks = g->n_nodes;
		out->kernels = so.kernels;
		out->kdb_exact = so.kdb_exact;
		out->kdb_interpolated = so.kdb_interpolated;
	}
	if (rc == 0 && keep_g) {
		*keep_g = g;
		g = NULL;
	}
	if (rc == 0 && keep_so)
		*keep_so = so;
	else
		synth_out_free(&so);
	graph_free(g);
	return rc;
}
