/* mem.c - weights, optimizer state and activations per GPU. */
#include "mem.h"

#include <string.h>

static const char *const recompute_names[] = {"none", "selective", "full"};

const char *mem_recompute_name(int r)
{
	return r >= 0 && r <= MEM_RECOMPUTE_FULL ? recompute_names[r] : "?";
}

int mem_recompute_parse(const char *s)
{
	for (int i = 0; i <= MEM_RECOMPUTE_FULL; i++)
		if (strcmp(s, recompute_names[i]) == 0)
			return i;
	return -1;
}

#include <string.h>

double mem_act_per_layer(const struct llm *m, const struct mem_layout *l)
{
	double s = m->seq, b = l->mbs, h = m->hidden, a = m->heads, t = l->tp;
	double sbh = s * b * h, attn = (l->flash ? 0.0 : 5 * a * s / h);

	switch (l->recompute) {
	case MEM_RECOMPUTE_FULL:
		return l->sp ? 2 * sbh / t : 2 * sbh;
	case MEM_RECOMPUTE_SELECTIVE:
		return l->sp ? 34 * sbh / t : sbh * (10 + 24 / t);
	default:
		if (l->sp)
			return sbh * (34 + attn) / t;
		return sbh * (10 + 24 / t + attn / t);
	}
}

void mem_estimate(const struct llm *m, const struct mem_layout *l, const struct hw_profile *hw,
		  struct mem_est *out)
{
	double p = l->pp, mb = l->microbatches, v = l->vp > 0 ? l->vp : 1;
	double P = llm_params(m) / ((double)l->tp * l->pp);

	memset(out, 0, sizeof(*out));
	out->params_per_gpu = P;
	out->weights = (2 + (l->fp8_weights ? 2 : 0)) * P / (l->zero >= 3 ? l->dp : 1);
	out->grads = 2 * P / (l->zero >= 2 ? l->dp : 1);
	out->optimizer = 12 * P / (l->zero >= 1 ? l->dp : 1);
	out->act_per_layer = mem_act_per_layer(m, l);
	switch (l->schedule) {
	case MEM_GPIPE:
		out->inflight = mb;
		break;
	case MEM_INTERLEAVED:
		out->inflight = (mb < p ? mb : p) * (1 + (p - 1) / (p * v));
		break;
	default:
		out->inflight = mb < p ? mb : p;
	}
	out->activations = out->act_per_layer * (m->layers / p) * out->inflight;
	out->total = out->weights + out->grads + out->optimizer + out->activations;
	if (hw) {
		out->capacity = hw->hbm_bytes - hw->mem_reserve_bytes;
		out->fits = out->total <= out->capacity;
	}
}
