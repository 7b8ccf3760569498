/* llm.c - transformer parameter and FLOP counts. */
#include "llm.h"

#include <string.h>

#include "cfg.h"

double llm_gemm_flops(double m, double n, double k)
{
	return 2.0 * m * n * k;
}

int llm_kv_heads(const struct llm *m)
{
	return m->kv_heads > 0 ? m->kv_heads : m->heads;
}

double llm_qkv_width(const struct llm *m)
{
	return m->hidden + 2.0 * llm_kv_heads(m) * ((double)m->hidden / m->heads);
}

double llm_ffn_in(const struct llm *m)
{
	return (m->gated ? 2.0 : 1.0) * m->ffn;
}

double llm_layer_params(const struct llm *m)
{
	double h = m->hidden, f = m->ffn;
	/* QKV + projection, FFN matrices, biases and 2 norms */
	return h * llm_qkv_width(m) + h * h + (m->gated ? 3 : 2) * h * f + 9 * h + f;
}

double llm_params(const struct llm *m)
{
	double h = m->hidden;
	return m->layers * llm_layer_params(m) + (m->untied ? 2.0 : 1.0) * m->vocab * h +
	       (m->rope ? 0.0 : (double)m->seq * h) + 2 * h;
}

void llm_layer_flops(const struct llm *m, double batch, double *gemm, double *attention)
{
	double t = batch * m->seq, h = m->hidden, s = m->seq;
	*gemm = llm_gemm_flops(t, llm_qkv_width(m), h) /* Q, K, V */
		+ llm_gemm_flops(t, h, h)	       /* output projection */
		+ llm_gemm_flops(t, llm_ffn_in(m), h)  /* FFN up (and gate) */
		+ llm_gemm_flops(t, h, m->ffn);	       /* FFN down */
	*attention = 2 * batch * s * s * h	       /* scores Q K^T */
		     + 2 * batch * s * s * h;	       /* attention x V */
}

double llm_flops_iter(const struct llm *m, double batch, int recompute)
{
	double gemm, attention, fwd_layer, fwd_logits;
	llm_layer_flops(m, batch, &gemm, &attention);
	fwd_layer = gemm + attention;
	fwd_logits = llm_gemm_flops(batch * m->seq, m->vocab, m->hidden);
	/* Backward is twice the forward (gradients of inputs and of weights);
	 * recomputation adds a forward of the layers (not of the logits). */
	return (3 + (recompute ? 1 : 0)) * m->layers * fwd_layer + 3 * fwd_logits;
}

double llm_flops_iter_formula(const struct llm *m, double batch, int recompute)
{
	double l = m->layers, h = m->hidden, s = m->seq, V = m->vocab;
	if (recompute)
		return 96 * batch * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
	return 72 * batch * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

int llm_load(const char *path, struct llm *m, struct prism_err *err)
{
	config_t cf;
	config_setting_t *root;
	int rc;

	memset(m, 0, sizeof(*m));
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
	    (rc = cfg_int_opt(path, &cf, root, "kv_heads", m->heads, 1, LLM_MAX_HEADS, &m->kv_heads,
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
	if (m->heads % m->kv_heads) {
		rc = prism_err_set(err, PRISM_EFORMAT,
				   "%s:%d: 'heads' (%d) must be divisible by 'kv_heads' (%d)", path,
				   config_setting_source_line(config_lookup(&cf, "kv_heads")),
				   m->heads, m->kv_heads);
		goto out;
	}
	if (m->hidden % m->heads) {
		rc = prism_err_set(err, PRISM_EFORMAT,
				   "%s:%d: 'hidden' (%d) must be divisible by 'heads' (%d)", path,
				   config_setting_source_line(config_lookup(&cf, "hidden")),
				   m->hidden, m->heads);
		goto out;
	}
out:
	config_destroy(&cf);
	return rc;
}

double llm_score_bytes(const struct llm *m, double batch, int recompute)
{
	double n = batch * m->heads * (double)m->seq * m->seq * m->layers;
	return n * (LLM_SCORE_FWD + LLM_SCORE_BWD + (recompute ? LLM_SCORE_FWD : 0));
}
