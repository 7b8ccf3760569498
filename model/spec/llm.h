/*
 * llm.h - a GPT-style transformer's shape, and the work it does.
 *
 * FLOPs follow Narayanan et al., "Efficient Large-Scale Language Model
 * Training on GPU Clusters Using Megatron-LM" (SC21), eq. (3): a training
 * iteration on a batch of B sequences of s tokens through l layers of
 * hidden size h with vocabulary V costs
 *     72 B s l h^2 (1 + s/(6h) + V/(12 l h))
 * FLOPs (forward + backward, matrix multiplications only), and with full
 * activation recomputation (one more forward)
 *     96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
 * The formula assumes an FFN of 4h; llm_flops_iter() counts the GEMMs one
 * by one, so it also holds for other FFN sizes and equals the formula when
 * ffn = 4h.
 */
#ifndef PRISM_LLM_H
#define PRISM_LLM_H

#include "prism.h"

/* The largest shape accepted anywhere (model files, run descriptions,
 * options, sweeps); the smallest is 1.  Far beyond any model trained
 * (Llama 3 405B: 126 layers, hidden 16,384, 128 heads, ffn 53,248, vocab
 * 128,256), and small enough that no count computed from them overflows. */
#define LLM_MAX_LAYERS	 (1 << 16)
#define LLM_MAX_HIDDEN	 (1 << 20)
#define LLM_MAX_HEADS	 (1 << 12)
#define LLM_MAX_FFN	 (1 << 22)
#define LLM_MAX_SEQ	 (1 << 22)
#define LLM_MAX_VOCAB	 (1 << 24)
#define LLM_MAX_HEAD_DIM (1 << 12)
#define LLM_MAX_WINDOW	 LLM_MAX_SEQ
/* Multi-head latent attention's compressed widths (DeepSeek-V3: 1536 and
 * 512). */
#define LLM_MAX_LORA_RANK LLM_MAX_HIDDEN
/* Mixture-of-experts: routed experts per layer (DeepSeek-V3: 256; Kimi K2:
 * 384), shared experts, and the capacity factor's ceiling. */
#define LLM_MAX_EXPERTS	   (1 << 12)
#define LLM_MAX_SHARED	   64
#define LLM_MAX_CAPACITY   64.0
#define LLM_MAX_MOE_PERIOD 30 /* moe_layer_freq's period (its mask fits an int) */
#define LLM_MAX_MTP	   16 /* multi-token-prediction depths */
/* Hybrid Mamba/attention models: the per-layer pattern's length (Nemotron-H
 * 56B: 118 layers) and the Mamba-2 mixer's widths (Nemotron-H 8B: 128
 * heads of 64, state 128, 8 groups, a conv of 4, chunks of 128). */
#define LLM_MAX_PATTERN	  512
#define LLM_MAX_SSM_HEADS (1 << 14)
#define LLM_MAX_SSM_STATE (1 << 12)
#define LLM_MAX_SSM_CONV  64
#define LLM_MAX_SSM_CHUNK (1 << 14)

struct llm {
	int layers; /* l */
	int hidden; /* h */
	int heads;  /* a */
	int ffn;    /* FFN width, 4h for GPT */
	int seq;    /* s */
	int vocab;  /* V */
	char name[64];
	int kv_heads; /* key-value heads (grouped-query attention); 0: one
		       * per head (a), as every loader stores it for such a
		       * model and MLA (llm_kv_settle); read llm_kv_heads */
	int gated;    /* 1: SwiGLU FFN (gate, up and down matrices, Llama);
		       * 0: GeLU (up and down, GPT) */
	int untied;   /* 1: the output head is its own V x h matrix (Llama);
		       * 0: tied to the word embedding (GPT, Megatron-LM's
		       * default) */
	int rope;     /* 1: rotary position embeddings, no parameters (Llama);
		       * 0: learned positions, s x h (GPT) */
	/* Mixture-of-experts (experts = 0: a dense model, the rest unused).
	 * Layers first_dense.. replace the FFN by a router over `experts`
	 * routed experts of width expert_ffn, each token sent to top_k of
	 * them, plus shared_experts always-on experts of the same width; the
	 * experts are SwiGLU or GeLU as `gated` says.  capacity_factor: the
	 * tokens an expert takes at most, over the mean (0: dropless). */
	int experts, top_k, shared_experts, expert_ffn, first_dense;
	/* Dense and MoE layers interleaved, Megatron-LM's moe_layer_freq
	 * (gpt_layer_specs.py get_moe_layer_pattern): layer i (from
	 * first_dense on) is an MoE layer where bit i % moe_period of moe_mask
	 * is set; moe_period 0: every one.  Megatron's int N is period N, mask
	 * 1 (i % N == 0); its list [0,1]*24 (Llama 4 Maverick) period 2, mask
	 * 2. */
	int moe_period, moe_mask;
	/* Multi-token prediction (Megatron-LM's mtp_num_layers, DeepSeek-V3's
	 * depth D = 1; multi_token_prediction.py): after the decoder, on the
	 * last stage, each depth runs the embedding of the tokens shifted once
	 * more, two norms, eh_proj (2h -> h), one transformer layer of the last
	 * decoder layer's kind, a final norm and the shared output layer and
	 * its loss. */
	int mtp_layers;
	double capacity_factor;
	int router; /* enum llm_router: the gate's score function */
	/* The width of an attention head (Q, K and V); 0: hidden / heads.
	 * Models whose heads are wider or narrower than that (Qwen3: 128,
	 * Gemma 2: 256) project to heads x head_dim and back. */
	int head_dim;
	/* Sliding-window attention: each query attends to the `window` keys
	 * up to its own (0: the whole causal prefix) in every layer but every
	 * global_every-th (layers i with i % global_every == global_every - 1
	 * attend globally; 0: none does).  gpt-oss: 128 and 2 (HF layer_types
	 * alternating sliding and full from layer 0); Gemma 3: 1024 and 6
	 * (sliding_window_pattern); Mistral 7B: 4096 and 0. */
	int window, global_every;
	/* Multi-head latent attention (DeepSeek-V2/V3; kv_lora_rank 0: not
	 * MLA, the rest unused), by Hugging Face's config.json names:
	 * hidden -> q_lora_rank (normed) -> heads x (qk_nope_head_dim +
	 * qk_rope_head_dim) for Q (q_lora_rank 0: Q straight from hidden,
	 * DeepSeek-V2-Lite); hidden -> kv_lora_rank (normed) +
	 * qk_rope_head_dim, the first up to heads x (qk_nope_head_dim +
	 * v_head_dim) for K's first part and V, the second (RoPE's decoupled
	 * key) shared by every head; heads x v_head_dim -> hidden.  Every head
	 * has its own K and V (kv_heads 0, llm_kv_heads the heads).  DeepSeek-V3: 1536, 512,
	 * 128, 64, 128. */
	int q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
	/* Hybrid Mamba/attention models (pattern[0] == 0: every layer a
	 * transformer layer, the rest unused), as Megatron-LM's MambaStack
	 * builds them (megatron/core/ssm/mamba_block.py,
	 * mamba_hybrid_layer_allocation.py): one character a layer, "M" a
	 * Mamba-2 layer (norm and mixer), "*" an attention layer (norm,
	 * self-attention; no MLP), "-" an MLP layer (norm, FFN; no
	 * attention), "E" a mixture-of-experts layer (norm and the experts
	 * as experts, top_k, ... say; no attention; Nemotron 3);
	 * layers is the pattern's length.  The Mamba-2 mixer
	 * (mamba_mixer.py), by Hugging Face's NemotronH names: ssm_heads
	 * (mamba_num_heads) of ssm_head_dim (mamba_head_dim) make its inner
	 * width d_i; ssm_state (ssm_state_size) N; ssm_groups (n_groups) G, the
	 * groups B and C are shared by; ssm_conv (conv_kernel) the causal
	 * depthwise convolution's width; ssm_chunk (chunk_size) Q, the SSD
	 * scan's chunk. */
	char pattern[LLM_MAX_PATTERN + 1];
	int ssm_heads, ssm_head_dim, ssm_state, ssm_groups, ssm_conv, ssm_chunk;
};

/* A layer's kind: a transformer layer (attention and MLP), or one of a
 * hybrid model's (llm.pattern). */
enum llm_kind {
	LLM_KIND_FULL,
	LLM_KIND_MAMBA,
	LLM_KIND_ATTN,
	LLM_KIND_MLP,
	LLM_KIND_MOE, /* 'E': a norm and the experts (no attention) */
	LLM_KINDS
};

/* 1 for a hybrid model (a pattern). */
int llm_hybrid(const struct llm *m);

/* The kind of layer l (0-based): LLM_KIND_FULL without a pattern. */
int llm_layer_kind(const struct llm *m, int l);

/* The pattern character of kind k ('M', '*', '-'), or 0 for
 * LLM_KIND_FULL; the kind of character ch, or -1. */
int llm_kind_char(int k);
int llm_char_kind(int ch);

/* Layers of kind k in the model. */
int llm_kind_layers(const struct llm *m, int k);

/* The Mamba-2 mixer's inner width d_i = ssm_heads x ssm_head_dim, and
 * in_proj's output, z, x, B, C and dt: 2 d_i + 2 G N + H. */
double llm_ssm_inner(const struct llm *m);
double llm_ssm_proj(const struct llm *m);

/* Parameters of one layer of kind k: MOE an MoE layer's without its
 * attention (llm_moe_layer_params less the attention's matrices, biases
 * and input norm; *active, where not NULL, with top_k routed experts);
 * FULL llm_layer_params; ATTN its
 * attention part (the matrices, their biases and norms, its input norm,
 * 2h); MLP the rest (the FFN's matrices and biases, its norm); MAMBA the
 * norm (2h), in_proj h (2 d_i + 2 G N + H), the convolution's weight and
 * bias (d_i + 2 G N)(conv + 1), dt_bias, A_log and D (H each), the gated
 * norm's weight d_i, out_proj d_i h (Megatron-LM's mixer has no linear
 * biases: bias=False). */
double llm_kind_params(const struct llm *m, int k);
double llm_kind_active_params(const struct llm *m, int k);

/* The same on one of t tensor-parallel ranks: FULL and ATTN as
 * llm_layer_params_rank splits a layer (the attention's copies whole),
 * MLP and MAMBA split by t (the mixer's heads and groups divide by t,
 * layout_check). */
double llm_kind_params_rank(const struct llm *m, int k, int t);

/* The forward FLOPs of one layer of kind k on `batch` sequences: GEMMs
 * (*gemm) and the rest counted as model FLOPs (*core: the attention's
 * scores and weighted sum; a Mamba layer's SSD scan, llm_ssd_flops).  A
 * Mamba layer's GEMMs are in_proj and out_proj. */
void llm_kind_flops(const struct llm *m, int k, double batch, double *gemm, double *core);

/* The SSD scan's forward FLOPs on T tokens of H heads and G groups
 * (Dao & Gu 2024, section 6: the chunked algorithm), the matrix products
 * of its four steps, chunk by chunk of Q: the diagonal blocks C B^T
 * (2 T Q N a group) and their masked product with X (2 T Q P a head);
 * each chunk's state B^T X (2 T N P a head); the states passed between
 * chunks (2 (T / Q) N P a head, a scalar decay and an add per entry); the
 * off-diagonal output C h (2 T N P a head):
 *     2 T (G Q N + H (Q P + 2 N P + N P / Q)). */
double llm_ssd_flops(const struct llm *m, double T, double H, double G);

enum llm_router { LLM_ROUTER_SOFTMAX, LLM_ROUTER_SIGMOID };

/* 1 for multi-head latent attention (kv_lora_rank > 0). */
int llm_mla(const struct llm *m);

/* The width of an attention head: head_dim, or hidden / heads.  MLA's
 * heads are qk_nope_head_dim + qk_rope_head_dim wide in Q and K and
 * v_head_dim in V: their mean, the width K and V have on average and the
 * one attention kernels are timed at (kbench.c's convention for such
 * rows). */
double llm_head_dim(const struct llm *m);

/* The widths of a head's Q and K, and of its V: both llm_head_dim but
 * for MLA (qk_nope_head_dim + qk_rope_head_dim, v_head_dim). */
double llm_qk_head_dim(const struct llm *m);
double llm_v_head_dim(const struct llm *m);

/* The attention's width: heads x llm_head_dim (hidden unless head_dim or
 * MLA says otherwise).  The attention core's forward FLOPs are 4 b s^2
 * times it (2 b s^2 heads x (Q's + V's head width)), and Q, K, V and the
 * core's output hold 4 of it a token. */
double llm_attn_width(const struct llm *m);

/* The output projection's input width: heads x V's head width
 * (llm_attn_width but for MLA). */
double llm_proj_width(const struct llm *m);

/* The attention's weight matrices: h x QKV width and the projection's
 * proj width x h; for MLA its five (hidden x q_lora_rank, q_lora_rank x
 * heads (nope + rope) -- or hidden x that without q_lora_rank --, hidden
 * x (kv_lora_rank + rope), kv_lora_rank x heads (nope + v), heads v x
 * hidden). */
double llm_attn_params(const struct llm *m);

/* MLA's down projections (hidden x q_lora_rank and hidden x (kv_lora_rank
 * + qk_rope_head_dim)), which Megatron-LM keeps whole on every
 * tensor-parallel rank (TELinear, parallel_mode "duplicated"); 0 for
 * other attention. */
double llm_mla_down_params(const struct llm *m);

/* The sliding window of layer l (0-based): window, or 0 where it attends
 * to the whole causal prefix. */
int llm_window(const struct llm *m, int l);

/* A causal attention's work with a window of w keys over the whole
 * prefix's: the query-key pairs of the band over s(s+1)/2 (1 for w 0 or
 * w >= s). */
double llm_window_ratio(const struct llm *m, int w);

/* The layers' attention work in full-attention layers: each windowed layer
 * counts llm_window_ratio of one. */
double llm_attn_layers(const struct llm *m);

/* 1 when layer l (0-based) is a mixture-of-experts layer. */
int llm_is_moe_layer(const struct llm *m, int l);

/* Mixture-of-experts layers of the model (0 for a dense one). */
int llm_moe_layers(const struct llm *m);

/* Parameters of one multi-token-prediction depth beside its transformer
 * layer: eh_proj 2h^2 (no bias) and three norms (enorm, hnorm, the final
 * one) 6h; and its layer's: the last decoder layer's kind. */
double llm_mtp_extra_params(const struct llm *m);
double llm_mtp_layer_params(const struct llm *m, double *active);

/* Parameters of one expert: (3 if gated else 2) h expert_ffn. */
double llm_expert_params(const struct llm *m);

/* A mixture-of-experts layer's parameters: attention (llm_attn_params),
 * its biases and norms (8h; MLA's as llm_layer_params says), the router
 * (experts x h), and the routed and
 * shared experts; *active (if not NULL) counts top_k routed experts
 * instead of all of them (the parameters one token uses). */
double llm_moe_layer_params(const struct llm *m, double *active);

/* Parameters one token uses: llm_params with top_k routed experts per
 * mixture-of-experts layer (the papers' "activated parameters"); the
 * total for a dense model. */
double llm_active_params(const struct llm *m);

/* Key-value heads: kv_heads, or a when 0 (and with multi-head latent
 * attention, whose every head has its own K and V). */
int llm_kv_heads(const struct llm *m);

/* The key-value heads in their one form, as every loader leaves them:
 * 0 where every head has its own K and V (kv_heads a, or MLA), else the
 * groups.  A model so stored keeps a head of its own per head when
 * --heads changes a; a grouped one keeps its groups. */
void llm_kv_settle(struct llm *m);

/* Width of the fused Q, K, V projection: h + 2 kv (h / a) (MLA has none:
 * llm_attn_params). */
double llm_qkv_width(const struct llm *m);

/* Its width on one of t tensor-parallel ranks: (a / t + 2 max(kv / t, 1))
 * (h / a).  With fewer key-value heads than ranks each rank holds one,
 * replicated over t / kv ranks (Megatron-LM's num_query_groups < tp:
 * the key-value projection is copied, not split). */
double llm_qkv_width_rank(const struct llm *m, int t);

/* Key-value heads on one of t tensor-parallel ranks: kv / t, at least 1
 * (replicated when fewer than the ranks). */
double llm_kv_heads_rank(const struct llm *m, int t);

/* The parameters of a layer each of t tensor-parallel ranks holds beyond
 * its 1/t share: the key-value projection's copies where key-value heads
 * are replicated (fewer than t), MLA's down projections (whole on every
 * rank). */
double llm_tp_copies(const struct llm *m, int t);

/* A dense layer's parameters on one of t tensor-parallel ranks:
 * llm_layer_params / t + llm_tp_copies. */
double llm_layer_params_rank(const struct llm *m, int t);

/* Width of the FFN's first GEMM: ffn, or 2 ffn when gated (gate and up
 * fused, as Megatron-LM does). */
double llm_ffn_in(const struct llm *m);

/* Parameters of one layer: the attention's matrices (llm_attn_params:
 * h x qkv width + h^2 for GPT), (2 or 3) h ffn, and biases and norms, 9h
 * + ffn.  MLA's down and up projections have no biases (Megatron-LM
 * builds them with bias=False) and two norms of their own, on the
 * compressed q and kv: 6h + ffn + 2 (q_lora_rank + kv_lora_rank). */
double llm_layer_params(const struct llm *m);

/* The forward FLOPs of one mixture-of-experts layer on `batch` sequences,
 * as the papers count them (active parameters): QKV, projection, the
 * router (2 t h experts) and top_k + shared_experts expert FFNs per token;
 * the attention as llm_layer_flops. */
void llm_moe_layer_flops(const struct llm *m, double batch, double *gemm, double *attention);

/* FLOPs of C = A B with A m x k and B k x n: 2 m n k. */
double llm_gemm_flops(double m, double n, double k);

/* Parameters: per dense layer llm_layer_params (4h^2 + 2 h ffn + 9h + ffn
 * for GPT), per mixture-of-experts layer llm_moe_layer_params; the word embedding V h, and the output head V h again when untied;
 * learned positions s h; the final norm 2h. */
double llm_params(const struct llm *m);

/* The forward FLOPs of one layer on `batch` sequences: its GEMMs (QKV --
 * MLA's four projections --, output projection, FFN up -- and gate --
 * and down) and its attention (scores and the weighted sum, 2 b s^2 a
 * d_qk and 2 b s^2 a d_v, 4 b s^2 llm_attn_width together, whatever the
 * key-value heads; the whole square, causal or not, as Narayanan et al.
 * count it). */
void llm_layer_flops(const struct llm *m, double batch, double *gemm, double *attention);

/*
 * Attention without flash attention materialises its scores, b a s^2
 * values per layer (over tp ranks), and every pass over them is
 * memory-bound.  Bytes per score element, bf16 values and a one-byte
 * dropout mask: the scores GEMM writes them (QK), the fused
 * scale-mask-softmax reads and writes them (SOFTMAX), dropout reads them
 * and writes them and its mask (DROPOUT), the context GEMM reads them (PV);
 * backward, the probabilities' gradient is written by a GEMM (QK), read by
 * the value-gradient GEMM (PV), dropout's backward reads it and the mask
 * and writes (DROPOUT), the softmax backward reads two and writes one
 * (SOFTMAX_BWD), and the query and key gradient GEMMs read it (PV each).
 */
#define LLM_SCORE_QK	      2.0
#define LLM_SCORE_SOFTMAX     4.0
#define LLM_SCORE_DROPOUT     5.0
#define LLM_SCORE_PV	      2.0
#define LLM_SCORE_SOFTMAX_BWD 6.0
#define LLM_SCORE_FWD	      (LLM_SCORE_QK + LLM_SCORE_SOFTMAX + LLM_SCORE_DROPOUT + LLM_SCORE_PV)
#define LLM_SCORE_BWD                                                                              \
	(LLM_SCORE_QK + LLM_SCORE_PV + LLM_SCORE_DROPOUT + LLM_SCORE_SOFTMAX_BWD + 2 * LLM_SCORE_PV)

/* Bytes of score traffic of unfused attention in one training iteration on
 * `batch` sequences, all layers: (FWD + BWD) b a s^2 l, plus FWD again
 * with recompute = 1. */
double llm_score_bytes(const struct llm *m, double batch, int recompute);

/* Training FLOPs of one iteration on `batch` sequences; recompute = 1 adds
 * the forward pass again (full activation recomputation).  Mixture-of-
 * experts layers count their active parameters (llm_moe_layer_flops). */
double llm_flops_iter(const struct llm *m, double batch, int recompute);

/* The closed form above (ffn taken as 4h), for checks and reports. */
double llm_flops_iter_formula(const struct llm *m, double batch, int recompute);

/*
 * A model from a libconfig file (configs/models/): name, layers, hidden,
 * heads, seq, vocab, and ffn (4 x hidden if absent), kv_heads (heads if
 * absent), head_dim (hidden / heads if absent, when hidden divides by
 * heads), window and global_every (0, 0: no sliding window),
 * activation ("gelu", the default, or "swiglu"), tie_embeddings
 * (true, the default, or false) and positions ("learned", the default, or
 * "rope"); mixture-of-experts: experts (0..LLM_MAX_EXPERTS, 0 the default:
 * dense), and with experts top_k (1..experts, required), shared_experts
 * (0..LLM_MAX_SHARED, 0), expert_ffn (1..LLM_MAX_FFN, ffn), first_dense
 * (0..layers - 1, 0), moe_layer_freq (an int N: layer i MoE where i % N ==
 * 0, Megatron's; or a string of 0s and 1s, one period of its list, "01":
 * [0,1]*24; 1..LLM_MAX_MOE_PERIOD, at least one 1; default every layer),
 * capacity_factor (0: dropless, the default, or
 * 1..LLM_MAX_CAPACITY) and router ("softmax", the default, or "sigmoid");
 * multi-head latent attention: kv_lora_rank (0, the default: not MLA),
 * and with it v_head_dim (required), qk_nope_head_dim, qk_rope_head_dim
 * (0; together at least 1) and q_lora_rank (0: Q straight from hidden);
 * neither head_dim nor kv_heads other than heads with it; a hybrid
 * model: hybrid_override_pattern (M, * and - a layer; layers its length,
 * given or not), and with an M layer mamba_num_heads (2 hidden /
 * mamba_head_dim), mamba_head_dim (64), ssm_state_size (128), n_groups
 * (8, dividing the heads), conv_kernel (4), chunk_size (128); no experts
 * or mtp_layers with it.
 * 0, or PRISM_EIO /
 * PRISM_EFORMAT naming the file, line and setting.  A Hugging Face
 * config.json or a Megatron-LM argument list is imported instead
 * (frame_load_model, frame.h; its warnings dropped).
 */
int llm_load(const char *path, struct llm *m, struct prism_err *err);

#endif
