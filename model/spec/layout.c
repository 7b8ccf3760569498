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
static const char *const schedule_names[] = {"gpipe", "1f1b", "interleaved"};
static const char *const cp_comm_names[] = {"p2p", "all_gather", "a2a", "a2a+p2p"};
static const char *const dp_impl_names[] = {"megatron", "deepspeed", "fsdp", "fsdp2"};
static const char *const dispatcher_names[] = {"alltoall", "allgather", "flex", "hybridep"};

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

const char *layout_schedule_name(int s)
{
	return name_of(schedule_names, LAYOUT_INTERLEAVED + 1, s);
}

int layout_schedule_parse(const char *s)
{
	return index_of(schedule_names, LAYOUT_INTERLEAVED + 1, s);
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

void layout_dp_traits(const struct layout *l, double layer_params, double wb, double gb,
		      struct layout_dp_traits *t)
{
	/* A sharded fp32 master cast to the weights' dtype on its way in. */
	double cast = wb < 4 ? 4 + wb : 0;
	memset(t, 0, sizeof(*t));
	t->prefetch = l->prefetch;
	t->rs_bytes = gb;
	t->rs_buf = gb;
	switch (l->dp_impl) {
	case LAYOUT_DP_DEEPSPEED: {
		/* PartitionedParameterCoordinator.fetch_sub_module prefetches the
		 * next modules of its trace while fewer than
		 * stage3_prefetch_bucket_size parameters are in flight (at least
		 * the next one); gradients are copied into the ipg bucket
		 * (__add_grad_to_ipg_bucket), reduce-scattered in the
		 * communication dtype (the weights', engine.communication_data_type)
		 * and the rank's partition copied into its fp32 gradient
		 * (partition_grads). */
		int cap = layer_params > 0 ? (int)(DS_PREFETCH_BUCKET / layer_params) : t->prefetch;
		if (cap < 1)
			cap = 1;
		if (t->prefetch > cap)
			t->prefetch = cap;
		t->rs_bytes = wb;
		t->rs_in = 2 * wb;
		t->rs_out = wb + 4;
		t->rs_buf = 0;
		t->bucket_params = DS_REDUCE_BUCKET;
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
		t->ag_in = cast;
		t->rs_out = wb + 4;
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
		break;
	}
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
	const char *q = s;
	int n = 0;

	memset(l->part, 0, sizeof(l->part));
	l->partition = LAYOUT_PART_GIVEN;
	if (strcmp(s, "even") == 0)
		return 0;
	if (strcmp(s, "balanced") == 0) {
		l->partition = LAYOUT_PART_BALANCED;
		return 0;
	}
	if (strcmp(s, "embed-loss") == 0) {
		l->partition = LAYOUT_PART_EMBED_LOSS;
		return 0;
	}
	while (*q) {
		char *end;
		long v;
		errno = 0;
		v = strtol(q, &end, 10);
		if (end == q || errno || v < 1 || v > 65535 || (*end && *end != ',') ||
		    n >= LAYOUT_MAX_STAGES)
			return prism_err_set(
			    err, PRISM_EARG,
			    "partition '%s': expected even, balanced, embed-loss or "
			    "layers per stage (N0,N1,...: each 1..65535, at most %d)",
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

void layout_partition_name(const struct layout *l, char *buf, size_t n)
{
	size_t k = 0;
	if (l->partition == LAYOUT_PART_BALANCED || l->partition == LAYOUT_PART_EMBED_LOSS) {
		snprintf(buf, n, "%s",
			 l->partition == LAYOUT_PART_BALANCED ? "balanced" : "embed-loss");
		return;
	}
	snprintf(buf, n, "even");
	if (l->part[0] == 0)
		return;
	buf[0] = '\0';
	for (int s = 0; s < LAYOUT_MAX_STAGES && l->part[s] && k + 8 < n; s++)
		k += (size_t)snprintf(buf + k, n - k, "%s%d", s ? "," : "", l->part[s]);
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

int layout_shard_group(const struct layout *l)
{
	return l->shard > 0 && l->shard < layout_dpc(l) ? l->shard : layout_dpc(l);
}

int layout_stage_layers(const struct llm *m, const struct layout *l, int s)
{
	if (l->pp > 1 && l->part[0] > 0)
		return l->part[s];
	return m->layers / (l->pp > 0 ? l->pp : 1);
}

int layout_chunk_layers(const struct llm *m, const struct layout *l, int s, int c)
{
	int v = l->vp > 0 ? l->vp : 1;
	(void)c;
	return layout_stage_layers(m, l, s) / v;
}

int layout_chunk_first(const struct llm *m, const struct layout *l, int s, int c)
{
	int first = 0;
	/* Chunks in model order: chunk c of stage s is model chunk c pp + s. */
	for (int k = 0; k < c * l->pp + s; k++)
		first += layout_chunk_layers(m, l, k % l->pp, k / l->pp);
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

void layout_format(const struct llm *m, const struct layout *l, int k, int numeric, char *buf,
		   size_t n)
{
	const struct layout_knob *K = &layout_knobs[k];
	double v = layout_get(m, l, k, 1);
	if (K->kind == LK_PART && !numeric)
		layout_partition_name(l, buf, n);
	else if (K->kind == LK_NAME && !numeric)
		snprintf(buf, n, "%s", K->name((int)v));
	else if (K->kind == LK_REAL)
		snprintf(buf, n, "%g", v);
	else
		snprintf(buf, n, "%d", (int)v);
}

void layout_format_shown(const struct llm *m, const struct layout *l, int k, char *buf, size_t n)
{
	const struct layout_knob *K = &layout_knobs[k];
	double v = layout_shown(m, l, k);
	if (K->kind == LK_PART) {
		size_t o = 0;
		snprintf(buf, n, "even");
		for (int s = 0; l->part[0] && l->pp > 1 && s < l->pp && o + 8 < n; s++)
			o += (size_t)snprintf(buf + o, n - o, "%s%d", s ? "," : "", l->part[s]);
	} else if (K->kind == LK_NAME) {
		snprintf(buf, n, "%s", K->name((int)v));
	} else if (K->kind == LK_REAL) {
		snprintf(buf, n, "%g", v);
	} else {
		snprintf(buf, n, "%d", (int)v);
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
			/* "expected a, b or c": the names of the range. */
			char names[160];
			size_t o = 0;
			for (int i = (int)K->lo; i <= (int)K->hi && o < sizeof(names); i++)
				o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s",
						      i == (int)K->lo	? ""
						      : i == (int)K->hi ? " or "
									: ", ",
						      K->name(i));
			return prism_err_set(err, PRISM_EARG, "%s '%s': expected %s", what, s,
					     names);
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
		     memcmp(la->part, lb->part, sizeof(la->part))))
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

void layout_key(const struct llm *m, const struct layout *l, char *buf, size_t n)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int k = 0; k < LK_N && o < n; k++) {
		const struct layout_knob *K = &layout_knobs[k];
		char v[96];
		if ((!(K->flags & LK_SWEEP) && K->key_group == LK_KEY_ALONE) ||
		    K->key_group == LK_KEY_SWEPT)
			continue; /* not a sweep's, or keyed by the sweep: never here */
		if (K->key_group == LK_KEY_ALONE    ? layout_get(m, l, k, 1) == K->def
		    : K->key_group != LK_KEY_ALWAYS ? !group_changed(m, l, K->key_group)
						    : 0)
			continue;
		layout_format(m, l, k, 0, v, sizeof(v));
		o += (size_t)snprintf(buf + o, n - o, "%s%s=%s", o ? ";" : "",
				      K->key ? K->key : K->id, v);
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

static int check_experts(const struct llm *m, const struct layout *l, const struct hw_profile *hw,
			 struct prism_err *err)
{
	int ep = layout_ep(l), etp = layout_etp(l), fe;

	if (m->experts == 0) {
		if (ep > 1 || etp > 1)
			return prism_err_set(err, PRISM_EARG,
					     "layout: ep %d / etp %d need a mixture-of-experts "
					     "model (experts)",
					     ep, etp);
		return 0;
	}
	if (m->experts < 0 || m->experts > LLM_MAX_EXPERTS || m->top_k < 1 ||
	    m->top_k > m->experts || m->shared_experts < 0 || m->shared_experts > LLM_MAX_SHARED ||
	    m->expert_ffn < 0 || m->expert_ffn > LLM_MAX_FFN || m->first_dense < 0 ||
	    m->first_dense >= m->layers ||
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

int layout_check_partition(const struct llm *m, const struct layout *l, struct prism_err *err)
{
	int p = l->pp, v = l->vp > 0 ? l->vp : 1, L = m->layers;

	if (l->partition == LAYOUT_PART_EMBED_LOSS && p > 1) {
		int n = (L + 2) / p;
		if ((L + 2) % p || n < 2 || (n - 1) % v || n % v)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition embed-loss needs layers %d + 2 divisible "
			    "by pp %d, and each stage's layers by vp %d",
			    L, p, v);
	} else if (l->partition == LAYOUT_PART_BALANCED && p > 1) {
		if (L % v || L / v < p)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition balanced needs layers %d divisible by "
			    "vp %d and at least one chunk a stage (pp %d)",
			    L, v, p);
	} else if (l->partition == LAYOUT_PART_GIVEN && l->part[0] > 0 && p > 1) {
		long sum = 0;
		for (int s = 0; s < p; s++) {
			if (l->part[s] < 1 || l->part[s] % l->vp)
				return prism_err_set(
				    err, PRISM_EARG,
				    "layout: partition: stage %d holds %d layers, "
				    "not a positive multiple of the %d virtual stages",
				    s, l->part[s], l->vp);
			sum += l->part[s];
		}
		if (p < LAYOUT_MAX_STAGES && l->part[p])
			return prism_err_set(err, PRISM_EARG,
					     "layout: partition lists more stages than pp %d", p);
		if (sum != L)
			return prism_err_set(
			    err, PRISM_EARG,
			    "layout: partition places %ld layers, the model has %d", sum, L);
	} else if (l->partition == LAYOUT_PART_GIVEN && L % (p * l->vp)) {
		return prism_err_set(err, PRISM_EARG,
				     "layout: layers %d not divisible by pp %d x virtual stages %d",
				     L, p, l->vp);
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
	if ((rc = check_experts(m, l, hw, err)) || (rc = layout_check_partition(m, l, err)))
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
		return prism_err_set(err, PRISM_EARG,
				     "layout: virtual stages %d need the interleaved schedule",
				     l->vp);
	}
	if (hw->peak_flops[l->dtype] <= 0)
		return prism_err_set(err, PRISM_EARG, "hardware: %s has no %s peak", hw->gpu,
				     hw_dtype_name(l->dtype));
	if (hw->peak_flops[layout_attn_dtype(l)] <= 0)
		return prism_err_set(err, PRISM_EARG, "hardware: %s has no %s peak for attention",
				     hw->gpu, hw_dtype_name(layout_attn_dtype(l)));
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
