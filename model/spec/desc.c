/* desc.c - the run description's format (desc.h). */
#include "desc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing description: ";KEY=VALUE" after the first field. */
struct out {
	char *buf;
	size_t n, o;
};

static void put(struct out *w, const char *key, const char *val)
{
	if (w->o < w->n)
		w->o += (size_t)snprintf(w->buf + w->o, w->n - w->o, "%s%s=%s",
					 w->o > sizeof(DESC_PREFIX) - 1 ? ";" : "", key, val);
}

static void put_int(struct out *w, const char *key, int v)
{
	char s[16];
	snprintf(s, sizeof(s), "%d", v);
	put(w, key, s);
}

/* The knobs a description places in section sec (desc / 100), in their
 * order there; section 0: the knobs added after the first descriptions. */
static void put_knobs(struct out *w, const struct llm *m, const struct layout *l, int sec)
{
	int order[LK_N], n = 0;

	/* The section's knobs by their position (a few: insertion sort). */
	for (int k = 0; k < LK_N; k++) {
		int d = layout_knobs[k].desc, i = n++;
		if (sec ? d / 100 != sec : d != 0) {
			n--;
			continue;
		}
		for (; i > 0 && layout_knobs[order[i - 1]].desc > d; i--)
			order[i] = order[i - 1];
		order[i] = k;
	}
	for (int i = 0; i < n; i++) {
		int k = order[i];
		const struct layout_knob *K = &layout_knobs[k];
		char v[2048];
		if (!(K->show == LK_SHOW_ALWAYS ||
		      (layout_applies(m, l, k) &&
		       (K->show == LK_SHOW_APPLIES || layout_get(m, l, k, 1) != K->def))))
			continue;
		if (K->kind == LK_PART) {
			/* The layers of each stage, where uneven: as placed, so that
			 * a trace says where its layers ran whatever the cost model
			 * becomes. */
			if (l->pp > 1 && layout_part_placed(l)) {
				layout_part_text(l, v, sizeof(v));
				put(w, "part", v);
			}
			continue;
		}
		layout_format(m, l, k, (K->flags & LK_NUMBER) != 0, v, sizeof(v));
		put(w, K->id, v);
	}
}

void desc_write(const struct llm *m, const struct layout *l, const char *hw_id, char *buf, size_t n)
{
	struct out w = {buf, n, 0};
	char v[32];

	if (!n)
		return;
	w.o = (size_t)snprintf(buf, n, "%s", DESC_PREFIX);
	put(&w, "name", m->name[0] ? m->name : "gpt");
	put_int(&w, "layers", m->layers);
	put_int(&w, "hidden", m->hidden);
	put_int(&w, "heads", m->heads);
	put_int(&w, "kv_heads", llm_kv_heads(m)); /* explicit, as descriptions always wrote */
	put_int(&w, "ffn", m->ffn);
	put(&w, "activation", m->gated ? "swiglu" : "gelu");
	put_int(&w, "seq", m->seq);
	put_int(&w, "vocab", m->vocab);
	put_knobs(&w, m, l, 1);
	put(&w, "hw", hw_id && hw_id[0] ? hw_id : "?");
	put_int(&w, "untied", m->untied);
	put_int(&w, "rope", m->rope);
	if (m->mtp_layers > 0) /* multi-token prediction (descriptions without: none) */
		put_int(&w, "mtp_layers", m->mtp_layers);
	put_knobs(&w, m, l, 2);
	put_knobs(&w, m, l, 3);
	/* Mixture-of-experts, only for such models (dense descriptions stay
	 * as they were). */
	if (m->experts > 0) {
		put_int(&w, "experts", m->experts);
		put_int(&w, "top_k", m->top_k);
		put_int(&w, "shared_experts", m->shared_experts);
		put_int(&w, "expert_ffn", m->expert_ffn);
		put_int(&w, "first_dense", m->first_dense);
		if (m->moe_period > 0) { /* interleaved dense and MoE layers */
			put_int(&w, "moe_period", m->moe_period);
			put_int(&w, "moe_mask", m->moe_mask);
		}
		snprintf(v, sizeof(v), "%g", m->capacity_factor);
		put(&w, "capacity_factor", v);
		put(&w, "router", m->router == LLM_ROUTER_SIGMOID ? "sigmoid" : "softmax");
		put_knobs(&w, m, l, 4);
	}
	/* Multi-head latent attention, only for such models. */
	if (llm_mla(m)) {
		put_int(&w, "q_lora_rank", m->q_lora_rank);
		put_int(&w, "kv_lora_rank", m->kv_lora_rank);
		put_int(&w, "qk_nope_head_dim", m->qk_nope_head_dim);
		put_int(&w, "qk_rope_head_dim", m->qk_rope_head_dim);
		put_int(&w, "v_head_dim", m->v_head_dim);
	}
	/* Hybrid Mamba/attention models, only for such models. */
	if (llm_hybrid(m)) {
		put(&w, "hybrid_pattern", m->pattern);
		if (llm_kind_layers(m, LLM_KIND_MAMBA) > 0) {
			put_int(&w, "ssm_heads", m->ssm_heads);
			put_int(&w, "ssm_head_dim", m->ssm_head_dim);
			put_int(&w, "ssm_state", m->ssm_state);
			put_int(&w, "ssm_groups", m->ssm_groups);
			put_int(&w, "ssm_conv", m->ssm_conv);
			put_int(&w, "ssm_chunk", m->ssm_chunk);
		}
	}
	put_knobs(&w, m, l, 5);
	put_knobs(&w, m, l, 0);
}

/* A whole number in min..max for field key: 0, or PRISM_EFORMAT. */
static int count(const char *key, const char *val, long min, long max, int *out,
		 struct prism_err *err)
{
	char *e;
	long v;
	errno = 0;
	v = strtol(val, &e, 10);
	if (e == val || *e || errno)
		return prism_err_set(err, PRISM_EFORMAT,
				     "model description: field '%s' is not a count: '%s'", key,
				     val);
	if (v < min || v > max)
		return prism_err_set(err, PRISM_EFORMAT,
				     "model description: field '%s' must be in %ld..%ld, not %ld",
				     key, min, max, v);
	*out = (int)v;
	return 0;
}

/* A number in min..max (or 0 where zero) for field key. */
static int number(const char *key, const char *val, double min, double max, int zero, double *out,
		  struct prism_err *err)
{
	char *e;
	double v = strtod(val, &e);
	if (e == val || *e || !((v >= min && v <= max) || (zero && v == 0)))
		return prism_err_set(err, PRISM_EFORMAT,
				     "model description: field '%s' is not a number in range: '%s'",
				     key, val);
	*out = v;
	return 0;
}

/* A knob's value: a count in its range, a name it knows (or its number
 * where descriptions write numbers), a number, or the layers of each
 * stage. */
static int knob(int k, const char *key, const char *val, struct llm *m, struct layout *l,
		struct prism_err *err)
{
	const struct layout_knob *K = &layout_knobs[k];
	struct prism_err e2;
	double d;
	int x = 0, rc;

	switch (K->kind) {
	case LK_PART:
		if (layout_partition_parse(val, l, &e2) || l->partition != LAYOUT_PART_GIVEN)
			return prism_err_set(err, PRISM_EFORMAT,
					     "model description: 'part' must list each stage's "
					     "layers, not '%s'",
					     val);
		return 0;
	case LK_NAME:
		if ((K->flags & LK_NUMBER) && val[0] >= '0' && val[0] <= '9') {
			if ((rc = count(key, val, (long)K->lo, (long)K->hi, &x, err)))
				return rc;
		} else if ((x = K->parse(val)) < 0) {
			return prism_err_set(err, PRISM_EFORMAT,
					     "model description: unknown %s '%s'", key, val);
		}
		layout_set(m, l, k, x);
		return 0;
	case LK_REAL:
		if ((rc = number(key, val, K->lo, K->hi, (K->flags & LK_ONE) != 0, &d, err)))
			return rc;
		layout_set(m, l, k, d);
		return 0;
	default:
		if ((rc = count(key, val, (long)K->lo, (long)K->hi, &x, err)))
			return rc;
		layout_set(m, l, k, x);
		return 0;
	}
}

/* A field of the model's that is no knob: 1 when key was one (0 or an
 * error in *rc), else 0. */
static int model_field(const char *key, const char *val, struct llm *m, char *hw_id, size_t n,
		       int *rc, struct prism_err *err)
{
	static const struct {
		const char *key;
		size_t off;
		int min, max;
	} ints[] = {
	    {"kv_heads", offsetof(struct llm, kv_heads), 0, LLM_MAX_HEADS},
	    {"vocab", offsetof(struct llm, vocab), 1, LLM_MAX_VOCAB},
	    {"untied", offsetof(struct llm, untied), 0, 1},
	    {"rope", offsetof(struct llm, rope), 0, 1},
	    {"experts", offsetof(struct llm, experts), 0, LLM_MAX_EXPERTS},
	    {"top_k", offsetof(struct llm, top_k), 1, LLM_MAX_EXPERTS},
	    {"shared_experts", offsetof(struct llm, shared_experts), 0, LLM_MAX_SHARED},
	    /* 0: the dense FFN's width (llm.h), as descriptions wrote it */
	    {"expert_ffn", offsetof(struct llm, expert_ffn), 0, LLM_MAX_FFN},
	    {"first_dense", offsetof(struct llm, first_dense), 0, LLM_MAX_LAYERS},
	    {"moe_period", offsetof(struct llm, moe_period), 0, LLM_MAX_MOE_PERIOD},
	    {"mtp_layers", offsetof(struct llm, mtp_layers), 0, LLM_MAX_MTP},
	    {"moe_mask", offsetof(struct llm, moe_mask), 0, (1 << LLM_MAX_MOE_PERIOD) - 1},
	    {"q_lora_rank", offsetof(struct llm, q_lora_rank), 0, LLM_MAX_LORA_RANK},
	    {"kv_lora_rank", offsetof(struct llm, kv_lora_rank), 0, LLM_MAX_LORA_RANK},
	    {"qk_nope_head_dim", offsetof(struct llm, qk_nope_head_dim), 0, LLM_MAX_HEAD_DIM},
	    {"qk_rope_head_dim", offsetof(struct llm, qk_rope_head_dim), 0, LLM_MAX_HEAD_DIM},
	    {"v_head_dim", offsetof(struct llm, v_head_dim), 0, LLM_MAX_HEAD_DIM},
	    {"ssm_heads", offsetof(struct llm, ssm_heads), 1, LLM_MAX_SSM_HEADS},
	    {"ssm_head_dim", offsetof(struct llm, ssm_head_dim), 1, LLM_MAX_HEAD_DIM},
	    {"ssm_state", offsetof(struct llm, ssm_state), 1, LLM_MAX_SSM_STATE},
	    {"ssm_groups", offsetof(struct llm, ssm_groups), 1, LLM_MAX_SSM_HEADS},
	    {"ssm_conv", offsetof(struct llm, ssm_conv), 1, LLM_MAX_SSM_CONV},
	    {"ssm_chunk", offsetof(struct llm, ssm_chunk), 1, LLM_MAX_SSM_CHUNK},
	};
	*rc = 0;
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if (strcmp(key, ints[i].key) == 0) {
			*rc = count(key, val, ints[i].min, ints[i].max,
				    (int *)(void *)((char *)m + ints[i].off), err);
			return 1;
		}
	if (strcmp(key, "name") == 0) {
		snprintf(m->name, sizeof(m->name), "%.63s", val);
	} else if (strcmp(key, "hybrid_pattern") == 0) {
		size_t len = strlen(val);
		if (len < 1 || len > LLM_MAX_PATTERN || strspn(val, "M*-E") != len)
			*rc = prism_err_set(
			    err, PRISM_EFORMAT,
			    "model description: hybrid_pattern '%.40s': expected 1 to "
			    "%d characters M, *, - or E",
			    val, LLM_MAX_PATTERN);
		else
			memcpy(m->pattern, val, len + 1);
	} else if (strcmp(key, "hw") == 0) {
		snprintf(hw_id, n, "%.63s", val);
	} else if (strcmp(key, "capacity_factor") == 0) {
		*rc = number(key, val, 0, LLM_MAX_CAPACITY, 1, &m->capacity_factor, err);
	} else if (strcmp(key, "router") == 0) {
		if (strcmp(val, "softmax") != 0 && strcmp(val, "sigmoid") != 0)
			*rc = prism_err_set(err, PRISM_EFORMAT,
					    "model description: unknown router '%s'", val);
		else
			m->router = strcmp(val, "sigmoid") == 0;
	} else if (strcmp(key, "activation") == 0) {
		if (strcmp(val, "swiglu") != 0 && strcmp(val, "gelu") != 0)
			*rc = prism_err_set(err, PRISM_EFORMAT,
					    "model description: unknown activation '%s'", val);
		else
			m->gated = strcmp(val, "swiglu") == 0;
	} else {
		return 0;
	}
	return 1;
}

int desc_parse(const char *s, struct llm *m, struct layout *l, char *hw_id, size_t n,
	       struct prism_err *err)
{
	const char *p;

	if (strncmp(s, DESC_PREFIX, sizeof(DESC_PREFIX) - 1) != 0)
		return prism_err_set(err, PRISM_EFORMAT,
				     "model description: does not start with %s", DESC_PREFIX);
	p = s + sizeof(DESC_PREFIX) - 1;
	while (*p) {
		const char *eq = strchr(p, '='), *end = strchr(p, ';');
		char key[32], val[2048];
		size_t kl, vl;
		int k, rc = 0;
		if (!end)
			end = p + strlen(p);
		if (!eq || eq > end || (size_t)(eq - p) >= sizeof(key))
			return prism_err_set(err, PRISM_EFORMAT,
					     "model description: bad field '%.*s'", (int)(end - p),
					     p);
		kl = (size_t)(eq - p);
		vl = (size_t)(end - eq - 1);
		if (vl >= sizeof(val))
			vl = sizeof(val) - 1;
		memcpy(key, p, kl);
		key[kl] = '\0';
		memcpy(val, eq + 1, vl);
		val[vl] = '\0';
		if (model_field(key, val, m, hw_id, n, &rc, err)) {
			if (rc)
				return rc;
		} else if ((k = strcmp(key, "part") == 0 ? LK_partition : layout_knob_find(key)) >=
			       0 &&
			   (k != LK_partition || strcmp(key, "part") == 0)) {
			if ((rc = knob(k, key, val, m, l, err)))
				return rc;
		} else if (strcmp(key, "cp_allgather") == 0 && strcmp(val, "1") == 0) {
			/* The flag cp_comm replaced (descriptions written before). */
			l->cp_comm = LAYOUT_CP_ALLGATHER;
		}
		/* Other keys: a newer writer's, skipped. */
		p = *end ? end + 1 : end;
	}
	llm_kv_settle(m);
	return 0;
}
