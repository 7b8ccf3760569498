/*
 * step.c - the step and its schedule (synth_int.h): each stage's units
 * (the forward or backward of one microbatch on one model chunk) in the
 * order GPipe, 1F1B or interleaved 1F1B runs them, or the B and W
 * passes of a zero-bubble schedule (layout_zb_next); the activations and
 * their gradients between stages, from and to the model chunks before and
 * after (layout_chunk_model: ZB-V's V too, its turn in place); the gradients' buckets and their
 * reduction over the data-parallel groups (all-reduce, ZeRO's
 * reduce-scatter, hybrid sharding, the experts' own group); ZeRO's weight
 * gathers; the optimizer; the closing sync.  Layers come from layer.c,
 * tasks from emit.c; a unit of a kind already built is repeated from its
 * template (fold.c).
 */
#include "synth_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

/* Parameters of one layer on one tensor-parallel rank: a hybrid model's
 * layer `layer` by its kind (layer -1: the largest kind's, what the
 * sharding's traits are sized for). */
static double layer_params_of(const struct ctx *c, const struct shape *z, int layer)
{
	return z->hybrid && layer >= 0 ? z->kparams[llm_layer_kind(&c->in->m, layer)] : z->params;
}

/* 1 under LoRA: the embedding, the output layer and the norms are frozen
 * with the rest of the base (Megatron-Bridge's PEFT.freeze_model). */
static int lora(const struct ctx *c)
{
	return layout_lora(&c->in->lay, 0);
}

/* 1 where each tensor-parallel rank sends 1 / t of a pipeline transfer
 * without sequence parallelism (pp_scatter_gather, where it applies:
 * tp > 1, no sp), and the receiver all-gathers the pieces over tp
 * (pp_gather). */
static int pp_scattered(const struct synth_in *in)
{
	return in->lay.pp_scatter_gather && in->lay.tp > 1 && !in->lay.sp;
}

/* The bytes of a pipeline transfer, activations or their gradients, each
 * tensor-parallel rank's: a microbatch's b x s x h in the residual
 * stream's dtype (z->rb: bf16's 2, fp32's 4, and 4 under fp32_residual,
 * Megatron-LM's pipeline_dtype forced to torch.float; s over cp).
 * Megatron-core sends the whole tensor from each rank (schedules.py's
 * get_tensor_shapes: the sequence over t only under sequence
 * parallelism, where each rank holds its 1 / t); Megatron-LM 2021's
 * scatter-gather sends 1 / t without it too.  synth_pp_transfer_s prices
 * it for the analytic estimate. */
static double pp_bytes(const struct synth_in *in, const struct shape *z)
{
	double x = z->b * z->s * z->h * z->rb;
	return in->lay.sp || pp_scattered(in) ? x / z->t : x;
}

/* Of which trained: their gradients are reduced and the optimizer updates
 * them (all of them; under LoRA the adapters', the base frozen; LoRA is
 * refused on hybrid models, layout_check). */
static double layer_train(const struct ctx *c, const struct shape *z, int layer)
{
	return lora(c) ? z->train : layer_params_of(c, z, layer);
}

static void pp_transfer(struct ctx *c, int r, int st, int kind, int from_s, int from_c,
			const struct shape *z, int fwd)
{
	struct comm_group g = {2, z->pp_per_node};
	char pg[48] = "";
	if (!c->dry) /* (a dry run's collective has no group: emit.c) */
		snprintf(pg, sizeof(pg), "pp.%s.%d.%d", fwd ? "f" : "b", from_s, from_c);
	se_collective_dt(c, r, st, kind, "ncclDevKernel_SendRecv", pp_bytes(c->in, z), g, pg,
			 se_dtype(c, z->rb));
}

/* Bytes of the receiver's all-gather under scatter-gather (its output:
 * the whole b x s x h the t pieces make), 0 where there is none. */
static double pp_gather_bytes(const struct synth_in *in, const struct shape *z)
{
	return pp_scattered(in) ? pp_bytes(in, z) * z->t : 0;
}

/* Under scatter-gather, the receiver rebuilds the transfer before the
 * unit's compute takes it: Megatron-LM 2021's p2p_communication.py
 * _communicate waits for its receives, torch.cuda.synchronize(), then
 * gather_split_1d_tensor (megatron/mpu/random.py: torch.distributed
 * all_gather of the 1 / t chunks over the tensor-parallel group,
 * synchronous) -- on the compute stream, after the receive, before the
 * unit's first kernel, forward (activations) and backward (their
 * gradients) alike. */
static void pp_gather(struct ctx *c, int r, const struct shape *z)
{
	if (pp_scattered(c->in))
		sl_tp_coll(c, r, z, S_COMPUTE, GC_ALL_GATHER, pp_gather_bytes(c->in, z), z->rb);
}

double synth_pp_transfer_s(const struct synth_in *in)
{
	struct shape z;
	struct comm_est e;
	if (in->lay.pp <= 1)
		return 0;
	sl_shape(in, &z);
	if (comm_time(in->hw, GC_SEND, pp_bytes(in, &z), (struct comm_group){2, sl_pp_per_node(in)},
		      in->comm_eff, COMM_AUTO, &e))
		return 0;
	return e.time_s;
}

/* 1 where chunk ch's activations go down the ranks (ZB-V's second
 * chunk: layout_chunk_model places its model chunks from the last stage
 * back to stage 0): its transfers take the *2 streams (synth_int.h). */
static int descends(const struct ctx *c, int ch)
{
	return c->lay.pp > 1 &&
	       layout_chunk_model(&c->lay, 0, ch) > layout_chunk_model(&c->lay, 1, ch);
}

/* A unit's input from stage os, chunk oc (fwd: the activations, else
 * their gradients), which its compute waits for. */
static void pp_recv(struct ctx *c, int r, int os, int oc, const struct shape *z, int fwd)
{
	int st = fwd ? S_RECVF : S_RECVB;
	if (c->dry_dp)
		return;
	if (descends(c, oc))
		st = fwd ? S_RECVF2 : S_RECVB2;
	pp_transfer(c, r, st, GC_RECV, os, oc, z, fwd);
	se_event_wait(c, r, st, S_COMPUTE);
	pp_gather(c, r, z);
}

/* A unit's output (of stage s, chunk ch) sent on once its compute is
 * done; without pp_overlap the compute waits for the send. */
static void pp_send(struct ctx *c, int r, int s, int ch, const struct shape *z, int fwd)
{
	int st = fwd ? S_SENDF : S_SENDB;
	if (c->dry_dp)
		return;
	if (descends(c, ch))
		st = fwd ? S_SENDF2 : S_SENDB2;
	se_event_wait(c, r, S_COMPUTE, st);
	pp_transfer(c, r, st, GC_SEND, s, ch, z, fwd);
	if (!c->in->lay.pp_overlap)
		se_event_wait(c, r, st, S_COMPUTE);
}

/* Parameters of the embedding on stage r's GPU: the word embedding
 * (vocabulary-parallel) and learned positions on stage 0. */
static double embed_params(const struct ctx *c, int r)
{
	double first, last;
	synth_extra_params(c->in, r, &first, &last);
	return last;
}

/* Parameters of the output side on stage r's GPU: the final norm, and the
 * head -- its own matrix when untied, a copy of the word embedding (tied)
 * on a last stage that is not the first. */
static double head_params(const struct ctx *c, int r)
{
	double first, last;
	synth_extra_params(c->in, r, &first, &last);
	return first;
}

void synth_extra_params(const struct synth_in *in, int stage, double *first, double *last)
{
	const struct llm *m = &in->m;
	int head = layout_head_stage(&in->lay); /* 0 where the embedding's stage holds it */
	*first = stage != head
		     ? 0
		     : 2.0 * m->hidden +
			   (m->untied || head != 0 ? (double)m->vocab * m->hidden / in->lay.tp : 0);
	/* Multi-token prediction on the last stage: each depth's eh_proj
	 * (column parallel) and norms, and the word embedding it looks up
	 * (GPTModel builds it where mtp_process; with untied heads on more
	 * than one stage a copy of stage 0's). */
	if (stage == head && m->mtp_layers > 0)
		*first +=
		    m->mtp_layers * (2.0 * m->hidden * m->hidden / in->lay.tp + 6.0 * m->hidden) +
		    (m->untied && head != 0 ? (double)m->vocab * m->hidden / in->lay.tp : 0);
	*last = stage != 0 ? 0
			   : (double)m->vocab * m->hidden / in->lay.tp +
				 (m->rope ? 0 : (double)m->seq * m->hidden);
}

/* Bytes of a gradient as it is reduced: the main gradients' (fp32 for
 * bf16 weights: Megatron-LM's accumulate_allreduce_grads_in_fp32 default
 * for bf16, FSDP2's reduce_dtype in torchtitan; fp16 for fp16). */
static double grad_bytes(const struct ctx *c)
{
	return synth_grad_bytes(c->in);
}

double synth_grad_bytes(const struct synth_in *in)
{
	double w, g, o;
	mem_param_bytes(&in->lay, &w, &g, &o);
	return g;
}

double synth_acc_bytes(double acc_elem_bytes, const struct layout *l)
{
	if (acc_elem_bytes != 0)
		return acc_elem_bytes > 0 ? acc_elem_bytes : 0;
	return l->optimizer_dtype == LAYOUT_OPT_BF16 ? 2 : 0;
}

/* A gradient reduction's kernel name: NCCL's sum in the dtype of `bytes`
 * an element as reduced (bf16: 2, under a pure-bf16 optimizer, Megatron-
 * FSDP's and DeepSpeed's reductions; else the fp32 main gradients'). */
static const char *reduce_kernel(int kind, double bytes)
{
	int bf16 = bytes == 2;
	if (kind == GC_REDUCE_SCATTER)
		return bf16 ? "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"
			    : "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL";
	return bf16 ? "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
		    : "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
}

/* The data-parallel groups of a stage (ranks tp apart, consecutive in DP:
 * Megatron's order): the sharding group of ZeRO (layout_shard_group) and,
 * with hybrid sharding, the dp / shard replicas of each shard. */
static struct comm_group zero_group(const struct ctx *c)
{
	int G = layout_shard_group(&c->lay), cap = hw_domain(c->in->hw) / c->in->lay.tp;
	return (struct comm_group){G, comm_per_domain(G, cap)};
}

static struct comm_group replica_group(const struct ctx *c)
{
	int G = layout_shard_group(&c->lay), R = layout_dpc(&c->lay) / G;
	int cap = hw_domain(c->in->hw) / (c->in->lay.tp * G);
	return (struct comm_group){R, comm_per_domain(R, cap > 0 ? cap : 1)};
}

static int sharded(const struct ctx *c)
{
	return c->in->lay.zero >= 1 && layout_shard_group(&c->lay) > 1;
}

/* FSDP1 or FSDP2: ZeRO-2 is SHARD_GRAD_OP, the weights gathered for each
 * forward rather than after the optimizer. */
static int fsdp_like(const struct layout *l)
{
	return l->dp_impl == LAYOUT_DP_FSDP || l->dp_impl == LAYOUT_DP_FSDP2;
}

/* The sharding implementation's traits for a layer of this stage
 * (layout_dp_traits). */
static void dp_traits(const struct ctx *c, const struct shape *z, struct layout_dp_traits *t)
{
	double w, g, o;
	mem_param_bytes(&c->lay, &w, &g, &o);
	layout_dp_traits(&c->lay, layer_train(c, z, -1), w, g, t);
}

/* Process group `group`.r into pg (n bytes); none in a dry run, whose
 * collectives (their times alone) have no group (emit.c se_collective):
 * the dry runs that judge every candidate of a sweep formatted one for
 * every gather and reduction (5 % of a sweep's instructions). */
static void rank_pg(const struct ctx *c, const char *group, int r, char *pg, size_t n)
{
	if (c->dry)
		pg[0] = '\0';
	else
		snprintf(pg, n, "%s.%d", group, r);
}

static void dp_pg(const struct ctx *c, int r, char *pg, size_t n)
{
	rank_pg(c, layout_shard_group(&c->lay) < layout_dpc(&c->lay) ? "dps" : "dp", r, pg, n);
}

/* A copy around a gradient reduction on the DP stream (layout_dp_traits
 * rs_in before, rs_out after: ZeRO's copies, BF16_Optimizer's casts),
 * where the run times the host. */
static void dp_copy(struct ctx *c, int r, const char *kernel, double bytes)
{
	if (!c->dry || c->dry_host)
		sl_kernel_on(c, r, S_DP, KC_ELEMENTWISE, kernel, bytes);
}

/* Reduce the gradients of `params` parameters (a bucket, or a ZeRO-3
 * unit) of stage r on the DP stream: all-reduced over the data-parallel
 * group, or under ZeRO >= 1 reduce-scattered over the sharding group and,
 * with hybrid sharding, the shard all-reduced over the replicas (FSDP
 * HYBRID_SHARD).  In the main gradients' precision (grad_bytes). */
static void grad_reduce_on(struct ctx *c, int r, const struct shape *z, double params)
{
	const struct synth_in *in = c->in;
	double gb = grad_bytes(c);
	struct layout_dp_traits t;
	char pg[32];
	int dpc = layout_dpc(&c->lay), G = layout_shard_group(&c->lay);
	if (dpc <= 1 || params <= 0)
		return;
	se_event_wait(c, r, S_COMPUTE, S_DP);
	/* The implementation's reduce dtype and copies around the
	 * reduction (layout_dp_traits). */
	dp_traits(c, z, &t);
	if (!sharded(c) || t.ar_flat) {
		/* Over the dp x cp ranks (tp apart: Megatron-LM's order);
		 * BF16_Optimizer's (ar_flat) whole, cast to rs_bytes and
		 * back. */
		struct comm_group g = {dpc, comm_per_domain(dpc, hw_domain(in->hw) / in->lay.tp)};
		if (t.ar_flat) {
			gb = t.rs_bytes;
			dp_copy(c, r, "bf16_optimizer::allreduce_cast_in", params * t.rs_in);
		}
		rank_pg(c, "dp", r, pg, sizeof(pg));
		se_collective_dt(c, r, S_DP, GC_ALL_REDUCE, reduce_kernel(GC_ALL_REDUCE, gb),
				 params * gb, g, pg, se_dtype(c, gb));
		if (t.ar_flat)
			dp_copy(c, r, "bf16_optimizer::allreduce_cast_out", params * t.rs_out);
		return;
	}
	gb = t.rs_bytes;
	dp_pg(c, r, pg, sizeof(pg));
	if (t.rs_in > 0)
		dp_copy(c, r, "zero::reduce_scatter_copy_in", params * t.rs_in);
	se_collective_dt(c, r, S_DP, GC_REDUCE_SCATTER, reduce_kernel(GC_REDUCE_SCATTER, gb),
			 params * gb, zero_group(c), pg, se_dtype(c, gb));
	if (replica_group(c).n > 1) {
		rank_pg(c, "dpr", r, pg, sizeof(pg));
		se_collective_dt(c, r, S_DP, GC_ALL_REDUCE, reduce_kernel(GC_ALL_REDUCE, gb),
				 params * gb / G, replica_group(c), pg, se_dtype(c, gb));
	}
	if (t.rs_out > 0)
		dp_copy(c, r, "zero::reduce_scatter_copy_out", params / G * t.rs_out);
}

/* Under ZeRO-0/1 the gradients are reduced in a chunk's last backward alone
 * (unit_bwd's reduce: dp_bucket), and ss_dp_host's backward, run as the
 * last, marks their host time (dry_last) to leave it out of a steady
 * backward's; under ZeRO-2/3 every backward reduces. */
static int last_only(struct ctx *c)
{
	int was = c->dry_last;
	c->dry_last = was || (c->dry_dp && c->lay.zero < 2);
	return was;
}

static void grad_reduce(struct ctx *c, int r, const struct shape *z, double params)
{
	int was = last_only(c);
	grad_reduce_on(c, r, z, params);
	c->dry_last = was;
}

/* A bucket's size in parameters: bucket_mb of main gradients, or
 * Megatron-LM's default, max(40M, 1M x dp) parameters
 * (distributed_data_parallel.py). */
static double bucket_cap(const struct ctx *c)
{
	return synth_bucket_params(c->in);
}

double synth_bucket_params(const struct synth_in *in)
{
	return layout_bucket_params(&in->lay, synth_grad_bytes(in));
}

/* 1 where the gradients wait for the backward's end, to be all-reduced
 * whole (layout_dp_traits ar_flat: BF16_Optimizer): grad_flush reduces
 * them, no bucket while the backward runs. */
static int ar_flat(const struct ctx *c, const struct shape *z)
{
	struct layout_dp_traits t;
	dp_traits(c, z, &t);
	return t.ar_flat;
}

/* The gradients of `params` parameters are complete on stage r.  Buckets
 * (DDP, Megatron-LM's grad buffer, DeepSpeed's reduce buckets) fill in the
 * order the backward produces gradients and are reduced when full, during
 * the backward (overlap_grad); ZeRO-3 and FSDP's SHARD_GRAD_OP reduce each
 * unit (a layer: FSDP's wrapping) as it completes (layout_unit_reduce:
 * ZeRO-3, FSDP's SHARD_GRAD_OP, Megatron-FSDP's ZeRO-2). */
static void grad_ready(struct ctx *c, int r, const struct shape *z, double params)
{
	struct rankst *k = &c->rk[r];
	if (layout_dpc(&c->lay) <= 1 || params <= 0)
		return;
	k->bucket += params;
	if (!c->in->lay.overlap_grad)
		return;
	if (layout_unit_reduce(&c->lay) || k->bucket >= bucket_cap(c)) {
		if (ar_flat(c, z))
			return;
		grad_reduce(c, r, z, k->bucket);
		k->bucket = 0;
	}
}

/* The routed experts' gradients of `params` parameters, reduced over the
 * expert data-parallel group (ranks ep x etp apart: Megatron-LM's
 * expert_data_parallel group, its own gradient buffer): all-reduced, or
 * reduce-scattered under ZeRO-1/2 (the expert distributed optimizer). */
static void expert_reduce_on(struct ctx *c, int r, const struct shape *z, double params)
{
	char pg[32];
	double gb = grad_bytes(c);
	int rs = c->in->lay.zero >= 1;
	struct layout_dp_traits t;
	if (z->edp <= 1 || params <= 0)
		return;
	/* BF16_Optimizer all-reduces the experts' too (engine.py
	 * _reduce_expert_gradients), in rs_bytes. */
	dp_traits(c, z, &t);
	if (t.ar_flat) {
		rs = 0;
		gb = t.rs_bytes;
	}
	se_event_wait(c, r, S_COMPUTE, S_DP);
	if (t.ar_flat)
		dp_copy(c, r, "bf16_optimizer::allreduce_cast_in", params * t.rs_in);
	rank_pg(c, "edp", r, pg, sizeof(pg));
	se_collective_dt(c, r, S_DP, rs ? GC_REDUCE_SCATTER : GC_ALL_REDUCE,
			 reduce_kernel(rs ? GC_REDUCE_SCATTER : GC_ALL_REDUCE, gb), params * gb,
			 (struct comm_group){z->edp, z->edp_per_node}, pg, se_dtype(c, gb));
	if (t.ar_flat)
		dp_copy(c, r, "bf16_optimizer::allreduce_cast_out", params * t.rs_out);
}

static void expert_reduce(struct ctx *c, int r, const struct shape *z, double params)
{
	int was = last_only(c);
	expert_reduce_on(c, r, z, params);
	c->dry_last = was;
}

/* Layer `layer`'s gradients are complete on stage r: a dense layer's into
 * the bucket; a mixture-of-experts layer's non-expert part likewise, its
 * routed experts' into their own bucket, reduced when full or, where each
 * unit is reduced as it completes (layout_unit_reduce: Megatron-FSDP's
 * ZeRO-2), with the layer: Megatron-FSDP's bucket groups are one a (FSDP
 * unit, expert or not) pair (megatron_fsdp/param_and_grad_buffer.py
 * _get_parameter_groups, bucket_group_by_fsdp_unit), the experts' reduced
 * over the expert data-parallel group as the unit completes. */
static void layer_grads(struct ctx *c, int r, const struct shape *z, int layer)
{
	struct rankst *k = &c->rk[r];
	if (!z->moe || !llm_is_moe_layer(&c->in->m, layer)) {
		grad_ready(c, r, z, layer_train(c, z, layer));
		return;
	}
	grad_ready(c, r, z, z->md);
	if (z->edp <= 1)
		return;
	k->ebucket += z->me;
	if (c->in->lay.overlap_grad &&
	    (layout_unit_reduce(&c->lay) || k->ebucket >= bucket_cap(c)) && !ar_flat(c, z)) {
		expert_reduce(c, r, z, k->ebucket);
		k->ebucket = 0;
	}
}

static void grad_flush(struct ctx *c, int r, const struct shape *z)
{
	if (c->rk[r].bucket > 0)
		grad_reduce(c, r, z, c->rk[r].bucket);
	c->rk[r].bucket = 0;
	if (c->rk[r].ebucket > 0)
		expert_reduce(c, r, z, c->rk[r].ebucket);
	c->rk[r].ebucket = 0;
}

/* Where rank r's step's tail begins, after its last backward (ss_steps; a
 * dry run's last backward, ss_dp_host): the gradients left in the buckets
 * reduced -- without overlap_grad all of ZeRO-0/1's, which wait for the
 * stage's last backward. */
static void tail_grads(struct ctx *c, int r, const struct shape *z)
{
	grad_flush(c, r, z);
}

/* Parameters of layer `layer` on one GPU that the data-parallel sharding
 * group holds (all of a dense layer's; an MoE layer's non-expert part). */
static double dense_params(const struct ctx *c, const struct shape *z, int layer)
{
	return z->moe && llm_is_moe_layer(&c->in->m, layer) ? z->md : layer_params_of(c, z, layer);
}

/* All-gather `params` parameters' bf16 weights (layer: a layer's, fp8
 * under fp8_param_gather, mem_param_gather_bytes) over the sharding group on
 * the DP stream, after the compute stream's last task when wait_compute;
 * the gather's task and, where the compute stream will wait for it
 * (awaited), its event recorded on the host right after it is issued, as
 * PyTorch's FSDP2 records it (torch/distributed/fsdp/
 * _fully_shard/_fsdp_collectives.py foreach_all_gather:
 * all_gather_stream.record_event() after the collective), not when the
 * compute stream waits for it: a gather issued ahead has the next one
 * launched on its stream by then. */
static struct issued gather(struct ctx *c, int r, const struct shape *z, double params,
			    int wait_compute, int awaited, int layer)
{
	struct issued out;
	double w, g, o;
	int fp8 = layer && c->lay.fp8_param_gather;
	struct layout_dp_traits t;
	char pg[32];
	mem_param_bytes(&c->lay, &w, &g, &o);
	if (fp8)
		w = mem_param_gather_bytes(&c->lay);
	dp_traits(c, z, &t);
	if (wait_compute)
		se_event_wait(c, r, S_COMPUTE, S_DP);
	dp_pg(c, r, pg, sizeof(pg));
	/* The shard copied (and cast) into the all-gather input: FSDP1's
	 * low-precision shard, FSDP2's foreach copy-in. */
	if (t.ag_in > 0)
		sl_kernel_on(c, r, S_DP, KC_ELEMENTWISE, "zero::all_gather_copy_in",
			     params / layout_shard_group(&c->lay) * t.ag_in);
	/* In the weights' dtype (Megatron-LM's param buffer: params_dtype;
	 * FSDP's and FSDP2's param_dtype, DeepSpeed's): bf16, fp32 weights'
	 * "Float"; FP8 primary weights the uint8 parameter buffer's bytes
	 * (param_and_grad_buffer.py: torch.uint8 for a quantised parameter). */
	se_collective_dt(c, r, S_DP, GC_ALL_GATHER, "ncclDevKernel_AllGather_RING_LL", params * w,
			 zero_group(c), pg, se_dtype(c, w));
	out.task = se_last(c, r, S_DP);
	out.record = awaited ? se_event_record(c, r, S_COMPUTE) : NONE32;
	return out;
}

/* The compute stream waits for gather `id` of `params` parameters, then
 * (FSDP2's foreach_all_gather_copy_out) splits its output into the
 * parameters. */
static void gather_wait(struct ctx *c, int r, const struct shape *z, struct issued id,
			double params)
{
	struct layout_dp_traits t;
	se_event_wait_task(c, r, id.task, id.record, S_DP, S_COMPUTE);
	dp_traits(c, z, &t);
	if (t.ag_out > 0 && (!c->dry || c->dry_host))
		sl_kernel(c, r, KC_ELEMENTWISE, "zero::all_gather_copy_out", params * t.ag_out);
}

/* Layers gathered ahead in a unit: ZeRO-3 (FSDP FULL_SHARD) gathers every
 * layer's weights before its forward and again before its backward;
 * ZeRO-1/2 with overlap_param gather the step's updated weights before the
 * first microbatch's forward (Megatron-LM's --overlap-param-gather).
 * Position i of the unit's n layers (in the order it runs them) is
 * gathered once the compute of position i - depth - 1 is done -- so that
 * depth + 1 layers at most are gathered at once -- and its compute waits
 * for its gather.  -1: no gathers in this unit. */
static int gather_depth(const struct ctx *c, const struct shape *z, int fwd, int mb)
{
	const struct layout *l = &c->lay;
	if (!sharded(c) || c->in->bare)
		return -1;
	/* FSDP's SHARD_GRAD_OP (fully_shard without reshard_after_forward)
	 * keeps the weights sharded between steps and microbatches and
	 * gathers them for each forward, kept for the backward. */
	if (l->zero >= 3 || (l->zero == 2 && fsdp_like(l) && fwd)) {
		struct layout_dp_traits t;
		dp_traits(c, z, &t);
		return t.prefetch;
	}
	if (fwd && mb == 0 && l->overlap_param)
		return 1;
	return -1;
}

/* Before position i of a unit of n layers: issue the gathers due and wait
 * for position i's.  ids[] holds the gathers' tasks. */
static void gather_before(struct ctx *c, int r, const struct shape *z, int depth, int i, int n,
			  struct issued *ids, int l0)
{
	/* Position j's layer is l0 + j forward (ZeRO-3, which gathers
	 * backward too, has no MoE layers: synth_check). */
	struct issued id;
	if (depth < 0)
		return;
	if (i == 0)
		for (int j = 0; j <= depth && j < n; j++) {
			id = gather(c, r, z, dense_params(c, z, l0 + j), j == 0, 1, 1);
			if (ids) /* (none in a dry run) */
				ids[j] = id;
		}
	else if (i + depth < n) {
		id = gather(c, r, z, dense_params(c, z, l0 + i + depth), 1, 1, 1);
		if (ids)
			ids[i + depth] = id;
	}
	gather_wait(c, r, z, ids ? ids[i] : (struct issued){0, NONE32}, dense_params(c, z, l0 + i));
}

/* The stage and chunk a forward unit of (s, ch) gets its input from (0
 * if none, or if it is the same stage's: ZB-V's turn hands over in place),
 * with *ps and *pc set; and where it sends its output.  The model chunk
 * before or after, wherever layout_chunk_model places it. */
static int chunk_nb(const struct layout *l, int n, int s, int ch, int d, int *ps, int *pc)
{
	int k = layout_chunk_model(l, s, ch) + d;
	if (k < 0 || k >= n)
		return 0;
	layout_chunk_place(l, k, ps, pc);
	return *ps != s;
}

static int fwd_nb(const struct ctx *c, const struct shape *z, int s, int ch, int d, int *ps,
		  int *pc)
{
	return chunk_nb(&c->lay, z->p * z->v, s, ch, d, ps, pc);
}

static int fwd_prev(const struct ctx *c, const struct shape *z, int s, int ch, int *ps, int *pc)
{
	return fwd_nb(c, z, s, ch, -1, ps, pc);
}

static int fwd_next(const struct ctx *c, const struct shape *z, int s, int ch, int *ns_, int *nc)
{
	return fwd_nb(c, z, s, ch, 1, ns_, nc);
}

void synth_pp_gather_s(const struct synth_in *in, int stage, double *fwd_s, double *bwd_s)
{
	struct shape z;
	struct layout l;
	struct comm_est e;
	int os, oc, nf = 0, nb = 0;
	*fwd_s = *bwd_s = 0;
	if (!pp_scattered(in) || in->lay.pp <= 1 || in->bare)
		return;
	sl_shape(in, &z);
	synth_mem_layout(in, &l);
	/* a receive each way for each chunk whose model chunk before (its
	 * activations) or after (their gradients) is on another stage, as
	 * unit_fwd and unit_bwd receive them */
	for (int ch = 0; ch < z.v; ch++) {
		nf += chunk_nb(&l, z.p * z.v, stage, ch, -1, &os, &oc);
		nb += chunk_nb(&l, z.p * z.v, stage, ch, 1, &os, &oc);
	}
	/* (sl_tp_coll's group, as synth_build places it: z.tp_per_node) */
	if (comm_time(in->hw, GC_ALL_GATHER, pp_gather_bytes(in, &z),
		      (struct comm_group){in->lay.tp, in->lay.tp}, in->comm_eff, COMM_AUTO, &e))
		return;
	*fwd_s = nf * e.time_s;
	*bwd_s = nb * e.time_s;
}

void ss_transfers(struct ctx *c, int s, const struct shape *z, double *fwd_s, double *bwd_s)
{
	int os, oc;
	double h0 = c->dry_host_s;
	for (int ch = 0; ch < z->v; ch++) {
		if (fwd_prev(c, z, s, ch, &os, &oc))
			pp_recv(c, s, os, oc, z, 1);
		if (fwd_next(c, z, s, ch, &os, &oc))
			pp_send(c, s, s, ch, z, 1);
	}
	*fwd_s = c->dry_host_s - h0;
	h0 = c->dry_host_s;
	for (int ch = 0; ch < z->v; ch++) {
		if (fwd_next(c, z, s, ch, &os, &oc))
			pp_recv(c, s, os, oc, z, 0);
		if (fwd_prev(c, z, s, ch, &os, &oc))
			pp_send(c, s, s, ch, z, 0);
	}
	*bwd_s = c->dry_host_s - h0;
}

/* The unit holds the model's first chunk (the embedding) or its last
 * (the head and the loss). */
static int first_chunk_of(const struct ctx *c, int s, int ch)
{
	return layout_chunk_model(&c->lay, s, ch) == 0;
}

static int last_chunk_of(const struct ctx *c, const struct shape *z, int s, int ch)
{
	return layout_chunk_model(&c->lay, s, ch) == z->p * z->v - 1;
}

static void set_ann(struct ctx *c, int r, int32_t layer, int phase, int32_t mb)
{
	c->rk[r].layer = layer;
	c->rk[r].phase = (uint8_t)phase;
	c->rk[r].mb = mb;
}

/* fn (a layer.c backward) on rank r, building the tasks of `pass` alone
 * (SL_PASS_*: a zero-bubble schedule's B or W, or all). */
static void in_pass(struct ctx *c, int pass, void (*fn)(struct ctx *, int, const struct shape *),
		    int r, const struct shape *z)
{
	int was = c->pass;
	if (c->dry_dp) /* (a DP-only dry run: ss_dp_host) */
		return;
	c->pass = pass;
	fn(c, r, z);
	c->pass = was;
}

/* The multi-token-prediction depths after the last chunk's layers, forward
 * (fwd) or backward (in reverse, its tasks of `pass`; their layers'
 * gradients bucketed where reduce): each depth's embedding, norms and
 * eh_proj (sl_mtp_fwd), a layer of the last decoder layer's kind
 * (annotated as no layer: layer edits repeat the decoder's), the final
 * norm, the shared output layer and its loss.  Under ZeRO-3 each depth's
 * layer is gathered before it. */
static void mtp_depths(struct ctx *c, int r, const struct shape *z, int fwd, int depth, int reduce,
		       int pass)
{
	const struct llm *m = &c->in->m;
	for (int k = 0; k < m->mtp_layers; k++) {
		c->rk[r].layer = -1;
		c->rk[r].mtp = 1;
		if (depth >= 0) {
			double w = dense_params(c, z, m->layers - 1);
			gather_wait(c, r, z, gather(c, r, z, w, 1, 1, 1), w);
		}
		if (fwd && !c->dry_dp) {
			sl_mtp_fwd(c, r, z);
			sl_layer_fwd(c, r, z);
			sl_head_fwd(c, r, z);
		} else if (!fwd) {
			in_pass(c, pass, sl_head_bwd, r, z);
			in_pass(c, pass, sl_layer_bwd, r, z);
			if (reduce)
				layer_grads(c, r, z, m->layers - 1);
			in_pass(c, pass, sl_mtp_bwd, r, z);
		}
		c->rk[r].mtp = 0;
	}
}

/* Activation offloading (lay.offload_layers; docs/MODEL.md "Activation
 * offloading"), as Transformer Engine's OffloadSynchronizer schedules it
 * by default (transformer_engine/pytorch/cpu_offload.py,
 * _default_offload_sync_init; Megatron-LM passes the model's layers as
 * model_layers): of a chunk's L layers the first N offload.  On one copy
 * stream, layer i's activations are copied to host memory once its
 * forward is done, and the compute waits for that copy before layer L - N
 * + i's forward (its memory freed there); backward, layer i's copy back
 * starts before layer L - 1 - N + i's backward, after the compute so far,
 * and layer i's backward waits for it.  The layers offloaded in the
 * chunk: 0 without offloading. */
static int offload_n(const struct ctx *c, int nl)
{
	int n = c->lay.offload_layers;
	if (n <= 0 || c->dry)
		return 0;
	return n < nl ? n : nl - 1;
}

/* Bytes layer `layer` saves for its backward (what is offloaded):
 * mem_act_per_layer, or mem_act_moe_layer for an MoE layer. */
static double offload_bytes(const struct ctx *c, int layer)
{
	if (c->in->m.experts > 0 && llm_is_moe_layer(&c->in->m, layer))
		return mem_act_moe_layer(&c->in->m, &c->lay);
	return mem_act_per_layer(&c->in->m, &c->lay);
}

/* Offloaded layer `layer`'s copy to host memory (out) or back on the
 * copy stream, after the compute so far, and the event the compute waits
 * on recorded right after it is issued, as Transformer Engine records it
 * (cpu_offload.py OffloadSynchronizer: fwd_step's
 * finish_offload_events[layer].record(offload_stream) after
 * _offload_group, _start_reloads_finish_offloads's
 * finish_reload_events[layer].record(offload_stream) after
 * _reload_group), not at the compute's wait: by then the copies of the
 * layers after it are on the stream. */
static struct issued offload_copy(struct ctx *c, int r, int layer, int out)
{
	struct issued x;
	se_event_wait(c, r, S_COMPUTE, S_OFF);
	x.task = out ? se_launch(c, r, S_OFF, GN_MEMCPY, "Memcpy DtoH (Device -> Pinned)",
				 offload_bytes(c, layer) / c->hw->host_d2h_Bps, NULL)
		     : se_launch(c, r, S_OFF, GN_MEMCPY, "Memcpy HtoD (Pinned -> Device)",
				 offload_bytes(c, layer) / c->hw->host_h2d_Bps, NULL);
	x.record = se_event_record(c, r, S_COMPUTE);
	return x;
}

/* Megatron-LM's amax reduction group (parallel_state.py
 * get_amax_reduction_group(with_context_parallel=True)): the stage's tp x
 * dp x cp ranks, consecutive. */
struct comm_group synth_amax_group(const struct synth_in *in)
{
	int st = in->lay.tp * layout_dpc(&in->lay);
	return (struct comm_group){st, comm_per_domain(st, hw_domain(in->hw))};
}

double synth_amax_update_bytes(double amaxes)
{
	/* Each amax's history (SYNTH_AMAX_HISTORY fp32 values) read and
	 * written rolled, the new amax read, the scale read and the scale
	 * and its inverse written. */
	return amaxes * (8.0 * SYNTH_AMAX_HISTORY + 16);
}

/* FP8 delayed scaling (Transformer Engine's DelayedScaling, as Megatron-LM
 * runs it: one autocast around a chunk's transformer block,
 * transformer_block.py use_outer_fp8_context): the amaxes of the chunk's
 * `gemms` fp8 GEMMs (3 a GEMM forward, 2 backward: module/base.py
 * num_fp8_tensors), fp32, concatenated and all-reduced with MAX over
 * synth_amax_group on the compute stream (quantization.py
 * reduce_and_update_fp8_tensors: torch.distributed.all_reduce,
 * async_op=False), then every history and scale updated in one kernel
 * (tex.fused_amax_and_scale_update_after_reduction).  Forward at the
 * autocast's exit, backward in the backward of its first fp8 module (the
 * chunk's first layer's).  None for the other recipes (their buffer is
 * empty) and in a data-parallel dry run (ss_dp_host). */
static int delayed_fp8(const struct ctx *c)
{
	return c->in->lay.dtype == HW_FP8 && c->in->lay.fp8_recipe == LAYOUT_FP8_DELAYED;
}

static void amax_run(struct ctx *c, int r, double gemms, int fwd)
{
	double n = gemms * (fwd ? 3 : 2);
	struct comm_group g = synth_amax_group(c->in);
	char pg[32];

	if (!delayed_fp8(c) || !(n > 0) || c->dry_dp)
		return;
	if (g.n > 1) {
		rank_pg(c, "amax", r, pg, sizeof(pg));
		se_collective_dt(c, r, S_COMPUTE, GC_ALL_REDUCE,
				 "ncclDevKernel_AllReduce_Max_f32_RING_LL", 4 * n, g, pg,
				 se_dtype(c, 4));
	}
	sl_kernel(c, r, KC_ELEMENTWISE, "te_fused_amax_and_scale_update",
		  synth_amax_update_bytes(n));
}

void ss_amax_update(struct ctx *c, int r, double gemms, int fwd)
{
	amax_run(c, r, gemms, fwd);
}

/* The fp8 GEMMs of chunk ch of stage s (ss_chunk_fp8_gemms), counted once
 * a build: the same for every unit of the chunk, built or repeated. */
static double amax_gemms(struct ctx *c, int s, int ch, const struct shape *z)
{
	size_t n = (size_t)z->p * (size_t)z->v, i = (size_t)s * (size_t)z->v + (size_t)ch;
	if (c->sc.amax_gemms.n != n) {
		if (VEC_RESERVE(c->sc.amax_gemms, n)) {
			c->oom = 1;
			return 0;
		}
		for (size_t k = 0; k < n; k++)
			c->sc.amax_gemms.v[k] = -1;
		c->sc.amax_gemms.n = n;
	}
	if (c->sc.amax_gemms.v[i] < 0)
		c->sc.amax_gemms.v[i] = ss_chunk_fp8_gemms(c->in, &c->lay, s, ch);
	return c->sc.amax_gemms.v[i];
}

/* Chunk ch's amax reduction and update on stage s (rank r), forward or
 * backward (amax_run). */
static void amax_update(struct ctx *c, int r, int s, int ch, const struct shape *z, int fwd)
{
	if (delayed_fp8(c) && !c->dry_dp)
		amax_run(c, r, amax_gemms(c, s, ch, z), fwd);
}

/* A forward unit of chunk ch of stage s: the activations received from
 * the stage before, the embedding (first chunk), the chunk's layers, each
 * after its gathers (gather_before: depth, ids), the head (last chunk),
 * the activations sent on. */
static void unit_fwd(struct ctx *c, int s, int ch, const struct shape *z, int depth,
		     struct issued *ids)
{
	const struct synth_in *in = c->in;
	int r = s, os, oc;
	int first_chunk = first_chunk_of(c, s, ch), last_chunk = last_chunk_of(c, z, s, ch);
	int l0 = layout_chunk_first(&in->m, &c->lay, s, ch);
	int nl = layout_chunk_layers(&in->m, &c->lay, s, ch);
	int noff = offload_n(c, nl);
	struct issued *off; /* each offloaded layer's copy out (the ctx's scratch) */

	if (noff > 0 && VEC_RESERVE(c->sc.copies, (size_t)noff)) {
		c->oom = 1;
		return;
	}
	off = c->sc.copies.v;
	if (fwd_prev(c, z, s, ch, &os, &oc))
		pp_recv(c, r, os, oc, z, 1);
	if (first_chunk && !in->bare) {
		if (depth >= 0) /* the embedding's weights, sharded too */
			gather_wait(c, r, z, gather(c, r, z, embed_params(c, r), 1, 1, 0),
				    embed_params(c, r));
		if (!c->dry_dp)
			sl_embed_fwd(c, r, z);
	}
	for (int l = 0; l < nl; l++) {
		c->rk[r].layer = l0 + l;
		if (noff > 0 && l >= nl - noff)
			se_event_wait_task(c, r, off[l - (nl - noff)].task,
					   off[l - (nl - noff)].record, S_OFF, S_COMPUTE);
		gather_before(c, r, z, depth, l, nl, ids, l0);
		if (!c->dry_dp)
			sl_layer_fwd(c, r, z);
		if (l < noff)
			off[l] = offload_copy(c, r, l0 + l, 1);
	}
	c->rk[r].layer = -1;
	amax_update(c, r, s, ch, z, 1);
	if (last_chunk && !in->bare) {
		/* The head's weights stay gathered for its backward (as
		 * torchtitan leaves the output layer unsharded). */
		if (depth >= 0)
			gather_wait(c, r, z, gather(c, r, z, head_params(c, r), 1, 1, 0),
				    head_params(c, r));
		mtp_depths(c, r, z, 1, depth, 0, SL_PASS_ALL);
		if (!c->dry_dp)
			sl_head_fwd(c, r, z);
	}
	if (fwd_next(c, z, s, ch, &os, &oc))
		pp_send(c, r, s, ch, z, 1);
}

/* A backward unit: the gradient received from the stage after, the head
 * (last chunk), the chunk's layers in reverse, the embedding (first
 * chunk), the gradient sent back.  dp_bucket: the chunk's last
 * microbatch, whose gradients are reduced (under ZeRO-2/3 every
 * microbatch's are).  pass: the whole backward (SL_PASS_ALL), or a
 * zero-bubble schedule's B (its transfers and every task but the weight
 * gradients', no gradient complete yet) or W (the weight gradients alone,
 * no transfer; the gradients then complete and bucketed). */
static void unit_bwd(struct ctx *c, int s, int ch, const struct shape *z, int depth,
		     struct issued *ids, int dp_bucket, int pass)
{
	const struct synth_in *in = c->in;
	int r = s, os, oc;
	int first_chunk = first_chunk_of(c, s, ch), last_chunk = last_chunk_of(c, z, s, ch);
	int l0 = layout_chunk_first(&in->m, &c->lay, s, ch);
	int nl = layout_chunk_layers(&in->m, &c->lay, s, ch);
	/* Gradients are reduced in the last microbatch's backward of each
	 * chunk, under ZeRO-2/3 in every backward (the gradients are sharded:
	 * DeepSpeed's stage 2 and FSDP reduce each micro-step). */
	int reduce = pass != SL_PASS_B && (dp_bucket || c->lay.zero >= 2);
	/* Offloading needs pp 1, where the backward is one pass. */
	int noff = pass == SL_PASS_W ? 0 : offload_n(c, nl);
	struct issued *on; /* each offloaded layer's copy back (the ctx's scratch) */

	if (noff > 0 && VEC_RESERVE(c->sc.copies, (size_t)noff)) {
		c->oom = 1;
		return;
	}
	on = c->sc.copies.v;
	if (pass != SL_PASS_W && fwd_next(c, z, s, ch, &os, &oc))
		pp_recv(c, r, os, oc, z, 0);
	if (last_chunk && !in->bare) {
		in_pass(c, pass, sl_head_bwd, r, z);
		mtp_depths(c, r, z, 0, depth, reduce, pass);
		if (reduce && !lora(c))
			grad_ready(c, r, z, head_params(c, r));
	}
	for (int l = nl - 1; l >= 0; l--) {
		int i = l - (nl - 1 - noff); /* the offloaded layer whose copy back starts */
		c->rk[r].layer = l0 + l;
		if (noff > 0 && i >= 0 && i < noff)
			on[i] = offload_copy(c, r, l0 + i, 0);
		if (l < noff)
			se_event_wait_task(c, r, on[l].task, on[l].record, S_OFF, S_COMPUTE);
		gather_before(c, r, z, depth, nl - 1 - l, nl, ids, l0);
		in_pass(c, pass, sl_layer_bwd, r, z);
		if (reduce)
			layer_grads(c, r, z, l0 + l);
	}
	c->rk[r].layer = -1;
	if (pass != SL_PASS_W)
		amax_update(c, r, s, ch, z, 0);
	if (first_chunk && !in->bare) {
		in_pass(c, pass, sl_embed_bwd, r, z);
		if (reduce && !lora(c))
			grad_ready(c, r, z, embed_params(c, r));
	}
	/* The chunk's last bucket (its first layers) once its backward
	 * is done; without overlap, ZeRO-2/3 still reduce each
	 * microbatch's, the others wait for the stage's last backward. */
	if (reduce && (in->lay.overlap_grad || c->lay.zero >= 2))
		grad_flush(c, r, z);
	if (pass != SL_PASS_W && fwd_prev(c, z, s, ch, &os, &oc))
		pp_send(c, r, s, ch, z, 0);
}

/* The first and last compute task of rank r's unit that began at task
 * k0, for the bubble. */
static void unit_marks(struct ctx *c, int r, size_t k0)
{
	uint32_t first_task = NONE32, last_task = NONE32;
	for (size_t u = k0; u < c->em.w.n_nodes; u++)
		if (c->em.w.proc[u] == c->rk[r].stream[S_COMPUTE]) {
			if (first_task == NONE32)
				first_task = (uint32_t)u;
			last_task = (uint32_t)u;
		}
	if (first_task != NONE32 &&
	    (VEC_PUSH(c->sc.unit_first, first_task) || VEC_PUSH(c->sc.unit_last, last_task)))
		c->oom = 1;
}

static void ckey_put(struct ctx *c, uint32_t w)
{
	if (VEC_PUSH(c->sc.ckey, w))
		c->oom = 1;
}

/* What a unit's build reads of chunk ch of stage s besides the rank's
 * names (fold.c's key, sf_key): its layers' count and kinds (llm.h: kind,
 * experts, window), the embedding or head (their parameters the stage's:
 * then the stage and chunk themselves), whether it has transfers and
 * their streams (descends), its fp8 GEMMs (amax_update); made once a
 * build (c->sc.ckey).  Its first layer. */
static int key_chunk(struct ctx *c, const struct shape *z, int s, int ch)
{
	const struct llm *m = &c->in->m;
	size_t n = (size_t)z->p * (size_t)z->v, i = (size_t)s * (size_t)z->v + (size_t)ch, at;
	const uint32_t *w;

	if (c->sc.ckey_at.n != n) {
		if (VEC_RESERVE(c->sc.ckey_at, n)) {
			c->oom = 1;
			return 0;
		}
		memset(c->sc.ckey_at.v, 0, n * sizeof(*c->sc.ckey_at.v));
		c->sc.ckey_at.n = n;
		c->sc.ckey.n = 0;
	}
	if (!c->sc.ckey_at.v[i]) {
		int l0 = layout_chunk_first(m, &c->lay, s, ch);
		int nl = layout_chunk_layers(m, &c->lay, s, ch);
		int first = first_chunk_of(c, s, ch), last = last_chunk_of(c, z, s, ch), os, oc;
		size_t k0 = c->sc.ckey.n;
		ckey_put(c, (uint32_t)l0);
		ckey_put(c, 0); /* its words' count, below */
		ckey_put(c, (uint32_t)nl);
		ckey_put(c, (uint32_t)(first | last << 1 | descends(c, ch) << 2));
		if (first || last) {
			ckey_put(c, (uint32_t)s);
			ckey_put(c, (uint32_t)ch);
		}
		/* (The peers themselves only name the transfers' groups,
		 * which the template moves: fold.c pg_move.) */
		for (int d = -1; d <= 1; d += 2)
			ckey_put(c, fwd_nb(c, z, s, ch, d, &os, &oc)
					? 2u | (uint32_t)descends(c, oc)
					: 0);
		if (delayed_fp8(c)) {
			double g = amax_gemms(c, s, ch, z);
			uint64_t bits;
			memcpy(&bits, &g, sizeof(bits));
			ckey_put(c, (uint32_t)bits);
			ckey_put(c, (uint32_t)(bits >> 32));
		}
		for (int l = l0; l < l0 + nl; l++) {
			ckey_put(c, (uint32_t)(llm_layer_kind(m, l) | llm_is_moe_layer(m, l) << 8));
			ckey_put(c, (uint32_t)llm_window(m, l));
		}
		if (c->oom)
			return 0;
		c->sc.ckey.v[k0 + 1] = (uint32_t)(c->sc.ckey.n - k0 - 2);
		c->sc.ckey_at.v[i] = (uint32_t)k0 + 1;
	}
	at = c->sc.ckey_at.v[i] - 1;
	w = c->sc.ckey.v + at;
	for (uint32_t k = 0; k < w[1]; k++)
		sf_key(c, w[2 + k]);
	return (int)w[0];
}

/* The stage and chunk of the model chunk before chunk ch of stage s and
 * of the one after, where a transfer reaches them (else -1), into q. */
static void chunk_peers(const struct ctx *c, const struct shape *z, int s, int ch, int32_t q[4])
{
	int os, oc;
	q[0] = q[1] = q[2] = q[3] = -1;
	if (fwd_prev(c, z, s, ch, &os, &oc))
		q[0] = os, q[1] = oc;
	if (fwd_next(c, z, s, ch, &os, &oc))
		q[2] = os, q[3] = oc;
}

/* One forward (fwd = 1) or backward unit of microbatch mb on chunk ch of
 * stage s (pass: a zero-bubble schedule's B or W, unit_bwd); dp_bucket:
 * issue the chunk's gradient collectives.  Folding (in->units): a unit
 * whose template is made repeats it, the first of its kind is built and
 * folded into one (fold.c). */
static void unit(struct ctx *c, int s, int ch, int mb, int fwd, int dp_bucket, int pass,
		 const struct shape *z)
{
	int r = s, depth;
	struct issued *ids = NULL; /* the layers' gathers (the ctx's scratch) */
	size_t slot = c->fo.fold ? sf_slot(c, z, s, ch, mb, fwd, dp_bucket, pass) : SIZE_MAX;
	struct sf_start u;
	struct sf_pos p = {ch, ch, 0, 0, {{0}}};

	set_ann(c, r, -1, fwd ? PH_FORWARD : PH_BACKWARD, mb);
	/* (Where the slot is bound, its template's moves are known: p's
	 * layer is read only by a slot's first unit.) */
	if (slot != SIZE_MAX && !sf_bound(c, slot)) {
		sf_key_start(c, slot);
		p.l0 = p.lb0 = key_chunk(c, z, s, ch);
		chunk_peers(c, z, s, ch, p.peer[0]);
		memcpy(p.peer[1], p.peer[0], sizeof(p.peer[0]));
	}
	if (slot != SIZE_MAX && sf_reuse(c, slot, &p, r, mb, mb)) {
		c->rk[r].layer = -1;
		return;
	}
	/* W needs no weights: ZeRO-3's gathers are B's. */
	depth = pass == SL_PASS_W ? -1 : gather_depth(c, z, fwd, mb);
	if (depth >= 0 && !c->dry) {
		int nl = layout_chunk_layers(&c->in->m, &c->lay, s, ch);
		if (VEC_RESERVE(c->sc.gathers, (size_t)(nl > 0 ? nl : 1))) {
			c->oom = 1;
			return;
		}
		ids = c->sc.gathers.v;
	}
	sf_begin(c, r, &u);
	if (fwd)
		unit_fwd(c, s, ch, z, depth, ids);
	else
		unit_bwd(c, s, ch, z, depth, ids, dp_bucket, pass);
	if (sf_end(c, r, mb, mb, slot, &p, &u))
		return;
	unit_marks(c, r, u.k0);
}

void ss_dp_host(struct ctx *c, int s, const struct shape *z, double *fwd_s, double *bwd_s,
		double *last_s)
{
	double was = c->dry_host_s;
	c->dry_dp = 1;
	c->rk[s].bucket = c->rk[s].ebucket = 0;
	c->dry_host_s = 0; /* (each sum from 0: no reduction, last 0 exactly) */
	for (int ch = 0; ch < z->v; ch++) {
		set_ann(c, s, -1, PH_FORWARD, 1);
		unit_fwd(c, s, ch, z, gather_depth(c, z, 1, 1), NULL);
	}
	*fwd_s = c->dry_host_s;
	/* The last backward (each chunk's dp_bucket) and the tail's first
	 * reductions.  A steady backward issues the same but ZeRO-0/1's
	 * reductions (marked: last_only) from the same empty buckets (a
	 * backward under ZeRO-2/3 ends with them empty: unit_bwd's
	 * grad_flush), so its time is dry_steady_s: each sum from 0, the
	 * same bits as two backwards run apart. */
	c->dry_host_s = c->dry_steady_s = 0;
	for (int ch = z->v - 1; ch >= 0; ch--) {
		set_ann(c, s, -1, PH_BACKWARD, 1);
		unit_bwd(c, s, ch, z, gather_depth(c, z, 0, 1), NULL, 1, SL_PASS_ALL);
	}
	c->dry_last = 1;
	tail_grads(c, s, z);
	c->dry_last = 0;
	*bwd_s = c->dry_steady_s;
	*last_s = c->dry_host_s - *bwd_s;
	c->dry_host_s = was;
	c->rk[s].layer = -1;
	c->dry_dp = 0;
}

/*
 * The 1F1B all-to-all overlap (lay.moe_a2a_overlap; Megatron-LM's
 * --overlap-moe-expert-parallel-comm, megatron/core/pipeline_parallel/
 * combined_1f1b.py combined_forward_backward_step, megatron/core/models/
 * common/model_chunk_schedule_plan.py): in the steady phase the forward
 * of one microbatch and the backward of another run as one merged unit,
 * layer i of the forward beside layer L - 1 - i of the backward
 * (TransformerModelChunkSchedulePlan.run), each layer cut into parts
 * (ctx.part, synth_int.h).  Each microbatch's parts run in order, chained
 * by events where they change stream (a CUDA event a microbatch,
 * pipeline_parallel/utils.py); the all-to-alls on the communication
 * stream S_A2A, the rest on the compute stream, each stream in the order
 * TransformerLayerSchedulePlan.run issues them:
 *
 *   S_A2A:     combine'(b)   dispatch(f)              dispatch'(b)  combine(f)
 *   S_COMPUTE: attn(f)       mlp'(b) (with its weight gradients)  mlp(f)  attn'(b)
 *
 * so that the backward's combine runs beside the forward's attention,
 * the forward's dispatch beside the backward's experts, the backward's
 * dispatch beside the forward's experts and the forward's combine beside
 * the backward's attention.  The combine's compute (the unpermute and
 * residual add, backward their gradients: SL_PART_CMB_COMP) follows the
 * pair on the compute stream, where the next pair's part of the same
 * microbatch needs it.
 */

/* A microbatch's side of a merged unit runs each layer's parts in this
 * order (TransformerLayerSchedulePlan.run): forward the attention,
 * dispatch, experts, combine and the combine's compute; backward the
 * combine's compute, combine, experts, dispatch and attention.  The one
 * statement of it: ss_layer_parts and unit_pair both step a side through
 * it (side_step), unit_pair choosing only which side goes next
 * (pair_turns). */
#define PAIR_PARTS 5
static const int pair_order[2][PAIR_PARTS] = {
    {SL_PART_CMB_COMP, SL_PART_COMBINE, SL_PART_MLP, SL_PART_DISPATCH, SL_PART_ATTN},
    {SL_PART_ATTN, SL_PART_DISPATCH, SL_PART_MLP, SL_PART_COMBINE, SL_PART_CMB_COMP}};

/* One side of a merged unit: microbatch mb's forward (fwd) of layers l0
 * .. l0 + n - 1, or its backward of them from the last; `next`, the next
 * of its n x PAIR_PARTS parts in order; its chain: the last task of its
 * parts so far and that task's stream (NONE32: none yet, its parts
 * ordered by the compute stream alone), and the event recorded after it
 * for the next part's wait (NONE32: none made yet). */
struct side {
	int fwd, l0, n, next;
	int32_t mb;
	uint32_t last, rec;
	int st;
};

static struct side side_of(int fwd, int l0, int n, int32_t mb)
{
	struct side d = {fwd, l0, n, 0, mb, NONE32, NONE32, S_COMPUTE};
	return d;
}

/* Side d's part number i (< n x PAIR_PARTS): its layer and part. */
static int side_part(const struct side *d, int i, int *part)
{
	*part = pair_order[d->fwd][i % PAIR_PARTS];
	return d->fwd ? d->l0 + i / PAIR_PARTS : d->l0 + d->n - 1 - i / PAIR_PARTS;
}

/* The stream of a layer's part, -1 where the layer has none (a dense
 * layer has no all-to-alls and no combine). */
static int part_stream(const struct ctx *c, int layer, int part)
{
	if (part != SL_PART_ATTN && part != SL_PART_MLP && !llm_is_moe_layer(&c->in->m, layer))
		return -1;
	return part == SL_PART_DISPATCH || part == SL_PART_COMBINE ? S_A2A : S_COMPUTE;
}

/* Side d's next part on rank r, if it has one left, after the chain's
 * last task (on another stream through its event); the layer whose last
 * part that was (the backward's attention, where its gradients are
 * complete), else -1.  Where the side's next part that runs is on
 * another stream, the event it waits on is recorded right after this
 * part is issued, as Megatron-LM's ScheduleNode records it at the end of
 * the node (pipeline_parallel/utils.py stream_acquire_context:
 * event.record(stream) after the node's work), not at the wait: by then
 * the other side's part may have put its own tasks on this stream (the
 * forward's attention has the backward's experts after it, its dispatch
 * the backward's dispatch, the backward's dispatch the forward's
 * combine). */
static int side_step(struct ctx *c, int r, const struct shape *z, struct side *d)
{
	int part, layer, st, nst = -1;
	uint32_t before;
	unsigned n0 = c->dry_tasks; /* (a dry run's tasks: no ids) */
	if (d->next >= d->n * PAIR_PARTS)
		return -1;
	layer = side_part(d, d->next++, &part);
	if ((st = part_stream(c, layer, part)) < 0)
		return d->next % PAIR_PARTS == 0 ? layer : -1;
	before = c->rk[r].last[st];
	set_ann(c, r, layer, d->fwd ? PH_FORWARD : PH_BACKWARD, d->mb);
	if (d->last != NONE32 && d->st != st) {
		se_event_wait_task(c, r, d->last, d->rec, d->st, st);
		d->rec = NONE32;
	}
	c->part = part;
	if (d->fwd)
		sl_layer_fwd(c, r, z);
	else
		sl_layer_bwd(c, r, z);
	c->part = SL_PART_ALL;
	if (c->dry ? c->dry_tasks != n0 : c->rk[r].last[st] != before) {
		d->last = c->rk[r].last[st];
		d->st = st;
		for (int i = d->next; i < d->n * PAIR_PARTS && nst < 0; i++) {
			int p, l = side_part(d, i, &p);
			nst = part_stream(c, l, p);
		}
		d->rec = nst >= 0 && nst != st ? se_event_record(c, r, nst) : NONE32;
	}
	return d->next % PAIR_PARTS == 0 ? layer : -1;
}

void ss_layer_parts(struct ctx *c, int r, const struct shape *z, int layer, int fwd)
{
	/* The layer before ends on the compute stream (its combine's compute,
	 * its attention's gradient, or a dense layer's MLP), where this one's
	 * first part runs: no event, as with no chain. */
	struct side d = side_of(fwd, layer, 1, c->rk[r].mb);
	while (d.next < PAIR_PARTS)
		side_step(c, r, z, &d);
}

/* Which side runs the next part of a merged unit's layer pair, 0 the
 * backward and 1 the forward (TransformerLayerSchedulePlan.run): the
 * backward's combine, the forward's attention, the backward's experts,
 * the forward's dispatch, the backward's dispatch, the forward's experts
 * and combine, the backward's attention, the forward's combine's compute,
 * then the backward's next layer's combine's compute (its first part,
 * the unit's first layer's run ahead of the pairs). */
static const int pair_turns[] = {0, 1, 0, 1, 0, 1, 1, 0, 1, 0};

/* The merged unit of stage s: the forward of microbatch mbf on chunk chf
 * beside the backward of mbb on chb (dp_bucket: the backward's, unit_bwd);
 * chf or chb -1: that side absent (a warm-up forward or a cool-down
 * backward, run alone through the same parts and streams, as Megatron's
 * combined_forward_backward_step runs them with no f_model or b_model).
 * First the forward's input and embedding and the backward's gradient
 * and head (with its MTP depth, not overlapped), then the layers in
 * pairs, then the layers one side has more of, each's parts chained
 * alone (Megatron's remaining layers), then the forward's head and the
 * activations sent on, the backward's embedding and the gradient sent
 * back.  ZeRO-3 and offloading are refused with the overlap
 * (layout_check), so no gathers or copies. */
static void unit_pair(struct ctx *c, int s, int chf, int mbf, int chb, int mbb, int dp_bucket,
		      const struct shape *z)
{
	const struct synth_in *in = c->in;
	int r = s, os, oc;
	int hf = chf >= 0, hb = chb >= 0;
	int lf0 = hf ? layout_chunk_first(&in->m, &c->lay, s, chf) : 0;
	int nf = hf ? layout_chunk_layers(&in->m, &c->lay, s, chf) : 0;
	int lb0 = hb ? layout_chunk_first(&in->m, &c->lay, s, chb) : 0;
	int nb = hb ? layout_chunk_layers(&in->m, &c->lay, s, chb) : 0;
	int reduce = hb && (dp_bucket || c->lay.zero >= 2);
	int32_t mb0 = hf ? mbf : mbb;
	struct side d[2] = {side_of(0, lb0, nb, mbb), side_of(1, lf0, nf, mbf)};
	size_t slot = SIZE_MAX;
	struct sf_start u;
	struct sf_pos p = {hf ? chf : chb, hb ? chb : chf, hf ? lf0 : lb0, hb ? lb0 : lf0, {{0}}};

	if (c->fo.fold)
		slot = hf && hb ? sf_slot_pair(c, z, s, chf, mbf, chb, mbb, dp_bucket)
		       : hf	? sf_slot(c, z, s, chf, mbf, 1, 0, SL_PASS_ALL)
				: sf_slot(c, z, s, chb, mbb, 0, dp_bucket, SL_PASS_ALL);
	set_ann(c, r, -1, hf ? PH_FORWARD : PH_BACKWARD, mb0);
	if (slot != SIZE_MAX && !sf_bound(c, slot)) {
		sf_key_start(c, slot);
		if (hf)
			key_chunk(c, z, s, chf);
		sf_key(c, NONE32); /* (the sides apart) */
		if (hb)
			key_chunk(c, z, s, chb);
		chunk_peers(c, z, s, p.ch, p.peer[0]);
		chunk_peers(c, z, s, p.chb, p.peer[1]);
	}
	if (slot != SIZE_MAX && sf_reuse(c, slot, &p, r, mb0, hb ? mbb : mb0)) {
		c->rk[r].layer = -1;
		return;
	}
	sf_begin(c, r, &u);
	if (hf && fwd_prev(c, z, s, chf, &os, &oc))
		pp_recv(c, r, os, oc, z, 1);
	if (hf && first_chunk_of(c, s, chf) && !in->bare)
		sl_embed_fwd(c, r, z);
	set_ann(c, r, -1, PH_BACKWARD, mbb);
	if (hb && fwd_next(c, z, s, chb, &os, &oc))
		pp_recv(c, r, os, oc, z, 0);
	if (hb && last_chunk_of(c, z, s, chb) && !in->bare) {
		sl_head_bwd(c, r, z);
		mtp_depths(c, r, z, 0, -1, reduce, SL_PASS_ALL);
		if (reduce && !lora(c))
			grad_ready(c, r, z, head_params(c, r));
	}
	side_step(c, r, z, &d[0]);
	while (d[0].next < d[0].n * PAIR_PARTS || d[1].next < d[1].n * PAIR_PARTS)
		for (size_t t = 0; t < sizeof(pair_turns) / sizeof(*pair_turns); t++) {
			int done = side_step(c, r, z, &d[pair_turns[t]]);
			if (pair_turns[t] == 0 && done >= 0 && reduce)
				layer_grads(c, r, z, done);
		}
	/* The amax reductions after both sides' layers (one autocast around
	 * the pair: combined_1f1b.py's outer_fp8_context), the backward's
	 * first (in its first fp8 module), then the forward's at the exit. */
	if (hb) {
		set_ann(c, r, -1, PH_BACKWARD, mbb);
		amax_update(c, r, s, chb, z, 0);
	}
	if (hf) {
		set_ann(c, r, -1, PH_FORWARD, mbf);
		amax_update(c, r, s, chf, z, 1);
	}
	if (hf) {
		set_ann(c, r, -1, PH_FORWARD, mbf);
		if (last_chunk_of(c, z, s, chf) && !in->bare) {
			mtp_depths(c, r, z, 1, -1, 0, SL_PASS_ALL);
			sl_head_fwd(c, r, z);
		}
		if (fwd_next(c, z, s, chf, &os, &oc))
			pp_send(c, r, s, chf, z, 1);
	}
	if (hb) {
		set_ann(c, r, -1, PH_BACKWARD, mbb);
		if (first_chunk_of(c, s, chb) && !in->bare) {
			sl_embed_bwd(c, r, z);
			if (reduce && !lora(c))
				grad_ready(c, r, z, embed_params(c, r));
		}
		if (reduce && (in->lay.overlap_grad || c->lay.zero >= 2))
			grad_flush(c, r, z);
		if (fwd_prev(c, z, s, chb, &os, &oc))
			pp_send(c, r, s, chb, z, 0);
	}
	c->rk[r].layer = -1;
	if (sf_end(c, r, mb0, hb ? mbb : mb0, slot, &p, &u))
		return;
	unit_marks(c, r, u.k0);
}

/* A zero-bubble stage's passes in its schedule's order (layout_zb_next):
 * forwards, B and W passes (DualPipeV's whole backwards as one), the last
 * microbatch's W reducing the gradients (under ZeRO-2/3 every W).
 * DualPipeV's overlapped F&B pairs (layout_dpv_pair) run as merged units
 * (unit_pair) where MoE layers overlap their all-to-alls
 * (layout_a2a_overlap: torchtitan's default with expert parallelism),
 * else back to back on the compute stream. */
static void zb_step(struct ctx *c, int s, const struct shape *z)
{
	struct layout_zb it;
	int mb, ch, pass, mb2, ch2;
	int pairs = layout_a2a_overlap(&c->in->m, &c->in->lay);
	memset(&it, 0, sizeof(it));
	while ((pass = layout_zb_next(&c->in->lay, s, &it, &mb, &ch)) >= 0 && !c->oom) {
		struct layout_zb nx = it; /* the pass after: the pair's whole backward */
		if (pass == LAYOUT_PASS_F && pairs && layout_dpv_pair(&c->in->lay, s, &it) &&
		    layout_zb_next(&c->in->lay, s, &nx, &mb2, &ch2) == LAYOUT_PASS_BW) {
			it = nx;
			unit_pair(c, s, ch, mb, ch2, mb2, mb2 == z->m - 1, z);
		} else if (pass == LAYOUT_PASS_F)
			unit(c, s, ch, mb, 1, 0, SL_PASS_ALL, z);
		else
			unit(c, s, ch, mb, 0, mb == z->m - 1,
			     pass == LAYOUT_PASS_B   ? SL_PASS_B
			     : pass == LAYOUT_PASS_W ? SL_PASS_W
						     : SL_PASS_ALL,
			     z);
	}
}

static void stage_step(struct ctx *c, int s, const struct shape *z)
{
	const struct synth_in *in = c->in;
	int total = z->m * z->v, warm;
	int last_b[LAYOUT_MAX_VP] = {0}; /* last backward unit per chunk */
	int kb = 0, kf = 0;

	if (layout_zb(in->lay.schedule)) {
		zb_step(c, s, z);
		return;
	}
	assert(z->v >= 1 && z->v <= LAYOUT_MAX_VP); /* layout_check's range */
	for (int k = 0; k < total; k++) {
		int mb, ch;
		layout_unit_of(z->p, z->v, k, 0, &mb, &ch);
		last_b[ch] = k;
	}
	/* The warm-up (layout_warmup: one more forward under the 1F1B
	 * all-to-all overlap, schedules.py get_pp_rank_microbatches: the
	 * forward and backward of each merged unit independent; with pp 1 the
	 * first forward alone, combined_1f1b_schedule_for_no_pipelining). */
	warm = layout_warmup(&in->lay, s);
	/* Under the 1F1B all-to-all overlap every unit runs as a merged one
	 * (unit_pair), the warm-up's and cool-down's with one side. */
#define F_UNIT()                                                                                   \
	do {                                                                                       \
		int mb_, ch_;                                                                      \
		layout_unit_of(z->p, z->v, kf, 1, &mb_, &ch_);                                     \
		if (in->lay.moe_a2a_overlap)                                                       \
			unit_pair(c, s, ch_, mb_, -1, -1, 0, z);                                   \
		else                                                                               \
			unit(c, s, ch_, mb_, 1, 0, SL_PASS_ALL, z);                                \
		kf++;                                                                              \
	} while (0)
#define B_UNIT()                                                                                   \
	do {                                                                                       \
		int mb_, ch_;                                                                      \
		layout_unit_of(z->p, z->v, kb, 0, &mb_, &ch_);                                     \
		if (in->lay.moe_a2a_overlap)                                                       \
			unit_pair(c, s, -1, -1, ch_, mb_, last_b[ch_] == kb, z);                   \
		else                                                                               \
			unit(c, s, ch_, mb_, 0, last_b[ch_] == kb, SL_PASS_ALL, z);                \
		kb++;                                                                              \
	} while (0)
	for (int i = 0; i < warm; i++)
		F_UNIT();
	for (int i = 0; i < total - warm; i++) {
		if (in->lay.moe_a2a_overlap) {
			int mbf, chf, mbb, chb;
			layout_unit_of(z->p, z->v, kf++, 1, &mbf, &chf);
			layout_unit_of(z->p, z->v, kb, 0, &mbb, &chb);
			unit_pair(c, s, chf, mbf, chb, mbb, last_b[chb] == kb, z);
			kb++;
			continue;
		}
		F_UNIT();
		B_UNIT();
	}
	while (kb < total)
		B_UNIT();
#undef F_UNIT
#undef B_UNIT
}

/* The optimizer's passes over the gradients, in the order Megatron-LM's
 * MixedPrecisionOptimizer.step runs them (megatron/core/optimizer/
 * optimizer.py): fp16's unscale and inf/NaN check (prepare_grads), the
 * gradients' norm for clipping (clip_grad_norm: get_grad_norm_fp32), then
 * the clip scaling and the update.  Each pass runs over all the stage's
 * parameters; between them the statistics are all-reduced (grad_stats); OPT_ZERO: the
 * gradient buffer zeroed for the next step (grad_buffer_zero). */
enum { OPT_UNSCALE, OPT_NORM, OPT_UPDATE, OPT_ZERO };

/* Pass `pass`'s kernels for np_ local parameters (of one layer, or of the
 * embedding or head: layer 0), their bytes from the optimizer's precision
 * (mem_opt_traffic).  (fp8's amax update: per microbatch, amax_update.)
 * FP8 primary weights (fp8_param_gather): a layer's update writes no
 * bf16 weight, and its fp32 master shard is cast to the fp8 parameter
 * (Megatron-LM's _copy_main_params_to_model_params: quantize_param_shard,
 * Transformer Engine's quantize_master_weights), the recipe's amax pass
 * first where it has one. */
static void adam(struct ctx *c, int r, double np_, int pass, int layer)
{
	const struct synth_in *in = c->in;
	struct mem_opt_traffic t;
	/* Megatron-LM's gradient buffer zeroed (grad_buffer_zero): the main
	 * gradients' bytes written. */
	if (pass == OPT_ZERO) {
		double w, gb, o;
		mem_param_bytes(&in->lay, &w, &gb, &o);
		sl_kernel(c, r, KC_ELEMENTWISE, "vectorized_elementwise_kernel<fill> (grad buffer)",
			  np_ * gb);
		return;
	}
	mem_opt_traffic(&in->lay, &t);
	/* FP16: unscale the gradients and check them for inf/NaN (dynamic
	 * loss scaling; fp32 main gradients read and written). */
	if (pass == OPT_UNSCALE) {
		if (t.unscale > 0)
			sl_kernel_elem(c, r, KC_OPTIMIZER, t.grad_elem,
				       "multi_tensor_apply_kernel<UnscaleFunctor_non_finite_check>",
				       t.unscale * np_);
		return;
	}
	/* Gradient clipping (Megatron-LM's clip_grad, default 1.0; none with
	 * clip_grad 0): the norm of the gradients, then their scaling by the
	 * clip coefficient. */
	if (pass == OPT_NORM) {
		if (t.norm > 0)
			sl_kernel_elem(c, r, KC_OPTIMIZER, t.grad_elem,
				       "multi_tensor_apply_kernel<L2NormFunctor>", t.norm * np_);
		return;
	}
	if (t.scale > 0)
		sl_kernel_elem(c, r, KC_OPTIMIZER, t.grad_elem,
			       "multi_tensor_apply_kernel<ScaleFunctor>", t.scale * np_);
	if (!(layer && in->lay.fp8_param_gather)) {
		sl_kernel_elem(c, r, KC_OPTIMIZER, t.state_elem,
			       "multi_tensor_apply_kernel<FusedAdam>", np_ * t.adam);
		return;
	}
	sl_kernel_elem(c, r, KC_OPTIMIZER, t.state_elem, "multi_tensor_apply_kernel<FusedAdam>",
		       np_ * t.adam_fp8w);
	if (t.quant_amax > 0)
		sl_kernel(c, r, KC_REDUCTION, "te_compute_amax_master", np_ * t.quant_amax);
	sl_kernel(c, r, KC_ELEMENTWISE, "te_cast_master_to_fp8", np_ * t.quant);
}

/* FP8 primary weights: the amaxes (or blockwise's block scales) of the
 * stage's fp8 weights all-reduced (max) over the sharding group before
 * the casts (Transformer Engine's _cast_master_weights_to_fp8_*_scaling:
 * torch.distributed.all_reduce(packed_amaxes, MAX, group), the
 * distributed optimizer's data_parallel_group): one fp32 a linear's
 * weight per-tensor (a layer's four, two a local expert), 4 bytes a 128 x
 * 128 block under blockwise (mem_opt_traffic quant_amax_bytes).  Issued
 * once for the stage after its updates' amax passes (the delayed cast's
 * amaxes reduced after it), before the gathers. */
static void quant_amax_reduce(struct ctx *c, int r, const struct shape *z)
{
	const struct llm *m = &c->in->m;
	struct mem_opt_traffic t;
	char pg[32];
	double bytes = 0, P = 0;
	int n = 0;
	if (!c->in->lay.fp8_param_gather || c->in->bare)
		return;
	mem_opt_traffic(&c->in->lay, &t);
	for (int ch = 0; ch < z->v; ch++) {
		int l0 = layout_chunk_first(m, &c->lay, r, ch),
		    nl = layout_chunk_layers(m, &c->lay, r, ch);
		for (int i = 0; i < nl; i++) {
			int moe = z->moe && llm_is_moe_layer(m, l0 + i);
			P += moe ? z->md + z->me : layer_params_of(c, z, l0 + i);
			n += moe ? 2 + 2 * (int)z->eloc : 4;
		}
	}
	bytes = t.quant_amax_bytes > 0 ? P * t.quant_amax_bytes : 4.0 * n;
	if (!(bytes > 0))
		return;
	dp_pg(c, r, pg, sizeof(pg));
	se_collective_dt(c, r, S_COMPUTE, GC_ALL_REDUCE, "ncclDevKernel_AllReduce_Max_f32_RING_LL",
			 bytes, zero_group(c), pg, se_dtype(c, 4));
}

/* Megatron-LM's grad_stats_parallel_group, over which the gradient
 * statistics (the norm, fp16's found-inf flag) are all-reduced: the
 * model-parallel group (tp x pp: tp consecutive ranks, the stages tp x dp
 * x cp apart) for the non-distributed optimizer; under the distributed
 * optimizer (ZeRO >= 1: DistributedOptimizer's
 * get_grad_stats_parallel_group) every rank of the run, each holding a
 * shard of the gradients.  FSDP (fsdp, fsdp2: torchtitan's
 * clip_grad_norm_) reduces in two: over the stage's mesh (the DTensor
 * norm's full_tensor: tp x dp x cp ranks), then over the stages.  The
 * last group spans the stages. */
int synth_grad_stats_groups(const struct synth_in *in, struct comm_group *g)
{
	const struct layout *l = &in->lay;
	int D = hw_domain(in->hw), tp = l->tp, pp = l->pp, dpc = layout_dpc(l);
	int st = tp * dpc;		  /* a stage's ranks, consecutive */
	int across = st < D ? D / st : 1; /* stages in an NVLink domain */
	if (l->zero >= 1 && fsdp_like(l)) {
		g[0] = (struct comm_group){st, comm_per_domain(st, D)};
		g[1] = (struct comm_group){pp, comm_per_domain(pp, across)};
		return 2;
	}
	if (l->zero >= 1)
		g[0] = (struct comm_group){tp * pp * dpc, comm_per_domain(tp * pp * dpc, D)};
	else
		g[0] = (struct comm_group){tp * pp, comm_per_domain(tp * pp, tp * across)};
	return 1;
}

int synth_embed_grad_reduce(const struct synth_in *in, struct comm_group *g, double *bytes)
{
	const struct llm *m = &in->m;
	const struct layout *l = &in->lay;
	g->n = 2;
	g->per_node = (int64_t)l->tp * layout_dpc(l) * l->pp <= hw_domain(in->hw) ? 2 : 1;
	*bytes = (double)m->vocab * m->hidden / l->tp * synth_grad_bytes(in);
	return (!m->untied || m->mtp_layers > 0) && layout_head_stage(l) != 0 && !layout_lora(l, 0);
}

int synth_head_colls(const struct synth_in *in, int stage, struct synth_head *h)
{
	const struct layout *l = &in->lay;
	double first, last, w, gb, o;
	struct layout_dp_traits t;
	int G = layout_shard_group(l);
	memset(h, 0, sizeof(*h));
	/* gather_depth's rule: ZeRO-3 gathers each unit, FSDP's SHARD_GRAD_OP
	 * each forward. */
	if (in->bare || G <= 1 || layout_lora(l, 0) ||
	    !(l->zero >= 3 || (l->zero == 2 && fsdp_like(l))))
		return 0;
	synth_extra_params(in, stage, &first, &last);
	if (first <= 0)
		return 0;
	/* As unit_fwd gathers head_params (gather, gather_wait) and
	 * unit_bwd's grad_ready reduces them (grad_reduce: a reduce-scatter
	 * of their own with overlap_grad under layout_unit_reduce's rule, ZeRO-3 and
	 * FSDP's SHARD_GRAD_OP), with the implementation's copies around. */
	mem_param_bytes(l, &w, &gb, &o);
	layout_dp_traits(l, 0, w, gb, &t);
	h->params = first;
	h->ag_bytes = first * w;
	h->ag_in = first / G * t.ag_in;
	h->ag_out = first * t.ag_out;
	if (layout_unit_reduce(l) && l->overlap_grad) {
		h->rs_bytes = first * t.rs_bytes;
		h->rs_in = first * t.rs_in;
		h->rs_out = first / G * t.rs_out;
		if (layout_dpc(l) / G > 1) {
			int R = layout_dpc(l) / G, cap = hw_domain(in->hw) / (l->tp * G);
			h->ar_bytes = h->rs_bytes / G;
			h->replicas = R;
			h->replicas_per_node = comm_per_domain(R, cap > 0 ? cap : 1);
		}
	}
	h->group = G;
	h->per_node = comm_per_domain(G, hw_domain(in->hw) / l->tp);
	return 1;
}

int synth_grad_stats_n(const struct synth_in *in)
{
	/* The norm's (with clip_grad) and fp16's found-inf flag's. */
	return (in->lay.clip_grad ? 1 : 0) + (in->lay.dtype == HW_FP16 ? 1 : 0);
}

double synth_grad_stats_s(const struct synth_in *in)
{
	struct comm_group g[2];
	struct comm_est e;
	double t = 0;
	int n = synth_grad_stats_groups(in, g);
	if (in->bare)
		return 0;
	for (int i = 0; i < n; i++)
		if (g[i].n > 1 &&
		    comm_time(in->hw, GC_ALL_REDUCE, 4, g[i], in->comm_eff, COMM_AUTO, &e) == 0)
			t += e.time_s;
	return t * synth_grad_stats_n(in);
}

/* A gradient statistic (4 bytes of fp32: the squared norm's sum, or
 * fp16's found-inf flag) all-reduced over synth_grad_stats_groups on the
 * compute stream (torch.distributed.all_reduce: the current stream waits
 * for it), the last group in one process group across the stages
 * ("gstats"): every stage's optimizer waits for every stage's backward
 * to end -- the step ends together across the pipeline, whatever the
 * schedule.  None over a group of one rank. */
static void grad_stats(struct ctx *c, int r, const char *kname)
{
	struct comm_group g[2];
	int n = synth_grad_stats_groups(c->in, g);
	char pg[32];
	for (int i = 0; i < n; i++) {
		if (g[i].n <= 1)
			continue;
		if (i < n - 1)
			rank_pg(c, "gstats", r, pg, sizeof(pg));
		else
			snprintf(pg, sizeof(pg), "gstats");
		se_collective_dt(c, r, S_COMPUTE, GC_ALL_REDUCE, kname, 4, g[i], pg,
				 se_dtype(c, 4));
	}
}

/* Optimizer pass `pass` over every parameter of stage r: one kernel per
 * layer (marked with it, so that layer edits on the written trace repeat
 * the layer's optimizer work too), the MTP depths', then the embedding's
 * and the head's on their stages.  share, eshare: the local fraction of
 * the dense and of the routed experts' parameters. */
static void opt_pass(struct ctx *c, int r, const struct shape *z, double share, double eshare,
		     int pass)
{
	const struct llm *m = &c->in->m;
	for (int ch = 0; ch < z->v; ch++) {
		int l0 = layout_chunk_first(m, &c->lay, r, ch),
		    nl = layout_chunk_layers(m, &c->lay, r, ch);
		for (int i = 0; i < nl; i++) {
			set_ann(c, r, l0 + i, PH_OPTIMIZER, -1);
			if (z->moe && llm_is_moe_layer(m, l0 + i))
				adam(c, r, z->md * share + z->me * eshare, pass, 1);
			else
				adam(c, r, layer_train(c, z, l0 + i) * share, pass, 1);
		}
	}
	set_ann(c, r, -1, PH_OPTIMIZER, -1);
	for (int k = 0; r == z->head && !c->in->bare && k < m->mtp_layers; k++)
		if (z->moe && llm_is_moe_layer(m, m->layers - 1))
			adam(c, r, z->md * share + z->me * eshare, pass, 1);
		else
			adam(c, r, layer_params_of(c, z, m->layers - 1) * share, pass, 1);
	if (embed_params(c, r) > 0 && !lora(c))
		adam(c, r, embed_params(c, r) * share, pass, 0);
	if (head_params(c, r) > 0 && !lora(c))
		adam(c, r, head_params(c, r) * share, pass, 0);
}

/*
 * Megatron-LM's gradient buffer zeroed for the next step: train_step
 * (megatron/training/training.py) calls each model chunk's
 * zero_grad_buffer() before its forward-backward, and
 * DistributedDataParallel.zero_grad_buffer (megatron/core/distributed/
 * distributed_data_parallel.py) resets each buffer, _ParamAndGradBuffer.
 * reset (param_and_grad_buffer.py): `self.grad_data.zero_()` over the
 * whole contiguous buffer -- every local parameter's main gradient, also
 * under the distributed optimizer, which shards the optimizer state and
 * not the buffer -- writing the main gradients' bytes (mem_param_bytes: 4
 * for fp32), at the end of the step (the same place in a loop of steps).
 * One fill a layer (and the embedding's and head's), as the optimizer's
 * passes (opt_pass: so that layer edits of a written trace repeat it),
 * where Megatron launches one a buffer.  Not under optimizer_dtype bf16
 * (PyTorch's autograd and optimizer: zero_grad(set_to_none=True), its
 * default since PyTorch 2.0, frees the gradients; nothing is filled), nor
 * under DeepSpeed or PyTorch FSDP (their own gradient storage, not
 * modelled here).  ZeRO-2/3 under dp_impl megatron are Megatron-FSDP's
 * optim_grads / optim_grads_params, whose zero_grad_buffer
 * (megatron_fsdp.py) zeroes the sharded main gradient buffer
 * (megatron_fsdp/param_and_grad_buffer.py ParamAndGradBuffer.zero_grad:
 * main_grad_buffer.data, the rank's shard: gb P / G, the experts' over
 * their own group).  After the updated weights' all-gathers where the
 * step ran them (gathered: the distributed optimizer's start_param_sync
 * without overlap_param_gather, synchronous, all_gather async_op False),
 * as the next train_step runs it.
 */
static void grad_buffer_zero(struct ctx *c, int r, const struct shape *z, int gathered)
{
	const struct layout *l = &c->lay;
	/* Megatron-FSDP's sharded gradient buffer (ZeRO-2/3): its shard. */
	double share = 1, eshare = 1;
	if (l->optimizer_dtype == LAYOUT_OPT_BF16 ||
	    (l->zero >= 1 && l->dp_impl != LAYOUT_DP_MEGATRON))
		return;
	if (l->zero >= 2) {
		share = 1.0 / layout_shard_group(l);
		eshare = z->edp > 1 ? 1.0 / z->edp : 1.0;
	}
	if (gathered)
		se_event_wait(c, r, S_DP, S_COMPUTE);
	opt_pass(c, r, z, share, eshare, OPT_ZERO);
}

/* ZeRO-1/2 after the optimizer: each layer's updated weights (a
 * mixture-of-experts layer's non-expert part), then the embedding's and
 * the head's, all-gathered over the sharding group. */
static void gather_updated(struct ctx *c, int r, const struct shape *z)
{
	const struct llm *m = &c->in->m;
	se_event_wait(c, r, S_COMPUTE, S_DP);
	for (int ch = 0; ch < z->v; ch++) {
		int l0 = layout_chunk_first(m, &c->lay, r, ch);
		int nl = layout_chunk_layers(m, &c->lay, r, ch);
		for (int i = 0; i < nl; i++) {
			set_ann(c, r, l0 + i, PH_OPTIMIZER, -1);
			gather(c, r, z,
			       lora(c) ? layer_train(c, z, -1) : dense_params(c, z, l0 + i), 0, 0,
			       1);
		}
	}
	set_ann(c, r, -1, PH_OPTIMIZER, -1);
	for (int k = 0; r == z->head && !c->in->bare && k < m->mtp_layers; k++)
		gather(c, r, z, dense_params(c, z, m->layers - 1), 0, 0, 1);
	if (!lora(c) && embed_params(c, r) + head_params(c, r) > 0)
		gather(c, r, z, embed_params(c, r) + head_params(c, r), 0, 0, 0);
}

/* The experts' updated weights under ZeRO-1/2, all-gathered over their
 * group after the step (not overlapped with the next forward). */
static void gather_experts(struct ctx *c, int r, const struct shape *z)
{
	const struct llm *m = &c->in->m;
	char pg[32];
	double w = mem_param_gather_bytes(&c->lay); /* the experts' weights: fp8 or not */
	const char *dt = se_dtype(c, w);
	rank_pg(c, "edp", r, pg, sizeof(pg));
	se_event_wait(c, r, S_COMPUTE, S_DP);
	for (int ch = 0; ch < z->v; ch++) {
		int l0 = layout_chunk_first(m, &c->lay, r, ch);
		int nl = layout_chunk_layers(m, &c->lay, r, ch);
		for (int i = 0; i < nl; i++) {
			if (!llm_is_moe_layer(m, l0 + i))
				continue;
			set_ann(c, r, l0 + i, PH_OPTIMIZER, -1);
			se_collective_dt(c, r, S_DP, GC_ALL_GATHER,
					 "ncclDevKernel_AllGather_RING_LL", z->me * w,
					 (struct comm_group){z->edp, z->edp_per_node}, pg, dt);
		}
	}
	set_ann(c, r, -1, PH_OPTIMIZER, -1);
	/* The MTP depths' experts (their layers of the last one's kind). */
	for (int k = 0; r == z->head && !c->in->bare && llm_is_moe_layer(m, m->layers - 1) &&
			k < m->mtp_layers;
	     k++)
		se_collective_dt(c, r, S_DP, GC_ALL_GATHER, "ncclDevKernel_AllGather_RING_LL",
				 z->me * w, (struct comm_group){z->edp, z->edp_per_node}, pg, dt);
}

/* PyTorch's fused AdamW (the pure-bf16 optimizer) keeps each parameter's
 * step count as a one-value tensor on the GPU and advances them all
 * before the update (torch/optim/adam.py _fused_adam:
 * torch._foreach_add_(device_state_steps, 1)): one multi-tensor kernel
 * over scalars, at the device floor (up to 110 tensors a launch,
 * MultiTensorApply.cuh depth_to_max_tensors; more, not modelled).  Our
 * H100 traces: `aten::_foreach_add_` before `aten::_fused_adamw_`.
 * Megatron-LM's optimizers count steps on the host. */
static void opt_step_count(struct ctx *c, int r)
{
	if (c->in->lay.optimizer_dtype == LAYOUT_OPT_BF16)
		sl_kernel(c, r, KC_ELEMENTWISE, "multi_tensor_apply_kernel<foreach_add> (step)", 8);
}

void ss_optimizer(struct ctx *c, int r, const struct shape *z)
{
	const struct synth_in *in = c->in;
	int zero = sharded(c);
	double share = zero ? 1.0 / layout_shard_group(&c->lay) : 1.0;
	/* The experts' optimizer state is sharded over their own group. */
	double eshare = in->lay.zero >= 1 && z->edp > 1 ? 1.0 / z->edp : 1.0;
	/* The word embedding on two stages: tied to the head, or looked up by
	 * the MTP depths (finalize_model_grads.py
	 * _get_shared_word_embedding_weight: mtp_num_layers). */
	struct comm_group eg;
	double ebytes;
	int tied = synth_embed_grad_reduce(in, &eg, &ebytes) && (r == 0 || r == z->head);

	set_ann(c, r, -1, PH_OPTIMIZER, -1);
	/* Tied (or MTP's) embeddings on two stages: the word embedding's gradient is
	 * all-reduced between the first and the last stage once the
	 * data-parallel reduction is done (Megatron-LM's
	 * _allreduce_word_embedding_grads, in finalize_model_grads). */
	if (tied) {
		se_event_wait(c, r, S_COMPUTE, S_DP);
		se_collective_dt(c, r, S_DP, GC_ALL_REDUCE,
				 reduce_kernel(GC_ALL_REDUCE, synth_grad_bytes(in)), ebytes, eg,
				 "emb", se_dtype(c, synth_grad_bytes(in)));
	}
	if (layout_dpc(&c->lay) > 1 || tied || (z->moe && z->edp > 1))
		se_event_wait(c, r, S_DP, S_COMPUTE);
	/* fp16: the gradients unscaled and their found-inf flag reduced;
	 * the norm's squares summed locally, then over the group (the clip
	 * coefficient needs all of them); Adam over fp32 master weights,
	 * moments and the gradient. */
	if (in->lay.dtype == HW_FP16) {
		opt_pass(c, r, z, share, eshare, OPT_UNSCALE);
		grad_stats(c, r, "ncclDevKernel_AllReduce_Max_f32_RING_LL");
	}
	if (in->lay.clip_grad) {
		opt_pass(c, r, z, share, eshare, OPT_NORM);
		grad_stats(c, r, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	}
	opt_step_count(c, r);
	opt_pass(c, r, z, share, eshare, OPT_UPDATE);
	quant_amax_reduce(c, r, z);
	/* ZeRO-1/2: the updated weights all-gathered, here or (overlap_param)
	 * before the next step's first forward; ZeRO-3 and FSDP's
	 * SHARD_GRAD_OP keep them sharded. */
	int gathered = zero && in->lay.zero <= 2 && !in->lay.overlap_param &&
		       !(in->lay.zero == 2 && fsdp_like(&in->lay));
	if (gathered)
		gather_updated(c, r, z);
	if (z->moe && z->edp > 1 && in->lay.zero >= 1 && in->lay.zero <= 2) {
		gather_experts(c, r, z);
		gathered = 1;
	}
	grad_buffer_zero(c, r, z, gathered);
}

void ss_steps(struct ctx *c, const struct shape *z)
{
	const struct synth_in *in = c->in;
	for (c->sc.step = 0; c->sc.step < (in->steps > 0 ? in->steps : 1); c->sc.step++) {
		for (int r = 0; r < in->lay.pp; r++) {
			uint32_t first = c->em.w.n_nodes, w, last0[S_N];
			size_t k0, e0;
			set_ann(c, r, -1, PH_NONE, -1);
			stage_step(c, r, z);
			/* The step's tail (its map: umap.c um_tail): without
			 * overlap the gradients wait for the stage's last
			 * backward; the optimizer; the closing synchronize. */
			k0 = c->em.w.n_nodes;
			e0 = c->em.w.edges.n;
			memcpy(last0, c->rk[r].last, sizeof(last0));
			tail_grads(c, r, z);
			if (!in->bare)
				ss_optimizer(c, r, z);
			set_ann(c, r, -1, PH_NONE, -1);
			w = se_sync(c, r);
			if (c->oom)
				return;
			if (um_tail(c, r, k0, e0, last0)) {
				c->oom = 1;
				return;
			}
			if (VEC_PUSH(c->sc.step_first, first) || VEC_PUSH(c->sc.step_last, w)) {
				c->oom = 1;
				return;
			}
		}
	}
}
