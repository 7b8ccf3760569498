/* llm.c - transformer parameter and FLOP counts. */
#include "llm.h"

#include <string.h>

#include "cfg.h"
#include "frame.h"

double llm_gemm_flops(double m, double n, double k)
{
	return 2.0 * m * n * k;
}

int llm_kv_heads(const struct llm *m)
{
	return m->kv_heads > 0 && !llm_mla(m) ? m->kv_heads : m->heads;
}

void llm_kv_settle(struct llm *m)
{
	if (m->kv_heads == m->heads || llm_mla(m))
		m->kv_heads = 0;
}

int llm_mla(const struct llm *m)
{
	return m->kv_lora_rank > 0;
}

double llm_qk_head_dim(const struct llm *m)
{
	return llm_mla(m) ? (double)m->qk_nope_head_dim + m->qk_rope_head_dim : llm_head_dim(m);
}

double llm_v_head_dim(const struct llm *m)
{
	return llm_mla(m) ? m->v_head_dim : llm_head_dim(m);
}

double llm_head_dim(const struct llm *m)
{
	if (llm_mla(m))
		return ((double)m->qk_nope_head_dim + m->qk_rope_head_dim + m->v_head_dim) / 2;
	return m->head_dim > 0 ? m->head_dim : (double)m->hidden / m->heads;
}

double llm_attn_width(const struct llm *m)
{
	if (llm_mla(m))
		return m->heads * llm_head_dim(m);
	return m->head_dim > 0 ? (double)m->heads * m->head_dim : m->hidden;
}

double llm_proj_width(const struct llm *m)
{
	return llm_mla(m) ? (double)m->heads * m->v_head_dim : llm_attn_width(m);
}

double llm_mla_down_params(const struct llm *m)
{
	double h = m->hidden;
	if (!llm_mla(m))
		return 0;
	return h * m->q_lora_rank + h * ((double)m->kv_lora_rank + m->qk_rope_head_dim);
}

double llm_attn_params(const struct llm *m)
{
	double h = m->hidden, a = m->heads, q;
	if (!llm_mla(m))
		return h * llm_qkv_width(m) + llm_proj_width(m) * h;
	/* The up projections (Q's from hidden itself without q_lora_rank),
	 * then the down projections and the output projection. */
	q = m->q_lora_rank > 0 ? (double)m->q_lora_rank : h;
	return q * a * llm_qk_head_dim(m) +
	       m->kv_lora_rank * a * ((double)m->qk_nope_head_dim + m->v_head_dim) +
	       llm_mla_down_params(m) + llm_proj_width(m) * h;
}

/* The attention's biases and its own norms: prism's QKV biases (3h) and
 * the projection's (h); MLA's projection bias and the layer norms on its
 * compressed q and kv (weight and bias, as prism counts every norm). */
static double attn_extra(const struct llm *m)
{
	double h = m->hidden;
	if (!llm_mla(m))
		return 4 * h;
	return h + 2.0 * ((double)m->q_lora_rank + m->kv_lora_rank);
}

double llm_qkv_width(const struct llm *m)
{
	return llm_attn_width(m) + 2.0 * llm_kv_heads(m) * llm_head_dim(m);
}

double llm_kv_heads_rank(const struct llm *m, int t)
{
	int kv = llm_kv_heads(m);
	return t < 1 || kv <= t ? 1.0 : (double)kv / t;
}

double llm_qkv_width_rank(const struct llm *m, int t)
{
	double d = llm_head_dim(m);
	if (t < 1)
		t = 1;
	return ((double)m->heads / t + 2 * llm_kv_heads_rank(m, t)) * d;
}

double llm_tp_copies(const struct llm *m, int t)
{
	double d = llm_head_dim(m);
	int kv = llm_kv_heads(m);
	if (t < 1)
		t = 1;
	if (llm_mla(m))
		return llm_mla_down_params(m) * (1.0 - 1.0 / t);
	if (kv >= t)
		return 0;
	/* each rank holds one key-value head of K and V: 2 d h, where the
	 * split would give 2 kv d h / t */
	return 2.0 * d * m->hidden * (1.0 - (double)kv / t);
}

double llm_layer_params_rank(const struct llm *m, int t)
{
	if (t < 1)
		t = 1;
	return llm_layer_params(m) / t + llm_tp_copies(m, t);
}

double llm_ffn_in(const struct llm *m)
{
	return (m->gated ? 2.0 : 1.0) * m->ffn;
}

double llm_layer_params(const struct llm *m)
{
	double h = m->hidden, f = m->ffn;
	/* attention, FFN matrices, the attention's biases and norms, 2 norms
	 * (4h) and the FFN's biases (f + h) */
	return llm_attn_params(m) + (m->gated ? 3 : 2) * h * f + attn_extra(m) + 5 * h + f;
}

int llm_hybrid(const struct llm *m)
{
	return m->pattern[0] != '\0';
}

int llm_char_kind(int ch)
{
	return ch == 'M'   ? LLM_KIND_MAMBA
	       : ch == '*' ? LLM_KIND_ATTN
	       : ch == '-' ? LLM_KIND_MLP
	       : ch == 'E' ? LLM_KIND_MOE
			   : -1;
}

int llm_kind_char(int k)
{
	return k == LLM_KIND_MAMBA  ? 'M'
	       : k == LLM_KIND_ATTN ? '*'
	       : k == LLM_KIND_MLP  ? '-'
	       : k == LLM_KIND_MOE  ? 'E'
				    : 0;
}

int llm_layer_kind(const struct llm *m, int l)
{
	int k;
	if (!llm_hybrid(m) || l < 0 || l >= LLM_MAX_PATTERN)
		return LLM_KIND_FULL;
	k = llm_char_kind((unsigned char)m->pattern[l]);
	return k < 0 ? LLM_KIND_FULL : k;
}

int llm_kind_layers(const struct llm *m, int k)
{
	int n = 0;
	if (!llm_hybrid(m))
		return k == LLM_KIND_FULL ? m->layers : 0;
	for (int l = 0; l < m->layers && m->pattern[l]; l++)
		n += llm_layer_kind(m, l) == k;
	return n;
}

double llm_ssm_inner(const struct llm *m)
{
	return (double)m->ssm_heads * m->ssm_head_dim;
}

double llm_ssm_proj(const struct llm *m)
{
	return 2 * llm_ssm_inner(m) + 2.0 * m->ssm_groups * m->ssm_state + m->ssm_heads;
}

double llm_kind_params(const struct llm *m, int k)
{
	double h = m->hidden, f = m->ffn, di = llm_ssm_inner(m), H = m->ssm_heads;
	double gn = (double)m->ssm_groups * m->ssm_state;
	switch (k) {
	case LLM_KIND_MOE:
		return llm_moe_layer_params(m, NULL) - (llm_attn_params(m) + attn_extra(m) + 2 * h);
	case LLM_KIND_ATTN:
		return llm_attn_params(m) + attn_extra(m) + 2 * h;
	case LLM_KIND_MLP:
		return (m->gated ? 3 : 2) * h * f + f + h + 2 * h;
	case LLM_KIND_MAMBA:
		return 2 * h + h * llm_ssm_proj(m) + (di + 2 * gn) * (m->ssm_conv + 1) + 3 * H +
		       di + di * h;
	default:
		return llm_layer_params(m);
	}
}

double llm_kind_active_params(const struct llm *m, int k)
{
	double act = 0;
	if (k != LLM_KIND_MOE)
		return llm_kind_params(m, k);
	llm_moe_layer_params(m, &act);
	return act - (llm_attn_params(m) + attn_extra(m) + 2.0 * m->hidden);
}

double llm_kind_params_rank(const struct llm *m, int k, int t)
{
	if (t < 1)
		t = 1;
	if (k == LLM_KIND_FULL || k == LLM_KIND_ATTN)
		return llm_kind_params(m, k) / t + llm_tp_copies(m, t);
	return llm_kind_params(m, k) / t;
}

double llm_ssd_flops(const struct llm *m, double T, double H, double G)
{
	double Q = m->ssm_chunk, N = m->ssm_state, P = m->ssm_head_dim;
	return 2 * T * (G * Q * N + H * (Q * P + 2 * N * P + N * P / Q));
}

void llm_kind_flops(const struct llm *m, int k, double batch, double *gemm, double *core)
{
	double t = batch * m->seq, h = m->hidden, w = llm_attn_width(m), s = m->seq;
	switch (k) {
	case LLM_KIND_MOE: {
		/* an MoE layer's less its attention's */
		double g, a, ag, ac;
		llm_moe_layer_flops(m, batch, &g, &a);
		llm_kind_flops(m, LLM_KIND_ATTN, batch, &ag, &ac);
		*gemm = g - ag;
		*core = 0;
		return;
	}
	case LLM_KIND_ATTN:
		*gemm = llm_mla(m) ? 2 * t * llm_attn_params(m)
				   : llm_gemm_flops(t, llm_qkv_width(m), h) +
					 llm_gemm_flops(t, h, llm_proj_width(m));
		*core = 4 * batch * s * s * w;
		return;
	case LLM_KIND_MLP:
		*gemm = llm_gemm_flops(t, llm_ffn_in(m), h) + llm_gemm_flops(t, h, m->ffn);
		*core = 0;
		return;
	case LLM_KIND_MAMBA:
		*gemm =
		    llm_gemm_flops(t, llm_ssm_proj(m), h) + llm_gemm_flops(t, h, llm_ssm_inner(m));
		*core = llm_ssd_flops(m, t, m->ssm_heads, m->ssm_groups);
		return;
	default:
		llm_layer_flops(m, batch, gemm, core);
	}
}

int llm_window(const struct llm *m, int l)
{
	if (m->window <= 0 || (m->global_every > 0 && l % m->global_every == m->global_every - 1))
		return 0;
	return m->window;
}

double llm_window_ratio(const struct llm *m, int w)
{
	double s = m->seq;
	if (w <= 0 || w >= s)
		return 1;
	/* queries 0..w-1 see i + 1 keys, the rest w */
	return ((double)w * (w + 1) / 2 + (s - w) * w) / (s * (s + 1) / 2);
}

double llm_attn_layers(const struct llm *m)
{
	double n = 0;
	if (m->window <= 0)
		return m->layers;
	for (int l = 0; l < m->layers; l++)
		n += llm_window_ratio(m, llm_window(m, l));
	return n;
}

int llm_is_moe_layer(const struct llm *m, int l)
{
	if (llm_hybrid(m)) /* the pattern's E layers */
		return m->experts > 0 && llm_layer_kind(m, l) == LLM_KIND_MOE;
	return m->experts > 0 && l >= m->first_dense &&
	       (m->moe_period < 1 || ((unsigned)m->moe_mask >> (l % m->moe_period)) & 1u);
}

int llm_moe_layers(const struct llm *m)
{
	int P = m->moe_period, a = m->first_dense, b = m->layers, n = 0;
	if (llm_hybrid(m))
		return m->experts > 0 ? llm_kind_layers(m, LLM_KIND_MOE) : 0;
	if (m->experts <= 0 || b <= a)
		return 0;
	if (P < 1)
		return b - a;
	/* Layers i in [a, b) with i % P == r: those in [0, b) less those in
	 * [0, a), (x - r + P - 1) / P in [0, x). */
	for (int r = 0; r < P && r < 32; r++)
		if (((unsigned)m->moe_mask >> r) & 1u)
			n += (b - r + P - 1) / P - (a - r + P - 1) / P;
	return n;
}

double llm_expert_params(const struct llm *m)
{
	double fe = m->expert_ffn > 0 ? m->expert_ffn : m->ffn;
	return (m->gated ? 3.0 : 2.0) * m->hidden * fe;
}

double llm_moe_layer_params(const struct llm *m, double *active)
{
	double h = m->hidden, e = llm_expert_params(m);
	/* The attention, its biases and norms (3h + h for QKV and the
	 * projection), two norms (4h), the router; the experts have no biases
	 * (Mixtral, DeepSeek-V3). */
	double base = llm_attn_params(m) + attn_extra(m) + 4 * h + (double)m->experts * h +
		      (double)m->shared_experts * e;
	if (active)
		*active = base + (double)m->top_k * e;
	return base + (double)m->experts * e;
}

double llm_mtp_extra_params(const struct llm *m)
{
	return 2.0 * m->hidden * m->hidden + 6.0 * m->hidden;
}

double llm_mtp_layer_params(const struct llm *m, double *active)
{
	if (llm_is_moe_layer(m, m->layers - 1))
		return llm_moe_layer_params(m, active);
	if (active)
		*active = llm_layer_params(m);
	return llm_layer_params(m);
}

static double params_with(const struct llm *m, double moe_layer)
{
	double h = m->hidden, moe = llm_moe_layers(m);
	double layers = moe > 0 ? (m->layers - moe) * llm_layer_params(m) + moe * moe_layer
				: m->layers * llm_layer_params(m);
	if (llm_hybrid(m)) { /* each kind's layers; E ones as moe_layer says */
		layers = 0;
		for (int k = 0; k < LLM_KINDS; k++)
			layers += llm_kind_layers(m, k) *
				  (k == LLM_KIND_MOE
				       ? moe_layer - (llm_attn_params(m) + attn_extra(m) + 2 * h)
				       : llm_kind_params(m, k));
	}
	/* The MTP depths' layers (of the last layer's kind) and projections. */
	if (m->mtp_layers > 0)
		layers += m->mtp_layers *
			  ((llm_is_moe_layer(m, m->layers - 1) ? moe_layer : llm_layer_params(m)) +
			   llm_mtp_extra_params(m));
	return layers + (m->untied ? 2.0 : 1.0) * m->vocab * h +
	       (m->rope ? 0.0 : (double)m->seq * h) + 2 * h;
}

double llm_params(const struct llm *m)
{
	return params_with(m, llm_moe_layers(m) > 0 ? llm_moe_layer_params(m, NULL) : 0);
}

double llm_active_params(const struct llm *m)
{
	double act = 0;
	if (llm_moe_layers(m) > 0)
		llm_moe_layer_params(m, &act);
	return params_with(m, act);
}

void llm_layer_flops(const struct llm *m, double batch, double *gemm, double *attention)
{
	double t = batch * m->seq, h = m->hidden, s = m->seq, w = llm_attn_width(m);
	if (llm_mla(m))
		*gemm = 2 * t * llm_attn_params(m) /* MLA's five projections */
			+ llm_gemm_flops(t, llm_ffn_in(m), h) + llm_gemm_flops(t, h, m->ffn);
	else
		*gemm = llm_gemm_flops(t, llm_qkv_width(m), h) /* Q, K, V */
			+ llm_gemm_flops(t, h, w)	       /* output projection */
			+ llm_gemm_flops(t, llm_ffn_in(m), h)  /* FFN up (and gate) */
			+ llm_gemm_flops(t, h, m->ffn);	       /* FFN down */
	*attention = 2 * batch * s * s * w		       /* scores Q K^T */
		     + 2 * batch * s * s * w;		       /* attention x V */
}

void llm_moe_layer_flops(const struct llm *m, double batch, double *gemm, double *attention)
{
	double t = batch * m->seq, h = m->hidden, s = m->seq, w = llm_attn_width(m);
	double fe = m->expert_ffn > 0 ? m->expert_ffn : m->ffn, fin = (m->gated ? 2.0 : 1.0) * fe;
	double per_token = (double)m->top_k + m->shared_experts;
	double attn = llm_mla(m) ? 2 * t * llm_attn_params(m)
				 : llm_gemm_flops(t, llm_qkv_width(m), h) + llm_gemm_flops(t, h, w);
	*gemm = attn + llm_gemm_flops(t, m->experts, h) /* router */
		+ per_token * (llm_gemm_flops(t, fin, h) + llm_gemm_flops(t, h, fe));
	*attention = 4 * batch * s * s * w;
}

/* The multi-token-prediction depths' FLOPs, training: each depth's layer
 * (the last decoder layer's kind and window), eh_proj and logits, forward
 * and twice that backward, the layer's forward again under full
 * recomputation (Megatron-LM's num_floating_point_operations counts the
 * same layer, projection and logits). */
static double mtp_flops(const struct llm *m, double batch, int recompute)
{
	double g, a, t = batch * m->seq, h = m->hidden, layer;
	if (m->mtp_layers <= 0)
		return 0;
	if (llm_is_moe_layer(m, m->layers - 1))
		llm_moe_layer_flops(m, batch, &g, &a);
	else
		llm_layer_flops(m, batch, &g, &a);
	layer = g + a * llm_window_ratio(m, llm_window(m, m->layers - 1));
	return m->mtp_layers * ((3 + (recompute ? 1 : 0)) * layer +
				3 * (llm_gemm_flops(t, h, 2 * h) + llm_gemm_flops(t, m->vocab, h)));
}

/* A hybrid model's training FLOPs: each layer's forward by its kind (an
 * attention layer's core over its window's band), three times, four with
 * full recomputation; the logits three times. */
static double hybrid_flops(const struct llm *m, double batch, int recompute)
{
	double f[LLM_KINDS], core[LLM_KINDS], sum = 0;
	for (int k = 0; k < LLM_KINDS; k++)
		llm_kind_flops(m, k, batch, &f[k], &core[k]);
	for (int l = 0; l < m->layers; l++) {
		int k = llm_layer_kind(m, l);
		sum += f[k] +
		       core[k] * (k == LLM_KIND_MAMBA ? 1 : llm_window_ratio(m, llm_window(m, l)));
	}
	return (3 + (recompute ? 1 : 0)) * sum +
	       3 * llm_gemm_flops(batch * m->seq, m->vocab, m->hidden);
}

double llm_flops_iter(const struct llm *m, double batch, int recompute)
{
	double gemm, attention, fwd_layer, fwd_logits;
	double mtp = mtp_flops(m, batch, recompute);
	if (llm_hybrid(m))
		return hybrid_flops(m, batch, recompute);
	llm_layer_flops(m, batch, &gemm, &attention);
	fwd_layer = gemm + attention;
	fwd_logits = llm_gemm_flops(batch * m->seq, m->vocab, m->hidden);
	/* Windowed layers' attention counts their band's share (dense and
	 * mixture-of-experts layers' attention is the same). */
	if (m->window > 0)
		fwd_layer = gemm + attention * llm_attn_layers(m) / m->layers;
	if (llm_moe_layers(m) > 0) {
		double mg, ma, moe = llm_moe_layers(m);
		llm_moe_layer_flops(m, batch, &mg, &ma);
		if (m->window > 0)
			ma = attention * llm_attn_layers(m) / m->layers;
		return (3 + (recompute ? 1 : 0)) *
			   ((m->layers - moe) * fwd_layer + moe * (mg + ma)) +
		       3 * fwd_logits + mtp;
	}
	/* Backward is twice the forward (gradients of inputs and of weights);
	 * recomputation adds a forward of the layers (not of the logits). */
	return (3 + (recompute ? 1 : 0)) * m->layers * fwd_layer + 3 * fwd_logits + mtp;
}

double llm_flops_iter_formula(const struct llm *m, double batch, int recompute)
{
	double l = m->layers, h = m->hidden, s = m->seq, V = m->vocab;
	if (recompute)
		return 96 * batch * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
	return 72 * batch * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

/* moe_layer_freq (llm_load): an int N (Megatron-LM's: layer i is MoE where
 * i % N == 0) or one period of the layer pattern as 0s and 1s ("01": every
 * second layer from layer 1, Megatron's [0,1]*24); at least one MoE layer
 * from first_dense on. */
static int moe_freq_load(const char *path, config_t *cf, struct llm *m, struct prism_err *err)
{
	config_setting_t *e = config_lookup(cf, "moe_layer_freq");
	int line = e ? config_setting_source_line(e) : 0;
	const char *s;

	if (!e)
		return 0;
	if (config_setting_type(e) == CONFIG_TYPE_INT) {
		int n = config_setting_get_int(e);
		if (n < 1 || n > LLM_MAX_MOE_PERIOD)
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s:%d: 'moe_layer_freq' must be 1..%d, not %d", path,
					     line, LLM_MAX_MOE_PERIOD, n);
		m->moe_period = n, m->moe_mask = 1;
	} else if ((s = config_setting_get_string(e)) != NULL) {
		size_t n = strlen(s);
		if (n < 1 || n > LLM_MAX_MOE_PERIOD || strspn(s, "01") != n || !strchr(s, '1'))
			return prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'moe_layer_freq' pattern '%s': expected 1 to %d "
			    "characters 0 (dense) or 1 (MoE), at least one 1",
			    path, line, s, LLM_MAX_MOE_PERIOD);
		m->moe_period = (int)n, m->moe_mask = 0;
		for (size_t i = 0; i < n; i++)
			m->moe_mask |= (s[i] == '1') << i;
	} else {
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'moe_layer_freq' must be a whole number or a pattern "
				     "string of 0s and 1s",
				     path, line);
	}
	if (m->moe_period == 1)
		m->moe_period = m->moe_mask = 0; /* every layer */
	if (llm_moe_layers(m) == 0)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'moe_layer_freq' leaves no MoE layer from first_dense "
				     "%d to layers %d",
				     path, line, m->first_dense, m->layers);
	return 0;
}

/* The mixture-of-experts settings (llm_load). */
static int moe_load(const char *path, config_t *cf, config_setting_t *root, struct llm *m,
		    struct prism_err *err)
{
	static const char *const keys[] = {"top_k",	    "shared_experts",  "expert_ffn",
					   "first_dense",   "capacity_factor", "router",
					   "moe_layer_freq"};
	int rc;

	if ((rc = cfg_int_opt(path, cf, root, "experts", 0, 0, LLM_MAX_EXPERTS, &m->experts, err)))
		return rc;
	if (m->experts == 0) {
		/* A typo'd or half-written MoE model is an error, not a dense one. */
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (config_lookup(cf, keys[i]))
				return prism_err_set(
				    err, PRISM_EFORMAT, "%s:%d: '%s' needs 'experts' (1..%d)", path,
				    config_setting_source_line(config_lookup(cf, keys[i])), keys[i],
				    LLM_MAX_EXPERTS);
		return 0;
	}
	if (!config_lookup(cf, "top_k"))
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'experts' needs 'top_k' (1..experts)", path,
				     config_setting_source_line(config_lookup(cf, "experts")));
	if ((rc = cfg_int_opt(path, cf, root, "top_k", 1, 1, m->experts, &m->top_k, err)) ||
	    (rc = cfg_int_opt(path, cf, root, "shared_experts", 0, 0, LLM_MAX_SHARED,
			      &m->shared_experts, err)) ||
	    (rc = cfg_int_opt(path, cf, root, "expert_ffn", m->ffn, 1, LLM_MAX_FFN, &m->expert_ffn,
			      err)) ||
	    (rc = cfg_int_opt(path, cf, root, "first_dense", 0, 0, m->layers - 1, &m->first_dense,
			      err)))
		return rc;
	if ((rc = moe_freq_load(path, cf, m, err)))
		return rc;
	if (config_lookup(cf, "capacity_factor")) {
		if ((rc = cfg_range(path, cf, NULL, "capacity_factor", 0, LLM_MAX_CAPACITY, 0, 1,
				    &m->capacity_factor, err)))
			return rc;
		if (m->capacity_factor > 0 && m->capacity_factor < 1)
			return prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'capacity_factor' must be 0 (dropless) or in 1..%g, not %g",
			    path, config_setting_source_line(config_lookup(cf, "capacity_factor")),
			    LLM_MAX_CAPACITY, m->capacity_factor);
	}
	if (config_lookup(cf, "router")) {
		char r[16];
		if ((rc = cfg_text(path, cf, NULL, "router", r, sizeof(r), err)))
			return rc;
		if (strcmp(r, "sigmoid") == 0) {
			m->router = LLM_ROUTER_SIGMOID;
		} else if (strcmp(r, "softmax") != 0) {
			return prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'router': expected \"softmax\" or \"sigmoid\", not '%s'", path,
			    config_setting_source_line(config_lookup(cf, "router")), r);
		}
	}
	return 0;
}

/* The multi-head latent attention settings (llm_load). */
static int mla_load(const char *path, config_t *cf, config_setting_t *root, struct llm *m,
		    struct prism_err *err)
{
	static const char *const keys[] = {"q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
					   "v_head_dim"};
	config_setting_t *s;
	int rc;

	if ((rc = cfg_int_opt(path, cf, root, "kv_lora_rank", 0, 0, LLM_MAX_LORA_RANK,
			      &m->kv_lora_rank, err)))
		return rc;
	if (m->kv_lora_rank == 0) {
		/* A half-written MLA model is an error, not plain attention. */
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if ((s = config_lookup(cf, keys[i])))
				return prism_err_set(err, PRISM_EFORMAT,
						     "%s:%d: '%s' needs 'kv_lora_rank' (1..%d)",
						     path, config_setting_source_line(s), keys[i],
						     LLM_MAX_LORA_RANK);
		return 0;
	}
	s = config_lookup(cf, "kv_lora_rank");
	if (!config_lookup(cf, "v_head_dim"))
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'kv_lora_rank' needs 'v_head_dim' (1..%d)", path,
				     config_setting_source_line(s), LLM_MAX_HEAD_DIM);
	if ((rc = cfg_int_opt(path, cf, root, "q_lora_rank", 0, 0, LLM_MAX_LORA_RANK,
			      &m->q_lora_rank, err)) ||
	    (rc = cfg_int_opt(path, cf, root, "qk_nope_head_dim", 0, 0, LLM_MAX_HEAD_DIM,
			      &m->qk_nope_head_dim, err)) ||
	    (rc = cfg_int_opt(path, cf, root, "qk_rope_head_dim", 0, 0, LLM_MAX_HEAD_DIM,
			      &m->qk_rope_head_dim, err)) ||
	    (rc = cfg_int_opt(path, cf, root, "v_head_dim", 0, 1, LLM_MAX_HEAD_DIM, &m->v_head_dim,
			      err)))
		return rc;
	if (m->qk_nope_head_dim + m->qk_rope_head_dim < 1)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'kv_lora_rank' needs a query-key head: "
				     "'qk_nope_head_dim' + 'qk_rope_head_dim' of at least 1",
				     path, config_setting_source_line(s));
	if (m->head_dim)
		return prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s:%d: 'head_dim' does not apply to multi-head latent attention (its heads "
		    "are qk_nope_head_dim + qk_rope_head_dim and v_head_dim wide)",
		    path, config_setting_source_line(config_lookup(cf, "head_dim")));
	if (m->kv_heads && m->kv_heads != m->heads)
		return prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s:%d: 'kv_heads' %d: multi-head latent attention gives every head its own "
		    "key and value (kv_heads is heads, %d)",
		    path, config_setting_source_line(config_lookup(cf, "kv_heads")), m->kv_heads,
		    m->heads);
	return 0;
}

/* The hybrid pattern (llm_load), before the need for 'layers' is checked:
 * its characters one by one; layers, where given, its length, else set
 * from it. */
static int hybrid_pattern(const char *path, config_t *cf, struct llm *m, struct prism_err *err)
{
	config_setting_t *e = config_lookup(cf, "hybrid_override_pattern");
	int line = config_setting_source_line(e);
	const char *s = config_setting_get_string(e);
	size_t n;

	if (!s)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'hybrid_override_pattern' must be a string of M, * "
				     "and - (one a layer)",
				     path, line);
	n = strlen(s);
	if (n < 1 || n > LLM_MAX_PATTERN)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'hybrid_override_pattern' has %zu layers, not 1..%d",
				     path, line, n, LLM_MAX_PATTERN);
	for (size_t i = 0; i < n; i++) {
		if (llm_char_kind((unsigned char)s[i]) >= 0)
			continue;
		/* Megatron-LM's separators: "/" before the MTP depths'
		 * patterns (parse_hybrid_pattern), "|" between pipeline stages
		 * (Megatron-Bridge's) */
		if (s[i] == '/' || s[i] == '|')
			return prism_err_set(
			    err, PRISM_EFORMAT, "%s:%d: 'hybrid_override_pattern' at %zu: '%c' %s",
			    path, line, i, s[i],
			    s[i] == '/' ? "(multi-token-prediction patterns) is not "
					  "modelled"
					: "(pipeline stage boundaries) belongs to the "
					  "layout: give the stages' layers with "
					  "--partition");
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'hybrid_override_pattern' layer %zu: '%c' is not M "
				     "(Mamba), * (attention), - (MLP) or E (MoE)",
				     path, line, i, s[i]);
	}
	if (m->layers != 0 && (size_t)m->layers != n)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: 'layers' %d differs from the %zu layers of "
				     "'hybrid_override_pattern'",
				     path, config_setting_source_line(config_lookup(cf, "layers")),
				     m->layers, n);
	memcpy(m->pattern, s, n + 1);
	m->layers = (int)n;
	return 0;
}

/* The Mamba-2 mixer's widths (llm_load), refused without an M layer to
 * use them.  Defaults: Megatron-LM's TransformerConfig (mamba_head_dim
 * 64, mamba_state_dim 128, mamba_num_groups 8), MambaMixer's d_conv 4 and
 * chunk_size 128, and its heads from expand 2 (2 hidden / head_dim). */
static int mamba_load(const char *path, config_t *cf, config_setting_t *root, struct llm *m,
		      struct prism_err *err)
{
	static const char *const keys[] = {"mamba_num_heads", "mamba_head_dim", "ssm_state_size",
					   "n_groups",	      "conv_kernel",	"chunk_size"};
	config_setting_t *e;
	int rc, heads;

	if (!llm_kind_layers(m, LLM_KIND_MAMBA)) {
		/* Mixer widths without a Mamba layer: a typo, not a model. */
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if ((e = config_lookup(cf, keys[i])))
				return prism_err_set(err, PRISM_EFORMAT,
						     "%s:%d: '%s' needs Mamba layers ('M' in "
						     "'hybrid_override_pattern')",
						     path, config_setting_source_line(e), keys[i]);
		return 0;
	}
	if ((rc = cfg_int_opt(path, cf, root, "mamba_head_dim", 64, 1, LLM_MAX_HEAD_DIM,
			      &m->ssm_head_dim, err)))
		return rc;
	heads = 2 * m->hidden / m->ssm_head_dim;
	if ((rc = cfg_int_opt(path, cf, root, "mamba_num_heads", heads > 0 ? heads : 1, 1,
			      LLM_MAX_SSM_HEADS, &m->ssm_heads, err)) ||
	    (rc = cfg_int_opt(path, cf, root, "ssm_state_size", 128, 1, LLM_MAX_SSM_STATE,
			      &m->ssm_state, err)) ||
	    (rc = cfg_int_opt(path, cf, root, "n_groups", 8, 1, LLM_MAX_SSM_HEADS, &m->ssm_groups,
			      err)) ||
	    (rc = cfg_int_opt(path, cf, root, "conv_kernel", 4, 1, LLM_MAX_SSM_CONV, &m->ssm_conv,
			      err)) ||
	    (rc = cfg_int_opt(path, cf, root, "chunk_size", 128, 1, LLM_MAX_SSM_CHUNK,
			      &m->ssm_chunk, err)))
		return rc;
	if (m->ssm_heads % m->ssm_groups)
		return prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s:%d: 'mamba_num_heads' %d must be divisible by 'n_groups' %d (each group's "
		    "B and C serve whole heads, mamba_mixer.py)",
		    path, (e = config_lookup(cf, "n_groups")) ? config_setting_source_line(e) : 1,
		    m->ssm_heads, m->ssm_groups);
	return 0;
}

int llm_load(const char *path, struct llm *m, struct prism_err *err)
{
	config_t cf;
	config_setting_t *root;
	int rc;

	memset(m, 0, sizeof(*m));
	if (frame_sniff(path) != FRAME_FILE_CFG) {
		/* a config.json or Megatron-LM arguments (frame.h) */
		struct frame_extra x;
		return frame_load_model(path, m, &x, err);
	}
	if ((rc = cfg_read(&cf, path, err)))
		return rc;
	root = config_root_setting(&cf);
	if ((rc = cfg_text(path, &cf, NULL, "name", m->name, sizeof(m->name), err)) ||
	    (rc = cfg_int_opt(path, &cf, root, "layers", 0, 1, LLM_MAX_LAYERS, &m->layers, err)) ||
	    (rc = cfg_int_opt(path, &cf, root, "hidden", 0, 1, LLM_MAX_HIDDEN, &m->hidden, err)) ||
	    (rc = cfg_int_opt(path, &cf, root, "heads", 0, 1, LLM_MAX_HEADS, &m->heads, err)) ||
	    (rc = cfg_int_opt(path, &cf, root, "seq", 0, 1, LLM_MAX_SEQ, &m->seq, err)) ||
	    (rc = cfg_int_opt(path, &cf, root, "vocab", 0, 1, LLM_MAX_VOCAB, &m->vocab, err)))
		goto out;
	/* A pattern gives the layers (before the hidden size's defaults). */
	if (config_lookup(&cf, "hybrid_override_pattern") &&
	    (rc = hybrid_pattern(path, &cf, m, err)))
		goto out;
	{
		static const char *const need[] = {"layers", "hidden", "heads", "seq", "vocab"};
		const int *val[] = {&m->layers, &m->hidden, &m->heads, &m->seq, &m->vocab};
		for (int i = 0; i < 5; i++)
			if (*val[i] == 0) {
				rc = prism_err_set(err, PRISM_EFORMAT, "%s:1: missing setting '%s'",
						   path, need[i]);
				goto out;
			}
	}
	/* 4h <= LLM_MAX_FFN by the limits. */
	if ((rc = cfg_int_opt(path, &cf, root, "ffn", 4 * m->hidden, 1, LLM_MAX_FFN, &m->ffn,
			      err)) ||
	    (rc = cfg_int_opt(path, &cf, root, "kv_heads", 0, 1, LLM_MAX_HEADS, &m->kv_heads,
			      err)) ||
	    (rc = cfg_int_opt(path, &cf, root, "head_dim", 0, 1, LLM_MAX_HEAD_DIM, &m->head_dim,
			      err)) ||
	    (rc = cfg_int_opt(path, &cf, root, "window", 0, 1, LLM_MAX_WINDOW, &m->window, err)) ||
	    (rc = cfg_int_opt(path, &cf, root, "global_every", 0, 1, LLM_MAX_LAYERS,
			      &m->global_every, err)) ||
	    (rc = cfg_int_opt(path, &cf, root, "mtp_layers", 0, 0, LLM_MAX_MTP, &m->mtp_layers,
			      err)))
		goto out;
	if (config_lookup(&cf, "activation")) {
		char act[16];
		if ((rc = cfg_text(path, &cf, NULL, "activation", act, sizeof(act), err)))
			goto out;
		if (strcmp(act, "swiglu") == 0) {
			m->gated = 1;
		} else if (strcmp(act, "gelu") != 0) {
			rc = prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'activation': expected \"gelu\" or \"swiglu\", not "
			    "'%s'",
			    path, config_setting_source_line(config_lookup(&cf, "activation")),
			    act);
			goto out;
		}
	}
	if (config_lookup(&cf, "tie_embeddings")) {
		config_setting_t *e = config_lookup(&cf, "tie_embeddings");
		if (config_setting_type(e) != CONFIG_TYPE_BOOL) {
			rc = prism_err_set(err, PRISM_EFORMAT,
					   "%s:%d: 'tie_embeddings': expected true or false", path,
					   config_setting_source_line(e));
			goto out;
		}
		m->untied = !config_setting_get_bool(e);
	}
	if (config_lookup(&cf, "positions")) {
		char pos[16];
		if ((rc = cfg_text(path, &cf, NULL, "positions", pos, sizeof(pos), err)))
			goto out;
		if (strcmp(pos, "rope") == 0) {
			m->rope = 1;
		} else if (strcmp(pos, "learned") != 0) {
			rc = prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s:%d: 'positions': expected \"learned\" or \"rope\", not "
			    "'%s'",
			    path, config_setting_source_line(config_lookup(&cf, "positions")), pos);
			goto out;
		}
	}
	if ((rc = moe_load(path, &cf, root, m, err)) || (rc = mla_load(path, &cf, root, m, err)) ||
	    (rc = mamba_load(path, &cf, root, m, err)))
		goto out;
	if (llm_hybrid(m) && (m->mtp_layers > 0 || config_lookup(&cf, "first_dense") ||
			      config_lookup(&cf, "moe_layer_freq"))) {
		const char *k = m->mtp_layers > 0		    ? "mtp_layers"
				: config_lookup(&cf, "first_dense") ? "first_dense"
								    : "moe_layer_freq";
		rc = prism_err_set(err, PRISM_EFORMAT,
				   "%s:%d: '%s' with 'hybrid_override_pattern': %s", path,
				   config_setting_source_line(config_lookup(&cf, k)), k,
				   m->mtp_layers > 0 ? "a hybrid model's multi-token prediction is "
						       "not modelled"
						     : "the pattern's E layers are its MoE layers");
		goto out;
	}
	if (llm_hybrid(m) && (m->experts > 0) != (llm_kind_layers(m, LLM_KIND_MOE) > 0)) {
		rc = prism_err_set(
		    err, PRISM_EFORMAT,
		    m->experts > 0
			? "%s:%d: 'experts' needs E layers in 'hybrid_override_pattern'"
			: "%s:%d: 'hybrid_override_pattern''s E layers need 'experts' and "
			  "'top_k'",
		    path,
		    config_setting_source_line(config_lookup(
			&cf, m->experts > 0 ? "experts" : "hybrid_override_pattern")));
		goto out;
	}
	if (m->heads % llm_kv_heads(m)) {
		rc = prism_err_set(err, PRISM_EFORMAT,
				   "%s:%d: 'heads' (%d) must be divisible by 'kv_heads' (%d)", path,
				   config_setting_source_line(config_lookup(&cf, "kv_heads")),
				   m->heads, m->kv_heads);
		goto out;
	}
	if (!m->head_dim && !llm_mla(m) && m->hidden % m->heads) {
		rc =
		    prism_err_set(err, PRISM_EFORMAT,
				  "%s:%d: 'hidden' (%d) must be divisible by 'heads' (%d), or give "
				  "'head_dim'",
				  path, config_setting_source_line(config_lookup(&cf, "hidden")),
				  m->hidden, m->heads);
		goto out;
	}
	llm_kv_settle(m);
out:
	config_destroy(&cf);
	return rc;
}

double llm_score_bytes(const struct llm *m, double batch, int recompute)
{
	double n = batch * m->heads * (double)m->seq * m->seq * m->layers;
	return n * (LLM_SCORE_FWD + LLM_SCORE_BWD + (recompute ? LLM_SCORE_FWD : 0));
}
