/* test_frame.c - the frameworks' files in and out (frame.h): Hugging Face
 * config.json files of each family imported to their published shapes,
 * a Megatron-LM argument list imported, and every exported knob read back
 * to the same layout. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "hw.h"
#include "layout.h"
#include "testutil.h"

#define HF PRISM_SOURCE_DIR "/tests/data/hf/"

/* What each family's published config.json says (tests/data/hf/, the
 * fields as the model cards' config.json files give them), and what prism
 * makes of it: head_dim as llm_head_dim; seq the pre-training context
 * (rope_scaling's original_max_position_embeddings where RoPE scaling
 * extended it); the window and the global layers' period. */
struct hf_case {
	const char *file;
	int layers, hidden, heads, kv, ffn, vocab, seq;
	double head_dim;
	int experts, top_k, expert_ffn, shared, first_dense;
	int window, global_every, untied, mla;
};

static const struct hf_case hf_cases[] = {
    {"llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096, 128, 0, 0, 0, 0, 0, 0, 0, 1, 0},
    {"llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, 128, 0, 0, 0, 0, 0, 0, 0, 1, 0},
    /* Llama 3.1: 131072 positions by RoPE scaling from 8192 */
    {"llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, 8192, 128, 0, 0, 0, 0, 0, 0, 0, 1, 0},
    {"mistral-7b", 32, 4096, 32, 8, 14336, 32000, 32768, 128, 0, 0, 0, 0, 0, 4096, 0, 1, 0},
    {"mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768, 128, 8, 2, 14336, 0, 0, 0, 0, 1, 0},
    /* use_sliding_window false: no window */
    {"qwen2.5-7b", 28, 3584, 28, 4, 18944, 152064, 131072, 128, 0, 0, 0, 0, 0, 0, 0, 1, 0},
    {"qwen3-8b", 36, 4096, 32, 8, 12288, 151936, 40960, 128, 0, 0, 0, 0, 0, 0, 0, 1, 0},
    /* hidden 2048 over 32 heads is 64; head_dim 128 */
    {"qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 151936, 40960, 128, 128, 8, 768, 0, 0, 0, 0, 1, 0},
    /* MLA: heads (128 + 64 + 128) / 2 = 160 wide on average */
    {"deepseek-v3", 61, 7168, 128, 128, 18432, 129280, 4096, 160, 256, 8, 2048, 1, 3, 0, 0, 1, 1},
    {"deepseek-v2-lite", 27, 2048, 16, 16, 10944, 102400, 4096, 160, 64, 6, 1408, 2, 1, 0, 0, 1, 1},
    /* hidden 2880 over 64 heads is 45; head_dim 64; layer_types alternate
     * sliding (layer 0) and full */
    {"gpt-oss-120b", 36, 2880, 64, 8, 2880, 201088, 4096, 64, 128, 4, 2880, 0, 0, 128, 2, 1, 0},
    /* Gemma 2: head_dim 256, tied; even layers slide (modeling_gemma2) */
    {"gemma2-9b", 42, 3584, 16, 8, 14336, 256000, 8192, 256, 0, 0, 0, 0, 0, 4096, 2, 0, 0},
    /* Gemma 3 4B: text_config with Gemma3TextConfig's defaults for the
     * rest (8 heads, 4 kv heads, head_dim 256, vocab 262208, 131072
     * positions, sliding_window_pattern 6) */
    {"gemma3-4b", 34, 2560, 8, 4, 10240, 262208, 131072, 256, 0, 0, 0, 0, 0, 1024, 6, 0, 0},
    {"gemma3-1b", 26, 1152, 4, 1, 6912, 262144, 32768, 256, 0, 0, 0, 0, 0, 512, 6, 0, 0},
    {"phi3-mini-4k", 32, 3072, 32, 32, 8192, 32064, 4096, 96, 0, 0, 0, 0, 0, 2047, 0, 1, 0},
};

static void test_hf_families(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(hf_cases) / sizeof(hf_cases[0]); i++) {
		const struct hf_case *c = &hf_cases[i];
		char path[512];
		struct llm m, viaload;
		struct frame_extra x;
		struct prism_err err;
		snprintf(path, sizeof(path), HF "%s.json", c->file);
		prism_err_clear(&err);
		assert_int_equal(frame_sniff(path), FRAME_FILE_HF);
		if (frame_load_model(path, &m, &x, &err))
			fail_msg("%s: %s", c->file, err.msg);
		/* Phi-3's names itself (_name_or_path) */
		assert_string_equal(m.name, strcmp(c->file, "phi3-mini-4k") == 0
						? "Phi-3-mini-4k-instruct"
						: c->file);
		assert_int_equal(m.layers, c->layers);
		assert_int_equal(m.hidden, c->hidden);
		assert_int_equal(m.heads, c->heads);
		assert_int_equal(llm_kv_heads(&m), c->kv);
		/* one key and value per head (MHA, MLA) is stored as 0 */
		assert_int_equal(m.kv_heads, c->kv == c->heads ? 0 : c->kv);
		assert_int_equal(m.ffn, c->ffn);
		assert_int_equal(m.vocab, c->vocab);
		assert_int_equal(m.seq, c->seq);
		assert_true(llm_head_dim(&m) == c->head_dim);
		assert_int_equal(m.experts, c->experts);
		assert_int_equal(m.top_k, c->top_k);
		assert_int_equal(m.experts ? m.expert_ffn : 0, c->expert_ffn);
		assert_int_equal(m.shared_experts, c->shared);
		assert_int_equal(m.first_dense, c->first_dense);
		assert_int_equal(m.window, c->window);
		assert_int_equal(m.global_every, c->global_every);
		assert_int_equal(m.untied, c->untied);
		assert_int_equal(llm_mla(&m), c->mla);
		assert_int_equal(m.gated, 1);
		assert_int_equal(m.rope, 1);
		/* llm_load takes it too, to the same model */
		assert_int_equal(llm_load(path, &viaload, &err), 0);
		assert_memory_equal(&m, &viaload, sizeof(m));
	}
}

/* DeepSeek-V3's details: its MLA widths, sigmoid router and the one MTP
 * layer (modelled: mtp_layers); its group-limited routing read and named
 * in a warning (not modelled). */
static void test_hf_deepseek(void **state)
{
	struct llm m;
	struct frame_extra x;
	struct prism_err err;
	(void)state;
	prism_err_clear(&err);
	assert_int_equal(frame_load_model(HF "deepseek-v3.json", &m, &x, &err), 0);
	assert_int_equal(m.q_lora_rank, 1536);
	assert_int_equal(m.kv_lora_rank, 512);
	assert_int_equal(m.qk_nope_head_dim, 128);
	assert_int_equal(m.qk_rope_head_dim, 64);
	assert_int_equal(m.v_head_dim, 128);
	assert_int_equal(m.router, LLM_ROUTER_SIGMOID);
	assert_int_equal(x.mtp_layers, 1);
	assert_int_equal(m.mtp_layers, 1);
	assert_null(strstr(x.warn, "num_nextn_predict_layers"));
	assert_non_null(strstr(x.warn, "n_group 8"));
	/* V2-Lite: no q_lora_rank (null), softmax router, no MTP */
	assert_int_equal(frame_load_model(HF "deepseek-v2-lite.json", &m, &x, &err), 0);
	assert_int_equal(m.q_lora_rank, 0);
	assert_int_equal(m.router, LLM_ROUTER_SOFTMAX);
	assert_int_equal(x.mtp_layers, 0);
}

/* Nemotron-H 8B's published config.json (NemotronHConfig's names:
 * hybrid_override_pattern, mamba_num_heads, mamba_head_dim,
 * ssm_state_size, n_groups, conv_kernel, chunk_size, expand,
 * attention_head_dim, mlp_hidden_act relu2) makes the shipped model file's
 * model exactly, every field mapped or inert; a pattern whose length is
 * not the layers', or with MoE layers, is refused naming the field. */
static void test_hf_nemotron_h(void **state)
{
	static const char base[] =
	    "{\"model_type\":\"nemotron_h\",\"num_hidden_layers\":4,\"hidden_size\":1024,"
	    "\"num_attention_heads\":16,\"intermediate_size\":4096,\"vocab_size\":32000,"
	    "\"max_position_embeddings\":4096,";
	static const struct {
		const char *tail, *want;
	} bad[] = {
	    {"\"hybrid_override_pattern\":\"M-*\"}",
	     "\"num_hidden_layers\" 4 differs from the 3 layers of \"hybrid_override_pattern\""},
	    {"\"hybrid_override_pattern\":\"MEM*\"}",
	     "\"hybrid_override_pattern\" layer 1: 'E' is not M (Mamba), * (attention) or - "
	     "(MLP); its mixture-of-experts layers are not imported from a config.json (a model "
	     "file's are modelled)"},
	    {"\"hybrid_override_pattern\":\"M-M*\",\"expand\":3}",
	     "\"mamba_num_heads\" 32 x \"mamba_head_dim\" 64 is not \"expand\" 3 x "
	     "\"hidden_size\" 1024"},
	};
	struct llm m, f;
	struct frame_extra x;
	struct prism_err err;
	(void)state;
	prism_err_clear(&err);
	assert_int_equal(frame_load_model(HF "nemotron-h-8b.json", &m, &x, &err), 0);
	assert_string_equal(x.warn, "");
	assert_string_equal(m.pattern, "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-");
	assert_int_equal(m.ssm_heads, 128);
	assert_int_equal(m.ssm_groups, 8);
	assert_int_equal(m.gated, 0);
	assert_int_equal(llm_load(PRISM_SOURCE_DIR "/configs/models/nemotron-h-8b.cfg", &f, &err),
			 0);
	assert_memory_equal(&m, &f, sizeof(m));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char buf[1024 + 64]; /* kjson.h's KJSON_PADDING */
		size_t n = (size_t)snprintf(buf, 1024, "%s%s", base, bad[i].tail);
		memset(buf + n, 0, 64);
		prism_err_clear(&err);
		assert_int_equal(frame_hf_parse("c.json", buf, n, &m, &x, &err), PRISM_EFORMAT);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("case %zu: %s", i, err.msg);
		assert_non_null(strstr(err.msg, "c.json: "));
	}
}

/* Fields that change the model but are not modelled are named; the
 * inert ones (token ids, epsilon, RoPE base) are not. */
static void test_hf_warnings(void **state)
{
	struct llm m;
	struct frame_extra x;
	struct prism_err err;
	(void)state;
	prism_err_clear(&err);
	assert_int_equal(frame_load_model(HF "gemma2-9b.json", &m, &x, &err), 0);
	assert_non_null(strstr(x.warn, "attn_logit_softcapping"));
	assert_null(strstr(x.warn, "rope_theta"));
	assert_int_equal(frame_load_model(HF "gemma3-4b.json", &m, &x, &err), 0);
	assert_non_null(strstr(x.warn, "vision_config"));
	assert_int_equal(frame_load_model(HF "gpt-oss-120b.json", &m, &x, &err), 0);
	assert_non_null(strstr(x.warn, "quantization_config"));
	assert_int_equal(frame_load_model(HF "llama3-8b.json", &m, &x, &err), 0);
	assert_string_equal(x.warn, "");
}

/* An unknown model_type is refused, naming the type and its fields. */
static void test_hf_unknown(void **state)
{
	struct llm m;
	struct frame_extra x;
	struct prism_err err;
	(void)state;
	prism_err_clear(&err);
	assert_int_equal(frame_load_model(HF "unknown-falcon.json", &m, &x, &err), PRISM_EFORMAT);
	assert_non_null(strstr(err.msg, "model_type \"falcon\""));
	assert_non_null(strstr(err.msg, "n_head"));
	assert_non_null(strstr(err.msg, "multi_query"));
}

/* Broken configs: a field of the wrong type, one missing, not JSON. */
static void test_hf_bad(void **state)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
	    {"{\"model_type\":\"llama\",\"num_hidden_layers\":\"32\"}", "\"num_hidden_layers\""},
	    {"{\"model_type\":\"llama\",\"num_hidden_layers\":32,\"hidden_size\":4096,"
	     "\"num_attention_heads\":32,\"vocab_size\":32000,\"max_position_embeddings\":4096}",
	     "missing \"intermediate_size\""},
	    {"{\"model_type\":\"llama\",\"num_hidden_layers\":32,\"hidden_size\":01}",
	     "not a JSON number"},
	    {"{\"model_type\":\"llama\",\"num_hidden_layers\":32,\"hidden_size\":4096,"
	     "\"num_attention_heads\":32,\"num_key_value_heads\":5,\"vocab_size\":32000,"
	     "\"intermediate_size\":11008,\"max_position_embeddings\":4096}",
	     "divisible by \"num_key_value_heads\" (5)"},
	    /* every field read, the last one out of range */
	    {"{\"model_type\":\"llama\",\"num_hidden_layers\":32,\"hidden_size\":4096,"
	     "\"num_attention_heads\":32,\"intermediate_size\":11008,"
	     "\"max_position_embeddings\":4096,\"vocab_size\":32000,\"sliding_window\":-1}",
	     "\"sliding_window\": expected a whole number in 1.."},
	    {"{\"model_type\":\"mixtral\",\"num_hidden_layers\":32,\"hidden_size\":4096,"
	     "\"num_attention_heads\":32,\"intermediate_size\":11008,"
	     "\"max_position_embeddings\":4096,\"vocab_size\":32000,\"num_local_experts\":8,"
	     "\"num_experts_per_tok\":9}",
	     "\"num_experts_per_tok\": expected a whole number in 1..8"},
	    {"[1, 2]", "not a JSON object"},
	    /* a Gemma 3 config inside its own text_config: read once, not recursed */
	    {"{\"model_type\":\"gemma3\",\"text_config\":{\"model_type\":\"gemma3\","
	     "\"text_config\":{\"model_type\":\"gemma3\"}}}",
	     "model_type \"gemma3\" is not one prism imports"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char buf[512 + 64]; /* kjson.h's KJSON_PADDING */
		struct llm m;
		struct frame_extra x;
		struct prism_err err;
		size_t n = strlen(bad[i].text);
		memset(buf, 0, sizeof(buf));
		memcpy(buf, bad[i].text, n);
		prism_err_clear(&err);
		assert_int_equal(frame_hf_parse("c.json", buf, n, &m, &x, &err), PRISM_EFORMAT);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].want);
	}
}

/* A Megatron-LM launch script: the model, the layout, the world size from
 * torchrun's --nnodes x --nproc-per-node, the options prism does not read
 * named. */
static void test_megatron_import(void **state)
{
	const char *path = PRISM_SOURCE_DIR "/tests/data/megatron/llama3-70b.sh";
	struct llm m;
	struct layout l;
	struct frame_extra x;
	struct prism_err err;
	layout_mask given;
	char *buf;
	size_t n;
	(void)state;
	prism_err_clear(&err);
	assert_int_equal(frame_sniff(path), FRAME_FILE_MEGATRON);
	assert_int_equal(frame_read(path, &buf, &n, &err), 0);
	assert_int_equal(frame_import(FRAME_MEGATRON, path, buf, n, NULL, &m, &l, &given, &x, &err),
			 0);
	free(buf);
	assert_int_equal(x.gpus, 64);
	assert_int_equal(x.gbs, 512);
	assert_int_equal(frame_resolve(&l, &given, x.gpus, x.gbs, x.instances, &err), 0);
	assert_int_equal(l.tp, 8);
	assert_int_equal(l.pp, 4);
	assert_int_equal(l.dp, 2); /* 64 / (8 x 4) */
	assert_int_equal(l.schedule, LAYOUT_INTERLEAVED);
	assert_int_equal(l.vp, 4); /* 80 layers / (4 stages x 5) */
	assert_int_equal(l.mbs, 1);
	assert_int_equal(l.microbatches, 256); /* 512 / (1 x 2) */
	assert_int_equal(l.sp, 1);
	assert_int_equal(l.zero, 1);
	assert_int_equal(l.recompute, LAYOUT_RECOMPUTE_FULL);
	assert_int_equal(l.dtype, HW_BF16);
	assert_int_equal(l.overlap_grad, 1);
	assert_int_equal(l.overlap_param, 1);
	assert_int_equal(l.tp_overlap, 0);
	assert_int_equal(l.flash, 1);
	assert_int_equal(l.exec, LAYOUT_EXEC_EAGER); /* --cuda-graph-impl's default none */
	assert_true((given & LK_BIT(LK_dp)) && (given & LK_BIT(LK_microbatches)));
	assert_non_null(strstr(x.warn, "--lr"));
	assert_non_null(strstr(x.warn, "--tokenizer-type"));
	/* the model, as frame_load_model completes it */
	assert_int_equal(frame_load_model(path, &m, &x, &err), 0);
	assert_int_equal(m.layers, 80);
	assert_int_equal(m.hidden, 8192);
	assert_int_equal(m.heads, 64);
	assert_int_equal(m.kv_heads, 8);
	assert_int_equal(m.ffn, 28672);
	assert_int_equal(m.seq, 8192);
	assert_int_equal(m.vocab, 128256);
	assert_int_equal(m.gated, 1);
	assert_int_equal(m.untied, 1);
	assert_int_equal(m.rope, 1);
	/* --enable-cuda-graph, the older name of --cuda-graph-impl local */
	{
		const char *t = "--num-layers 2 --hidden-size 256 --num-attention-heads 4 "
				"--seq-length 128 --micro-batch-size 1 --global-batch-size 8 "
				"--enable-cuda-graph\n";
		assert_int_equal(frame_import(FRAME_MEGATRON, "t.sh", t, strlen(t), NULL, &m, &l,
					      &given, &x, &err),
				 0);
		assert_int_equal(l.exec, LAYOUT_EXEC_GRAPHS);
		t = "--num-layers 2 --cuda-graph-impl partial\n";
		assert_int_equal(frame_import(FRAME_MEGATRON, "t.sh", t, strlen(t), NULL, &m, &l,
					      &given, &x, &err),
				 PRISM_EFORMAT);
		assert_non_null(strstr(err.msg, "t.sh:1: --cuda-graph-impl 'partial'"));
		prism_err_clear(&err);
	}
	/* The precision-aware optimizer: bf16 moments with fp32 main params
	 * and grads is bf16-states; other dtypes are refused (not
	 * modelled); --clip-grad 0 turns clipping off */
	{
		const char *t = "--num-layers 2 --use-distributed-optimizer "
				"--use-precision-aware-optimizer --exp-avg-dtype bf16 "
				"--exp-avg-sq-dtype bf16 --main-grads-dtype fp32 --clip-grad 0\n";
		assert_int_equal(frame_import(FRAME_MEGATRON, "t.sh", t, strlen(t), NULL, &m, &l,
					      &given, &x, &err),
				 0);
		assert_int_equal(l.optimizer_dtype, LAYOUT_OPT_BF16_STATES);
		assert_int_equal(l.clip_grad, 0);
		t = "--num-layers 2 --use-precision-aware-optimizer --exp-avg-dtype fp8 "
		    "--exp-avg-sq-dtype bf16\n";
		assert_int_equal(frame_import(FRAME_MEGATRON, "t.sh", t, strlen(t), NULL, &m, &l,
					      &given, &x, &err),
				 PRISM_EARG);
		assert_non_null(strstr(err.msg, "t.sh:1: --use-precision-aware-optimizer"));
		assert_non_null(strstr(err.msg, "exp_avg fp8"));
		prism_err_clear(&err);
	}
	/* Offloading: Megatron-LM's count alone turns it on (arguments.py),
	 * Bridge's count needs model.cpu_offloading, and no activations
	 * offloaded is none */
	{
		static const struct {
			int fw;
			const char *t;
			int want;
		} c[] = {
		    {FRAME_MEGATRON, "--num-layers 8 --cpu-offloading-num-layers 5\n", 5},
		    {FRAME_MEGATRON,
		     "--num-layers 8 --cpu-offloading --cpu-offloading-num-layers 3\n", 3},
		    {FRAME_BRIDGE, "model.num_layers=8\nmodel.cpu_offloading_num_layers=5\n", 0},
		    {FRAME_BRIDGE,
		     "model.num_layers=8\nmodel.cpu_offloading=true\n"
		     "model.cpu_offloading_num_layers=5\n",
		     5},
		    {FRAME_BRIDGE,
		     "model.num_layers=8\nmodel.cpu_offloading=true\n"
		     "model.cpu_offloading_num_layers=5\nmodel.cpu_offloading_activations=false\n",
		     0},
		};
		for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			assert_int_equal(frame_import(c[i].fw, "t", c[i].t, strlen(c[i].t), NULL,
						      &m, &l, &given, &x, &err),
					 0);
			assert_int_equal(l.offload_layers, c[i].want);
			assert_true(given & LK_BIT(LK_offload_layers));
		}
	}
	/* a shell variable is not a number: refused, naming the option and line */
	assert_int_equal(
	    frame_load_model(PRISM_SOURCE_DIR "/tests/data/megatron/dsv3-bad.sh", &m, &x, &err),
	    PRISM_EFORMAT);
	assert_non_null(strstr(err.msg, "dsv3-bad.sh:2: --tensor-model-parallel-size '$TP'"));
}

/* Export then import: every knob the framework expresses where it applies
 * reads back to the value exported (as tables show it), and the model's
 * own options (Megatron-LM) to the same model. */
static void round_trip(int fw, const struct llm *m, const struct layout *l)
{
	char *text = NULL, tmp[] = "/tmp/prism-frame-XXXXXX";
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	struct llm m2;
	struct layout l2;
	struct frame_extra x;
	struct prism_err err;
	layout_mask given;
	int checked = 0;

	assert_non_null(f);
	frame_export(f, fw, m, l);
	fclose(f);
	prism_err_clear(&err);
	if (frame_import(fw, "export", text, n, fw == FRAME_TORCHTITAN ? m : NULL, &m2, &l2, &given,
			 &x, &err) ||
	    frame_resolve(&l2, &given, l->tp * l->pp * l->dp * layout_cp(l), x.gbs, x.instances,
			  &err))
		fail_msg("%s: %s\n%s", frame_name(fw), err.msg, text);
	for (int k = 0; k < LK_N; k++) {
		if (!layout_applies(m, l, k) || !frame_expresses(fw, k, m, l))
			continue;
		if (layout_knobs[k].home == LK_M && fw == FRAME_TORCHTITAN && k != LK_seq)
			continue;
		/* the model's knobs come back with the model's own options */
		if (layout_shown(m, l, k) != layout_shown(&m2, &l2, k))
			fail_msg("%s: knob %s exported %g, read back %g\n%s", frame_name(fw),
				 layout_knobs[k].id, layout_shown(m, l, k),
				 layout_shown(&m2, &l2, k), text);
		if (layout_knobs[k].kind == LK_PART) {
			char a[64], b[64];
			layout_partition_name(l, a, sizeof(a));
			layout_partition_name(&l2, b, sizeof(b));
			assert_string_equal(a, b);
		}
		checked++;
	}
	assert_true(checked >= 8);
	/* torchtitan shards with FSDP2: its import says so */
	if (fw == FRAME_TORCHTITAN)
		assert_int_equal(l2.dp_impl, l2.zero == 3 ? LAYOUT_DP_FSDP2 : LAYOUT_DP_MEGATRON);
	if (fw == FRAME_MEGATRON) {
		/* the whole model too, through a file */
		int fd = mkstemp(tmp);
		struct llm m3 = *m;
		assert_true(fd >= 0);
		assert_int_equal(write(fd, text, n), (ssize_t)n);
		close(fd);
		if (frame_load_model(tmp, &m2, &x, &err))
			fail_msg("%s\n%s", err.msg, text);
		unlink(tmp);
		memcpy(m2.name, m3.name, sizeof(m2.name));
		if (m3.experts && !m3.expert_ffn)
			m3.expert_ffn = m3.ffn;
		assert_memory_equal(&m2, &m3, sizeof(m2));
	}
	free(text);
}

static void test_round_trip(void **state)
{
	struct llm dense, mha, moe, hybrid;
	struct frame_extra x;
	struct prism_err err;
	struct layout l;
	(void)state;
	prism_err_clear(&err);
	assert_int_equal(frame_load_model(HF "llama3-8b.json", &dense, &x, &err), 0);
	assert_int_equal(frame_load_model(HF "llama2-7b.json", &mha, &x, &err), 0);
	assert_int_equal(frame_load_model(HF "nemotron-h-8b.json", &hybrid, &x, &err), 0);
	assert_int_equal(frame_load_model(HF "deepseek-v3.json", &moe, &x, &err), 0);
	for (int fw = 0; fw < FRAME_N; fw++) {
		/* a plain data-parallel run */
		layout_default(&l);
		l.dp = 8;
		l.mbs = 2;
		l.microbatches = 4;
		round_trip(fw, &dense, &l);
		/* a key and value per head: no query groups out, kv_heads 0 back */
		round_trip(fw, &mha, &l);
		/* a hybrid model: Megatron-LM's --hybrid-override-pattern and
		 * --mamba-* options (pretrain_mamba.py) back to the same model */
		round_trip(fw, &hybrid, &l);
		/* every knob away from its default that fw can say */
		layout_default(&l);
		l.tp = 4;
		l.pp = 2;
		l.dp = 4;
		l.cp = 2;
		l.schedule = LAYOUT_INTERLEAVED;
		l.vp = 2;
		l.mbs = 2;
		l.microbatches = 16;
		l.sp = 1;
		l.zero = fw == FRAME_TORCHTITAN ? 3 : 1;
		l.shard = 4;
		l.recompute = LAYOUT_RECOMPUTE_SELECTIVE;
		/* Megatron-LM's --recompute-modules (Bridge's list) */
		l.recompute_modules = LAYOUT_RC_CORE_ATTN | LAYOUT_RC_MLP | LAYOUT_RC_LAYERNORM;
		l.dtype = HW_FP8;
		l.overlap_param = 1;
		l.tp_overlap = 1;
		l.cp_comm = LAYOUT_CP_ALLGATHER;
		/* Megatron-LM and Bridge capture layers in CUDA graphs,
		 * torchtitan compiles */
		l.exec = fw == FRAME_TORCHTITAN ? LAYOUT_EXEC_COMPILED : LAYOUT_EXEC_GRAPHS;
		round_trip(fw, &dense, &l);
		/* each fp8 recipe (Megatron-LM's --fp8-recipe, Bridge's presets;
		 * torchtitan's float8 is current scaling) */
		for (int r = LAYOUT_FP8_DELAYED; r <= LAYOUT_FP8_MXFP8; r++) {
			layout_default(&l);
			l.dp = 8;
			l.dtype = HW_FP8;
			l.fp8_recipe = r;
			if (fw == FRAME_TORCHTITAN)
				assert_int_equal(frame_expresses(fw, LK_fp8_recipe, &dense, &l),
						 r == LAYOUT_FP8_CURRENT);
			else
				assert_true(frame_expresses(fw, LK_fp8_recipe, &dense, &l));
			round_trip(fw, &dense, &l);
		}
		/* activation offloading as the GB200 recipes set it (Megatron-FSDP,
		 * 20 layers): Megatron-LM's --cpu-offloading
		 * --cpu-offloading-num-layers, Bridge's model.cpu_offloading*;
		 * torchtitan has none */
		layout_default(&l);
		l.dp = 8;
		l.zero = 3;
		l.offload_layers = 20;
		assert_int_equal(frame_expresses(fw, LK_offload_layers, &dense, &l),
				 fw != FRAME_TORCHTITAN);
		round_trip(fw, &dense, &l);
		/* fp4 (NVFP4: Megatron-LM's --fp4-format, Bridge's
		 * bf16_with_nvfp4_mixed; torchtitan has none) */
		layout_default(&l);
		l.dp = 8;
		l.dtype = HW_FP4;
		assert_int_equal(frame_expresses(fw, LK_dtype, &dense, &l), fw != FRAME_TORCHTITAN);
		round_trip(fw, &dense, &l);
		/* bf16 moments with fp32 master weights (Megatron-LM's
		 * --use-precision-aware-optimizer --exp-avg-dtype bf16
		 * --exp-avg-sq-dtype bf16, in its distributed optimizer) and no
		 * clipping (--clip-grad 0, Bridge's optimizer.clip_grad); pure
		 * bf16 is no framework's here (Megatron-LM's main params are
		 * fp32 or fp16) */
		layout_default(&l);
		l.dp = 8;
		l.zero = 1;
		l.optimizer_dtype = LAYOUT_OPT_BF16_STATES;
		l.clip_grad = 0;
		l.no_dropout = 1; /* --hidden-dropout 0, model.hidden_dropout */
		assert_int_equal(frame_expresses(fw, LK_optimizer_dtype, &dense, &l),
				 fw == FRAME_MEGATRON);
		assert_int_equal(frame_expresses(fw, LK_clip_grad, &dense, &l),
				 fw != FRAME_TORCHTITAN);
		round_trip(fw, &dense, &l);
		l.zero = 0;
		l.optimizer_dtype = LAYOUT_OPT_BF16;
		assert_false(frame_expresses(fw, LK_optimizer_dtype, &dense, &l));
		/* fp8 primary weights: Megatron-LM's --fp8-param-gather, Bridge's
		 * ddp.fp8_param_gather; torchtitan's float8 all-gather is
		 * torchao's, not this knob */
		layout_default(&l);
		l.dp = 8;
		l.zero = 1;
		l.dtype = HW_FP8;
		l.fp8_param_gather = 1;
		assert_int_equal(frame_expresses(fw, LK_fp8_param_gather, &dense, &l),
				 fw != FRAME_TORCHTITAN);
		if (fw != FRAME_TORCHTITAN)
			round_trip(fw, &dense, &l);
		/* the residual stream in fp32: Megatron-LM's
		 * --fp32-residual-connection, Bridge's
		 * model.fp32_residual_connection (a TransformerConfig field);
		 * torchtitan has none */
		layout_default(&l);
		l.dp = 8;
		l.fp32_residual = 1;
		assert_int_equal(frame_expresses(fw, LK_fp32_residual, &dense, &l),
				 fw != FRAME_TORCHTITAN);
		if (fw != FRAME_TORCHTITAN)
			round_trip(fw, &dense, &l);
		/* the main gradients' dtype: Megatron-LM's --grad-reduce-in-bf16
		 * and --accumulate-allreduce-grads-in-fp32 under DDP and the
		 * distributed optimizer, --megatron-fsdp-main-grads-dtype under
		 * Megatron-FSDP; Bridge's mixed_precision.grad_reduce_in_fp32
		 * (DDP and the distributed optimizer only); Megatron-FSDP's
		 * double buffers, Megatron-LM's and Bridge's; torchtitan has
		 * none of them */
		for (int z = 0; z <= 3; z++)
			for (int g = LAYOUT_GRADS_FP32; g <= LAYOUT_GRADS_BF16; g++) {
				layout_default(&l);
				l.dp = 8;
				l.zero = z;
				l.main_grads = g;
				l.fsdp_double_buffer = z >= 2 && g == LAYOUT_GRADS_FP32;
				assert_int_equal(frame_expresses(fw, LK_main_grads, &dense, &l),
						 fw == FRAME_MEGATRON ||
						     (fw == FRAME_BRIDGE && z < 2));
				assert_int_equal(
				    frame_expresses(fw, LK_fsdp_double_buffer, &dense, &l),
				    fw != FRAME_TORCHTITAN);
				if (fw != FRAME_TORCHTITAN)
					round_trip(fw, &dense, &l);
			}
		/* full recompute, ZeRO-3, fp16 or fp32, no flash, embed-loss,
		 * no pipeline overlap; a head_dim of its own */
		layout_default(&l);
		l.tp = 2;
		l.pp = 4;
		l.dp = 2;
		l.microbatches = 8;
		l.zero = 3;
		l.recompute = LAYOUT_RECOMPUTE_FULL;
		l.dtype = fw == FRAME_TORCHTITAN ? HW_FP32 : HW_FP16;
		l.flash = 0;
		l.partition = LAYOUT_PART_EMBED_LOSS;
		l.pp_overlap = 0;
		l.overlap_grad = 0;
		l.schedule = fw == FRAME_TORCHTITAN ? LAYOUT_GPIPE : LAYOUT_1F1B;
		{
			struct llm d = dense;
			d.head_dim = 96;
			d.layers = 30;
			round_trip(fw, &d, &l);
		}
		/* ZB-V: torchtitan's ZBVZeroBubble (two stages a rank, its
		 * default for a multi-stage schedule), which Megatron-LM and
		 * Bridge do not have */
		layout_default(&l);
		l.pp = 4;
		l.dp = 2;
		l.microbatches = 8;
		l.schedule = LAYOUT_ZBV;
		assert_int_equal(frame_expresses(fw, LK_schedule, &dense, &l),
				 fw == FRAME_TORCHTITAN);
		if (fw == FRAME_TORCHTITAN)
			round_trip(fw, &dense, &l);
		/* DualPipeV: torchtitan's DualPipeV (PyTorch's
		 * ScheduleDualPipeV, the same V), not Megatron-LM's or
		 * Bridge's */
		l.schedule = LAYOUT_DUALPIPEV;
		assert_int_equal(frame_expresses(fw, LK_schedule, &dense, &l),
				 fw == FRAME_TORCHTITAN);
		if (fw == FRAME_TORCHTITAN)
			round_trip(fw, &dense, &l);
		/* an uneven list: first and last stages their own, the middle
		 * ones even (Megatron-LM's --decoder-first/last-pipeline-num-layers) */
		layout_default(&l);
		l.pp = 4;
		l.dp = 2;
		l.microbatches = 8;
		assert_int_equal(layout_partition_parse("7,9,9,7", &l, &err), 0);
		round_trip(fw, &dense, &l);
		/* mixture of experts: ep, etp */
		layout_default(&l);
		l.tp = 2;
		l.pp = 8;
		l.dp = 16;
		l.ep = 16;
		l.etp = 1;
		l.mbs = 1;
		l.microbatches = 32;
		l.zero = fw == FRAME_TORCHTITAN ? 0 : 1;
		l.dtype = HW_BF16;
		round_trip(fw, &moe, &l);
		/* Megatron-Core's placements: a layout string (DeepSeek-V3 on pp
		 * 16 vp 2 with its MTP layer on the last stage), the embedding's
		 * or the loss's slot alone, the first and last stages' layers */
		if (fw != FRAME_TORCHTITAN) {
			struct layout p = l;
			p.pp = 16, p.vp = 2, p.schedule = LAYOUT_INTERLEAVED, p.dp = 8;
			assert_int_equal(layout_partition_parse("Et*3|(tt|)*29,|mL", &p, &err), 0);
			round_trip(fw, &moe, &p);
			layout_default(&p);
			p.pp = 3, p.dp = 2, p.microbatches = 6;
			assert_int_equal(layout_partition_parse("embed", &p, &err), 0);
			round_trip(fw, &dense, &p);
			assert_int_equal(layout_partition_parse("loss", &p, &err), 0);
			round_trip(fw, &dense, &p);
			/* first/last read back as the stages they place (the list
			 * above's round trip) */
			p.pp = 4, p.microbatches = 8;
			assert_int_equal(layout_partition_parse("first=5,last=9", &p, &err), 0);
			{
				char *t = NULL;
				size_t tn = 0;
				FILE *f = open_memstream(&t, &tn);
				struct llm m2;
				struct layout l2;
				layout_mask g;
				assert_non_null(f);
				frame_export(f, fw, &dense, &p);
				fclose(f);
				assert_int_equal(
				    frame_import(fw, "export", t, tn, NULL, &m2, &l2, &g, &x, &err),
				    0);
				for (int st = 0; st < 4; st++)
					assert_int_equal(layout_stage_layers(&m2, &l2, st),
							 st == 0   ? 5
							 : st == 3 ? 9
								   : 9);
				free(t);
			}
		}
		/* dense and MoE layers alternating (Llama 4's --moe-layer-freq
		 * ([0,1]*30) here), and Megatron's int form (every third) */
		{
			struct llm mv = moe;
			mv.layers = 60, mv.first_dense = 0, mv.moe_period = 2, mv.moe_mask = 2;
			l.pp = 4;
			round_trip(fw, &mv, &l);
			mv.moe_period = 3, mv.moe_mask = 1;
			round_trip(fw, &mv, &l);
		}
		/* each dispatcher (flex's two backends), the shared experts
		 * overlapped (DeepSeek-V3 has one) */
		for (int d = LAYOUT_DISP_ALLTOALL;
		     fw != FRAME_TORCHTITAN && d <= LAYOUT_DISP_HYBRIDEP; d++) {
			l.moe_dispatcher = d;
			l.moe_shared_overlap = d != LAYOUT_DISP_ALLGATHER;
			round_trip(fw, &moe, &l);
		}
		/* the 1F1B all-to-all overlap (with pp, interleaved) */
		if (fw != FRAME_TORCHTITAN) {
			struct layout o = l;
			o.moe_dispatcher = LAYOUT_DISP_ALLTOALL;
			o.moe_shared_overlap = 0;
			o.moe_a2a_overlap = 1;
			o.vp = 2;
			o.schedule = LAYOUT_INTERLEAVED;
			round_trip(fw, &moe, &o);
		}
		/* DeepSeek-V3's recipe's recompute modules */
		l.recompute = LAYOUT_RECOMPUTE_SELECTIVE;
		l.recompute_modules = LAYOUT_RC_MLA_UP_PROJ | LAYOUT_RC_LAYERNORM |
				      LAYOUT_RC_MOE_ACT | LAYOUT_RC_SHARED;
		round_trip(fw, &moe, &l);
	}
}

/* Megatron-LM's --fp8-recipe read back: tensorwise is current scaling; a
 * recipe prism does not model (custom) is refused, naming the line. */
/*
 * no_dropout as the frameworks write it: Megatron-LM's --hidden-dropout
 * (arguments.py, default 0.1: the residual branches' and the embedding's
 * dropout), Bridge's model.hidden_dropout; written at 0 alone, read back
 * as no_dropout where 0 and as dropout above it; torchtitan has no
 * option for it (listed as not expressed).
 */
static void test_no_dropout(void **state)
{
	static const char *const want[FRAME_N] = {
	    [FRAME_MEGATRON] = "\n--hidden-dropout 0.0 \\\n",
	    [FRAME_BRIDGE] = "\nmodel.hidden_dropout=0.0\n",
	    [FRAME_TORCHTITAN] = "# not expressed in torchtitan: layers 32, hidden 4096, heads 32, "
				 "ffn 14336, no_dropout 1\n",
	};
	struct llm m;
	struct frame_extra x;
	struct prism_err err;
	struct layout l;
	layout_mask given;
	char *text = NULL;
	size_t n = 0;
	FILE *f;
	(void)state;
	prism_err_clear(&err);
	assert_int_equal(frame_load_model(HF "llama3-8b.json", &m, &x, &err), 0);
	for (int fw = 0; fw < FRAME_N; fw++) {
		layout_default(&l);
		l.dp = 8;
		f = open_memstream(&text, &n);
		frame_export(f, fw, &m, &l);
		fclose(f);
		assert_null(strstr(text, "dropout"));
		free(text);
		text = NULL;
		l.no_dropout = 1;
		assert_int_equal(frame_expresses(fw, LK_no_dropout, &m, &l),
				 fw != FRAME_TORCHTITAN);
		f = open_memstream(&text, &n);
		frame_export(f, fw, &m, &l);
		fclose(f);
		if (!strstr(text, want[fw]))
			fail_msg("%s: no '%s' in\n%s", frame_name(fw), want[fw], text);
		free(text);
		text = NULL;
	}
	{
		static const struct {
			int fw;
			const char *t;
			int want;
		} c[] = {
		    {FRAME_MEGATRON, "--num-layers 2 --hidden-dropout 0\n", 1},
		    {FRAME_MEGATRON, "--num-layers 2 --hidden-dropout 0.0 --attention-dropout 0\n",
		     1},
		    {FRAME_MEGATRON, "--num-layers 2 --hidden-dropout 0.1\n", 0},
		    {FRAME_BRIDGE, "model.num_layers=2\nmodel.hidden_dropout=0.0\n", 1},
		    {FRAME_BRIDGE, "model.num_layers=2\nmodel.hidden_dropout=0.05\n", 0},
		};
		for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			assert_int_equal(frame_import(c[i].fw, "t.sh", c[i].t, strlen(c[i].t), NULL,
						      &m, &l, &given, &x, &err),
					 0);
			assert_int_equal(l.no_dropout, c[i].want);
			assert_true(given & LK_BIT(LK_no_dropout));
		}
		/* not given: the default, dropout on */
		const char *t = "--num-layers 2\n";
		assert_int_equal(frame_import(FRAME_MEGATRON, "t.sh", t, strlen(t), NULL, &m, &l,
					      &given, &x, &err),
				 0);
		assert_int_equal(l.no_dropout, 0);
		assert_false(given & LK_BIT(LK_no_dropout));
		t = "--hidden-dropout 1.5\n";
		assert_int_equal(frame_import(FRAME_MEGATRON, "t.sh", t, strlen(t), NULL, &m, &l,
					      &given, &x, &err),
				 PRISM_EFORMAT);
		assert_string_equal(
		    err.msg, "t.sh:1: --hidden-dropout '1.5': expected a probability in [0, 1)");
	}
	/* --fp32-residual-connection read from Megatron-LM's arguments and
	 * Bridge's overrides; absent, off (a Megatron-LM flag's absence says
	 * so) */
	{
		static const struct {
			int fw;
			const char *t;
			int want;
		} c[] = {
		    {FRAME_MEGATRON, "--num-layers 2 --bf16 --fp32-residual-connection\n", 1},
		    {FRAME_MEGATRON, "--num-layers 2 --bf16\n", 0},
		    {FRAME_BRIDGE, "model.num_layers=2\nmodel.fp32_residual_connection=true\n", 1},
		};
		for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			assert_int_equal(frame_import(c[i].fw, "t.sh", c[i].t, strlen(c[i].t), NULL,
						      &m, &l, &given, &x, &err),
					 0);
			assert_int_equal(l.fp32_residual, c[i].want);
			if (c[i].want)
				assert_true(given & LK_BIT(LK_fp32_residual));
		}
	}
}

/*
 * The main gradients' dtype and Megatron-FSDP's double buffers read back
 * as each implementation reads its options (settle_grads): Megatron-LM's
 * --grad-reduce-in-bf16 and --accumulate-allreduce-grads-in-fp32
 * (arguments.py) under DDP and the distributed optimizer;
 * --megatron-fsdp-main-grads-dtype under Megatron-FSDP, which the former
 * do not reach (mcore_fsdp_adapter.py); Bridge's
 * mixed_precision.grad_reduce_in_fp32, which MixedPrecisionConfig.setup
 * writes over ddp.grad_reduce_in_fp32; --fsdp-double-buffer,
 * ddp.fsdp_double_buffer, and --nccl-ub or the max-pool double buffer that
 * turn it on under Megatron-FSDP.  Contradictions are refused, naming the
 * options; options without effect are read with a warning.
 */
static void test_main_grads_import(void **state)
{
#define MG " --num-layers 2 --bf16 "
#define MF " --use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params"
#define BR "model.num_layers=2\nmixed_precision=bf16_mixed\n"
	static const struct {
		int fw;
		const char *t;
		int mg, db;
		const char *warn; /* a part of the warning, or NULL: none */
	} c[] = {
	    {FRAME_MEGATRON, MG "--use-distributed-optimizer\n", LAYOUT_GRADS_AUTO, 0, NULL},
	    {FRAME_MEGATRON, MG "--grad-reduce-in-bf16\n", LAYOUT_GRADS_BF16, 0, NULL},
	    {FRAME_MEGATRON, MG "--accumulate-allreduce-grads-in-fp32\n", LAYOUT_GRADS_FP32, 0,
	     NULL},
	    {FRAME_MEGATRON, MG MF "\n", LAYOUT_GRADS_AUTO, 0, NULL},
	    {FRAME_MEGATRON, MG MF " --megatron-fsdp-main-grads-dtype fp32 --fsdp-double-buffer\n",
	     LAYOUT_GRADS_FP32, 1, NULL},
	    {FRAME_MEGATRON, MG MF " --megatron-fsdp-main-grads-dtype bf16 --nccl-ub\n",
	     LAYOUT_GRADS_BF16, 1, NULL},
	    {FRAME_MEGATRON, MG MF " --megatron-fsdp-main-grads-dtype auto\n", LAYOUT_GRADS_AUTO, 0,
	     NULL},
	    {FRAME_MEGATRON, MG MF " --grad-reduce-in-bf16\n", LAYOUT_GRADS_AUTO, 0,
	     "--grad-reduce-in-bf16: no effect on Megatron-FSDP's main gradients"},
	    {FRAME_MEGATRON, MG "--megatron-fsdp-main-grads-dtype fp32\n", LAYOUT_GRADS_AUTO, 0,
	     "Megatron-FSDP's main grads dtype without Megatron-FSDP"},
	    {FRAME_MEGATRON, MG "--megatron-fsdp-max-pool-double-buffer\n", LAYOUT_GRADS_AUTO, 0,
	     "--megatron-fsdp-max-pool-double-buffer: Megatron-FSDP's (zero 2/3), no effect"},
	    {FRAME_MEGATRON, " --num-layers 2 --fp16 --grad-reduce-in-bf16\n", LAYOUT_GRADS_AUTO, 0,
	     "the main gradients' dtype: no effect with fp16 weights"},
	    {FRAME_BRIDGE, BR "ddp.use_distributed_optimizer=true\n", LAYOUT_GRADS_AUTO, 0, NULL},
	    {FRAME_BRIDGE, BR "mixed_precision.grad_reduce_in_fp32=false\n", LAYOUT_GRADS_BF16, 0,
	     NULL},
	    {FRAME_BRIDGE,
	     BR "mixed_precision.grad_reduce_in_fp32=false\nddp.grad_reduce_in_fp32=false\n",
	     LAYOUT_GRADS_BF16, 0, NULL},
	    {FRAME_BRIDGE, BR "mixed_precision.grad_reduce_in_fp32=true\n", LAYOUT_GRADS_FP32, 0,
	     NULL},
	    {FRAME_BRIDGE, BR "ddp.grad_reduce_in_fp32=false\n", LAYOUT_GRADS_AUTO, 0,
	     "the mixed precision recipe's grad_reduce_in_fp32 (true) is written over it"},
	    {FRAME_BRIDGE,
	     BR "ddp.use_megatron_fsdp=true\nddp.data_parallel_sharding_strategy=optim_grads\n"
		"ddp.megatron_fsdp_main_grads_dtype=torch.float32\n"
		"ddp.fsdp_double_buffer=true\n",
	     LAYOUT_GRADS_FP32, 1, NULL},
	    {FRAME_BRIDGE,
	     BR "ddp.use_megatron_fsdp=true\nddp.megatron_fsdp_max_pool_double_buffer=true\n",
	     LAYOUT_GRADS_AUTO, 1, NULL},
	};
	static const struct {
		int fw;
		const char *t, *msg;
	} bad[] = {
	    {FRAME_MEGATRON, MG "\n--grad-reduce-in-bf16\n--accumulate-allreduce-grads-in-fp32\n",
	     "t.sh:2: --grad-reduce-in-bf16 with --accumulate-allreduce-grads-in-fp32 (line 3): "
	     "the main gradients in bf16 and in fp32 (Megatron-LM takes bf16): give one"},
	    {FRAME_BRIDGE,
	     BR "ddp.grad_reduce_in_fp32=false\nmixed_precision.grad_reduce_in_fp32=true\n",
	     "t.sh: ddp.grad_reduce_in_fp32 false with mixed_precision.grad_reduce_in_fp32 true: "
	     "Megatron-Bridge's MixedPrecisionConfig.setup writes the latter over the former: "
	     "give one value"},
	    {FRAME_MEGATRON, MG MF "\n--megatron-fsdp-main-grads-dtype fp16\n",
	     "t.sh:2: --megatron-fsdp-main-grads-dtype 'fp16': fp16 main gradients are not "
	     "modelled (main_grads: auto, fp32 or bf16)"},
	    {FRAME_MEGATRON, MG MF "\n--megatron-fsdp-main-grads-dtype fp64\n",
	     "t.sh:2: --megatron-fsdp-main-grads-dtype 'fp64': expected fp32, bf16, fp16 or auto"},
	    {FRAME_BRIDGE, BR "mixed_precision.grad_reduce_in_fp32=maybe\n",
	     "t.sh:3: mixed_precision.grad_reduce_in_fp32 'maybe': expected true or false"},
	};
#undef MG
#undef MF
#undef BR
	struct llm m;
	struct layout l;
	struct frame_extra x;
	struct prism_err err;
	layout_mask given;
	(void)state;
	prism_err_clear(&err);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (frame_import(c[i].fw, "t.sh", c[i].t, strlen(c[i].t), NULL, &m, &l, &given, &x,
				 &err))
			fail_msg("case %zu: %s", i, err.msg);
		if (l.main_grads != c[i].mg || l.fsdp_double_buffer != c[i].db)
			fail_msg("case %zu: main_grads %d, fsdp_double_buffer %d", i, l.main_grads,
				 l.fsdp_double_buffer);
		assert_int_equal(!!(given & LK_BIT(LK_main_grads)), c[i].mg != LAYOUT_GRADS_AUTO);
		if (c[i].warn ? !strstr(x.warn, c[i].warn) : strstr(x.warn, "main grad") != NULL)
			fail_msg("case %zu: warnings '%s'", i, x.warn);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		prism_err_clear(&err);
		assert_int_equal(frame_import(bad[i].fw, "t.sh", bad[i].t, strlen(bad[i].t), NULL,
					      &m, &l, &given, &x, &err),
				 PRISM_EFORMAT);
		assert_string_equal(err.msg, bad[i].msg);
	}
}

static void test_fp8_recipe_import(void **state)
{
	static const char good[] = "--num-layers 2 --bf16 --fp8-format hybrid --fp8-recipe "
				   "tensorwise\n",
			  bad[] =
			      "--num-layers 2 --bf16\n--fp8-format hybrid --fp8-recipe custom\n";
	struct llm m;
	struct layout l;
	struct frame_extra x;
	struct prism_err err;
	layout_mask given;
	(void)state;
	prism_err_clear(&err);
	assert_int_equal(frame_import(FRAME_MEGATRON, "a.sh", good, strlen(good), NULL, &m, &l,
				      &given, &x, &err),
			 0);
	assert_int_equal(l.dtype, HW_FP8);
	assert_int_equal(l.fp8_recipe, LAYOUT_FP8_CURRENT);
	assert_true(given & LK_BIT(LK_fp8_recipe));
	assert_int_equal(
	    frame_import(FRAME_MEGATRON, "b.sh", bad, strlen(bad), NULL, &m, &l, &given, &x, &err),
	    PRISM_EFORMAT);
	if (!strstr(err.msg, "b.sh:2: --fp8-recipe 'custom'"))
		fail_msg("%s", err.msg);
}
/* What a framework cannot say is named in a comment, not dropped:
 * Megatron-LM has no GPipe, torchtitan no ZeRO-1; prism's load imbalance
 * and power cap are no framework's. */
static void test_unexpressed(void **state)
{
	struct llm m;
	struct frame_extra x;
	struct prism_err err;
	struct layout l;
	char *text = NULL;
	size_t n = 0;
	FILE *f;
	(void)state;
	prism_err_clear(&err);
	assert_int_equal(frame_load_model(HF "mixtral-8x7b.json", &m, &x, &err), 0);
	layout_default(&l);
	l.pp = 4;
	l.dp = 2;
	l.schedule = LAYOUT_GPIPE;
	l.zero = 1;
	l.imbalance = 1.5;
	assert_int_equal(layout_partition_parse("7,9,8,8", &l, &err), 0);
	l.power_w = 500;
	l.prefetch = 1;
	for (int fw = 0; fw < FRAME_N; fw++) {
		/* torchtitan has no CUDA graphs of layers, Megatron-LM no compile */
		l.exec = fw == FRAME_TORCHTITAN ? LAYOUT_EXEC_GRAPHS : LAYOUT_EXEC_COMPILED;
		f = open_memstream(&text, &n);
		frame_export(f, fw, &m, &l);
		fclose(f);
		assert_non_null(
		    strstr(text, fw == FRAME_TORCHTITAN ? "exec graphs" : "exec compiled"));
		assert_null(strstr(text, "cuda_graph_impl"));
		assert_null(strstr(text, "compile.enable"));
		assert_non_null(strstr(text, "# not expressed in"));
		assert_non_null(strstr(text, "imbalance 1.5"));
		assert_non_null(strstr(text, "power_w 500"));
		assert_non_null(strstr(text, "partition 7,9,8,8"));
		if (fw != FRAME_TORCHTITAN)
			assert_non_null(strstr(text, "schedule gpipe"));
		else
			assert_non_null(strstr(text, "zero 1"));
		free(text);
		text = NULL;
	}
	assert_int_equal(frame_parse("megatron"), FRAME_MEGATRON);
	assert_int_equal(frame_parse("torchtitan"), FRAME_TORCHTITAN);
	assert_int_equal(frame_parse("deepspeed"), -1);
}

/*
 * LoRA as Megatron-Bridge's recipes take it (ConfigContainer.peft, a LoRA:
 * dim, alpha, target_modules; peft="lora" alone its defaults, dim 32 on
 * all four targets): exported and read back on every knob; Megatron-LM and
 * torchtitan have no LoRA and say so in the comment; other PEFT schemes
 * and peft.* without peft=lora are refused.
 */
static void test_lora(void **state)
{
	static const char plain[] = "peft=lora\n", dora[] = "peft=dora\n",
			  orphan[] = "peft.dim=8\n";
	struct llm m, m2;
	struct layout l, l2;
	struct frame_extra x;
	struct prism_err err;
	layout_mask given;
	char *text = NULL;
	size_t n = 0;
	FILE *f;
	(void)state;
	prism_err_clear(&err);
	assert_int_equal(frame_load_model(HF "llama3-8b.json", &m, &x, &err), 0);
	layout_default(&l);
	l.tp = 2;
	l.dp = 4;
	l.lora_rank = 16;
	l.lora_alpha = 64;
	l.lora_targets = LAYOUT_LORA_QKV | LAYOUT_LORA_FC2;
	for (int fw = 0; fw < FRAME_N; fw++) {
		assert_int_equal(frame_expresses(fw, LK_lora_rank, &m, &l), fw == FRAME_BRIDGE);
		round_trip(fw, &m, &l);
		f = open_memstream(&text, &n);
		frame_export(f, fw, &m, &l);
		fclose(f);
		if (fw == FRAME_BRIDGE) {
			assert_non_null(strstr(text, "\npeft=lora\npeft.dim=16\n"
						     "peft.target_modules=[linear_qkv,linear_fc2]\n"
						     "peft.alpha=64\n"));
		} else {
			assert_null(strstr(text, "peft"));
			assert_non_null(strstr(text, "lora_rank 16, lora_targets "
						     "linear_qkv,linear_fc2, lora_alpha 64"));
		}
		free(text);
		text = NULL;
	}
	assert_int_equal(
	    frame_import(FRAME_BRIDGE, "p", plain, strlen(plain), NULL, &m2, &l2, &given, &x, &err),
	    0);
	assert_int_equal(l2.lora_rank, 32);
	assert_int_equal(l2.lora_alpha, 32);
	assert_int_equal(l2.lora_targets, LAYOUT_LORA_ALL);
	assert_true(given & LK_BIT(LK_lora_rank));
	assert_int_equal(
	    frame_import(FRAME_BRIDGE, "d", dora, strlen(dora), NULL, &m2, &l2, &given, &x, &err),
	    PRISM_EFORMAT);
	assert_string_equal(err.msg, "d:1: peft 'dora': expected lora or none (prism models LoRA, "
				     "not other PEFT schemes)");
	prism_err_clear(&err);
	assert_int_equal(frame_import(FRAME_BRIDGE, "o", orphan, strlen(orphan), NULL, &m2, &l2,
				      &given, &x, &err),
			 PRISM_EFORMAT);
	assert_string_equal(err.msg, "o: peft.* options without peft=lora");
}

/* torchtitan's text of layout l of model m, exported and read back with m
 * as the base: the import's return (its error in *err, warnings in x). */
static int tt_round(const struct llm *m, const struct layout *l, char **text, struct layout *l2,
		    struct frame_extra *x, struct prism_err *err)
{
	struct llm m2;
	layout_mask given;
	size_t n = 0;
	FILE *f = open_memstream(text, &n);
	assert_non_null(f);
	frame_export(f, FRAME_TORCHTITAN, m, l);
	fclose(f);
	prism_err_clear(err);
	return frame_import(FRAME_TORCHTITAN, "export", *text, n, m, &m2, l2, &given, x, err);
}

/*
 * DualPipeV with expert parallelism in torchtitan: its F&B pairs overlap
 * one pass's expert all-to-alls with the other's compute by default
 * (parallelism.pipeline_parallel_expert_parallel_overlap, with pp > 1 and
 * ep > 1), which torchtitan refuses with activation checkpointing
 * (torchtitan/distributed/dual_pipe_v.py get_dual_pipe_v_flag raises
 * NotImplementedError).  The export turns it off where prism runs the pairs
 * back to back (layout_a2a_overlap: under recomputation, compiled), and
 * the import refuses what torchtitan refuses and warns where the file and
 * prism's pairing disagree.
 */
static void test_dpv_overlap(void **state)
{
	static const char key[] = "pipeline_parallel_expert_parallel_overlap";
	static const char head[] = "[parallelism]\npipeline_parallel_degree = 2\n"
				   "pipeline_parallel_schedule = \"DualPipeV\"\n"
				   "expert_parallel_degree = 4\n";
	struct llm m, m2;
	struct layout l, l2;
	struct frame_extra x;
	struct prism_err err;
	layout_mask given;
	char *text = NULL, t[512];
	(void)state;
	prism_err_clear(&err);
	assert_int_equal(frame_load_model(HF "mixtral-8x7b.json", &m, &x, &err), 0);
	layout_default(&l);
	l.pp = 2, l.dp = 4, l.ep = 4, l.microbatches = 8;
	l.schedule = LAYOUT_DUALPIPEV;
	/* no recomputation: torchtitan's default overlap is prism's pairing */
	assert_true(layout_a2a_overlap(&m, &l));
	assert_int_equal(tt_round(&m, &l, &text, &l2, &x, &err), 0);
	assert_null(strstr(text, key));
	assert_int_equal(l2.schedule, LAYOUT_DUALPIPEV);
	assert_true(layout_a2a_overlap(&m, &l2));
	assert_string_equal(x.warn, "");
	free(text);
	/* full and selective recomputation: the pairs back to back, the
	 * overlap off in the [parallelism] section, read back without a word */
	for (int rc = LAYOUT_RECOMPUTE_SELECTIVE; rc <= LAYOUT_RECOMPUTE_FULL; rc++) {
		l.recompute = rc;
		assert_false(layout_a2a_overlap(&m, &l));
		assert_int_equal(tt_round(&m, &l, &text, &l2, &x, &err), 0);
		assert_non_null(strstr(text,
				       "pipeline_parallel_schedule = \"DualPipeV\"\n"
				       "pipeline_parallel_expert_parallel_overlap = false\n"));
		assert_true(strstr(text, key) < strstr(text, "[activation_checkpoint]"));
		assert_int_equal(l2.recompute, rc);
		assert_int_equal(l2.schedule, LAYOUT_DUALPIPEV);
		assert_string_equal(x.warn, "");
		free(text);
	}
	/* compiled: torchtitan would overlap, prism does not pair */
	l.recompute = LAYOUT_RECOMPUTE_NONE;
	l.exec = LAYOUT_EXEC_COMPILED;
	assert_int_equal(tt_round(&m, &l, &text, &l2, &x, &err), 0);
	assert_non_null(strstr(text, "pipeline_parallel_expert_parallel_overlap = false\n"));
	assert_int_equal(l2.exec, LAYOUT_EXEC_COMPILED);
	free(text);
	/* not with ep 1, one stage, or another schedule */
	l.exec = LAYOUT_EXEC_EAGER;
	l.recompute = LAYOUT_RECOMPUTE_FULL;
	l.ep = 1;
	assert_int_equal(tt_round(&m, &l, &text, &l2, &x, &err), 0);
	assert_null(strstr(text, key));
	free(text);
	l.ep = 4;
	l.schedule = LAYOUT_ZBV;
	assert_int_equal(tt_round(&m, &l, &text, &l2, &x, &err), 0);
	assert_null(strstr(text, key));
	free(text);

	/* torchtitan's refusals: checkpointing with the overlap on, by its
	 * default or said */
	snprintf(t, sizeof(t), "%s[activation_checkpoint]\nmode = \"full\"\n", head);
	assert_int_equal(
	    frame_import(FRAME_TORCHTITAN, "a.toml", t, strlen(t), &m, &m2, &l2, &given, &x, &err),
	    PRISM_EFORMAT);
	assert_string_equal(err.msg,
			    "a.toml: DualPipeV with expert parallelism 4 and "
			    "activation_checkpoint.mode full: torchtitan refuses its "
			    "default expert-parallel overlap with activation "
			    "checkpointing (dual_pipe_v.py get_dual_pipe_v_flag): set "
			    "parallelism.pipeline_parallel_expert_parallel_overlap = false");
	snprintf(t, sizeof(t), "%s%s = true\n[activation_checkpoint]\nmode = \"selective\"\n", head,
		 key);
	prism_err_clear(&err);
	assert_int_equal(
	    frame_import(FRAME_TORCHTITAN, "b.toml", t, strlen(t), &m, &m2, &l2, &given, &x, &err),
	    PRISM_EFORMAT);
	assert_string_equal(err.msg, "b.toml:5: parallelism.pipeline_parallel_expert_parallel_"
				     "overlap true with DualPipeV, expert parallelism 4 and "
				     "activation_checkpoint.mode selective: torchtitan refuses the "
				     "overlap with activation checkpointing (dual_pipe_v.py "
				     "get_dual_pipe_v_flag)");
	/* off without checkpointing: prism pairs all the same, and says so */
	snprintf(t, sizeof(t), "%s%s = false\n", head, key);
	prism_err_clear(&err);
	assert_int_equal(
	    frame_import(FRAME_TORCHTITAN, "c.toml", t, strlen(t), &m, &m2, &l2, &given, &x, &err),
	    0);
	assert_true(layout_a2a_overlap(&m2, &l2));
	assert_non_null(strstr(x.warn, "pipeline_parallel_expert_parallel_overlap false: prism "
				       "overlaps DualPipeV's F&B pairs"));
	/* on (its default) with torch.compile: prism runs the pairs apart */
	snprintf(t, sizeof(t), "%s[compile]\nenable = true\n", head);
	assert_int_equal(
	    frame_import(FRAME_TORCHTITAN, "d.toml", t, strlen(t), &m, &m2, &l2, &given, &x, &err),
	    0);
	assert_false(layout_a2a_overlap(&m2, &l2));
	assert_non_null(strstr(x.warn, "prism runs the F&B pairs back to back"));
	/* a bad value */
	snprintf(t, sizeof(t), "%s%s = maybe\n", head, key);
	assert_int_equal(
	    frame_import(FRAME_TORCHTITAN, "e.toml", t, strlen(t), &m, &m2, &l2, &given, &x, &err),
	    PRISM_EFORMAT);
	assert_string_equal(err.msg, "e.toml:5: parallelism.pipeline_parallel_expert_parallel_"
				     "overlap 'maybe': expected true or false");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hf_families),
	    cmocka_unit_test(test_hf_deepseek),
	    cmocka_unit_test(test_hf_nemotron_h),
	    cmocka_unit_test(test_hf_warnings),
	    cmocka_unit_test(test_hf_unknown),
	    cmocka_unit_test(test_hf_bad),
	    cmocka_unit_test(test_megatron_import),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_no_dropout),
	    cmocka_unit_test(test_main_grads_import),
	    cmocka_unit_test(test_fp8_recipe_import),
	    cmocka_unit_test(test_unexpressed),
	    cmocka_unit_test(test_lora),
	    cmocka_unit_test(test_dpv_overlap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
