/* layout.c - the layout's names, defaults and derived degrees. */
#include "layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw.h"

void layout_default(struct layout *l)
{
	memset(l, 0, sizeof(*l));
	for (int k = 0; k < LK_N; k++)
		if (layout_knobs[k].home == LK_L)
			layout_set(NULL, l, k, layout_knobs[k].def);
}

static const char *const recompute_names[] = {"none", "selective", "full"};
static const char *const schedule_names[] = {"gpipe", "1f1b", "interleaved", "zb-1p",
					     "zb-2p", "zb-v", "dualpipev"};
static const char *const cp_comm_names[] = {"p2p", "all_gather", "a2a", "a2a+p2p"};
static const char *const fp8_recipe_names[] = {"delayed", "current", "blockwise", "mxfp8"};
static const char *const dp_impl_names[] = {"megatron", "deepspeed", "fsdp", "fsdp2"};
static const char *const dispatcher_names[] = {"alltoall", "allgather", "flex", "hybridep"};
static const char *const opt_dtype_names[] = {"fp32", "bf16-states", "bf16"};

/* names[i] of n names, "?" beyond; and the index of s among them, -1. */
static const char *name_of(const char *const *names, int n, int i)
{
	return i >= 0 && i < n ? names[i] : "?";
}

static int index_of(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

const char *layout_recompute_name(int r)
{
	return name_of(recompute_names, LAYOUT_RECOMPUTE_FULL + 1, r);
}

int layout_recompute_parse(const char *s)
{
	return index_of(recompute_names, LAYOUT_RECOMPUTE_FULL + 1, s);
}

/* Every set's name, made by the preprocessor: RC_k(x) lists the 2^(k+1)
 * sets of bits 0..k, each module's ",name" written before those of the
 * higher bits (x), so entry v is ",core_attn,mlp..." in the bits' order;
 * a name is its entry past the first comma. */
#define RC_E(x) x,
#define RC_0(x) RC_E(x) RC_E(",core_attn" x)
#define RC_1(x) RC_0(x) RC_0(",mlp" x)
#define RC_2(x) RC_1(x) RC_1(",layernorm" x)
#define RC_3(x) RC_2(x) RC_2(",mla_up_proj" x)
#define RC_4(x) RC_3(x) RC_3(",moe" x)
#define RC_5(x) RC_4(x) RC_4(",moe_act" x)
#define RC_6(x) RC_5(x) RC_5(",shared_experts" x)
static const char *const rc_sets[LAYOUT_RC_ALL + 1] = {RC_6("")};
static const char *const rc_names[] = {"core_attn", "mlp",     "layernorm",	"mla_up_proj",
				       "moe",	    "moe_act", "shared_experts"};

const char *layout_rc_modules_name(int set)
{
	if (set == 0) /* a layout nobody set: Megatron's default */
		set = LAYOUT_RC_CORE_ATTN;
	return set > 0 && set <= LAYOUT_RC_ALL ? rc_sets[set] + 1 : "?";
}

/* A set of names (separated by spaces, commas or '+') as bits of their
 * places in names[n]; -1 for a name not there or no name. */
static int name_set_parse(const char *s, const char *const *names, int n_names)
{
	int set = 0;
	while (*s) {
		size_t n = strcspn(s, " ,+");
		int i = -1;
		for (int k = 0; n && k < n_names; k++)
			if (strlen(names[k]) == n && strncmp(s, names[k], n) == 0)
				i = k;
		if (n && i < 0)
			return -1;
		if (n)
			set |= 1 << i;
		s += n + (s[n] != 0);
	}
	return set ? set : -1;
}

int layout_rc_modules_parse(const char *s)
{
	return name_set_parse(s, rc_names, (int)(sizeof(rc_names) / sizeof(*rc_names)));
}

/* Every target set's name, made as the recompute modules' (RC_k). */
#define LT_0(x) RC_E(x) RC_E(",linear_qkv" x)
#define LT_1(x) LT_0(x) LT_0(",linear_proj" x)
#define LT_2(x) LT_1(x) LT_1(",linear_fc1" x)
#define LT_3(x) LT_2(x) LT_2(",linear_fc2" x)
static const char *const lora_sets[LAYOUT_LORA_ALL + 1] = {LT_3("")};
static const char *const lora_names[] = {"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"};

const char *layout_lora_targets_name(int set)
{
	if (set == 0) /* a layout nobody set: Bridge's default, all four */
		set = LAYOUT_LORA_ALL;
	return set > 0 && set <= LAYOUT_LORA_ALL ? lora_sets[set] + 1 : "?";
}

int layout_lora_targets_parse(const char *s)
{
	return name_set_parse(s, lora_names, (int)(sizeof(lora_names) / sizeof(*lora_names)));
}

int layout_lora(const struct layout *l, int bit)
{
	int set = l->lora_targets ? l->lora_targets : LAYOUT_LORA_ALL;
	return l->lora_rank > 0 && (bit == 0 || (set & bit));
}

double layout_lora_params(const struct llm *m, const struct layout *l)
{
	double r = l->lora_rank, h = m->hidden, t = l->tp > 0 ? l->tp : 1, p = 0;
	if (!layout_lora(l, 0))
		return 0;
	if (layout_lora(l, LAYOUT_LORA_QKV))
		p += r * (h + llm_qkv_width(m));
	if (layout_lora(l, LAYOUT_LORA_PROJ))
		p += r * (llm_proj_width(m) + h);
	if (layout_lora(l, LAYOUT_LORA_FC1))
		p += r * (h + llm_ffn_in(m));
	if (layout_lora(l, LAYOUT_LORA_FC2))
		p += r * ((double)m->ffn + h);
	return p / t;
}

int layout_rc(const struct layout *l, int bit)
{
	int set = l->recompute_modules ? l->recompute_modules : LAYOUT_RC_CORE_ATTN;
	return l->recompute == LAYOUT_RECOMPUTE_SELECTIVE && (set & bit);
}

const char *layout_schedule_name(int s)
{
	return name_of(schedule_names, LAYOUT_DUALPIPEV + 1, s);
}

int layout_schedule_parse(const char *s)
{
	/* The paper's handcrafted names read too. */
	if (strcmp(s, "zb-h1") == 0)
		return LAYOUT_ZB1P;
	if (strcmp(s, "zb-h2") == 0)
		return LAYOUT_ZB2P;
	if (strcmp(s, "zbv") == 0)
		return LAYOUT_ZBV;
	return index_of(schedule_names, LAYOUT_DUALPIPEV + 1, s);
}

int layout_zb(int schedule)
{
	return schedule == LAYOUT_ZB1P || schedule == LAYOUT_ZB2P || layout_v(schedule);
}

int layout_v(int schedule)
{
	return schedule == LAYOUT_ZBV || schedule == LAYOUT_DUALPIPEV;
}

int layout_stage_chunks(const struct layout *l)
{
	if (layout_v(l->schedule))
		return 2;
	if (l->schedule == LAYOUT_INTERLEAVED && l->vp > 1)
		return l->vp;
	return 1;
}

int layout_warmup(const struct layout *l, int s)
{
	int p = l->pp, v = layout_stage_chunks(l), total = l->microbatches * v, w;
	if (l->schedule == LAYOUT_GPIPE)
		w = total;
	else if (l->schedule == LAYOUT_INTERLEAVED)
		w = l->microbatches == p ? total : (p - s - 1) * 2 + (v - 1) * p;
	else
		w = p - s - 1;
	if (l->moe_a2a_overlap && w < total)
		w++;
	return w > total ? total : w;
}

int layout_chunk_model(const struct layout *l, int s, int c)
{
	if (layout_v(l->schedule))
		return c == 0 ? s : 2 * l->pp - 1 - s;
	return c * l->pp + s;
}

void layout_chunk_place(const struct layout *l, int k, int *s, int *c)
{
	int p = l->pp > 0 ? l->pp : 1;
	*c = k / p;
	*s = k % p;
	if (layout_v(l->schedule) && *c == 1)
		*s = p - 1 - *s;
}

int layout_head_stage(const struct layout *l)
{
	int s, c;
	layout_chunk_place(l, l->pp * layout_stage_chunks(l) - 1, &s, &c);
	return s;
}

/* ZB-V's passes (layout_zb_next): its phases' groups of passes, by
 * (chunk, pass) -- 0x00 F0, 0x01 B0, 0x02 W0, 0x10 F1 ... -- and the
 * number of groups of each phase (-1: while its condition holds). */
static const unsigned char zbv_group[8][6] = {{0x00},
					      {0x10, 0x00},
					      {0x10, 0x11, 0x12},
					      {0x00, 0x01, 0x02, 0x10, 0x11, 0x12},
					      {0x01, 0x11},
					      {0x01, 0x02},
					      {0x12},
					      {0x02}};
static const int zbv_len[8] = {1, 2, 3, 6, 2, 2, 1, 1};

static int zbv_next(const struct layout *l, int s, struct layout_zb *it, int *mb, int *ch)
{
	int p = l->pp, m = l->microbatches, n = m > 2 * p - 1 ? m : 2 * p - 1;
	for (;;) {
		int groups, op, *cnt;
		switch (it->phase) {
		case 0:
			groups = 2 * (p - s) - 1;
			break;
		case 1:
			groups = s;
			break;
		case 2:
			groups = p - s;
			break;
		case 3: /* tested before each group, as PyTorch's while */
			groups = it->sub || it->f1 < it->f || it->f < n ? it->count + 1 : it->count;
			break;
		case 4:
			groups = s;
			break;
		case 5:
			groups = p - s;
			break;
		case 6:
			groups = it->w1 < it->b1 ? it->count + 1 : it->count;
			break;
		case 7:
			groups = it->w < it->b ? it->count + 1 : it->count;
			break;
		default:
			return -1;
		}
		if (it->count >= groups) {
			it->phase++;
			it->count = it->sub = 0;
			continue;
		}
		op = zbv_group[it->phase][it->sub];
		if (++it->sub == zbv_len[it->phase]) {
			it->sub = 0;
			it->count++;
		}
		/* The stable phase's F0 only while chunk 0 has forwards left. */
		if (it->phase == 3 && op == 0x00 && it->f >= n)
			continue;
		*ch = op >> 4;
		switch (op & 15) {
		case LAYOUT_PASS_F:
			cnt = *ch ? &it->f1 : &it->f;
			break;
		case LAYOUT_PASS_B:
			cnt = *ch ? &it->b1 : &it->b;
			break;
		default:
			cnt = *ch ? &it->w1 : &it->w;
			break;
		}
		*mb = (*cnt)++;
		if (*mb < m)
			return op & 15;
	}
}

/* DualPipeV's passes: its phases' groups as ZB-V's (0x03: a whole
 * backward; 0x?4: chunk ?'s B, whole before the cool-down's middle pair
 * (dpv_next); 0x05: the oldest B's W), its phases' group counts in
 * dpv_next. */
static const unsigned char dpv_group[8][4] = {{0x00},
					      {0x00, 0x10},
					      {0x11, 0x12, 0x10},
					      {0x00, 0x13, 0x10, 0x03},
					      {0x13, 0x10, 0x03},
					      {0x14, 0x04},
					      {0x05, 0x01},
					      {0x05}};
static const int dpv_len[8] = {1, 2, 3, 4, 3, 2, 2, 1};

static int dpv_next(const struct layout *l, int s, struct layout_zb *it, int *mb, int *ch)
{
	int p = l->pp, m = l->microbatches, half = (s + 1) / 2;
	const int groups[8] = {2 * (p - s - 1), s + 1, p - s - 1, m - 2 * p + s + 1,
			       p - s - 1,	s + 1, p - s - 1, s + 1};
	for (;;) {
		int op, kind, *f, *b, *w;
		if (it->phase >= 8)
			return -1;
		if (it->count >= groups[it->phase]) {
			it->phase++;
			it->count = it->sub = 0;
			continue;
		}
		op = dpv_group[it->phase][it->sub];
		if (++it->sub == dpv_len[it->phase]) {
			it->sub = 0;
			it->count++;
		}
		kind = op & 15;
		*ch = op >> 4;
		if (kind == 4) {
			/* The cool-down's pairs: whole before pair `half`, B
			 * from it on (chunk 1's of that pair only where s is
			 * odd); it->count is already the next pair's. */
			int i = it->sub ? it->count : it->count - 1;
			kind = i > half || (i == half && (*ch == 0 || s % 2)) ? LAYOUT_PASS_B
									      : LAYOUT_PASS_BW;
		} else if (kind == 5) {
			/* The oldest B's W: the queue holds the cool-down's s + 1
			 * B -- chunks 1, 0, 1, ... (s odd) or 0, 1, 0, ... (s
			 * even) -- then chunk 0's. */
			int k = it->q++;
			*ch = k < s + 1 ? (k + s) & 1 : 0;
			kind = LAYOUT_PASS_W;
		}
		f = *ch ? &it->f1 : &it->f;
		b = *ch ? &it->b1 : &it->b;
		w = *ch ? &it->w1 : &it->w;
		if (kind == LAYOUT_PASS_F)
			*mb = (*f)++;
		else if (kind == LAYOUT_PASS_W)
			*mb = (*w)++;
		else {
			*mb = (*b)++;
			if (kind == LAYOUT_PASS_BW)
				(*w)++;
		}
		if (*mb < m)
			return kind;
	}
}

int layout_dpv_pair(const struct layout *l, int s, const struct layout_zb *it)
{
	if (l->schedule != LAYOUT_DUALPIPEV)
		return 0;
	/* Phase 3's group F0 BW1 F1 BW0 (after its F0 sub is 1, after its
	 * F1 3), phase 4's BW1 F1 BW0 (after its F1 2). */
	if (it->phase == 3)
		return it->sub == 3 || (it->sub == 1 && !(it->count == 0 && s == l->pp - 1));
	return it->phase == 4 && it->sub == 2;
}

int layout_a2a_overlap(const struct llm *m, const struct layout *l)
{
	/* DualPipeV's pairs where the merged unit is what runs: not under
	 * recomputation (torchtitan refuses it), nor where prism's parts of
	 * a layer do not hold (what check_a2a_overlap refuses besides). */
	return l->moe_a2a_overlap ||
	       (l->schedule == LAYOUT_DUALPIPEV && m->experts > 0 && layout_ep(l) > 1 &&
		l->recompute == LAYOUT_RECOMPUTE_NONE && l->exec == LAYOUT_EXEC_EAGER &&
		l->moe_dispatcher != LAYOUT_DISP_ALLGATHER &&
		!(m->shared_experts > 0 && l->moe_shared_overlap) && !llm_hybrid(m));
}

int layout_zb_next(const struct layout *l, int s, struct layout_zb *it, int *mb, int *ch)
{
	int p = l->pp, m = l->microbatches, two = l->schedule == LAYOUT_ZB2P;
	if (l->schedule == LAYOUT_ZBV)
		return zbv_next(l, s, it, mb, ch);
	if (l->schedule == LAYOUT_DUALPIPEV)
		return dpv_next(l, s, it, mb, ch);
	*ch = 0;
	int warm = two ? 2 * (p - s) - 1 : p - s - 1;
	if (warm > m)
		warm = m;
	if (it->f < warm) { /* the warm-up (f only grows past it) */
		*mb = it->f++;
		return LAYOUT_PASS_F;
	}
	if (it->b >= m) {
		if (it->w >= m)
			return -1;
		*mb = it->w++;
		return LAYOUT_PASS_W;
	}
	if (!two) {
		/* F (while any is left), B, then W from the (s+1)-th B on. */
		if (it->sub == 0) {
			it->sub = 1;
			if (it->f < m) {
				*mb = it->f++;
				return LAYOUT_PASS_F;
			}
		}
		if (it->sub == 1) {
			it->sub = 2;
			*mb = it->b++;
			return LAYOUT_PASS_B;
		}
		it->sub = 0;
		if (it->b - 1 >= s) {
			*mb = it->w++;
			return LAYOUT_PASS_W;
		}
		return layout_zb_next(l, s, it, mb, ch);
	}
	/* ZB2P: B, then [W where 2p - 1 are held] F, or W once no F is left. */
	if (it->sub == 0) {
		it->sub = 1;
		*mb = it->b++;
		return LAYOUT_PASS_B;
	}
	if (it->sub == 1 && it->f < m && it->f - it->w >= 2 * p - 1) {
		it->sub = 2;
		*mb = it->w++;
		return LAYOUT_PASS_W;
	}
	it->sub = 0;
	if (it->f < m) {
		*mb = it->f++;
		return LAYOUT_PASS_F;
	}
	*mb = it->w++;
	return LAYOUT_PASS_W;
}

int64_t layout_step_passes(const struct layout *l)
{
	int64_t p = l->pp, m = l->microbatches, v = layout_stage_chunks(l);
	if (l->schedule == LAYOUT_DUALPIPEV)
		return 4 * m * p + p * (3 * p - 1) / 2;
	return p * v * m * (layout_zb(l->schedule) ? 3 : 2);
}

const char *layout_cp_comm_name(int c)
{
	return name_of(cp_comm_names, LAYOUT_CP_A2A_P2P + 1, c);
}

int layout_cp_comm_parse(const char *s)
{
	if (strcmp(s, "allgather") == 0)
		return LAYOUT_CP_ALLGATHER;
	return index_of(cp_comm_names, LAYOUT_CP_A2A_P2P + 1, s);
}

const char *layout_fp8_recipe_name(int r)
{
	return name_of(fp8_recipe_names, LAYOUT_FP8_MXFP8 + 1, r);
}

int layout_fp8_recipe_parse(const char *s)
{
	if (strcmp(s, "tensorwise") == 0)
		return LAYOUT_FP8_CURRENT;
	return index_of(fp8_recipe_names, LAYOUT_FP8_MXFP8 + 1, s);
}

const char *layout_dp_impl_name(int i)
{
	return name_of(dp_impl_names, LAYOUT_DP_FSDP2 + 1, i);
}

int layout_dp_impl_parse(const char *s)
{
	return index_of(dp_impl_names, LAYOUT_DP_FSDP2 + 1, s);
}

/* DeepSpeed's zero_optimization defaults (deepspeed/runtime/zero/config.py):
 * stage3_prefetch_bucket_size 5e7 and reduce_bucket_size 5e8 elements. */
#define DS_PREFETCH_BUCKET 5e7
#define DS_REDUCE_BUCKET   5e8
/* Megatron-FSDP's suggested_communication_unit_size when none is given
 * (megatron_fsdp.py: at least 1e9 elements). */
#define MFSDP_UNIT 1e9
/* DeepSpeed's ZeRO-3 optimizer sub groups (zero/config.py sub_group_size:
 * 1e9 parameters of the partition). */
#define DS_SUB_GROUP 1e9

void layout_dp_traits(const struct layout *l, double layer_params, double wb, double gb,
		      struct layout_dp_traits *t)
{
	/* A sharded fp32 master cast to the weights' dtype on its way in;
	 * pure bf16 (optimizer_dtype bf16) holds no master: the sharded bf16
	 * parameter is gathered as it is (FSDP2 still copies it in). */
	int pure = l->optimizer_dtype == LAYOUT_OPT_BF16;
	double cast = pure ? 2 * wb : wb < 4 ? 4 + wb : 0;
	memset(t, 0, sizeof(*t));
	t->prefetch = l->prefetch;
	t->rs_bytes = gb;
	t->rs_buf = gb;
	/* bf16 main gradients (layout_lowp_grads) copied to fp32 for the
	 * optimizer: Megatron-FSDP's update_main_grads (optimizer_grad.to(the
	 * fp32 main weight's dtype), held as .grad until the next step's
	 * zero_grad; none with the precision-aware optimizer's decoupled_grad,
	 * megatron_fsdp_use_decoupled_grad); Megatron-LM's distributed
	 * optimizer and DDP's (distrib_optimizer.py, optimizer.py
	 * _copy_model_grads_to_main_grads: .grad = the shard's main_grad
	 * .float(), a new tensor where it is bf16; decoupled_grad under
	 * use_precision_aware_optimizer_no_fp8_or_ds_fp8); DeepSpeed's step,
	 * a param group's flattened partition .to() the fp32 master's dtype
	 * (stage_1_and_2.py step), ZeRO-3 a sub group's at a time (stage3.py
	 * _prepare_fp32_grad_for_sub_group). */
	if (layout_lowp_grads(l, 0) &&
	    !(l->dp_impl == LAYOUT_DP_MEGATRON && l->optimizer_dtype == LAYOUT_OPT_BF16_STATES &&
	      (l->zero >= 2 || l->dtype != HW_FP8 || l->fp8_recipe == LAYOUT_FP8_DELAYED)))
		t->step_cast = 4;
	if (l->dp_impl == LAYOUT_DP_DEEPSPEED && l->zero >= 3)
		t->step_group = DS_SUB_GROUP;
	/* DeepSpeed's ZeRO-1 with fp32 main gradients is its BF16_Optimizer
	 * (engine.py _do_optimizer_sanity_check: bf16, grad_accum_dtype fp32,
	 * stage 1), whose step reads its fp32 buffer's partition as it is
	 * (bf16_optimizer.py step: no copy, step_cast 0) but which keeps the
	 * bf16 .grad too (clear_lp_grads zeroes it: set_to_none False). */
	if (l->dp_impl == LAYOUT_DP_DEEPSPEED && l->zero == 1 && layout_lowp_grads(l, 1) &&
	    !layout_lowp_grads(l, 0))
		t->lp_grad = wb;
	switch (l->dp_impl) {
	case LAYOUT_DP_DEEPSPEED: {
		/* PartitionedParameterCoordinator.fetch_sub_module prefetches the
		 * next modules of its trace while fewer than
		 * stage3_prefetch_bucket_size parameters are in flight (at least
		 * the next one); gradients are copied into the ipg bucket
		 * (__add_grad_to_ipg_bucket), reduce-scattered in the
		 * communication dtype (the weights', engine.communication_data_type)
		 * and the rank's partition copied into its fp32 gradient
		 * (partition_grads).  The ipg bucket is allocated whole,
		 * reduce_bucket_size elements of the weights' dtype whatever the
		 * model's size (contiguous_gradients, its default:
		 * stage_1_and_2.py setup_buckets and stage3.py's ipg buffer,
		 * torch.empty(reduce_bucket_size); one, overlap_comm being off by
		 * default under ZeRO-1/2 and stage3.py keeping one a dtype).
		 * ZeRO-1 allocates it too: its gradient hooks exist under
		 * contiguous_gradients (create_gradient_handling_hooks) and
		 * call setup_buckets at a backward's first gradient; the
		 * bucket is released (_release_ipg_buffers) only by the
		 * boundary's reduce_gradients, so it is held through the
		 * backward (and ZeRO-1's micro steps) whatever dp is.
		 * BF16_Optimizer (ZeRO-1, fp32 main gradients: lp_grad) has
		 * no ipg bucket (bf16_optimizer.py). */
		int cap = layer_params > 0 ? (int)(DS_PREFETCH_BUCKET / layer_params) : t->prefetch;
		if (cap < 1)
			cap = 1;
		if (t->prefetch > cap)
			t->prefetch = cap;
		t->rs_bytes = wb;
		t->rs_in = 2 * wb;
		t->rs_out = wb + gb; /* into the partition, in its dtype (gb) */
		t->rs_buf = 0;
		t->bucket_params = t->lp_grad > 0 ? 0 : DS_REDUCE_BUCKET;
		/* Its ZeRO-1/2 step (stage_1_and_2.py step) flattens the
		 * partition's gradients (a copy in their dtype) before the
		 * .to() of the fp32 master's dtype, both held at once; ZeRO-1
		 * first frees the other ranks' parameters' gradients
		 * (free_grad_in_param_list(params_not_in_partition)), its
		 * boundary's reduce_gradients having copied the rank's into
		 * grads_in_partition (copy_grads_in_partition). */
		if (l->zero <= 2 && t->step_cast > 0)
			t->step_cast += gb;
		t->step_part = l->zero == 1 && t->lp_grad == 0;
		/* BF16_Optimizer has no reduce_gradients: the engine's boundary
		 * (engine.py allreduce_gradients, after backward_epilogue's
		 * fp32 accumulation) all-reduces get_grads_for_reduction's
		 * fp32 flat buffers (buffered_allreduce_fallback,
		 * allreduce_no_retain: a bucket never splits a tensor, so each
		 * param group's flat buffer whole), allreduce_bucket casting it
		 * to communication_data_type (the weights' bf16 by default:
		 * engine.py communication_data_type) and back: .to() reads 4
		 * and writes wb, the postscale mul_ (1 / dp) reads and writes
		 * wb, copy_ reads wb and writes 4. */
		if (t->lp_grad > 0) {
			t->ar_flat = 1;
			t->rs_in = 4 + wb;
			t->rs_out = 2 * wb + wb + 4;
		}
		break;
	}
	case LAYOUT_DP_FSDP:
		/* FSDP1 (torch/distributed/fsdp/_runtime_utils.py): the flat
		 * parameter's shard cast to the low precision before its
		 * all-gather (_use_low_precision_shard), gathered into the flat
		 * buffer the parameters view; limit_all_gathers lets two
		 * all-gathers be in flight (_free_event_queue), and
		 * BACKWARD_PRE prefetches one unit: one layer ahead at most.  The
		 * flat gradient is reduce-scattered in the reduce dtype
		 * (MixedPrecision's default: the parameters') and the shard cast
		 * to the fp32 sharded gradient. */
		if (t->prefetch > 1)
			t->prefetch = 1;
		t->rs_bytes = wb;
		t->ag_in = pure ? 0 : cast;
		t->rs_out = pure ? 0 : wb + 4;
		t->rs_buf = wb;
		break;
	case LAYOUT_DP_FSDP2:
		/* fully_shard (torch/distributed/fsdp/_fully_shard/
		 * _fsdp_collectives.py): foreach_all_gather copies (and casts)
		 * the group's shards into the all-gather input on the copy-in
		 * stream, foreach_all_gather_copy_out splits the output into the
		 * parameters on the compute stream, and the output is kept until
		 * the next group's copy-in (_fsdp_param_group.py, "Overlapping
		 * all-gather copy-in and all-gather"); foreach_reduce copies the
		 * unsharded gradients into the reduce-scatter input in the
		 * reduce dtype (torchtitan: fp32) on the reduce-scatter stream. */
		t->ag_in = cast;
		t->ag_out = 2 * wb;
		t->rs_in = wb + gb;
		t->ag_extra = 1;
		t->rs_buf = wb + gb;
		break;
	default: /* Megatron-LM: gradients accumulate into the contiguous
		  * grad buffer, parameters are views of the param buffer
		  * (distributed/param_and_grad_buffer.py): no copies. */
		if (l->zero < 2)
			break;
		/* Megatron-FSDP (ZeRO-2 optim_grads, ZeRO-3
		 * optim_grads_params; megatron_fsdp/param_and_grad_buffer.py,
		 * megatron_fsdp.py): a unit's unsharded gradient bucket is
		 * reduce-scattered and its shard added into the persistent
		 * sharded buffer (GradReducePipeline.
		 * _bucket_group_gradient_reduce: local_grad += reduced_grad,
		 * 3 gb a sharded parameter on the reduce-scatter stream); the
		 * bucket is freed once the reduce queue holds more than
		 * suggested_RS_queue_capacity parameters or the backward ends
		 * (reset).  The capacity is --suggested-communication-unit-size
		 * U, by default max(1e9, --ddp-bucket-size) under ZeRO-2;
		 * ZeRO-3 gathers U / 2 parameters ahead, so prefetch k layers
		 * is U = 2 k layer_params.  --fsdp-double-buffer (FixedPoolAllocator,
		 * UB_BUFFER_NUM 2) takes the units' gathered weights and gradient
		 * buckets from persistent pools of two units: the all-gather's
		 * prefetch stops at two units (AllGatherPipeline: need_skip_prefetch)
		 * and the reduce queue keeps one unit beside the one filling
		 * (_enforce_double_buffer_limit). */
		t->rs_out = 3 * gb;
		t->rs_buf = 0;
		t->rs_fifo = 1;
		t->pool = l->fsdp_double_buffer ? 2 : 0;
		if (t->pool > 0 && t->prefetch > 1)
			t->prefetch = 1;
		if (l->zero >= 3) {
			t->rs_queue = 2.0 * t->prefetch * layer_params;
		} else {
			double b = l->bucket_mb > 0 ? layout_bucket_params(l, gb) : 0;
			t->rs_queue = b > MFSDP_UNIT ? b : MFSDP_UNIT;
		}
		break;
	}
}

/* The longest layout string unrolled (its layers, its chunks' bars and
 * the embedding and loss). */
#define LAYOUT_STR_MAX (LLM_MAX_LAYERS + LAYOUT_MAX_STAGES + 2)

/* One unrolling pass of Megatron-LM's parse_str_to_list (re.sub, left to
 * right): groups "(X)*n" (X holds no ')') when group, else "x*n" (x any
 * character); into out of LAYOUT_STR_MAX bytes.  0, or -1 beyond that. */
static int unroll(const char *in, char *out, int group)
{
	size_t o = 0;
	for (const char *p = in; *p;) {
		const char *body = p, *end = NULL, *d;
		size_t len = 1;
		if (group && *p == '(') {
			body = p + 1;
			end = strchr(body, ')');
			if (!end || end == body || end[1] != '*' || end[2] < '0' || end[2] > '9')
				end = NULL;
			else
				len = (size_t)(end - body), d = end + 2;
		} else if (!group && p[1] == '*' && p[2] >= '0' && p[2] <= '9') {
			end = p + 1, d = p + 2;
		}
		if (!end) {
			if (o + 1 >= LAYOUT_STR_MAX)
				return -1;
			out[o++] = *p++;
			continue;
		}
		{
			long n = 0;
			for (; *d >= '0' && *d <= '9'; d++)
				if ((n = n * 10 + (*d - '0')) > LAYOUT_STR_MAX)
					return -1;
			if ((size_t)n * len + o >= LAYOUT_STR_MAX)
				return -1;
			for (long i = 0; i < n; i++, o += len)
				memcpy(out + o, body, len);
			p = d;
		}
	}
	out[o] = '\0';
	return 0;
}

/* A layout string (Megatron-LM's pipeline_model_parallel_layout): each
 * chunk's layers into l->part, their number into l->part_chunks.  The
 * embedding first and the loss last, once each (validate_layer_layout);
 * multi-token-prediction layers ('m', into part_mtp) after every decoder
 * layer, in the last chunk (prism runs them on the last stage: Megatron's
 * default placement; its mtp_standalone on another stage is refused). */
static int parse_layout_str(const char *s, struct layout *l, struct prism_err *err)
{
	char *a = malloc(LAYOUT_STR_MAX), *b = malloc(LAYOUT_STR_MAX);
	size_t k = 0, len;
	int rc = 0, chunks = 1, nE = 0, nL = 0, nm = 0, m_chunk = -1;
	long in_chunk = 0;

	if (!a || !b) {
		free(a), free(b);
		return prism_err_set(err, PRISM_ENOMEM, "partition: out of memory");
	}
	for (const char *p = s; *p && k + 1 < LAYOUT_STR_MAX; p++)
		if (*p != ',')
			a[k++] = *p;
	a[k] = '\0';
	if (strlen(s) >= LAYOUT_STR_MAX || unroll(a, b, 1) || unroll(b, a, 0)) {
		rc = prism_err_set(err, PRISM_EARG,
				   "partition '%.64s': layout unrolls to more than %d "
				   "characters",
				   s, LAYOUT_STR_MAX - 1);
		goto out;
	}
	len = strlen(a);
	memset(l->part, 0, sizeof(l->part));
	for (size_t i = 0; i <= len && !rc; i++) {
		char c = a[i];
		if (c == '|' || c == '\0') {
			if (chunks > LAYOUT_MAX_STAGES)
				rc = prism_err_set(err, PRISM_EARG,
						   "partition '%.64s': more than %d model chunks",
						   s, LAYOUT_MAX_STAGES);
			else
				l->part[chunks - 1] = (uint16_t)in_chunk;
			in_chunk = 0;
			chunks += c == '|';
		} else if (c == 't') {
			if (nm)
				rc =
				    prism_err_set(err, PRISM_EARG,
						  "partition '%.64s': decoder layers (t) must come "
						  "before the MTP layers (m)",
						  s);
			else if (++in_chunk > 65535)
				rc = prism_err_set(
				    err, PRISM_EARG,
				    "partition '%.64s': a chunk of more than 65535 layers", s);
		} else if (c == 'E' || c == 'L') {
			if (c == 'E' ? nE++ || i != 0 : nL++ || i != len - 1)
				rc = prism_err_set(
				    err, PRISM_EARG,
				    "partition '%.64s': the layout needs the embedding E "
				    "once, first, and the loss L once, last",
				    s);
		} else if (c == 'm') {
			if (nm++ && m_chunk != chunks)
				rc = prism_err_set(
				    err, PRISM_EARG,
				    "partition '%.64s': all MTP layers (m) in one chunk", s);
			else if (nm > LLM_MAX_MTP)
				rc = prism_err_set(err, PRISM_EARG,
						   "partition '%.64s': more than %d MTP layers", s,
						   LLM_MAX_MTP);
			m_chunk = chunks;
		} else {
			rc = prism_err_set(
			    err, PRISM_EARG,
			    "partition '%.64s': invalid layer character '%c' (known: E, "
			    "t, L, m; chunks split by |, repeats (X)*n and x*n)",
			    s, c);
		}
	}
	if (!rc && (!nE || !nL))
		rc = prism_err_set(
		    err, PRISM_EARG,
		    "partition '%.64s': the layout needs the embedding E once, first, "
		    "and the loss L once, last",
		    s);
	if (!rc && nm && m_chunk != chunks)
		rc = prism_err_set(
		    err, PRISM_EARG,
		    "partition '%.64s': MTP layers (m) on a stage before the last "
		    "(Megatron's mtp_standalone) are not modelled: put them in the last "
		    "chunk, before L",
		    s);
	if (!rc)
		l->part_chunks = (uint16_t)chunks, l->part_mtp = (uint16_t)nm;
out:
	free(a), free(b);
	return rc;
}

/* "first=F", "last=K" or both, comma-separated: 1, 0 if s is not that
 * form, -1 if it is, badly. */
static int parse_first_last(const char *s, struct layout *l)
{
	const char *q = s;
	if (strncmp(s, "first=", 6) && strncmp(s, "last=", 5))
		return 0;
	while (*q) {
		int first = strncmp(q, "first=", 6) == 0;
		char *end;
		long v;
		if (!first && strncmp(q, "last=", 5))
			return -1;
		q += first ? 6 : 5;
		errno = 0;
		v = strtol(q, &end, 10);
		if (end == q || errno || v < 1 || v > 65535 || (*end && *end != ',') ||
		    (first ? l->part_first : l->part_last))
			return -1;
		*(first ? &l->part_first : &l->part_last) = (uint16_t)v;
		q = *end ? end + 1 : end;
	}
	return 1;
}

static const char *const exec_names[] = {"eager", "graphs", "compiled"};

const char *layout_exec_name(int e)
{
	return name_of(exec_names, LAYOUT_EXEC_COMPILED + 1, e);
}

int layout_exec_parse(const char *s)
{
	return index_of(exec_names, LAYOUT_EXEC_COMPILED + 1, s);
}

int layout_dropout(const struct layout *l)
{
	return !l->no_dropout;
}

static const char *const framework_names[] = {"megatron", "torch"};

const char *layout_framework_name(int f)
{
	return name_of(framework_names, LAYOUT_FW_TORCH + 1, f);
}

int layout_framework_parse(const char *s)
{
	return index_of(framework_names, LAYOUT_FW_TORCH + 1, s);
}

const char *layout_opt_dtype_name(int d)
{
	return name_of(opt_dtype_names, LAYOUT_OPT_BF16 + 1, d);
}

int layout_opt_dtype_parse(const char *s)
{
	return index_of(opt_dtype_names, LAYOUT_OPT_BF16 + 1, s);
}

static const char *const main_grads_names[] = {"auto", "fp32", "bf16"};

const char *layout_main_grads_name(int d)
{
	return name_of(main_grads_names, LAYOUT_GRADS_BF16 + 1, d);
}

int layout_main_grads_parse(const char *s)
{
	return index_of(main_grads_names, LAYOUT_GRADS_BF16 + 1, s);
}

const char *layout_dispatcher_name(int d)
{
	return name_of(dispatcher_names, LAYOUT_DISP_HYBRIDEP + 1, d);
}

int layout_dispatcher_parse(const char *s)
{
	return index_of(dispatcher_names, LAYOUT_DISP_HYBRIDEP + 1, s);
}

int layout_partition_parse(const char *s, struct layout *l, struct prism_err *err)
{
	static const char *const names[] = {[LAYOUT_PART_BALANCED] = "balanced",
					    [LAYOUT_PART_EMBED_LOSS] = "embed-loss",
					    [LAYOUT_PART_EMBED] = "embed",
					    [LAYOUT_PART_LOSS] = "loss"};
	const char *q = s;
	int n = 0, fl;

	memset(l->part, 0, sizeof(l->part));
	l->part_chunks = l->part_first = l->part_last = l->part_mtp = 0;
	l->partition = LAYOUT_PART_GIVEN;
	if (strcmp(s, "even") == 0)
		return 0;
	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (names[i] && strcmp(s, names[i]) == 0) {
			l->partition = i;
			return 0;
		}
	if ((fl = parse_first_last(s, l)) != 0) {
		if (fl > 0) {
			l->partition = LAYOUT_PART_FIRST_LAST;
			return 0;
		}
		l->part_first = l->part_last = 0;
		return prism_err_set(err, PRISM_EARG,
				     "partition '%s': expected first=F, last=K or first=F,last=K "
				     "(each 1..65535, once)",
				     s);
	}
	if (strchr(s, 'E') || strchr(s, '|'))
		return parse_layout_str(s, l, err);
	while (*q) {
		char *end;
		long v;
		errno = 0;
		v = strtol(q, &end, 10);
		if (end == q || errno || v < 1 || v > 65535 || (*end && *end != ',') ||
		    n >= LAYOUT_MAX_STAGES)
			return prism_err_set(
			    err, PRISM_EARG,
			    "partition '%s': expected even, balanced, embed-loss, embed, loss, "
			    "first=F,last=K, layers per stage (N0,N1,...: each 1..65535, at most "
			    "%d) or a layout string (Et*3|...|tL)",
			    s, LAYOUT_MAX_STAGES);
		l->part[n++] = (uint16_t)v;
		q = *end ? end + 1 : end;
	}
	if (n < 2)
		return prism_err_set(err, PRISM_EARG,
				     "partition '%s': a list needs a number for each of 2 or more "
				     "stages",
				     s);
	return 0;
}

/* Chunk k's text in a layout string of n chunks: E first, t or t*N, L
 * last. */
static size_t chunk_text(const struct layout *l, int k, char *buf, size_t n)
{
	int t = l->part[k], last = k == l->part_chunks - 1, mtp = last ? l->part_mtp : 0;
	return (size_t)snprintf(buf, n, "%s%s%.0d%s%.0d%s", k == 0 ? "E" : "",
				t == 0	 ? ""
				: t == 1 ? "t"
					 : "t*",
				t > 1 ? t : 0,
				mtp == 0   ? ""
				: mtp == 1 ? "m"
					   : "m*",
				mtp > 1 ? mtp : 0, last ? "L" : "");
}

static void layout_str(const struct layout *l, char *buf, size_t n)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int k = 0; k < l->part_chunks && o < n;) {
		char t[32], u[32];
		int run = 1;
		chunk_text(l, k, t, sizeof(t));
		while (k + run < l->part_chunks - 1 &&
		       (chunk_text(l, k + run, u, sizeof(u)), strcmp(t, u) == 0))
			run++;
		if (run > 1)
			o += (size_t)snprintf(buf + o, n - o, "(%s|)*%d", t, run);
		else
			o += (size_t)snprintf(buf + o, n - o, "%s%s", t,
					      k + 1 < l->part_chunks ? "|" : "");
		k += run;
	}
}

void layout_partition_name(const struct layout *l, char *buf, size_t n)
{
	size_t k = 0;
	switch (l->partition) {
	case LAYOUT_PART_BALANCED:
	case LAYOUT_PART_EMBED_LOSS:
	case LAYOUT_PART_EMBED:
	case LAYOUT_PART_LOSS:
		snprintf(buf, n, "%s",
			 l->partition == LAYOUT_PART_BALANCED	  ? "balanced"
			 : l->partition == LAYOUT_PART_EMBED_LOSS ? "embed-loss"
			 : l->partition == LAYOUT_PART_EMBED	  ? "embed"
								  : "loss");
		return;
	case LAYOUT_PART_FIRST_LAST:
		if (l->part_first)
			k = (size_t)snprintf(buf, n, "first=%d", l->part_first);
		if (l->part_last && k < n)
			snprintf(buf + k, n - k, "%slast=%d", k ? "," : "", l->part_last);
		return;
	}
	if (l->part_chunks) {
		layout_str(l, buf, n);
		return;
	}
	snprintf(buf, n, "even");
	if (l->part[0] == 0)
		return;
	buf[0] = '\0';
	for (int s = 0; s < LAYOUT_MAX_STAGES && l->part[s] && k + 8 < n; s++)
		k += (size_t)snprintf(buf + k, n - k, "%s%d", s ? "," : "", l->part[s]);
}

int layout_part_placed(const struct layout *l)
{
	return l->part_chunks > 0 || l->part[0] > 0;
}

void layout_part_text(const struct layout *l, char *buf, size_t n)
{
	size_t o = 0;
	snprintf(buf, n, "even");
	if (l->pp < 2 || !layout_part_placed(l))
		return;
	if (l->part_chunks) {
		layout_str(l, buf, n);
		return;
	}
	for (int s = 0; s < l->pp && o + 8 < n; s++)
		o += (size_t)snprintf(buf + o, n - o, "%s%d", s ? "," : "", l->part[s]);
}

int layout_cp(const struct layout *l)
{
	return l->cp > 1 ? l->cp : 1;
}

int layout_cp_a2a(const struct layout *l, int domain)
{
	int cp = layout_cp(l), a, b;
	if (l->cp_comm == LAYOUT_CP_A2A)
		return cp;
	if (l->cp_comm != LAYOUT_CP_A2A_P2P)
		return 1;
	a = cp;
	b = l->tp > 0 && domain / l->tp > 1 ? domain / l->tp : 1;
	while (b) { /* gcd */
		int t = a % b;
		a = b;
		b = t;
	}
	return a;
}

int layout_dpc(const struct layout *l)
{
	return l->dp * layout_cp(l);
}

int layout_ep(const struct layout *l)
{
	return l->ep > 1 ? l->ep : 1;
}

int layout_etp(const struct layout *l)
{
	return l->etp > 1 ? l->etp : 1;
}

int layout_edp(const struct layout *l)
{
	int n = l->tp * l->dp * layout_cp(l) / (layout_ep(l) * layout_etp(l));
	return n > 1 ? n : 1;
}

double layout_bucket_params(const struct layout *l, double grad_bytes)
{
	double dp = (double)l->dp * layout_cp(l);
	if (l->bucket_mb > 0)
		return l->bucket_mb * 1e6 / grad_bytes;
	return 40e6 > 1e6 * dp ? 40e6 : 1e6 * dp;
}

int layout_unit_reduce(const struct layout *l)
{
	return l->zero >= 3 || (l->zero == 2 && l->dp_impl != LAYOUT_DP_DEEPSPEED);
}

int layout_lowp_grads(const struct layout *l, int knob)
{
	int bf16 = l->dtype != HW_FP32 && l->dtype != HW_TF32 && l->dtype != HW_FP16;
	int mlm = l->zero == 0 || (l->zero == 1 && l->dp_impl == LAYOUT_DP_MEGATRON);
	int mfsdp = l->dp_impl == LAYOUT_DP_MEGATRON && l->zero >= 2;
	int ds = l->dp_impl == LAYOUT_DP_DEEPSPEED && l->zero >= 1;
	if (!bf16 || l->optimizer_dtype == LAYOUT_OPT_BF16 || !(mlm || mfsdp || ds))
		return 0;
	if (knob)
		return !(ds && l->zero == 2);
	if (ds && l->zero == 2)
		return 1;
	if (l->main_grads != LAYOUT_GRADS_AUTO)
		return l->main_grads == LAYOUT_GRADS_BF16;
	return !mlm;
}

int layout_shard_group(const struct layout *l)
{
	return l->shard > 0 && l->shard < layout_dpc(l) ? l->shard : layout_dpc(l);
}

int layout_stage_layers(const struct llm *m, const struct layout *l, int s)
{
	if (l->pp > 1 && l->part_chunks) {
		int n = 0;
		for (int c = 0; c < layout_stage_chunks(l); c++)
			n += layout_chunk_layers(m, l, s, c);
		return n;
	}
	if (l->pp > 1 && l->part[0] > 0)
		return l->part[s];
	return m->layers / (l->pp > 0 ? l->pp : 1);
}

int layout_chunk_layers(const struct llm *m, const struct layout *l, int s, int c)
{
	int k = layout_chunk_model(l, s, c);
	if (l->pp > 1 && l->part_chunks)
		return k < l->part_chunks ? l->part[k] : 0;
	return layout_stage_layers(m, l, s) / layout_stage_chunks(l);
}

int layout_chunk_first(const struct llm *m, const struct layout *l, int s, int c)
{
	int first = 0, ks, kc, n = layout_chunk_model(l, s, c);
	/* No placement (every chunk holds layers / pp / v): n chunks before
	 * it, as the sum below makes it.  (Each build's units, optimizer and
	 * gathers and the estimate's stages ask for it per layer pass.) */
	if (l->pp <= 1 || (!l->part_chunks && l->part[0] == 0))
		return n * layout_chunk_layers(m, l, s, c);
	/* The model chunks before it, wherever they sit. */
	for (int k = 0; k < n; k++) {
		layout_chunk_place(l, k, &ks, &kc);
		first += layout_chunk_layers(m, l, ks, kc);
	}
	return first;
}

int layout_chunk_moe(const struct llm *m, const struct layout *l, int s, int c)
{
	int first, n, k = 0;
	if (llm_moe_layers(m) == 0)
		return 0;
	first = layout_chunk_first(m, l, s, c);
	n = layout_chunk_layers(m, l, s, c);
	for (int i = first; i < first + n; i++)
		k += llm_is_moe_layer(m, i);
	return k;
}

/* ---- the knobs ------------------------------------------------------------ */

#define LK_OFF_L(f) offsetof(struct layout, f)
#define LK_OFF_M(f) offsetof(struct llm, f)
#define LAYOUT_KNOB_ROW(id_, home_, applies_, shown_, ...)                                         \
	[LK_##id_] = {.id = #id_, .home = LK_##home_, .off = LK_OFF_##home_(id_), __VA_ARGS__},
const struct layout_knob layout_knobs[LK_N] = {LAYOUT_KNOBS(LAYOUT_KNOB_ROW)};
#undef LAYOUT_KNOB_ROW

/* The home struct's bytes of knob k. */
static const void *field(const struct llm *m, const struct layout *l, int k)
{
	const struct layout_knob *K = &layout_knobs[k];
	return (const char *)(K->home == LK_L ? (const void *)l : (const void *)m) + K->off;
}

int layout_knob_find(const char *id)
{
	for (int k = 0; k < LK_N; k++)
		if (strcmp(layout_knobs[k].id, id) == 0)
			return k;
	return -1;
}

int layout_knob_by_opt(const char *opt)
{
	for (int k = 0; k < LK_N; k++)
		if (layout_knobs[k].opt && strcmp(layout_knobs[k].opt, opt) == 0)
			return k;
	return -1;
}

double layout_get(const struct llm *m, const struct layout *l, int k, int one)
{
	const void *p = field(m, l, k);
	double v = layout_knobs[k].kind == LK_REAL ? *(const double *)p : *(const int *)p;
	return one && (layout_knobs[k].flags & LK_ONE) && v < 1 ? 1 : v;
}

void layout_set(struct llm *m, struct layout *l, int k, double v)
{
	void *p = (void *)field(m, l, k);
	if (layout_knobs[k].kind == LK_REAL)
		*(double *)p = v;
	else
		*(int *)p = (int)v;
}

int layout_applies(const struct llm *m, const struct layout *l, int k)
{
	switch (k) {
#define LAYOUT_KNOB_APPLIES(id_, home_, applies_, shown_, ...)                                     \
	case LK_##id_:                                                                             \
		return (applies_) != 0;
		LAYOUT_KNOBS(LAYOUT_KNOB_APPLIES)
#undef LAYOUT_KNOB_APPLIES
	}
	(void)m;
	(void)l;
	return 0;
}

double layout_shown(const struct llm *m, const struct layout *l, int k)
{
	double v = layout_get(m, l, k, 1);
	switch (k) {
#define LAYOUT_KNOB_SHOWN(id_, home_, applies_, shown_, ...)                                       \
	case LK_##id_:                                                                             \
		return (shown_);
		LAYOUT_KNOBS(LAYOUT_KNOB_SHOWN)
#undef LAYOUT_KNOB_SHOWN
	}
	return v;
}

/* s into buf (n bytes), cut as snprintf's "%s" cuts it. */
static void put_text(char *buf, size_t n, const char *s)
{
	size_t len = strlen(s);
	if (n == 0)
		return;
	if (len >= n)
		len = n - 1;
	memcpy(buf, s, len);
	buf[len] = '\0';
}

/* v in decimal into buf (n bytes), as snprintf's "%d" writes and cuts it:
 * a sweep's keys format every knob of every row (layout_key), and
 * snprintf's parsing of the format was most of it. */
static void put_int(char *buf, size_t n, int v)
{
	char t[16];
	size_t o = sizeof(t);
	unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
	t[--o] = '\0';
	do
		t[--o] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		t[--o] = '-';
	put_text(buf, n, t + o);
}

void layout_format(const struct llm *m, const struct layout *l, int k, int numeric, char *buf,
		   size_t n)
{
	const struct layout_knob *K = &layout_knobs[k];
	double v = layout_get(m, l, k, 1);
	if (K->kind == LK_PART && !numeric)
		layout_partition_name(l, buf, n);
	else if (K->kind == LK_NAME && !numeric)
		put_text(buf, n, K->name((int)v));
	else if (K->kind == LK_REAL)
		snprintf(buf, n, "%g", v);
	else
		put_int(buf, n, (int)v);
}

void layout_format_shown(const struct llm *m, const struct layout *l, int k, char *buf, size_t n)
{
	const struct layout_knob *K = &layout_knobs[k];
	double v = layout_shown(m, l, k);
	if (K->kind == LK_PART) {
		layout_part_text(l, buf, n);
	} else if (K->kind == LK_NAME) {
		put_text(buf, n, K->name((int)v));
	} else if (K->kind == LK_REAL) {
		snprintf(buf, n, "%g", v);
	} else {
		put_int(buf, n, (int)v);
	}
}

int layout_parse(int k, const char *s, const char *what, double *v, struct layout *l,
		 struct prism_err *err)
{
	const struct layout_knob *K = &layout_knobs[k];
	char *end;
	int x;

	switch (K->kind) {
	case LK_PART:
		if (layout_partition_parse(s, l, err))
			return prism_err_set(err, PRISM_EARG, "%s %s", what, err->msg);
		*v = l->partition;
		return 0;
	case LK_NAME:
		if ((x = K->parse(s)) >= 0) {
			*v = x;
			return 0;
		}
		{
			/* "expected a, b or c": the names of the range; a set of
			 * names (recompute_modules, the range its bits' sets)
			 * lists its single names. */
			char names[160];
			size_t o = 0;
			int set = K->hi - K->lo > 16, hi = set ? ((int)K->hi + 1) / 2 : (int)K->hi;
			int lo = set && K->lo < 1 ? 1 : (int)K->lo;
			for (int i = lo; i <= hi && o < sizeof(names); i = set ? 2 * i : i + 1)
				o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s",
						      i == lo	? ""
						      : i == hi ? " or "
								: ", ",
						      K->name(i));
			return prism_err_set(err, PRISM_EARG, "%s '%s': expected %s%s", what, s,
					     set ? "names among " : "", names);
		}
	case LK_REAL:
		errno = 0;
		*v = strtod(s, &end);
		/* Written so that NaN fails too. */
		if (end == s || *end || errno || !(*v >= K->lo && *v <= K->hi))
			return prism_err_set(err, PRISM_EARG,
					     "%s '%s': expected a number in %g..%g", what, s, K->lo,
					     K->hi);
		return 0;
	default: {
		long w;
		errno = 0;
		w = strtol(s, &end, 10);
		if (end == s || *end || errno || w < K->lo || w > K->hi)
			return prism_err_set(err, PRISM_EARG,
					     "%s '%s': expected a whole number in %.0f..%.0f", what,
					     s, K->lo, K->hi);
		*v = (double)w;
		return 0;
	}
	}
}

layout_mask layout_diff(const struct llm *ma, const struct layout *la, const struct llm *mb,
			const struct layout *lb)
{
	layout_mask d = 0;
	for (int k = 0; k < LK_N; k++)
		if (layout_get(ma, la, k, 1) != layout_get(mb, lb, k, 1) ||
		    (layout_knobs[k].kind == LK_PART &&
		     (memcmp(la->part, lb->part, sizeof(la->part)) ||
		      la->part_chunks != lb->part_chunks || la->part_first != lb->part_first ||
		      la->part_last != lb->part_last || la->part_mtp != lb->part_mtp)))
			d |= LK_BIT(k);
	return d;
}

layout_mask layout_editable(void)
{
	layout_mask e = 0;
	for (int k = 0; k < LK_N; k++)
		if (layout_knobs[k].flags & LK_EDIT)
			e |= LK_BIT(k);
	return e;
}

/* The knobs of one home out of range: 0, or PRISM_EARG naming the first. */
static int ranges(const struct llm *m, const struct layout *l, int home, struct prism_err *err)
{
	for (int k = 0; k < LK_N; k++) {
		const struct layout_knob *K = &layout_knobs[k];
		double v = layout_get(m, l, k, 0);
		if (K->home != home || (v >= K->lo && v <= K->hi) ||
		    ((K->flags & LK_ONE) && v == 0))
			continue;
		if (K->kind == LK_REAL)
			return prism_err_set(err, PRISM_EARG, "%s: %s %g is not in %g..%g",
					     home == LK_L ? "layout" : "model", K->id, v, K->lo,
					     K->hi);
		return prism_err_set(err, PRISM_EARG, "%s: %s %d is not in %d..%d",
				     home == LK_L ? "layout" : "model", K->id, (int)v, (int)K->lo,
				     (int)K->hi);
	}
	return 0;
}

int layout_check_ranges(const struct llm *m, const struct layout *l, struct prism_err *err)
{
	int rc = ranges(m, l, LK_M, err);
	if (rc)
		return rc;
	/* What only the model's file sets. */
	if (m->kv_heads < 0 || m->kv_heads > LLM_MAX_HEADS)
		return prism_err_set(err, PRISM_EARG, "model: kv_heads %d is not in 0..%d",
				     m->kv_heads, LLM_MAX_HEADS);
	if (m->vocab < 1 || m->vocab > LLM_MAX_VOCAB)
		return prism_err_set(err, PRISM_EARG, "model: vocab %d is not in 1..%d", m->vocab,
				     LLM_MAX_VOCAB);
	if (m->mtp_layers < 0 || m->mtp_layers > LLM_MAX_MTP)
		return prism_err_set(err, PRISM_EARG, "model: mtp_layers %d is not in 0..%d",
				     m->mtp_layers, LLM_MAX_MTP);
	return ranges(m, l, LK_L, err);
}

/* 1 when some knob of key group g is not its default. */
static int group_changed(const struct llm *m, const struct layout *l, int g)
{
	for (int k = 0; k < LK_N; k++)
		if (layout_knobs[k].key_group == g && layout_get(m, l, k, 1) != layout_knobs[k].def)
			return 1;
	return 0;
}

/* s appended at buf + *o (n bytes in all) as snprintf would write it
 * there: cut to what fits, terminated, *o moved on by its whole length.
 * A sweep formats a key for each of its rows: snprintf's parsing of the
 * format was most of layout_key's time. */
static void key_put(char *buf, size_t n, size_t *o, const char *s)
{
	size_t len = strlen(s);
	if (*o < n) {
		size_t c = len < n - *o - 1 ? len : n - *o - 1;
		memcpy(buf + *o, s, c);
		buf[*o + c] = '\0';
	}
	*o += len;
}

void layout_key(const struct llm *m, const struct layout *l, char *buf, size_t n)
{
	/* Each group's group_changed once a key (-1: not asked yet), not
	 * once for each of its knobs: a walk of every knob each. */
	signed char changed[LK_N];
	size_t o = 0;
	memset(changed, -1, sizeof(changed));
	buf[0] = '\0';
	for (int k = 0; k < LK_N && o < n; k++) {
		const struct layout_knob *K = &layout_knobs[k];
		int g = K->key_group;
		char v[96];
		if ((!(K->flags & LK_SWEEP) && g == LK_KEY_ALONE) || g == LK_KEY_SWEPT)
			continue; /* not a sweep's, or keyed by the sweep: never here */
		if (g > LK_KEY_ALWAYS && g < LK_N && changed[g] < 0)
			changed[g] = (signed char)group_changed(m, l, g);
		if (g == LK_KEY_ALONE	 ? layout_get(m, l, k, 1) == K->def
		    : g != LK_KEY_ALWAYS ? !(g < LK_N ? changed[g] : group_changed(m, l, g))
					 : 0)
			continue;
		layout_format(m, l, k, 0, v, sizeof(v));
		if (o)
			key_put(buf, n, &o, ";");
		key_put(buf, n, &o, K->key ? K->key : K->id);
		key_put(buf, n, &o, "=");
		key_put(buf, n, &o, v);
	}
}

int layout_attn_dtype(const struct layout *l)
{
	if (l->fp8_attention)
		return HW_FP8;
	return l->dtype == HW_FP8 || l->dtype == HW_FP4 ? HW_BF16 : l->dtype;
}

/* "an NVLink domain" or "a node": what hw's tensor-parallel groups stay in. */
static const char *domain_name(const struct hw_profile *hw)
{
	return hw_domain(hw) > hw->gpus_per_node ? "an NVLink domain" : "a node";
}

/* A hybrid model (llm.h pattern): its layers are its pattern's (a layers
 * edit cannot say which kind the new ones are); Megatron-LM's MambaMixer
 * gives each tensor-parallel rank whole heads and whole groups
 * (mamba_mixer.py: nheads and ngroups divisible by tp); its context
 * parallelism (mamba_context_parallel.py) is not modelled. */
static int check_hybrid(const struct llm *m, const struct layout *l, struct prism_err *err)
{
	size_t n;
	if (!llm_hybrid(m))
		return 0;
	for (n = 0; n < sizeof(m->pattern) && m->pattern[n]; n++)
		;
	if (n >= sizeof(m->pattern) || (size_t)m->layers != n)
		return prism_err_set(err, PRISM_EARG,
				     "model: layers %d differs from the %zu layers of its hybrid "
				     "pattern (a hybrid model's layers are its pattern's)",
				     m->layers, n);
	for (size_t i = 0; i < n; i++)
		if (llm_char_kind((unsigned char)m->pattern[i]) < 0)
			return prism_err_set(
			    err, PRISM_EARG,
			    "model: hybrid pattern layer %zu: '%c' is not M, *, - or E", i,
			    m->pattern[i]);
	if (m->mtp_layers > 0 || m->first_dense > 0 || m->moe_period > 0 ||
	    (m->experts > 0) != (llm_kind_layers(m, LLM_KIND_MOE) > 0))
		return prism_err_set(
		    err, PRISM_EARG,
		    "model: a hybrid model's MoE layers are its pattern's E layers "
		    "(experts %d, E layers %d; no first_dense or moe_layer_freq), "
		    "and its multi-token prediction is not modelled",
		    m->experts, llm_kind_layers(m, LLM_KIND_MOE));
	if (!llm_kind_layers(m, LLM_KIND_MAMBA))
		return 0;
	if (m->ssm_heads < 1 || m->ssm_heads > LLM_MAX_SSM_HEADS || m->ssm_head_dim < 1 ||
	    m->ssm_head_dim > LLM_MAX_HEAD_DIM || m->ssm_state < 1 ||
	    m->ssm_state > LLM_MAX_SSM_STATE || m->ssm_groups < 1 || m->ssm_groups > m->ssm_heads ||
	    m->ssm_heads % m->ssm_groups || m->ssm_conv < 1 || m->ssm_conv > LLM_MAX_SSM_CONV ||
	    m->ssm_chunk < 1 || m->ssm_chunk > LLM_MAX_SSM_CHUNK)
		return prism_err_set(err, PRISM_EARG,
				     "model: Mamba heads %d of %d, state %d, groups %d, conv %d, "
				     "chunk %d: out of range",
				     m->ssm_heads, m->ssm_head_dim, m->ssm_state, m->ssm_groups,
				     m->ssm_conv, m->ssm_chunk);
	if (m->ssm_heads % l->tp || m->ssm_groups % l->tp)
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: tp %d must divide the Mamba heads (%d) and groups (%d): "
		    "each rank holds whole ones (Megatron-LM's MambaMixer)",
		    l->tp, m->ssm_heads, m->ssm_groups);
	/* MambaMixer under fp8: in_proj's output width a multiple of 16. */
	if ((l->dtype == HW_FP8 || l->dtype == HW_FP4) && (int64_t)llm_ssm_proj(m) % 16)
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: fp8: the Mamba in_proj's width 2 d_inner + 2 groups x "
		    "state + heads = %.0f is not a multiple of 16 (Megatron-LM's "
		    "MambaMixer asserts it)",
		    llm_ssm_proj(m));
	if (layout_cp(l) > 1)
		return prism_err_set(err, PRISM_EARG,
				     "layout: cp %d: context parallelism of Mamba layers is not "
				     "modelled",
				     layout_cp(l));
	return 0;
}

/* The 1F1B all-to-all overlap (moe_a2a_overlap): what Megatron-LM's
 * TransformerConfig.__post_init__ asserts for
 * overlap_moe_expert_parallel_comm (transformer_config.py) -- with pp > 1
 * the interleaved schedule (virtual stages), ep > 1, the alltoall or flex
 * dispatcher (hybridep is a flex backend), no full recomputation and no
 * moe in the recomputed modules, a bf16 or fp16 model (fp8 and fp4 GEMMs
 * keep bf16 weights), no shared-expert overlap, at most one MTP layer, no
 * CUDA graphs of the MoE layer (cuda_graph_modules without moe and mlp;
 * prism's graphs capture the whole layer) -- and what prism does not
 * model with it: other schedules, activation offloading, Mamba layers,
 * torch.compile. */
static int check_a2a_overlap(const struct llm *m, const struct layout *l, struct prism_err *err)
{
	const char *no = NULL;
	if (l->pp > 1 && l->schedule != LAYOUT_INTERLEAVED)
		return prism_err_set(err, PRISM_EARG,
				     "layout: moe_a2a_overlap with pp %d needs the interleaved "
				     "schedule (Megatron-LM asserts virtual pipeline stages), "
				     "not %s",
				     l->pp, layout_schedule_name(l->schedule));
	if (l->pp == 1 && l->schedule != LAYOUT_1F1B)
		return prism_err_set(err, PRISM_EARG,
				     "layout: moe_a2a_overlap with pp 1 runs Megatron-LM's "
				     "combined 1F1B: schedule %s is not it",
				     layout_schedule_name(l->schedule));
	if (layout_ep(l) < 2)
		return prism_err_set(err, PRISM_EARG,
				     "layout: moe_a2a_overlap needs expert parallelism (ep %d; "
				     "Megatron-LM asserts ep > 1)",
				     layout_ep(l));
	if (l->moe_dispatcher == LAYOUT_DISP_ALLGATHER)
		no = "the allgather dispatcher (Megatron-LM supports alltoall and flex)";
	else if (l->recompute == LAYOUT_RECOMPUTE_FULL)
		no = "full recomputation (Megatron-LM asserts it off)";
	else if (layout_rc(l, LAYOUT_RC_MOE))
		no = "moe in the recomputed modules (Megatron-LM asserts it out)";
	else if (l->dtype == HW_FP32 || l->dtype == HW_TF32)
		no = "an fp32 model (Megatron-LM needs bf16 or fp16)";
	else if (m->shared_experts > 0 && l->moe_shared_overlap)
		no = "moe_shared_overlap (Megatron-LM asserts one or the other)";
	else if (m->mtp_layers > 1)
		no = "more than one MTP layer (Megatron-LM asserts at most one)";
	else if (l->exec == LAYOUT_EXEC_GRAPHS)
		no = "CUDA graphs of the MoE layer (Megatron-LM refuses the moe and mlp "
		     "graph scopes)";
	else if (l->exec == LAYOUT_EXEC_COMPILED)
		no = "torch.compile (not modelled with it)";
	else if (l->offload_layers > 0)
		no = "activation offloading (not modelled with it)";
	else if (llm_hybrid(m))
		no = "a hybrid (Mamba) model (not modelled with it)";
	if (no)
		return prism_err_set(err, PRISM_EARG, "layout: moe_a2a_overlap: not with %s", no);
	return 0;
}

static int check_experts(const struct llm *m, const struct layout *l, const struct hw_profile *hw,
			 struct prism_err *err)
{
	int ep = layout_ep(l), etp = layout_etp(l), fe, rc;

	if (m->experts == 0) {
		if (ep > 1 || etp > 1)
			return prism_err_set(err, PRISM_EARG,
					     "layout: ep %d / etp %d need a mixture-of-experts "
					     "model (experts)",
					     ep, etp);
		if (l->moe_a2a_overlap)
			return prism_err_set(err, PRISM_EARG,
					     "layout: moe_a2a_overlap needs a mixture-of-experts "
					     "model (experts)");
		return 0;
	}
	if (m->experts < 0 || m->experts > LLM_MAX_EXPERTS || m->top_k < 1 ||
	    m->top_k > m->experts || m->shared_experts < 0 || m->shared_experts > LLM_MAX_SHARED ||
	    m->expert_ffn < 0 || m->expert_ffn > LLM_MAX_FFN || m->first_dense < 0 ||
	    m->first_dense >= m->layers || m->moe_period < 0 ||
	    m->moe_period > LLM_MAX_MOE_PERIOD || m->moe_mask < 0 ||
	    (m->moe_period > 0 && (m->moe_mask >> m->moe_period || llm_moe_layers(m) == 0)) ||
	    !(m->capacity_factor == 0 ||
	      (m->capacity_factor >= 1 && m->capacity_factor <= LLM_MAX_CAPACITY)))
		return prism_err_set(err, PRISM_EARG,
				     "model: experts %d, top_k %d, shared %d, expert_ffn %d, "
				     "first_dense %d, capacity %g: out of range",
				     m->experts, m->top_k, m->shared_experts, m->expert_ffn,
				     m->first_dense, m->capacity_factor);
	fe = m->expert_ffn > 0 ? m->expert_ffn : m->ffn;
	if (m->experts % ep)
		return prism_err_set(err, PRISM_EARG,
				     "layout: experts %d must be divisible by ep %d", m->experts,
				     ep);
	if (fe % etp)
		return prism_err_set(err, PRISM_EARG,
				     "layout: expert_ffn %d must be divisible by etp %d", fe, etp);
	if (((int64_t)l->tp * layout_dpc(l)) % ((int64_t)ep * etp)) {
		char cpx[24] = "";
		if (layout_cp(l) > 1)
			snprintf(cpx, sizeof(cpx), " x cp %d", layout_cp(l));
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: ep %d x etp %d must divide tp %d x dp %d%s (the experts' "
		    "ranks are a stage's tensor- and data-parallel ranks, "
		    "Megatron-LM's MoE parallel folding)",
		    ep, etp, l->tp, l->dp, cpx);
	}
	if (etp > hw_domain(hw))
		return prism_err_set(err, PRISM_EARG, "layout: etp %d is beyond %s of %d GPUs", etp,
				     domain_name(hw), hw_domain(hw));
	if (l->tp > 1 && !l->sp)
		return prism_err_set(err, PRISM_EARG,
				     "layout: mixture-of-experts with tp %d needs sequence "
				     "parallelism (as Megatron-LM requires)",
				     l->tp);
	if (m->shared_experts > 0 && l->moe_shared_overlap &&
	    l->moe_dispatcher == LAYOUT_DISP_ALLGATHER)
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: moe_shared_overlap needs the alltoall, flex or hybridep "
		    "dispatcher (as Megatron-LM's --moe-shared-expert-overlap)");
	if (l->moe_a2a_overlap && (rc = check_a2a_overlap(m, l, err)))
		return rc;
	if (m->shared_experts > 0 && ((int64_t)m->shared_experts * fe) % l->tp)
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: shared experts' width %d x %d must be divisible by tp "
		    "%d",
		    m->shared_experts, fe, l->tp);
	if (l->zero >= 3 || l->shard > 0)
		return prism_err_set(err, PRISM_EARG,
				     "layout: ZeRO-3 and hybrid sharding are not modelled with "
				     "experts (ZeRO-1/2 are)");
	return 0;
}

/* Megatron-LM's num_layers_in_first/last_pipeline_stage (transformer_config.py
 * __post_init__, get_num_layers_to_build): each given count at least 1
 * and divisible by vp, the layers left over divisible by the stages left
 * over and each of those stages' by vp; middle stages and middle layers
 * both or neither.  Their layers into part[0..p) if part. */
static int first_last(const struct llm *m, const struct layout *l, uint16_t *part,
		      struct prism_err *err)
{
	int p = l->pp, v = layout_stage_chunks(l), F = l->part_first, K = l->part_last;
	long rest = m->layers - F - K;
	int left = p - (F > 0) - (K > 0), each;
	char name[48];

	layout_partition_name(l, name, sizeof(name));

	if ((F && F % v) || (K && K % v))
		return prism_err_set(err, PRISM_EARG,
				     "layout: partition %s: the layers of the %s stage must be "
				     "divisible by the virtual stages (vp %d)",
				     name, F && F % v ? "first" : "last", v);
	if (rest < 0 || (rest > 0) != (left > 0))
		return prism_err_set(err, PRISM_EARG,
				     "layout: partition %s: %ld layers left for %d middle stages "
				     "(the model has %d layers, pp %d)",
				     name, rest, left, m->layers, p);
	if (left && rest % left)
		return prism_err_set(err, PRISM_EARG,
				     "layout: partition %s: the %ld layers left are not divisible "
				     "by the %d stages left",
				     name, rest, left);
	each = left ? (int)(rest / left) : 0;
	if (left && each % v)
		return prism_err_set(err, PRISM_EARG,
				     "layout: partition %s: %d layers on each middle stage, not "
				     "divisible by vp %d",
				     name, each, v);
	if (each > 65535)
		return prism_err_set(err, PRISM_EARG,
				     "layout: partition: %d layers on a stage (at most 65535)",
				     each);
	for (int s = 0; part && s < p; s++)
		part[s] = (uint16_t)(s == 0 && F ? F : s == p - 1 && K ? K : each);
	return 0;
}

int layout_check_partition(const struct llm *m, const struct layout *l, struct prism_err *err)
{
	int p = l->pp, v = layout_stage_chunks(l), L = m->layers, pt = l->partition;

	if (p < 2)
		return 0;
	if (pt == LAYOUT_PART_EMBED_LOSS || pt == LAYOUT_PART_EMBED || pt == LAYOUT_PART_LOSS) {
		/* get_num_layers_to_build: the slots divide by pp, each stage's
		 * by vp; the embedding's and the loss's slots come out of the
		 * first and the last model chunk. */
		int e = pt != LAYOUT_PART_LOSS, lo = pt != LAYOUT_PART_EMBED, n = L + e + lo;
		if (n % p)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition %s needs layers %d + %d divisible by "
			    "pp %d",
			    pt == LAYOUT_PART_EMBED_LOSS ? "embed-loss"
			    : e				 ? "embed"
							 : "loss",
			    L, e + lo, p);
		if ((n / p) % v)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition: %d layer slots a stage, not divisible "
			    "by vp %d",
			    n / p, v);
		if (v > 1 && p * v > LAYOUT_MAX_STAGES)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition places %d model chunks unevenly, prism "
			    "at most %d",
			    p * v, LAYOUT_MAX_STAGES);
		if (n / p > 65535)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition: %d layers on a stage (at most 65535)", n / p);
	} else if (pt == LAYOUT_PART_FIRST_LAST) {
		if (!l->part_first && !l->part_last)
			return prism_err_set(err, PRISM_EARG,
					     "layout: partition first/last gives neither count");
		return first_last(m, l, NULL, err);
	} else if (pt == LAYOUT_PART_BALANCED) {
		if (L % v || L / v < p)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition balanced needs layers %d divisible by "
			    "vp %d and at least one chunk a stage (pp %d)",
			    L, v, p);
	} else if (l->part_chunks) {
		/* A layout string (pipeline_parallel_layer_layout.py): its chunks
		 * are pp x vp, its layers the model's. */
		long sum = 0;
		if (l->part_chunks % p)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition: the layout's %d model chunks are not "
			    "divisible by pp %d",
			    l->part_chunks, p);
		if (l->part_chunks != p * v)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition: the layout's %d model chunks make %d "
			    "virtual stages a GPU, vp is %d (give --vp %d and the "
			    "interleaved schedule)",
			    l->part_chunks, l->part_chunks / p, v, l->part_chunks / p);
		for (int k = 0; k < l->part_chunks; k++)
			sum += l->part[k];
		if (l->part_mtp != m->mtp_layers)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition: the layout places %d MTP layers (m), "
			    "the model has %d (mtp_layers)",
			    l->part_mtp, m->mtp_layers);
		if (sum != L)
			return prism_err_set(err, PRISM_EARG,
					     "layout: partition: the layout places %ld transformer "
					     "layers, the model has %d",
					     sum, L);
	} else if (l->part[0] > 0) {
		long sum = 0;
		for (int s = 0; s < p; s++) {
			if (l->part[s] < 1 || l->part[s] % v)
				return prism_err_set(
				    err, PRISM_EARG,
				    "layout: partition: stage %d holds %d layers, "
				    "not a positive multiple of the %d virtual stages",
				    s, l->part[s], v);
			sum += l->part[s];
		}
		if (p < LAYOUT_MAX_STAGES && l->part[p])
			return prism_err_set(err, PRISM_EARG,
					     "layout: partition lists more stages than pp %d", p);
		if (sum != L)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition places %ld layers, the model has %d", sum, L);
	} else if (L % (p * v)) {
		return prism_err_set(err, PRISM_EARG,
				     "layout: layers %d not divisible by pp %d x virtual stages %d",
				     L, p, v);
	}
	return 0;
}

int layout_partition_place(const struct llm *m, const struct layout *l, struct layout *out,
			   struct prism_err *err)
{
	int p = l->pp, v = layout_stage_chunks(l), L = m->layers, pt = l->partition, rc;

	if ((rc = layout_check_partition(m, l, err)))
		return rc;
	*out = *l;
	if (p < 2 || (pt != LAYOUT_PART_EMBED_LOSS && pt != LAYOUT_PART_EMBED &&
		      pt != LAYOUT_PART_LOSS && pt != LAYOUT_PART_FIRST_LAST))
		return 0;
	memset(out->part, 0, sizeof(out->part));
	out->part_chunks = 0;
	if (pt == LAYOUT_PART_FIRST_LAST)
		return first_last(m, l, out->part, err);
	{
		int e = pt != LAYOUT_PART_LOSS, lo = pt != LAYOUT_PART_EMBED;
		int n = (L + e + lo) / (p * v), last = p * v - 1;
		if (v == 1) {
			for (int s = 0; s < p; s++)
				out->part[s] =
				    (uint16_t)(n - (s == 0 ? e : 0) - (s == p - 1 ? lo : 0));
			if (out->part[0] == 0) /* an embedding-only first stage */
				out->part_chunks = (uint16_t)p;
			return 0;
		}
		out->part_chunks = (uint16_t)(p * v);
		for (int k = 0; k <= last; k++)
			out->part[k] = (uint16_t)(n - (k == 0 ? e : 0) - (k == last ? lo : 0));
	}
	return 0;
}

/* Multi-head latent attention's shape, and what Megatron-LM runs with it. */
static int check_mla(const struct llm *m, const struct layout *l, struct prism_err *err)
{
	if (m->v_head_dim < 1 || m->qk_nope_head_dim + m->qk_rope_head_dim < 1)
		return prism_err_set(
		    err, PRISM_EARG,
		    "model: multi-head latent attention needs v_head_dim and "
		    "qk_nope_head_dim + qk_rope_head_dim of at least 1, not %d and %d",
		    m->v_head_dim, m->qk_nope_head_dim + m->qk_rope_head_dim);
	if (m->head_dim)
		return prism_err_set(err, PRISM_EARG,
				     "model: head_dim %d does not apply to multi-head latent "
				     "attention (its heads are qk_nope_head_dim + qk_rope_head_dim "
				     "and v_head_dim wide)",
				     m->head_dim);
	/* Building MLA's linears (q_down_proj, kv_up_proj, ...: buffer names
	 * outside Transformer Engine's userbuffers set) turns the shared
	 * config's tp_comm_overlap off
	 * (megatron/core/extensions/transformer_engine.py, TELinear). */
	if (l->tp_overlap && l->tp > 1)
		return prism_err_set(err, PRISM_EARG,
				     "layout: tensor-parallel overlap with multi-head latent "
				     "attention: Megatron-LM turns --tp-comm-overlap off when it "
				     "builds MLA's linears (Transformer Engine's userbuffers know "
				     "only qkv, proj, fc1 and fc2)");
	return 0;
}

/* LoRA's rules: Megatron-Bridge's ColumnParallelLinear A splits the rank
 * over tp (megatron.core's divide() asserts it); what is not modelled is
 * refused: adapters on MoE experts, MLA's projections, MTP depths and
 * hybrid Mamba models' layers, and
 * frozen weights under ZeRO-3 / FSDP. */
static int check_lora(const struct llm *m, const struct layout *l, struct prism_err *err)
{
	if ((layout_lora(l, LAYOUT_LORA_QKV) || layout_lora(l, LAYOUT_LORA_FC1)) &&
	    l->lora_rank % l->tp)
		return prism_err_set(err, PRISM_EARG,
				     "layout: lora_rank %d must be divisible by tp %d (a "
				     "column-parallel target's A matrix splits the rank)",
				     l->lora_rank, l->tp);
	if (llm_moe_layers(m) > 0 || llm_mla(m) || m->mtp_layers > 0 || llm_hybrid(m))
		return prism_err_set(err, PRISM_EARG,
				     "layout: LoRA on %s is not modelled (dense layers with "
				     "linear_qkv, linear_proj, linear_fc1, linear_fc2 only)",
				     llm_moe_layers(m) > 0 ? "mixture-of-experts layers"
				     : llm_mla(m)	   ? "multi-head latent attention"
				     : llm_hybrid(m)	   ? "a hybrid Mamba model"
							   : "multi-token prediction");
	if (l->zero >= 3)
		return prism_err_set(err, PRISM_EARG,
				     "layout: LoRA with ZeRO-3 / FSDP FULL_SHARD is not modelled "
				     "(frozen weights sharded and gathered)");
	return 0;
}

/* The optimizer's precision where its frameworks run it: with bf16
 * weights only; bf16 moments with fp32 master weights in Megatron-LM's
 * distributed optimizer (optimizer_config.py: "--use-precision-aware-
 * optimizer only supported with distributed optimizer", and Megatron-FSDP
 * keeps its own main weights); pure bf16 where no framework keeps an fp32
 * master behind the sharding: not Megatron-LM's (--main-params-dtype is
 * fp32 or fp16) nor DeepSpeed's (bf16 training keeps fp32 master weights
 * in its ZeRO optimizer). */
static int check_optimizer(const struct layout *l, struct prism_err *err)
{
	if (l->optimizer_dtype == LAYOUT_OPT_FP32)
		return 0;
	if (l->dtype == HW_FP32 || l->dtype == HW_TF32 || l->dtype == HW_FP16)
		return prism_err_set(err, PRISM_EARG,
				     "layout: optimizer_dtype %s needs bf16 weights (dtype bf16, "
				     "fp8 or fp4), not %s",
				     layout_opt_dtype_name(l->optimizer_dtype),
				     hw_dtype_name(l->dtype));
	if (l->optimizer_dtype == LAYOUT_OPT_BF16_STATES &&
	    (l->zero != 1 || l->dp_impl != LAYOUT_DP_MEGATRON))
		return prism_err_set(err, PRISM_EARG,
				     "layout: optimizer_dtype bf16-states is Megatron-LM's "
				     "precision-aware optimizer, which runs in its distributed "
				     "optimizer only: zero 1 with dp_impl megatron");
	if (l->optimizer_dtype == LAYOUT_OPT_BF16 && l->zero >= 1 &&
	    (l->dp_impl == LAYOUT_DP_MEGATRON || l->dp_impl == LAYOUT_DP_DEEPSPEED))
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: optimizer_dtype bf16 (no fp32 master weights) with "
		    "zero %d: %s keeps fp32 master weights with bf16 training "
		    "(use dp_impl fsdp or fsdp2, or zero 0)",
		    l->zero,
		    l->dp_impl == LAYOUT_DP_MEGATRON
			? "Megatron-LM's distributed optimizer (--main-params-dtype "
			  "fp32 or fp16)"
			: "DeepSpeed's ZeRO optimizer");
	return 0;
}

/* FP8 primary weights where Megatron-LM runs them and prism models them
 * (docs/MODEL.md, "FP8 primary weights").  Megatron-LM's arguments.py
 * validate_args: "--fp8-param-gather only supported with distributed
 * optimizer, torch fsdp2, megatron fsdp"; under torch FSDP2 it turns the
 * flag off with Transformer Engine 2.0 and later ("will fallback to bf16
 * all_gather"), so dp_impl fsdp2 is refused rather than silently bf16, and
 * DeepSpeed and FSDP1 have no such flag.  ZeRO-3 (Megatron-FSDP's
 * optim_grads_params, gathering fp8 a layer at a time) is not modelled.
 * mxfp8's primary weights are all-gathered in the gradient buffer's
 * dtype and quantised after the gather (distributed_data_parallel_config.py
 * reuse_grad_buf_for_mxfp8_param_ag; param_and_grad_buffer.py
 * _post_param_sync copy_tensors_to_quantized_params): not modelled.  The
 * fp32 master (optimizer_dtype fp32) is what quantize_param_shard casts
 * from (distrib_optimizer.py _copy_main_params_to_model_params); the
 * precision-aware optimizer's and pure bf16's paths are not modelled;
 * LoRA's frozen base has no master to cast from. */
static int check_fp8_param_gather(const struct layout *l, struct prism_err *err)
{
	if (!l->fp8_param_gather)
		return 0;
	if (l->dtype != HW_FP8)
		return prism_err_set(err, PRISM_EARG,
				     "layout: fp8_param_gather needs dtype fp8 (Megatron-LM's "
				     "--fp8-param-gather keeps the linear layers' weights in fp8), "
				     "not %s",
				     hw_dtype_name(l->dtype));
	if (l->zero < 1)
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: fp8_param_gather needs a sharded optimizer (zero 1 or "
		    "2): Megatron-LM's --fp8-param-gather only runs with its "
		    "distributed optimizer or FSDP");
	if (l->zero > 2 || l->dp_impl != LAYOUT_DP_MEGATRON)
		return prism_err_set(err, PRISM_EARG,
				     "layout: fp8_param_gather is modelled for Megatron-LM's "
				     "distributed optimizer (zero 1 or 2, dp_impl megatron), not "
				     "zero %d with dp_impl %s",
				     l->zero, layout_dp_impl_name(l->dp_impl));
	if (l->fp8_recipe == LAYOUT_FP8_MXFP8)
		return prism_err_set(err, PRISM_EARG,
				     "layout: fp8_param_gather with fp8_recipe mxfp8 is not "
				     "modelled (Megatron-LM gathers mxfp8 primary weights through "
				     "the gradient buffer and quantises them after the gather)");
	if (l->optimizer_dtype != LAYOUT_OPT_FP32)
		return prism_err_set(err, PRISM_EARG,
				     "layout: fp8_param_gather is modelled with optimizer_dtype "
				     "fp32 (the fp32 master shard cast to fp8), not %s",
				     layout_opt_dtype_name(l->optimizer_dtype));
	if (layout_lora(l, 0))
		return prism_err_set(err, PRISM_EARG,
				     "layout: fp8_param_gather with LoRA: the frozen base has no "
				     "master weights to cast from");
	if (l->exec == LAYOUT_EXEC_COMPILED)
		return prism_err_set(err, PRISM_EARG,
				     "layout: fp8_param_gather is Transformer Engine's fp8 "
				     "weights, not torchao's under exec compiled");
	return 0;
}

/* The fp32 residual stream where Megatron-LM runs it: arguments.py
 * validate_args asserts "residual connection in fp32 only supported when
 * using fp16 or bf16" (an fp32 run's stream is fp32 already; fp8 and fp4
 * run under --bf16); plain PyTorch modules (framework torch) have no such
 * switch. */
static int check_fp32_residual(const struct layout *l, struct prism_err *err)
{
	if (!l->fp32_residual)
		return 0;
	if (l->dtype == HW_FP32 || l->dtype == HW_TF32)
		return prism_err_set(err, PRISM_EARG,
				     "layout: fp32_residual with dtype %s: Megatron-LM keeps the "
				     "residual in fp32 only around bf16 or fp16 modules (an fp32 "
				     "run's is fp32 already)",
				     hw_dtype_name(l->dtype));
	if (l->framework != LAYOUT_FW_MEGATRON)
		return prism_err_set(err, PRISM_EARG,
				     "layout: fp32_residual is Megatron-LM's "
				     "--fp32-residual-connection (framework megatron), not %s",
				     layout_framework_name(l->framework));
	return 0;
}

/* Activation offloading where Megatron-LM takes it (transformer_config.py
 * __post_init__: cpu_offloading_num_layers in 0..num_layers - 1, "no
 * support for Pipeline parallelism with CPU offloading", "CPU offloading
 * does not work when activation recomputation is enabled", "CUDA graphs not
 * supported with CPU offloading"), on a profile that states its host
 * link. */
static int check_offload(const struct llm *m, const struct layout *l, const struct hw_profile *hw,
			 struct prism_err *err)
{
	if (l->pp > 1)
		return prism_err_set(err, PRISM_EARG,
				     "layout: offload_layers %d needs pp 1, not %d (Megatron-LM: "
				     "no pipeline parallelism with CPU offloading)",
				     l->offload_layers, l->pp);
	if (l->offload_layers >= m->layers)
		return prism_err_set(err, PRISM_EARG,
				     "layout: offload_layers %d must be below the %d layers (the "
				     "last layer is never offloaded)",
				     l->offload_layers, m->layers);
	if (l->recompute != LAYOUT_RECOMPUTE_NONE)
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: offload_layers %d with recompute %s (Megatron-LM: CPU "
		    "offloading does not work with activation recomputation)",
		    l->offload_layers, layout_recompute_name(l->recompute));
	if (l->exec == LAYOUT_EXEC_GRAPHS)
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: offload_layers %d with exec graphs (Megatron-LM: CUDA "
		    "graphs not supported with CPU offloading)",
		    l->offload_layers);
	if (!(hw->host_d2h_Bps > 0 && hw->host_h2d_Bps > 0))
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: offload_layers %d: the %s profile states no host link "
		    "(gpu.host_link, host_d2h_GBps, host_h2d_GBps)",
		    l->offload_layers, hw->id);
	return 0;
}

int layout_check(const struct llm *m, const struct layout *l, const struct hw_profile *hw,
		 struct prism_err *err)
{
	int rc;

	/* Ranges first: the rules below divide by these and multiply them. */
	if ((rc = layout_check_ranges(m, l, err)))
		return rc;
	if ((int64_t)l->tp * l->pp * l->dp > LAYOUT_MAX_GPUS)
		return prism_err_set(err, PRISM_EARG,
				     "layout: tp %d x pp %d x dp %d is beyond %d GPUs", l->tp,
				     l->pp, l->dp, LAYOUT_MAX_GPUS);
	if ((int64_t)l->tp * l->pp * l->dp * layout_cp(l) > LAYOUT_MAX_GPUS)
		return prism_err_set(err, PRISM_EARG,
				     "layout: tp %d x pp %d x dp %d x cp %d is beyond %d GPUs",
				     l->tp, l->pp, l->dp, layout_cp(l), LAYOUT_MAX_GPUS);
	if (l->shard > 0 && (l->shard > layout_dpc(l) || layout_dpc(l) % l->shard))
		return prism_err_set(err, PRISM_EARG,
				     "layout: the sharding group (%d) must divide dp %d", l->shard,
				     layout_dpc(l));
	/* What each implementation runs: FSDP has NO_SHARD, SHARD_GRAD_OP and
	 * FULL_SHARD (no ZeRO-1), fully_shard reshard_after_forward True or
	 * False (ZeRO-3, ZeRO-2); DeepSpeed's PipelineEngine asserts ZeRO < 2
	 * ("ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism",
	 * deepspeed/runtime/pipe/engine.py). */
	if (l->zero == 1 && (l->dp_impl == LAYOUT_DP_FSDP || l->dp_impl == LAYOUT_DP_FSDP2))
		return prism_err_set(err, PRISM_EARG,
				     "layout: dp_impl %s has no ZeRO-1 (FSDP shards the gradients "
				     "with the optimizer state: zero 2 or 3)",
				     layout_dp_impl_name(l->dp_impl));
	if (l->zero >= 2 && l->pp > 1 && l->dp_impl == LAYOUT_DP_DEEPSPEED)
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: dp_impl deepspeed runs ZeRO-%d without pipeline "
		    "parallelism only (pp %d; its PipelineEngine asserts ZeRO < 2)",
		    l->zero, l->pp);
	if (layout_cp(l) > 1 && m->seq % (2 * layout_cp(l)))
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: seq %d must be divisible by 2 x cp %d (the causal load "
		    "balance's chunks)",
		    m->seq, layout_cp(l));
	if (layout_cp(l) > 1 && !l->flash)
		return prism_err_set(err, PRISM_EARG,
				     "layout: context parallelism needs flash attention (ring "
				     "attention's blocks)");
	if (layout_cp(l) > 1 && m->window > 0)
		return prism_err_set(err, PRISM_EARG,
				     "layout: context parallelism with sliding-window attention is "
				     "not modelled (the ring's steps would skip blocks outside the "
				     "band)");
	if (l->tp_overlap && l->tp > 1 && !l->sp)
		return prism_err_set(err, PRISM_EARG,
				     "layout: tensor-parallel overlap needs sequence parallelism "
				     "(Megatron-LM's --tp-comm-overlap)");
	if (l->pp_scatter_gather && l->tp > 1 && l->pp > 1 && l->sp)
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: pp_scatter_gather is for tp without sequence parallelism "
		    "(with sp each tensor-parallel rank already sends its 1/tp of a "
		    "pipeline transfer)");
	if (llm_mla(m) && (rc = check_mla(m, l, err)))
		return rc;
	if (!m->head_dim && !llm_mla(m) && m->hidden % m->heads)
		return prism_err_set(err, PRISM_EARG,
				     "model: hidden %d must be divisible by heads %d", m->hidden,
				     m->heads);
	if (m->heads % llm_kv_heads(m))
		return prism_err_set(err, PRISM_EARG,
				     "model: heads %d must be divisible by kv_heads %d", m->heads,
				     llm_kv_heads(m));
	/* A tensor-parallel group stays in one NVLink domain and its groups
	 * tile it (hw_group_fits_domain). */
	if (l->tp > hw_domain(hw))
		return prism_err_set(err, PRISM_EARG, "layout: tp %d is beyond %s of %d GPUs",
				     l->tp, domain_name(hw), hw_domain(hw));
	if (!hw_group_fits_domain(hw, l->tp))
		return prism_err_set(err, PRISM_EARG,
				     "layout: tp %d groups do not tile %s of %d GPUs", l->tp,
				     domain_name(hw), hw_domain(hw));
	if (llm_kv_heads(m) % l->tp && l->tp % llm_kv_heads(m))
		return prism_err_set(
		    err, PRISM_EARG,
		    "layout: kv_heads %d and tp %d: one must divide the other (fewer "
		    "key-value heads than ranks are replicated)",
		    llm_kv_heads(m), l->tp);
	if (m->heads % l->tp || m->ffn % l->tp)
		return prism_err_set(err, PRISM_EARG,
				     "layout: heads %d and ffn %d must be divisible by tp %d",
				     m->heads, m->ffn, l->tp);
	if (layout_cp(l) > 1 && layout_cp_a2a(l, hw_domain(hw)) > 1) {
		/* Transformer Engine's AttnFuncWithCPAndQKVOA2A asserts both. */
		int a = layout_cp_a2a(l, hw_domain(hw)), kv = llm_kv_heads(m);
		int qr = m->heads / l->tp, kvr = kv < l->tp ? 1 : kv / l->tp;
		if (qr % a || kvr % a)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: cp_comm %s scatters the heads over %d cp ranks: "
			    "the heads (%d) and key-value heads (%d) of a TP rank must "
			    "be divisible by %d",
			    layout_cp_comm_name(l->cp_comm), a, qr, kvr, a);
	}
	if (l->lora_rank > 0 && (rc = check_lora(m, l, err)))
		return rc;
	if ((rc = check_experts(m, l, hw, err)) || (rc = check_hybrid(m, l, err)) ||
	    (rc = layout_check_partition(m, l, err)))
		return rc;
	if (l->schedule == LAYOUT_INTERLEAVED) {
		if (l->vp < 2 || l->pp < 2)
			return prism_err_set(err, PRISM_EARG,
					     "layout: the interleaved schedule needs pp >= 2 and "
					     "virtual stages >= 2");
		if (l->microbatches % l->pp)
			return prism_err_set(err, PRISM_EARG,
					     "layout: interleaved 1F1B needs microbatches (%d) "
					     "divisible by pp (%d)",
					     l->microbatches, l->pp);
	} else if (l->vp != 1) {
		if (layout_v(l->schedule))
			return prism_err_set(err, PRISM_EARG,
					     "layout: %s places its own two chunks a stage in a "
					     "V: vp %d must stay 1",
					     layout_schedule_name(l->schedule), l->vp);
		return prism_err_set(err, PRISM_EARG,
				     "layout: virtual stages %d need the interleaved schedule",
				     l->vp);
	}
	if (l->offload_layers > 0 && (rc = check_offload(m, l, hw, err)))
		return rc;
	if ((rc = check_optimizer(l, err)))
		return rc;
	if ((rc = check_fp8_param_gather(l, err)))
		return rc;
	if ((rc = check_fp32_residual(l, err)))
		return rc;
	if (layout_zb(l->schedule) && l->pp < 2)
		return prism_err_set(err, PRISM_EARG,
				     "layout: schedule %s needs pp >= 2 (one stage has no bubble "
				     "for its deferred weight gradients to fill)",
				     layout_schedule_name(l->schedule));
	/* PyTorch's ScheduleDualPipeV refuses fewer microbatches than
	 * stages (2 pp): its steady phase runs m - 2 pp + s + 1 pairs. */
	if (l->schedule == LAYOUT_DUALPIPEV && l->microbatches < 2 * l->pp)
		return prism_err_set(err, PRISM_EARG,
				     "layout: dualpipev needs microbatches (%d) >= 2 x pp (%d), "
				     "its stages",
				     l->microbatches, 2 * l->pp);
	if (hw->peak_flops[l->dtype] <= 0)
		return prism_err_set(err, PRISM_EARG, "hardware: %s has no %s peak", hw->gpu,
				     hw_dtype_name(l->dtype));
	if (hw->peak_flops[layout_attn_dtype(l)] <= 0)
		return prism_err_set(err, PRISM_EARG, "hardware: %s has no %s peak for attention",
				     hw->gpu, hw_dtype_name(layout_attn_dtype(l)));
	/* MXFP8 needs block-scaled tensor cores (Blackwell's, which run fp4
	 * too); Transformer Engine refuses it on Hopper. */
	if (l->dtype == HW_FP8 && l->fp8_recipe == LAYOUT_FP8_MXFP8 && hw->peak_flops[HW_FP4] <= 0)
		return prism_err_set(err, PRISM_EARG,
				     "hardware: %s has no block-scaled tensor cores for "
				     "--fp8-recipe mxfp8 (Blackwell; its profile has no fp4 peak)",
				     hw->gpu);
	/* A power cap: a board's limit lowered, never raised (the rating is
	 * the most its firmware allows), and not below what the linear rule
	 * can say (HW_MIN_POWER_FRAC). */
	if (l->power_w > 0 && !(hw->rated_w > 0))
		return prism_err_set(err, PRISM_EARG,
				     "layout: power_w %g W: the %s profile states no rated power "
				     "(gpu.rated_w) to cap",
				     l->power_w, hw->id);
	if (l->power_w > hw->rated_w)
		return prism_err_set(err, PRISM_EARG,
				     "layout: power_w %g W is above %s's rated %g W (a cap lowers "
				     "the board's limit; 0: the rating)",
				     l->power_w, hw->gpu, hw->rated_w);
	if (l->power_w > 0 && l->power_w < HW_MIN_POWER_FRAC * hw->rated_w)
		return prism_err_set(err, PRISM_EARG,
				     "layout: power_w %g W is below a quarter of %s's rated %g W "
				     "(the clock is not modelled that far down)",
				     l->power_w, hw->gpu, hw->rated_w);
	return 0;
}
