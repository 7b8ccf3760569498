/* frame.c - Hugging Face and Megatron-LM files in, framework launch options out. */
#include "frame.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hw.h"
#include "kjson.h"

static const char *const frame_names[FRAME_N] = {"megatron", "bridge", "torchtitan"};

const char *frame_name(int fw)
{
	return fw >= 0 && fw < FRAME_N ? frame_names[fw] : "?";
}

int frame_parse(const char *s)
{
	for (int i = 0; i < FRAME_N; i++)
		if (strcmp(s, frame_names[i]) == 0)
			return i;
	return -1;
}

static void warn_add(struct frame_extra *x, const char *fmt, ...) PRISM_PRINTF(2, 3);
static void warn_add(struct frame_extra *x, const char *fmt, ...)
{
	size_t k = strlen(x->warn);
	va_list ap;
	if (k + 3 >= sizeof(x->warn))
		return;
	if (k) {
		memcpy(x->warn + k, "; ", 3);
		k += 2;
	}
	va_start(ap, fmt);
	vsnprintf(x->warn + k, sizeof(x->warn) - k, fmt, ap);
	va_end(ap);
}

int frame_sniff(const char *path)
{
	char b[512];
	size_t n, i = 0;
	FILE *f = fopen(path, "rb");
	int kind = FRAME_FILE_CFG;
	if (!f)
		return FRAME_FILE_CFG;
	n = fread(b, 1, sizeof(b) - 1, f);
	b[n] = '\0';
	/* past white space and '#' comment lines (a script's first lines) */
	for (;;) {
		while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
			i++;
		if (i < n && b[i] == '#' && !(i + 1 < n && b[i + 1] == '!' && i > 0)) {
			while (i < n && b[i] != '\n')
				i++;
			continue;
		}
		break;
	}
	if (i < n && b[i] == '{') {
		/* A config.json, not a trace: small, with a "model_type" and no
		 * "traceEvents".  Scanned in blocks (nothing allocated), each
		 * starting with the last bytes of the one before, so that no
		 * key is missed across a border. */
		char blk[4096 + 16];
		size_t total = n, keep = n < 16 ? n : 16, got;
		int type = memmem(b, n, "\"model_type\"", 12) != NULL;
		int trace = memmem(b, n, "\"traceEvents\"", 13) != NULL;
		memcpy(blk, b + n - keep, keep);
		while (total <= FRAME_MAX_FILE &&
		       (got = fread(blk + keep, 1, sizeof(blk) - keep, f)) > 0) {
			total += got;
			type |= memmem(blk, keep + got, "\"model_type\"", 12) != NULL;
			trace |= memmem(blk, keep + got, "\"traceEvents\"", 13) != NULL;
			got += keep;
			keep = got < 16 ? got : 16;
			memmove(blk, blk + got - keep, keep);
		}
		if (total <= FRAME_MAX_FILE && type && !trace)
			kind = FRAME_FILE_HF;
	} else if (i + 1 < n && b[i] == '-' && b[i + 1] == '-') {
		/* Megatron-LM arguments: an option first, or a launcher line (or a
		 * comment) and then " --" options.  A libconfig file has none. */
		kind = FRAME_FILE_MEGATRON;
	} else if ((strstr(b + i, "torchrun") || strstr(b + i, "pretrain_") ||
		    strstr(b + i, "\\\n")) &&
		   strstr(b + i, " --")) {
		kind = FRAME_FILE_MEGATRON;
	}
	fclose(f);
	return kind;
}

int frame_read(const char *path, char **buf, size_t *len, struct prism_err *err)
{
	FILE *f = fopen(path, "rb");
	char *b;
	size_t n;

	*buf = NULL;
	*len = 0;
	if (!f)
		return prism_err_set(err, PRISM_EIO, "%s: %s", path, strerror(errno));
	b = prism_malloc(FRAME_MAX_FILE + 1 + KJSON_PADDING);
	if (!b) {
		fclose(f);
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	}
	n = fread(b, 1, FRAME_MAX_FILE + 1, f);
	if (ferror(f)) {
		fclose(f);
		free(b);
		return prism_err_set(err, PRISM_EIO, "%s: read failed", path);
	}
	fclose(f);
	if (n > FRAME_MAX_FILE) {
		free(b);
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: larger than %d bytes: not a model's configuration", path,
				     FRAME_MAX_FILE);
	}
	memset(b + n, 0, KJSON_PADDING + 1);
	*buf = b;
	*len = n;
	return 0;
}

/* ---- Hugging Face config.json ---------------------------------------- */

#define HF_MAX_MEMBERS 256

struct hf_member {
	char key[64];
	struct kjson_val v;
	char str[64];	      /* a string value, copied (v.s points here) */
	struct kjson_str raw; /* a string value whole, in the parsed text */
	int used;
};

struct hf_doc {
	struct hf_member mem[HF_MAX_MEMBERS];
	int n;
	int truncated;
};

static int hf_collect(void *ctx, struct kjson_str key, const struct kjson_val *v)
{
	struct hf_doc *d = ctx;
	struct hf_member *e;
	if (d->n >= HF_MAX_MEMBERS) {
		d->truncated = 1;
		return 0;
	}
	e = &d->mem[d->n++];
	memset(e, 0, sizeof(*e));
	snprintf(e->key, sizeof(e->key), "%.*s", (int)(key.n < 63 ? key.n : 63), key.p);
	e->v = *v;
	if (v->type == KJSON_STR) {
		e->raw = v->s;
		snprintf(e->str, sizeof(e->str), "%.*s", (int)(v->s.n < 63 ? v->s.n : 63), v->s.p);
		e->v.s.p = e->str;
		e->v.s.n = strlen(e->str);
	}
	return 0;
}

static int hf_parse_doc(struct kjson_parser *p, const char *path, const char *where,
			const char *buf, size_t len, struct hf_doc *d, struct prism_err *err)
{
	struct kjson_fail fail;
	memset(d, 0, sizeof(*d));
	if (kjson_parse_object(p, buf, len, hf_collect, d, &fail)) {
		if (fail.nomem)
			return prism_err_set(err, PRISM_ENOMEM, "out of memory");
		return prism_err_set(err, PRISM_EFORMAT, "%s:%s byte %llu%s%s: %s", path, where,
				     (unsigned long long)fail.offset, fail.field[0] ? ": " : "",
				     fail.field, fail.what);
	}
	return 0;
}

static struct hf_member *hf_find(struct hf_doc *d, const char *key)
{
	for (int i = 0; i < d->n; i++)
		if (strcmp(d->mem[i].key, key) == 0) {
			d->mem[i].used = 1;
			return &d->mem[i];
		}
	return NULL;
}

/* Integer field key in lo..hi into *out: 0 when absent or null (out
 * untouched), 1 when read, or PRISM_EFORMAT (negative) with err set. */
static int hf_int(struct hf_doc *d, const char *path, const char *key, long lo, long hi, int *out,
		  struct prism_err *err)
{
	struct hf_member *e = hf_find(d, key);
	if (!e || e->v.type == KJSON_NULL)
		return 0;
	if (e->v.type != KJSON_INT || e->v.i < lo || e->v.i > hi)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: \"%s\": expected a whole number in %ld..%ld", path, key,
				     lo, hi);
	*out = (int)e->v.i;
	return 1;
}

static int hf_need(struct hf_doc *d, const char *path, const char *key, long lo, long hi, int *out,
		   int def, struct prism_err *err)
{
	int rc = hf_int(d, path, key, lo, hi, out, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		if (def > 0) {
			*out = def;
			return 0;
		}
		return prism_err_set(err, PRISM_EFORMAT, "%s: missing \"%s\"", path, key);
	}
	return 0;
}

/* Integer field key in lo..hi into *out, def where it is absent or null
 * (0: none); 0, or PRISM_EFORMAT (negative) with err set. */
static int hf_opt(struct hf_doc *d, const char *path, const char *key, long lo, long hi, int def,
		  int *out, struct prism_err *err)
{
	int rc = hf_int(d, path, key, lo, hi, out, err);
	if (rc == 0)
		*out = def;
	return rc < 0 ? rc : 0;
}

/* The routed experts (under key experts), the experts a token goes to
 * and their width, which Qwen3-MoE and DeepSeek name alike: all three
 * needed. */
static int hf_experts(struct hf_doc *d, const char *path, const char *experts, struct llm *m,
		      struct prism_err *err)
{
	int rc;
	if ((rc = hf_need(d, path, experts, 1, LLM_MAX_EXPERTS, &m->experts, 0, err)) ||
	    (rc = hf_need(d, path, "num_experts_per_tok", 1, m->experts, &m->top_k, 0, err)))
		return rc;
	return hf_need(d, path, "moe_intermediate_size", 1, LLM_MAX_FFN, &m->expert_ffn, 0, err);
}

/* The families prism imports, each with what its transformers
 * configuration class defaults to where a published config.json leaves a
 * field out (configuration_*.py, __init__). */
enum hf_fam {
	HF_LLAMA,
	HF_MISTRAL,
	HF_MIXTRAL,
	HF_QWEN2,
	HF_QWEN3,
	HF_QWEN3_MOE,
	HF_DEEPSEEK_V2,
	HF_DEEPSEEK_V3,
	HF_GPT_OSS,
	HF_GEMMA2,
	HF_GEMMA3,
	HF_PHI3,
	HF_NEMOTRON_H
};

static const struct hf_family {
	const char *type;
	int fam;
	int tied; /* tie_word_embeddings' default */
} hf_families[] = {
    {"llama", HF_LLAMA, 0},
    {"mistral", HF_MISTRAL, 0},
    {"mixtral", HF_MIXTRAL, 0},
    {"qwen2", HF_QWEN2, 0},
    {"qwen3", HF_QWEN3, 0},
    {"qwen3_moe", HF_QWEN3_MOE, 0},
    {"deepseek_v2", HF_DEEPSEEK_V2, 0},
    {"deepseek_v3", HF_DEEPSEEK_V3, 0},
    {"gpt_oss", HF_GPT_OSS, 0},
    {"gemma2", HF_GEMMA2, 1},
    {"gemma3_text", HF_GEMMA3, 1},
    {"phi3", HF_PHI3, 0},
    {"nemotron_h", HF_NEMOTRON_H, 0},
};

/* Fields that change neither the time nor the memory of a training step
 * (token ids, initialisation, norms' epsilon, RoPE's base, dropout and
 * auxiliary-loss coefficients, inference settings) or that prism reads
 * elsewhere. */
static const char *const hf_inert[] = {
    "architectures",
    "model_type",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "initializer_range",
    "rms_norm_eps",
    "layer_norm_eps",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "use_cache",
    "attention_dropout",
    "hidden_dropout",
    "embd_pdrop",
    "resid_pdrop",
    "pretraining_tp",
    "router_aux_loss_coef",
    "output_router_logits",
    "router_jitter_noise",
    "norm_topk_prob",
    "routed_scaling_factor",
    "aux_loss_alpha",
    "seq_aux",
    "ep_size",
    "auto_map",
    "_name_or_path",
    "hidden_act",
    "hidden_activation",
    "mlp_bias",
    "attention_bias",
    "query_pre_attn_scalar",
    "final_logit_softcapping",
    "cache_implementation",
    "rope_local_base_freq",
    "original_max_position_embeddings",
    "partial_rotary_factor",
    "swiglu_limit",
    "max_window_layers",
    "tie_word_embeddings",
    "bos_token",
    "eos_token",
    "use_qk_norm",
    "qk_layernorm",
    "sliding_window_pattern",
    "layer_types",
    "use_sliding_window",
    "sliding_window",
    "head_dim",
    "max_position_embeddings",
    "num_nextn_predict_layers",
    "moe_layer_freq",
    "topk_method",
    "scoring_func",
    "num_experts_per_tok",
    "experts_per_token",
    "attn_implementation",
    "image_token_index",
    "boi_token_index",
    "eoi_token_index",
    "mm_tokens_per_image",
    "initializer_factor",
    "lm_head_bias",
    "decoder_sparse_step",
    "mlp_only_layers",
    "chat_template",
    "initial_context_length",
    "use_mrope",
    "sliding_window_size",
    /* NemotronHConfig's (configuration_nemotron_h.py): the mixer's
     * activation, time-step initialisation and limits, its biases (the
     * convolution's is counted, the projections have none), norms'
     * epsilon and residual dtype, inference settings */
    "mamba_hidden_act",
    "time_step_min",
    "time_step_max",
    "time_step_floor",
    "time_step_limit",
    "time_step_rank",
    "use_conv_bias",
    "mamba_proj_bias",
    "use_bias",
    "residual_in_fp32",
    "rescale_prenorm_residual",
    "layer_norm_epsilon",
    "num_logits_to_keep",
    "use_mamba_kernels",
};

static int hf_is_inert(const char *key)
{
	for (size_t i = 0; i < sizeof(hf_inert) / sizeof(hf_inert[0]); i++)
		if (strcmp(hf_inert[i], key) == 0)
			return 1;
	return 0;
}

/* The fields of d nobody read that may change the model, "a, b, c". */
static void hf_unread(const struct hf_doc *d, char *buf, size_t n)
{
	size_t k = 0;
	buf[0] = '\0';
	for (int i = 0; i < d->n && k + 2 < n; i++)
		if (!d->mem[i].used && !hf_is_inert(d->mem[i].key))
			k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", d->mem[i].key);
}

/* layer_types ["sliding_attention", "full_attention", ...]: every K-th
 * layer full (global_every K), none (0), or -1 when the pattern is not
 * one prism's window/global_every expresses. */
static int hf_layer_types(const struct kjson_str *raw, int layers, int *any_sliding)
{
	const char *p = raw->p, *end = raw->p + raw->n;
	int i = 0, first_full = -1, bad = 0;
	*any_sliding = 0;
	while (p < end && i < layers) {
		const char *q = memchr(p, '"', (size_t)(end - p)), *r;
		if (!q)
			break;
		r = memchr(q + 1, '"', (size_t)(end - q - 1));
		if (!r)
			break;
		if ((size_t)(r - q - 1) == strlen("full_attention") &&
		    memcmp(q + 1, "full_attention", 14) == 0) {
			if (first_full < 0)
				first_full = i;
			if ((i + 1) % (first_full + 1) != 0)
				bad = 1;
		} else if ((size_t)(r - q - 1) == strlen("sliding_attention") &&
			   memcmp(q + 1, "sliding_attention", 17) == 0) {
			*any_sliding = 1;
			if (first_full >= 0 && (i + 1) % (first_full + 1) == 0)
				bad = 1;
		} else {
			bad = 1;
		}
		i++;
		p = r + 1;
	}
	if (bad || i != layers)
		return -1;
	return first_full < 0 ? 0 : first_full + 1;
}

/* The model of one config object (a Gemma 3 multimodal config's
 * text_config is another). */
/* A family's sliding windows (window, global_every): sliding_window,
 * Qwen's use_sliding_window, layer_types or Gemma's patterns.  0, or an
 * error. */
static int hf_windows(struct hf_doc *d, const char *path, int fam, struct llm *m,
		      struct frame_extra *x, struct prism_err *err)
{
	struct hf_member *e;
	int rc, v, sliding = 0, gemma3 = fam == HF_GEMMA3;

	if ((rc = hf_opt(d, path, "sliding_window", 1, LLM_MAX_WINDOW,
			 gemma3 || fam == HF_GEMMA2 ? 4096 : 0, &v, err)))
		return rc;
	if (fam == HF_QWEN2 || fam == HF_QWEN3 || fam == HF_QWEN3_MOE) {
		/* Qwen: the window only with use_sliding_window, in the layers
		 * from max_window_layers on. */
		int mwl = 0;
		e = hf_find(d, "use_sliding_window");
		if (!e || e->v.type != KJSON_BOOL || !e->v.i) {
			v = 0;
		} else if (hf_int(d, path, "max_window_layers", 0, LLM_MAX_LAYERS, &mwl, err) > 0 &&
			   mwl > 0) {
			warn_add(x,
				 "use_sliding_window with max_window_layers %d: a window in the "
				 "layers from %d on only is not modelled (no window taken)",
				 mwl, mwl);
			v = 0;
		}
	}
	if (v > 0) {
		int K = 0;
		m->window = v;
		if ((e = hf_find(d, "layer_types")) && e->v.type == KJSON_ARRAY) {
			K = hf_layer_types(&e->v.s, m->layers, &sliding);
			if (K < 0) {
				rc = prism_err_set(err, PRISM_EFORMAT,
						   "%s: \"layer_types\": not %d layers of "
						   "\"sliding_attention\" with every K-th "
						   "\"full_attention\" (what prism's window and "
						   "global_every express)",
						   path, m->layers);
				return rc;
			}
			if (!sliding)
				m->window = 0;
		} else if (gemma3) {
			K = 6; /* Gemma3TextConfig's sliding_window_pattern */
			if (hf_int(d, path, "sliding_window_pattern", 1, LLM_MAX_LAYERS, &K, err) <
			    0) {
				rc = err->code;
				return rc;
			}
		} else if (fam == HF_GEMMA2) {
			K = 2; /* modeling_gemma2: even layers slide, odd ones attend whole */
		}
		m->global_every = m->window ? K : 0;
		if (m->window >= m->seq && m->global_every == 0)
			m->window = 0; /* a window as long as the sequence is none */
	}
	return 0;
}

/* A family's mixture of experts (and DeepSeek's multi-head latent
 * attention and multi-token prediction).  0, or an error. */
static int hf_moe(struct hf_doc *d, const char *path, int fam, struct llm *m, struct frame_extra *x,
		  struct prism_err *err)
{
	struct hf_member *e;
	int rc = 0;

	switch (fam) {
	case HF_MIXTRAL:
	case HF_GPT_OSS:
		if ((rc = hf_need(d, path, "num_local_experts", 1, LLM_MAX_EXPERTS, &m->experts, 0,
				  err)))
			return rc;
		if ((rc = hf_int(d, path, "num_experts_per_tok", 1, m->experts, &m->top_k, err)) <
			0 ||
		    (rc == 0 && (rc = hf_int(d, path, "experts_per_token", 1, m->experts, &m->top_k,
					     err)) < 0)) {
			rc = err->code;
			return rc;
		}
		rc = 0;
		if (!m->top_k) {
			rc = prism_err_set(err, PRISM_EFORMAT,
					   "%s: missing \"num_experts_per_tok\"", path);
			return rc;
		}
		m->expert_ffn = m->ffn;
		break;
	case HF_QWEN3_MOE: {
		int step = 1;
		if ((rc = hf_experts(d, path, "num_experts", m, err)) ||
		    (rc = hf_opt(d, path, "decoder_sparse_step", 1, LLM_MAX_LAYERS, 1, &step, err)))
			return rc;
		if (step != 1)
			warn_add(x,
				 "decoder_sparse_step %d: a mixture-of-experts layer every %d-th "
				 "is not modelled (every layer taken as one)",
				 step, step);
		if ((e = hf_find(d, "mlp_only_layers")) && e->v.type == KJSON_ARRAY &&
		    memchr(e->v.s.p, ',', e->v.s.n) == NULL) {
			/* "[]" or one layer: a list of one is still not modelled */
			const char *c = e->v.s.p;
			size_t k = 1;
			while (k < e->v.s.n && (c[k] == ' ' || c[k] == '\n'))
				k++;
			if (k < e->v.s.n && c[k] != ']')
				warn_add(x, "mlp_only_layers: dense layers among the "
					    "mixture-of-experts ones are not modelled");
		} else if (e && e->v.type == KJSON_ARRAY) {
			warn_add(x, "mlp_only_layers: dense layers among the mixture-of-experts "
				    "ones are not modelled");
		}
		break;
	}
	case HF_DEEPSEEK_V2:
	case HF_DEEPSEEK_V3: {
		int freq = 1, groups = 0;
		if ((rc = hf_experts(d, path, "n_routed_experts", m, err)))
			return rc;
		if (hf_int(d, path, "n_shared_experts", 0, LLM_MAX_SHARED, &m->shared_experts,
			   err) < 0 ||
		    hf_int(d, path, "first_k_dense_replace", 0, m->layers - 1, &m->first_dense,
			   err) < 0 ||
		    hf_int(d, path, "moe_layer_freq", 1, LLM_MAX_LAYERS, &freq, err) < 0 ||
		    hf_int(d, path, "num_nextn_predict_layers", 0, LLM_MAX_LAYERS, &x->mtp_layers,
			   err) < 0 ||
		    hf_int(d, path, "n_group", 0, LLM_MAX_EXPERTS, &groups, err) < 0) {
			rc = err->code;
			return rc;
		}
		/* modeling_deepseek.py: layer i (from first_k_dense_replace)
		 * sparse where i % moe_layer_freq == 0, llm.h's period and mask. */
		if (freq > 1 && freq <= LLM_MAX_MOE_PERIOD)
			m->moe_period = freq, m->moe_mask = 1;
		else if (freq > 1)
			warn_add(x,
				 "moe_layer_freq %d: a mixture-of-experts layer every %d-th is "
				 "not modelled beyond %d (every layer from first_k_dense_replace "
				 "on taken as one)",
				 freq, freq, LLM_MAX_MOE_PERIOD);
		if (groups > 1)
			warn_add(x,
				 "n_group %d, topk_group: group-limited routing (each token's "
				 "experts on few devices) is not modelled: routing is uniform",
				 groups);
		hf_find(d, "topk_group");
		if (x->mtp_layers > LLM_MAX_MTP)
			warn_add(x,
				 "num_nextn_predict_layers %d: more multi-token prediction layers "
				 "than %d are not modelled (none taken)",
				 x->mtp_layers, LLM_MAX_MTP);
		else
			m->mtp_layers = x->mtp_layers;
		if ((e = hf_find(d, "scoring_func")) && e->v.type == KJSON_STR &&
		    strcmp(e->str, "sigmoid") == 0)
			m->router = LLM_ROUTER_SIGMOID;
		/* Multi-head latent attention. */
		if ((rc = hf_need(d, path, "kv_lora_rank", 1, LLM_MAX_LORA_RANK, &m->kv_lora_rank,
				  0, err)) ||
		    (rc = hf_need(d, path, "qk_nope_head_dim", 0, LLM_MAX_HEAD_DIM,
				  &m->qk_nope_head_dim, 0, err)) ||
		    (rc = hf_need(d, path, "qk_rope_head_dim", 0, LLM_MAX_HEAD_DIM,
				  &m->qk_rope_head_dim, 0, err)) ||
		    (rc = hf_need(d, path, "v_head_dim", 1, LLM_MAX_HEAD_DIM, &m->v_head_dim, 0,
				  err)))
			return rc;
		if (hf_int(d, path, "q_lora_rank", 1, LLM_MAX_LORA_RANK, &m->q_lora_rank, err) <
		    0) {
			rc = err->code;
			return rc;
		}
		m->kv_heads = 0; /* MLA: every head its own K and V */
		m->head_dim = 0;
		break;
	}
	default:
		break;
	}
	return 0;
}

/* NemotronH (configuration_nemotron_h.py): hybrid_override_pattern, one
 * character a layer of num_hidden_layers; the Mamba-2 mixer's
 * mamba_num_heads, mamba_head_dim, ssm_state_size, n_groups, conv_kernel
 * and chunk_size (expand, where given, must agree: heads x head_dim =
 * expand x hidden); the MLP's mlp_hidden_act ("relu2": squared ReLU, one
 * input, priced as GeLU's one elementwise pass). */
static int hf_hybrid(struct hf_doc *d, const char *path, int fam, struct llm *m,
		     struct frame_extra *x, struct prism_err *err)
{
	struct hf_member *e;
	int rc, expand = 0, v = 0;
	(void)x;
	if (fam != HF_NEMOTRON_H)
		return 0;
	e = hf_find(d, "hybrid_override_pattern");
	if (!e || e->v.type != KJSON_STR || e->raw.n < 1 || e->raw.n > LLM_MAX_PATTERN)
		return prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s: \"hybrid_override_pattern\": expected a string of 1 to %d "
		    "layers (M, *, -)",
		    path, LLM_MAX_PATTERN);
	for (size_t i = 0; i < e->raw.n; i++)
		if (llm_char_kind((unsigned char)e->raw.p[i]) < 0 || e->raw.p[i] == 'E')
			return prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s: \"hybrid_override_pattern\" layer %zu: '%c' is not M (Mamba), * "
			    "(attention) or - (MLP)%s",
			    path, i, e->raw.p[i],
			    e->raw.p[i] == 'E' ? "; its mixture-of-experts layers are not imported "
						 "from a config.json (a model file's are modelled)"
					       : "");
	if (e->raw.n != (size_t)m->layers)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: \"num_hidden_layers\" %d differs from the %zu layers of "
				     "\"hybrid_override_pattern\"",
				     path, m->layers, e->raw.n);
	memcpy(m->pattern, e->raw.p, e->raw.n);
	m->pattern[e->raw.n] = '\0';
	/* The attention's head width by NemotronHConfig's name. */
	if ((rc = hf_int(d, path, "attention_head_dim", 1, LLM_MAX_HEAD_DIM, &v, err)) < 0)
		return rc;
	if (rc > 0 && (m->hidden % m->heads || v != m->hidden / m->heads))
		m->head_dim = v;
	m->gated = 0; /* NemotronHConfig's default: relu2 */
	if ((e = hf_find(d, "mlp_hidden_act")) && e->v.type == KJSON_STR)
		m->gated = strstr(e->str, "glu") != NULL;
	if (!llm_kind_layers(m, LLM_KIND_MAMBA))
		return 0;
	if ((rc = hf_need(d, path, "mamba_head_dim", 1, LLM_MAX_HEAD_DIM, &m->ssm_head_dim, 64,
			  err)) ||
	    (rc = hf_need(d, path, "mamba_num_heads", 1, LLM_MAX_SSM_HEADS, &m->ssm_heads,
			  2 * m->hidden / m->ssm_head_dim > 0 ? 2 * m->hidden / m->ssm_head_dim : 1,
			  err)) ||
	    (rc = hf_need(d, path, "ssm_state_size", 1, LLM_MAX_SSM_STATE, &m->ssm_state, 128,
			  err)) ||
	    (rc = hf_need(d, path, "n_groups", 1, LLM_MAX_SSM_HEADS, &m->ssm_groups, 8, err)) ||
	    (rc = hf_need(d, path, "conv_kernel", 1, LLM_MAX_SSM_CONV, &m->ssm_conv, 4, err)) ||
	    (rc = hf_need(d, path, "chunk_size", 1, LLM_MAX_SSM_CHUNK, &m->ssm_chunk, 128, err)))
		return rc;
	if ((rc = hf_int(d, path, "expand", 1, 64, &expand, err)) < 0)
		return rc;
	if (expand > 0 && (double)m->ssm_heads * m->ssm_head_dim != (double)expand * m->hidden)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: \"mamba_num_heads\" %d x \"mamba_head_dim\" %d is not "
				     "\"expand\" %d x \"hidden_size\" %d",
				     path, m->ssm_heads, m->ssm_head_dim, expand, m->hidden);
	if (m->ssm_heads % m->ssm_groups)
		return prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s: \"mamba_num_heads\" %d is not divisible by \"n_groups\" %d", path,
		    m->ssm_heads, m->ssm_groups);
	return 0;
}

static int hf_model(struct kjson_parser *kp, const char *path, const char *buf, size_t len,
		    const char *type_outer, struct llm *m, struct frame_extra *x,
		    struct prism_err *err)
{
	struct hf_doc *d = prism_calloc(1, sizeof(*d));
	struct hf_member *e;
	const struct hf_family *F = NULL;
	char type[64] = "", unread[512];
	int rc, fam, v, gemma3 = 0;

	if (!d)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	if ((rc = hf_parse_doc(kp, path, "", buf, len, d, err)))
		goto out;
	e = hf_find(d, "model_type");
	if (e && e->v.type == KJSON_STR)
		snprintf(type, sizeof(type), "%s", e->str);
	else if (type_outer)
		snprintf(type, sizeof(type), "%s", type_outer);
	/* (one level: a text_config is read as gemma3_text, never again as
	 * gemma3, so a config nested in itself cannot recurse) */
	if (!type_outer && strcmp(type, "gemma3") == 0 && (e = hf_find(d, "text_config")) &&
	    e->v.type == KJSON_OBJECT) {
		/* Gemma 3 4B..27B: a vision tower and a language model; prism
		 * models the language model. */
		const char *t = e->v.s.p;
		size_t tn = e->v.s.n;
		struct hf_member *vc = hf_find(d, "vision_config");
		if (vc)
			warn_add(x, "vision_config: the vision tower is not modelled (the text "
				    "model only)");
		{
			/* the outer document's vocabulary, if any, is the text
			 * model's */
			int outer_vocab = 0;
			rc = hf_int(d, path, "vocab_size", 1, LLM_MAX_VOCAB, &outer_vocab, err);
			if (rc < 0) {
				rc = err->code;
				goto out;
			}
			rc = hf_model(kp, path, t, tn, "gemma3_text", m, x, err);
			if (!rc && outer_vocab > 0)
				m->vocab = outer_vocab;
		}
		goto out;
	}
	for (size_t i = 0; i < sizeof(hf_families) / sizeof(hf_families[0]); i++)
		if (strcmp(hf_families[i].type, type) == 0)
			F = &hf_families[i];
	if (!F) {
		hf_unread(d, unread, sizeof(unread));
		rc = prism_err_set(
		    err, PRISM_EFORMAT,
		    "%s: model_type \"%s\" is not one prism imports (llama, "
		    "mistral, mixtral, qwen2, qwen3, qwen3_moe, deepseek_v2, "
		    "deepseek_v3, gpt_oss, gemma2, gemma3, gemma3_text, phi3, nemotron_h); "
		    "fields it could not map: %s",
		    path, type[0] ? type : "(none)", unread[0] ? unread : "(none)");
		goto out;
	}
	fam = F->fam;
	gemma3 = fam == HF_GEMMA3;
	memset(m, 0, sizeof(*m));
	if ((e = hf_find(d, "_name_or_path")) && e->v.type == KJSON_STR && e->str[0]) {
		const char *slash = strrchr(e->str, '/');
		snprintf(m->name, sizeof(m->name), "%s", slash ? slash + 1 : e->str);
	}
	m->gated = 1; /* every family's MLP is gated (SwiGLU, GeGLU) */
	m->rope = 1;
	m->untied = !F->tied;
	/* Gemma3TextConfig's defaults (the 1B's text_config leaves most out). */
	if ((rc = hf_need(d, path, "num_hidden_layers", 1, LLM_MAX_LAYERS, &m->layers,
			  gemma3 ? 26 : 0, err)) ||
	    (rc = hf_need(d, path, "hidden_size", 1, LLM_MAX_HIDDEN, &m->hidden, gemma3 ? 2304 : 0,
			  err)) ||
	    (rc = hf_need(d, path, "num_attention_heads", 1, LLM_MAX_HEADS, &m->heads,
			  gemma3 ? 8 : 0, err)) ||
	    (rc = hf_need(d, path, "vocab_size", 1, LLM_MAX_VOCAB, &m->vocab, gemma3 ? 262208 : 0,
			  err)) ||
	    (rc = hf_need(d, path, "intermediate_size", 1, LLM_MAX_FFN, &m->ffn, gemma3 ? 9216 : 0,
			  err)))
		goto out;
	if ((rc = hf_need(d, path, "num_key_value_heads", 1, LLM_MAX_HEADS, &m->kv_heads,
			  gemma3 ? 4 : m->heads, err)))
		goto out;
	if ((rc = hf_opt(d, path, "head_dim", 1, LLM_MAX_HEAD_DIM,
			 gemma3 || fam == HF_GEMMA2 ? 256 : 0, &v, err)))
		goto out;
	if (v > 0 && (m->hidden % m->heads || v != m->hidden / m->heads))
		m->head_dim = v;
	if ((e = hf_find(d, "tie_word_embeddings")) && e->v.type == KJSON_BOOL)
		m->untied = !e->v.i;
	/* The sequence: the context the model was pre-trained at, before
	 * RoPE scaling extended it (rope_scaling's
	 * original_max_position_embeddings: Llama 3.1's 8192, DeepSeek-V3's
	 * 4096), else max_position_embeddings. */
	v = 0;
	if ((e = hf_find(d, "rope_scaling")) && e->v.type == KJSON_OBJECT) {
		struct hf_doc *r = prism_calloc(1, sizeof(*r));
		if (!r) {
			rc = prism_err_set(err, PRISM_ENOMEM, "out of memory");
			goto out;
		}
		if (!(rc = hf_parse_doc(kp, path, " rope_scaling", e->v.s.p, e->v.s.n, r, err)))
			rc = hf_int(r, path, "original_max_position_embeddings", 1, LLM_MAX_SEQ, &v,
				    err);
		free(r);
		if (rc < 0) {
			rc = err->code;
			goto out;
		}
		if (rc > 0 && v > 0)
			m->seq = v;
		rc = 0;
	}
	if (!m->seq && (rc = hf_need(d, path, "max_position_embeddings", 1, LLM_MAX_SEQ, &m->seq,
				     gemma3 ? 131072 : 0, err)))
		goto out;
	if ((rc = hf_windows(d, path, fam, m, x, err)) || (rc = hf_moe(d, path, fam, m, x, err)) ||
	    (rc = hf_hybrid(d, path, fam, m, x, err)))
		goto out;
	if (m->heads % llm_kv_heads(m)) {
		rc = prism_err_set(err, PRISM_EFORMAT,
				   "%s: \"num_attention_heads\" (%d) must be divisible by "
				   "\"num_key_value_heads\" (%d)",
				   path, m->heads, m->kv_heads);
		goto out;
	}
	llm_kv_settle(m);
	if (!m->head_dim && !llm_mla(m) && m->hidden % m->heads) {
		rc = prism_err_set(err, PRISM_EFORMAT,
				   "%s: \"hidden_size\" (%d) is not divisible by "
				   "\"num_attention_heads\" (%d): give \"head_dim\"",
				   path, m->hidden, m->heads);
		goto out;
	}
	if ((e = hf_find(d, "attn_logit_softcapping")) && e->v.type != KJSON_NULL)
		warn_add(x, "attn_logit_softcapping: the attention's soft cap is not modelled "
			    "(flash attention timed without it)");
	if ((e = hf_find(d, "quantization_config")))
		warn_add(x, "quantization_config: the weights' quantisation is for inference; "
			    "training is modelled at the layout's dtype");
	hf_unread(d, unread, sizeof(unread));
	if (unread[0])
		warn_add(x, "not modelled (ignored): %s", unread);
	if (d->truncated)
		warn_add(x, "more than %d fields: those after are not read", HF_MAX_MEMBERS);
out:
	free(d);
	return rc;
}

int frame_hf_parse(const char *path, const char *buf, size_t len, struct llm *m,
		   struct frame_extra *x, struct prism_err *err)
{
	struct kjson_parser *kp = kjson_new();
	int rc;
	if (!kp)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	memset(x, 0, sizeof(*x));
	rc = hf_model(kp, path, buf, len, NULL, m, x, err);
	kjson_free(kp);
	if (!rc && !m->name[0]) {
		/* the file's name; DIR/config.json: the folder's (a checkpoint's) */
		const char *b = strrchr(path, '/'), *stem = b ? b + 1 : path;
		size_t n = strlen(stem);
		if (strcmp(stem, "config.json") == 0 && b) {
			const char *a = b;
			while (a > path && a[-1] != '/')
				a--;
			stem = a;
			n = (size_t)(b - a);
		} else if (n > 5 && strcmp(stem + n - 5, ".json") == 0) {
			n -= 5;
		}
		snprintf(m->name, sizeof(m->name), "%.*s", (int)(n < 63 ? n : 63), stem);
	}
	return rc;
}

/* ---- the frameworks' option names, keyed by knob ---------------------- */

/* How an option carries its knob: a number; a boolean (Megatron-LM: a
 * flag written when 1, or with FX_NEG when 0); or written and read by
 * the knob's own code (FX_SPECIAL). */
enum { FX_INT, FX_BOOL, FX_NEG, FX_SPECIAL };

struct frame_opt {
	int how;
	const char *name; /* NULL: the framework cannot express the knob */
};

/* ---- export ------------------------------------------------------------ */

/* One written option: name and value (NULL: a flag). */
struct emit {
	FILE *f;
	int fw;
	/* the lines, written at the end (torchtitan's by section) */
	char lines[96][LLM_MAX_PATTERN + 64]; /* a hybrid pattern fits one */
	int n;
};

static void put(struct emit *E, const char *name, const char *val)
{
	if (E->n >= (int)(sizeof(E->lines) / sizeof(E->lines[0])))
		return;
	if (E->fw == FRAME_MEGATRON)
		snprintf(E->lines[E->n++], sizeof(E->lines[0]), "%s%s%s", name, val ? " " : "",
			 val ? val : "");
	else if (E->fw == FRAME_BRIDGE)
		snprintf(E->lines[E->n++], sizeof(E->lines[0]), "%s=%s", name, val ? val : "true");
	else
		snprintf(E->lines[E->n++], sizeof(E->lines[0]), "%s = %s", name,
			 val ? val : "true");
}

static void put_int(struct emit *E, const char *name, long v)
{
	char b[32];
	snprintf(b, sizeof(b), "%ld", v);
	put(E, name, b);
}

static void put_bool(struct emit *E, const char *name, int v)
{
	put(E, name, v ? "true" : "false");
}

static int gpus_of(const struct layout *l)
{
	return l->tp * l->pp * l->dp * layout_cp(l);
}

/* ---- import ------------------------------------------------------------ */

/* The specials' values as read, resolved once every option is in. */
struct imp {
	int vp_layers, vp, schedule;			       /* schedule -1: not given */
	int rc_gran, rc_method_uniform, rc_layers, rc_modules; /* rc_modules 0: not given */
	int distopt, mfsdp, strategy, instances, rep, shard_deg;
	int dtype, fp8, fp4, bf16, fp16, given_dtype;
	int fp8_recipe; /* -1: not given */
	int flash, embed, loss, cp_comm;
	int disp, hybridep;		  /* disp -1: not given; flex's backend */
	int exec;			  /* enum layout_exec */
	int off_n, off_on, off_mlm;	  /* offloaded layers; the switch (-1: not given);
					* Megatron-LM's count given */
	int off_acts;			  /* activations offloaded (0: said false) */
	int peft, lora_dim, lora_targets; /* peft 1: lora, 2: none; 0: not given */
	int pao;		       /* --use-precision-aware-optimizer's line (0: not given) */
	char opt_dt[4][8];	       /* its main params, main grads, exp_avg and
					   * exp_avg_sq dtypes ("": not given, fp32) */
	int clip;		       /* --clip-grad: 1 clipping, 0 none, -1 not given */
	int drop;		       /* --hidden-dropout: 1 at 0 (no_dropout), 0 above, -1
					  * not given */
	int first_layers, last_layers; /* the first and last stages' (0: even) */
	/* The main gradients (settle_grads): Megatron-LM's --grad-reduce-in-bf16
	 * and --accumulate-allreduce-grads-in-fp32 (their lines, 0: not given);
	 * Megatron-FSDP's main grads dtype (enum layout_main_grads, -1: not
	 * given); Bridge's ddp. and mixed_precision.grad_reduce_in_fp32 (-1:
	 * not given); the line of an option that turns Megatron-FSDP's double
	 * buffers on (--nccl-ub, the max-pool double buffer; 0: none) and its
	 * name. */
	int mg_bf16, mg_fp32, mfsdp_mg, ddp_fp32, mp_fp32, db_line;
	char db_name[48];
	int ep_overlap, ep_overlap_line; /* torchtitan's pipeline_parallel_expert_parallel_overlap
					  * (-1: not given, its default true) and its line */
	char layout[512];		 /* --pipeline-model-parallel-layout, "" if none */
	int local_batch, pp_mbs;
	int nodes, per_node;
	int kv_groups, gqa;
	char unread[600]; /* the options not read, "a, b" */
};

static int num(const char *path, int line, const char *name, const char *s, long lo, long hi,
	       long *out, struct prism_err *err)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s:%d: %s '%s': expected a whole number in %ld..%ld", path,
				     line, name, s, lo, hi);
	*out = v;
	return 0;
}

static int truth(const char *path, int line, const char *name, const char *s, int *out,
		 struct prism_err *err)
{
	if (!s || strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "1") == 0)
		*out = 1;
	else if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "0") == 0)
		*out = 0;
	else
		return prism_err_set(err, PRISM_EFORMAT, "%s:%d: %s '%s': expected true or false",
				     path, line, name, s);
	return 0;
}

/* s without surrounding quotes, into b. */
static const char *unquote(const char *s, char *b, size_t n)
{
	size_t k = s ? strlen(s) : 0;
	if (k >= 2 && (s[0] == '"' || s[0] == '\'') && s[k - 1] == s[0]) {
		snprintf(b, n, "%.*s", (int)(k - 2), s + 1);
		return b;
	}
	return s;
}

/* ---- each knob's own options (FX_SPECIAL), export ------------------------
 *
 * put_KNOB(E, name, m, l) writes knob KNOB's options for framework E->fw,
 * name being its row's (frame_rows) for that framework. */

/* Megatron-LM's name or Bridge's, by E's framework. */
static const char *mb_name(const struct emit *E, const char *mlm, const char *bridge)
{
	return E->fw == FRAME_MEGATRON ? mlm : bridge;
}

/* What another knob's options say (torchtitan's sp with tp, its flash and
 * ZeRO by implication or with dp). */
static void put_none(struct emit *E, const char *name, const struct llm *m, const struct layout *l)
{
	(void)E, (void)name, (void)m, (void)l;
}

static void put_vp(struct emit *E, const char *name, const struct llm *m, const struct layout *l)
{
	if (l->schedule != LAYOUT_INTERLEAVED || l->pp < 2)
		return;
	/* Chunks placed unevenly (Megatron-Core's slots, first/last counts, a
	 * layout): the virtual stages' number, which the placement divides */
	if (E->fw == FRAME_MEGATRON && (m->layers % (l->pp * l->vp) || l->part_chunks ||
					l->part[0] || l->partition != LAYOUT_PART_GIVEN))
		put_int(E, "--num-virtual-stages-per-pipeline-rank", l->vp);
	else if (E->fw == FRAME_BRIDGE)
		put_int(E, name, l->vp);
	else
		put_int(E, name, m->layers / (l->pp * l->vp));
}

/* Megatron-LM and Bridge: 1F1B, interleaved with vp (put_vp).  torchtitan
 * overlaps DualPipeV's F&B pairs' expert all-to-alls by default with pp and
 * ep > 1 (pipeline_parallel_expert_parallel_overlap; dual_pipe_v.py
 * get_dual_pipe_v_flag, which raises with activation checkpointing): off
 * with recomputation, and wherever prism runs the pairs back to back
 * (layout_a2a_overlap), so that the job runs, and runs what prism priced. */
static void put_schedule(struct emit *E, const char *name, const struct llm *m,
			 const struct layout *l)
{
	if (E->fw != FRAME_TORCHTITAN || l->pp < 2)
		return;
	put(E, name,
	    l->schedule == LAYOUT_GPIPE	      ? "\"GPipe\""
	    : l->schedule == LAYOUT_1F1B      ? "\"1F1B\""
	    : l->schedule == LAYOUT_ZBV	      ? "\"ZBVZeroBubble\""
	    : l->schedule == LAYOUT_DUALPIPEV ? "\"DualPipeV\""
					      : "\"Interleaved1F1B\"");
	if (l->schedule == LAYOUT_DUALPIPEV && m->experts > 0 && layout_ep(l) > 1 &&
	    (l->recompute != LAYOUT_RECOMPUTE_NONE || !layout_a2a_overlap(m, l)))
		put(E, "parallelism.pipeline_parallel_expert_parallel_overlap", "false");
}

static void put_microbatches(struct emit *E, const char *name, const struct llm *m,
			     const struct layout *l)
{
	(void)m;
	put_int(E, name, (long)l->mbs * l->microbatches * l->dp);
}

/* torchtitan's: the local batch, split into microbatches with pp. */
static void put_mbs(struct emit *E, const char *name, const struct llm *m, const struct layout *l)
{
	(void)m;
	if (l->pp > 1) {
		put_int(E, name, (long)l->mbs * l->microbatches);
		put_int(E, "parallelism.pipeline_parallel_microbatch_size", l->mbs);
	} else {
		put_int(E, name, l->mbs);
	}
}

/* torchtitan's: dp x cp = replicate x shard. */
static void put_dp(struct emit *E, const char *name, const struct llm *m, const struct layout *l)
{
	int dpc = layout_dpc(l);
	(void)m;
	if (l->zero == 3) {
		int shard = l->shard ? l->shard : dpc;
		put_int(E, name, shard / layout_cp(l));
		put_int(E, "parallelism.data_parallel_replicate_degree", dpc / shard);
	} else if (l->zero == 0) {
		put_int(E, name, 1);
		put_int(E, "parallelism.data_parallel_replicate_degree", l->dp);
	}
}

static void put_recompute(struct emit *E, const char *name, const struct llm *m,
			  const struct layout *l)
{
	(void)m;
	if (E->fw == FRAME_TORCHTITAN) {
		put(E, name,
		    l->recompute == LAYOUT_RECOMPUTE_FULL	 ? "\"full\""
		    : l->recompute == LAYOUT_RECOMPUTE_SELECTIVE ? "\"selective\""
								 : "\"none\"");
		if (l->recompute == LAYOUT_RECOMPUTE_SELECTIVE)
			put(E, "activation_checkpoint.selective_ac_option", "\"op\"");
		return;
	}
	if (l->recompute == LAYOUT_RECOMPUTE_NONE)
		return;
	put(E, name, l->recompute == LAYOUT_RECOMPUTE_FULL ? "full" : "selective");
	if (l->recompute == LAYOUT_RECOMPUTE_FULL) {
		put(E, mb_name(E, "--recompute-method", "model.recompute_method"), "uniform");
		put(E, mb_name(E, "--recompute-num-layers", "model.recompute_num_layers"), "1");
	}
}

/* Megatron-LM's nargs list; Bridge's list. */
static void put_recompute_modules(struct emit *E, const char *name, const struct llm *m,
				  const struct layout *l)
{
	char b[96], *c;
	(void)m;
	if (!l->recompute_modules || l->recompute_modules == LAYOUT_RC_CORE_ATTN)
		return;
	snprintf(b, sizeof(b), E->fw == FRAME_BRIDGE ? "[%s]" : "%s",
		 layout_rc_modules_name(l->recompute_modules));
	for (c = b; E->fw == FRAME_MEGATRON && (c = strchr(c, ',')); c++)
		*c = ' ';
	put(E, name, b);
}

/* Megatron-LM and Bridge (torchtitan's with dp): the distributed optimizer,
 * Megatron-FSDP's required flags (its README) for ZeRO-2/3. */
static void put_zero(struct emit *E, const char *name, const struct llm *m, const struct layout *l)
{
	(void)m;
	if (E->fw == FRAME_TORCHTITAN)
		return;
	if (l->zero == 1) {
		put(E, name, NULL);
	} else if (l->zero >= 2) {
		put(E, mb_name(E, "--use-megatron-fsdp", "ddp.use_megatron_fsdp"), NULL);
		put(E,
		    mb_name(E, "--data-parallel-sharding-strategy",
			    "ddp.data_parallel_sharding_strategy"),
		    l->zero == 2 ? "optim_grads" : "optim_grads_params");
		put(E, name, NULL);
	}
}

/* Megatron-LM and Bridge: the optimizer's instances (torchtitan: with dp). */
static void put_shard(struct emit *E, const char *name, const struct llm *m, const struct layout *l)
{
	int dpc = layout_dpc(l);
	(void)m;
	if (E->fw == FRAME_TORCHTITAN || !l->zero || !l->shard || l->shard >= dpc)
		return;
	put_int(E, name, dpc / l->shard);
}

static void put_dtype(struct emit *E, const char *name, const struct llm *m, const struct layout *l)
{
	static const char *const fp8[] = {
	    "bf16_with_fp8_delayed_scaling_mixed", "bf16_with_fp8_current_scaling_mixed",
	    "bf16_with_fp8_subchannel_scaling_mixed", "bf16_with_mxfp8_mixed"};
	(void)m;
	if (E->fw == FRAME_TORCHTITAN) {
		put(E, name, l->dtype == HW_FP32 ? "\"float32\"" : "\"bfloat16\"");
		if (l->dtype == HW_FP8)
			put(E, "model.converters", "[\"float8\"]");
	} else if (E->fw == FRAME_MEGATRON) {
		if (l->dtype == HW_FP16)
			put(E, "--fp16", NULL);
		else if (l->dtype != HW_FP32 && l->dtype != HW_TF32)
			put(E, name, NULL);
		if (l->dtype == HW_FP8)
			put(E, "--fp8-format", "hybrid");
		if (l->dtype == HW_FP4)
			put(E, "--fp4-format", "e2m1");
	} else {
		put(E, name,
		    l->dtype == HW_FP16	  ? "fp16_mixed"
		    : l->dtype == HW_FP8  ? fp8[l->fp8_recipe]
		    : l->dtype == HW_FP4  ? "bf16_with_nvfp4_mixed"
		    : l->dtype == HW_FP32 ? "null"
					  : "bf16_mixed");
	}
}

/* Megatron-LM's (Bridge and torchtitan: with the dtype). */
static void put_fp8_recipe(struct emit *E, const char *name, const struct llm *m,
			   const struct layout *l)
{
	(void)m;
	if (E->fw == FRAME_MEGATRON && l->fp8_recipe != LAYOUT_FP8_DELAYED)
		put(E, name,
		    l->fp8_recipe == LAYOUT_FP8_CURRENT ? "tensorwise"
							: layout_fp8_recipe_name(l->fp8_recipe));
}

/* torchtitan's is implied. */
static void put_flash(struct emit *E, const char *name, const struct llm *m, const struct layout *l)
{
	(void)m;
	if (E->fw != FRAME_TORCHTITAN && !l->flash)
		put(E, name, "unfused");
}

/* Megatron-LM's and Bridge's first and last stages' layers (0: not written). */
static void put_first_last(struct emit *E, int first, int last)
{
	if (first)
		put_int(E,
			mb_name(E, "--decoder-first-pipeline-num-layers",
				"model.num_layers_in_first_pipeline_stage"),
			first);
	if (last)
		put_int(E,
			mb_name(E, "--decoder-last-pipeline-num-layers",
				"model.num_layers_in_last_pipeline_stage"),
			last);
}

/* Megatron-LM's and Bridge's placements (expresses_value says which). */
static void put_partition(struct emit *E, const char *name, const struct llm *m,
			  const struct layout *l)
{
	(void)m, (void)name;
	if (l->pp < 2)
		return;
	if (l->partition == LAYOUT_PART_GIVEN && l->part[0] && !l->part_chunks) {
		/* a list's stages hold 1 layer or more (layout_check_partition) */
		put_first_last(E, l->part[0], l->part[l->pp - 1]);
	} else if (l->partition == LAYOUT_PART_GIVEN && l->part_chunks) {
		char b[600], q[604];
		layout_partition_name(l, b, sizeof(b));
		snprintf(q, sizeof(q), "'%s'", b);
		put(E,
		    mb_name(E, "--pipeline-model-parallel-layout",
			    "model.pipeline_model_parallel_layout"),
		    q);
	} else if (l->partition == LAYOUT_PART_FIRST_LAST) {
		put_first_last(E, l->part_first, l->part_last);
	} else if (l->partition == LAYOUT_PART_EMBED_LOSS || l->partition == LAYOUT_PART_EMBED ||
		   l->partition == LAYOUT_PART_LOSS) {
		if (l->partition != LAYOUT_PART_LOSS)
			put(E,
			    mb_name(E, "--account-for-embedding-in-pipeline-split",
				    "model.account_for_embedding_in_pipeline_split"),
			    NULL);
		if (l->partition != LAYOUT_PART_EMBED)
			put(E,
			    mb_name(E, "--account-for-loss-in-pipeline-split",
				    "model.account_for_loss_in_pipeline_split"),
			    NULL);
	}
}

static void put_cp_comm(struct emit *E, const char *name, const struct llm *m,
			const struct layout *l)
{
	(void)m;
	if (layout_cp(l) < 2)
		return;
	put(E, name, E->fw == FRAME_TORCHTITAN ? "\"allgather\"" : layout_cp_comm_name(l->cp_comm));
}

/* DeepEP and HybridEP are flex's two backends. */
static void put_moe_dispatcher(struct emit *E, const char *name, const struct llm *m,
			       const struct layout *l)
{
	(void)m;
	put(E, name,
	    l->moe_dispatcher >= LAYOUT_DISP_FLEX ? "flex"
						  : layout_dispatcher_name(l->moe_dispatcher));
	if (l->moe_dispatcher >= LAYOUT_DISP_FLEX)
		put(E,
		    mb_name(E, "--moe-flex-dispatcher-backend",
			    "model.moe_flex_dispatcher_backend"),
		    l->moe_dispatcher == LAYOUT_DISP_FLEX ? "deepep" : "hybridep");
}

static void put_exec(struct emit *E, const char *name, const struct llm *m, const struct layout *l)
{
	(void)m;
	if (l->exec == LAYOUT_EXEC_COMPILED && E->fw == FRAME_TORCHTITAN)
		put(E, name, "true");
	else if (l->exec == LAYOUT_EXEC_GRAPHS && E->fw != FRAME_TORCHTITAN)
		put(E, name, "local");
}

/* Megatron-LM's only (frame_rows). */
static void put_optimizer_dtype(struct emit *E, const char *name, const struct llm *m,
				const struct layout *l)
{
	(void)m;
	if (l->optimizer_dtype == LAYOUT_OPT_BF16_STATES) {
		put(E, name, NULL);
		put(E, "--exp-avg-dtype", "bf16");
		put(E, "--exp-avg-sq-dtype", "bf16");
	}
}

/* The main gradients where main_grads is not auto, each implementation's
 * own way (read back by settle_grads): Megatron-LM's DDP and distributed
 * optimizer --grad-reduce-in-bf16 or --accumulate-allreduce-grads-in-fp32
 * (arguments.py: the latter is what --bf16 sets by default), Megatron-
 * FSDP's --megatron-fsdp-main-grads-dtype (default auto: the model's
 * bf16); Bridge's mixed_precision.grad_reduce_in_fp32 (MixedPrecisionConfig
 * .setup copies it over ddp.grad_reduce_in_fp32; both written, as Bridge's
 * perf recipes set them). */
static void put_main_grads(struct emit *E, const char *name, const struct llm *m,
			   const struct layout *l)
{
	int bf16 = l->main_grads == LAYOUT_GRADS_BF16;
	(void)m;
	if (!layout_lowp_grads(l, 1) || l->main_grads == LAYOUT_GRADS_AUTO)
		return;
	if (E->fw == FRAME_BRIDGE) {
		put(E, name, bf16 ? "false" : "true");
		put(E, "ddp.grad_reduce_in_fp32", bf16 ? "false" : "true");
	} else if (l->zero < 2) {
		put(E, bf16 ? name : "--accumulate-allreduce-grads-in-fp32", NULL);
	} else {
		put(E, "--megatron-fsdp-main-grads-dtype", bf16 ? "bf16" : "fp32");
	}
}

static void put_clip_grad(struct emit *E, const char *name, const struct llm *m,
			  const struct layout *l)
{
	(void)m;
	if (!l->clip_grad)
		put(E, name, "0.0");
}

/* Megatron-LM's --hidden-dropout (default 0.1), Bridge's
 * model.hidden_dropout: written at 0 alone. */
static void put_no_dropout(struct emit *E, const char *name, const struct llm *m,
			   const struct layout *l)
{
	(void)m;
	if (l->no_dropout)
		put(E, name, "0.0");
}

/* Activations only (Transformer Engine deprecated weights' offloading). */
static void put_offload_layers(struct emit *E, const char *name, const struct llm *m,
			       const struct layout *l)
{
	(void)m;
	if (l->offload_layers <= 0)
		return;
	put(E, mb_name(E, "--cpu-offloading", "model.cpu_offloading"), NULL);
	put_int(E, name, l->offload_layers);
	if (E->fw == FRAME_BRIDGE)
		put(E, "model.cpu_offloading_weights", "false");
}

/* Bridge's only (frame_rows). */
static void put_lora_rank(struct emit *E, const char *name, const struct llm *m,
			  const struct layout *l)
{
	(void)m;
	if (l->lora_rank > 0) {
		put(E, "peft", "lora");
		put_int(E, name, l->lora_rank);
	}
}

static void put_lora_targets(struct emit *E, const char *name, const struct llm *m,
			     const struct layout *l)
{
	char b[96];
	(void)m;
	snprintf(b, sizeof(b), "[%s]", layout_lora_targets_name(l->lora_targets));
	put(E, name, b);
}

/* Only a width other than hidden / heads. */
static void put_head_dim(struct emit *E, const char *name, const struct llm *m,
			 const struct layout *l)
{
	(void)l;
	if (m->head_dim > 0 && !llm_mla(m) &&
	    (m->hidden % m->heads || m->head_dim != m->hidden / m->heads))
		put_int(E, name, m->head_dim);
}

/* ---- each knob's own options (FX_SPECIAL), import ------------------------
 *
 * A knob's row lists the options its own code reads (struct frame_in):
 * each a name and a reader, which keeps what it read in struct imp (or
 * for the few read whole, in m or x); settle's phases turn struct imp into
 * the layout once every option is in.  A name is read by one knob only. */

/* One option being read. */
struct rd {
	const char *path;
	int line;
	const char *name;
	const char *raw; /* its value as written (NULL: a flag) */
	const char *val; /* unquoted */
	const char *s;	 /* and unquoted again */
	struct llm *m;
	layout_mask *given;
	struct imp *I;
	struct frame_extra *x;
	struct prism_err *err;
};

struct frame_in {
	const char *name;
	int (*read)(struct rd *r, const struct frame_in *in);
	size_t off;  /* in_int, in_set, in_truth, in_names: the struct imp field (an int) */
	long lo, hi; /* in_int: the range; in_set: the value (lo); in_names: the knob (lo) */
};

#define IMP(f) offsetof(struct imp, f)

static int *imp_field(struct rd *r, const struct frame_in *in)
{
	return (int *)(void *)((char *)r->I + in->off);
}

/* "path:line: name 's': what" */
static int rd_bad(struct rd *r, const char *v, const char *what)
{
	return prism_err_set(r->err, PRISM_EFORMAT, "%s:%d: %s '%s': %s", r->path, r->line, r->name,
			     v ? v : "", what);
}

static int rd_num(struct rd *r, long lo, long hi, long *v)
{
	if (num(r->path, r->line, r->name, r->s ? r->s : "", lo, hi, v, r->err))
		return r->err->code;
	return 0;
}

/* A whole number in lo..hi into the field. */
static int in_int(struct rd *r, const struct frame_in *in)
{
	long v = 0;
	if (rd_num(r, in->lo, in->hi, &v))
		return r->err->code;
	*imp_field(r, in) = (int)v;
	return 0;
}

/* A flag: the field takes lo. */
static int in_set(struct rd *r, const struct frame_in *in)
{
	*imp_field(r, in) = (int)in->lo;
	return 0;
}

/* true or false into the field. */
static int in_truth(struct rd *r, const struct frame_in *in)
{
	int b = 0;
	if (truth(r->path, r->line, r->name, r->s, &b, r->err))
		return r->err->code;
	*imp_field(r, in) = b;
	return 0;
}

/* Read, nothing kept. */
static int in_skip(struct rd *r, const struct frame_in *in)
{
	(void)r, (void)in;
	return 0;
}

/* true or false, checked, nothing kept. */
static int in_truth_skip(struct rd *r, const struct frame_in *in)
{
	int b = 0;
	(void)in;
	return truth(r->path, r->line, r->name, r->s, &b, r->err) ? r->err->code : 0;
}

/* Bridge's null: not given. */
static int in_vp(struct rd *r, const struct frame_in *in)
{
	if (r->s && strcmp(r->s, "null") == 0)
		return 0;
	return in_int(r, in);
}

static int in_schedule(struct rd *r, const struct frame_in *in)
{
	const char *s = r->s;
	(void)in;
	r->I->schedule = s && strcmp(s, "GPipe") == 0		  ? LAYOUT_GPIPE
			 : s && strcmp(s, "1F1B") == 0		  ? LAYOUT_1F1B
			 : s && strcmp(s, "Interleaved1F1B") == 0 ? LAYOUT_INTERLEAVED
			 : s && strcmp(s, "ZBVZeroBubble") == 0	  ? LAYOUT_ZBV
			 : s && strcmp(s, "DualPipeV") == 0	  ? LAYOUT_DUALPIPEV
								  : -2;
	if (r->I->schedule == -2)
		return rd_bad(r, s,
			      "prism models GPipe, 1F1B, Interleaved1F1B, ZBVZeroBubble and "
			      "DualPipeV here (its zero-bubble zb-1p and zb-2p run one stage a "
			      "rank, which torchtitan's InterleavedZeroBubble does not)");
	return 0;
}

/* torchtitan's DualPipeV expert-parallel overlap (settle_dpv_overlap). */
static int in_ep_overlap(struct rd *r, const struct frame_in *in)
{
	int rc = in_truth(r, in);
	if (!rc)
		r->I->ep_overlap_line = r->line;
	return rc;
}

static int in_gbs(struct rd *r, const struct frame_in *in)
{
	long v = 0;
	(void)in;
	if (rd_num(r, 1, 1L << 30, &v))
		return r->err->code;
	r->x->gbs = (int)v;
	return 0;
}

static int in_recompute(struct rd *r, const struct frame_in *in)
{
	const char *s = r->s;
	(void)in;
	r->I->rc_gran = s && strcmp(s, "full") == 0	   ? LAYOUT_RECOMPUTE_FULL
			: s && strcmp(s, "selective") == 0 ? LAYOUT_RECOMPUTE_SELECTIVE
							   : LAYOUT_RECOMPUTE_NONE;
	if (s && r->I->rc_gran == LAYOUT_RECOMPUTE_NONE && strcmp(s, "none") && strcmp(s, "null"))
		return rd_bad(r, s, "expected full or selective");
	return 0;
}

static int in_rc_method(struct rd *r, const struct frame_in *in)
{
	(void)in;
	r->I->rc_method_uniform = r->s && strcmp(r->s, "uniform") == 0;
	return 0;
}

/* names apart by spaces (Megatron-LM's nargs), or a list, as list(ns) */
static const char *names_of(const char *val, char *ns, size_t n)
{
	snprintf(ns, n, "%s", val ? val : "");
	for (char *c = ns; *c; c++)
		if (strchr("[]\"'", *c))
			*c = ' ';
	return ns;
}

/* Names that knob lo's parser reads (its row in layout.h), into the
 * field; else the names it knows, from the row's own list. */
static int in_names(struct rd *r, const struct frame_in *in)
{
	const struct layout_knob *K = &layout_knobs[in->lo];
	const char *all = K->name((int)K->hi), *last = strrchr(all, ',');
	char ns[160], msg[256] = "expected names among ";
	size_t k = strlen(msg);
	if ((*imp_field(r, in) = K->parse(names_of(r->val, ns, sizeof(ns)))) >= 0)
		return 0;
	for (const char *c = all; *c && k + 6 < sizeof(msg); c++)
		if (*c != ',')
			msg[k++] = *c;
		else
			k += (size_t)snprintf(msg + k, sizeof(msg) - k, c == last ? " and " : ", ");
	msg[k] = '\0';
	return rd_bad(r, r->val, msg);
}

static int in_strategy(struct rd *r, const struct frame_in *in)
{
	const char *s = r->s;
	(void)in;
	r->I->strategy = !s					? -1
			 : strcmp(s, "no_shard") == 0		? 0
			 : strcmp(s, "optim") == 0		? 1
			 : strcmp(s, "optim_grads") == 0	? 2
			 : strcmp(s, "optim_grads_params") == 0 ? 3
								: -1;
	if (r->I->strategy < 0)
		return rd_bad(r, s, "expected no_shard, optim, optim_grads or optim_grads_params");
	return 0;
}

static int in_fp8_recipe(struct rd *r, const struct frame_in *in)
{
	const char *s = r->s;
	int rc = !s ? -1 : layout_fp8_recipe_parse(s);
	(void)in;
	if (rc < 0 || strcmp(s, "current") == 0)
		return rd_bad(r, s, "expected delayed, tensorwise, blockwise or mxfp8");
	r->I->fp8_recipe = rc;
	return 0;
}

/* Bridge's recipe names: the GEMMs' precision first ("fp16_with_fp8_..."
 * runs fp8), then the fp8 recipe in the name (mixed_precision.py's
 * presets). */
static int in_mixed_precision(struct rd *r, const struct frame_in *in)
{
	const char *s = r->s;
	(void)in;
	r->I->given_dtype = 1;
	r->I->dtype = !s || strcmp(s, "null") == 0 ? HW_FP32
		      : strstr(s, "fp8")	   ? HW_FP8
		      : strstr(s, "fp4")	   ? HW_FP4
		      : strncmp(s, "fp16", 4) == 0 ? HW_FP16
						   : HW_BF16;
	r->I->fp8_recipe = !s				     ? -1
			   : strstr(s, "current_scaling")    ? LAYOUT_FP8_CURRENT
			   : strstr(s, "subchannel_scaling") ? LAYOUT_FP8_BLOCKWISE
			   : strstr(s, "mxfp8")		     ? LAYOUT_FP8_MXFP8
							     : -1;
	return 0;
}

static int in_tt_precision(struct rd *r, const struct frame_in *in)
{
	(void)in;
	r->I->given_dtype = 1;
	r->I->dtype = r->s && strcmp(r->s, "float32") == 0 ? HW_FP32 : HW_BF16;
	return 0;
}

static int in_converters(struct rd *r, const struct frame_in *in)
{
	(void)in;
	r->I->fp8 = r->s && strstr(r->s, "float8") != NULL;
	return 0;
}

static int in_attention_backend(struct rd *r, const struct frame_in *in)
{
	const char *s = r->s;
	(void)in;
	r->I->flash = s && (strcmp(s, "unfused") == 0 || strcmp(s, "local") == 0) ? 0 : 1;
	return 0;
}

/* Megatron-Core's layout string, whole (quotes off once). */
static int in_pp_layout(struct rd *r, const struct frame_in *in)
{
	char b[sizeof(r->I->layout)];
	const char *t = unquote(r->raw, b, sizeof(b));
	(void)in;
	if (!t || strlen(t) + 1 >= sizeof(r->I->layout))
		return prism_err_set(r->err, PRISM_EFORMAT,
				     "%s:%d: %s: expected a layout of 1 to %zu characters", r->path,
				     r->line, r->name, sizeof(r->I->layout) - 2);
	snprintf(r->I->layout, sizeof(r->I->layout), "%s", t);
	return 0;
}

/* Megatron's names are prism's (layout_cp_comm_parse); torchtitan's
 * "alltoall" rotation is its ring. */
static int in_cp_comm(struct rd *r, const struct frame_in *in)
{
	const char *s = r->s;
	int c = !s				       ? -1
		: strcmp(s, "alltoall") == 0 && in->lo ? LAYOUT_CP_P2P
						       : layout_cp_comm_parse(s);
	if (c < 0)
		return rd_bad(r, s, "expected p2p, all_gather, a2a or a2a+p2p");
	r->I->cp_comm = c;
	return 0;
}

/* --use-precision-aware-optimizer: its line, for settle's message. */
static int in_pao(struct rd *r, const struct frame_in *in)
{
	(void)in;
	r->I->pao = r->line;
	return 0;
}

/* --main-params-dtype, --main-grads-dtype, --exp-avg-dtype,
 * --exp-avg-sq-dtype: opt_dt[lo]. */
static int in_opt_dtype(struct rd *r, const struct frame_in *in)
{
	snprintf(r->I->opt_dt[in->lo], sizeof(r->I->opt_dt[0]), "%s", r->s ? r->s : "");
	return 0;
}

static int in_clip(struct rd *r, const struct frame_in *in)
{
	char *end;
	double c = r->s ? strtod(r->s, &end) : -1;
	(void)in;
	if (!r->s || end == r->s || *end || c < 0)
		return rd_bad(r, r->s, "expected a norm >= 0");
	r->I->clip = c > 0;
	return 0;
}

/* A dropout probability: 0 is no_dropout, any other runs the kernels. */
static int in_hidden_dropout(struct rd *r, const struct frame_in *in)
{
	char *end;
	double p = r->s ? strtod(r->s, &end) : -1;
	(void)in;
	if (!r->s || end == r->s || *end || !(p >= 0 && p < 1))
		return rd_bad(r, r->s, "expected a probability in [0, 1)");
	r->I->drop = p == 0;
	return 0;
}

/* The count; Megatron-LM's alone turns offloading on. */
static int in_offload_n(struct rd *r, const struct frame_in *in)
{
	int rc = in_int(r, in);
	if (!rc)
		r->I->off_mlm = r->name[0] == '-';
	return rc;
}

static int in_enable_cuda_graph(struct rd *r, const struct frame_in *in)
{
	int b = 0;
	(void)in;
	if (truth(r->path, r->line, r->name, r->s, &b, r->err))
		return r->err->code;
	r->I->exec = b ? LAYOUT_EXEC_GRAPHS : r->I->exec;
	return 0;
}

static int in_cuda_graph_impl(struct rd *r, const struct frame_in *in)
{
	const char *s = r->s;
	(void)in;
	if (!s || (strcmp(s, "none") && strcmp(s, "local") && strcmp(s, "transformer_engine")))
		return rd_bad(r, s, "expected none, local or transformer_engine");
	r->I->exec = strcmp(s, "none") ? LAYOUT_EXEC_GRAPHS : LAYOUT_EXEC_EAGER;
	return 0;
}

static int in_compile(struct rd *r, const struct frame_in *in)
{
	int b = 0;
	(void)in;
	if (truth(r->path, r->line, r->name, r->s, &b, r->err))
		return r->err->code;
	r->I->exec = b ? LAYOUT_EXEC_COMPILED : LAYOUT_EXEC_EAGER;
	return 0;
}

static int in_dispatcher(struct rd *r, const struct frame_in *in)
{
	int d = !r->s ? -1 : layout_dispatcher_parse(r->s);
	(void)in;
	if (d < 0 || d == LAYOUT_DISP_HYBRIDEP)
		return rd_bad(r, r->s, "expected alltoall, allgather or flex");
	r->I->disp = d;
	return 0;
}

static int in_flex_backend(struct rd *r, const struct frame_in *in)
{
	const char *s = r->s;
	(void)in;
	if (!s || (strcmp(s, "deepep") != 0 && strcmp(s, "hybridep") != 0))
		return rd_bad(r, s, "expected deepep or hybridep");
	r->I->hybridep = strcmp(s, "hybridep") == 0;
	return 0;
}

static int in_head_dim(struct rd *r, const struct frame_in *in)
{
	long v = 0;
	(void)in;
	if (rd_num(r, 1, LLM_MAX_HEAD_DIM, &v))
		return r->err->code;
	r->m->head_dim = (int)v;
	*r->given |= LK_BIT(LK_head_dim);
	return 0;
}

/* Bridge's recipes: peft="lora", or none. */
static int in_peft(struct rd *r, const struct frame_in *in)
{
	const char *s = r->s;
	(void)in;
	if (s && strcmp(s, "lora") == 0)
		r->I->peft = 1;
	else if (!s || strcmp(s, "none") == 0 || strcmp(s, "null") == 0)
		r->I->peft = 2;
	else
		return rd_bad(r, s,
			      "expected lora or none (prism models LoRA, not other PEFT schemes)");
	return 0;
}

/* A flag's line (settle's messages name it). */
static int in_line(struct rd *r, const struct frame_in *in)
{
	*imp_field(r, in) = r->line;
	return 0;
}

/* Megatron-FSDP's main gradients' dtype: Megatron-LM's
 * --megatron-fsdp-main-grads-dtype (arguments.py: fp32, bf16, fp16 or
 * auto, the default), Megatron-Bridge's ddp.megatron_fsdp_main_grads_dtype
 * (DistributedDataParallelConfig: a torch.dtype, None the default: the
 * model's). */
static int in_mfsdp_grads(struct rd *r, const struct frame_in *in)
{
	static const struct {
		const char *s;
		int g;
	} dt[] = {{"auto", LAYOUT_GRADS_AUTO},		{"null", LAYOUT_GRADS_AUTO},
		  {"None", LAYOUT_GRADS_AUTO},		{"fp32", LAYOUT_GRADS_FP32},
		  {"float32", LAYOUT_GRADS_FP32},	{"torch.float32", LAYOUT_GRADS_FP32},
		  {"bf16", LAYOUT_GRADS_BF16},		{"bfloat16", LAYOUT_GRADS_BF16},
		  {"torch.bfloat16", LAYOUT_GRADS_BF16}};
	(void)in;
	for (size_t i = 0; r->s && i < sizeof(dt) / sizeof(dt[0]); i++)
		if (strcmp(r->s, dt[i].s) == 0) {
			r->I->mfsdp_mg = dt[i].g;
			return 0;
		}
	if (r->s && strstr(r->s, "16") && !strstr(r->s, "bf"))
		return rd_bad(
		    r, r->s,
		    "fp16 main gradients are not modelled (main_grads: auto, fp32 or bf16)");
	return rd_bad(r, r->s, "expected fp32, bf16, fp16 or auto");
}

/* Megatron-FSDP's double buffers turned on by another option: Megatron-LM's
 * --nccl-ub and --megatron-fsdp-max-pool-double-buffer (arguments.py, with
 * --use-megatron-fsdp), Megatron-Core's megatron_fsdp_max_pool_double_buffer
 * (DistributedDataParallelConfig.__post_init__). */
static int in_db_implied(struct rd *r, const struct frame_in *in)
{
	int b = 1;
	(void)in;
	if (r->name[0] != '-' && truth(r->path, r->line, r->name, r->s, &b, r->err))
		return r->err->code;
	if (b) {
		r->I->db_line = r->line;
		snprintf(r->I->db_name, sizeof(r->I->db_name), "%s", r->name);
	}
	return 0;
}

/* The options each knob's own code reads, by knob (frame_rows' .in). */
static const struct frame_in in_vp_opts[] = {
    {"--num-layers-per-virtual-pipeline-stage", in_int, IMP(vp_layers), 1, LLM_MAX_LAYERS},
    {"parallelism.pipeline_parallel_layers_per_stage", in_int, IMP(vp_layers), 1, LLM_MAX_LAYERS},
    {"--num-virtual-stages-per-pipeline-rank", in_vp, IMP(vp), 1, LAYOUT_MAX_VP},
    {"model.virtual_pipeline_model_parallel_size", in_vp, IMP(vp), 1, LAYOUT_MAX_VP},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_schedule_opts[] = {
    {"parallelism.pipeline_parallel_schedule", in_schedule, 0, 0, 0},
    {"parallelism.pipeline_parallel_expert_parallel_overlap", in_ep_overlap, IMP(ep_overlap), 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_microbatches_opts[] = {
    {"--global-batch-size", in_gbs, 0, 0, 0},
    {"train.global_batch_size", in_gbs, 0, 0, 0},
    {"training.global_batch_size", in_gbs, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_mbs_opts[] = {
    {"training.local_batch_size", in_int, IMP(local_batch), 1,
     LAYOUT_MAX_MBS *(long)LAYOUT_MAX_MICRO},
    {"parallelism.pipeline_parallel_microbatch_size", in_int, IMP(pp_mbs), 1, LAYOUT_MAX_MBS},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_dp_opts[] = {
    {"parallelism.data_parallel_shard_degree", in_int, IMP(shard_deg), -1, LAYOUT_MAX_DP},
    {"parallelism.data_parallel_replicate_degree", in_int, IMP(rep), 1, LAYOUT_MAX_DP},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_recompute_opts[] = {
    {"--recompute-granularity", in_recompute, 0, 0, 0},
    {"model.recompute_granularity", in_recompute, 0, 0, 0},
    {"activation_checkpoint.mode", in_recompute, 0, 0, 0},
    {"--recompute-activations", in_set, IMP(rc_gran), LAYOUT_RECOMPUTE_SELECTIVE, 0},
    {"--recompute-method", in_rc_method, 0, 0, 0},
    {"model.recompute_method", in_rc_method, 0, 0, 0},
    {"--recompute-num-layers", in_int, IMP(rc_layers), 1, LLM_MAX_LAYERS},
    {"model.recompute_num_layers", in_int, IMP(rc_layers), 1, LLM_MAX_LAYERS},
    {"activation_checkpoint.selective_ac_option", in_skip, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_rc_modules_opts[] = {
    {"--recompute-modules", in_names, IMP(rc_modules), LK_recompute_modules, 0},
    {"model.recompute_modules", in_names, IMP(rc_modules), LK_recompute_modules, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_zero_opts[] = {
    {"--use-distributed-optimizer", in_set, IMP(distopt), 1, 0},
    {"ddp.use_distributed_optimizer", in_truth, IMP(distopt), 0, 0},
    {"--use-megatron-fsdp", in_set, IMP(mfsdp), 1, 0},
    {"--use-custom-fsdp", in_set, IMP(mfsdp), 1, 0},
    {"ddp.use_megatron_fsdp", in_truth, IMP(mfsdp), 0, 0},
    {"--data-parallel-sharding-strategy", in_strategy, 0, 0, 0},
    {"ddp.data_parallel_sharding_strategy", in_strategy, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_shard_opts[] = {
    {"--num-distributed-optimizer-instances", in_int, IMP(instances), 1, LAYOUT_MAX_DP},
    {"ddp.num_distributed_optimizer_instances", in_int, IMP(instances), 1, LAYOUT_MAX_DP},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_dtype_opts[] = {
    {"--bf16", in_set, IMP(bf16), 1, 0},
    {"--fp16", in_set, IMP(fp16), 1, 0},
    {"--fp8-format", in_set, IMP(fp8), 1, 0},
    {"--fp4-format", in_set, IMP(fp4), 1, 0},
    {"mixed_precision", in_mixed_precision, 0, 0, 0},
    {"training.mixed_precision_param", in_tt_precision, 0, 0, 0},
    {"model.converters", in_converters, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_fp8_recipe_opts[] = {{"--fp8-recipe", in_fp8_recipe, 0, 0, 0},
						     {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_flash_opts[] = {
    {"--attention-backend", in_attention_backend, 0, 0, 0},
    {"model.attention_backend", in_attention_backend, 0, 0, 0},
    {"--use-flash-attn", in_set, IMP(flash), 1, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_partition_opts[] = {
    {"--pipeline-model-parallel-layout", in_pp_layout, 0, 0, 0},
    {"model.pipeline_model_parallel_layout", in_pp_layout, 0, 0, 0},
    {"--decoder-first-pipeline-num-layers", in_int, IMP(first_layers), 1, LLM_MAX_LAYERS},
    {"model.num_layers_in_first_pipeline_stage", in_int, IMP(first_layers), 1, LLM_MAX_LAYERS},
    {"--decoder-last-pipeline-num-layers", in_int, IMP(last_layers), 1, LLM_MAX_LAYERS},
    {"model.num_layers_in_last_pipeline_stage", in_int, IMP(last_layers), 1, LLM_MAX_LAYERS},
    {"--account-for-embedding-in-pipeline-split", in_set, IMP(embed), 1, 0},
    {"--account-for-loss-in-pipeline-split", in_set, IMP(loss), 1, 0},
    {"model.account_for_embedding_in_pipeline_split", in_truth, IMP(embed), 0, 0},
    {"model.account_for_loss_in_pipeline_split", in_truth, IMP(loss), 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_cp_comm_opts[] = {
    {"--cp-comm-type", in_cp_comm, 0, 0, 0},
    {"model.cp_comm_type", in_cp_comm, 0, 0, 0},
    {"parallelism.context_parallel_rotate_method", in_cp_comm, 0, 1, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_dispatcher_opts[] = {
    {"--moe-token-dispatcher-type", in_dispatcher, 0, 0, 0},
    {"model.moe_token_dispatcher_type", in_dispatcher, 0, 0, 0},
    {"--moe-flex-dispatcher-backend", in_flex_backend, 0, 0, 0},
    {"model.moe_flex_dispatcher_backend", in_flex_backend, 0, 0, 0},
    {"--moe-enable-deepep", in_set, IMP(disp), LAYOUT_DISP_FLEX, 0}, /* flex's forerunner */
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_exec_opts[] = {
    {"--enable-cuda-graph", in_set, IMP(exec), LAYOUT_EXEC_GRAPHS, 0},
    {"model.enable_cuda_graph", in_enable_cuda_graph, 0, 0, 0},
    {"--cuda-graph-impl", in_cuda_graph_impl, 0, 0, 0},
    {"model.cuda_graph_impl", in_cuda_graph_impl, 0, 0, 0},
    {"compile.enable", in_compile, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_offload_opts[] = {
    {"--cpu-offloading", in_set, IMP(off_on), 1, 0},
    {"model.cpu_offloading", in_truth, IMP(off_on), 0, 0},
    {"--cpu-offloading-num-layers", in_offload_n, IMP(off_n), 0, LLM_MAX_LAYERS},
    {"model.cpu_offloading_num_layers", in_offload_n, IMP(off_n), 0, LLM_MAX_LAYERS},
    {"model.cpu_offloading_activations", in_truth, IMP(off_acts), 0, 0},
    /* Transformer Engine offloads no weights (deprecated) */
    {"model.cpu_offloading_weights", in_truth_skip, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_lora_rank_opts[] = {
    {"peft", in_peft, 0, 0, 0},
    {"peft.dim", in_int, IMP(lora_dim), 1, LAYOUT_MAX_LORA_RANK},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_lora_targets_opts[] = {
    {"peft.target_modules", in_names, IMP(lora_targets), LK_lora_targets, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_optimizer_dtype_opts[] = {
    {"--use-precision-aware-optimizer", in_pao, 0, 0, 0},
    {"--main-params-dtype", in_opt_dtype, 0, 0, 0},
    {"--main-grads-dtype", in_opt_dtype, 0, 1, 0},
    {"--exp-avg-dtype", in_opt_dtype, 0, 2, 0},
    {"--exp-avg-sq-dtype", in_opt_dtype, 0, 3, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_no_dropout_opts[] = {
    {"--hidden-dropout", in_hidden_dropout, 0, 0, 0},
    {"model.hidden_dropout", in_hidden_dropout, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_clip_grad_opts[] = {{"--clip-grad", in_clip, 0, 0, 0},
						    {"optimizer.clip_grad", in_clip, 0, 0, 0},
						    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_main_grads_opts[] = {
    {"--grad-reduce-in-bf16", in_line, IMP(mg_bf16), 0, 0},
    {"--accumulate-allreduce-grads-in-fp32", in_line, IMP(mg_fp32), 0, 0},
    {"--megatron-fsdp-main-grads-dtype", in_mfsdp_grads, 0, 0, 0},
    {"ddp.megatron_fsdp_main_grads_dtype", in_mfsdp_grads, 0, 0, 0},
    {"ddp.grad_reduce_in_fp32", in_truth, IMP(ddp_fp32), 0, 0},
    {"mixed_precision.grad_reduce_in_fp32", in_truth, IMP(mp_fp32), 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_fsdpdb_opts[] = {
    {"--nccl-ub", in_db_implied, 0, 0, 0},
    {"--megatron-fsdp-max-pool-double-buffer", in_db_implied, 0, 0, 0},
    {"ddp.megatron_fsdp_max_pool_double_buffer", in_db_implied, 0, 0, 0},
    {NULL, NULL, 0, 0, 0}};
static const struct frame_in in_head_dim_opts[] = {{"--kv-channels", in_head_dim, 0, 0, 0},
						   {"model.kv_channels", in_head_dim, 0, 0, 0},
						   {NULL, NULL, 0, 0, 0}};
#undef IMP

/* ---- the values a framework expresses (rows' .value; none: every value) --
 *
 * value_KNOB(fw, m, l): 1 where framework fw expresses knob KNOB at its
 * value in l and m. */

static int value_schedule(int fw, const struct llm *m, const struct layout *l)
{
	(void)m;
	/* Zero-bubble with one stage a rank: Megatron-LM and Bridge have
	 * none; torchtitan's InterleavedZeroBubble (PyTorch's ZB1P) is a
	 * multi-stage schedule, which pipeline_llm runs with 2 stages a
	 * rank or more (torchtitan/distributed/pipeline_parallel.py).
	 * ZB-V is torchtitan's ZBVZeroBubble (PyTorch's
	 * ScheduleZBVZeroBubble, two stages a rank in a V: pipeline_llm's
	 * default for a multi-stage schedule); Megatron-LM and Bridge
	 * have no V.  DualPipeV is torchtitan's DualPipeV (PyTorch's
	 * ScheduleDualPipeV, which pipeline_module_split places in the
	 * same V).  Megatron-LM and Bridge have no GPipe. */
	if (layout_v(l->schedule)) /* torchtitan's ZBVZeroBubble, DualPipeV */
		return fw == FRAME_TORCHTITAN || l->pp == 1;
	if (layout_zb(l->schedule))
		return l->pp == 1;
	return fw == FRAME_TORCHTITAN || l->schedule != LAYOUT_GPIPE || l->pp == 1;
}

/* ZeRO and dp: torchtitan has DDP or FSDP, no ZeRO-1/2. */
static int value_zero(int fw, const struct llm *m, const struct layout *l)
{
	(void)m;
	return fw != FRAME_TORCHTITAN || l->zero == 0 || l->zero == 3;
}

static int value_shard(int fw, const struct llm *m, const struct layout *l)
{
	(void)m;
	return fw != FRAME_TORCHTITAN || l->zero == 3 || l->shard == 0;
}

/* No tf32 switch; torchtitan: bf16, fp32 and float8 only (Bridge's fp4:
 * bf16_with_nvfp4_mixed). */
static int value_dtype(int fw, const struct llm *m, const struct layout *l)
{
	(void)m;
	if (l->dtype == HW_TF32)
		return 0;
	if (fw == FRAME_TORCHTITAN)
		return l->dtype == HW_BF16 || l->dtype == HW_FP32 || l->dtype == HW_FP8;
	return 1;
}

static int value_partition(int fw, const struct llm *m, const struct layout *l)
{
	(void)m;
	/* Megatron-Core's own placements (layout.h): the slots, the first and
	 * last stages' layers, a layout string */
	if (l->partition == LAYOUT_PART_EMBED_LOSS || l->partition == LAYOUT_PART_EMBED ||
	    l->partition == LAYOUT_PART_LOSS || l->partition == LAYOUT_PART_FIRST_LAST ||
	    (l->partition == LAYOUT_PART_GIVEN && l->part_chunks))
		return fw != FRAME_TORCHTITAN;
	if (l->partition != LAYOUT_PART_GIVEN)
		return 0; /* balanced: prism's own placement */
	if (l->part[0] == 0)
		return 1;
	/* a list: Megatron-LM's first and last stages' layers, the middle
	 * ones even (not with virtual stages) */
	if (fw == FRAME_TORCHTITAN || l->vp > 1)
		return 0;
	for (int s = 2; s + 1 < l->pp; s++)
		if (l->part[s] != l->part[1])
			return 0;
	return 1;
}

/* torchtitan rotates by all-gather or its ring only. */
static int value_cp_comm(int fw, const struct llm *m, const struct layout *l)
{
	(void)m;
	return fw != FRAME_TORCHTITAN || l->cp_comm == LAYOUT_CP_ALLGATHER;
}

/* torchtitan's float8: current scaling only. */
static int value_fp8_recipe(int fw, const struct llm *m, const struct layout *l)
{
	(void)m;
	return fw != FRAME_TORCHTITAN || l->fp8_recipe == LAYOUT_FP8_CURRENT;
}

static int value_head_dim(int fw, const struct llm *m, const struct layout *l)
{
	(void)fw, (void)l;
	return !llm_mla(m);
}

/* Megatron-LM and Bridge graph layers, torchtitan compiles. */
static int value_exec(int fw, const struct llm *m, const struct layout *l)
{
	(void)m;
	return l->exec == LAYOUT_EXEC_EAGER ||
	       (fw == FRAME_TORCHTITAN) == (l->exec == LAYOUT_EXEC_COMPILED);
}

/* Megatron-LM's options are its own implementation's (DeepSpeed's
 * grad_accum_dtype is none of them); Bridge's grad_reduce_in_fp32 is
 * DDP's and the distributed optimizer's (Megatron-FSDP's dtype is a
 * torch.dtype field, ddp.megatron_fsdp_main_grads_dtype: read, not
 * written). */
static int value_main_grads(int fw, const struct llm *m, const struct layout *l)
{
	(void)m;
	if (l->main_grads == LAYOUT_GRADS_AUTO)
		return 1;
	if (fw == FRAME_BRIDGE && l->zero >= 2)
		return 0;
	return l->zero == 0 || l->dp_impl == LAYOUT_DP_MEGATRON;
}

/* Megatron-LM's main params are fp32 or fp16. */
static int value_optimizer_dtype(int fw, const struct llm *m, const struct layout *l)
{
	(void)fw, (void)m;
	return l->optimizer_dtype != LAYOUT_OPT_BF16;
}

/* torchtitan's tensor parallel plan is sequence parallel. */
static int value_sp(int fw, const struct llm *m, const struct layout *l)
{
	return fw != FRAME_TORCHTITAN || layout_get(m, l, LK_sp, 0) == 1;
}

/* torchtitan's attention is SDPA's flash kernel. */
static int value_flash(int fw, const struct llm *m, const struct layout *l)
{
	return fw != FRAME_TORCHTITAN || layout_get(m, l, LK_flash, 0) == 1;
}

/* ---- the frameworks' option names, keyed by knob (the table) -------- */

/* A knob's options in each framework; for FX_SPECIAL, its own code: put
 * writes its options (export, name the row's for E->fw), in lists the
 * options it reads (import, NULL-ended; NULL: none); value, where a
 * framework expresses only some of its values, says which. */
struct frame_row {
	struct frame_opt o[FRAME_N];
	void (*put)(struct emit *E, const char *name, const struct llm *m, const struct layout *l);
	const struct frame_in *in;
	/* 1 where fw expresses the knob at its value (NULL: every value) */
	int (*value)(int fw, const struct llm *m, const struct layout *l);
};

/*
 * Megatron-LM: megatron/training/arguments.py.  Megatron-Bridge:
 * ConfigContainer's model (TransformerConfig), train, ddp, comm_overlap
 * and mixed_precision fields (docs/megatron-lm-to-megatron-bridge.md).
 * torchtitan: torchtitan/config/job_config.py, "section.field".
 */
#define R(mh, mn, bh, bn, th, tn) .o = {{mh, mn}, {bh, bn}, {th, tn}}
static const struct frame_row frame_rows[LK_N] = {
    [LK_tp] = {R(FX_INT, "--tensor-model-parallel-size", FX_INT, "model.tensor_model_parallel_size",
		 FX_INT, "parallelism.tensor_parallel_degree")},
    [LK_pp] = {R(FX_INT, "--pipeline-model-parallel-size", FX_INT,
		 "model.pipeline_model_parallel_size", FX_INT,
		 "parallelism.pipeline_parallel_degree")},
    [LK_dp] = {R(FX_INT, NULL, FX_INT, NULL, FX_SPECIAL, "parallelism.data_parallel_shard_degree"),
	       .put = put_dp, .in = in_dp_opts, .value = value_zero},
    [LK_vp] = {R(FX_SPECIAL, "--num-layers-per-virtual-pipeline-stage", FX_SPECIAL,
		 "model.virtual_pipeline_model_parallel_size", FX_SPECIAL,
		 "parallelism.pipeline_parallel_layers_per_stage"),
	       .put = put_vp, .in = in_vp_opts},
    [LK_mbs] = {R(FX_INT, "--micro-batch-size", FX_INT, "train.micro_batch_size", FX_SPECIAL,
		  "training.local_batch_size"),
		.put = put_mbs, .in = in_mbs_opts},
    [LK_microbatches] = {R(FX_SPECIAL, "--global-batch-size", FX_SPECIAL, "train.global_batch_size",
			   FX_SPECIAL, "training.global_batch_size"),
			 .put = put_microbatches, .in = in_microbatches_opts},
    [LK_schedule] = {R(FX_SPECIAL, "--num-layers-per-virtual-pipeline-stage", FX_SPECIAL,
		       "model.virtual_pipeline_model_parallel_size", FX_SPECIAL,
		       "parallelism.pipeline_parallel_schedule"),
		     .put = put_schedule, .in = in_schedule_opts, .value = value_schedule},
    [LK_recompute] = {R(FX_SPECIAL, "--recompute-granularity", FX_SPECIAL,
			"model.recompute_granularity", FX_SPECIAL, "activation_checkpoint.mode"),
		      .put = put_recompute, .in = in_recompute_opts},
    [LK_recompute_modules] = {R(FX_SPECIAL, "--recompute-modules", FX_SPECIAL,
				"model.recompute_modules", FX_INT, NULL),
			      .put = put_recompute_modules, .in = in_rc_modules_opts},
    [LK_zero] = {R(FX_SPECIAL, "--use-distributed-optimizer", FX_SPECIAL,
		   "ddp.use_distributed_optimizer", FX_SPECIAL,
		   "parallelism.data_parallel_shard_degree"),
		 .put = put_zero, .in = in_zero_opts, .value = value_zero},
    [LK_sp] = {R(FX_BOOL, "--sequence-parallel", FX_BOOL, "model.sequence_parallel", FX_SPECIAL,
		 "parallelism.tensor_parallel_degree"),
	       .put = put_none, .value = value_sp},
    [LK_layers] = {R(FX_INT, "--num-layers", FX_INT, "model.num_layers", FX_INT, NULL)},
    [LK_hidden] = {R(FX_INT, "--hidden-size", FX_INT, "model.hidden_size", FX_INT, NULL)},
    [LK_dtype] = {R(FX_SPECIAL, "--bf16", FX_SPECIAL, "mixed_precision", FX_SPECIAL,
		    "training.mixed_precision_param"),
		  .put = put_dtype, .in = in_dtype_opts, .value = value_dtype},
    [LK_fp8_attention] = {R(FX_BOOL, "--fp8-dot-product-attention", FX_BOOL,
			    "model.fp8_dot_product_attention", FX_INT, NULL)},
    /* Megatron-LM's --fp8-recipe (fp8_utils.py Fp8Recipe); Bridge's
     * mixed_precision recipe names (mixed_precision.py); torchtitan's
     * float8 converter: torchao's dynamic (current) per-tensor scaling */
    [LK_fp8_recipe] = {R(FX_SPECIAL, "--fp8-recipe", FX_SPECIAL, "mixed_precision", FX_SPECIAL,
			 "model.converters"),
		       .put = put_fp8_recipe, .in = in_fp8_recipe_opts, .value = value_fp8_recipe},
    [LK_flash] = {R(FX_SPECIAL, "--attention-backend", FX_SPECIAL, "model.attention_backend",
		    FX_SPECIAL, "model.flavor"),
		  .put = put_flash, .in = in_flash_opts, .value = value_flash},
    [LK_partition] = {R(FX_SPECIAL, "--account-for-embedding-in-pipeline-split", FX_SPECIAL,
			"model.account_for_embedding_in_pipeline_split", FX_INT, NULL),
		      .put = put_partition, .in = in_partition_opts, .value = value_partition},
    [LK_shard] = {R(FX_SPECIAL, "--num-distributed-optimizer-instances", FX_SPECIAL,
		    "ddp.num_distributed_optimizer_instances", FX_SPECIAL,
		    "parallelism.data_parallel_replicate_degree"),
		  .put = put_shard, .in = in_shard_opts, .value = value_shard},
    [LK_prefetch] = {R(FX_INT, NULL, FX_INT, NULL, FX_INT, NULL)},
    [LK_bucket_mb] = {R(FX_INT, NULL, FX_INT, NULL, FX_INT, NULL)},
    [LK_overlap_grad] = {R(FX_BOOL, "--overlap-grad-reduce", FX_BOOL, "ddp.overlap_grad_reduce",
			   FX_INT, NULL)},
    [LK_overlap_param] = {R(FX_BOOL, "--overlap-param-gather", FX_BOOL, "ddp.overlap_param_gather",
			    FX_INT, NULL)},
    [LK_tp_overlap] = {R(FX_BOOL, "--tp-comm-overlap", FX_BOOL, "comm_overlap.tp_comm_overlap",
			 FX_BOOL, "parallelism.enable_async_tensor_parallel")},
    [LK_pp_overlap] = {R(FX_NEG, "--no-overlap-p2p-communication", FX_BOOL,
			 "model.overlap_p2p_comm", FX_INT, NULL)},
    [LK_ep] = {R(FX_INT, "--expert-model-parallel-size", FX_INT, "model.expert_model_parallel_size",
		 FX_INT, "parallelism.expert_parallel_degree")},
    [LK_etp] = {R(FX_INT, "--expert-tensor-parallel-size", FX_INT,
		  "model.expert_tensor_parallel_size", FX_INT, NULL)},
    [LK_cp] = {R(FX_INT, "--context-parallel-size", FX_INT, "model.context_parallel_size", FX_INT,
		 "parallelism.context_parallel_degree")},
    [LK_moe_dispatcher] = {R(FX_SPECIAL, "--moe-token-dispatcher-type", FX_SPECIAL,
			     "model.moe_token_dispatcher_type", FX_INT, NULL),
			   .put = put_moe_dispatcher, .in = in_dispatcher_opts},
    [LK_moe_shared_overlap] = {R(FX_BOOL, "--moe-shared-expert-overlap", FX_BOOL,
				 "model.moe_shared_expert_overlap", FX_INT, NULL)},
    /* Bridge's CommOverlapConfig carries it into the model's config. */
    [LK_moe_a2a_overlap] = {R(FX_BOOL, "--overlap-moe-expert-parallel-comm", FX_BOOL,
			      "comm_overlap.overlap_moe_expert_parallel_comm", FX_INT, NULL)},
    [LK_cp_comm] = {R(FX_SPECIAL, "--cp-comm-type", FX_SPECIAL, "model.cp_comm_type", FX_SPECIAL,
		      "parallelism.context_parallel_rotate_method"),
		    .put = put_cp_comm, .in = in_cp_comm_opts, .value = value_cp_comm},
    [LK_imbalance] = {R(FX_INT, NULL, FX_INT, NULL, FX_INT, NULL)},
    [LK_heads] = {R(FX_INT, "--num-attention-heads", FX_INT, "model.num_attention_heads", FX_INT,
		    NULL)},
    [LK_ffn] = {R(FX_INT, "--ffn-hidden-size", FX_INT, "model.ffn_hidden_size", FX_INT, NULL)},
    [LK_seq] = {R(FX_INT, "--seq-length", FX_INT, "model.seq_length", FX_INT, "training.seq_len")},
    [LK_head_dim] = {R(FX_SPECIAL, "--kv-channels", FX_SPECIAL, "model.kv_channels", FX_INT, NULL),
		     .put = put_head_dim, .in = in_head_dim_opts, .value = value_head_dim},
    [LK_window] = {R(FX_INT, NULL, FX_INT, NULL, FX_INT, NULL)},
    [LK_global_every] = {R(FX_INT, NULL, FX_INT, NULL, FX_INT, NULL)},
    [LK_power_w] = {R(FX_INT, NULL, FX_INT, NULL, FX_INT, NULL)},
    /* Megatron-LM's --cuda-graph-impl (default none; --enable-cuda-graph
     * is its older name for local) and Bridge's; torchtitan's
     * [compile] enable. */
    [LK_exec] = {R(FX_SPECIAL, "--cuda-graph-impl", FX_SPECIAL, "model.cuda_graph_impl", FX_SPECIAL,
		   "compile.enable"),
		 .put = put_exec, .in = in_exec_opts, .value = value_exec},
    /* Which modules build the layer is the framework itself. */
    [LK_framework] = {R(FX_INT, NULL, FX_INT, NULL, FX_INT, NULL)},
    /* Megatron-LM's --hidden-dropout (arguments.py, default 0.1: the
     * residual branches' and the embedding's dropout), Bridge's
     * model.hidden_dropout (TransformerConfig); 0 is no_dropout.
     * --attention-dropout, the attention core's (in the fused attention
     * kernels; the unfused path's score dropout, which prism keeps), is
     * not this knob.  torchtitan's models have no dropout option. */
    [LK_no_dropout] = {R(FX_SPECIAL, "--hidden-dropout", FX_SPECIAL, "model.hidden_dropout", FX_INT,
			 NULL),
		       .put = put_no_dropout, .in = in_no_dropout_opts},
    /* Megatron-LM's --cpu-offloading --cpu-offloading-num-layers N
     * (arguments.py; TransformerConfig cpu_offloading*), Bridge's
     * model.cpu_offloading*; torchtitan's job config has no activation
     * offloading. */
    [LK_offload_layers] = {R(FX_SPECIAL, "--cpu-offloading-num-layers", FX_SPECIAL,
			     "model.cpu_offloading_num_layers", FX_INT, NULL),
			   .put = put_offload_layers, .in = in_offload_opts},
    /* LoRA: Megatron-Bridge's ConfigContainer.peft, a LoRA
     * (megatron/bridge/peft/lora.py: dim, alpha, target_modules) that the
     * recipes take as peft="lora"; Megatron-LM's arguments and
     * torchtitan's job config have no LoRA */
    [LK_lora_rank] = {R(FX_INT, NULL, FX_SPECIAL, "peft.dim", FX_INT, NULL), .put = put_lora_rank,
		      .in = in_lora_rank_opts},
    [LK_lora_targets] = {R(FX_INT, NULL, FX_SPECIAL, "peft.target_modules", FX_INT, NULL),
			 .put = put_lora_targets, .in = in_lora_targets_opts},
    [LK_lora_alpha] = {R(FX_INT, NULL, FX_INT, "peft.alpha", FX_INT, NULL)},
    /* Megatron-LM's precision-aware optimizer (arguments.py
     * --use-precision-aware-optimizer, --exp-avg-dtype, --exp-avg-sq-dtype;
     * no bf16 --main-params-dtype: pure bf16 is not Megatron's); Bridge's
     * and torchtitan's not written here.  --clip-grad (OptimizerConfig
     * clip_grad, 0: none). */
    [LK_optimizer_dtype] = {R(FX_SPECIAL, "--use-precision-aware-optimizer", FX_INT, NULL, FX_INT,
			      NULL),
			    .put = put_optimizer_dtype, .in = in_optimizer_dtype_opts,
			    .value = value_optimizer_dtype},
    [LK_clip_grad] = {R(FX_SPECIAL, "--clip-grad", FX_SPECIAL, "optimizer.clip_grad", FX_INT, NULL),
		      .put = put_clip_grad, .in = in_clip_grad_opts},
    /* Megatron-LM's --fp8-param-gather (arguments.py), Bridge's
     * DistributedDataParallelConfig field; torchtitan's torchao float8
     * all-gather (enable_fsdp_float8_all_gather) is not this knob. */
    [LK_fp8_param_gather] = {R(FX_BOOL, "--fp8-param-gather", FX_BOOL, "ddp.fp8_param_gather",
			       FX_INT, NULL)},
    /* Megatron-LM's --fp32-residual-connection (arguments.py, a
     * TransformerConfig field: Bridge's model provider); torchtitan has no
     * such switch. */
    [LK_fp32_residual] = {R(FX_BOOL, "--fp32-residual-connection", FX_BOOL,
			    "model.fp32_residual_connection", FX_INT, NULL)},
    /* Megatron-LM's arguments.py --grad-reduce-in-bf16,
     * --megatron-fsdp-main-grads-dtype and --fsdp-double-buffer;
     * Bridge's DistributedDataParallelConfig fsdp_double_buffer. */
    [LK_main_grads] = {R(FX_SPECIAL, "--grad-reduce-in-bf16", FX_SPECIAL,
			 "mixed_precision.grad_reduce_in_fp32", FX_INT, NULL),
		       .put = put_main_grads, .in = in_main_grads_opts, .value = value_main_grads},
    [LK_fsdp_double_buffer] = {R(FX_BOOL, "--fsdp-double-buffer", FX_BOOL, "ddp.fsdp_double_buffer",
				 FX_INT, NULL),
			       .in = in_fsdpdb_opts},
};
#undef R

/* Knob k at its value in l and m, in framework fw (its row's .value). */
static int expresses_value(int fw, int k, const struct llm *m, const struct layout *l)
{
	return !frame_rows[k].value || frame_rows[k].value(fw, m, l);
}

int frame_expresses(int fw, int k, const struct llm *m, const struct layout *l)
{
	return fw >= 0 && fw < FRAME_N && k >= 0 && k < LK_N && frame_rows[k].o[fw].name &&
	       expresses_value(fw, k, m, l);
}

/* Megatron-LM's model options beyond the knobs (kv heads, vocabulary,
 * SwiGLU, untied head, RoPE, experts, MLA), so that the list launches the
 * model prism priced. */
static void put_model(struct emit *E, const struct llm *m)
{
	int fw = E->fw;
	if (fw == FRAME_TORCHTITAN)
		return;
	if (fw == FRAME_MEGATRON) {
		if (!llm_mla(m) && llm_kv_heads(m) != m->heads) {
			put(E, "--group-query-attention", NULL);
			put_int(E, "--num-query-groups", llm_kv_heads(m));
		}
		put_int(E, "--vocab-size", m->vocab);
		if (m->gated)
			put(E, "--swiglu", NULL);
		if (m->untied)
			put(E, "--untie-embeddings-and-output-weights", NULL);
		if (m->rope)
			put(E, "--position-embedding-type", "rope");
		if (m->experts > 0) {
			put_int(E, "--num-experts", m->experts);
			put_int(E, "--moe-router-topk", m->top_k);
			put_int(E, "--moe-ffn-hidden-size",
				m->expert_ffn > 0 ? m->expert_ffn : m->ffn);
			if (m->shared_experts)
				put_int(E, "--moe-shared-expert-intermediate-size",
					(long)m->shared_experts *
					    (m->expert_ffn > 0 ? m->expert_ffn : m->ffn));
			if (m->moe_period > 0 && m->moe_mask == 1 && !m->first_dense) {
				put_int(E, "--moe-layer-freq", m->moe_period);
			} else if (m->moe_period > 0 && !m->first_dense &&
				   m->layers % m->moe_period == 0) {
				char b[128];
				size_t o = (size_t)snprintf(b, sizeof(b), "'([");
				for (int i = 0; i < m->moe_period; i++)
					o += (size_t)snprintf(b + o, sizeof(b) - o, "%s%d",
							      i ? "," : "", (m->moe_mask >> i) & 1);
				snprintf(b + o, sizeof(b) - o, "]*%d)'", m->layers / m->moe_period);
				put(E, "--moe-layer-freq", b);
			} else if (m->first_dense) {
				char b[64];
				snprintf(b, sizeof(b), "'([0]*%d+[1]*%d)'", m->first_dense,
					 m->layers - m->first_dense);
				put(E, "--moe-layer-freq", b);
			}
			if (m->router == LLM_ROUTER_SIGMOID)
				put(E, "--moe-router-score-function", "sigmoid");
		}
		if (m->mtp_layers > 0)
			put_int(E, "--mtp-num-layers", m->mtp_layers);
		if (llm_hybrid(m)) {
			/* pretrain_mamba.py's (its d_conv 4 and chunk 128 have no
			 * option) */
			char b[LLM_MAX_PATTERN + 3];
			snprintf(b, sizeof(b), "'%s'", m->pattern);
			put(E, "--hybrid-override-pattern", b);
			if (llm_kind_layers(m, LLM_KIND_MAMBA) > 0) {
				put_int(E, "--mamba-num-heads", m->ssm_heads);
				put_int(E, "--mamba-head-dim", m->ssm_head_dim);
				put_int(E, "--mamba-state-dim", m->ssm_state);
				put_int(E, "--mamba-num-groups", m->ssm_groups);
			}
		}
		if (llm_mla(m)) {
			put(E, "--multi-latent-attention", NULL);
			if (m->q_lora_rank)
				put_int(E, "--q-lora-rank", m->q_lora_rank);
			put_int(E, "--kv-lora-rank", m->kv_lora_rank);
			put_int(E, "--qk-head-dim", m->qk_nope_head_dim);
			put_int(E, "--qk-pos-emb-head-dim", m->qk_rope_head_dim);
			put_int(E, "--v-head-dim", m->v_head_dim);
		}
	} else {
		if (!llm_mla(m) && llm_kv_heads(m) != m->heads)
			put_int(E, "model.num_query_groups", llm_kv_heads(m));
		put_bool(E, "model.gated_linear_unit", m->gated);
		put_bool(E, "model.share_embeddings_and_output_weights", !m->untied);
		if (m->experts > 0) {
			put_int(E, "model.num_moe_experts", m->experts);
			put_int(E, "model.moe_router_topk", m->top_k);
			put_int(E, "model.moe_ffn_hidden_size",
				m->expert_ffn > 0 ? m->expert_ffn : m->ffn);
		}
	}
}

int frame_export(FILE *f, int fw, const struct llm *m, const struct layout *l)
{
	struct emit *E = prism_calloc(1, sizeof(*E));
	char gone[768] = "";
	size_t gk = 0;

	if (!E)
		return PRISM_ENOMEM;
	E->f = f;
	E->fw = fw;
	fprintf(f, "# prism: %s on %d GPUs = tp %d x pp %d x dp %d x cp %d (%s)\n",
		m->name[0] ? m->name : "model", gpus_of(l), l->tp, l->pp, l->dp, layout_cp(l),
		fw == FRAME_MEGATRON ? "data parallel = world size / (tp x pp x cp)"
		: fw == FRAME_BRIDGE ? "Megatron-Bridge / NeMo 2 recipe overrides"
				     : "torchtitan job config");
	for (int k = 0; k < LK_N; k++) {
		const struct frame_opt *o = &frame_rows[k].o[fw];
		char v[64];
		if (!layout_applies(m, l, k) && k != LK_microbatches)
			continue;
		if (!o->name || !expresses_value(fw, k, m, l)) {
			const struct layout_knob *K = &layout_knobs[k];
			double x = layout_get(m, l, k, 1);
			if (k == LK_dp && fw != FRAME_TORCHTITAN)
				continue; /* the first line says */
			/* at its default it is the framework's default too */
			if ((K->home == LK_L && x == K->def && k != LK_dp && k != LK_zero &&
			     !(k == LK_partition && l->part[0])) ||
			    (K->home == LK_M && x == 0))
				continue;
			layout_format(m, l, k, 0, v, sizeof(v));
			if (gk + 2 < sizeof(gone))
				gk += (size_t)snprintf(gone + gk, sizeof(gone) - gk, "%s%s %s",
						       gk ? ", " : "", layout_knobs[k].id, v);
			continue;
		}
		switch (o->how) {
		case FX_INT:
			put_int(E, o->name, (long)layout_get(m, l, k, 1));
			break;
		case FX_BOOL:
			if (fw == FRAME_MEGATRON) {
				if (layout_get(m, l, k, 0))
					put(E, o->name, NULL);
			} else {
				put_bool(E, o->name, layout_get(m, l, k, 0) != 0);
			}
			break;
		case FX_NEG:
			if (!layout_get(m, l, k, 0))
				put(E, o->name, NULL);
			break;
		default:
			frame_rows[k].put(E, o->name, m, l);
		}
	}
	put_model(E, m);
	if (fw != FRAME_TORCHTITAN) {
		/* Megatron-LM's as one shell command's continued lines */
		for (int i = 0; i < E->n; i++)
			fprintf(f, "%s%s\n", E->lines[i],
				fw == FRAME_MEGATRON && i + 1 < E->n ? " \\" : "");
	} else {
		/* grouped by section, in the order they came */
		char done[96] = {0};
		for (int i = 0; i < E->n; i++) {
			const char *dot = strchr(E->lines[i], '.');
			size_t sn = dot ? (size_t)(dot - E->lines[i]) : 0;
			if (done[i])
				continue;
			fprintf(f, "[%.*s]\n", (int)sn, E->lines[i]);
			for (int j = i; j < E->n; j++)
				if (!done[j] && strncmp(E->lines[j], E->lines[i], sn + 1) == 0) {
					fprintf(f, "%s\n", E->lines[j] + sn + 1);
					done[j] = 1;
				}
		}
	}
	if (gone[0])
		fprintf(f, "# not expressed in %s: %s\n", frame_name(fw), gone);
	free(E);
	return 0;
}

/* Megatron-LM's --moe-layer-freq beyond "1" and "([0]*K+[1]*N)": an int N
 * (layer i sparse where i % N == 0) or one period of 0s and 1s repeated,
 * "([0,1]*24)", into llm.h's moe_period and moe_mask.  0, or -1 if not
 * that form. */
static int moe_freq_arg(const char *s, struct llm *m)
{
	int n = 0, mask = 0, reps;
	char *end;
	long v = strtol(s, &end, 10);
	if (end != s && *end == '\0')
		return v >= 2 && v <= LLM_MAX_MOE_PERIOD
			   ? (m->moe_period = (int)v, m->moe_mask = 1, 0)
			   : -1;
	if (strncmp(s, "([", 2))
		return -1;
	for (s += 2; (*s == '0' || *s == '1') && n < LLM_MAX_MOE_PERIOD; n++) {
		mask |= (*s++ == '1') << n;
		if (*s == ',')
			s++;
	}
	if (n < 1 || !mask || sscanf(s, "]*%d)", &reps) != 1 || reps < 1)
		return -1;
	m->moe_period = n, m->moe_mask = mask;
	return 0;
}

/* Megatron-LM's model options that are a number or a flag: each an int
 * of struct llm, a number in lo..hi, or a flag when hi is 0 (the field
 * takes 1). */
#define LLM(f) offsetof(struct llm, f)
static const struct megatron_field {
	const char *name;
	size_t off;
	long lo, hi;
} megatron_fields[] = {
    {"--vocab-size", LLM(vocab), 1, LLM_MAX_VOCAB},
    {"--swiglu", LLM(gated), 0, 0},
    {"--untie-embeddings-and-output-weights", LLM(untied), 0, 0},
    {"--use-rotary-position-embeddings", LLM(rope), 0, 0},
    {"--num-experts", LLM(experts), 1, LLM_MAX_EXPERTS},
    {"--moe-router-topk", LLM(top_k), 1, LLM_MAX_EXPERTS},
    {"--moe-ffn-hidden-size", LLM(expert_ffn), 1, LLM_MAX_FFN},
    /* a width: over expert_ffn below */
    {"--moe-shared-expert-intermediate-size", LLM(shared_experts), 1, LLM_MAX_FFN},
    {"--q-lora-rank", LLM(q_lora_rank), 1, LLM_MAX_LORA_RANK},
    {"--kv-lora-rank", LLM(kv_lora_rank), 1, LLM_MAX_LORA_RANK},
    {"--qk-head-dim", LLM(qk_nope_head_dim), 0, LLM_MAX_HEAD_DIM},
    {"--qk-pos-emb-head-dim", LLM(qk_rope_head_dim), 0, LLM_MAX_HEAD_DIM},
    {"--v-head-dim", LLM(v_head_dim), 1, LLM_MAX_HEAD_DIM},
    {"--mamba-num-heads", LLM(ssm_heads), 1, LLM_MAX_SSM_HEADS},
    {"--mamba-head-dim", LLM(ssm_head_dim), 1, LLM_MAX_HEAD_DIM},
    {"--mamba-state-dim", LLM(ssm_state), 1, LLM_MAX_SSM_STATE},
    {"--mamba-num-groups", LLM(ssm_groups), 1, LLM_MAX_SSM_HEADS},
};
#undef LLM

/* Megatron-LM's model options that are not knobs. */
static int megatron_model(const char *path, int line, const char *name, const char *val,
			  struct llm *m, struct imp *I, struct frame_extra *x, int *used,
			  struct prism_err *err)
{
	long v = 0;
	int rc = 0;
	*used = 1;
	for (size_t i = 0; i < sizeof(megatron_fields) / sizeof(megatron_fields[0]); i++) {
		const struct megatron_field *F = &megatron_fields[i];
		int *field = (int *)(void *)((char *)m + F->off);
		if (strcmp(name, F->name) != 0)
			continue;
		if (!F->hi)
			*field = 1;
		else if ((rc = num(path, line, name, val ? val : "", F->lo, F->hi, &v, err)))
			return rc;
		else
			*field = (int)v;
		return 0;
	}
	if (strcmp(name, "--num-query-groups") == 0) {
		if ((rc = num(path, line, name, val ? val : "", 1, LLM_MAX_HEADS, &v, err)))
			return rc;
		I->kv_groups = (int)v;
	} else if (strcmp(name, "--group-query-attention") == 0)
		I->gqa = 1;
	else if (strcmp(name, "--position-embedding-type") == 0)
		m->rope = val && strcmp(val, "rope") == 0;
	else if (strcmp(name, "--moe-router-score-function") == 0)
		m->router =
		    val && strcmp(val, "sigmoid") == 0 ? LLM_ROUTER_SIGMOID : LLM_ROUTER_SOFTMAX;
	else if (strcmp(name, "--moe-layer-freq") == 0) {
		/* "1", or "([0]*K+[1]*N)": K dense layers first */
		char b[64];
		const char *s = unquote(val, b, sizeof(b));
		int k = 0, n = 0;
		if (s && strcmp(s, "1") == 0)
			m->first_dense = 0;
		else if (s && sscanf(s, "([0]*%d+[1]*%d)", &k, &n) == 2 && k >= 0)
			m->first_dense = k;
		else if (s && moe_freq_arg(s, m) == 0)
			; /* an int N, or one period repeated: ([0,1]*24) */
		else
			warn_add(x,
				 "line %d: --moe-layer-freq '%s' is not modelled (every layer a "
				 "mixture of experts)",
				 line, s ? s : "");
	} else if (strcmp(name, "--multi-latent-attention") == 0 ||
		   strcmp(name, "--max-position-embeddings") == 0)
		; /* MLA: its ranks say; positions: --seq-length is the run's */
	else if (strcmp(name, "--hybrid-override-pattern") == 0) {
		/* pretrain_mamba.py's: one character a layer (M, *, -) */
		char b[LLM_MAX_PATTERN + 3];
		const char *s = unquote(val, b, sizeof(b));
		size_t n = s ? strlen(s) : 0;
		if (n < 1 || n > LLM_MAX_PATTERN || strspn(s, "M*-E") != n)
			rc = prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s: line %d: --hybrid-override-pattern '%.40s': expected 1 "
			    "to %d characters M (Mamba), * (attention), - (MLP) or E (MoE)",
			    path, line, s ? s : "", LLM_MAX_PATTERN);
		else
			memcpy(m->pattern, s, n + 1);
	} else if (strcmp(name, "--is-hybrid-model") == 0)
		; /* the pattern says */
	else if (strcmp(name, "--mtp-num-layers") == 0) {
		if ((rc = num(path, line, name, val ? val : "", 0, LLM_MAX_LAYERS, &v, err)))
			return rc;
		x->mtp_layers = (int)v;
		if (x->mtp_layers <= LLM_MAX_MTP)
			m->mtp_layers = x->mtp_layers;
	} else if (strcmp(name, "--nnodes") == 0 || strcmp(name, "--nproc-per-node") == 0 ||
		   strcmp(name, "--nproc_per_node") == 0) {
		/* torchrun's: a number gives the world size; "gpu", "1:4" or
		 * "$NNODES" do not (then --dp gives dp) */
		char *end;
		long n = val ? strtol(val, &end, 10) : 0;
		if (val && *val && !*end && n >= 1 && n <= LAYOUT_MAX_GPUS)
			*(name[2] == 'n' && name[3] == 'n' ? &I->nodes : &I->per_node) = (int)n;
		else
			warn_add(x, "line %d: %s '%s': not a number, so no world size (give --dp)",
				 line, name, val ? val : "");
	} else
		*used = 0;
	return rc;
}

/* One option name = value of framework fw. */
static int option_in(int fw, const char *path, int line, const char *name, const char *val,
		     struct llm *m, struct layout *l, layout_mask *given, struct imp *I,
		     struct frame_extra *x, struct prism_err *err)
{
	int rc, used = 0;
	char q[64];
	const char *s = unquote(val, q, sizeof(q));

	for (int k = 0; k < LK_N; k++) {
		const struct frame_opt *o = &frame_rows[k].o[fw];
		long v = 0;
		int b = 0;
		if (!o->name || o->how == FX_SPECIAL || strcmp(o->name, name) != 0)
			continue;
		if (o->how == FX_INT) {
			const struct layout_knob *K = &layout_knobs[k];
			if (num(path, line, name, s ? s : "", (long)K->lo, (long)K->hi, &v, err))
				return err->code;
			layout_set(m, l, k, (double)v);
		} else if (fw == FRAME_MEGATRON) {
			layout_set(m, l, k, o->how == FX_NEG ? 0 : 1);
		} else {
			if (truth(path, line, name, s, &b, err))
				return err->code;
			layout_set(m, l, k, b);
		}
		*given |= LK_BIT(k);
		return 0;
	}
	{
		/* a knob's own options (FX_SPECIAL), read by its row's code */
		char q2[64];
		struct rd r = {path, line, name, val, s, NULL, m, given, I, x, err};
		r.s = unquote(s, q2, sizeof(q2));
		for (int k = 0; k < LK_N; k++)
			for (const struct frame_in *in = frame_rows[k].in; in && in->name; in++)
				if (strcmp(in->name, name) == 0)
					return in->read(&r, in);
	}
	if (fw == FRAME_MEGATRON) {
		if ((rc = megatron_model(path, line, name, val, m, I, x, &used, err)))
			return rc;
		if (used)
			return 0;
	} else if (fw == FRAME_BRIDGE) {
		long v;
		int b;
		if (strcmp(name, "model.num_query_groups") == 0) {
			if (num(path, line, name, s ? s : "", 1, LLM_MAX_HEADS, &v, err))
				return err->code;
			I->kv_groups = (int)v;
			I->gqa = 1;
			return 0;
		}
		if (strcmp(name, "model.gated_linear_unit") == 0 ||
		    strcmp(name, "model.share_embeddings_and_output_weights") == 0) {
			if (truth(path, line, name, s, &b, err))
				return err->code;
			if (name[6] == 'g')
				m->gated = b;
			else
				m->untied = !b;
			return 0;
		}
		if (strcmp(name, "model.num_moe_experts") == 0 ||
		    strcmp(name, "model.moe_router_topk") == 0 ||
		    strcmp(name, "model.moe_ffn_hidden_size") == 0) {
			if (num(path, line, name, s ? s : "", 1, LLM_MAX_FFN, &v, err))
				return err->code;
			if (name[10] == 'e')
				m->experts = (int)v;
			else if (name[10] == 'r')
				m->top_k = (int)v;
			else
				m->expert_ffn = (int)v;
			return 0;
		}
	}
	{
		size_t k = strlen(I->unread);
		if (k + strlen(name) + 3 < sizeof(I->unread))
			snprintf(I->unread + k, sizeof(I->unread) - k, "%s%s", k ? ", " : "", name);
	}
	return 0;
}

/* ---- settle: the specials into the layout, once every option is in ------ */

/* What settle's phases share. */
struct st {
	int fw;
	const char *path;
	int pp; /* l's, at least 1 */
	struct llm *m;
	struct layout *l;
	layout_mask *given;
	struct imp *I;
	struct frame_extra *x;
	struct prism_err *err;
};

/* The options nobody read; Megatron-LM's flags absent: their default, off
 * (on for FX_NEG). */
static int settle_flags(struct st *S)
{
	if (S->I->unread[0])
		warn_add(S->x, "not read (no effect on prism's model, or not modelled): %s",
			 S->I->unread);
	for (int k = 0; S->fw == FRAME_MEGATRON && k < LK_N; k++) {
		const struct frame_opt *o = &frame_rows[k].o[S->fw];
		if (o->name && (o->how == FX_BOOL || o->how == FX_NEG) &&
		    !(*S->given & LK_BIT(k))) {
			layout_set(S->m, S->l, k, o->how == FX_NEG);
			*S->given |= LK_BIT(k);
		}
	}
	return 0;
}

/* Virtual stages and the schedule. */
static int settle_schedule(struct st *S)
{
	struct imp *I = S->I;
	struct layout *l = S->l;
	if (I->vp_layers > 0) {
		if (!S->m->layers || S->m->layers % (S->pp * I->vp_layers))
			return prism_err_set(S->err, PRISM_EFORMAT,
					     "%s: %d layers per virtual stage do not divide %d "
					     "layers over pp %d",
					     S->path, I->vp_layers, S->m->layers, S->pp);
		I->vp = S->m->layers / (S->pp * I->vp_layers);
	}
	if (layout_v(I->schedule)) {
		/* Two stages a rank in a V (ScheduleZBVZeroBubble and
		 * ScheduleDualPipeV refuse any other number). */
		if (I->vp > 0 && I->vp != 2)
			return prism_err_set(
			    S->err, PRISM_EFORMAT,
			    "%s: %s runs 2 stages a rank, the layers "
			    "per stage make %d",
			    S->path, I->schedule == LAYOUT_ZBV ? "ZBVZeroBubble" : "DualPipeV",
			    I->vp);
		l->schedule = I->schedule;
		l->vp = 1;
	} else if (I->vp > 1 || I->schedule == LAYOUT_INTERLEAVED) {
		l->schedule = LAYOUT_INTERLEAVED;
		l->vp = I->vp > 1 ? I->vp : 2;
		*S->given |= LK_BIT(LK_vp);
	} else if (I->schedule >= 0) {
		l->schedule = I->schedule;
	} else {
		l->schedule = LAYOUT_1F1B;
	}
	*S->given |= LK_BIT(LK_schedule);
	return 0;
}

static int settle_recompute(struct st *S)
{
	struct imp *I = S->I;
	S->l->recompute = I->rc_gran;
	if (I->rc_gran == LAYOUT_RECOMPUTE_FULL && I->rc_layers > 1)
		warn_add(S->x,
			 "--recompute-num-layers %d: prism's full recompute is of every "
			 "layer (1)",
			 I->rc_layers);
	*S->given |= LK_BIT(LK_recompute);
	if (I->rc_modules > 0) {
		S->l->recompute_modules = I->rc_modules;
		*S->given |= LK_BIT(LK_recompute_modules);
	}
	return 0;
}

/* LoRA: Bridge's LoRA() defaults, dim 32 on all four targets. */
static int settle_lora(struct st *S)
{
	struct imp *I = S->I;
	if (I->peft != 1 && (I->lora_dim || I->lora_targets || (*S->given & LK_BIT(LK_lora_alpha))))
		return prism_err_set(S->err, PRISM_EFORMAT, "%s: peft.* options without peft=lora",
				     S->path);
	if (I->peft == 1) {
		S->l->lora_rank = I->lora_dim ? I->lora_dim : 32;
		*S->given |= LK_BIT(LK_lora_rank);
		if (I->lora_targets > 0) {
			S->l->lora_targets = I->lora_targets;
			*S->given |= LK_BIT(LK_lora_targets);
		}
	}
	return 0;
}

/* ZeRO and its sharding group; torchtitan's dp and microbatch too. */
static int settle_zero(struct st *S)
{
	struct imp *I = S->I;
	struct layout *l = S->l;
	if (S->fw == FRAME_TORCHTITAN) {
		if (I->shard_deg > 1 || I->shard_deg == -1) {
			/* torchtitan shards with FSDP2's fully_shard
			 * (torchtitan/distributed/parallel_dims.py,
			 * models/llama3/infra/parallelize.py apply_fsdp) */
			l->zero = 3;
			l->dp_impl = LAYOUT_DP_FSDP2;
			*S->given |= LK_BIT(LK_dp_impl);
			if (I->rep > 1 && I->shard_deg > 0)
				l->shard = I->shard_deg * layout_cp(l);
		} else {
			l->zero = 0;
		}
		if (I->shard_deg > 0 && I->rep > 0) {
			/* the world is tp pp cp x replicate x shard */
			l->dp = I->rep * I->shard_deg;
			*S->given |= LK_BIT(LK_dp);
		}
		*S->given |= LK_BIT(LK_shard);
		if (I->pp_mbs > 0 && S->pp > 1) {
			l->mbs = I->pp_mbs;
		} else if (I->local_batch > 0) {
			l->mbs = I->local_batch;
		}
		if (I->local_batch > 0 || I->pp_mbs > 0)
			*S->given |= LK_BIT(LK_mbs);
	} else {
		l->zero = I->mfsdp ? (I->strategy > 0 ? I->strategy : 3) : I->distopt ? 1 : 0;
		l->shard = 0;
		S->x->instances = I->instances > 1 ? I->instances : 0; /* frame_resolve */
		*S->given |= LK_BIT(LK_shard);
	}
	*S->given |= LK_BIT(LK_zero);
	return 0;
}

/* The GEMMs' precision and fp8's recipe. */
static int settle_precision(struct st *S)
{
	struct imp *I = S->I;
	struct layout *l = S->l;
	if (S->fw == FRAME_MEGATRON) {
		l->dtype = I->fp4    ? HW_FP4
			   : I->fp8  ? HW_FP8
			   : I->fp16 ? HW_FP16
			   : I->bf16 ? HW_BF16
				     : HW_FP32;
	} else if (S->fw == FRAME_TORCHTITAN) {
		l->dtype = I->fp8 ? HW_FP8 : I->given_dtype ? I->dtype : HW_BF16;
	} else {
		l->dtype = I->given_dtype ? I->dtype : HW_BF16;
	}
	*S->given |= LK_BIT(LK_dtype);
	if (S->fw == FRAME_TORCHTITAN && l->dtype == HW_FP8)
		l->fp8_recipe = LAYOUT_FP8_CURRENT; /* torchao's dynamic scaling */
	else if (I->fp8_recipe >= 0)
		l->fp8_recipe = I->fp8_recipe;
	*S->given |= LK_BIT(LK_fp8_recipe);
	return 0;
}

/* Megatron-LM's uneven split: the first and last stages' layers, the
 * other stages sharing the rest evenly. */
static int settle_first_last(struct st *S)
{
	struct imp *I = S->I;
	int pp = S->pp, mid = pp - (I->first_layers > 0) - (I->last_layers > 0);
	int rest = S->m->layers - I->first_layers - I->last_layers, each;
	if (pp < 2 || pp > LAYOUT_MAX_STAGES || rest < 0 || (mid > 0 && rest % mid) ||
	    (mid == 0 && rest) || (mid > 0 && rest / mid < 1))
		return prism_err_set(S->err, PRISM_EFORMAT,
				     "%s: %d layers do not split into %d stages of "
				     "%d first, %d last and the rest even",
				     S->path, S->m->layers, pp, I->first_layers, I->last_layers);
	each = mid > 0 ? rest / mid : 0;
	S->l->partition = LAYOUT_PART_GIVEN;
	for (int s = 0; s < pp; s++)
		S->l->part[s] = (uint16_t)(s == 0 && I->first_layers	   ? I->first_layers
					   : s == pp - 1 && I->last_layers ? I->last_layers
									   : each);
	return 0;
}

/* Attention and the placement of the layers (torchtitan: sp and flash as
 * its plans imply them). */
static int settle_partition(struct st *S)
{
	struct imp *I = S->I;
	struct layout *l = S->l;
	if (S->fw == FRAME_TORCHTITAN) {
		l->sp = l->tp > 1;
		*S->given |= LK_BIT(LK_sp) | LK_BIT(LK_flash);
		return 0;
	}
	l->flash = I->flash;
	*S->given |= LK_BIT(LK_flash);
	if (I->first_layers || I->last_layers) {
		if (settle_first_last(S))
			return S->err->code;
	} else if (I->layout[0]) {
		/* Megatron-Core's layout: its chunks give vp where none is */
		if (layout_partition_parse(I->layout, l, S->err))
			return prism_err_set(S->err, PRISM_EFORMAT, "%s: %s", S->path, S->err->msg);
		if (S->pp > 0 && l->part_chunks % S->pp == 0 && l->part_chunks / S->pp > 1 &&
		    l->vp <= 1) {
			l->vp = l->part_chunks / S->pp;
			l->schedule = LAYOUT_INTERLEAVED;
			*S->given |= LK_BIT(LK_vp) | LK_BIT(LK_schedule);
		}
	} else if (I->embed && I->loss)
		l->partition = LAYOUT_PART_EMBED_LOSS;
	else if (I->embed || I->loss)
		l->partition = I->embed ? LAYOUT_PART_EMBED : LAYOUT_PART_LOSS;
	*S->given |= LK_BIT(LK_partition);
	return 0;
}

/* The knobs read as they are: cp's form, the execution, clipping,
 * dropout. */
static int settle_plain(struct st *S)
{
	S->l->cp_comm = S->I->cp_comm;
	*S->given |= LK_BIT(LK_cp_comm);
	S->l->exec = S->I->exec;
	*S->given |= LK_BIT(LK_exec);
	if (S->I->clip >= 0) {
		S->l->clip_grad = S->I->clip;
		*S->given |= LK_BIT(LK_clip_grad);
	}
	if (S->I->drop >= 0) {
		S->l->no_dropout = S->I->drop;
		*S->given |= LK_BIT(LK_no_dropout);
	}
	return 0;
}

/* Megatron-LM's precision-aware optimizer as prism models it: bf16
 * moments, fp32 main params and gradients (optimizer_dtype bf16-states). */
static int settle_optimizer(struct st *S)
{
	struct imp *I = S->I;
	const char *d[4];
	if (S->fw != FRAME_MEGATRON)
		return 0;
	for (int j = 0; j < 4; j++)
		d[j] = I->opt_dt[j][0] ? I->opt_dt[j] : "fp32";
	if (I->pao && (strcmp(d[0], "fp32") || strcmp(d[1], "fp32") || strcmp(d[2], "bf16") ||
		       strcmp(d[3], "bf16")))
		return prism_err_set(
		    S->err, PRISM_EARG,
		    "%s:%d: --use-precision-aware-optimizer with main params %s, main "
		    "grads %s, exp_avg %s, exp_avg_sq %s: prism models bf16 moments with "
		    "fp32 main params and grads only (optimizer_dtype bf16-states)",
		    S->path, I->pao, d[0], d[1], d[2], d[3]);
	S->l->optimizer_dtype = I->pao ? LAYOUT_OPT_BF16_STATES : LAYOUT_OPT_FP32;
	*S->given |= LK_BIT(LK_optimizer_dtype);
	return 0;
}

/* The main gradients' dtype (main_grads) and Megatron-FSDP's double
 * buffers, as each implementation reads its options: under Megatron-FSDP
 * (zero 2/3) its own main grads dtype alone (Megatron-LM's
 * mcore_fsdp_adapter.py passes megatron_fsdp_main_grads_dtype, not
 * grad_reduce_in_fp32), and --nccl-ub or the max-pool double buffer turn
 * the double buffers on (arguments.py, DistributedDataParallelConfig);
 * under DDP and the distributed optimizer Megatron-LM's
 * --grad-reduce-in-bf16 or --accumulate-allreduce-grads-in-fp32, Bridge's
 * mixed_precision.grad_reduce_in_fp32 (MixedPrecisionConfig.setup writes
 * it over ddp.grad_reduce_in_fp32; the bf16 recipes' is true).  Options
 * that say both dtypes are refused; ones with no effect are read with a
 * warning. */
static int settle_grads(struct st *S)
{
	struct imp *I = S->I;
	struct layout *l = S->l;
	int mfsdp = l->zero >= 2 && l->dp_impl == LAYOUT_DP_MEGATRON, mg = LAYOUT_GRADS_AUTO;
	if (I->db_line) {
		if (mfsdp) {
			l->fsdp_double_buffer = 1;
			*S->given |= LK_BIT(LK_fsdp_double_buffer);
		} else if (strcmp(I->db_name, "--nccl-ub")) {
			warn_add(S->x, "%s: Megatron-FSDP's (zero 2/3), no effect here",
				 I->db_name);
		}
	}
	if (I->mg_bf16 && I->mg_fp32)
		return prism_err_set(
		    S->err, PRISM_EFORMAT,
		    "%s:%d: --grad-reduce-in-bf16 with "
		    "--accumulate-allreduce-grads-in-fp32 (line %d): the main "
		    "gradients in bf16 and in fp32 (Megatron-LM takes bf16): give one",
		    S->path, I->mg_bf16, I->mg_fp32);
	if (I->ddp_fp32 >= 0 && I->mp_fp32 >= 0 && I->ddp_fp32 != I->mp_fp32)
		return prism_err_set(
		    S->err, PRISM_EFORMAT,
		    "%s: ddp.grad_reduce_in_fp32 %s with "
		    "mixed_precision.grad_reduce_in_fp32 %s: Megatron-Bridge's "
		    "MixedPrecisionConfig.setup writes the latter over the former: "
		    "give one value",
		    S->path, I->ddp_fp32 ? "true" : "false", I->mp_fp32 ? "true" : "false");
	if (mfsdp) {
		if (I->mg_bf16 || I->mg_fp32 || I->ddp_fp32 >= 0 || I->mp_fp32 >= 0)
			warn_add(S->x,
				 "%s: no effect on Megatron-FSDP's main gradients (its "
				 "main grads dtype, default auto: the model's)",
				 I->mg_bf16   ? "--grad-reduce-in-bf16"
				 : I->mg_fp32 ? "--accumulate-allreduce-grads-in-fp32"
					      : "grad_reduce_in_fp32");
		if (I->mfsdp_mg >= 0)
			mg = I->mfsdp_mg;
	} else {
		if (I->mfsdp_mg > LAYOUT_GRADS_AUTO)
			warn_add(S->x, "Megatron-FSDP's main grads dtype without Megatron-FSDP "
				       "(zero 2/3): no effect");
		if (I->ddp_fp32 == 0 && I->mp_fp32 < 0 && l->dtype != HW_FP32 &&
		    l->dtype != HW_FP16)
			warn_add(S->x, "ddp.grad_reduce_in_fp32 false: the mixed precision "
				       "recipe's grad_reduce_in_fp32 (true) is written over it "
				       "(MixedPrecisionConfig.setup): set "
				       "mixed_precision.grad_reduce_in_fp32 false for bf16 main "
				       "gradients");
		if (I->mg_bf16 || I->mp_fp32 == 0)
			mg = LAYOUT_GRADS_BF16;
		else if (I->mg_fp32 || I->mp_fp32 == 1)
			mg = LAYOUT_GRADS_FP32;
	}
	if (mg == LAYOUT_GRADS_AUTO)
		return 0;
	l->main_grads = mg;
	if (!layout_lowp_grads(l, 1)) {
		l->main_grads = LAYOUT_GRADS_AUTO;
		warn_add(S->x,
			 "the main gradients' dtype: no effect with %s weights and this "
			 "optimizer",
			 hw_dtype_name(l->dtype));
		return 0;
	}
	*S->given |= LK_BIT(LK_main_grads);
	return 0;
}

/* Offloading: Megatron-LM's count alone turns it on (arguments.py:
 * cpu_offloading_num_layers > 0), Bridge's needs model.cpu_offloading. */
static int settle_offload(struct st *S)
{
	struct imp *I = S->I;
	if (I->off_n > 0 || I->off_on >= 0) {
		S->l->offload_layers =
		    (I->off_on == 1 || (I->off_on < 0 && I->off_mlm)) && I->off_acts ? I->off_n : 0;
		*S->given |= LK_BIT(LK_offload_layers);
	}
	return 0;
}

static int settle_dispatcher(struct st *S)
{
	struct imp *I = S->I;
	if (I->disp >= 0) {
		S->l->moe_dispatcher =
		    I->disp == LAYOUT_DISP_FLEX && I->hybridep ? LAYOUT_DISP_HYBRIDEP : I->disp;
		*S->given |= LK_BIT(LK_moe_dispatcher);
	}
	return 0;
}

/* torchtitan's DualPipeV overlap of one pass's expert all-to-alls with the
 * other's compute in each F&B pair (pipeline_parallel_expert_parallel_
 * overlap, default true; torchtitan/distributed/dual_pipe_v.py
 * get_dual_pipe_v_flag: with pp > 1 and ep > 1, and then no activation
 * checkpointing, which it refuses).  prism pairs them where
 * layout_a2a_overlap says, a consequence of the other knobs: a file that
 * turns the overlap off where prism pairs, or leaves it on where prism
 * does not, is read with a warning. */
static int settle_dpv_overlap(struct st *S)
{
	const struct layout *l = S->l;
	const char *mode = l->recompute == LAYOUT_RECOMPUTE_FULL ? "full" : "selective";
	int on = S->I->ep_overlap != 0;
	if (S->fw != FRAME_TORCHTITAN || l->schedule != LAYOUT_DUALPIPEV || S->pp < 2 ||
	    layout_ep(l) < 2)
		return 0;
	if (on && l->recompute != LAYOUT_RECOMPUTE_NONE) {
		if (S->I->ep_overlap_line)
			return prism_err_set(
			    S->err, PRISM_EFORMAT,
			    "%s:%d: parallelism.pipeline_parallel_expert_parallel_overlap true "
			    "with DualPipeV, expert parallelism %d and activation_checkpoint.mode "
			    "%s: torchtitan refuses the overlap with activation checkpointing "
			    "(dual_pipe_v.py get_dual_pipe_v_flag)",
			    S->path, S->I->ep_overlap_line, layout_ep(l), mode);
		return prism_err_set(
		    S->err, PRISM_EFORMAT,
		    "%s: DualPipeV with expert parallelism %d and activation_checkpoint.mode %s: "
		    "torchtitan refuses its default expert-parallel overlap with activation "
		    "checkpointing (dual_pipe_v.py get_dual_pipe_v_flag): set "
		    "parallelism.pipeline_parallel_expert_parallel_overlap = false",
		    S->path, layout_ep(l), mode);
	}
	if (!on && layout_a2a_overlap(S->m, l))
		warn_add(S->x,
			 "parallelism.pipeline_parallel_expert_parallel_overlap false: prism "
			 "overlaps DualPipeV's F&B pairs' expert all-to-alls all the same (no "
			 "knob turns that off)");
	else if (on && S->m->experts > 0 && !layout_a2a_overlap(S->m, l))
		warn_add(S->x,
			 "DualPipeV's expert-parallel overlap (torchtitan's default) is not "
			 "modelled with torch.compile or Mamba layers: prism runs the F&B pairs "
			 "back to back");
	return 0;
}

/* The model's options beyond the knobs: kv heads, shared experts' width
 * in experts, MLA's heads, the launcher's world size. */
static int settle_model(struct st *S)
{
	struct imp *I = S->I;
	struct llm *m = S->m;
	if (S->fw == FRAME_MEGATRON) {
		if (I->gqa && I->kv_groups)
			m->kv_heads = I->kv_groups;
		if (m->experts && m->shared_experts) {
			int fe = m->expert_ffn > 0 ? m->expert_ffn : m->ffn;
			if (fe <= 0 || m->shared_experts % fe)
				return prism_err_set(S->err, PRISM_EFORMAT,
						     "%s: --moe-shared-expert-intermediate-size %d "
						     "is not a multiple of the experts' width %d",
						     S->path, m->shared_experts, fe);
			m->shared_experts /= fe;
		}
		if (m->kv_lora_rank > 0)
			m->kv_heads = 0; /* MLA: every head its own K and V */
		if (I->nodes > 0 && I->per_node > 0)
			S->x->gpus = I->nodes * I->per_node;
	} else if (S->fw == FRAME_BRIDGE && I->gqa) {
		m->kv_heads = I->kv_groups;
	}
	llm_kv_settle(m);
	return 0;
}

/* Settle the specials into l once every option is read: the phases in
 * order (the first error wins; the dtype before fp8's recipe, the
 * schedule before the placement that may change it). */
static int settle(int fw, const char *path, struct llm *m, struct layout *l, layout_mask *given,
		  struct imp *I, struct frame_extra *x, struct prism_err *err)
{
	static int (*const phase[])(struct st *) = {
	    settle_flags,     settle_schedule,	 settle_recompute,   settle_lora,      settle_zero,
	    settle_precision, settle_partition,	 settle_plain,	     settle_optimizer, settle_grads,
	    settle_offload,   settle_dispatcher, settle_dpv_overlap, settle_model};
	struct st S = {fw, path, l->pp > 0 ? l->pp : 1, m, l, given, I, x, err};
	for (size_t i = 0; i < sizeof(phase) / sizeof(phase[0]); i++) {
		int rc = phase[i](&S);
		if (rc)
			return rc;
	}
	return 0;
}

/* The next option of a Megatron-LM argument list or of Bridge overrides:
 * whitespace-separated words, '\' line continuations, '#' comments, quotes
 * kept whole. */
static int next_word(const char *t, size_t n, size_t *i, int *line, char *w, size_t wn)
{
	size_t k = 0;
	char quote = 0;
	for (;;) {
		while (*i < n && (t[*i] == ' ' || t[*i] == '\t' || t[*i] == '\r' || t[*i] == '\n' ||
				  (t[*i] == '\\' && *i + 1 < n && t[*i + 1] == '\n'))) {
			if (t[*i] == '\n')
				(*line)++;
			(*i)++;
		}
		if (*i < n && t[*i] == '#') {
			while (*i < n && t[*i] != '\n')
				(*i)++;
			continue;
		}
		break;
	}
	if (*i >= n)
		return 0;
	while (*i < n) {
		char c = t[*i];
		if (!quote && (c == ' ' || c == '\t' || c == '\r' || c == '\n'))
			break;
		if (!quote && c == '\\' && *i + 1 < n && t[*i + 1] == '\n')
			break;
		if (quote && c == quote)
			quote = 0;
		else if (!quote && (c == '"' || c == '\''))
			quote = c;
		if (k + 1 < wn)
			w[k++] = c;
		(*i)++;
	}
	w[k] = '\0';
	return 1;
}

int frame_import(int fw, const char *path, const char *text, size_t n, const struct llm *base,
		 struct llm *m, struct layout *l, layout_mask *given, struct frame_extra *x,
		 struct prism_err *err)
{
	struct imp I;
	size_t i = 0;
	int line = 1, rc;
	char w[256], v[256], section[64] = "";

	if (base)
		*m = *base;
	else
		memset(m, 0, sizeof(*m));
	memset(x, 0, sizeof(*x));
	memset(&I, 0, sizeof(I));
	layout_default(l);
	*given = 0;
	I.schedule = -1;
	I.disp = -1;
	I.fp8_recipe = -1;
	I.off_on = -1;
	I.off_acts = 1;
	I.clip = -1;
	I.drop = -1;
	I.flash = 1;
	I.ep_overlap = -1;
	I.mfsdp_mg = I.ddp_fp32 = I.mp_fp32 = -1;
	if (fw == FRAME_TORCHTITAN) {
		/* TOML: [section] headers and key = value lines */
		while (i < n) {
			size_t e = i, a, b;
			char *eq;
			while (e < n && text[e] != '\n')
				e++;
			snprintf(w, sizeof(w), "%.*s", (int)(e - i < 255 ? e - i : 255), text + i);
			i = e + 1;
			if ((eq = strchr(w, '#')) && !strchr(w, '"'))
				*eq = '\0';
			for (a = 0; w[a] == ' ' || w[a] == '\t'; a++)
				;
			b = strlen(w);
			while (b > a && (w[b - 1] == ' ' || w[b - 1] == '\t' || w[b - 1] == '\r'))
				w[--b] = '\0';
			if (w[a] == '\0') {
				line++;
				continue;
			}
			if (w[a] == '[') {
				char *close = strchr(w + a, ']');
				if (!close)
					return prism_err_set(err, PRISM_EFORMAT,
							     "%s:%d: a section without ']'", path,
							     line);
				snprintf(section, sizeof(section), "%.*s", (int)(close - w - a - 1),
					 w + a + 1);
			} else if ((eq = strchr(w + a, '='))) {
				char key[192];
				char *kend = eq;
				const char *val = eq + 1;
				while (kend > w + a && (kend[-1] == ' ' || kend[-1] == '\t'))
					kend--;
				while (*val == ' ' || *val == '\t')
					val++;
				snprintf(key, sizeof(key), "%s.%.*s", section, (int)(kend - w - a),
					 w + a);
				if ((rc = option_in(fw, path, line, key, val, m, l, given, &I, x,
						    err)))
					return rc;
			} else {
				return prism_err_set(err, PRISM_EFORMAT,
						     "%s:%d: expected [section] or key = value",
						     path, line);
			}
			line++;
		}
	} else {
		while (next_word(text, n, &i, &line, w, sizeof(w))) {
			char *eq;
			if (fw == FRAME_BRIDGE) {
				if (!(eq = strchr(w, '=')))
					continue; /* "python", the script */
				*eq = '\0';
				if ((rc = option_in(fw, path, line, w, eq + 1, m, l, given, &I, x,
						    err)))
					return rc;
				continue;
			}
			if (w[0] == '"' || w[0] == '\'') {
				/* "--opt=value" quoted whole */
				char q[256];
				snprintf(w, sizeof(w), "%s", unquote(strcpy(q, w), v, sizeof(v)));
			}
			if (w[0] != '-' || w[1] != '-')
				continue; /* the launcher, the script, a stray value */
			if ((eq = strchr(w, '='))) {
				*eq = '\0';
				snprintf(v, sizeof(v), "%s", eq + 1);
			} else {
				/* a value follows unless the next word is an option;
				 * --recompute-modules takes every one up to the next
				 * option (argparse's nargs), joined by spaces */
				size_t j = i, vn = 0;
				int l2 = line, many = strcmp(w, "--recompute-modules") == 0;
				char u[sizeof(v)];
				v[0] = '\0';
				while (next_word(text, n, &j, &l2, u, sizeof(u)) &&
				       !(u[0] == '-' && u[1] == '-') && (!vn || many) &&
				       vn + 1 < sizeof(v)) {
					vn += (size_t)snprintf(v + vn, sizeof(v) - vn, "%s%s",
							       vn ? " " : "", u);
					i = j;
					line = l2;
				}
			}
			if ((rc = option_in(fw, path, line, w, v[0] ? v : NULL, m, l, given, &I, x,
					    err)))
				return rc;
		}
	}
	return settle(fw, path, m, l, given, &I, x, err);
}

int frame_resolve(struct layout *l, layout_mask *given, int gpus, int gbs, int instances,
		  struct prism_err *err)
{
	if (gpus > 0) {
		int per = l->tp * l->pp * layout_cp(l);
		if (per < 1 || gpus % per)
			return prism_err_set(err, PRISM_EARG,
					     "%d GPUs do not divide by tp %d x pp %d x cp %d", gpus,
					     l->tp, l->pp, layout_cp(l));
		l->dp = gpus / per;
		*given |= LK_BIT(LK_dp);
	}
	if (instances > 1) {
		/* each instance shards over its dp x cp / instances ranks */
		int dpc = layout_dpc(l);
		if (dpc % instances)
			return prism_err_set(err, PRISM_EARG,
					     "%d distributed-optimizer instances do not divide dp "
					     "%d x cp %d",
					     instances, l->dp, layout_cp(l));
		l->shard = dpc / instances;
		*given |= LK_BIT(LK_shard);
	}
	if (gbs > 0) {
		long per = (long)l->mbs * l->dp;
		if (per < 1 || gbs % per)
			return prism_err_set(err, PRISM_EARG,
					     "global batch %d is not a multiple of mbs %d x dp %d",
					     gbs, l->mbs, l->dp);
		l->microbatches = (int)(gbs / per);
		*given |= LK_BIT(LK_microbatches);
	}
	return 0;
}

/* Megatron-LM's model: what arguments.py requires and defaults. */
static int megatron_model_done(const char *path, struct llm *m, struct prism_err *err)
{
	static const char *const need[] = {"--num-layers", "--hidden-size", "--num-attention-heads",
					   "--seq-length", "--vocab-size"};
	const int *val[] = {&m->layers, &m->hidden, &m->heads, &m->seq, &m->vocab};
	const char *base = strrchr(path, '/');
	for (int i = 0; i < 5; i++)
		if (*val[i] <= 0)
			return prism_err_set(err, PRISM_EFORMAT, "%s: missing %s%s", path, need[i],
					     i == 4 ? " (the tokenizer's vocabulary)" : "");
	{
		const char *stem = base ? base + 1 : path, *dot = strrchr(stem, '.');
		int k = dot && dot != stem ? (int)(dot - stem) : (int)strlen(stem);
		snprintf(m->name, sizeof(m->name), "%.*s", k < 63 ? k : 63, stem);
	}
	/* arguments.py: 4h, or with --swiglu int(4h x 2/3 / 64) x 64 */
	if (m->ffn <= 0)
		m->ffn = m->gated ? (int)((4.0 * m->hidden * 2 / 3) / 64) * 64 : 4 * m->hidden;
	if (m->experts > 0 && m->top_k <= 0)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: --num-experts needs --moe-router-topk", path);
	if (m->experts > 0 && m->first_dense >= m->layers)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: --moe-layer-freq leaves no mixture-of-experts layer",
				     path);
	if (m->heads % llm_kv_heads(m))
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: --num-attention-heads %d is not a multiple of "
				     "--num-query-groups %d",
				     path, m->heads, m->kv_heads);
	llm_kv_settle(m);
	if (!m->head_dim && !llm_mla(m) && m->hidden % m->heads)
		return prism_err_set(err, PRISM_EFORMAT,
				     "%s: --hidden-size %d is not a multiple of "
				     "--num-attention-heads %d: give --kv-channels",
				     path, m->hidden, m->heads);
	if (llm_mla(m) && m->v_head_dim <= 0)
		return prism_err_set(err, PRISM_EFORMAT, "%s: --kv-lora-rank needs --v-head-dim",
				     path);
	if (llm_hybrid(m)) {
		/* TransformerConfig's defaults (head dim 64, state 128, 8
		 * groups) and MambaMixer's (expand 2, d_conv 4, chunk 128). */
		if (strlen(m->pattern) != (size_t)m->layers)
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s: --num-layers %d differs from the %zu layers of "
					     "--hybrid-override-pattern",
					     path, m->layers, strlen(m->pattern));
		if (m->ssm_head_dim <= 0)
			m->ssm_head_dim = 64;
		if (m->ssm_heads <= 0)
			m->ssm_heads = 2 * m->hidden / m->ssm_head_dim > 0
					   ? 2 * m->hidden / m->ssm_head_dim
					   : 1;
		if (m->ssm_state <= 0)
			m->ssm_state = 128;
		if (m->ssm_groups <= 0)
			m->ssm_groups = 8;
		m->ssm_conv = 4;
		m->ssm_chunk = 128;
		if (!llm_kind_layers(m, LLM_KIND_MAMBA))
			m->ssm_heads = m->ssm_head_dim = m->ssm_state = m->ssm_groups =
			    m->ssm_conv = m->ssm_chunk = 0;
		else if (m->ssm_heads % m->ssm_groups)
			return prism_err_set(err, PRISM_EFORMAT,
					     "%s: --mamba-num-heads %d is not a multiple of "
					     "--mamba-num-groups %d",
					     path, m->ssm_heads, m->ssm_groups);
		if ((m->experts > 0) != (llm_kind_layers(m, LLM_KIND_MOE) > 0) ||
		    m->first_dense > 0 || m->moe_period > 0 || m->mtp_layers > 0)
			return prism_err_set(
			    err, PRISM_EFORMAT,
			    "%s: a hybrid model's MoE layers are its pattern's E "
			    "layers (--num-experts with them; no --moe-layer-freq), "
			    "its multi-token prediction is not modelled",
			    path);
	}
	return 0;
}

int frame_load_model(const char *path, struct llm *m, struct frame_extra *x, struct prism_err *err)
{
	int kind = frame_sniff(path), rc;
	char *buf;
	size_t len;

	memset(x, 0, sizeof(*x));
	if (kind == FRAME_FILE_CFG)
		return llm_load(path, m, err);
	if ((rc = frame_read(path, &buf, &len, err)))
		return rc;
	if (kind == FRAME_FILE_HF) {
		rc = frame_hf_parse(path, buf, len, m, x, err);
	} else {
		struct layout l;
		layout_mask given;
		rc = frame_import(FRAME_MEGATRON, path, buf, len, NULL, m, &l, &given, x, err);
		if (!rc)
			rc = megatron_model_done(path, m, err);
	}
	free(buf);
	return rc;
}
