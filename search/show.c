/* show.c - printing one prediction. */
#include "show.h"

#include <inttypes.h>

void show_layout(FILE *f, const struct synth_in *in)
{
	const struct layout *l = &in->lay;
	fprintf(f, "tp %d pp %d dp %d", l->tp, l->pp, l->dp);
	if (layout_cp(l) > 1)
		fprintf(f, " cp %d", layout_cp(l));
	if (l->schedule == LAYOUT_INTERLEAVED)
		fprintf(f, " vp %d", l->vp);
	fprintf(f, ", mbs %d x %d microbatches, %s, recompute %s%s, zero %d, %s%s", l->mbs,
		l->microbatches, layout_schedule_name(l->schedule),
		layout_recompute_name(l->recompute), l->sp ? ", sp" : "", l->zero,
		hw_dtype_name(in->lay.dtype), in->lay.fp8_attention ? " (fp8 attention)" : "");
	{
		struct layout r;
		char name[64];
		synth_mem_layout(in, &r);
		layout_partition_name(&in->lay, name, sizeof(name));
		if (layout_part_placed(&r)) {
			fprintf(f, ", layers per stage ");
			for (int s = 0; s < l->pp; s++)
				fprintf(f, "%s%d", s ? "," : "",
					layout_stage_layers(&in->m, &r, s));
			if (r.part_chunks) {
				char chunks[512];
				layout_part_text(&r, chunks, sizeof(chunks));
				fprintf(f, " (chunks %s)", chunks);
			}
			if (in->lay.partition != LAYOUT_PART_GIVEN)
				fprintf(f, " (%s)", name);
		}
	}
	if (l->zero >= 1 && l->shard > 0 && l->shard < l->dp)
		fprintf(f, ", sharded over %d (hybrid)", l->shard);
	if (l->zero >= 3)
		fprintf(f, ", prefetch %d", l->prefetch);
	if (!l->overlap_grad)
		fprintf(f, ", gradients after the backward");
	if (l->overlap_param)
		fprintf(f, ", parameter all-gather overlapped");
	if (l->tp_overlap)
		fprintf(f, ", TP overlapped");
	if (!l->pp_overlap)
		fprintf(f, ", pipeline sends waited for");
	if (in->m.experts > 0)
		fprintf(f, ", ep %d etp %d (expert dp %d)%s", layout_ep(l), layout_etp(l),
			layout_edp(l), l->imbalance > 1 ? ", imbalanced" : "");
	/* Knobs added after this line was written (layout.h: desc 0), where
	 * they are not their defaults: as the knob list names them. */
	for (int k = 0; k < LK_N; k++) {
		const struct layout_knob *K = &layout_knobs[k];
		char v[64];
		if (K->desc != 0 || !layout_applies(&in->m, l, k) ||
		    layout_get(&in->m, l, k, 1) == K->def)
			continue;
		layout_format(&in->m, l, k, 0, v, sizeof(v));
		fprintf(f, ", %s %s", K->id, v);
	}
}

void show_prediction(FILE *f, const struct synth_in *in, const struct predict_out *p)
{
	const struct mem_est *m = &p->mem;
	fprintf(f, "model      %s: %d layers, hidden %d, %d heads",
		in->m.name[0] ? in->m.name : "gpt", in->m.layers, in->m.hidden, in->m.heads);
	if (llm_kv_heads(&in->m) != in->m.heads)
		fprintf(f, " (%d key-value)", llm_kv_heads(&in->m));
	fprintf(f, ", ffn %d%s, seq %d, vocab %d%s", in->m.ffn, in->m.gated ? " swiglu" : "",
		in->m.seq, in->m.vocab, in->lay.flash ? "" : ", attention without flash");
	if (in->m.mtp_layers > 0)
		fprintf(f, ", %d multi-token-prediction layer%s", in->m.mtp_layers,
			in->m.mtp_layers > 1 ? "s" : "");
	putc('\n', f);
	if (llm_mla(&in->m))
		fprintf(f,
			"attention  multi-head latent: q rank %d, kv rank %d; heads %.0f wide in Q "
			"and K (%d of RoPE), %.0f in V\n",
			in->m.q_lora_rank, in->m.kv_lora_rank, llm_qk_head_dim(&in->m),
			in->m.qk_rope_head_dim, llm_v_head_dim(&in->m));
	if (llm_hybrid(&in->m)) {
		const struct llm *hm = &in->m;
		fprintf(f, "hybrid     %d Mamba-2, %d attention, %d MLP, %d MoE layers (%s)",
			llm_kind_layers(hm, LLM_KIND_MAMBA), llm_kind_layers(hm, LLM_KIND_ATTN),
			llm_kind_layers(hm, LLM_KIND_MLP), llm_kind_layers(hm, LLM_KIND_MOE),
			hm->pattern);
		if (llm_kind_layers(hm, LLM_KIND_MAMBA) > 0)
			fprintf(f,
				"\n           Mamba-2 mixer: %d heads of %d, state %d, %d groups, "
				"conv %d, SSD chunks of %d",
				hm->ssm_heads, hm->ssm_head_dim, hm->ssm_state, hm->ssm_groups,
				hm->ssm_conv, hm->ssm_chunk);
		fprintf(f, "; %.2fB parameters\n", llm_params(hm) / 1e9);
	}
	if (in->m.experts > 0) {
		const struct layout *l = &in->lay;
		/* moe_layer_freq's period as the model file writes it. */
		char pattern[LLM_MAX_MOE_PERIOD + 1] = "";
		for (int i = 0; i < in->m.moe_period && i < LLM_MAX_MOE_PERIOD; i++)
			pattern[i] = (char)('0' + ((in->m.moe_mask >> i) & 1));
		fprintf(f,
			"experts    %d routed (top %d) + %d shared, expert ffn %d, %d dense layers "
			"first%s%s, %s router, %s; %.1fB parameters, %.1fB active\n",
			in->m.experts, in->m.top_k, in->m.shared_experts,
			in->m.expert_ffn > 0 ? in->m.expert_ffn : in->m.ffn, in->m.first_dense,
			in->m.moe_period > 0 ? ", MoE layers by pattern " : "", pattern,
			in->m.router == LLM_ROUTER_SIGMOID ? "sigmoid" : "softmax",
			in->m.capacity_factor > 0 ? "capacity factor" : "dropless",
			llm_params(&in->m) / 1e9, llm_active_params(&in->m) / 1e9);
		fprintf(
		    f,
		    "           per MoE layer and microbatch: %.0f routed tokens on the busiest "
		    "rank (imbalance %.2f); the %s dispatcher's collectives %.3f ms forward "
		    "(as many backward)",
		    mem_moe_tokens(&in->m, l), mem_moe_peak(&in->m, l),
		    layout_dispatcher_name(l->moe_dispatcher), synth_moe_dispatch_s(in) * 1e3);
		if (synth_moe_a2a_bytes(in) > 0)
			fprintf(f, ", all-to-all %.2f MB a rank (%.3f ms each)",
				synth_moe_a2a_bytes(in) / 1e6, synth_moe_a2a_s(in) * 1e3);
		fputc('\n', f);
	}
	fprintf(f, "hardware   %s (%s)\n", in->hw->name, in->hw->gpu);
	if (analytic_step_clock(in) > 0)
		/* (a profile with a power balance: the step's own clock) */
		fprintf(f,
			"           clock %.4f of the burst by the step's own mix (%.4f at the "
			"reference mix)\n",
			analytic_step_clock(in),
			hw_run_clock(in->hw, in->lay.dtype, in->lay.power_w));
	fputs("layout     ", f);
	show_layout(f, in);
	fprintf(f, "\n           %d GPUs, global batch %.0f sequences\n\n", p->gpus,
		p->global_batch);
	fprintf(f, "iteration  %12.3f ms\n", p->iter_s * 1e3);
	fprintf(f,
		"breakdown  exposed compute %.3f, exposed communication %.3f, overlap %.3f, "
		"idle %.3f ms\n           (the slowest stage's last step)\n",
		p->exposed_compute_s * 1e3, p->exposed_comm_s * 1e3, p->overlap_s * 1e3,
		p->idle_s * 1e3);
	fprintf(f, "bubble     %12.1f %%   (compute stream idle during the pipeline units)\n",
		p->bubble * 100);
	fprintf(f, "throughput %12.0f tokens/s\n", p->tokens_per_s);
	fprintf(f, "MFU        %12.1f %%   (model FLOPs / time / GPUs / %s peak)\n", p->mfu * 100,
		hw_dtype_name(in->lay.dtype));
	fprintf(f, "cost       %12.4g GPU-hours per iteration\n", p->gpu_hours);
	fprintf(f,
		"memory     %12.1f GB per GPU on stage %d (the most) of %.1f GB usable: %s\n"
		"           margin %+.1f GB, the model's uncertainty +/-%.1f GB (%.0f %%)\n",
		m->total / 1e9, m->stage, m->capacity / 1e9,
		m->verdict == MEM_OOM ? "OUT OF MEMORY" : mem_verdict_name(m->verdict, 0),
		m->margin / 1e9, m->band / 1e9, MEM_UNCERTAINTY * 100);
	fprintf(f,
		"           weights %.1f, gradients %.1f, optimizer %.1f, ZeRO buffers %.1f GB\n",
		m->weights / 1e9, m->grads / 1e9, m->optimizer / 1e9, m->buffers / 1e9);
	fprintf(f,
		"           activations %.1f GB (%.1f microbatches in flight, fp32 logits %.1f),"
		" working %.1f, allocator reserve %.1f GB\n",
		m->activations / 1e9, m->inflight, m->logits / 1e9, m->transient / 1e9,
		m->fragmentation / 1e9);
	if (in->lay.pp > 1)
		fprintf(f, "           stage 0 %.1f GB, last stage %.1f GB\n", m->first_total / 1e9,
			m->last_total / 1e9);
	fprintf(f, "graph      %" PRIu64 " tasks, %" PRIu64 " on GPUs\n", p->tasks, p->kernels);
	if (in->kdb)
		fprintf(f, "kernel db  %u kernels measured, %u interpolated, the rest roofline\n",
			p->kdb_exact, p->kdb_interpolated);
	fprintf(f, "screening  analytic estimate %.3f ms, proven lower bound %.3f ms\n",
		predict_analytic(in) * 1e3, synth_lower_bound(in) * 1e3);
}

/* The knobs as members of a JSON object, each with a comma before it, as
 * the knob list shows them (LK_JSON, where its show rule says): the
 * partition as the layers of every stage (placed), names as strings. */
static void json_knobs(FILE *f, const struct synth_in *in)
{
	struct layout r;
	synth_mem_layout(in, &r);
	for (int k = 0; k < LK_N; k++) {
		const struct layout_knob *K = &layout_knobs[k];
		char v[64];
		if (!(K->flags & LK_JSON) ||
		    !(K->show == LK_SHOW_ALWAYS ||
		      (layout_applies(&in->m, &r, k) &&
		       (K->show == LK_SHOW_APPLIES || layout_get(&in->m, &r, k, 1) != K->def))))
			continue;
		fprintf(f, ",\"%s\":", K->id);
		if (K->kind == LK_PART) {
			putc('[', f);
			for (int s = 0; s < r.pp; s++)
				fprintf(f, "%s%d", s ? "," : "",
					layout_stage_layers(&in->m, &r, s));
			putc(']', f);
			if (r.part_chunks) { /* model chunks placed unevenly, in model order */
				fprintf(f, ",\"partition_chunks\":[");
				for (int c = 0; c < r.part_chunks; c++)
					fprintf(f, "%s%d", c ? "," : "", r.part[c]);
				putc(']', f);
			}
			continue;
		}
		layout_format_shown(&in->m, &r, k, v, sizeof(v));
		if (K->kind == LK_NAME)
			prism_fput_json_str(f, v);
		else
			fputs(v, f);
	}
}

void show_prediction_json(FILE *f, const struct synth_in *in, const struct predict_out *p)
{
	const struct layout *l = &in->lay;
	fputs("\"model\":", f);
	prism_fput_json_str(f, in->m.name[0] ? in->m.name : "gpt");
	fprintf(f, ",\"layers\":%d,\"hidden\":%d,\"heads\":%d,\"ffn\":%d,\"seq\":%d,\"vocab\":%d",
		in->m.layers, in->m.hidden, in->m.heads, in->m.ffn, in->m.seq, in->m.vocab);
	fputs(",\"hw\":", f);
	prism_fput_json_str(f, in->hw->name);
	json_knobs(f, in);
	fprintf(f,
		",\"gpus\":%d,\"global_batch\":%.0f,\"iteration_s\":%.9f,\"bubble\":%.6f,"
		"\"tokens_per_s\":%.3f,\"mfu\":%.6f,\"gpu_hours\":%.9f,\"memory_bytes\":%.0f,"
		"\"memory_capacity_bytes\":%.0f,\"fits\":%s,\"tasks\":%" PRIu64 ","
		"\"exposed_compute_s\":%.9f,\"exposed_comm_s\":%.9f,\"overlap_s\":%.9f,"
		"\"idle_s\":%.9f,\"analytic_s\":%.9f,\"bound_s\":%.9f,"
		"\"kdb_exact\":%u,\"kdb_interpolated\":%u,"
		"\"memory_stage\":%d,\"memory_weights_bytes\":%.0f,\"memory_grads_bytes\":%.0f,"
		"\"memory_optimizer_bytes\":%.0f,\"memory_buffers_bytes\":%.0f,"
		"\"memory_activations_bytes\":%.0f,\"memory_logits_bytes\":%.0f,"
		"\"memory_transient_bytes\":%.0f,\"memory_fragmentation_bytes\":%.0f,"
		"\"memory_first_stage_bytes\":%.0f,\"memory_last_stage_bytes\":%.0f,"
		"\"memory_verdict\":\"%s\",\"memory_margin_bytes\":%.0f,"
		"\"memory_uncertainty_bytes\":%.0f",
		p->gpus, p->global_batch, p->iter_s, p->bubble, p->tokens_per_s, p->mfu,
		p->gpu_hours, p->mem.total, p->mem.capacity, p->mem.fits ? "true" : "false",
		p->tasks, p->exposed_compute_s, p->exposed_comm_s, p->overlap_s, p->idle_s,
		predict_analytic(in), synth_lower_bound(in), p->kdb_exact, p->kdb_interpolated,
		p->mem.stage, p->mem.weights, p->mem.grads, p->mem.optimizer, p->mem.buffers,
		p->mem.activations, p->mem.logits, p->mem.transient, p->mem.fragmentation,
		p->mem.first_total, p->mem.last_total, mem_verdict_name(p->mem.verdict, 1),
		p->mem.margin, p->mem.band);
	if (in->m.mtp_layers > 0)
		fprintf(f, ",\"mtp_layers\":%d", in->m.mtp_layers);
	if (llm_hybrid(&in->m)) /* hybrid models only (others' JSON as it was) */
		fprintf(f, ",\"hybrid_pattern\":\"%s\"", in->m.pattern);
	if (in->m.experts > 0)
		fprintf(f,
			",\"experts\":%d,\"top_k\":%d,\"shared_experts\":%d,\"expert_ffn\":%d,"
			"\"first_dense\":%d,\"expert_dp\":%d,"
			"\"moe_imbalance\":%g,\"params\":%.0f,\"active_params\":%.0f,"
			"\"moe_a2a_bytes\":%.0f,\"moe_a2a_s\":%.9f",
			in->m.experts, in->m.top_k, in->m.shared_experts,
			in->m.expert_ffn > 0 ? in->m.expert_ffn : in->m.ffn, in->m.first_dense,
			layout_edp(l), mem_moe_peak(&in->m, l), llm_params(&in->m),
			llm_active_params(&in->m), synth_moe_a2a_bytes(in), synth_moe_a2a_s(in));
	if (llm_mla(&in->m))
		fprintf(f,
			",\"q_lora_rank\":%d,\"kv_lora_rank\":%d,\"qk_nope_head_dim\":%d,"
			"\"qk_rope_head_dim\":%d,\"v_head_dim\":%d",
			in->m.q_lora_rank, in->m.kv_lora_rank, in->m.qk_nope_head_dim,
			in->m.qk_rope_head_dim, in->m.v_head_dim);
}
