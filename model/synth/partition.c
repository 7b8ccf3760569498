/*
 * partition.c - the layers of each pipeline stage (synth_partition): as
 * given, by Megatron-LM's rules (layout_partition_place), or balanced by
 * the kernel model's times of a layer, the embedding and the head and the
 * multi-token-prediction depths (bound.c).
 */
#include "synth.h"

#include <string.h>

int synth_partition(const struct synth_in *in, struct layout *out, struct prism_err *err)
{
	int p = in->lay.pp, v = layout_stage_chunks(&in->lay), L = in->m.layers, rc;
	int hs = layout_head_stage(&in->lay);
	uint16_t *part = out->part;

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
	{
		/* Balanced: each stage gets v layers (one a chunk), then each
		 * further v layers go where the stage's time after them is the
		 * least -- the first stage's embedding and the head's stage's head count
		 * in -- the later stage on ties (the earlier ones hold more
		 * activations).  With identical increments this greedy choice
		 * minimises the largest stage time. */
		double f, b, a, emb, head, load[LAYOUT_MAX_STAGES];
		synth_layer_times(in, &f, &b, &a);
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
		{
			int even = L % p == 0;
			for (int s = 0; even && s < p; s++)
				even = part[s] == L / p;
			if (even)
				part[0] = 0;
		}
	}
	return 0;
}
