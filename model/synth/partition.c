/*
 * partition.c - the layers of each pipeline stage (synth_partition): as
 * given, by Megatron-LM's rules (layout_partition_place), or balanced by
 * the kernel model's times of a layer, the embedding and the head and the
 * multi-token-prediction depths (bound.c).
 */
#include "synth.h"

#include <string.h>

/* The layers a hybrid model's stages hold, one chunk a stage, balanced
 * by each layer's kind's time (w[kind]; the first stage's embedding and
 * the last's head count in): the least largest stage time over contiguous
 * splits, each stage at least one layer.  A split under a bound T is
 * found by filling the stages from the last (the later stage on ties: the
 * earlier ones hold more activations); T is bisected between the largest
 * single load and the whole. */
static int hybrid_fill(const struct llm *m, int p, const double *w, double emb, double head,
		       double T, uint16_t *part)
{
	int i = m->layers - 1;
	double load;
	for (int s = p - 1; s >= 1; s--) {
		int n = 0;
		load = s == p - 1 ? head : 0;
		/* one layer at least, more while under T, one left for each
		 * stage before */
		while (i >= s && (n == 0 || load + w[llm_layer_kind(m, i)] <= T)) {
			load += w[llm_layer_kind(m, i)];
			n++;
			i--;
		}
		if (n < 1 || load > T)
			return 0;
		part[s] = (uint16_t)n;
	}
	load = emb; /* stage 0: the rest */
	for (int j = 0; j <= i; j++)
		load += w[llm_layer_kind(m, j)];
	part[0] = (uint16_t)(i + 1);
	return i >= 0 && load <= T;
}

static void hybrid_balance(const struct synth_in *in, int p, double emb, double head,
			   uint16_t *part)
{
	const struct llm *m = &in->m;
	double w[LLM_KINDS] = {0}, lo = 0, hi = emb + head, a;
	for (int k = 0; k < LLM_KINDS; k++) {
		double f = 0, b = 0;
		if (llm_kind_layers(m, k) > 0)
			synth_kind_layer_times(in, k, &f, &b, &a);
		w[k] = f + b;
	}
	for (int i = 0; i < m->layers; i++)
		hi += w[llm_layer_kind(m, i)];
	for (int it = 0; it < 100 && hi - lo > 1e-12 * hi; it++) {
		double mid = (lo + hi) / 2;
		if (hybrid_fill(m, p, w, emb, head, mid, part))
			hi = mid;
		else
			lo = mid;
	}
	hybrid_fill(m, p, w, emb, head, hi, part);
}

int synth_partition(const struct synth_in *in, struct layout *out, struct prism_err *err)
{
	int p = in->lay.pp, v = layout_stage_chunks(&in->lay), L = in->m.layers, rc;
	int hs = layout_head_stage(&in->lay);
	uint16_t *part = out->part;
	struct synth_in ref;

	if (in->lay.partition != LAYOUT_PART_BALANCED || p < 2) {
		if ((rc = layout_partition_place(&in->m, &in->lay, out, err)))
			return rc;
		if (p < 2)
			out->part[0] = 0, out->part_chunks = 0;
		return 0;
	}
	*out = in->lay;
	memset(part, 0, sizeof(out->part));
	out->part_chunks = 0;
	if ((rc = layout_check_partition(&in->m, &in->lay, err)))
		return rc;
	if (in->clock > 0) {
		/* Placed by the layers' times at the reference clock: a
		 * placement, not a time, and the step's own clock is read off
		 * the estimate of the placed run (docs/MODEL.md, "Sustained
		 * rates"). */
		ref = *in;
		ref.clock = 0;
		in = &ref;
	}
	{
		/* Balanced: each stage gets v layers (one a chunk), then each
		 * further v layers go where the stage's time after them is the
		 * least -- the first stage's embedding and the head's stage's head count
		 * in -- the later stage on ties (the earlier ones hold more
		 * activations).  With identical increments this greedy choice
		 * minimises the largest stage time. */
		double f, b, a, emb, head, load[LAYOUT_MAX_STAGES];
		synth_layer_times(in, &f, &b, &a);
		if (llm_hybrid(&in->m) && v == 1) {
			synth_extra_times(in, &emb, &head);
			hybrid_balance(in, p, emb, head, part);
			goto even;
		}
		if (llm_hybrid(&in->m)) {
			/* A hybrid model with virtual stages: the mean of its
			 * layers' times (the stages balanced by their counts of
			 * layers). */
			double kf, kb;
			f = b = 0;
			for (int k = 0; k < LLM_KINDS; k++) {
				double n = llm_kind_layers(&in->m, k);
				if (n <= 0)
					continue;
				synth_kind_layer_times(in, k, &kf, &kb, &a);
				f += n * kf / L;
				b += n * kb / L;
			}
		}
		synth_extra_times(in, &emb, &head);
		if (in->m.mtp_layers > 0 && !in->bare) {
			/* The last stage's MTP depths: a layer of the last one's
			 * kind and a head each. */
			double mf = f, mb = b;
			if (llm_is_moe_layer(&in->m, L - 1))
				synth_moe_layer_times(in, &mf, &mb, &a);
			head += in->m.mtp_layers * (head + mf + mb);
		}
		for (int s = 0; s < p; s++) {
			part[s] = (uint16_t)v;
			load[s] = v * (f + b) + (s == 0 ? emb : 0) + (s == hs ? head : 0);
		}
		for (int left = L - p * v; left > 0; left -= v) {
			int best = p - 1;
			for (int s = p - 2; s >= 0; s--)
				if (load[s] + v * (f + b) < load[best] + v * (f + b) - 1e-15)
					best = s;
			part[best] = (uint16_t)(part[best] + v);
			load[best] += v * (f + b);
		}
	even : {
		int even = L % p == 0;
		for (int s = 0; even && s < p; s++)
			even = part[s] == L / p;
		if (even)
			part[0] = 0;
	}
	}
	return 0;
}
