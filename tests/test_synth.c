/*
 * test_synth.c - synthesised runs against closed forms: FLOPs against
 * Narayanan et al.'s formula, pipeline bubbles against each schedule's
 * (p-1)/(m+p-1) and (p-1)/(vm+p-1), the graph invariants after every edit,
 * and the run description round trip.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analytic.h"
#include "build.h"
#include "comm.h"
#include "dtype.h"
#include "cost.h"
#include "edit.h"
#include "graph.h"
#include "hw.h"
#include "kineto.h"
#include "llm.h"
#include "mem.h"
#include "predict.h"
#include "settle.h"
#include "sim.h"
#include "synth.h"
#include "timeline.h"
#include "fixtures.h"
#include "testutil.h"

static struct hw_profile hw;

static int setup(void **state)
{
	struct prism_err err;
	(void)state;
	return hw_load(PRISM_SOURCE_DIR "/configs/hw/h100-dgx.cfg", &hw, &err);
}

static void small(struct synth_in *in)
{
	fixture_small_in(in, &hw);
}

/* in on h100-dgx without its power balance: every step at the profile's
 * stated step clock, the reference mix's, whatever its own (for tests that
 * work an estimate's terms by hand from the layers' times at that clock;
 * test_cost's test_mix_clock and test_own_mix below work the step's own
 * mix). */
static void at_reference(struct synth_in *in)
{
	static struct hw_profile ref;
	ref = hw;
	ref.power.mem_w = 0;
	in->hw = &ref;
}

/* Multi-head latent attention's dims (llm.h, config.json's names). */
static void mla_dims(struct llm *m, int q_lora, int kv_lora, int nope, int rope, int v)
{
	m->q_lora_rank = q_lora;
	m->kv_lora_rank = kv_lora;
	m->qk_nope_head_dim = nope;
	m->qk_rope_head_dim = rope;
	m->v_head_dim = v;
}

/*
 * synth_layer_times and synth_extra_times keep their last two inputs'
 * times per thread (bound.c times_memo): the same input (its bytes and its
 * profile's) gives the same times bit for bit however the calls
 * alternate, and a profile changed in place -- the same pointer, other
 * bytes -- is timed again, as a copy of it elsewhere is.
 */
static void test_times_memo(void **state)
{
	(void)state;
	struct synth_in a, b;
	struct hw_profile slow;
	double la[3], lb[3], ea[2], eb[2], x[3], y[2], ls[3], es[2];

	small(&a);
	b = a;
	b.scale[KC_GEMM] = 2; /* another input: its GEMMs twice as long */
	synth_layer_times(&a, &la[0], &la[1], &la[2]);
	synth_extra_times(&a, &ea[0], &ea[1]);
	synth_layer_times(&b, &lb[0], &lb[1], &lb[2]);
	synth_extra_times(&b, &eb[0], &eb[1]);
	assert_true(lb[0] > la[0] && lb[1] > la[1] && eb[0] >= ea[0] && eb[1] > ea[1]);
	for (int i = 0; i < 3; i++) {
		const struct synth_in *in = i % 2 ? &b : &a;
		const double *l = i % 2 ? lb : la, *e = i % 2 ? eb : ea;
		synth_layer_times(in, &x[0], &x[1], &x[2]);
		synth_extra_times(in, &y[0], &y[1]);
		assert_memory_equal(x, l, sizeof(x));
		assert_memory_equal(y, e, sizeof(y));
	}
	/* The profile's GEMMs and memory at half speed, in place: */
	slow = hw;
	for (int d = 0; d < HW_NDTYPES; d++)
		slow.peak_flops[d] /= 2;
	slow.hbm_Bps /= 2;
	b = a;
	b.hw = &slow; /* (another address) */
	synth_layer_times(&b, &ls[0], &ls[1], &ls[2]);
	synth_extra_times(&b, &es[0], &es[1]);
	assert_true(ls[0] > la[0] && ls[1] > la[1] && es[1] > ea[1]);
	{
		struct hw_profile keep = hw;
		hw = slow;
		synth_layer_times(&a, &x[0], &x[1], &x[2]);
		synth_extra_times(&a, &y[0], &y[1]);
		hw = keep;
	}
	assert_memory_equal(x, ls, sizeof(x));
	assert_memory_equal(y, es, sizeof(y));
	synth_layer_times(&a, &x[0], &x[1], &x[2]);
	synth_extra_times(&a, &y[0], &y[1]);
	assert_memory_equal(x, la, sizeof(x));
	assert_memory_equal(y, ea, sizeof(y));
}

/*
 * synth_stage_host times each stage's optimizer in one dry pass, host and
 * kernels together (bound.c): its host time does not move when every
 * kernel takes twice as long, its kernels' time doubles exactly (each
 * kernel's time is scaled by 2, exact in binary), and so do neither the
 * transfers' nor the data-parallel host times of the stages after it.
 * With 2,000 layers a stage's pass adds more host times than the pass
 * keeps (STAGE_HOST_LOG), and the same holds.
 */
static void test_stage_host_one_pass(void **state)
{
	(void)state;
	static const int layers[] = {8, 2000};
	for (size_t i = 0; i < sizeof(layers) / sizeof(*layers); i++) {
		struct synth_in a, b;
		struct synth_stage_host sa[2], sb[2];
		small(&a);
		a.m.layers = layers[i];
		a.lay.pp = 2;
		a.lay.dp = 2;
		a.lay.zero = 1;
		b = a;
		for (int c = 0; c < KC_NCLASSES; c++)
			b.scale[c] = 2 * a.scale[c];
		synth_stage_host(&a, sa);
		synth_stage_host(&b, sb);
		for (int s = 0; s < 2; s++) {
			assert_true(sa[s].opt_s > 0 && sa[s].opt_gpu_s > 0);
			assert_true(sa[s].opt_s == sb[s].opt_s);
			assert_true(2 * sa[s].opt_gpu_s == sb[s].opt_gpu_s);
			assert_true(sa[s].xfer_fwd_s > 0 && sa[s].xfer_fwd_s == sb[s].xfer_fwd_s);
			assert_true(sa[s].xfer_bwd_s == sb[s].xfer_bwd_s);
			assert_true(sa[s].dp_last_s > 0 && sa[s].dp_last_s == sb[s].dp_last_s);
		}
	}
}

/* A layout for test_stage_host_memo: case k of its bases, its microbatch
 * size and recomputation (what the optimizer's memo leaves out of its
 * key). */
#define MEMO_CASES 9
static void moe_small(struct synth_in *in);
static void memo_case(struct synth_in *in, int k, int mbs, int rc)
{
	small(in);
	in->lay.pp = 2;
	in->lay.dp = 2;
	in->lay.zero = 1;
	switch (k) {
	case 1: /* fp16: unscaled gradients, their flag; no clipping */
		in->lay.dtype = HW_FP16;
		in->lay.clip_grad = 0;
		break;
	case 2: /* fp8 primary weights: amaxes and casts */
		in->lay.dtype = HW_FP8;
		in->lay.fp8_recipe = LAYOUT_FP8_DELAYED;
		in->lay.fp8_param_gather = 1;
		break;
	case 3: /* FSDP2's ZeRO-3 */
		in->lay.zero = 3;
		in->lay.dp_impl = LAYOUT_DP_FSDP2;
		break;
	case 4: /* experts over their own group */
		moe_small(in);
		in->lay.pp = 2;
		in->lay.ep = 2;
		in->lay.dp = 4;
		in->lay.zero = 1;
		break;
	case 5: /* interleaved, balanced: the placement moves with the times */
		in->lay.pp = 4;
		in->lay.schedule = LAYOUT_INTERLEAVED;
		in->lay.vp = 2;
		in->m.layers = 16;
		in->lay.partition = LAYOUT_PART_BALANCED;
		break;
	case 6: /* context parallelism, tensor parallelism with sp */
		in->lay.cp = 2;
		in->lay.tp = 2;
		in->lay.sp = 1;
		break;
	case 7: /* ZeRO-2, gradients reduced after the backward */
		in->lay.zero = 2;
		in->lay.overlap_grad = 0;
		break;
	case 8: /* ZeRO-0, no pipeline: the data-parallel work's buckets */
		in->lay.pp = 1;
		in->lay.zero = 0;
		break;
	default: /* ZeRO-1, fp32 optimizer, clipping */
		break;
	}
	in->lay.mbs = mbs;
	in->lay.microbatches = 8 / mbs;
	in->lay.recompute = rc;
}

static const int memo_mbs[] = {1, 2, 4};
static const int memo_rc[] = {LAYOUT_RECOMPUTE_NONE, LAYOUT_RECOMPUTE_FULL};
#define MEMO_VARIANTS 6 /* memo_mbs x memo_rc */

/* A memo test's run: its case k and variant v (-1: every variant, in
 * order, on one thread), first in each test's struct; variant(id, v)
 * computes variant v into the struct id heads. */
struct memo_id {
	int k, v;
	void (*variant)(struct memo_id *id, int v);
};

/* Run on a thread of its own: a memo of its own, empty (variant v cold),
 * or (v -1) every variant of n in order, the later ones from it. */
struct memo_thread_arg {
	struct memo_id *id;
	int n;
};

static void *memo_thread(void *arg)
{
	const struct memo_thread_arg *a = arg;
	struct memo_id *id = a->id;
	for (int v = id->v < 0 ? 0 : id->v; v < (id->v < 0 ? a->n : id->v + 1); v++)
		id->variant(id, v);
	return NULL;
}

/* Case k of a memo test whose variants variant computes: warm (every
 * variant in order, the later ones from the memo) and each of cold[0..n)
 * (variant v alone), each on a fresh thread (an empty memo); the cold runs
 * lie size bytes apart. */
static void memo_warm_cold(void (*variant)(struct memo_id *, int), int k, struct memo_id *warm,
			   struct memo_id *cold, size_t size, int n)
{
	pthread_t t;
	struct memo_thread_arg a = {warm, n};
	warm->k = k;
	warm->v = -1;
	warm->variant = variant;
	assert_int_equal(pthread_create(&t, NULL, memo_thread, &a), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	for (int v = 0; v < n; v++) {
		struct memo_id *c = (struct memo_id *)((char *)cold + (size_t)v * size);
		c->k = k;
		c->v = v;
		c->variant = variant;
		a.id = c;
		assert_int_equal(pthread_create(&t, NULL, memo_thread, &a), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
}

struct memo_run {
	struct memo_id id; /* first (memo_warm_cold) */
	struct synth_stage_host sh[MEMO_VARIANTS][LAYOUT_MAX_STAGES];
};

static void memo_variant(struct memo_id *id, int v)
{
	struct memo_run *m = (struct memo_run *)id;
	struct synth_in in;
	memo_case(&in, m->id.k, memo_mbs[v / 2], memo_rc[v % 2]);
	synth_stage_host(&in, m->sh[v]);
}

/*
 * The estimate's stages' host times are kept per thread under a key
 * without the microbatch size, the microbatch count and the
 * recomputation (bound.c sh_memo): each case's six variants, timed one
 * after the other on one thread (the later ones from the memo), give the
 * same stages' times to the bit as each timed alone on a fresh thread
 * (an empty memo).  And the claim the key rests on: run cold, the
 * variants' times are equal -- the transfers', the optimizer's (host and
 * kernels) and the data-parallel work's.
 */
static void test_stage_host_memo(void **state)
{
	(void)state;
	for (int k = 0; k < MEMO_CASES; k++) {
		static struct memo_run warm, cold[MEMO_VARIANTS];
		struct synth_in in;
		memo_case(&in, k, 1, LAYOUT_RECOMPUTE_NONE);
		memo_warm_cold(memo_variant, k, &warm.id, &cold[0].id, sizeof(cold[0]),
			       MEMO_VARIANTS);
		for (int v = 0; v < MEMO_VARIANTS; v++) {
			assert_memory_equal(warm.sh[v], cold[v].sh[v],
					    (size_t)in.lay.pp * sizeof(warm.sh[v][0]));
		}
		for (int s = 0; s < in.lay.pp; s++) {
			assert_true(cold[0].sh[0][s].opt_s > 0 && cold[0].sh[0][s].opt_gpu_s > 0);
			assert_true(in.lay.pp == 1 || cold[0].sh[0][s].xfer_fwd_s > 0);
			assert_true(cold[0].sh[0][s].dp_bwd_s + cold[0].sh[0][s].dp_last_s > 0);
			for (int v = 1; v < MEMO_VARIANTS; v++)
				assert_memory_equal(&cold[v].sh[v][s], &cold[0].sh[0][s],
						    sizeof(cold[0].sh[0][s]));
		}
	}
}

/* What test_host_memo times of variant v (hm_mbs x hm_rc) of a case: a
 * dense layer's host, an MoE layer's (a dense model's: the dense one's),
 * each with the gradient adds too (acc), and the embedding's and head's. */
static const int hm_mbs[] = {1, 2, 4};
static const int hm_rc[] = {LAYOUT_RECOMPUTE_NONE, LAYOUT_RECOMPUTE_SELECTIVE,
			    LAYOUT_RECOMPUTE_FULL};
#define HM_VARIANTS 9 /* hm_mbs x hm_rc */
struct hm_times {
	double layer[2][2][2]; /* [moe][acc][fwd, bwd] */
	struct synth_extra_host eh;
};
struct hm_run {
	struct memo_id id; /* first (memo_warm_cold) */
	struct hm_times t[HM_VARIANTS];
};

static void hm_variant(struct memo_id *id, int v)
{
	struct hm_run *m = (struct hm_run *)id;
	struct synth_in in;
	memo_case(&in, m->id.k, hm_mbs[v / 3], hm_rc[v % 3]);
	/* each variant at a step clock of its own (a sweep's candidates') */
	in.clock = 0.9 + 0.01 * v;
	for (int moe = 0; moe < 2; moe++)
		for (int acc = 0; acc < 2; acc++) {
			in.acc_elem_bytes = acc ? 2 : -1;
			synth_layer_host(&in, moe, &m->t[v].layer[moe][acc][0],
					 &m->t[v].layer[moe][acc][1]);
		}
	in.acc_elem_bytes = -1;
	synth_extra_host(&in, &m->t[v].eh);
}

/*
 * The host's dry runs of a layer and of the embedding and head are kept
 * per thread under a key without the microbatch size and count (the
 * layer's) or the recomputation and the count (the embedding's and
 * head's: bound.c hm_find): each case's nine variants run in order on one
 * thread (the later ones from the memo) give the same bits as each run
 * alone on a fresh thread.  And the claim the keys rest on, run cold: a
 * layer's host times are the same at every microbatch size (and move
 * with the recomputation: a full one launches the forward again), the
 * embedding's and head's the same under every recomputation.
 */
static void test_host_memo(void **state)
{
	(void)state;
	for (int k = 0; k < MEMO_CASES; k++) {
		static struct hm_run warm, cold[HM_VARIANTS];
		memo_warm_cold(hm_variant, k, &warm.id, &cold[0].id, sizeof(cold[0]), HM_VARIANTS);
		for (int v = 0; v < HM_VARIANTS; v++) {
			assert_memory_equal(&warm.t[v], &cold[v].t[v], sizeof(warm.t[v]));
		}
		for (int v = 0; v < HM_VARIANTS; v++) {
			const struct hm_times *a = &cold[v].t[v], *b = &cold[v % 3].t[v % 3],
					      *c = &cold[v / 3 * 3].t[v / 3 * 3];
			assert_true(a->layer[0][0][0] > 0 && a->layer[0][0][1] > 0);
			assert_memory_equal(a->layer, b->layer, sizeof(a->layer));
			assert_memory_equal(&a->eh, &c->eh, sizeof(a->eh));
			assert_true(a->eh.emb_fwd_s > 0 && a->eh.head_bwd_s > 0);
		}
		assert_true(cold[2].t[2].layer[0][0][1] > cold[0].t[0].layer[0][0][1]);
	}
}

/* test_tp_memo's variant v of case k: tensor parallelism 2, ZeRO 0-3
 * (v % 4), 1F1B or interleaved over 2 (v / 4 % 2), an even or a balanced
 * partition (v / 8); sequence parallelism in the odd cases. */
#define TP_VARIANTS 16
static void tp_variant(struct synth_in *in, int k, int v)
{
	memo_case(in, k, 2, LAYOUT_RECOMPUTE_NONE);
	in->lay.tp = 2;
	in->lay.sp = k % 2;
	in->lay.zero = v % 4;
	in->lay.schedule = v / 4 % 2 ? LAYOUT_INTERLEAVED : LAYOUT_1F1B;
	in->lay.vp = v / 4 % 2 ? 2 : 1;
	in->m.layers = 16;
	in->lay.partition = v / 8 ? LAYOUT_PART_BALANCED : LAYOUT_PART_GIVEN;
}

struct tp_run {
	struct memo_id id; /* first (memo_warm_cold) */
	double t[TP_VARIANTS][2];
};

static void tp_run_variant(struct memo_id *id, int v)
{
	struct tp_run *m = (struct tp_run *)id;
	struct synth_in in;
	tp_variant(&in, m->id.k, v);
	m->t[v][1] = synth_layer_tp_s(&in, &m->t[v][0]);
}

/*
 * A layer's tensor-parallel collectives in the estimate (synth_layer_tp_s)
 * are kept per thread under a key without the ZeRO stage, the schedule,
 * its virtual stages and the partition (bound.c hm_find, HM_TP): each
 * case's sixteen variants run in order on one thread (the later ones from
 * the memo) give the same bits as each run alone on a fresh thread, and
 * run cold they are equal: the layer's collectives are its own, whatever
 * the data-parallel work, the pipeline's order and its stages' layers.
 */
static void test_tp_memo(void **state)
{
	(void)state;
	for (int k = 0; k < MEMO_CASES; k++) {
		static struct tp_run warm, cold[TP_VARIANTS];
		memo_warm_cold(tp_run_variant, k, &warm.id, &cold[0].id, sizeof(cold[0]),
			       TP_VARIANTS);
		for (int v = 0; v < TP_VARIANTS; v++) {
			assert_memory_equal(warm.t[v], cold[v].t[v], sizeof(warm.t[v]));
			assert_memory_equal(cold[v].t[v], cold[0].t[0], sizeof(cold[0].t[0]));
		}
		assert_true(cold[0].t[0][0] > 0 && cold[0].t[0][1] > cold[0].t[0][0]);
	}
}

/* test_times_key's variant v of case k: what the kernel times' key
 * leaves out (bound.c tm_key) changed -- the partition (even or
 * balanced), the gradient adds (the framework's, 0, or that value
 * resolved), the host's costs, the steps, the collectives' efficiency,
 * the units' folding -- bit by bit of v. */
#define TK_VARIANTS 16
static void tk_variant(struct synth_in *in, int k, int v)
{
	memo_case(in, k, 2, LAYOUT_RECOMPUTE_NONE);
	in->m.layers = 16;
	in->lay.partition = v & 1 ? LAYOUT_PART_BALANCED : LAYOUT_PART_GIVEN;
	if (v & 2) {
		double acc = synth_acc_bytes(in->acc_elem_bytes, &in->lay);
		in->acc_elem_bytes = acc > 0 ? acc : -1;
	}
	if (v & 4) {
		in->cpu_op_s *= 3;
		in->launch_s *= 2;
		in->event_s *= 2;
		in->gpu_lag_s *= 2;
		in->steps = 3;
	}
	if (v & 8) {
		in->comm_eff = 0.5;
		in->units = 1;
		in->no_shapes = 1;
	}
}

struct tk_run {
	struct memo_id id; /* first (memo_warm_cold) */
	double t[TK_VARIANTS][5];
};

static void tk_run_variant(struct memo_id *id, int v)
{
	struct tk_run *m = (struct tk_run *)id;
	struct synth_in in;
	tk_variant(&in, m->id.k, v);
	synth_layer_times(&in, &m->t[v][0], &m->t[v][1], &m->t[v][2]);
	synth_extra_times(&in, &m->t[v][3], &m->t[v][4]);
}

/*
 * The layer's and the embedding's and head's kernel times are kept under
 * their input as a kernel-time dry run reads it (bound.c tm_key: the
 * judging's candidate and the estimate's own input, which differ in the
 * partition, the gradient adds' spelling and the host's terms, share an
 * entry): each case's variants run cold on fresh threads are equal, and
 * run in order on one thread (the later ones from the memo) the same bits.
 */
static void test_times_key(void **state)
{
	(void)state;
	for (int k = 0; k < MEMO_CASES; k++) {
		static struct tk_run warm, cold[TK_VARIANTS];
		memo_warm_cold(tk_run_variant, k, &warm.id, &cold[0].id, sizeof(cold[0]),
			       TK_VARIANTS);
		for (int v = 0; v < TK_VARIANTS; v++) {
			assert_memory_equal(warm.t[v], cold[v].t[v], sizeof(warm.t[v]));
			assert_memory_equal(cold[v].t[v], cold[0].t[0], sizeof(cold[0].t[0]));
		}
		assert_true(cold[0].t[0][0] > 0 && cold[0].t[0][1] > 0 && cold[0].t[0][4] > 0);
	}
}

/* test_bound_mem_memo's variant v of case k: the step's clock (its own
 * estimate's, one below the reference and the burst: the bound runs at
 * the faster of its own and the reference, bound_in), the partition (even
 * or balanced) and the recomputation (none or full). */
#define BM_VARIANTS 12
static void bm_variant(struct synth_in *in, int k, int v)
{
	static const double clock[3] = {0, 0.8, 1};
	memo_case(in, k, 2, v / 3 % 2 ? LAYOUT_RECOMPUTE_FULL : LAYOUT_RECOMPUTE_NONE);
	in->m.layers = 16;
	in->lay.partition = v / 6 ? LAYOUT_PART_BALANCED : LAYOUT_PART_GIVEN;
	in->clock = clock[v % 3];
}

struct bm_run {
	struct memo_id id; /* first (memo_warm_cold) */
	double t[BM_VARIANTS];
};

static void bm_run_variant(struct memo_id *id, int v)
{
	struct bm_run *m = (struct bm_run *)id;
	struct synth_in in;
	bm_variant(&in, m->id.k, v);
	m->t[v] = synth_lower_bound(&in);
}

/*
 * The lower bound's memory-bound kernels of a layer are kept per thread
 * under its layout without the clock (bound.c layer_mem_s through
 * hm_find, HM_MEM): each case's variants -- the clock, the partition and
 * the recomputation changed, so that the later ones in order find the
 * entry an earlier one made at another clock -- give the same bounds to
 * the bit as each run alone on a fresh thread; and the bound moves with
 * the clock (its GEMMs' and attention's), so that the entries are found
 * across clocks that matter.
 */
static void test_bound_mem_memo(void **state)
{
	(void)state;
	for (int k = 0; k < MEMO_CASES; k++) {
		static struct bm_run warm, cold[BM_VARIANTS];
		memo_warm_cold(bm_run_variant, k, &warm.id, &cold[0].id, sizeof(cold[0]),
			       BM_VARIANTS);
		for (int v = 0; v < BM_VARIANTS; v++) {
			assert_true(cold[v].t[v] > 0);
			assert_true(warm.t[v] == cold[v].t[v]);
		}
		/* the burst's bound below the reference's */
		assert_true(cold[2].t[2] < cold[1].t[1]);
	}
}

static struct graph *build(const struct synth_in *in, struct synth_out *so, struct settle_out *st)
{
	struct graph *g = NULL;
	struct prism_err err;
	prism_err_clear(&err);
	if (synth_build(in, &g, so, &err) != 0) {
		print_error("%s\n", err.msg);
		fail();
	}
	if (graph_check(g, &err) != 0) {
		print_error("%s\n", err.msg);
		fail();
	}
	if (settle_synth(g, so, st, &err) != 0) {
		print_error("%s\n", err.msg);
		fail();
	}
	return g;
}

/* The kernels' FLOPs add up to eq. (3) of Narayanan et al. (llm.h) for the
 * replica's mbs x microbatches sequences: whatever the pipeline split, and
 * times tp with tensor parallelism (each rank does 1/tp of every GEMM). */
static void test_flops_formula(void **state)
{
	static const int layouts[][4] = {{1, 1, 1, 1}, {2, 1, 4, 1}, {1, 4, 8, 1}, {4, 2, 4, 2}};
	(void)state;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		small(&in);
		in.lay.tp = layouts[i][0];
		in.lay.pp = layouts[i][1];
		in.lay.microbatches = layouts[i][2];
		in.lay.mbs = layouts[i][3];
		g = build(&in, &so, &st);
		assert_rel_close(so.flops * in.lay.tp,
				 llm_flops_iter(&in.m, in.lay.mbs * in.lay.microbatches, 0), 1e-12);
		assert_rel_close(so.flops * in.lay.tp,
				 llm_flops_iter_formula(&in.m, in.lay.mbs * in.lay.microbatches, 0),
				 1e-12);
		synth_out_release(&so);
		graph_free(g);
	}
	{
		/* Grouped-query attention and SwiGLU: the synthesised GEMMs add up
		 * to llm_flops_iter's count (test_cost checks that by hand). */
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		small(&in);
		in.m.kv_heads = 4;
		in.m.gated = 1;
		in.m.ffn = 2816;
		in.lay.tp = 4;
		in.lay.microbatches = 2;
		g = build(&in, &so, &st);
		assert_rel_close(so.flops * 4, llm_flops_iter(&in.m, 2, 0), 1e-12);
		assert_true(llm_flops_iter(&in.m, 2, 0) < llm_flops_iter_formula(&in.m, 2, 0));
		synth_out_release(&so);
		graph_free(g);
	}
	{
		/* Full recomputation: one more forward of every layer. */
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		small(&in);
		in.lay.recompute = LAYOUT_RECOMPUTE_FULL;
		in.lay.microbatches = 2;
		g = build(&in, &so, &st);
		assert_rel_close(so.flops, llm_flops_iter_formula(&in.m, 2, 1), 1e-12);
		synth_out_release(&so);
		graph_free(g);
	}
}

/* Total duration in ns of g's tasks named name, and their count. */
/* The kernels' time in all. */
static int64_t kernels_ns(const struct graph *g)
{
	int64_t t = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->kind[u] == GN_KERNEL)
			t += g->dur_ns[u];
	return t;
}

static int64_t named_ns(const struct graph *g, const char *name, int *count)
{
	int64_t t = 0;
	*count = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (strcmp(strtab_get(&g->st, g->name[u]), name) == 0) {
			t += g->dur_ns[u];
			(*count)++;
		}
	return t;
}

/*
 * Attention without flash attention: the same FLOPs, in four batched GEMMs
 * forward and backward, and passes over the materialised scores.  The
 * small model (a = 16 heads, s = 1024, 8 layers, b = 1) has 16 x 2^20 =
 * 2^24 score values per layer; forward and backward move 13 + 19 = 32
 * bytes per value (llm.h), 2^24 x 8 x 32 = 2^32 bytes per iteration.
 */
static void test_unfused_attention(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	double n = 16.0 * 1024 * 1024, eff = hw.k.mem_eff[HW_MEM_REDUCTION];
	double ovh = hw.k.mem_overhead_s[HW_MEM_REDUCTION];
	int count;
	(void)state;
	small(&in);
	assert_true(llm_score_bytes(&in.m, 1, 0) == 4294967296.0);
	assert_true(llm_score_bytes(&in.m, 1, 1) == 4294967296.0 + n * 8 * 13);
	in.lay.flash = 0;
	in.steps = 1;
	g = build(&in, &so, &st);
	assert_rel_close(so.flops, llm_flops_iter_formula(&in.m, 1, 0), 1e-12);
	/* One softmax forward per layer: the reduction kind's overhead + 4
	 * bytes per value at its fraction of the H100's 3.35 TB/s (each task
	 * rounded to the nanosecond). */
	assert_true(hw.hbm_Bps == 3.35e12);
	assert_rel_close((double)named_ns(g, "scaled_masked_softmax_warp_forward", &count),
			 8 * (ovh + 4 * n / (3.35e12 * eff)) * 1e9, 1e-5);
	assert_int_equal(count, 8);
	assert_rel_close((double)named_ns(g, "scaled_masked_softmax_warp_backward", &count),
			 8 * (ovh + 6 * n / (3.35e12 * eff)) * 1e9, 1e-5);
	assert_int_equal(count, 8);
	named_ns(g, "flash_fwd_kernel", &count);
	assert_int_equal(count, 0);
	synth_out_release(&so);
	graph_free(g);
}

/* Uniform stages, free communication, no host costs: each schedule's
 * bubble is its closed form. */
static double bubble(int schedule, int p, int v, int m)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	small(&in);
	in.m.layers = 16;
	in.bare = 1;
	in.cpu_op_s = in.launch_s = in.event_s = in.gpu_lag_s = 0;
	in.lay.pp = p;
	in.lay.vp = v;
	in.lay.microbatches = m;
	in.lay.schedule = schedule;
	g = build(&in, &so, &st);
	synth_out_release(&so);
	graph_free(g);
	return st.bubble;
}

/* The closed forms' runs (below): the small GPT at 16 identical layers,
 * bare (no embedding or head), no host cost, on p stages of m
 * microbatches in schedule. */
static void closed_form_in(struct synth_in *in, int schedule, int p, int m)
{
	small(in);
	in->m.layers = 16;
	in->bare = 1;
	in->cpu_op_s = in->launch_s = in->event_s = in->gpu_lag_s = 0;
	in->lay.pp = p;
	in->lay.microbatches = m;
	in->lay.schedule = schedule;
}

/* in built and settled: its figures in *st. */
static void closed_form_run(const struct synth_in *in, struct settle_out *st)
{
	struct synth_out so;
	struct graph *g = build(in, &so, st);
	synth_out_release(&so);
	graph_free(g);
}

/* A zero-bubble schedule's run for the closed forms: one step (the
 * units' span of one step is the closed forms'; the step's end,
 * synchronised across the stages, is test_step_end's), with gemm_only the
 * paper's T_F = T_B = T_W: the GEMMs alone timed (every other class at
 * scale 0), a linear's forward, dgrad and wgrad GEMMs having the same
 * FLOPs.  A stage's F, B and W into fbw[0..2]; the settled bubble. */
static double zb_run(int schedule, int p, int m, int gemm_only, double *fbw)
{
	struct synth_in in;
	struct settle_out st;
	double f, b, a, w, n = 16.0 / p;
	closed_form_in(&in, schedule, p, m);
	in.steps = 1;
	for (int c = 0; gemm_only && c < KC_NCLASSES; c++)
		if (c != KC_GEMM)
			in.scale[c] = 0;
	closed_form_run(&in, &st);
	synth_layer_times(&in, &f, &b, &a);
	w = synth_layer_wgrad_s(&in, 0);
	fbw[0] = n * f, fbw[1] = n * (b - w), fbw[2] = n * w;
	return st.bubble;
}

/*
 * The bubble of an uneven partition against its closed form.  Stage s
 * holds n_s of 16 identical layers: forward f_s = n_s f, backward b_s =
 * n_s b, c_s = f_s + b_s for one microbatch (f and b from
 * synth_layer_times).  The step is its longest chain of dependent units:
 *  - GPipe (all forwards, then all backwards) is two flow shops of m
 *    identical jobs: T = sum_s c_s + (m - 1) (max f_s + max b_s).
 *  - 1F1B: stage k, after w_k = min(p - k - 1, m - 1) warm-up forwards,
 *    waits for microbatch 0's gradient, which has crossed every stage
 *    forward and the stages after k backward; then runs its other m - 1 -
 *    w_k forwards and m - 1 backwards, and the last gradient crosses the
 *    stages before it: sum_s c_s + (m - 1) c_k - w_k f_k.  Or it never
 *    waits after its first forward: sum_{s<k} c_s + m c_k.  T is the
 *    largest over k and both (with equal stages, k = p - 1 gives
 *    (m + p - 1) c: Narayanan et al. SC21).
 * The bubble is each stage's idle share of T, the mean over stages:
 * 1 - m sum_s c_s / (p T).
 */
static double bubble_part(int schedule, const uint16_t *part, int p, int m, double *closed)
{
	struct synth_in in;
	struct settle_out st;
	double f, b, a, sum = 0, T = 0, fmax = 0, bmax = 0, before = 0;
	closed_form_in(&in, schedule, p, m);
	memcpy(in.lay.part, part, (size_t)p * sizeof(*part));
	closed_form_run(&in, &st);
	synth_layer_times(&in, &f, &b, &a);
	for (int s = 0; s < p; s++) {
		sum += part[s] * (f + b);
		fmax = part[s] * f > fmax ? part[s] * f : fmax;
		bmax = part[s] * b > bmax ? part[s] * b : bmax;
	}
	if (schedule == LAYOUT_GPIPE) {
		T = sum + (m - 1) * (fmax + bmax);
	} else {
		for (int k = 0; k < p; k++) {
			int w = p - k - 1 < m - 1 ? p - k - 1 : m - 1;
			double ck = part[k] * (f + b);
			double waits = sum + (m - 1) * ck - w * part[k] * f, busy = before + m * ck;
			T = waits > T ? waits : T;
			T = busy > T ? busy : T;
			before += ck;
		}
	}
	*closed = 1 - m * sum / (p * T);
	return st.bubble;
}

/*
 * Zero-bubble schedules against Qi et al.'s closed forms (ICLR 2024,
 * section 2 and Table 1's bubbles), uniform stages of n = 16 / p
 * identical layers, free communication, no host cost.  A stage's passes
 * a microbatch: F = n f, B = n (b - w), W = n w, with f and b a layer's
 * forward and backward (synth_layer_times) and w the weight-gradient
 * part of b (synth_layer_wgrad_s: its wgrad GEMMs).  The step, from the
 * first forward to the last pass:
 *  - 1F1B: (m + p - 1)(F + B + W) (B and W one backward);
 *  - ZB-1p: m (F + B + W) + (p - 1)(F + B - W) where W <= B (the paper's
 *    ZB-H1 bubble; stage 0's last B waits for the gradient to cross the
 *    p - 1 stages after it as B passes, its F passes and the W passes it
 *    deferred filling the rest);
 *  - ZB-2p, m >= 2p - 1: m (F + B + W) + (p - 1) max(F, F + B - 2W): the
 *    paper's ZB-H2 bubble (p - 1)(F + B - 2W) per stage from its own first
 *    forward, and at least the p - 1 forwards before the last stage's
 *    first.
 * The bubble is 1 - m (F + B + W) / T.  The figures (worked independently
 * by an event simulation of the same orders, /tmp notes in the report):
 * p = 4, m = 8, F = B = W: 1F1B 9 passes of idle, ZB-1p 3, ZB-2p 3.
 */
static double zb_bubble(int schedule, int p, int m, int gemm_only, double *closed, double *fbw)
{
	double bubble = zb_run(schedule, p, m, gemm_only, fbw), F = fbw[0], B = fbw[1], W = fbw[2],
	       T;
	if (schedule == LAYOUT_ZB1P)
		T = m * (F + B + W) + (p - 1) * fmax(F, F + B - W);
	else if (schedule == LAYOUT_ZB2P)
		T = m * (F + B + W) + (p - 1) * fmax(F, F + B - 2 * W);
	else
		T = (m + p - 1) * (F + B + W);
	*closed = 1 - m * (F + B + W) / T;
	return bubble;
}

static void test_zb_bubble(void **state)
{
	(void)state;
	for (int p = 2; p <= 8; p *= 2)
		for (int m = 2 * p; m <= 4 * p; m *= 2) {
			double want[3], got[3], fbw[3];
			static const int sch[3] = {LAYOUT_1F1B, LAYOUT_ZB1P, LAYOUT_ZB2P};
			for (int i = 0; i < 3; i++)
				got[i] = zb_bubble(sch[i], p, m, 0, &want[i], fbw);
			print_message(
			    "p %d m %2d (F %.1f B %.1f W %.1f us a stage): 1f1b %.4f (closed "
			    "%.4f) zb-1p %.4f (%.4f) zb-2p %.4f (%.4f)\n",
			    p, m, fbw[0] * 1e6, fbw[1] * 1e6, fbw[2] * 1e6, got[0], want[0], got[1],
			    want[1], got[2], want[2]);
			/* The small layer's W (its four wgrad GEMMs) is 18 % of its
			 * work, less than B (dgrad GEMMs, attention backward, the
			 * memory-bound passes): the closed forms' W <= B case. */
			assert_true(fbw[2] > 0.1 * (fbw[0] + fbw[1] + fbw[2]) && fbw[2] < fbw[1]);
			for (int i = 0; i < 3; i++)
				assert_rel_close(got[i], want[i], 0.01);
			/* ZB-1p cuts 1F1B's bubble, ZB-2p cuts it further. */
			assert_true(got[1] < got[0] && got[2] < got[1]);
		}
	/* T_F = T_B = T_W (GEMMs alone, within their shapes' 1 %): ZB-2p's
	 * bubble is the (p - 1) forwards before the last stage starts, each
	 * stage busy from its first pass to its last (the paper's zero
	 * bubble), a third of 1F1B's fill and drain and ZB-1p's equal (their
	 * (p - 1)(F + B - W) = (p - 1) F).  Equal within 5 %: a GEMM of fewer
	 * tiles than SMs pays stream-K's partial sums (kperf.c), which the
	 * three passes' shapes do not share alike. */
	for (int p = 4; p <= 8; p *= 2) {
		double want[3], got[3], fbw[3];
		static const int sch[3] = {LAYOUT_1F1B, LAYOUT_ZB1P, LAYOUT_ZB2P};
		for (int i = 0; i < 3; i++)
			got[i] = zb_bubble(sch[i], p, 4 * p, 1, &want[i], fbw);
		print_message("GEMMs alone, p %d m %2d (F %.1f B %.1f W %.1f us): 1f1b %.4f (%.4f) "
			      "zb-1p %.4f (%.4f) zb-2p %.4f (%.4f)\n",
			      p, 4 * p, fbw[0] * 1e6, fbw[1] * 1e6, fbw[2] * 1e6, got[0], want[0],
			      got[1], want[1], got[2], want[2]);
		assert_rel_close(fbw[1], fbw[0], 0.05);
		assert_rel_close(fbw[2], fbw[0], 0.05);
		for (int i = 0; i < 3; i++)
			assert_rel_close(got[i], want[i], 0.01);
		assert_rel_close(got[2], (p - 1.0) / (3.0 * 4 * p + p - 1), 0.02);
	}
}

/*
 * ZB-V (Qi et al., arXiv 2401.10241 section 6; PyTorch's
 * ScheduleZBVZeroBubble, layout_zb_next) against an independent method:
 * each stage's passes in that order, timed by a list simulation here --
 * a pass starts when its stage is free and what it needs is done: F of
 * model chunk k the F of chunk k - 1 (the V: stage s holds chunks s and
 * 2p - 1 - s), B of chunk k the B of chunk k + 1 (the last chunk's its
 * own F), W its B -- with a chunk's passes f, b, w (a stage's F, B, W
 * halved: 8 / p identical layers a chunk), free communication, no host
 * cost.  T is the span from the first pass to the last, the bubble 1 -
 * m (F + B + W) / T.  With T_F = T_B = T_W (GEMMs alone) the paper's
 * closed form: every stage busy from its first pass to its last (zero
 * bubble, the authors' table: ZB-V 0 against 1F1B's (p - 1)/(m + p - 1)),
 * stage s starting s f after stage 0, so T = m (F + B + W) + (p - 1) F / 2.
 */
static double zbv_reference(int sched, int p, int m, double f, double b, double w)
{
	double *done = calloc((size_t)3 * 2 * p * m, sizeof(double)), t[8] = {0}, first = -1,
	       last = 0;
	struct layout l;
	struct layout_zb it[8];
	int pend[8], pmb[8], pch[8], left = p, moved = 1;
	layout_default(&l);
	l.pp = p;
	l.microbatches = m;
	l.schedule = sched;
	assert_non_null(done);
	assert_true(p <= 8);
	for (int r = 0; r < p; r++) {
		memset(&it[r], 0, sizeof(it[r]));
		pend[r] = layout_zb_next(&l, r, &it[r], &pmb[r], &pch[r]);
	}
#define DONE(kind, k, mb) done[((size_t)(kind)*2 * p + (size_t)(k)) * m + (size_t)(mb)]
	while (left > 0 && moved) {
		moved = 0;
		for (int r = 0; r < p; r++)
			while (pend[r] >= 0) {
				int k = pch[r] ? 2 * p - 1 - r : r, mb = pmb[r], kind = pend[r];
				double need = -1, st;
				if (kind == LAYOUT_PASS_F)
					need = k == 0 ? 0 : DONE(0, k - 1, mb);
				else if (kind != LAYOUT_PASS_W) /* B, or B and W as one */
					need = k == 2 * p - 1 ? DONE(0, k, mb) : DONE(1, k + 1, mb);
				else
					need = DONE(1, k, mb);
				if (need <= 0 && !(kind == LAYOUT_PASS_F && k == 0))
					break; /* not done yet */
				st = t[r] > need ? t[r] : need;
				if (first < 0 || st < first)
					first = st;
				t[r] = st + (kind == 0 ? f : kind == 1 ? b : kind == 2 ? w : b + w);
				if (kind == LAYOUT_PASS_BW)
					DONE(1, k, mb) = DONE(2, k, mb) = t[r];
				else
					DONE(kind, k, mb) = t[r];
				last = t[r] > last ? t[r] : last;
				moved = 1;
				pend[r] = layout_zb_next(&l, r, &it[r], &pmb[r], &pch[r]);
				left -= pend[r] < 0;
			}
	}
#undef DONE
	free(done);
	assert_int_equal(left, 0); /* no deadlock */
	return last - first;
}

static double zbv_bubble(int sched, int p, int m, int gemm_only, double *closed, double *ref,
			 double *fbw)
{
	double bubble = zb_run(sched, p, m, gemm_only, fbw), F = fbw[0], B = fbw[1], W = fbw[2];
	*ref = 1 - m * (F + B + W) / zbv_reference(sched, p, m, F / 2, B / 2, W / 2);
	*closed = 1 - m * (F + B + W) / (m * (F + B + W) + (p - 1) * F / 2);
	/* DualPipe's README for DualPipeV on PP = 2p stages: (PP/2 - 1)
	 * (F&B + B - 3W) with a chunk's F, whole backward B and W, F&B here
	 * F + B (no overlap). */
	if (sched == LAYOUT_DUALPIPEV)
		*closed =
		    1 - m * (F + B + W) /
			    (m * (F + B + W) + (p - 1) * (F / 2 + 2 * (B + W) / 2 - 3 * W / 2));
	return bubble;
}

static void test_zbv_bubble(void **state)
{
	(void)state;
	for (int p = 2; p <= 8; p *= 2)
		for (int m = 2 * p; m <= 4 * p; m *= 2) {
			double closed, ref, fbw[3], zb2, want2;
			double got = zbv_bubble(LAYOUT_ZBV, p, m, 0, &closed, &ref, fbw);
			zb2 = zb_bubble(LAYOUT_ZB2P, p, m, 0, &want2, fbw);
			print_message("p %d m %2d (F %.1f B %.1f W %.1f us a stage): zb-v %.4f "
				      "(reference %.4f), zb-2p %.4f\n",
				      p, m, fbw[0] * 1e6, fbw[1] * 1e6, fbw[2] * 1e6, got, ref,
				      zb2);
			assert_rel_close(got, ref, 0.01);
			/* Two chunks a stage halve the fill: below ZB-2p's. */
			assert_true(got < zb2);
		}
	/* T_F = T_B = T_W (within 5 %, as above): the paper's zero bubble a
	 * stage. */
	for (int p = 2; p <= 8; p *= 2) {
		double closed, ref, fbw[3];
		double got = zbv_bubble(LAYOUT_ZBV, p, 4 * p, 1, &closed, &ref, fbw);
		print_message("GEMMs alone, p %d m %2d (F %.1f B %.1f W %.1f us): zb-v %.4f "
			      "(closed %.4f, reference %.4f)\n",
			      p, 4 * p, fbw[0] * 1e6, fbw[1] * 1e6, fbw[2] * 1e6, got, closed, ref);
		assert_rel_close(fbw[1], fbw[0], 0.05);
		assert_rel_close(fbw[2], fbw[0], 0.05);
		assert_rel_close(got, closed, 0.02);
		assert_rel_close(ref, closed, 0.02);
	}
}

/*
 * Every schedule's step ends together: before any stage's optimizer
 * updates, the gradient norm (Megatron-LM's clip_grad_norm, clip_grad 1.0)
 * is all-reduced over the model-parallel group (tp x pp, synth_grad_stats_
 * groups), so the all-reduce of step 0 ends at one instant E on every
 * stage, no forward or backward of step 0 ends after E, and no GPU task of
 * step 1 starts before it (in zb-2p's parallelogram stage 0 would
 * otherwise start its next forwards (p - 1) F before the last stage ends).
 * The all-reduce takes synth_grad_stats_s: 4 bytes over 8 GPUs of a node.
 */
static void test_step_end(void **state)
{
	static const int sch[] = {LAYOUT_1F1B, LAYOUT_INTERLEAVED, LAYOUT_ZB1P,
				  LAYOUT_ZB2P, LAYOUT_ZBV,	   LAYOUT_DUALPIPEV};
	(void)state;
	for (size_t i = 0; i < sizeof(sch) / sizeof(sch[0]); i++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		int64_t end[4], dur = -1, E = -1;
		int n = 0;
		small(&in);
		in.m.layers = 16;
		in.lay.tp = 2;
		in.lay.pp = 4;
		in.lay.microbatches = 8;
		in.lay.schedule = sch[i];
		in.lay.vp = sch[i] == LAYOUT_INTERLEAVED ? 2 : 1;
		in.steps = 2;
		g = build(&in, &so, &st);
		for (uint32_t c = 0; c < g->n_colls; c++) {
			uint32_t u = g->colls[c].node, r = g->procs[g->proc[u]].rank;
			if (strcmp(strtab_get(&g->st, g->colls[c].pg), "gstats") != 0 ||
			    g->iter[u] < 0 || g->iters[g->iter[u]].step != 0)
				continue;
			assert_true(r < 4);
			end[r] = g->start_ns[u] + g->dur_ns[u];
			dur = g->dur_ns[u];
			n++;
		}
		assert_int_equal(n, 4);
		E = end[0];
		for (int r = 1; r < 4; r++)
			assert_true(end[r] == E);
		assert_true(llabs(dur - llround(synth_grad_stats_s(&in) * 1e9)) <= 1);
		for (uint32_t u = 0; u < g->n_nodes; u++) {
			int64_t stp;
			if (!g->procs[g->proc[u]].gpu || g->iter[u] < 0)
				continue;
			stp = g->iters[g->iter[u]].step;
			if (stp == 0 && (g->phase[u] == PH_FORWARD || g->phase[u] == PH_BACKWARD))
				assert_true(g->start_ns[u] + g->dur_ns[u] <= E - dur);
			if (stp == 1)
				assert_true(g->start_ns[u] >= E);
		}
		print_message("%s: step 0 ends together at %.6f ms (all-reduce %.1f us)\n",
			      layout_schedule_name(sch[i]), E * 1e-6, dur * 1e-3);
		synth_out_release(&so);
		graph_free(g);
	}
}
/*
 * The output side's weights on the last of 4 stages under FSDP2 (tied
 * head: the final norm's 2h and a copy of the word embedding, V h), by
 * hand: gathered in bf16 (2 bytes), reduce-scattered in fp32 (torchtitan's
 * reduce dtype: 4), FSDP2's copies (copy-in: the shard cast fp32 -> bf16,
 * 4 + 2 bytes; copy-out 2 x 2; reduce-scatter copy-in 2 + 4); with hybrid
 * sharding the shard all-reduced over the replicas.  And as
 * synth emits them: the last stage's all-gathers and reduce-scatters of
 * those bytes, one each per microbatch and step; the first stage has no
 * output side.
 */
static void test_head_colls(void **state)
{
	struct synth_in in;
	struct synth_head h;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	double p;
	int n_ag = 0, n_rs = 0;
	(void)state;
	small(&in);
	in.m.untied = 0;
	in.m.mtp_layers = 0;
	in.lay.pp = 4;
	in.lay.dp = 4;
	in.lay.zero = 3;
	in.lay.dp_impl = LAYOUT_DP_FSDP2;
	in.lay.microbatches = 4;
	in.steps = 2;
	p = 2.0 * in.m.hidden + (double)in.m.vocab * in.m.hidden;
	assert_int_equal(synth_head_colls(&in, 0, &h), 0);
	assert_int_equal(synth_head_colls(&in, 3, &h), 1);
	assert_true(h.params == p);
	assert_true(h.ag_bytes == 2 * p && h.rs_bytes == 4 * p);
	assert_true(h.ag_in == p / 4 * 6 && h.ag_out == 4 * p && h.rs_in == 6 * p && h.rs_out == 0);
	assert_int_equal(h.group, 4);
	assert_true(h.ar_bytes == 0);
	/* Hybrid sharding over 2 of the 4: the shard's gradient (half the
	 * reduce-scatter's input) all-reduced over the 2 replicas. */
	in.lay.shard = 2;
	assert_int_equal(synth_head_colls(&in, 3, &h), 1);
	assert_int_equal(h.group, 2);
	assert_int_equal(h.replicas, 2);
	assert_true(h.ar_bytes == 4 * p / 2 && h.ag_in == p / 2 * 6);
	in.lay.shard = 0;
	assert_int_equal(synth_head_colls(&in, 3, &h), 1);
	g = build(&in, &so, &st);
	for (uint32_t c = 0; c < g->n_colls; c++) {
		uint32_t u = g->colls[c].node;
		if (g->procs[g->proc[u]].rank != 3)
			continue;
		n_ag +=
		    g->colls[c].kind == GC_ALL_GATHER && g->colls[c].bytes == (int64_t)h.ag_bytes;
		n_rs += g->colls[c].kind == GC_REDUCE_SCATTER &&
			g->colls[c].bytes == (int64_t)h.rs_bytes;
	}
	assert_int_equal(n_ag, 4 * 2);
	assert_int_equal(n_rs, 4 * 2);
	synth_out_release(&so);
	graph_free(g);
	/* FSDP's SHARD_GRAD_OP (ZeRO-2): each unit's flat parameter
	 * reduce-scattered on its own in its post-backward
	 * (_runtime_utils.py's _post_backward_hook, no bucket across units):
	 * the output side's too, the norm with the head's copy, in the
	 * parameters' dtype (2 bytes), its fp32 shard cast after (2 + 4 a
	 * shard's parameter), the gather's shard cast before it (4 + 2).  On
	 * rank 3 (the last of 4 stages, l / 4 layers) one reduce-scatter of
	 * the output side's and one a layer each microbatch, 4 microbatches
	 * and 2 steps. */
	in.lay.zero = 2;
	in.lay.dp_impl = LAYOUT_DP_FSDP;
	assert_int_equal(synth_head_colls(&in, 3, &h), 1);
	assert_true(h.params == p);
	assert_true(h.ag_bytes == 2 * p && h.rs_bytes == 2 * p);
	assert_true(h.ag_in == p / 4 * 6 && h.ag_out == 0 && h.rs_in == 0 && h.rs_out == p / 4 * 6);
	g = build(&in, &so, &st);
	n_ag = n_rs = 0;
	{
		int n_all = 0;
		for (uint32_t c = 0; c < g->n_colls; c++) {
			uint32_t u = g->colls[c].node;
			if (g->procs[g->proc[u]].rank != 3 || g->colls[c].kind != GC_REDUCE_SCATTER)
				continue;
			n_all++;
			n_rs += g->colls[c].bytes == (int64_t)h.rs_bytes;
		}
		assert_int_equal(n_rs, 4 * 2);
		assert_int_equal(n_all, 4 * 2 * (1 + in.m.layers / 4));
	}
	synth_out_release(&so);
	graph_free(g);
	in.lay.zero = 3;
	in.lay.dp_impl = LAYOUT_DP_FSDP2;
	/* Untied at pp 1, the same stage holds the head: the norm and the
	 * head's own matrix. */
	in.m.untied = 1;
	in.lay.pp = 1;
	assert_int_equal(synth_head_colls(&in, 0, &h), 1);
	assert_true(h.params == p);
	/* ZeRO-1 gathers nothing before the head. */
	in.lay.zero = 1;
	assert_int_equal(synth_head_colls(&in, 0, &h), 0);
}

/*
 * DualPipeV (PyTorch's ScheduleDualPipeV, layout_zb_next) against the
 * same list simulation as test_zbv_bubble, its whole backwards one pass
 * of b + w whose gradient leaves after its W; and against DualPipe's
 * README closed form.
 */
static void test_dpv_bubble(void **state)
{
	(void)state;
	for (int p = 2; p <= 8; p *= 2)
		for (int m = 2 * p; m <= 4 * p; m *= 2) {
			double closed, ref, fbw[3], zc, zr;
			double got = zbv_bubble(LAYOUT_DUALPIPEV, p, m, 0, &closed, &ref, fbw);
			double zbv = zbv_bubble(LAYOUT_ZBV, p, m, 0, &zc, &zr, fbw);
			print_message(
			    "p %d m %2d (F %.1f B %.1f W %.1f us a stage): dualpipev %.4f "
			    "(reference %.4f, README %.4f), zb-v %.4f\n",
			    p, m, fbw[0] * 1e6, fbw[1] * 1e6, fbw[2] * 1e6, got, ref, closed, zbv);
			assert_rel_close(got, ref, 0.01);
			/* The README's form counts more idle time than the
			 * order leaves (about 1.5-2x here): an upper figure. */
			assert_true(got < closed);
		}
	/* T_F = T_B = T_W: every stage busy but for (p - 1) F / 2, ZB-V's
	 * paper closed form, half the README's (p - 1)(F&B + B - 3W). */
	for (int p = 2; p <= 8; p *= 2) {
		double closed, ref, fbw[3], zc, zr;
		double got = zbv_bubble(LAYOUT_DUALPIPEV, p, 4 * p, 1, &closed, &ref, fbw);
		(void)zbv_bubble(LAYOUT_ZBV, p, 4 * p, 1, &zc, &zr, fbw);
		assert_rel_close(got, zc, 0.05);
		assert_rel_close(closed, 1 - 1 / (1 + 2 * (1 / (1 - zc) - 1)), 0.03);
		print_message("GEMMs alone, p %d m %2d (F %.1f B %.1f W %.1f us): dualpipev %.4f "
			      "(README %.4f, reference %.4f)\n",
			      p, 4 * p, fbw[0] * 1e6, fbw[1] * 1e6, fbw[2] * 1e6, got, closed, ref);
		assert_rel_close(got, ref, 0.02);
	}
}

static void test_pipeline_bubble(void **state)
{
	static const uint16_t parts[][4] = {{2, 6, 4, 4}, {3, 5, 5, 3}, {6, 2, 2, 6},
					    {1, 5, 5, 5}, {5, 5, 5, 1}, {4, 4, 4, 4}};
	(void)state;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		for (int m = 2; m <= 16; m *= 2) {
			double want, got = bubble_part(LAYOUT_1F1B, parts[i], 4, m, &want);
			print_message("partition %d,%d,%d,%d m %2d: 1f1b bubble %.4f (closed form "
				      "%.4f)",
				      parts[i][0], parts[i][1], parts[i][2], parts[i][3], m, got,
				      want);
			assert_rel_close(got, want, 0.01);
			got = bubble_part(LAYOUT_GPIPE, parts[i], 4, m, &want);
			print_message(", gpipe %.4f (%.4f)\n", got, want);
			assert_rel_close(got, want, 0.01);
		}
	for (int p = 2; p <= 8; p *= 2)
		for (int m = p; m <= 4 * p; m *= 2) {
			double want = (double)(p - 1) / (m + p - 1);
			assert_rel_close(bubble(LAYOUT_1F1B, p, 1, m), want, 0.01);
			assert_rel_close(bubble(LAYOUT_GPIPE, p, 1, m), want, 0.01);
			if (16 % (2 * p) == 0)
				assert_rel_close(bubble(LAYOUT_INTERLEAVED, p, 2, m),
						 (double)(p - 1) / (2.0 * m + p - 1), 0.01);
		}
	/* No pipeline, no bubble. */
	assert_true(bubble(LAYOUT_1F1B, 1, 1, 4) < 1e-9);
}

/*
 * A layer's FP8 speed-up from its parts, worked by hand.  h 1024, 16 heads
 * (d 64), FFN 4096, s 1024, b 1, one GPU of one SM (each tile its own
 * wave), no per-tile or per-kernel cost: GEMMs at 500 TFLOP/s in bf16 and
 * 1000 in fp8, attention at 500 both ways, memory-bound kernels at 2 TB/s.
 *  - GEMMs forward: 2 x 1024 x (3072 + 1024 + 4096 + 4096) x 1024 =
 *    25,769,803,776 FLOPs: 51.5396 us in bf16, 25.7698 us in fp8; backward
 *    twice that;
 *  - attention stays bf16 (Transformer Engine): 16 heads x 8 blocks x 4 x
 *    128 x 576 keys x 64 = 2,415,919,104 FLOPs, 4.8318 us forward, 2.5 x
 *    backward;
 *  - memory-bound kernels as in bf16: forward 38 MiB (19.9229 us),
 *    backward 74 MiB (38.7973 us: 50 MiB, and the two residual-gradient
 *    adds, 3 x 2 MiB each, and the QKV gradient's copy, 2 x 6 MiB, that
 *    autograd runs);
 *  - fp8 adds cast-transposes: forward the projection's and FC2's
 *    inputs, 4 bytes a value, 4 x (2^20 + 2^22) = 20 MiB; QKV's and FC1's
 *    inputs are their norms' outputs (Transformer Engine's LayerNormLinear
 *    under delayed scaling): each norm writes the fp8 copy, 1 byte a value
 *    rather than 2 (-2 MiB for the two), and the column-wise copy is a
 *    transpose of it, 1 + 1 bytes, 2 x 2 x 2^20 = 4 MiB: forward + 22
 *    MiB (11.5343 us); backward each output gradient, 4 x (3 x 2^20 +
 *    2^20 + 2^22 + 2^20) = 36 MiB (18.8744 us).
 * bf16: 76.2944 + 153.9561 us; fp8: 62.0589 + 121.2909 us: the layer runs
 * 1.2558 times faster, well under the GEMMs' 2x (1.2346 with a bf16 norm
 * and a cast-transpose of its output, as before the fused norm).
 */
/* test_fp8_layer's GPU: one SM, GEMMs at 500 TFLOP/s in bf16, 1000 in
 * fp8 and 2000 in fp4, attention at 500, memory-bound kernels at 2 TB/s,
 * no per-tile or per-kernel cost; fp8's blockwise GEMMs at fp8's rate. */
static void fp8_gpu(struct hw_profile *g)
{
	*g = hw;
	g->clock = 1; /* the rates above as they are (hw.h) */
	/* no power balance: a cap in proportion to the power; no fp8 stream
	 * clock, so fp8's step clock is bf16's (hw.h) and the rates hold as
	 * they are at any dtype (with the H100's stated fp8 stream, 0.851
	 * since issue 33 item 2's refit, the relation would slow an fp8 step
	 * to 0.89123 / 0.91 of them; before, 0.879's 0.91167 sat above bf16's
	 * and the clock, held at 1, did not move) */
	memset(&g->power, 0, sizeof(g->power));
	g->stream[HW_FP8] = 0;
	g->k.sms = 1;
	g->hbm_Bps = 2e12;
	g->k.gemm[HW_BF16] = (struct hw_gemm){500e12, 0, 0, {1, 1, 1}, 1, 0};
	g->k.gemm[HW_FP8] = (struct hw_gemm){1000e12, 0, 0, {1, 1, 1}, 1, 0};
	g->k.gemm[HW_GEMM_FP8_BLOCK] = g->k.gemm[HW_FP8]; /* one rate for every recipe */
	g->k.gemm[HW_FP4] = (struct hw_gemm){2000e12, 0, 0, {1, 1, 1}, 1, 0};
	g->peak_flops[HW_FP4] = 2000e12;
	g->k.attn[HW_BF16] = (struct hw_attn){{500e12, 500e12}, {0, 0}, 0, 1, 1, 0};
	for (int k = 0; k < HW_MEM_NKINDS; k++) {
		g->k.mem_eff[k] = 1;
		g->k.mem_overhead_s[k] = 0;
	}
}

static void test_fp8_layer(void **state)
{
	struct hw_profile g;
	struct synth_in in;
	double f16, b16, a16, f8, b8, a8;
	(void)state;
	fp8_gpu(&g);
	small(&in);
	in.hw = &g;
	synth_layer_times(&in, &f16, &b16, &a16);
	in.lay.dtype = HW_FP8;
	synth_layer_times(&in, &f8, &b8, &a8);
	assert_rel_close(f16, 76.29438976e-6, 1e-9);
	assert_rel_close(b16, 153.956122624e-6, 1e-9);
	assert_rel_close(f8, 62.058921984e-6, 1e-9);
	assert_rel_close(b8, 121.290883072e-6, 1e-9);
	assert_rel_close((f16 + b16) / (f8 + b8), 1.2557991, 1e-6);
	assert_rel_close(a8, a16, 1e-12); /* the attention core stays bf16 */
	assert_rel_close(a16, 2415919104.0 / 500e12, 1e-9);
	/* Every kernel of the step at the run's clock: capped at 350 of the
	 * profile's 700 W the bf16 layer's GEMMs and attention take twice as
	 * long and its memory-bound kernels as long as before, forward 2 x
	 * (51.5396 + 4.8318) + 19.9229 = 132.6657 us. */
	in.lay.dtype = HW_BF16;
	in.lay.power_w = 350;
	synth_layer_times(&in, &f16, &b16, &a16);
	assert_rel_close(f16, 2 * (76.29438976e-6 - 19.9229e-6) + 19.9229e-6, 1e-5);
	assert_rel_close(a16, 2 * 2415919104.0 / 500e12, 1e-9);
	/* A step's clock by its GEMMs' dtype (hw_at_run): the GPU at a bf16
	 * step clock of 0.91 with streams of 0.872 (bf16) and 0.950 (fp8)
	 * runs an fp8 step at 1 - 0.05 x 0.73 = 0.9635, every compute kernel
	 * of it -- the fp8 GEMMs, 25.7698 us forward, and the bf16 attention
	 * core, 4.8318 us, 30.6016 us at the burst clock -- and its
	 * memory-bound kernels, 60 MiB (31.4573 us), as they are: forward
	 * 30.6016 / 0.9635 + 31.4573 = 63.2182 us.  The bf16 layer stays at
	 * 0.91: (51.5396 + 4.8318) / 0.91 + 19.9229 = 81.8696 us.  At 350 of
	 * 700 W the fp8 step's clock halves, 0.48175: 94.9791 us. */
	g.clock = g.sustained = 0.91;
	g.rated_w = 700;
	memset(g.sustained_dt, 0, sizeof(g.sustained_dt));
	memset(g.stream, 0, sizeof(g.stream));
	g.stream[HW_BF16] = 0.872;
	g.stream[HW_FP8] = 0.950;
	in.lay.power_w = 0;
	synth_layer_times(&in, &f16, &b16, &a16);
	assert_rel_close(f16, 56.371445760e-6 / 0.91 + 19.922944e-6, 1e-9);
	assert_rel_close(f16, 81.8696e-6, 1e-5);
	in.lay.dtype = HW_FP8;
	synth_layer_times(&in, &f8, &b8, &a8);
	assert_rel_close(f8, 30.601641984e-6 / 0.9635 + 31.45728e-6, 1e-9);
	assert_rel_close(f8, 63.2182e-6, 1e-5);
	assert_rel_close(a8, 2415919104.0 / 500e12 / 0.9635, 1e-9);
	in.lay.power_w = 350;
	synth_layer_times(&in, &f8, &b8, &a8);
	assert_rel_close(f8, 30.601641984e-6 / 0.48175 + 31.45728e-6, 1e-9);
	assert_rel_close(f8, 94.9791e-6, 1e-5);
}

/*
 * The recipes (--fp8-recipe; kperf_lowp_casts) on test_fp8_layer's GPU and
 * layer, from their parts.  A steady microbatch casts no weight; the
 * forward quantises the four linears' inputs, 7 x 2^20 values, the
 * backward their output gradients, 9 x 2^20; GEMMs, attention and the
 * rest as in test_fp8_layer (delayed: 62.0589 + 121.2909 us, its norms
 * writing fp8 for QKV and FC1; the other recipes' norms write bf16 and
 * their casts start from a cast-transpose at 4 bytes a value, delayed's
 * 65.2046 us forward).
 *  - current adds a 12-byte scale kernel per tensor and an amax pass (2
 *    bytes a value) for every tensor but the two norms' outputs, whose
 *    norm kernels compute it (FUSED_NORM_AMAX_FP8): forward 4 x (2^20 +
 *    2^22) + 48 = 10,485,808 bytes (5.242904 us), backward 18,874,368 +
 *    48 (9.437208 us): 70.4476 + 130.7281 us, a gain of 1.1445 over
 *    bf16's 230.2505 us (1.1327 with the two amax passes);
 *  - mxfp8 adds an E8M0 byte per 32 values to each of the two copies,
 *    0.0625 bytes a value: 458,752 bytes forward (0.229376 us), 589,824
 *    backward (0.294912 us): 65.4340 + 121.5858 us, 1.2312; blockwise's
 *    1 x 128 fp32 scales of the activations and gradients cost the same;
 *  - nvfp4 (fp4) at 2000 TFLOP/s: each GEMM the longer of its FLOPs and
 *    its bytes (half-byte inputs, the bf16 output) at 2 TB/s, which binds
 *    for QKV, FC1 (4.1943, 5.5050 us: the output) and one or both
 *    gradients of each: forward 25.7698 -> 15.5672 us, backward 51.5396
 *    -> 31.3713; and 5.125 bytes a value for 4 (an amax pass, then 2
 *    read, 2 x 0.5 written and an E4M3 byte per 16 to each copy):
 *    + 4.128768 and + 5.308416 us: 59.1308 + 106.4310 us, 1.3907.
 *  - current under torch.compile (--exec compiled: torchao's Float8Linear,
 *    Inductor's casts) quantises each tensor in a split amax (2 bytes a
 *    value), its final stage (no bytes: a floor, 0 here) and the casts (4
 *    bytes a value; a weight 3 + 3), and keeps no weight copy: a steady
 *    microbatch's forward casts the inputs, 7 x 2^20 x 6 bytes, and the
 *    12 x 2^20 weight values (QKV 3, projection 1, FC1 and FC2 4 each) x
 *    8 bytes: 144,703,488 bytes, 72.351744 us for delayed's 14.680064:
 *    122.876330 us; the backward 9 x 2^20 x 6 bytes, 28.311552 us for
 *    18.874368: 130.728067 us; 0.9079 of bf16's speed.
 * Only delayed scaling runs the amax-history update (one per layer and
 * step, not in these times); and the weights' quantised copies are 2
 * bytes a parameter, 2 + 1/16 under mxfp8, 1.125 under nvfp4.
 */
static void test_fp8_recipes(void **state)
{
	static const struct {
		int dtype, recipe, exec;
		double f, b, gain;
	} want[] = {
	    {HW_FP8, LAYOUT_FP8_DELAYED, LAYOUT_EXEC_EAGER, 62.058921984e-6, 121.290883072e-6,
	     1.2557991},
	    {HW_FP8, LAYOUT_FP8_CURRENT, LAYOUT_EXEC_EAGER, 70.447553984e-6, 130.728091072e-6,
	     1.1445248},
	    {HW_FP8, LAYOUT_FP8_BLOCKWISE, LAYOUT_EXEC_EAGER, 65.434025984e-6, 121.585795072e-6,
	     1.2311557},
	    {HW_FP8, LAYOUT_FP8_MXFP8, LAYOUT_EXEC_EAGER, 65.434025984e-6, 121.585795072e-6,
	     1.2311557},
	    {HW_FP4, LAYOUT_FP8_DELAYED, LAYOUT_EXEC_EAGER, 59.130773504e-6, 106.430988288e-6,
	     1.3907228},
	    {HW_FP8, LAYOUT_FP8_CURRENT, LAYOUT_EXEC_COMPILED, 122.876329984e-6, 130.728067072e-6,
	     230.250512384 / (122.876329984 + 130.728067072)},
	};
	struct hw_profile g;
	struct synth_in in;
	struct layout l;
	double f16, b16, a16, f, b, a;
	(void)state;
	fp8_gpu(&g);
	small(&in);
	in.hw = &g;
	synth_layer_times(&in, &f16, &b16, &a16);
	assert_rel_close(f16 + b16, 230.250512384e-6, 1e-9);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		in.lay.dtype = want[i].dtype;
		in.lay.fp8_recipe = want[i].recipe;
		in.lay.exec = want[i].exec;
		synth_layer_times(&in, &f, &b, &a);
		print_message("%s %s: %.4f + %.4f us, %.4fx\n", hw_dtype_name(want[i].dtype),
			      layout_fp8_recipe_name(want[i].recipe), f * 1e6, b * 1e6,
			      (f16 + b16) / (f + b));
		assert_rel_close(f, want[i].f, 1e-9);
		assert_rel_close(b, want[i].b, 1e-9);
		assert_rel_close((f16 + b16) / (f + b), want[i].gain, 1e-6);
		assert_rel_close(a, a16, 1e-12); /* the attention core stays bf16 */
	}
	/* On a GPU whose fp8 GEMMs take either layout (Blackwell,
	 * gpu.fp8_layouts "any") no transposed copy is written: delayed's
	 * forward loses the two norms' transposes (2 x 2^20 values x 2
	 * bytes) and 1 byte a value of the other three inputs' casts (5 x
	 * 2^20), 9,437,184 bytes at 2 TB/s, 4.718592 us; its backward 1 byte
	 * a value of 9 x 2^20, the same; current's casts 1 byte a value
	 * each, 7 x 2^20 forward (3.670016 us) and 9 x 2^20 backward. */
	g.fp8_any_layout = 1;
	in.lay.dtype = HW_FP8;
	in.lay.exec = LAYOUT_EXEC_EAGER;
	in.lay.fp8_recipe = LAYOUT_FP8_DELAYED;
	synth_layer_times(&in, &f, &b, &a);
	assert_rel_close(f, (62.058921984 - 4.718592) * 1e-6, 1e-9);
	assert_rel_close(b, (121.290883072 - 4.718592) * 1e-6, 1e-9);
	in.lay.fp8_recipe = LAYOUT_FP8_CURRENT;
	synth_layer_times(&in, &f, &b, &a);
	assert_rel_close(f, (70.447553984 - 3.670016) * 1e-6, 1e-9);
	assert_rel_close(b, (130.728091072 - 4.718592) * 1e-6, 1e-9);
	g.fp8_any_layout = 0;
	/* In a step of 3 microbatches (synth builds so.steps of them):
	 * Transformer Engine casts each of the 8 layers' 4 weights once,
	 * torchao under torch.compile in every microbatch. */
	for (int e = LAYOUT_EXEC_EAGER; e <= LAYOUT_EXEC_COMPILED; e += 2) {
		struct synth_out so;
		struct settle_out st;
		struct graph *gr;
		int n;
		small(&in);
		in.lay.dtype = HW_FP8;
		in.lay.fp8_recipe = LAYOUT_FP8_CURRENT;
		in.lay.microbatches = 3;
		in.lay.exec = e;
		gr = build(&in, &so, &st);
		assert_true(so.steps >= 1);
		named_ns(gr,
			 e == LAYOUT_EXEC_EAGER ? "te_cast_transpose_fp8_weight"
						: "inductor_fp8_cast_fwd_weight",
			 &n);
		assert_int_equal(n, (e == LAYOUT_EXEC_EAGER ? 32 : 96) * so.steps);
		named_ns(gr, "inductor_fp8_cast_both_input", &n);
		assert_int_equal(n, (e == LAYOUT_EXEC_EAGER ? 0 : 96) * so.steps);
		synth_out_release(&so);
		graph_free(gr);
	}
	/* The weights' kept copies: per tensor, the transpose only where the
	 * GEMMs are TN-only (g: Blackwell's any layout). */
	layout_default(&l);
	g.fp8_any_layout = 1;
	assert_true(mem_lowp_weight_bytes(&l, NULL) == 0);
	l.dtype = HW_FP8;
	assert_true(mem_lowp_weight_bytes(&l, NULL) == 2);
	assert_true(mem_lowp_weight_bytes(&l, &g) == 1);
	l.fp8_recipe = LAYOUT_FP8_CURRENT;
	assert_true(mem_lowp_weight_bytes(&l, NULL) == 2);
	assert_true(mem_lowp_weight_bytes(&l, &g) == 1);
	l.fp8_recipe = LAYOUT_FP8_BLOCKWISE;
	assert_true(mem_lowp_weight_bytes(&l, NULL) == 2 + 8.0 / 16384);
	l.fp8_recipe = LAYOUT_FP8_MXFP8;
	assert_true(mem_lowp_weight_bytes(&l, NULL) == 2.0625);
	assert_true(mem_lowp_weight_bytes(&l, &g) == 2.0625);
	l.dtype = HW_FP4;
	assert_true(mem_lowp_weight_bytes(&l, &g) == 1.125);
	g.fp8_any_layout = 0;
}

/*
 * The norm fused into Transformer Engine's LayerNormLinear (QKV and FC1 of
 * Megatron's TE spec; kperf_lowp_casts KPERF_CAST_NORMED), kernel by
 * kernel in one microbatch of test_fp8_layer's 8-layer model (h 1024, s
 * 1024, b 1: a norm's output 2^20 values).  Delayed: each layer's two
 * norms write the fp8 copy (2 + 1 bytes a value: 3 MiB, 1.572864 us at 2
 * TB/s, against 4 MiB in bf16) and their outputs' column-wise copies are
 * transposes (te_transpose_fp8_input, 1 + 1 bytes: 1.048576 us), the
 * projection's and FC2's inputs cast-transposed (te_cast_transpose_fp8_
 * input, 2^20 and 2^22 values at 4 bytes: 2.097152 and 8.388608 us):
 * 16 transposes and 16 cast-transposes a step's 8 layers.  Current:
 * every norm writes bf16 with its amax, so the amax pass runs for the two
 * other inputs and the 4 output gradients only (6 a layer, 48), every
 * input cast-transposed.  A LoRA adapter on QKV wants the norm's bf16
 * output (Megatron-Bridge: return_layernorm_output), so QKV's norm writes
 * bf16 and its input is cast-transposed (8 transposes left, 24
 * cast-transposes).
 */
static void test_fp8_fused_norm(void **state)
{
	static const struct {
		int recipe, lora, transposes, casts, amax, norm_ns;
	} want[] = {
	    /* norm_ns: a step's 8 layers' 16 norms before QKV and FC1 */
	    {LAYOUT_FP8_DELAYED, 0, 16, 16, 0, 16 * 1573},
	    {LAYOUT_FP8_CURRENT, 0, 0, 32, 48, 16 * 2097},
	    {LAYOUT_FP8_DELAYED, 1, 8, 24, 0, 8 * 1573 + 8 * 2097},
	};
	struct hw_profile g;
	(void)state;
	fp8_gpu(&g);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *gr;
		int n, k;
		int64_t t;
		small(&in);
		in.hw = &g;
		in.lay.dtype = HW_FP8;
		in.lay.fp8_recipe = want[i].recipe;
		if (want[i].lora) {
			in.lay.lora_rank = 8;
			in.lay.lora_targets = LAYOUT_LORA_QKV;
		}
		gr = build(&in, &so, &st);
		k = so.steps; /* synth builds so.steps steps of one microbatch */
		assert_true(k >= 1);
		t = named_ns(gr, "te_transpose_fp8_input", &n);
		assert_int_equal(n, k * want[i].transposes);
		if (n)
			assert_int_equal(t, n * 1049); /* 1.048576 us each */
		named_ns(gr, "te_cast_transpose_fp8_input", &n);
		assert_int_equal(n, k * want[i].casts);
		named_ns(gr, "te_compute_amax_input", &n);
		assert_int_equal(n, k * (want[i].recipe == LAYOUT_FP8_CURRENT ? 16 : 0));
		named_ns(gr, "te_compute_amax_grad", &n);
		assert_int_equal(n + k * (want[i].recipe == LAYOUT_FP8_CURRENT ? 16 : 0),
				 k * want[i].amax);
		/* The layers' norms before QKV and FC1 and the final norm
		 * (bf16, 4 MiB: 2.097152 us). */
		t = named_ns(gr, "vectorized_layer_norm_kernel", &n);
		assert_int_equal(n, k * 17);
		assert_int_equal(t, k * (want[i].norm_ns + 2097));
		synth_out_release(&so);
		graph_free(gr);
	}
}

/* Selective recomputation adds exactly the attention core's forward to
 * each layer's backward: one more flash_fwd_kernel per layer and
 * microbatch, and the GPU's kernel time grows by exactly their time. */
static void test_selective_recompute(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g[2];
	int64_t kern[2], fwd[2];
	int count[2];
	(void)state;
	for (int i = 0; i < 2; i++) {
		small(&in);
		in.lay.microbatches = 2;
		in.steps = 1;
		in.lay.recompute = i ? LAYOUT_RECOMPUTE_SELECTIVE : LAYOUT_RECOMPUTE_NONE;
		g[i] = build(&in, &so, &st);
		kern[i] = kernels_ns(g[i]);
		fwd[i] = named_ns(g[i], "flash_fwd_kernel", &count[i]);
		synth_out_release(&so);
		graph_free(g[i]);
	}
	assert_int_equal(count[0], 8 * 2);
	assert_int_equal(count[1], 2 * 8 * 2);
	assert_int_equal(fwd[1], 2 * fwd[0]);
	assert_int_equal(kern[1] - kern[0], fwd[0]);
}

/* The kernels of graph g named names[0..n): their time (and *count). */
static int64_t names_ns(const struct graph *g, const char *const *names, int n, int *count)
{
	int64_t t = 0;
	*count = 0;
	for (int i = 0; i < n; i++) {
		int c;
		t += named_ns(g, names[i], &c);
		*count += c;
	}
	return t;
}

static void moe_small(struct synth_in *in);

/* Builds in without recomputation and with recompute modules `set`
 * (selective), 2 microbatches: the second's kernels take exactly the
 * first's plus, once more, the forward kernels named in fwd[0..nf) (each
 * count doubled) and `norms` more layer norms (same_norms: every norm of
 * one size, each added one as long as the first's). */
static void rc_check(struct synth_in *in, int set, const char *const *fwd, int nf, int norms,
		     int same_norms)
{
	struct synth_out so;
	struct settle_out st;
	struct graph *g[2];
	int64_t kern[2], f[2], nm[2];
	int cf[2], cn[2];
	for (int i = 0; i < 2; i++) {
		in->lay.microbatches = 2;
		in->steps = 1;
		in->lay.recompute = i ? LAYOUT_RECOMPUTE_SELECTIVE : LAYOUT_RECOMPUTE_NONE;
		in->lay.recompute_modules = set;
		g[i] = build(in, &so, &st);
		kern[i] = kernels_ns(g[i]);
		f[i] = names_ns(g[i], fwd, nf, &cf[i]);
		nm[i] = named_ns(g[i], "vectorized_layer_norm_kernel", &cn[i]);
		synth_out_release(&so);
		graph_free(g[i]);
	}
	assert_int_equal(cf[1], 2 * cf[0]);
	assert_int_equal(f[1], 2 * f[0]);
	assert_int_equal(cn[1], cn[0] + norms);
	if (same_norms) {
		assert_int_equal(nm[0] % cn[0], 0);
		assert_int_equal(nm[1], nm[0] / cn[0] * cn[1]);
	}
	assert_int_equal(kern[1] - kern[0], f[0] + nm[1] - nm[0]);
}

/*
 * Megatron's recompute modules, each re-running exactly its forward
 * kernels before its backward (tp 1: no collectives), 8 layers x 2
 * microbatches: mlp FC1, GeLU and FC2 and the norm fused with FC1 (16
 * norms more, every norm the same b s h); mla_up_proj the q and kv up
 * projections, their norms (2 x 16 more) and RoPE.  On the small MoE
 * model (3 MoE layers, no shared expert for moe_act): moe_act the routed
 * experts' SwiGLU (6 more, each as long as one: swiglu's count and time
 * beyond the base are the added ones'); shared_experts the shared
 * expert's FC1, SwiGLU, FC2 and its add; moe the router, both grouped
 * GEMMs and the shared expert again.
 */
static void test_recompute_modules(void **state)
{
	static const char *const mlp[] = {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_fc1",
					  "vectorized_elementwise_kernel<GeluCUDAKernelImpl>",
					  "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_fc2"};
	static const char *const up[] = {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_q_up",
					 "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_kv_up",
					 "rotary_fwd_q_kernel", "rotary_fwd_kv_kernel"};
	static const char *const shared[] = {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_shared_fc1",
					     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_shared_fc2",
					     "vectorized_elementwise_kernel<add>"};
	static const char *const sw[] = {"swiglu_fwd_kernel"};
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	int64_t a[2];
	int c[2];
	(void)state;
	small(&in);
	rc_check(&in, LAYOUT_RC_MLP, mlp, 3, 16, 1);
	small(&in);
	mla_dims(&in.m, 384, 256, 64, 32, 64);
	rc_check(&in, LAYOUT_RC_MLA_UP_PROJ, up, 4, 32, 0);
	moe_small(&in);
	in.m.shared_experts = 0;
	/* The routed SwiGLU: of the base's 2 x (1 dense + 3 routed), 6 more
	 * of the routed ones' time. */
	{
		int64_t k[2];
		for (int i = 0; i < 2; i++) {
			in.lay.microbatches = 2;
			in.steps = 1;
			in.lay.recompute = i ? LAYOUT_RECOMPUTE_SELECTIVE : LAYOUT_RECOMPUTE_NONE;
			in.lay.recompute_modules = LAYOUT_RC_MOE_ACT;
			g = build(&in, &so, &st);
			k[i] = kernels_ns(g);
			a[i] = named_ns(g, "swiglu_fwd_kernel", &c[i]);
			synth_out_release(&so);
			graph_free(g);
		}
		assert_int_equal(c[1], c[0] + 6);
		assert_int_equal(k[1] - k[0], a[1] - a[0]);
		assert_true(a[1] - a[0] > 0 && (a[1] - a[0]) % 6 == 0);
	}
	moe_small(&in);
	/* SwiGLU once more per shared expert: counted with the others. */
	in.lay.recompute_modules = LAYOUT_RC_SHARED;
	{
		int64_t k[2], s2[2];
		int cs[2];
		for (int i = 0; i < 2; i++) {
			in.lay.microbatches = 2;
			in.steps = 1;
			in.lay.recompute = i ? LAYOUT_RECOMPUTE_SELECTIVE : LAYOUT_RECOMPUTE_NONE;
			g = build(&in, &so, &st);
			k[i] = kernels_ns(g);
			a[i] = names_ns(g, shared, 3, &c[i]);
			s2[i] = names_ns(g, sw, 1, &cs[i]);
			synth_out_release(&so);
			graph_free(g);
		}
		assert_int_equal(c[1], 2 * c[0]);
		assert_int_equal(a[1], 2 * a[0]);
		assert_int_equal(cs[1], cs[0] + 6);
		assert_int_equal(k[1] - k[0], a[0] + s2[1] - s2[0]);
	}
	/* moe: the whole layer's forward again: its router and grouped GEMMs
	 * twice (with moe, shared_experts and moe_act add nothing more). */
	moe_small(&in);
	{
		static const char *const moe[] = {"cutlass_grouped_gemm_bf16_fc1",
						  "cutlass_grouped_gemm_bf16_fc2"};
		int64_t k[3];
		for (int i = 0; i < 3; i++) {
			in.lay.microbatches = 2;
			in.steps = 1;
			in.lay.recompute = i ? LAYOUT_RECOMPUTE_SELECTIVE : LAYOUT_RECOMPUTE_NONE;
			in.lay.recompute_modules =
			    LAYOUT_RC_MOE | (i == 2 ? LAYOUT_RC_MOE_ACT | LAYOUT_RC_SHARED : 0);
			g = build(&in, &so, &st);
			k[i] = kernels_ns(g);
			a[i < 2 ? i : 1] = names_ns(g, moe, 2, &c[i < 2 ? i : 1]);
			synth_out_release(&so);
			graph_free(g);
		}
		assert_int_equal(c[1], 2 * c[0]);
		assert_int_equal(a[1], 2 * a[0]);
		assert_true(k[1] - k[0] > a[0]);
		assert_int_equal(k[2], k[1]);
	}
}

/* acc_elem_bytes (a base whose framework adds each microbatch's weight
 * gradients, PyTorch's autograd): per microbatch after the first, one add
 * per parameter tensor -- each of the 8 layers' four linear weights, their
 * four biases and its two norms' weights and biases (12), the (tied)
 * output layer's weight, the final norm's two and the learned positions:
 * 8 x 12 + 4 = 100, as PyTorch's AccumulateGrad runs one per tensor -- in
 * microbatch 1 and 2 of 3, nothing else changed: the kernels' time grows
 * by exactly the adds'.  0 (Megatron-LM's fused accumulation): none.  And
 * they read and write 3 x 2 bytes a value: in backward order the output
 * layer's, the final norm's two, then the last layer's FC2 weight (1024 x
 * 4096; 4th) takes as long as its FC1 weight (6th), its FC2 bias (1024
 * values, 5th) as long as a norm's weight (8th). */
static void test_accumulation_adds(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g[2];
	int64_t kern[2], adds = 0, at[9];
	int count[2];
	(void)state;
	for (int i = 0; i < 2; i++) {
		small(&in);
		in.lay.microbatches = 3;
		in.steps = 1;
		in.acc_elem_bytes = i ? 2 : 0;
		g[i] = build(&in, &so, &st);
		kern[i] = kernels_ns(g[i]);
		named_ns(g[i], GRAPH_ACC_KERNEL, &count[i]);
		synth_out_release(&so);
	}
	assert_int_equal(count[0], 0);
	assert_int_equal(count[1], 100 * 2);
	for (uint32_t u = 0, k = 0; u < g[1]->n_nodes; u++) {
		if (strcmp(strtab_get(&g[1]->st, g[1]->name[u]), GRAPH_ACC_KERNEL))
			continue;
		assert_true(g[1]->mb[u] == 1 || g[1]->mb[u] == 2);
		adds += g[1]->dur_ns[u];
		if (k < 9)
			at[k] = g[1]->dur_ns[u];
		k++;
	}
	assert_int_equal(kern[1] - kern[0], adds);
	assert_true(at[3] > at[4]);
	assert_int_equal(at[3], at[5]);
	assert_int_equal(at[4], at[7]);
	assert_int_equal(at[7], at[8]);
	graph_free(g[0]);
	graph_free(g[1]);
}

/* The pure-bf16 optimizer (PyTorch's AdamW on the bf16 parameters, no
 * main gradients) accumulates as autograd does by default
 * (synth_acc_bytes): acc_elem_bytes 0 gives the same 100 adds in each of
 * microbatches 1 and 2 as acc_elem_bytes 2 above, and the same step;
 * acc_elem_bytes -1 none, the step shorter by exactly their time.  Its
 * step counts advance in one multi-tensor kernel a step (fused AdamW's
 * _foreach_add_), which Megatron-LM's optimizer (fp32) does not run. */
static void test_bf16_optimizer_adds(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g[4];
	int64_t kern[4], adds[4];
	int count[4], steps[4];
	const double acc[4] = {0, 2, -1, 0};
	(void)state;
	for (int i = 0; i < 4; i++) {
		small(&in);
		in.lay.microbatches = 3;
		in.steps = 2;
		in.lay.optimizer_dtype = i < 3 ? LAYOUT_OPT_BF16 : LAYOUT_OPT_FP32;
		in.lay.clip_grad = 0;
		in.acc_elem_bytes = acc[i];
		g[i] = build(&in, &so, &st);
		kern[i] = kernels_ns(g[i]);
		adds[i] = named_ns(g[i], GRAPH_ACC_KERNEL, &count[i]);
		named_ns(g[i], "multi_tensor_apply_kernel<foreach_add> (step)", &steps[i]);
		synth_out_release(&so);
	}
	assert_int_equal(count[0], 100 * 2 * 2);
	assert_int_equal(count[1], count[0]);
	assert_int_equal(kern[1], kern[0]);
	assert_int_equal(count[2], 0);
	assert_int_equal(count[3], 0);
	assert_int_equal(kern[0] - kern[2], adds[0]);
	assert_int_equal(steps[0], 2);
	assert_int_equal(steps[2], 2);
	assert_int_equal(steps[3], 0);
	for (int i = 0; i < 4; i++)
		graph_free(g[i]);
	/* The host launches them too: a layer's backward in a later
	 * microbatch, as the estimate's dry run counts it, 12 ops more at the
	 * eager 21.6 + 5 us each (acc_host_share blends it over the
	 * microbatches). */
	{
		double f0, b0, f1, b1;
		small(&in);
		in.lay.optimizer_dtype = LAYOUT_OPT_BF16;
		in.lay.clip_grad = 0;
		in.acc_elem_bytes = -1;
		synth_layer_host(&in, 0, &f0, &b0);
		in.acc_elem_bytes = 0;
		synth_layer_host(&in, 0, &f1, &b1);
		assert_rel_close(f1, f0, 1e-12);
		assert_rel_close(b1 - b0, 12 * 26.6e-6, 1e-9);
	}
}

/* The lower bound lb of in against two more: a zero-bubble schedule's
 * W passes may end a stage, so its bound is at most 1F1B's; with
 * selective recomputation, every recompute module is more work, and its
 * bound more than lb and still at most the simulated step. */
static void bound_more(const struct synth_in *in, double lb)
{
	struct synth_in q = *in;
	struct predict_out p;
	struct prism_err err;
	if (layout_zb(in->lay.schedule)) {
		q.lay.schedule = LAYOUT_1F1B;
		print_message("  1f1b's bound %.3f ms\n", synth_lower_bound(&q) * 1e3);
		assert_true(lb <= synth_lower_bound(&q));
		q = *in;
	}
	if (in->lay.recompute == LAYOUT_RECOMPUTE_SELECTIVE) {
		q.lay.recompute_modules = LAYOUT_RC_ALL;
		prism_err_clear(&err);
		assert_int_equal(predict_synth(&q, &p, NULL, NULL, &err), 0);
		assert_true(synth_lower_bound(&q) <= p.iter_s);
		assert_true(synth_lower_bound(&q) > lb);
	}
}

/* GPT-3 1.3B's shape (configs/models/gpt3-1.3b.cfg), the tests' own copy. */
static struct llm gpt3_1_3b(void)
{
	return (struct llm){.layers = 24,
			    .hidden = 2048,
			    .heads = 16,
			    .ffn = 8192,
			    .seq = 2048,
			    .vocab = 51200,
			    .name = "gpt3-1.3b"};
}

/* synth_lower_bound: below the simulated time of every layout, whatever
 * the schedule, tensor, pipeline and data parallelism, recomputation and
 * sequence parallelism; and equal to it (within 1%) where only GEMMs and
 * attention take time and communication is free, where it is the
 * schedule's closed form (m + (p-1)/v) (F + B). */
static void test_lower_bound(void **state)
{
	/* tp, pp, dp, vp, schedule, microbatches, recompute, sp, mbs, flash */
	static const int layouts[][10] = {
	    {1, 1, 1, 1, LAYOUT_1F1B, 4, LAYOUT_RECOMPUTE_NONE, 0, 1, 1},
	    {2, 1, 4, 1, LAYOUT_1F1B, 2, LAYOUT_RECOMPUTE_FULL, 0, 2, 1},
	    {8, 1, 1, 1, LAYOUT_1F1B, 2, LAYOUT_RECOMPUTE_NONE, 1, 1, 1},
	    {1, 4, 2, 1, LAYOUT_GPIPE, 8, LAYOUT_RECOMPUTE_NONE, 0, 1, 1},
	    {1, 4, 1, 1, LAYOUT_1F1B, 4, LAYOUT_RECOMPUTE_SELECTIVE, 0, 1, 1},
	    {2, 2, 2, 2, LAYOUT_INTERLEAVED, 4, LAYOUT_RECOMPUTE_FULL, 1, 1, 1},
	    {2, 2, 2, 2, LAYOUT_INTERLEAVED, 4, LAYOUT_RECOMPUTE_FULL, 0, 1, 0},
	    {4, 8, 1, 1, LAYOUT_1F1B, 16, LAYOUT_RECOMPUTE_NONE, 0, 4, 1},
	    {1, 1, 8, 1, LAYOUT_1F1B, 4, LAYOUT_RECOMPUTE_NONE, 0, 2, 0},
	    {1, 4, 1, 1, LAYOUT_ZB1P, 8, LAYOUT_RECOMPUTE_NONE, 0, 1, 1},
	    {2, 4, 2, 1, LAYOUT_ZB2P, 8, LAYOUT_RECOMPUTE_SELECTIVE, 1, 1, 1},
	    {1, 8, 1, 1, LAYOUT_ZB2P, 16, LAYOUT_RECOMPUTE_NONE, 0, 1, 0},
	    {1, 4, 1, 1, LAYOUT_ZBV, 8, LAYOUT_RECOMPUTE_NONE, 0, 1, 1},
	    {2, 2, 2, 1, LAYOUT_ZBV, 4, LAYOUT_RECOMPUTE_SELECTIVE, 1, 1, 1},
	    {1, 4, 1, 1, LAYOUT_DUALPIPEV, 8, LAYOUT_RECOMPUTE_NONE, 0, 1, 1},
	    {2, 2, 2, 1, LAYOUT_DUALPIPEV, 5, LAYOUT_RECOMPUTE_SELECTIVE, 1, 1, 1},
	};
	static struct hw_profile b200;
	struct prism_err herr;
	(void)state;
	assert_int_equal(hw_load(PRISM_SOURCE_DIR "/configs/hw/b200-dgx.cfg", &b200, &herr), 0);
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const int *x = layouts[i];
		struct synth_in in;
		struct predict_out p;
		struct prism_err err;
		double lb;
		small(&in);
		in.m = gpt3_1_3b();
		in.lay.tp = x[0];
		in.lay.pp = x[1];
		in.lay.dp = x[2];
		in.lay.vp = x[3];
		in.lay.schedule = x[4];
		in.lay.microbatches = x[5];
		in.lay.recompute = x[6];
		in.lay.sp = x[7];
		in.lay.mbs = x[8];
		in.lay.flash = x[9];
		prism_err_clear(&err);
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		lb = synth_lower_bound(&in);
		print_message("layout %zu: bound %.3f ms, simulated %.3f ms\n", i, lb * 1e3,
			      p.iter_s * 1e3);
		assert_true(lb > 0.3 * p.iter_s);
		assert_true(lb <= p.iter_s);
		/* Every recompute module (the MLP's GEMMs and round again). */
		bound_more(&in, lb);
		/* Each fp8 recipe and fp4 (their cast kernels: kperf_lowp_casts) */
		for (int r = LAYOUT_FP8_DELAYED; r <= LAYOUT_FP8_MXFP8 + 1; r++) {
			struct synth_in q = in;
			q.lay.dtype = r > LAYOUT_FP8_MXFP8 ? HW_FP4 : HW_FP8;
			q.lay.fp8_recipe = r > LAYOUT_FP8_MXFP8 ? LAYOUT_FP8_DELAYED : r;
			if (q.lay.dtype == HW_FP4 || r == LAYOUT_FP8_MXFP8)
				q.hw = &b200; /* Blackwell's (layout_check) */
			assert_int_equal(predict_synth(&q, &p, NULL, NULL, &err), 0);
			lb = synth_lower_bound(&q);
			print_message("  %s %s: bound %.3f ms, simulated %.3f ms\n",
				      hw_dtype_name(q.lay.dtype),
				      layout_fp8_recipe_name(q.lay.fp8_recipe), lb * 1e3,
				      p.iter_s * 1e3);
			assert_true(lb <= p.iter_s);
		}
		/* Sliding windows on every other layer (gpt-oss's pattern): the
		 * band is the least a layer runs, still a bound. */
		in.m.window = 256;
		in.m.global_every = 2;
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		assert_true(synth_lower_bound(&in) <= p.iter_s);
		/* Multi-head latent attention: its own projections and
		 * tensor-parallel collectives (bound.c's mla_tp_s). */
		in.m.window = in.m.global_every = 0;
		mla_dims(&in.m, 768, 256, 128, 64, 128);
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		lb = synth_lower_bound(&in);
		print_message("  mla: bound %.3f ms, simulated %.3f ms\n", lb * 1e3,
			      p.iter_s * 1e3);
		assert_true(lb > 0.3 * p.iter_s);
		assert_true(lb <= p.iter_s);
		/* Under a power cap both slow, and the bound holds (its GEMMs
		 * and attention at the capped clock, as the step's) -- but for
		 * a step that mostly waits (tp 8's, host-bound: its own mix,
		 * by the balance, lets its compute burst even at 400 W), whose
		 * clock stays 1 and so do both. */
		in.lay.power_w = 400;
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		print_message("  400 W: clock %.4f, bound %.3f ms, simulated %.3f ms\n",
			      analytic_step_clock(&in), synth_lower_bound(&in) * 1e3,
			      p.iter_s * 1e3);
		assert_true(synth_lower_bound(&in) <= p.iter_s);
		if (analytic_step_clock(&in) < 1)
			assert_true(synth_lower_bound(&in) > lb);
		else
			assert_true(synth_lower_bound(&in) == lb);
	}
	for (int p = 1; p <= 8; p *= 2)
		for (int v = 1; v <= 2; v++) {
			struct synth_in in;
			struct synth_out so;
			struct settle_out st;
			struct graph *g;
			if (v == 2 && p == 1)
				continue;
			/* A GPU on which the kernel model is its bound: one SM
			 * (every tile its own wave), no per-tile or per-kernel
			 * cost, every tile and head dim at the achievable peak, no
			 * memory limit. */
			struct hw_profile ideal = hw;
			ideal.power.mem_w = 0; /* (no balance: built and bound at one clock) */
			ideal.k.sms = 1;
			ideal.hbm_Bps = 1e18;
			ideal.k.gemm[HW_BF16].tile_s = ideal.k.gemm[HW_BF16].overhead_s = 0;
			for (int e = 0; e < 3; e++)
				ideal.k.gemm[HW_BF16].tile_eff[e] = 1;
			ideal.k.attn[HW_BF16].tile_s[0] = ideal.k.attn[HW_BF16].tile_s[1] = 0;
			ideal.k.attn[HW_BF16].overhead_s = 0;
			ideal.k.attn[HW_BF16].d64 = ideal.k.attn[HW_BF16].d256 = 1;
			small(&in);
			in.hw = &ideal;
			in.m.layers = 16;
			in.bare = 1;
			in.cpu_op_s = in.launch_s = in.event_s = in.gpu_lag_s = 0;
			for (int c = 0; c < KC_NCLASSES; c++) {
				in.cost[c].overhead_s = 0;
				if (c != KC_GEMM && c != KC_ATTENTION)
					in.scale[c] = 0;
			}
			in.lay.pp = p;
			in.lay.vp = v;
			in.lay.microbatches = 2 * p;
			in.lay.schedule = v > 1 ? LAYOUT_INTERLEAVED : LAYOUT_1F1B;
			g = build(&in, &so, &st);
			assert_rel_close(synth_lower_bound(&in), st.iter_s, 0.01);
			synth_out_release(&so);
			graph_free(g);
			/* MLA's projections are GEMMs the bound counts whole. */
			mla_dims(&in.m, 384, 256, 64, 32, 64);
			g = build(&in, &so, &st);
			assert_rel_close(synth_lower_bound(&in), st.iter_s, 0.01);
			synth_out_release(&so);
			graph_free(g);
			/* And the GEMMs recompute modules re-run (rc_bound): the
			 * attention core, the MLP and MLA's up projections. */
			in.lay.recompute = LAYOUT_RECOMPUTE_SELECTIVE;
			in.lay.recompute_modules =
			    LAYOUT_RC_CORE_ATTN | LAYOUT_RC_MLP | LAYOUT_RC_MLA_UP_PROJ;
			g = build(&in, &so, &st);
			assert_rel_close(synth_lower_bound(&in), st.iter_s, 0.01);
			synth_out_release(&so);
			graph_free(g);
		}
}

/* What the layout rules refuse, and how they say it. */
static void test_layout_errors(void **state)
{
	static const struct {
		int tp, pp, vp, m, sched;
		const char *msg;
	} cases[] = {
	    {16, 1, 1, 1, LAYOUT_1F1B, "layout: tp 16 is beyond a node of 8 GPUs"},
	    {1, 3, 1, 1, LAYOUT_1F1B, "layout: layers 8 not divisible by pp 3 x virtual stages 1"},
	    {1, 2, 2, 3, LAYOUT_INTERLEAVED,
	     "layout: interleaved 1F1B needs microbatches (3) divisible by pp (2)"},
	    {1, 2, 2, 2, LAYOUT_1F1B, "layout: virtual stages 2 need the interleaved schedule"},
	    {1, 2, 2, 2, LAYOUT_ZB1P, "layout: virtual stages 2 need the interleaved schedule"},
	    {1, 1, 1, 4, LAYOUT_ZB2P,
	     "layout: schedule zb-2p needs pp >= 2 (one stage has no bubble for its deferred "
	     "weight gradients to fill)"},
	    /* ZB-V: two chunks a stage of its own, 2 pp of them */
	    {1, 8, 1, 8, LAYOUT_ZBV, "layout: layers 8 not divisible by pp 8 x virtual stages 2"},
	    {1, 2, 2, 4, LAYOUT_ZBV,
	     "layout: zb-v places its own two chunks a stage in a V: vp 2 must stay 1"},
	    {1, 1, 1, 4, LAYOUT_ZBV,
	     "layout: schedule zb-v needs pp >= 2 (one stage has no bubble for its deferred "
	     "weight gradients to fill)"},
	    /* DualPipeV: ZB-V's rules, and PyTorch's m >= its 2 pp stages */
	    {1, 8, 1, 16, LAYOUT_DUALPIPEV,
	     "layout: layers 8 not divisible by pp 8 x virtual stages 2"},
	    {1, 2, 2, 4, LAYOUT_DUALPIPEV,
	     "layout: dualpipev places its own two chunks a stage in a V: vp 2 must stay 1"},
	    {1, 1, 1, 4, LAYOUT_DUALPIPEV,
	     "layout: schedule dualpipev needs pp >= 2 (one stage has no bubble for its "
	     "deferred weight gradients to fill)"},
	    {1, 2, 1, 3, LAYOUT_DUALPIPEV,
	     "layout: dualpipev needs microbatches (3) >= 2 x pp (4), its stages"},
	    /* pp x vp = 2^32 wrapped to 0 and the divisibility rule divided
		 * by it (SIGFPE): the ranges come first. */
	    {1, 65536, 65536, 1, LAYOUT_INTERLEAVED, "layout: pp 65536 is not in 1..256"},
	    {1, 2, 65536, 2, LAYOUT_INTERLEAVED, "layout: vp 65536 is not in 1..64"},
	    {65536, 1, 1, 1, LAYOUT_1F1B, "layout: tp 65536 is not in 1..1024"},
	    {1, 1, 1, 65537, LAYOUT_1F1B, "layout: microbatches 65537 is not in 1..65536"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct synth_in in;
		struct synth_out so;
		struct graph *g = NULL;
		struct prism_err err;
		small(&in);
		in.lay.tp = cases[i].tp;
		in.lay.pp = cases[i].pp;
		in.lay.vp = cases[i].vp;
		in.lay.microbatches = cases[i].m;
		in.lay.schedule = cases[i].sched;
		prism_err_clear(&err);
		assert_int_equal(synth_build(&in, &g, &so, &err), PRISM_EARG);
		assert_string_equal(err.msg, cases[i].msg);
		assert_null(g);
	}
}

/* Values no run can have are refused, naming the field and its range,
 * before any rule computes with them. */
static void test_limits(void **state)
{
	struct synth_in in;
	struct prism_err err;
	(void)state;
#define REFUSED(edit, want)                                                                        \
	do {                                                                                       \
		small(&in);                                                                        \
		edit;                                                                              \
		prism_err_clear(&err);                                                             \
		assert_int_equal(synth_check(&in, &err), PRISM_EARG);                              \
		assert_string_equal(err.msg, want);                                                \
	} while (0)
	REFUSED(in.lay.zero = 7, "layout: zero 7 is not in 0..3");
	REFUSED(in.lay.sp = 5, "layout: sp 5 is not in 0..1");
	REFUSED(in.lay.recompute = 3, "layout: recompute 3 is not in 0..2");
	REFUSED(in.lay.mbs = 0, "layout: mbs 0 is not in 1..65536");
	REFUSED(in.lay.dp = 1 << 21, "layout: dp 2097152 is not in 1..1048576");
	REFUSED((in.lay.tp = 8, in.lay.pp = 256, in.lay.dp = 1 << 20),
		"layout: tp 8 x pp 256 x dp 1048576 is beyond 16777216 GPUs");
	REFUSED(in.m.layers = 1000000000, "model: layers 1000000000 is not in 1..65536");
	REFUSED(in.m.hidden = 1000, "model: hidden 1000 must be divisible by heads 16");
	REFUSED(in.m.kv_heads = 5, "model: heads 16 must be divisible by kv_heads 5");
	REFUSED(in.lay.dtype = HW_NDTYPES, "layout: dtype 6 is not in 0..5");
#undef REFUSED
	small(&in);
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), 0);
}

/* synth_check's task estimate is a lower bound of what synth builds (so
 * it refuses no run that fits), and a run beyond GRAPH_MAX_TASKS is
 * refused before anything is built. */
static void test_task_bound(void **state)
{
	static const struct {
		int tp, pp, vp, m, sched, rec, bare;
	} cases[] = {
	    {1, 1, 1, 1, LAYOUT_1F1B, LAYOUT_RECOMPUTE_NONE, 0},
	    {1, 1, 1, 1, LAYOUT_1F1B, LAYOUT_RECOMPUTE_NONE, 1},
	    {2, 2, 1, 4, LAYOUT_GPIPE, LAYOUT_RECOMPUTE_FULL, 0},
	    {1, 4, 2, 8, LAYOUT_INTERLEAVED, LAYOUT_RECOMPUTE_SELECTIVE, 1},
	};
	struct synth_in in;
	struct prism_err err;
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct synth_out so;
		struct graph *g = NULL;
		small(&in);
		in.lay.tp = cases[i].tp;
		in.lay.pp = cases[i].pp;
		in.lay.vp = cases[i].vp;
		in.lay.microbatches = cases[i].m;
		in.lay.schedule = cases[i].sched;
		in.lay.recompute = cases[i].rec;
		in.bare = cases[i].bare;
		in.steps = 1;
		prism_err_clear(&err);
		assert_int_equal(synth_build(&in, &g, &so, &err), 0);
		assert_true(g->n_nodes >= (uint32_t)(in.m.layers * in.lay.microbatches *
						     SYNTH_MIN_TASKS_PER_LAYER));
		graph_free(g);
		synth_out_release(&so);
	}
	small(&in);
	in.m.layers = 65536;
	in.lay.microbatches = 65536;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), PRISM_ELIMIT);
	assert_string_equal(err.msg, "layout: 2 steps x 65536 layers x 65536 microbatches make at "
				     "least 412316860416 tasks, more than the 33554432 prism "
				     "simulates");
	/* Folded, the units counted are the ones built (synth_out's
	 * n_units, every step): a zero-bubble schedule's B and W passes
	 * apart, DualPipeV's whole backwards one (layout_step_passes: p 4
	 * m 8, 4 x 8 x 4 + 7 + 6 + 5 + 4 = 150 a step). */
	{
		static const int sch[] = {LAYOUT_GPIPE,	   LAYOUT_1F1B, LAYOUT_INTERLEAVED,
					  LAYOUT_ZB1P,	   LAYOUT_ZB2P, LAYOUT_ZBV,
					  LAYOUT_DUALPIPEV};
		static const int64_t want[] = {64, 64, 128, 96, 96, 192, 150};
		for (size_t i = 0; i < sizeof(sch) / sizeof(sch[0]); i++) {
			struct synth_out so;
			struct graph *g = NULL;
			small(&in);
			in.m.layers = 16;
			in.lay.pp = 4;
			in.lay.microbatches = 8;
			in.lay.schedule = sch[i];
			in.lay.vp = sch[i] == LAYOUT_INTERLEAVED ? 2 : 1;
			in.units = 1;
			in.bare = 1;
			assert_int_equal(layout_step_passes(&in.lay), want[i]);
			prism_err_clear(&err);
			assert_int_equal(synth_build(&in, &g, &so, &err), 0);
			assert_int_equal(so.n_units, 2 * want[i]);
			graph_free(g);
			synth_out_release(&so);
		}
	}
	/* ZB-2p's 3 passes a microbatch: 2 steps x 32 stages x 65536
	 * microbatches x 3 x 4 tasks are beyond the graph (2 passes would
	 * have been just within it). */
	small(&in);
	in.m.layers = 32;
	in.lay.pp = 32;
	in.lay.microbatches = 65536;
	in.lay.schedule = LAYOUT_ZB2P;
	in.units = 1;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), PRISM_ELIMIT);
	assert_string_equal(err.msg, "layout: 2 steps x 32 stages x 1 chunks x 65536 microbatches "
				     "make 12582912 pipeline units (zb-2p), more than the 33554432 "
				     "tasks prism simulates can hold");
	in.lay.schedule = LAYOUT_1F1B;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), 0);
}

/* The run description survives its own parser. */
static void test_meta_round_trip(void **state)
{
	struct synth_in a, b;
	struct prism_err err;
	char s[512];
	(void)state;
	small(&a);
	a.lay.tp = 2;
	a.lay.pp = 4;
	a.lay.vp = 2;
	a.lay.dp = 16;
	a.lay.microbatches = 8;
	a.lay.schedule = LAYOUT_INTERLEAVED;
	a.lay.zero = 1;
	a.lay.sp = 1;
	a.lay.recompute = LAYOUT_RECOMPUTE_SELECTIVE;
	a.lay.flash = 0;
	a.m.kv_heads = 4;
	a.m.gated = 1;
	a.m.untied = 1;
	a.m.rope = 1;
	a.lay.dtype = HW_FP8;
	a.lay.fp8_attention = 1;
	synth_meta(&a, s, sizeof(s));
	prism_err_clear(&err);
	assert_string_equal(
	    s,
	    "prism::model#name=t;layers=8;hidden=1024;heads=16;kv_heads=4;"
	    "ffn=4096;activation=swiglu;seq=1024;vocab=32000;tp=2;pp=4;dp=16;vp=2;mbs=1;microbatches=8;"
	    "schedule=interleaved;recompute=1;sp=1;zero=1;flash=0;dtype=fp8;"
	    "fp8_attention=1;hw=h100-dgx;untied=1;rope=1;shard=0;prefetch=1;"
	    "bucket_mb=0;overlap_grad=1;overlap_param=0;tp_overlap=0;pp_overlap=1");
	synth_in_default(&b);
	assert_int_equal(synth_meta_parse(s, &b, &err), 0);
	assert_memory_equal(&a.m, &b.m, sizeof(a.m));
	assert_memory_equal(&a.lay, &b.lay, sizeof(a.lay));
	assert_int_equal(b.lay.dtype, HW_FP8);
	assert_int_equal(b.lay.fp8_attention, 1);
	assert_string_equal(b.hw_id, "h100-dgx");
	assert_int_equal(synth_meta_parse("prism::model#layers=x", &b, &err), PRISM_EFORMAT);
	assert_string_equal(err.msg, "model description: field 'layers' is not a count: 'x'");
	/* Counts beyond any run are refused, naming the field and its range. */
	prism_err_clear(&err);
	assert_int_equal(synth_meta_parse("prism::model#layers=1000000000", &b, &err),
			 PRISM_EFORMAT);
	assert_string_equal(
	    err.msg, "model description: field 'layers' must be in 1..65536, not 1000000000");
	prism_err_clear(&err);
	assert_int_equal(synth_meta_parse("prism::model#zero=7", &b, &err), PRISM_EFORMAT);
	assert_string_equal(err.msg, "model description: field 'zero' must be in 0..3, not 7");
	prism_err_clear(&err);
	assert_int_equal(synth_meta_parse("prism::model#pp=0", &b, &err), PRISM_EFORMAT);
	assert_string_equal(err.msg, "model description: field 'pp' must be in 1..256, not 0");
	prism_err_clear(&err);
	assert_int_equal(synth_meta_parse("prism::model#dp=99999999999999999999", &b, &err),
			 PRISM_EFORMAT);
	assert_string_equal(err.msg,
			    "model description: field 'dp' is not a count: '99999999999999999999'");
	prism_err_clear(&err);
	assert_int_equal(synth_meta_parse("prism::model#seq=", &b, &err), PRISM_EFORMAT);
	assert_string_equal(err.msg, "model description: field 'seq' is not a count: ''");
	/* The collection hook may name the recomputation. */
	prism_err_clear(&err);
	assert_int_equal(synth_meta_parse("prism::model#recompute=full", &b, &err), 0);
	assert_int_equal(b.lay.recompute, LAYOUT_RECOMPUTE_FULL);
	assert_int_equal(synth_meta_parse("prism::model#recompute=some", &b, &err), PRISM_EFORMAT);
	assert_string_equal(err.msg, "model description: unknown recompute 'some'");
}

/* Re-timing a clone: the base is untouched, the clone passes graph_check,
 * and on a GPU with twice the bandwidth and FLOP/s, whose kernels' fixed
 * costs (per tile, per kernel) take half as long, every kernel takes half
 * as long: those synth recorded shapes for by the kernel model's ratio,
 * the embeddings (no shape the model times) by the bandwidths beyond the
 * model's overhead on each GPU. */
static void test_retime_clone(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g, *c;
	struct hw_profile fast = hw;
	struct edit_retime r;
	struct edit_stats es;
	struct prism_err err;
	int64_t before, after, base_after;
	(void)state;
	small(&in);
	in.lay.dp = 4;
	g = build(&in, &so, &st);
	for (int d = 0; d < HW_NDTYPES; d++) {
		fast.peak_flops[d] *= 2;
		fast.k.gemm[d].flops *= 2;
		fast.k.gemm[d].tile_s /= 2;
		fast.k.gemm[d].overhead_s /= 2;
		for (int p = 0; p < 2; p++) {
			fast.k.attn[d].flops[p] *= 2;
			fast.k.attn[d].tile_s[p] /= 2;
		}
		fast.k.attn[d].overhead_s /= 2;
	}
	for (int k = 0; k < HW_MEM_NKINDS; k++)
		fast.k.mem_overhead_s[k] /= 2;
	fast.hbm_Bps *= 2;
	c = graph_clone(g);
	assert_non_null(c);
	memset(&r, 0, sizeof(r));
	r.from = &hw;
	r.to = &fast;
	before = kernels_ns(g);
	assert_int_equal(edit_retime(c, &r, &es), 0);
	assert_int_equal(graph_check(c, &err), 0);
	after = kernels_ns(c);
	base_after = kernels_ns(g);
	assert_int_equal(before, base_after); /* the base is read-only */
	assert_rel_close((double)after, before / 2.0, 1e-4);
	assert_int_equal(es.kernels_scaled, g->stats.nodes[GN_KERNEL]);
	/* Only the embedding's lookups and scatters (words' and learned
	 * positions', forward and backward: four) a step are not placed. */
	assert_int_equal(es.kernels_ratio, 4 * in.steps);
	assert_int_equal(es.kernels_model, g->stats.nodes[GN_KERNEL] - 4 * in.steps);
	/* DP 4 -> 32: the gradient all-reduces (group 4) get the comm model's
	 * ratio; nothing else moves. */
	graph_free(c);
	c = graph_clone(g);
	memset(&r, 0, sizeof(r));
	r.from = r.to = &hw;
	r.dp_from = 4;
	r.dp_to = 32;
	assert_int_equal(edit_retime(c, &r, &es), 0);
	assert_int_equal(es.kernels_scaled, 0);
	/* Megatron-LM's buckets of at least 40M parameters: the head's norm
	 * and layers 7..4 (4 x 12,596,224), layers 3..0, the embedding
	 * (32.8M + 1M positions): three a step. */
	assert_int_equal(es.colls_scaled, 3 * in.steps);
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->coll[u] != UINT32_MAX)
			assert_true(c->dur_ns[u] > g->dur_ns[u]);
		else
			assert_int_equal(c->dur_ns[u], g->dur_ns[u]);
	graph_free(c);
	/* What a collective's recorded time holds beyond the transfer (its
	 * wait for the group's other ranks) is kept, not scaled with it:
	 * all-reduces that waited 1 ms and 2 ms longer come out of the same
	 * edit 1 ms apart (scaled with the transfer, the wait grew with the
	 * group). */
	{
		struct graph *w1 = graph_clone(g), *w2 = graph_clone(g);
		assert_non_null(w1);
		assert_non_null(w2);
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if (g->coll[u] != UINT32_MAX) {
				w1->dur_ns[u] += 1000000;
				w2->dur_ns[u] += 2000000;
			}
		assert_int_equal(edit_retime(w1, &r, &es), 0);
		assert_int_equal(edit_retime(w2, &r, &es), 0);
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if (g->coll[u] != UINT32_MAX) {
				assert_int_equal(w2->dur_ns[u] - w1->dur_ns[u], 1000000);
				assert_true(w1->dur_ns[u] > g->dur_ns[u] + 1000000);
			}
		graph_free(w1);
		graph_free(w2);
	}
	synth_out_release(&so);
	graph_free(g);
}

/* edit_fit on a model against itself finds ratios of 1, and a base whose
 * GEMMs took 1.5x as long is found out class by class. */
static void test_fit_scales(void **state)
{
	struct synth_in in;
	struct synth_out so, so2;
	struct settle_out st;
	struct graph *a, *b;
	struct edit_fit f;
	(void)state;
	small(&in);
	in.steps = 2;
	a = build(&in, &so, &st);
	assert_int_equal(edit_fit(a, a, &in, &f), 0);
	for (int k = 0; k < KC_NCLASSES; k++)
		assert_rel_close(f.scale[k], 1.0, 1e-12);
	/* GEMMs come in several sizes: a line, and it is the model's own. */
	assert_int_equal(f.fitted[KC_GEMM], 2);
	assert_rel_close(f.cost[KC_GEMM].eff, in.cost[KC_GEMM].eff, 1e-4);
	assert_rel_close(f.cost[KC_GEMM].overhead_s, in.cost[KC_GEMM].overhead_s, 1e-3);
	assert_true(f.host_fitted);
	assert_rel_close(f.cpu_op_s, in.cpu_op_s, 1e-9);
	assert_rel_close(f.launch_s, in.launch_s, 1e-9);
	{
		/* A base whose GEMMs reach 50% with 5 us overhead, its optimizer
		 * half the modelled speed: the line and the ratio are found. */
		struct synth_in truth = in;
		truth.cost[KC_GEMM].eff = 0.5;
		truth.cost[KC_GEMM].overhead_s = 5e-6;
		truth.scale[KC_OPTIMIZER] = 2;
		b = build(&truth, &so2, &st);
	}
	assert_int_equal(edit_fit(b, a, &in, &f), 0);
	assert_rel_close(f.cost[KC_GEMM].eff, 0.5, 1e-3); /* times are whole ns */
	assert_rel_close(f.cost[KC_GEMM].overhead_s, 5e-6, 1e-2);
	/* The optimizer's kernels (norm, clip scale, Adam) have several
	 * sizes: a line through the origin at half the modelled speed. */
	assert_int_equal(f.fitted[KC_OPTIMIZER], 2);
	assert_rel_close(f.cost[KC_OPTIMIZER].eff, 0.5, 1e-3);
	assert_rel_close(f.cost[KC_NORM].eff, in.cost[KC_NORM].eff, 1e-3);
	synth_out_release(&so);
	synth_out_release(&so2);
	graph_free(a);
	graph_free(b);
}

/*
 * ZeRO-3 (FSDP FULL_SHARD) by hand.  The small model (4 layers of
 * 12,596,224 parameters), dp 2 in one node, one microbatch, on an H100
 * whose NVLink (450 GB/s) has no latency, collectives at full bus
 * bandwidth, no host costs and no contention.
 *  - Volumes, per step: each layer's bf16 weights all-gathered before its
 *    forward and again before its backward (2 x 25,192,448 B of output)
 *    and its gradients reduce-scattered after its backward in
 *    Megatron-FSDP's bf16 main gradients (25,192,448 B of input; fp32,
 *    twice that, until 2026-11-28: docs/MODEL.md "Main gradients'
 *    dtype"); the embedding (32000 x 1024 + 1024 x 1024 positions) and
 *    the head's final norm (2 x 1024) gathered for their forward and
 *    reduced after their backward.
 *  - Times: a ring over 2 GPUs moves half of each buffer: an all-gather
 *    t_ag = 25,192,448 / 2 / 450 GB/s = 27.9916 us, a reduce-scatter t_rs
 *    the same (55.9832 us in fp32).  Without prefetch each layer's gather waits for the
 *    previous layer's compute and the compute for it: every forward layer
 *    but the first waits t_ag more, every backward layer but the first
 *    t_rs + t_ag more (its gather queues behind the previous layer's
 *    reduce-scatter on the one NCCL stream, and behind Megatron-FSDP's
 *    add of the reduced shard into the sharded buffer after it, t_add:
 *    6 bytes a sharded parameter (3 x bf16) at the kernel model's
 *    elementwise rate, layout_dp_traits rs_out).  With prefetch 1 the next layer's gather
 *    runs beside the compute and hides (t_ag < a layer's forward, t_rs +
 *    t_add + t_ag < its backward).  So prefetch 0 takes (l - 1) (2 t_ag +
 *    t_rs + t_add) longer a step (3 x 83.9748 = 251.9245 us before the
 *    add; 335.8993 in fp32).
 */
static void test_zero3_layer(void **state)
{
	struct hw_profile g = hw;
	struct synth_in in;
	struct synth_out so;
	struct settle_out st[2];
	struct graph *gr;
	double P = 12596224, t_ag = 2 * P / 2 / 450e9, t_rs = 2 * P / 2 / 450e9;
	(void)state;
	g.nvlink_lat_s = g.net_lat_s = g.coll_base_s = 0;
	g.nvl_eff = g.net_eff = 1;
	g.nvls_eff = 0;
	g.slow_compute = g.slow_comm = 0;
	small(&in);
	in.hw = &g;
	in.m.layers = 4;
	in.lay.dp = 2;
	in.lay.zero = 3;
	in.comm_eff = 1;
	in.cpu_op_s = in.launch_s = in.event_s = in.gpu_lag_s = 0;
	for (int pf = 0; pf <= 1; pf++) {
		int n_ag = 0, n_rs = 0;
		double ag = 0, rs = 0;
		in.lay.prefetch = pf;
		gr = build(&in, &so, &st[pf]);
		for (uint32_t c = 0; c < gr->n_colls; c++) {
			const struct graph_coll *x = &gr->colls[c];
			if (gr->iter[x->node] != 1) /* the second step */
				continue;
			if (x->kind == GC_ALL_GATHER) {
				n_ag++;
				ag += (double)x->bytes;
			} else if (x->kind == GC_REDUCE_SCATTER) {
				n_rs++;
				rs += (double)x->bytes;
			}
		}
		/* 2 x 4 layers + the embedding and the head gathered; 4 layers,
		 * the embedding and the head's norm reduced. */
		assert_int_equal(n_ag, 10);
		assert_int_equal(n_rs, 6);
		assert_rel_close(ag, 8 * 2 * P + 2 * (32000 * 1024.0 + 1024 * 1024) + 2 * 2048.0,
				 1e-12);
		assert_rel_close(rs, 2 * (4 * P + 32000 * 1024.0 + 1024 * 1024 + 2048.0), 1e-12);
		synth_out_release(&so);
		graph_free(gr);
	}
	print_message("zero-3 step: prefetch 0 %.3f ms, prefetch 1 %.3f ms\n", st[0].iter_s * 1e3,
		      st[1].iter_s * 1e3);
	assert_rel_close(st[0].iter_s - st[1].iter_s,
			 3 * (2 * t_ag + t_rs + kperf_mem_s(&g, HW_MEM_ELEMENTWISE, 6 * P / 2)),
			 1e-4);
}

/*
 * ZeRO-3 as each implementation runs it (layout_dp_traits), on
 * test_zero3_layer's model and machine (4 layers of P = 12,596,224
 * parameters, dp 2 on NVLink without latency, bf16 weights: wb 2, gb 4).
 * The implementations' bytes, by hand from their sources:
 *  - megatron: gathers 2 P, reduces 2 P (Megatron-FSDP's bf16 main
 *    gradients), adds the reduced shard into its own (3 x 2 P / 2);
 *  - deepspeed: reduces in bf16 (2 P); copies the gradients into its
 *    bucket (2 x 2 P read and written) and its reduced partition into
 *    the bf16 gradient partition ((2 + 2) P / 2);
 *  - fsdp: casts its fp32 shard to bf16 before the gather ((4 + 2) P / 2),
 *    reduces in bf16 (2 P), casts the reduced shard to fp32 ((2 + 4) P / 2);
 *  - fsdp2: copies in the cast shard ((4 + 2) P / 2), copies out the
 *    gathered layer on the compute stream (2 x 2 P), copies the bf16
 *    gradients into the fp32 reduce-scatter input ((2 + 4) P).
 * A ring over 2 moves half a buffer: t_ag = 2P / 2 / 450 GB/s, t_rs =
 * rb P / 2 / 450 GB/s; each copy its bytes at the kernel model's
 * elementwise rate (kperf_mem_s).  A layer's gather on the DP stream is g
 * = copy-in + t_ag; its reduction r = copy-in + t_rs + copy-out.
 *  - Hidden (NVLink 450 GB/s: g < a layer's forward, g + r < its
 *    backward): without prefetch each layer but the first waits for g
 *    forward and g + r backward, so prefetch 0 takes (l - 1)(2 g + r)
 *    longer than prefetch 1.
 *  - Exposed (NVLink at 1/200: g is longer than a layer's compute): the
 *    DP stream runs back to back with prefetch, the compute beside it;
 *    without, each layer's compute (forward c_f, backward c_b, FSDP2's
 *    copy-out in both) waits in line, so prefetch 0 takes (l - 1)(c_f + c_b)
 *    longer.  c_f, c_b: the layers' compute-stream time in the step.
 */
/* Kernels `name` of the second step: how many, and how many of them take
 * the kernel model's time for `bytes` (to the nanosecond). */
static int kind_count(const struct graph *g, const char *name, double bytes, int *n)
{
	int64_t want = prism_ns_round(kperf_mem_s(&hw, HW_MEM_ELEMENTWISE, bytes) * 1e9);
	int match = 0;
	*n = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->iter[u] == 1 && g->kind[u] == GN_KERNEL &&
		    strcmp(strtab_get(&g->st, g->name[u]), name) == 0) {
			(*n)++;
			match += llabs(g->dur_ns[u] - want) <= 1;
		}
	return match;
}

/*
 * The step's gradient fill (step.c grad_buffer_zero) under Megatron-LM's
 * ZeRO-1 and Megatron-FSDP's ZeRO-2/3 (dp_impl megatron), the small GPT
 * (layers of P = 12,596,224 parameters) over dp 2: the distributed
 * optimizer zeroes its whole contiguous buffer, 4 P bytes a layer
 * (_ParamAndGradBuffer.reset); Megatron-FSDP's zero_grad its sharded main
 * gradient buffer, bf16, 2 P / 2 (4 P / 2 until 2026-11-28: docs/MODEL.md
 * "Main gradients' dtype"; ParamAndGradBuffer.zero_grad:
 * main_grad_buffer.data), under ZeRO-3 as under ZeRO-2 (none was filled
 * under ZeRO-3 before, a ZeRO-2 layer 4 P).  One fill a layer and the
 * embedding's and the head's, each at the kernel model's time for its
 * bytes (kind_count).
 */
static void test_mfsdp_fill(void **state)
{
	const double P = 12596224;
	(void)state;
	for (int zero = 1; zero <= 3; zero++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *gr;
		int n;
		small(&in);
		in.lay.dp = 2;
		in.lay.zero = zero;
		gr = build(&in, &so, &st);
		assert_int_equal(kind_count(gr, "vectorized_elementwise_kernel<fill> (grad buffer)",
					    zero >= 2 ? 2 * P / 2 : 4 * P, &n),
				 in.m.layers);
		assert_int_equal(n, in.m.layers + 2);
		synth_out_release(&so);
		graph_free(gr);
	}
}

static void test_zero3_impls(void **state)
{
	const double P = 12596224;
	/* copy bytes a layer: ag_in (a shard), ag_out, rs_in, rs_out (a
	 * shard); the reduce dtype's bytes */
	static const struct {
		int impl;
		double ag_in, ag_out, rs_in, rs_out, rb;
	} T[] = {
	    /* Megatron-FSDP's shard add, DeepSpeed's partition copy: in their
	     * bf16 main gradients (12, 4 and 6 until 2026-11-28, fp32) */
	    {LAYOUT_DP_MEGATRON, 0, 0, 0, 6, 2},
	    {LAYOUT_DP_DEEPSPEED, 0, 0, 4, 4, 2},
	    {LAYOUT_DP_FSDP, 6, 0, 0, 6, 2},
	    {LAYOUT_DP_FSDP2, 6, 4, 6, 0, 4},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(T) / sizeof(T[0]); i++)
		for (int slow = 0; slow <= 1; slow++) {
			struct hw_profile g = hw;
			struct synth_in in;
			struct synth_out so;
			struct settle_out st[2];
			struct graph *gr;
			double cin = T[i].ag_in * P / 2, cout = T[i].ag_out * P,
			       rin = T[i].rs_in * P, rout = T[i].rs_out * P / 2;
			double bw = slow ? 450e9 / 200 : 450e9, gt, rt, comp = 0, dp_s = 0;
			int n;
			g.nvlink_lat_s = g.net_lat_s = g.coll_base_s = 0;
			g.nvl_eff = g.net_eff = 1;
			g.nvls_eff = 0;
			g.slow_compute = g.slow_comm = 0;
			g.nvlink_Bps = bw;
			small(&in);
			in.hw = &g;
			in.m.layers = 4;
			in.lay.dp = 2;
			in.lay.zero = 3;
			in.lay.dp_impl = T[i].impl;
			in.comm_eff = 1;
			in.cpu_op_s = in.launch_s = in.event_s = in.gpu_lag_s = 0;
			gt = 2 * P / 2 / bw +
			     (cin > 0 ? kperf_mem_s(&g, HW_MEM_ELEMENTWISE, cin) : 0);
			rt = T[i].rb * P / 2 / bw +
			     (rin > 0 ? kperf_mem_s(&g, HW_MEM_ELEMENTWISE, rin) : 0) +
			     (rout > 0 ? kperf_mem_s(&g, HW_MEM_ELEMENTWISE, rout) : 0);
			for (int pf = 0; pf <= 1; pf++) {
				in.lay.prefetch = pf;
				gr = build(&in, &so, &st[pf]);
				/* Each copy as many times as its collective, of its
				 * bytes (the layers' 8 gathers and 4 reductions; the
				 * embedding's and the head's at their own sizes). */
				if (cin > 0) {
					assert_int_equal(
					    kind_count(gr, "zero::all_gather_copy_in", cin, &n), 8);
					assert_int_equal(n, 10);
				}
				if (cout > 0) {
					assert_int_equal(
					    kind_count(gr, "zero::all_gather_copy_out", cout, &n),
					    8);
					assert_int_equal(n, 10);
				}
				if (rin > 0) {
					assert_int_equal(
					    kind_count(gr, "zero::reduce_scatter_copy_in", rin, &n),
					    4);
					assert_int_equal(n, 6);
				}
				if (rout > 0) {
					assert_int_equal(kind_count(gr,
								    "zero::reduce_scatter_copy_out",
								    rout, &n),
							 4);
					assert_int_equal(n, 6);
				}
				if (pf == 1) {
					/* The DP stream's work in the step: the collectives and
					 * the copies beside them. */
					for (uint32_t u = 0; u < gr->n_nodes; u++)
						if (gr->iter[u] == 1 && gr->kind[u] >= GN_KERNEL &&
						    (gr->coll[u] != UINT32_MAX ||
						     strstr(strtab_get(&gr->st, gr->name[u]),
							    "zero::reduce_scatter") ||
						     strstr(strtab_get(&gr->st, gr->name[u]),
							    "copy_in")))
							dp_s += (double)gr->dur_ns[u] * 1e-9;
				}
				if (pf == 0) {
					/* The step's compute: every kernel but the collectives
					 * and the DP stream's copies. */
					for (uint32_t u = 0; u < gr->n_nodes; u++)
						if (gr->iter[u] == 1 && gr->kind[u] == GN_KERNEL &&
						    gr->coll[u] == UINT32_MAX &&
						    strcmp(strtab_get(&gr->st, gr->name[u]),
							   "zero::reduce_scatter_copy_in") &&
						    strcmp(strtab_get(&gr->st, gr->name[u]),
							   "zero::reduce_scatter_copy_out") &&
						    strcmp(strtab_get(&gr->st, gr->name[u]),
							   "zero::all_gather_copy_in"))
							comp += (double)gr->dur_ns[u] * 1e-9;
				}
				synth_out_release(&so);
				graph_free(gr);
			}
			print_message("%s %s: prefetch 0 %.3f ms, 1 %.3f ms (g %.1f us, r %.1f us, "
				      "DP stream %.1f us, compute %.1f us)\n",
				      layout_dp_impl_name(T[i].impl), slow ? "exposed" : "hidden",
				      st[0].iter_s * 1e3, st[1].iter_s * 1e3, gt * 1e6, rt * 1e6,
				      dp_s * 1e6, comp * 1e6);
			if (!slow)
				assert_rel_close(st[0].iter_s - st[1].iter_s, 3 * (2 * gt + rt),
						 1e-4);
			else {
				/* The DP stream sets the pace with prefetch: the step is
				 * its work (dp_s) and less than the step's compute more;
				 * without, at least 3 layers' forward and backward more. */
				double lf, lb, la;
				synth_layer_times(&in, &lf, &lb, &la);
				assert_true(st[1].iter_s > dp_s);
				assert_true(st[1].iter_s < dp_s + comp);
				assert_true(st[0].iter_s - st[1].iter_s > 3 * (lf + lb));
			}
		}
}

/*
 * Mixture-of-experts (issue 18).  The model of these tests: 4 layers,
 * hidden 1024, 16 heads, seq 1024, vocab 32000 (tied, learned positions),
 * SwiGLU; the first layer dense (ffn 4096), the other 3 with 8 routed
 * experts (top 2) and 1 shared, expert ffn 1024.
 */
static void moe_small(struct synth_in *in)
{
	small(in);
	in->m.layers = 4;
	in->m.gated = 1;
	in->m.experts = 8;
	in->m.top_k = 2;
	in->m.shared_experts = 1;
	in->m.expert_ffn = 1024;
	in->m.first_dense = 1;
}

/*
 * Parameters and FLOPs by hand.  Attention: h x qkv + h^2 = 1024 x 3072 +
 * 1024^2 = 4,194,304; an expert: 3 h fe = 3,145,728; the dense layer:
 * 4,194,304 + 3 x 1024 x 4096 + 9h + f = 16,790,528; an MoE layer: the
 * attention, 8h of biases and norms, the router 8h, and 8 + 1 experts:
 * 4,194,304 + 8192 + 8192 + 9 x 3,145,728 = 32,522,240 (active: 2 + 1
 * experts, 13,647,872).  The embedding V h = 32,768,000, positions s h =
 * 1,048,576, the final norm 2048: 148,175,872 in all, 91,552,768 active.
 *
 * FLOPs per token, forward (the papers' count: 2 per active matmul
 * parameter, plus attention 4 s h per layer): the dense layer 2 x
 * (4,194,304 + 12,582,912) + 4,194,304 = 37,748,736; an MoE layer 2 x
 * (4,194,304 + 8192 + 3 x 3,145,728) + 4,194,304 = 31,473,664; the logits
 * 2 V h = 65,536,000.  Training (x 3): 593,117,184 per token.  The
 * synthesised kernels of a balanced EP layout add up to it: each rank's
 * experts take as many tokens as it routes.
 */
static void test_moe_counts(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	double act = 0;
	(void)state;
	moe_small(&in);
	assert_rel_close(llm_moe_layer_params(&in.m, &act), 32522240.0, 1e-15);
	assert_rel_close(act, 13647872.0, 1e-15);
	assert_rel_close(llm_params(&in.m), 148175872.0, 1e-15);
	assert_rel_close(llm_active_params(&in.m), 91552768.0, 1e-15);
	assert_rel_close(llm_flops_iter(&in.m, 1, 0), 1024 * 593117184.0, 1e-15);
	/* Full recomputation: the layers' forward once more. */
	assert_rel_close(llm_flops_iter(&in.m, 1, 1),
			 1024 * (593117184.0 + 37748736.0 + 3 * 31473664.0), 1e-15);
	in.lay.ep = 4;
	in.lay.dp = 4;
	in.lay.microbatches = 2;
	g = build(&in, &so, &st);
	assert_rel_close(so.flops, llm_flops_iter(&in.m, 2, 0), 1e-12);
	synth_out_release(&so);
	graph_free(g);
}

/*
 * The all-to-all of an MoE layer: a rank's b s / tp = 2 x 1024 tokens, 2
 * copies each, 1024 bf16 values: 2048 x 2 x 1024 x 2 = 8,388,608 bytes,
 * four times per MoE layer and microbatch (dispatch and combine, forward
 * and backward): 3 layers x 2 microbatches x 2 steps x 4 = 48, over the
 * EP group of 4 (one node: a ring sends 3/4 of it).  With the busiest
 * expert at 1.5 x the mean and 8 / 4 = 2 experts a rank, the busiest rank
 * takes (2 - 1 + 1.5) / 2 = 1.25 x: 10,485,760 bytes; a capacity factor
 * of 1.2 caps the expert at 1.2: 1.1 x, 9,227,468.8.
 */
static void test_moe_all_to_all(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	struct comm_est e;
	int n = 0;
	(void)state;
	moe_small(&in);
	in.lay.ep = 4;
	in.lay.dp = 4;
	in.lay.mbs = 2;
	in.lay.microbatches = 2;
	assert_rel_close(synth_moe_a2a_bytes(&in), 8388608.0, 1e-15);
	assert_int_equal(
	    comm_time(&hw, GC_ALL_TO_ALL, 8388608.0, (struct comm_group){4, 4}, 1, COMM_AUTO, &e),
	    0);
	assert_rel_close(e.wire_bytes, 0.75 * 8388608.0, 1e-15);
	g = build(&in, &so, &st);
	for (uint32_t i = 0; i < g->n_colls; i++)
		if (g->colls[i].kind == GC_ALL_TO_ALL) {
			n++;
			assert_int_equal(g->colls[i].bytes, 8388608);
			assert_int_equal(g->colls[i].group_size, 4);
			/* Timed by the communication model (ns). */
			assert_true(llabs(g->dur_ns[g->colls[i].node] -
					  (int64_t)(e.time_s * 1e9 + 0.5)) <= 1);
		}
	assert_int_equal(n, 48);
	synth_out_release(&so);
	graph_free(g);
	in.lay.imbalance = 1.5;
	assert_rel_close(synth_moe_a2a_bytes(&in), 10485760.0, 1e-15);
	in.m.capacity_factor = 1.2;
	assert_rel_close(synth_moe_a2a_bytes(&in), 9227468.8, 1e-12);
	/* No expert parallelism, no all-to-all. */
	in.lay.ep = 1;
	assert_rel_close(synth_moe_a2a_bytes(&in), 0, 0);
}

/*
 * Memory of an EP layout: tp 1, dp 4, ep 4, ZeRO-1, bf16 (2 + 4 + 12
 * bytes per parameter).  An MoE layer on a GPU: its non-expert part
 * 32,522,240 - 8 x 3,145,728 = 7,356,416, its 2 experts 6,291,456.  The
 * stage: the dense layer, 3 x 7,356,416, the embedding and positions
 * 33,816,576, the final norm 2048: 72,678,400 sharded over dp = 4; the
 * experts 3 x 6,291,456 = 18,874,368 over the expert data-parallel group
 * tp dp / (ep etp) = 1.  Weights 2 x 91,552,768 = 183,105,536; gradients
 * 4 x that = 366,211,072; optimizer 12 x 72,678,400 / 4 + 12 x 18,874,368
 * = 444,527,616.  An MoE layer's activations (s b h = 2^20, flash, no
 * recomputation, t = 1): the dense layer's 34 s b h, less its FFN's 19,
 * plus the router's input and mask 3 n h = 3,145,728, its fp32 scores
 * 4 n E = 32,768, the M = 2048 routed tokens' inputs, FC1 outputs and
 * activations 2 M (h + 2 fe + fe) = 16,777,216, the shared expert's input
 * 2 n h and FC1 output and activation 2 s b (2 fe + fe): 8,388,608; in
 * all 44,072,960.
 */
static void test_moe_memory(void **state)
{
	struct synth_in in;
	struct mem_est me;
	struct layout l;
	(void)state;
	moe_small(&in);
	in.lay.ep = 4;
	in.lay.dp = 4;
	in.lay.zero = 1;
	synth_mem(&in, &me);
	assert_rel_close(me.params_per_gpu, 91552768.0, 1e-15);
	assert_rel_close(me.weights, 183105536.0, 1e-15);
	assert_rel_close(me.grads, 366211072.0, 1e-15);
	assert_rel_close(me.optimizer, 444527616.0, 1e-15);
	synth_mem_layout(&in, &l);
	assert_rel_close(mem_act_moe_layer(&in.m, &l), 44072960.0, 1e-15);
	/* Recompute modules on this MoE layer (n = 1024 tokens, h 1024, M =
	 * 1024 x 2 routed rows, experts' f 1024, FC1 2048): moe_act drops the
	 * routed activations, 2 M f = 4,194,304 bytes; shared_experts the
	 * shared expert's FC1 output and activation, 2 n (2048 + 1024) =
	 * 6,291,456; layernorm the pre-MLP norm's output, the router's and
	 * the shared expert's input, 4 n h = 4,194,304; moe all but the input
	 * and the mask (3 n h): 3 n h + 4 n E + 2 M (h + 2048 + 1024) + 2 n h
	 * + 6,291,456 = 28,344,320, less 3,145,728 = 25,198,592.  mlp is a
	 * dense layer's: nothing here. */
	l.recompute = LAYOUT_RECOMPUTE_SELECTIVE;
	l.recompute_modules = LAYOUT_RC_MOE_ACT | LAYOUT_RC_MLP;
	assert_rel_close(mem_act_moe_layer(&in.m, &l), 44072960.0 - 4194304, 1e-15);
	l.recompute_modules = LAYOUT_RC_SHARED | LAYOUT_RC_LAYERNORM;
	assert_rel_close(mem_act_moe_layer(&in.m, &l), 44072960.0 - 6291456 - 4194304, 1e-15);
	l.recompute_modules = LAYOUT_RC_MOE | LAYOUT_RC_MOE_ACT | LAYOUT_RC_SHARED;
	assert_rel_close(mem_act_moe_layer(&in.m, &l), 44072960.0 - 25198592, 1e-15);
	assert_int_equal(layout_edp(&l), 1);
	/* fp8 delayed (mem_act_gemm_in_bytes 1): the dense layer's 29 s b h
	 * less its FFN's 9 + 5 = 14 (test_activation_bytes_fp8), the router's
	 * 3 n h and 4 n E as before, the routed tokens' fp8 inputs and
	 * activations and bf16 FC1 outputs M (h + 2 x 2048 + 1024) =
	 * 12,582,912, the shared expert's bf16 input 2 n h (its FC1 keeps
	 * the norm's output) and 2 n 2048 + n 1024 = 5,242,880: 15,728,640 +
	 * 3,178,496 + 12,582,912 + 2,097,152 + 5,242,880 = 38,830,080. */
	l.recompute = LAYOUT_RECOMPUTE_NONE;
	l.recompute_modules = 0;
	l.dtype = HW_FP8;
	l.fp8_recipe = LAYOUT_FP8_DELAYED;
	l.flash = 1;
	assert_rel_close(mem_act_moe_layer(&in.m, &l), 38830080.0, 1e-15);
	/* moe_act then drops the routed fp8 activations, M f = 2,097,152. */
	l.recompute = LAYOUT_RECOMPUTE_SELECTIVE;
	l.recompute_modules = LAYOUT_RC_MOE_ACT;
	assert_rel_close(mem_act_moe_layer(&in.m, &l), 38830080.0 - 2097152, 1e-15);
	/* ep 2: twice the experts per GPU, their state sharded over 2. */
	in.lay.ep = 2;
	synth_mem(&in, &me);
	assert_rel_close(me.weights, 2 * (72678400.0 + 2 * 18874368.0), 1e-15);
	assert_rel_close(me.optimizer, 444527616.0, 1e-15);
}

/* The bound holds for MoE layouts too (all-to-alls left out of it), with
 * context parallelism and fp8 as well, on a wider model than the others'
 * (hidden 4096, seq 2048, expert ffn 4096). */
static void test_moe_lower_bound(void **state)
{
	/* tp, pp, dp, ep, etp, recompute, imbalance x 10, cp, fp8 */
	static const int layouts[][9] = {
	    {1, 1, 4, 4, 1, LAYOUT_RECOMPUTE_NONE, 10, 1, 0},
	    {2, 1, 4, 8, 1, LAYOUT_RECOMPUTE_FULL, 10, 1, 0},
	    {2, 2, 2, 2, 2, LAYOUT_RECOMPUTE_NONE, 20, 1, 0},
	    {1, 2, 8, 8, 1, LAYOUT_RECOMPUTE_SELECTIVE, 15, 1, 0},
	    {4, 1, 2, 4, 2, LAYOUT_RECOMPUTE_NONE, 10, 1, 0},
	    {2, 2, 2, 4, 2, LAYOUT_RECOMPUTE_FULL, 10, 2, 1},
	    {1, 1, 2, 8, 1, LAYOUT_RECOMPUTE_SELECTIVE, 12, 4, 0},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const int *x = layouts[i];
		struct synth_in in;
		struct predict_out p;
		struct prism_err err;
		double lb;
		moe_small(&in);
		in.lay.tp = x[0];
		in.lay.sp = x[0] > 1;
		in.lay.pp = x[1];
		in.lay.dp = x[2];
		in.lay.ep = x[3];
		in.lay.etp = x[4];
		in.lay.recompute = x[5];
		in.lay.imbalance = x[6] / 10.0;
		in.lay.cp = x[7];
		in.lay.dtype = x[8] ? HW_FP8 : HW_BF16;
		in.lay.microbatches = 4;
		/* Wide enough that the kernels, not the host, set the pace. */
		in.m.hidden = 4096;
		in.m.heads = 32;
		in.m.seq = 2048;
		in.m.expert_ffn = 4096;
		in.lay.mbs = 2;
		prism_err_clear(&err);
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		lb = synth_lower_bound(&in);
		print_message(
		    "moe layout %zu: bound %.3f ms, simulated %.3f ms, analytic %.3f ms\n", i,
		    lb * 1e3, p.iter_s * 1e3, predict_analytic(&in) * 1e3);
		assert_true(lb > 0.3 * p.iter_s);
		assert_true(lb <= p.iter_s);
		/* With multi-head latent attention (without a compressed q on
		 * odd layouts: Q straight from hidden, DeepSeek-V2-Lite's). */
		mla_dims(&in.m, i % 2 ? 0 : 1024, 512, 128, 64, 128);
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		lb = synth_lower_bound(&in);
		print_message("  mla: bound %.3f ms, simulated %.3f ms, analytic %.3f ms\n",
			      lb * 1e3, p.iter_s * 1e3, predict_analytic(&in) * 1e3);
		assert_true(lb > 0.3 * p.iter_s);
		assert_true(lb <= p.iter_s);
		/* Each dispatcher, the shared expert beside it where it can be
		 * (the bound leaves the side stream's work out). */
		in.lay.moe_dispatcher = (int)(i % 4);
		in.lay.moe_shared_overlap = in.lay.moe_dispatcher != LAYOUT_DISP_ALLGATHER;
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		lb = synth_lower_bound(&in);
		print_message("  %s%s: bound %.3f ms, simulated %.3f ms\n",
			      layout_dispatcher_name(in.lay.moe_dispatcher),
			      in.lay.moe_shared_overlap ? ", shared overlapped" : "", lb * 1e3,
			      p.iter_s * 1e3);
		assert_true(lb > 0.3 * p.iter_s);
		assert_true(lb <= p.iter_s);
		/* Every recompute module (moe's whole layer again, MLA's up
		 * projections, the dense layer's MLP). */
		bound_more(&in, lb);
	}
}

/* Shared experts beside the dispatcher (--moe-shared-overlap): their
 * kernels leave the stream of the router's, the step gets shorter, and
 * with the allgather dispatcher the layout is refused (Megatron-LM
 * overlaps them with alltoall and flex only). */
static void test_moe_shared_overlap(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct predict_out p0, p1;
	struct prism_err err;
	struct graph *g;
	uint32_t router = UINT32_MAX, shared = UINT32_MAX;
	(void)state;
	moe_small(&in);
	in.m.hidden = 4096;
	in.m.heads = 32;
	in.m.expert_ffn = 4096;
	in.lay.tp = 2;
	in.lay.sp = 1;
	in.lay.dp = 4;
	in.lay.ep = 8;
	in.lay.microbatches = 2;
	prism_err_clear(&err);
	assert_int_equal(predict_synth(&in, &p0, NULL, NULL, &err), 0);
	in.lay.moe_shared_overlap = 1;
	assert_int_equal(predict_synth(&in, &p1, NULL, NULL, &err), 0);
	print_message("shared experts overlapped: %.3f ms, serial %.3f ms\n", p1.iter_s * 1e3,
		      p0.iter_s * 1e3);
	assert_true(p1.iter_s < p0.iter_s);
	assert_true(synth_lower_bound(&in) <= p1.iter_s);
	g = build(&in, &so, &st);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		const char *name = strtab_get(&g->st, g->name[u]);
		if (g->kind[u] != GN_KERNEL || g->procs[g->proc[u]].rank != 0)
			continue;
		if (router == UINT32_MAX && strstr(name, "_router"))
			router = g->proc[u];
		if (shared == UINT32_MAX && strstr(name, "shared_fc1"))
			shared = g->proc[u];
	}
	assert_true(router != UINT32_MAX && shared != UINT32_MAX && router != shared);
	/* Beside the dispatcher Megatron turns FC1's own communication off
	 * (SharedExpertMLP: parallel_mode None): its input gradient is
	 * reduce-scattered after its weight gradient on the side stream, and
	 * its gathered input is kept (no re-gather).  Serial, FC1 is a TE
	 * column-parallel Linear: its saved shard gathered again beside its
	 * input gradient's GEMM, the gradient reduce-scattered beside its
	 * weight gradient's (b s h = 1024 x 4096 bf16, 8,388,608 bytes); 3
	 * MoE layers x 2 microbatches x the steps, rank 0. */
	for (int ov = 1; ov >= 0; ov--) {
		int steps = in.steps > 0 ? in.steps : 1, after_dx = 0, after_dw = 0, before_dx = 0;
		if (!ov) {
			synth_out_release(&so);
			graph_free(g);
			in.lay.moe_shared_overlap = 0;
			g = build(&in, &so, &st);
		}
		for (uint32_t v = 0; v < g->n_nodes; v++) {
			const char *a = strtab_get(&g->st, g->name[v]);
			if (g->kind[v] != GN_KERNEL || g->procs[g->proc[v]].rank != 0 ||
			    !strstr(a, "shared_fc1_d"))
				continue;
			for (uint32_t e = g->out_off[v]; e < g->out_off[v + 1]; e++) {
				uint32_t u = g->out_dst[e];
				if (g->coll[u] == UINT32_MAX ||
				    g->colls[g->coll[u]].bytes != 8388608)
					continue;
				if (g->colls[g->coll[u]].kind == GC_REDUCE_SCATTER) {
					after_dx += strstr(a, "_dx") && g->proc[u] != g->proc[v] &&
						    strstr(strtab_get(&g->st, g->name[v + 1]),
							   "shared_fc1_dw");
					after_dw += strstr(a, "_dw") && g->proc[u] == g->proc[v];
				}
			}
			/* the re-gather: waited for before the weight gradient */
			for (uint32_t e = 0; e < g->n_edges; e++)
				if (g->out_dst[e] == v && strstr(a, "_dw")) {
					uint32_t w = 0;
					while (w + 1 < g->n_nodes && g->out_off[w + 1] <= e)
						w++;
					before_dx += g->coll[w] != UINT32_MAX &&
						     g->colls[g->coll[w]].kind == GC_ALL_GATHER &&
						     g->colls[g->coll[w]].bytes == 8388608;
				}
		}
		print_message("shared FC1, overlap %d: reduce-scatters beside dw %d, after dw "
			      "%d; re-gathers before dw %d\n",
			      ov, after_dx, after_dw, before_dx);
		assert_int_equal(after_dx, ov ? 0 : 3 * 2 * steps);
		assert_int_equal(after_dw, ov ? 3 * 2 * steps : 0);
		assert_int_equal(before_dx, ov ? 0 : 3 * 2 * steps);
	}
	synth_out_release(&so);
	graph_free(g);
	in.lay.moe_shared_overlap = 1;
	in.lay.moe_dispatcher = LAYOUT_DISP_ALLGATHER;
	assert_int_equal(synth_check(&in, &err), PRISM_EARG);
	assert_non_null(strstr(err.msg, "moe_shared_overlap"));
}

/*
 * The 1F1B all-to-all overlap (moe_a2a_overlap; Megatron-LM's
 * --overlap-moe-expert-parallel-comm) by hand.  moe_small (4 layers: one
 * dense, then 3 MoE layers; the alltoall dispatcher) with ep 2 over dp 2,
 * pp 1, on an H100 whose NVLink has no latency, collectives at full bus
 * bandwidth, no host costs and no contention.  A third microbatch (3
 * against 2) adds one steady unit: without the overlap a forward and a
 * backward one after the other, with it the merged pair (the first
 * forward and the last backward run alone either way).  Each all-to-all
 * (A, read off the graph: 2,097,152 B of a rank's 4 MB over 2 ranks)
 * takes its place on the communication stream.
 *  - Hidden (450 and 300 GB/s: A of 4.7 or 7.0 us is shorter than the
 *    other microbatch's part beside it, its attention or experts): the
 *    merged pair costs exactly the 4 x 3 all-to-alls less than F + B
 *    (d_off - d_on = 12 A), and no more at the slower link (d_on the
 *    same).
 *  - Exposed (450/400 and 450/500 GB/s: A of 1.9 or 2.3 ms, longer than
 *    any part): each layer pair runs its all-to-alls back to back with
 *    the parts between them, so every microsecond of A shows: d_on grows
 *    12 (A2 - A1) between the two links, as d_off does; what the pair
 *    still saves is the compute that ran beside the all-to-alls, the same
 *    at both links, more than 0 and less than the unit's compute.
 * The graph: one more stream a rank, every all-to-all on it and nothing
 * else; in the order Megatron's TransformerLayerSchedulePlan.run issues
 * them (the combine's gradient, the dispatch, the dispatch's gradient,
 * the combine), each with its microbatch.
 */
static int64_t a2a_ns(const struct graph *g)
{
	int64_t a = -1;
	for (uint32_t c = 0; c < g->n_colls; c++)
		if (g->colls[c].kind == GC_ALL_TO_ALL) {
			int64_t d = g->dur_ns[g->colls[c].node];
			assert_true(a < 0 || a == d);
			a = d;
		}
	assert_true(a > 0);
	return a;
}

static int64_t a2a_iter_ns(struct synth_in *in, int m, int on, int64_t *a)
{
	struct synth_out so;
	struct settle_out st;
	struct predict_out p;
	struct prism_err err;
	struct graph *g;
	in->lay.microbatches = m;
	in->lay.moe_a2a_overlap = on;
	prism_err_clear(&err);
	assert_int_equal(predict_synth(in, &p, NULL, NULL, &err), 0);
	in->clock = analytic_step_clock(in); /* (as predict_synth builds it) */
	g = build(in, &so, &st);
	in->clock = 0;
	*a = a2a_ns(g);
	assert_true(st.iter_s == p.iter_s);
	synth_out_release(&so);
	graph_free(g);
	return llround(p.iter_s * 1e9);
}

static void test_moe_a2a_overlap(void **state)
{
	static const double bw[4] = {450e9, 300e9, 450e9 / 400, 450e9 / 500};
	struct hw_profile g = hw;
	struct synth_in in;
	int64_t d_on[4], d_off[4], A[4];
	(void)state;
	g.nvlink_lat_s = g.net_lat_s = g.coll_base_s = 0;
	g.nvl_eff = g.net_eff = 1;
	g.nvls_eff = 0;
	g.slow_compute = g.slow_comm = 0;
	moe_small(&in);
	in.hw = &g;
	in.lay.dp = 2;
	in.lay.ep = 2;
	in.comm_eff = 1;
	in.cpu_op_s = in.launch_s = in.event_s = in.gpu_lag_s = 0;
	for (int k = 0; k < 4; k++) {
		int64_t a;
		g.nvlink_Bps = bw[k];
		d_on[k] = a2a_iter_ns(&in, 3, 1, &A[k]) - a2a_iter_ns(&in, 2, 1, &a);
		assert_true(a == A[k]);
		d_off[k] = a2a_iter_ns(&in, 3, 0, &a) - a2a_iter_ns(&in, 2, 0, &a);
		assert_true(a == A[k]);
		print_message("link %.3g GB/s: all-to-all %.3f us, a steady unit %.3f us "
			      "overlapped, %.3f us not\n",
			      bw[k] / 1e9, A[k] / 1e3, d_on[k] / 1e3, d_off[k] / 1e3);
	}
	/* Hidden: the pair costs F + B less its 12 all-to-alls. */
	assert_true(fabs((double)A[0] - 2097152 * 1e9 / 450e9) <= 1);
	assert_int_equal(d_off[0] - d_on[0], 12 * A[0]);
	assert_int_equal(d_off[1] - d_on[1], 12 * A[1]);
	assert_int_equal(d_on[1], d_on[0]);
	/* Exposed: every all-to-all on the pair's path. */
	assert_int_equal(d_on[3] - d_on[2], 12 * (A[3] - A[2]));
	assert_int_equal(d_off[3] - d_off[2], 12 * (A[3] - A[2]));
	assert_int_equal(d_off[2] - d_on[2], d_off[3] - d_on[3]);
	assert_true(d_off[2] - d_on[2] > 0);
	assert_true(d_off[2] - d_on[2] < d_off[0] - 12 * A[0]);
	/* The graph: the stream, its all-to-alls and their order. */
	{
		struct synth_out so;
		struct settle_out st;
		struct graph *gr;
		uint32_t procs[2], a2a = UINT32_MAX;
		/* (phase, layer, microbatch) of each all-to-all of step 0 on
		 * rank 0: F0 alone, the pairs (F1, B0) and (F2, B1), B2 alone. */
		int want[3 * 4 * 3 * 2][3], n = 0, got = 0;
#define W(ph, l, mb)                                                                               \
	do {                                                                                       \
		want[n][0] = ph, want[n][1] = l, want[n][2] = mb;                                  \
		n++;                                                                               \
	} while (0)
		for (int l = 1; l <= 3; l++) {
			W(PH_FORWARD, l, 0);
			W(PH_FORWARD, l, 0);
		}
		for (int p = 0; p < 2; p++) {
			W(PH_BACKWARD, 3, p);
			W(PH_BACKWARD, 3, p);
			for (int l = 1; l <= 2; l++) {
				W(PH_BACKWARD, 3 - l, p);
				W(PH_FORWARD, l, p + 1);
				W(PH_BACKWARD, 3 - l, p);
				W(PH_FORWARD, l, p + 1);
			}
			W(PH_FORWARD, 3, p + 1);
			W(PH_FORWARD, 3, p + 1);
		}
		for (int l = 3; l >= 1; l--) {
			W(PH_BACKWARD, l, 2);
			W(PH_BACKWARD, l, 2);
		}
#undef W
		g.nvlink_Bps = 450e9;
		in.lay.microbatches = 3;
		for (int on = 0; on < 2; on++) {
			in.lay.moe_a2a_overlap = on;
			gr = build(&in, &so, &st);
			procs[on] = gr->n_procs;
			if (on) {
				for (uint32_t c = 0; c < gr->n_colls; c++) {
					uint32_t u = gr->colls[c].node;
					if (gr->colls[c].kind != GC_ALL_TO_ALL ||
					    gr->procs[gr->proc[u]].rank != 0)
						continue;
					if (a2a == UINT32_MAX)
						a2a = gr->proc[u];
					assert_int_equal(gr->proc[u], a2a);
				}
				assert_true(a2a != so.compute[0]);
				for (uint32_t u = gr->procs[a2a].first;
				     u < gr->procs[a2a].first + gr->procs[a2a].n; u++) {
					assert_int_equal(gr->kind[u], GN_COLL);
					if (gr->iter[u] != 0)
						continue;
					assert_true(got < n);
					assert_int_equal(gr->phase[u], want[got][0]);
					assert_int_equal(gr->layer[u], want[got][1]);
					assert_int_equal(gr->mb[u], want[got][2]);
					got++;
				}
				assert_int_equal(got, n);
			}
			synth_out_release(&so);
			graph_free(gr);
		}
		assert_int_equal(procs[1], procs[0] + 1); /* pp 1: one rank simulated */
	}
}

/* The overlap's memory (mem_stage) and its estimates.  With pp 1 the
 * stage holds one microbatch either way (the first forward alone, then
 * pairs), and in a merged pair the forward's layer being made beside the
 * backward's not yet freed: exactly one MoE layer's activations more.
 * Interleaved the same: its extra warm-up forward holds what a steady
 * forward held before its backward freed a chunk (the walk's peak
 * without the overlap), and the pair one layer more.  The lower bound stays below the simulated step; the analytic estimate
 * moves by the all-to-alls it hides. */
static void test_moe_a2a_overlap_memory(void **state)
{
	struct synth_in in;
	struct layout l;
	struct mem_stage a, b;
	struct predict_out p;
	struct prism_err err;
	(void)state;
	moe_small(&in);
	in.lay.dp = 2;
	in.lay.ep = 2;
	in.lay.microbatches = 4;
	synth_mem_layout(&in, &l);
	mem_stage(&in.m, &l, in.hw, 0, &a);
	l.moe_a2a_overlap = 1;
	mem_stage(&in.m, &l, in.hw, 0, &b);
	print_message("pp 1: activations %.0f B, overlapped %.0f B (an MoE layer %.0f B)\n",
		      a.activations, b.activations, mem_act_moe_layer(&in.m, &l));
	assert_true(b.activations - a.activations == mem_act_moe_layer(&in.m, &l));
	assert_true(b.inflight == a.inflight);
	/* Interleaved: pp 2, vp 2, 4 layers a stage, 2 a chunk. */
	in.lay.pp = 2;
	in.lay.vp = 2;
	in.lay.schedule = LAYOUT_INTERLEAVED;
	in.m.layers = 8;
	synth_mem_layout(&in, &l);
	mem_stage(&in.m, &l, in.hw, 0, &a);
	l.moe_a2a_overlap = 1;
	mem_stage(&in.m, &l, in.hw, 0, &b);
	print_message("interleaved: activations %.0f B, overlapped %.0f B\n", a.activations,
		      b.activations);
	assert_true(b.activations - a.activations == mem_act_moe_layer(&in.m, &l));
	/* The bound below the simulated step; the estimate no slower. */
	in.lay.moe_a2a_overlap = 1;
	prism_err_clear(&err);
	assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
	assert_true(synth_lower_bound(&in) <= p.iter_s);
	{
		struct analytic_in ai;
		struct analytic_out o0, o1;
		analytic_in_default(&ai);
		ai.m = in.m;
		/* Sequences 4x longer: at the small model's own the step is
		 * host-bound (the device floors of the small kernels), and
		 * hidden all-to-alls could not show. */
		ai.m.seq *= 4;
		ai.hw = in.hw;
		ai.lay = in.lay;
		ai.global_batch = in.lay.microbatches * in.lay.dp;
		ai.lay.moe_a2a_overlap = 0;
		assert_int_equal(analytic_estimate(&ai, &o0, &err), 0);
		ai.lay.moe_a2a_overlap = 1;
		assert_int_equal(analytic_estimate(&ai, &o1, &err), 0);
		print_message("estimate %.3f ms, overlapped %.3f ms\n", o0.t_iter * 1e3,
			      o1.t_iter * 1e3);
		assert_true(o1.t_iter < o0.t_iter);
	}
}

/* DualPipeV's overlapped F&B pairs with expert parallelism
 * (layout_a2a_overlap, torchtitan's default) run as merged units: the
 * small MoE model (layer 0 dense, 1-3 MoE) on pp 2, its V placing layers
 * 0 and 3 on stage 0, 1 and 2 on stage 1; 8 microbatches.  PyTorch's
 * ScheduleDualPipeV pairs 2 (m - 2p + s + 1) forwards with a whole
 * backward in its main step (the last stage's first F0 B1 apart) and p -
 * s - 1 in the next: 11 pairs on each stage.  Only the pairs' all-to-alls
 * take the communication stream: on stage 1 four a pair (each chunk one
 * MoE layer, dispatch and combine), on stage 0 two (one chunk dense).
 * Under recomputation (torchtitan refuses its overlap with activation
 * checkpointing) no stream is added. */
static void test_dpv_a2a_overlap(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	uint32_t procs;
	int per_rank[2] = {0, 0}, off[2] = {0, 0};
	(void)state;
	moe_small(&in);
	in.lay.pp = 2;
	in.lay.dp = 2;
	in.lay.ep = 2;
	in.lay.schedule = LAYOUT_DUALPIPEV;
	in.lay.microbatches = 8;
	in.steps = 1;
	assert_true(layout_a2a_overlap(&in.m, &in.lay));
	g = build(&in, &so, &st);
	procs = g->n_procs;
	for (uint32_t c = 0; c < g->n_colls; c++) {
		uint32_t u = g->colls[c].node, r = g->procs[g->proc[u]].rank;
		if (g->colls[c].kind != GC_ALL_TO_ALL)
			continue;
		if (g->procs[g->proc[u]].tid == 31)
			per_rank[r]++;
		else
			off[r]++;
	}
	print_message("all-to-alls on the communication stream: %d, %d (beside: %d, %d)\n",
		      per_rank[0], per_rank[1], off[0], off[1]);
	assert_int_equal(per_rank[0], 11 * 2);
	assert_int_equal(per_rank[1], 11 * 4);
	/* Every microbatch's: stage 0 one MoE layer, stage 1 two, four
	 * all-to-alls each a pass. */
	assert_int_equal(per_rank[0] + off[0], 8 * 1 * 4);
	assert_int_equal(per_rank[1] + off[1], 8 * 2 * 4);
	synth_out_release(&so);
	graph_free(g);
	in.lay.recompute = LAYOUT_RECOMPUTE_SELECTIVE;
	assert_false(layout_a2a_overlap(&in.m, &in.lay));
	g = build(&in, &so, &st);
	assert_int_equal(g->n_procs, procs - 2);
	synth_out_release(&so);
	graph_free(g);
}

/* What Megatron-LM refuses with --overlap-moe-expert-parallel-comm
 * (transformer_config.py __post_init__), and what prism does not model
 * with it: each refused with the knob's name and why. */
static void test_moe_a2a_overlap_refused(void **state)
{
	static const struct {
		int pp, vp, sched, ep, disp, rec, rc, dtype, shared_ov, mtp, exec, offload;
		const char *msg;
	} cases[] = {
	    {2, 1, LAYOUT_1F1B, 2, 0, 0, 0, HW_BF16, 0, 0, 0, 0, "needs the interleaved schedule"},
	    {1, 1, LAYOUT_GPIPE, 2, 0, 0, 0, HW_BF16, 0, 0, 0, 0, "combined 1F1B"},
	    {1, 1, LAYOUT_1F1B, 1, 0, 0, 0, HW_BF16, 0, 0, 0, 0, "needs expert parallelism"},
	    {1, 1, LAYOUT_1F1B, 2, LAYOUT_DISP_ALLGATHER, 0, 0, HW_BF16, 0, 0, 0, 0,
	     "allgather dispatcher"},
	    {1, 1, LAYOUT_1F1B, 2, 0, LAYOUT_RECOMPUTE_FULL, 0, HW_BF16, 0, 0, 0, 0,
	     "full recomputation"},
	    {1, 1, LAYOUT_1F1B, 2, 0, LAYOUT_RECOMPUTE_SELECTIVE, LAYOUT_RC_MOE, HW_BF16, 0, 0, 0,
	     0, "moe in the recomputed modules"},
	    {1, 1, LAYOUT_1F1B, 2, 0, 0, 0, HW_FP32, 0, 0, 0, 0, "fp32 model"},
	    {1, 1, LAYOUT_1F1B, 2, 0, 0, 0, HW_BF16, 1, 0, 0, 0, "moe_shared_overlap"},
	    {1, 1, LAYOUT_1F1B, 2, 0, 0, 0, HW_BF16, 0, 2, 0, 0, "more than one MTP layer"},
	    {1, 1, LAYOUT_1F1B, 2, 0, 0, 0, HW_BF16, 0, 0, LAYOUT_EXEC_GRAPHS, 0, "CUDA graphs"},
	    {1, 1, LAYOUT_1F1B, 2, 0, 0, 0, HW_BF16, 0, 0, LAYOUT_EXEC_COMPILED, 0,
	     "torch.compile"},
	    {1, 1, LAYOUT_1F1B, 2, 0, 0, 0, HW_BF16, 0, 0, 0, 1, "activation offloading"},
	};
	struct synth_in in;
	struct prism_err err;
	(void)state;
	/* What it takes: pp 1 with 1F1B, or interleaved; one MTP layer. */
	moe_small(&in);
	in.lay.dp = 2;
	in.lay.ep = 2;
	in.lay.moe_a2a_overlap = 1;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), 0);
	in.m.mtp_layers = 1;
	assert_int_equal(synth_check(&in, &err), 0);
	in.m.mtp_layers = 0;
	in.lay.pp = 2;
	in.lay.vp = 2;
	in.lay.schedule = LAYOUT_INTERLEAVED;
	in.lay.microbatches = 4;
	assert_int_equal(synth_check(&in, &err), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		moe_small(&in);
		in.lay.dp = 2;
		in.lay.moe_a2a_overlap = 1;
		in.lay.pp = cases[i].pp;
		in.lay.vp = cases[i].vp;
		in.lay.schedule = cases[i].sched;
		in.lay.ep = cases[i].ep;
		in.lay.moe_dispatcher = cases[i].disp;
		in.lay.recompute = cases[i].rec;
		in.lay.recompute_modules = cases[i].rc;
		in.lay.dtype = cases[i].dtype;
		in.lay.moe_shared_overlap = cases[i].shared_ov;
		in.m.mtp_layers = cases[i].mtp;
		in.lay.exec = cases[i].exec;
		in.lay.offload_layers = cases[i].offload;
		prism_err_clear(&err);
		assert_int_equal(synth_check(&in, &err), PRISM_EARG);
		print_message("refused: %s\n", err.msg);
		assert_non_null(strstr(err.msg, "moe_a2a_overlap"));
		assert_non_null(strstr(err.msg, cases[i].msg));
	}
	/* A dense model has no all-to-all to overlap. */
	small(&in);
	in.lay.moe_a2a_overlap = 1;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), PRISM_EARG);
	print_message("refused: %s\n", err.msg);
	assert_non_null(strstr(err.msg, "mixture-of-experts"));
}

/* A model file of head and a bad setting. */
struct bad_model {
	const char *text, *msg;
};

/* Each of bad[0..n) after head fails to load with the file's name and its
 * message. */
static void load_errors(const char *head, const struct bad_model *bad, size_t n)
{
	char path[] = "/tmp/prism_model_XXXXXX";
	struct llm m;
	struct prism_err err;
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	for (size_t i = 0; i < n; i++) {
		char want[256];
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fprintf(f, "%s%s", head, bad[i].text);
		fclose(f);
		prism_err_clear(&err);
		assert_int_equal(llm_load(path, &m, &err), PRISM_EFORMAT);
		snprintf(want, sizeof(want), "%s%s", path, bad[i].msg);
		assert_string_equal(err.msg, want);
	}
	unlink(path);
}

/* DeepSeek-V3 (its model file) cut to its first layer, a dense one
 * (hidden 7168, 128 heads, SwiGLU ffn 18432, one sequence of 4096). */
static void mla_layer(struct synth_in *in)
{
	struct prism_err err;
	small(in);
	prism_err_clear(&err);
	assert_int_equal(llm_load(PRISM_SOURCE_DIR "/configs/models/deepseek-v3.cfg", &in->m, &err),
			 0);
	in->m.layers = 1;
	in->m.experts = 0;
	in->m.mtp_layers = 0;
}

/* Rank 0's GEMMs (names with `only` in them, NULL: all) and collectives
 * of layer 0, microbatch 0, in one phase of its first step, in launch
 * order: "[[M, K], [K, N]];..." and "AG 524288;..." (AR, RS, AG). */
static void layer_work(const struct graph *g, int phase, const char *only, char *gemms, size_t n,
		       char *colls, size_t nc)
{
	size_t o = 0, oc = 0;
	int32_t it = -1;
	gemms[0] = colls[0] = '\0';
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		const char *name = strtab_get(&g->st, g->name[u]);
		if (g->kind[u] < GN_KERNEL || g->procs[g->proc[u]].rank != 0 || g->layer[u] != 0 ||
		    g->mb[u] != 0 || g->phase[u] != phase || (it >= 0 && g->iter[u] != it))
			continue;
		it = g->iter[u];
		if (g->coll[u] != UINT32_MAX) {
			const struct graph_coll *c = &g->colls[g->coll[u]];
			oc += (size_t)snprintf(colls + oc, nc - oc, "%s%s %lld", oc ? ";" : "",
					       c->kind == GC_ALL_GATHER	      ? "AG"
					       : c->kind == GC_REDUCE_SCATTER ? "RS"
									      : "AR",
					       (long long)c->bytes);
		} else if (strstr(name, "gemm") && (!only || strstr(name, only))) {
			o += (size_t)snprintf(gemms + o, n - o, "%s%s", o ? ";" : "",
					      strtab_get(&g->st, g->op_dims[u]));
		}
		assert_true(o < n && oc < nc);
	}
}

/*
 * One MLA layer as synth builds it (layer.c's mla_fwd, mla_bwd; Megatron-
 * LM's MLASelfAttention), DeepSeek-V3's dims by hand.  tp 1: q down 4096
 * tokens x 7168 -> 1536, kv down 7168 -> 512 + 64, q up 1536 -> 128 x 192
 * = 24576, kv up 512 -> 128 x (128 + 128) = 32768, the projection 128 x
 * 128 = 16384 -> 7168, then the FFN (7168 -> 2 x 18432, 18432 -> 7168).
 * tp 8 with sequence parallelism: the down projections whole on the
 * rank's 4096 / 8 = 512 tokens, the up projections to 24576 / 8 and 32768
 * / 8, the projection from 2048; the FFN from 4608 and 2304.  Its
 * collectives forward: RoPE's key all-gathered (4096 x 64 x 2 = 524,288
 * bytes), the compressed q's (12,582,912) and kv's (4,194,304), the
 * projection's reduce-scatter (4096 x 7168 x 2 = 58,720,256), the FFN's
 * all-gather and reduce-scatter; backward FC2's and the projection's
 * output gradients gathered and RoPE's key's gradient reduce-scattered on
 * the compute stream, and the inputs of FC1 and of the up projections (TE
 * column-parallel linears that gather their own inputs,
 * multi_latent_attention.py) gathered again for their weight gradients
 * and their input gradients reduce-scattered beside those, on the
 * communication stream, listed last: FC1's 58,720,256 bytes, kv up's
 * 4,194,304, q up's 12,582,912.  tp 2 without sequence parallelism: the
 * projection's and the FFN's all-reduces forward; backward FC1's input
 * gradient all-reduced, then the compressed kv's and q's (the down
 * projections, whole on every rank, run on all 4096 tokens), each beside
 * its Linear's weight gradient.
 * The kernels' FLOPs, summed over the ranks, are llm_flops_iter's with
 * sequence parallelism and exceed it by the copies' without.
 */
static void test_mla_layer(void **state)
{
	static const char *const fwd1 =
	    "[[4096, 7168], [7168, 1536]];[[4096, 7168], [7168, 576]];"
	    "[[4096, 1536], [1536, 24576]];[[4096, 512], [512, 32768]];"
	    "[[4096, 16384], [16384, 7168]];[[4096, 7168], [7168, 36864]];"
	    "[[4096, 18432], [18432, 7168]]";
	static const char *const fwd8 = "[[512, 7168], [7168, 1536]];[[512, 7168], [7168, 576]];"
					"[[4096, 1536], [1536, 3072]];[[4096, 512], [512, 4096]];"
					"[[4096, 2048], [2048, 7168]];[[4096, 7168], [7168, 4608]];"
					"[[4096, 2304], [2304, 7168]]";
	/* input gradient [[m, n], [n, k]] and weight gradient [[k, m], [m, n]]
	 * of each: kv up, q up, kv down, q down */
	static const char *const bwd8 = "[[4096, 4096], [4096, 512]];[[512, 4096], [4096, 4096]];"
					"[[4096, 3072], [3072, 1536]];[[1536, 4096], [4096, 3072]];"
					"[[512, 576], [576, 7168]];[[7168, 512], [512, 576]];"
					"[[512, 1536], [1536, 7168]];[[7168, 512], [512, 1536]]";
	static const struct {
		int tp, sp;
		const char *fwd, *colls_f, *colls_b;
	} runs[] = {
	    {1, 0, fwd1, "", ""},
	    /* Backward, the compute stream's first (the FC2's and the
	     * projection's output gradients gathered, RoPE's key's gradient
	     * reduce-scattered), then the tensor-parallel stream's: each
	     * column-parallel Linear's input shard gathered again beside its
	     * input gradient's GEMM and that gradient reduce-scattered beside
	     * its weight gradient's (FC1's, then the kv and q up
	     * projections', 4096 x 512 and 4096 x 1536 bf16 values); without
	     * sequence parallelism the same three all-reduced there. */
	    {8, 1, fwd8, "AG 524288;AG 12582912;AG 4194304;RS 58720256;AG 58720256;RS 58720256",
	     "AG 58720256;AG 58720256;RS 524288;AG 58720256;RS 58720256;AG 4194304;RS 4194304;"
	     "AG 12582912;RS 12582912"},
	    {2, 0, NULL, "AR 58720256;AR 58720256", "AR 58720256;AR 4194304;AR 12582912"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		char gemms[2048], colls[512];
		mla_layer(&in);
		in.lay.tp = runs[i].tp;
		in.lay.sp = runs[i].sp;
		g = build(&in, &so, &st);
		layer_work(g, PH_FORWARD, NULL, gemms, sizeof(gemms), colls, sizeof(colls));
		if (runs[i].fwd)
			assert_string_equal(gemms, runs[i].fwd);
		assert_string_equal(colls, runs[i].colls_f);
		layer_work(g, PH_BACKWARD, "_up_", gemms, sizeof(gemms), colls, sizeof(colls));
		assert_string_equal(colls, runs[i].colls_b);
		if (runs[i].tp == 8) {
			char down[1024];
			int seen = 0;
			/* The flash op records Q, K [.., 192] and V [.., 128]; a
			 * reader times it at their mean (cost_attn_shape). */
			for (uint32_t u = 0; u < g->n_nodes; u++) {
				double b, heads, sq, skv, d;
				int pass;
				if (g->kind[u] != GN_KERNEL || g->layer[u] != 0 ||
				    !cost_attn_shape(g, u, &b, &heads, &sq, &skv, &d, &pass))
					continue;
				assert_true(heads == 16 && sq == 4096 && skv == 4096 && d == 160);
				seen |= 1 << pass;
			}
			assert_int_equal(seen, 3);
			layer_work(g, PH_BACKWARD, "_down_", down, sizeof(down), colls,
				   sizeof(colls));
			assert_true(strlen(gemms) + strlen(down) + 2 < sizeof(gemms));
			strcat(gemms, ";");
			strcat(gemms, down);
			assert_string_equal(gemms, bwd8);
		}
		if (runs[i].sp || runs[i].tp == 1)
			assert_rel_close(so.flops * in.lay.tp, llm_flops_iter(&in.m, 1, 0), 1e-12);
		else /* the down projections' copies: 2 x 3 x 4096 x 15,138,816 */
			assert_rel_close(so.flops * in.lay.tp - llm_flops_iter(&in.m, 1, 0),
					 (in.lay.tp - 1) * 6 * 4096 * 15138816.0, 1e-12);
		synth_out_release(&so);
		graph_free(g);
	}
}

/* MLA's settings in a model file, what the layout refuses with it, and its
 * fields in the run description. */
static void test_mla_load(void **state)
{
	static const struct bad_model bad[] = {
	    {"q_lora_rank = 64;\n", ":7: 'q_lora_rank' needs 'kv_lora_rank' (1..1048576)"},
	    {"kv_lora_rank = 64;\n", ":7: 'kv_lora_rank' needs 'v_head_dim' (1..4096)"},
	    {"kv_lora_rank = 64;\nv_head_dim = 64;\n",
	     ":7: 'kv_lora_rank' needs a query-key head: 'qk_nope_head_dim' + "
	     "'qk_rope_head_dim' of at least 1"},
	    {"kv_lora_rank = 64;\nv_head_dim = 64;\nqk_nope_head_dim = 64;\nhead_dim = 64;\n",
	     ":10: 'head_dim' does not apply to multi-head latent attention (its heads are "
	     "qk_nope_head_dim + qk_rope_head_dim and v_head_dim wide)"},
	    {"kv_lora_rank = 64;\nv_head_dim = 64;\nqk_nope_head_dim = 64;\nkv_heads = 4;\n",
	     ":10: 'kv_heads' 4: multi-head latent attention gives every head its own key and "
	     "value (kv_heads is heads, 16)"},
	};
	static const char head[] = "name = \"m\";\nlayers = 4;\nhidden = 1000;\nheads = 16;\n"
				   "seq = 1024;\nvocab = 32000;\n";
	char s[1024];
	struct synth_in a, b;
	struct predict_out p;
	struct prism_err err;
	(void)state;
	load_errors(head, bad, sizeof(bad) / sizeof(bad[0]));
	/* The run description carries MLA's fields and reads them back. */
	mla_layer(&a);
	a.lay.tp = 8;
	a.lay.sp = 1;
	synth_meta(&a, s, sizeof(s));
	assert_non_null(strstr(s, ";q_lora_rank=1536;kv_lora_rank=512;qk_nope_head_dim=128;"
				  "qk_rope_head_dim=64;v_head_dim=128"));
	synth_in_default(&b);
	prism_err_clear(&err);
	assert_int_equal(synth_meta_parse(s, &b, &err), 0);
	assert_true(b.m.q_lora_rank == 1536 && b.m.kv_lora_rank == 512 &&
		    b.m.qk_nope_head_dim == 128 && b.m.qk_rope_head_dim == 64 &&
		    b.m.v_head_dim == 128);
	/* Megatron-LM turns TP overlap off with MLA; head_dim means nothing. */
	a.lay.tp_overlap = 1;
	assert_int_equal(predict_synth(&a, &p, NULL, NULL, &err), PRISM_EARG);
	assert_non_null(strstr(err.msg, "tensor-parallel overlap with multi-head latent"));
	a.lay.tp_overlap = 0;
	a.m.head_dim = 64;
	prism_err_clear(&err);
	assert_int_equal(predict_synth(&a, &p, NULL, NULL, &err), PRISM_EARG);
	assert_string_equal(err.msg, "model: head_dim 64 does not apply to multi-head latent "
				     "attention (its heads are qk_nope_head_dim + qk_rope_head_dim "
				     "and v_head_dim wide)");
}

/* The MoE rules, and a dense model's unchanged description. */
static void test_moe_rules(void **state)
{
	static const struct {
		int tp, dp, ep, etp, sp, zero;
		const char *msg;
	} bad[] = {
	    {1, 3, 3, 1, 0, 0, "layout: experts 8 must be divisible by ep 3"},
	    {1, 2, 4, 1, 0, 0,
	     "layout: ep 4 x etp 1 must divide tp 1 x dp 2 (the experts' ranks are a stage's "
	     "tensor- and data-parallel ranks, Megatron-LM's MoE parallel folding)"},
	    {2, 2, 2, 1, 0, 0,
	     "layout: mixture-of-experts with tp 2 needs sequence parallelism (as Megatron-LM "
	     "requires)"},
	    {1, 4, 4, 1, 0, 3,
	     "layout: ZeRO-3 and hybrid sharding are not modelled with experts (ZeRO-1/2 are)"},
	    {1, 4, 1, 3, 0, 0, "layout: expert_ffn 1024 must be divisible by etp 3"},
	};
	struct synth_in in, b;
	struct prism_err err;
	char s[1024];
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		moe_small(&in);
		in.lay.tp = bad[i].tp;
		in.lay.dp = bad[i].dp;
		in.lay.ep = bad[i].ep;
		in.lay.etp = bad[i].etp;
		in.lay.sp = bad[i].sp;
		in.lay.zero = bad[i].zero;
		prism_err_clear(&err);
		assert_int_equal(synth_check(&in, &err), PRISM_EARG);
		assert_string_equal(err.msg, bad[i].msg);
	}
	small(&in);
	in.lay.ep = 2;
	in.lay.dp = 2;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), PRISM_EARG);
	assert_string_equal(err.msg,
			    "layout: ep 2 / etp 1 need a mixture-of-experts model (experts)");
	/* The description carries the experts and the expert layout. */
	moe_small(&in);
	in.m.router = LLM_ROUTER_SIGMOID;
	in.m.capacity_factor = 1.25;
	in.lay.ep = 4;
	in.lay.etp = 2;
	in.lay.tp = 2;
	in.lay.sp = 1;
	in.lay.dp = 4;
	in.lay.imbalance = 1.5;
	synth_meta(&in, s, sizeof(s));
	assert_non_null(strstr(s, ";experts=8;top_k=2;shared_experts=1;expert_ffn=1024;"
				  "first_dense=1;capacity_factor=1.25;router=sigmoid;ep=4;etp=2;"
				  "imbalance=1.5"));
	synth_in_default(&b);
	prism_err_clear(&err);
	assert_int_equal(synth_meta_parse(s, &b, &err), 0);
	assert_memory_equal(&in.m, &b.m, sizeof(in.m));
	assert_memory_equal(&in.lay, &b.lay, sizeof(in.lay));
}

/* Rank 0's kernels and collectives of layer `layer`, microbatch 0, in
 * one phase of its first step, from the router's GEMM (names with "moe",
 * "router" or "grouped" in them): "name dims" (a memory-bound kernel's
 * dims are its bytes / 4; a GEMM's its operands) and "AG|RS|A2A bytes/n"
 * in launch order, ';' between. */
static void moe_work(const struct graph *g, int layer, int phase, char *out, size_t n)
{
	size_t o = 0;
	int32_t it = -1;
	out[0] = '\0';
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		const char *name = strtab_get(&g->st, g->name[u]);
		if (g->kind[u] < GN_KERNEL || g->procs[g->proc[u]].rank != 0 ||
		    g->layer[u] != layer || g->mb[u] != 0 || g->phase[u] != phase ||
		    (it >= 0 && g->iter[u] != it))
			continue;
		it = g->iter[u];
		if (g->coll[u] != UINT32_MAX) {
			const struct graph_coll *c = &g->colls[g->coll[u]];
			if (c->kind != GC_ALL_TO_ALL && c->group_size == 1)
				continue;
			o += (size_t)snprintf(out + o, n - o, "%s%s %lld/%d", o ? ";" : "",
					      c->kind == GC_ALL_GATHER	     ? "AG"
					      : c->kind == GC_REDUCE_SCATTER ? "RS"
					      : c->kind == GC_ALL_TO_ALL     ? "A2A"
									     : "AR",
					      (long long)c->bytes, (int)c->group_size);
		} else if (strstr(name, "moe") || strstr(name, "router") ||
			   strstr(name, "grouped")) {
			o += (size_t)snprintf(out + o, n - o, "%s%s %s", o ? ";" : "", name,
					      strtab_get(&g->st, g->op_dims[u]));
		}
		assert_true(o < n);
	}
}

/*
 * Each dispatcher's kernels and bytes, the small MoE model by hand (h
 * 1024, 8 experts, top 2, expert ffn 1024, SwiGLU, 1 shared expert), b 2,
 * s 1024, tp 1, ep 4, dp 4: n = 2048 tokens a rank, 2 local experts, M =
 * n k = 4096 routed copies (balanced), nE = 16384 router entries, nk =
 * 4096.  The router (all dispatchers): its GEMM 2048 x 1024 x 8; the
 * softmax 8 nE = 131,072 bytes (dims 32768: bytes / 4); the top-k 4 nE +
 * 12 nk = 114,688; the dense probabilities and map 5 nE + 12 nk =
 * 131,072; the load-balancing loss's scores 8 nE and sums 5 nE = 81,920.
 * The experts: fc1 grouped [2 x 2048 x 1024] x [1024 x 2048], fc2 to
 * 1024.
 *  - alltoall: the source's permute of n tokens (map transposed 2 nE =
 *    32,768; indices 9 nE + 8 nk = 180,224; probabilities 13 nE + 4 nk =
 *    229,376; the copies 2 nk 2h + 8 nk = 16,809,984); the all-to-all of
 *    M h 2 = 8,388,608 bytes over 4; the chunks sorted by expert (2
 *    local, ep 4): 4 M h = 16,777,216; combine: sorted back, the
 *    all-to-all, unpermute (weighted copies 2 nk 2h + 4 nk = 16,793,600;
 *    the n rows zeroed 4,194,304; scatter-add nk 2h + 8 nk + 2 n 2h =
 *    16,809,984).
 *  - allgather: the routing map and probabilities all-gathered, 5 n E x
 *    4 = 327,680 bytes, the tokens 2 n h x 4 = 16,777,216; the 8192
 *    gathered rows permuted for the 2 local experts (a map of 16,384, 4096
 *    copies: the same bytes as alltoall's permute); combine: unpermute
 *    into 8192 rows (zeroed 16,777,216; scatter-add 8,388,608 + 32,768 +
 *    33,554,432 = 41,975,808), reduce-scatter 16,777,216.
 *  - flex (DeepEP): a token goes once to each rank holding one of its
 *    experts, 4 (1 - C(6,2)/C(8,2)) = 13/7 ranks of its 2 copies: the
 *    all-to-all sends 8,388,608 x 13/14 = 7,789,421.7 bytes (the graph
 *    keeps whole bytes); the R = 3803.43 received rows permuted into the
 *    4096 copies (a map of 2 R: 15,213.7, 101,229.7 and 115,273.1 bytes
 *    of index passes), unpermuted into R rows (zeroed 7,789,421.7;
 *    scatter-add 8,388,608 + 32,768 + 15,578,843.4).
 *  - hybridep: flex's all-to-all, the permutes fused into it.
 * And across NVLink domains (16 experts, ep 16 over two 8-GPU nodes, 1
 * expert a rank): a token's 2 copies go to 16 (1 - 15/16 x 14/15) = 2
 * ranks (no saving with one expert a rank), but flex's and hybridep's
 * cross the domains once a token and domain, 2 (1 - 8/16 x 7/15) = 1.5333
 * of 2: 6,431,266.1 bytes; alltoall sends all 8,388,608.
 */
static void test_moe_dispatchers(void **state)
{
	static const char *router =
	    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_router [[2048, 1024], [1024, 8]];"
	    "moe_router_softmax [[32768]];moe_router_topk [[28672]];"
	    "moe_router_scatter_probs_map [[32768]];moe_aux_loss_scores [[32768]];"
	    "moe_aux_loss_sums [[20480]];";
	static const char *permute =
	    "moe_permute_map_transpose [[8192]];moe_permute_masked_select_indices [[45056]];"
	    "moe_permute_probs_select [[57344]];moe_permute_index_select [[4202496]];";
	static const char *experts =
	    "cutlass_grouped_gemm_bf16_fc1 [[2, 2048, 1024], [2, 1024, 2048]];"
	    "cutlass_grouped_gemm_bf16_fc2 [[2, 2048, 1024], [2, 1024, 1024]];";
	const char *want[4][3] = {
	    {"A2A 8388608/4;moe_sort_chunks_by_idxs [[4194304]];",
	     "moe_sort_chunks_by_idxs [[4194304]];A2A 8388608/4;"
	     "moe_unpermute_probs_mul [[4198400]];moe_unpermute_zeros [[1048576]];"
	     "moe_unpermute_scatter_add [[4202496]]",
	     permute},
	    {"AG 327680/4;AG 16777216/4;moe_permute_map_transpose [[8192]];"
	     "moe_permute_masked_select_indices [[45056]];moe_permute_probs_select [[57344]];"
	     "moe_permute_index_select [[4202496]];",
	     "moe_unpermute_probs_mul [[4198400]];moe_unpermute_zeros [[4194304]];"
	     "moe_unpermute_scatter_add [[10493952]];RS 16777216/4",
	     ""},
	    {"A2A 7789421/4;moe_permute_map_transpose [[3803]];"
	     "moe_permute_masked_select_indices [[25307]];moe_permute_probs_select [[28818]];"
	     "moe_permute_index_select [[4202496]];",
	     "moe_unpermute_probs_mul [[4198400]];moe_unpermute_zeros [[1947355]];"
	     "moe_unpermute_scatter_add [[6000055]];A2A 7789421/4",
	     ""},
	    {"A2A 7789421/4;", "A2A 7789421/4", ""}};
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	char got[4096], exp[4096];
	(void)state;
	for (int d = 0; d < 4; d++) {
		moe_small(&in);
		in.m.shared_experts = 0;
		in.lay.ep = 4;
		in.lay.dp = 4;
		in.lay.mbs = 2;
		in.lay.moe_dispatcher = d;
		g = build(&in, &so, &st);
		moe_work(g, 1, PH_FORWARD, got, sizeof(got));
		snprintf(exp, sizeof(exp), "%s%s%s%s%s", router, want[d][2], want[d][0], experts,
			 want[d][1]);
		if (strcmp(got, exp))
			print_error("dispatcher %d:\n got %s\nwant %s\n", d, got, exp);
		assert_string_equal(got, exp);
		/* Backward: the combine's collectives mirrored (an all-gather
		 * for allgather's reduce-scatter), then the dispatch's (its
		 * tokens' reduce-scattered; the routing map gathered no
		 * more). */
		moe_work(g, 1, PH_BACKWARD, got, sizeof(got));
		{
			const char *colls[4] = {"A2A 8388608/4", "AG 16777216/4", "A2A 7789421/4",
						"A2A 7789421/4"};
			const char *second[4] = {"A2A 8388608/4", "RS 16777216/4", "A2A 7789421/4",
						 "A2A 7789421/4"};
			const char *a = strstr(got, colls[d]), *b;
			assert_non_null(a);
			b = strstr(a + strlen(colls[d]), second[d]);
			assert_non_null(b);
			assert_null(strstr(b + strlen(second[d]), "/4"));
			assert_null(strstr(got, "327680"));
		}
		synth_out_release(&so);
		graph_free(g);
	}
	assert_rel_close(synth_moe_a2a_bytes(&in), 8388608.0 * 13 / 14, 1e-15);
	in.lay.moe_dispatcher = LAYOUT_DISP_ALLGATHER;
	assert_rel_close(synth_moe_a2a_bytes(&in), 0, 0);
	in.m.experts = 16;
	in.lay.ep = 16;
	in.lay.dp = 16;
	in.lay.moe_dispatcher = LAYOUT_DISP_FLEX;
	assert_rel_close(synth_moe_a2a_bytes(&in), 8388608.0 * (1 - 8.0 / 16 * 7 / 15), 1e-15);
	in.lay.moe_dispatcher = LAYOUT_DISP_HYBRIDEP;
	assert_rel_close(synth_moe_a2a_bytes(&in), 8388608.0 * (1 - 8.0 / 16 * 7 / 15), 1e-15);
	in.lay.moe_dispatcher = LAYOUT_DISP_ALLTOALL;
	assert_rel_close(synth_moe_a2a_bytes(&in), 8388608.0, 1e-15);
	/* Their memory: DeepEP's buffers at ep 16, 10 channels x 8 peers x
	 * 288 tokens x (2 h + 2048) = 94,371,840 over NVLink, 2 x 10 x 2 x
	 * 128 x 4096 = 20,971,520 across the two nodes. */
	{
		double w, hd;
		in.lay.moe_dispatcher = LAYOUT_DISP_FLEX;
		mem_moe_dispatch_bytes(&in.m, &in.lay, &w, &hd);
		assert_rel_close(hd, 94371840.0 + 20971520.0, 1e-15);
		assert_rel_close(w, 8388608.0, 1e-15);
		/* ep 4, 8 experts: 10 x 4 x 256 x 4096 held; the send buffer
		 * 2 M h = 8,388,608 (alltoall, flex); allgather's gathered
		 * n ep (2 h + 5 E) = 2048 x 4 x 2088. */
		in.m.experts = 8;
		in.lay.ep = 4;
		in.lay.dp = 4;
		mem_moe_dispatch_bytes(&in.m, &in.lay, &w, &hd);
		assert_rel_close(hd, 41943040.0, 1e-15);
		in.lay.moe_dispatcher = LAYOUT_DISP_ALLTOALL;
		mem_moe_dispatch_bytes(&in.m, &in.lay, &w, &hd);
		assert_rel_close(w, 8388608.0, 1e-15);
		assert_true(hd == 0);
		in.lay.moe_dispatcher = LAYOUT_DISP_ALLGATHER;
		mem_moe_dispatch_bytes(&in.m, &in.lay, &w, &hd);
		assert_rel_close(w, 2048.0 * 4 * 2088, 1e-15);
		assert_true(hd == 0);
	}
}

/*
 * Which dispatcher moves fewer bytes, by hand (issue 34, item 1), on round
 * numbers: 8 GPUs a node, NVLink 450 GB/s, 8 NICs of 50 GB/s, full
 * efficiency, no latency.  The small MoE model with 16 experts, top 8,
 * n = 2048 tokens a rank (mbs 2 x 1024), hidden 1024; one MoE layer's
 * forward collectives (synth_moe_dispatch_s: dispatch and combine).
 *  - alltoall sends every routed copy, n k h 2 = 33,554,432 bytes a rank
 *    (MoEAlltoAllTokenDispatcher's input_splits count a token once for
 *    each of its experts, two on one rank included).  ep 16 over two
 *    nodes: 8/16 of it through the rank's 50 GB/s NIC share, 335.544 us,
 *    twice: 671.089 us.
 *  - allgather gathers the 16 ranks' tokens, 2 n h x 16 = 67,108,864
 *    bytes, and their routing map and probabilities, 5 n E x 16 =
 *    2,621,440, as NCCL rings (an all-gather across nodes is a ring in
 *    NCCL, not a hierarchical form): (15/16) S over the node's 8 NICs,
 *    400 GB/s: 157.286 us the tokens, 6.144 us the map, and the combine's
 *    reduce-scatter 157.286 us: 320.717 us.  Each node sends (15/16) x
 *    67.1 MB = 62.9 MB across where the all-to-all sends 8 x 16.8 MB =
 *    134.2 MB: with top 8 a token's copies cross to the other node four
 *    times, the gathered token once.
 *  - ep 64 (8 nodes, 64 experts): alltoall 2 x (56/64) 33,554,432 /
 *    50 GB/s = 1174.405 us; allgather 2 x (63/64) 268,435,456 / 400 GB/s
 *    + (63/64) 41,943,040 / 400 GB/s = 1321.206 + 103.219 = 1424.425 us:
 *    the all-to-all is the cheaper.
 *  - ep 4 in a node (16 experts): alltoall 2 x (3/4) 33,554,432 /
 *    450 GB/s = 111.848 us; allgather 2 x (3/4) 16,777,216 / 450 GB/s +
 *    (3/4) 655,360 / 450 GB/s = 55.924 + 1.092 = 57.016 us: with fewer
 *    ranks than top_k the gather moves less (ep / top_k of the bytes).
 */
static void test_moe_dispatch_bytes(void **state)
{
	static const struct {
		int ep, experts;
		double a2a_us, ag_us;
	} want[] = {
	    {16, 16, 671.089, 320.717}, {64, 64, 1174.405, 1424.425}, {4, 16, 111.848, 57.016}};
	struct hw_profile round = hw;
	struct synth_in in;
	(void)state;
	round.gpus_per_node = round.nics_per_node = 8;
	round.nvlink_domain = 0;
	round.nvlink_Bps = 450e9;
	round.nic_Bps = 50e9;
	round.nvl_eff = round.net_eff = 1;
	round.coll_base_s = round.nvlink_lat_s = round.net_lat_s = 0;
	round.mesh = 0;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		moe_small(&in);
		in.hw = &round;
		in.m.shared_experts = 0;
		in.m.experts = want[i].experts;
		in.m.top_k = 8;
		in.lay.ep = in.lay.dp = want[i].ep;
		in.lay.mbs = 2;
		in.lay.moe_dispatcher = LAYOUT_DISP_ALLTOALL;
		assert_rel_close(synth_moe_dispatch_s(&in), want[i].a2a_us * 1e-6, 1e-5);
		in.lay.moe_dispatcher = LAYOUT_DISP_ALLGATHER;
		assert_rel_close(synth_moe_dispatch_s(&in), want[i].ag_us * 1e-6, 1e-5);
	}
}

/* The model file's MoE settings, and its errors with file and line. */
static void test_moe_load(void **state)
{
	static const struct bad_model bad[] = {
	    {"top_k = 2;\n", ":7: 'top_k' needs 'experts' (1..4096)"},
	    {"experts = 8;\n", ":7: 'experts' needs 'top_k' (1..experts)"},
	    {"experts = 8;\ntop_k = 9;\n", ":8: 'top_k' must be a whole number in 1..8, not 9"},
	    {"experts = 8;\ntop_k = 2;\ncapacity_factor = 0.5;\n",
	     ":9: 'capacity_factor' must be 0 (dropless) or in 1..64, not 0.5"},
	    {"experts = 8;\ntop_k = 2;\nrouter = \"argmax\";\n",
	     ":9: 'router': expected \"softmax\" or \"sigmoid\", not 'argmax'"},
	    {"experts = 8;\ntop_k = 2;\nfirst_dense = 4;\n",
	     ":9: 'first_dense' must be a whole number in 0..3, not 4"},
	    {"experts = 8;\ntop_k = 2;\nmoe_layer_freq = 0;\n",
	     ":9: 'moe_layer_freq' must be 1..30, not 0"},
	    {"experts = 8;\ntop_k = 2;\nmoe_layer_freq = \"012\";\n",
	     ":9: 'moe_layer_freq' pattern '012': expected 1 to 30 characters 0 (dense) or 1 "
	     "(MoE), at least one 1"},
	    {"experts = 8;\ntop_k = 2;\nfirst_dense = 3;\nmoe_layer_freq = \"10\";\n",
	     ":10: 'moe_layer_freq' leaves no MoE layer from first_dense 3 to layers 4"},
	    {"moe_layer_freq = 2;\n", ":7: 'moe_layer_freq' needs 'experts' (1..4096)"},
	};
	static const char head[] = "name = \"m\";\nlayers = 4;\nhidden = 1024;\nheads = 16;\n"
				   "seq = 1024;\nvocab = 32000;\n";
	struct llm m;
	struct prism_err err;
	(void)state;
	load_errors(head, bad, sizeof(bad) / sizeof(bad[0]));
	prism_err_clear(&err);
	assert_int_equal(llm_load(PRISM_SOURCE_DIR "/configs/models/deepseek-v3.cfg", &m, &err), 0);
	assert_int_equal(m.experts, 256);
	assert_int_equal(m.top_k, 8);
	assert_int_equal(m.shared_experts, 1);
	assert_int_equal(m.expert_ffn, 2048);
	assert_int_equal(m.first_dense, 3);
	assert_int_equal(m.router, LLM_ROUTER_SIGMOID);
	assert_int_equal(llm_moe_layers(&m), 58);
	/* Llama 4 Maverick: Megatron's --moe-layer-freq ([0,1]*24), the odd
	 * layers sparse. */
	assert_int_equal(llm_load(PRISM_SOURCE_DIR "/configs/models/llama4-maverick.cfg", &m, &err),
			 0);
	assert_int_equal(m.moe_period, 2);
	assert_int_equal(m.moe_mask, 2);
	assert_int_equal(llm_moe_layers(&m), 24);
	assert_false(llm_is_moe_layer(&m, 0));
	assert_true(llm_is_moe_layer(&m, 47));
	/* The count in closed form, by hand: odd layers in [3, 48) are 3, 5,
	 * ..., 47: 23; Megatron's int 4 on 10 layers: 0, 4, 8. */
	m.first_dense = 3;
	assert_int_equal(llm_moe_layers(&m), 23);
	m.first_dense = 0, m.layers = 10, m.moe_period = 4, m.moe_mask = 1;
	assert_int_equal(llm_moe_layers(&m), 3);
	assert_true(llm_is_moe_layer(&m, 8) && !llm_is_moe_layer(&m, 9));
}

/*
 * Dense and MoE layers interleaved (moe_layer_freq "001": layers 2 and 5 of
 * 6 sparse), by hand from test_moe_counts' figures: 4 dense layers of
 * 16,790,528 parameters, 2 MoE layers of 32,522,240, the embedding,
 * positions and final norm 33,818,624: 166,025,216.  FLOPs per token,
 * forward: 4 x 37,748,736 + 2 x 31,473,664 + 65,536,000 = 279,478,272;
 * training (x 3) 838,434,816.  The synthesised kernels add up to it; the
 * all-to-alls are 2 MoE layers x 2 microbatches x 2 steps x 4 = 32.  On 3
 * stages of 2 layers the MoE layers are 0, 1, 1.
 */
static void test_moe_interleaved(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	int n = 0;
	(void)state;
	moe_small(&in);
	in.m.layers = 6;
	in.m.first_dense = 0;
	in.m.moe_period = 3;
	in.m.moe_mask = 4;
	assert_int_equal(llm_moe_layers(&in.m), 2);
	assert_rel_close(llm_params(&in.m), 166025216.0, 1e-15);
	assert_rel_close(llm_flops_iter(&in.m, 1, 0), 1024 * 838434816.0, 1e-15);
	in.lay.ep = 4;
	in.lay.dp = 4;
	in.lay.microbatches = 2;
	g = build(&in, &so, &st);
	assert_rel_close(so.flops, llm_flops_iter(&in.m, 2, 0), 1e-12);
	for (uint32_t i = 0; i < g->n_colls; i++)
		n += g->colls[i].kind == GC_ALL_TO_ALL;
	assert_int_equal(n, 32);
	synth_out_release(&so);
	graph_free(g);
	/* The description carries the pattern. */
	{
		struct synth_in b;
		struct prism_err err;
		char d[4096];
		synth_meta(&in, d, sizeof(d));
		assert_non_null(strstr(d, ";first_dense=0;moe_period=3;moe_mask=4;"));
		synth_in_default(&b);
		prism_err_clear(&err);
		assert_int_equal(synth_meta_parse(d, &b, &err), 0);
		assert_memory_equal(&in.m, &b.m, sizeof(in.m));
	}
	in.lay.pp = 3;
	assert_int_equal(layout_chunk_moe(&in.m, &in.lay, 0, 0), 0);
	assert_int_equal(layout_chunk_moe(&in.m, &in.lay, 1, 0), 1);
	assert_int_equal(layout_chunk_moe(&in.m, &in.lay, 2, 0), 1);
}

/*
 * Context parallelism, cp = 2, on the small model (hidden 1024, 16 heads of
 * 64, seq 1024, b 1, tp 1): a rank holds 512 tokens; its key-value block
 * is 2 (K and V) x 512 x 16 x 64 x 2 bytes = 2,097,152; the ring passes it
 * once forward (cp - 1 steps) and, with its gradient, 4,194,304 bytes
 * once backward: 8 layers x 2 steps = 16 of each.  The step-1 kernel waits
 * for the transfer, which starts with step 0's kernel (both after the QKV
 * GEMM): with no host costs and no contention, the gap between the two
 * steps' kernels is what the transfer takes beyond step 0,
 * max(0, T - k0), T = comm_time's send/recv of 2,097,152 bytes in a node.
 * Slowing the attention kernels 20x hides it; making them 100x faster
 * exposes T - k0.
 */
static void test_cp_ring(void **state)
{
	static const double scale[] = {20, 1, 0.01};
	struct comm_est e;
	(void)state;
	assert_int_equal(
	    comm_time(&hw, GC_SEND_RECV, 2097152.0, (struct comm_group){2, 2}, 1, COMM_AUTO, &e),
	    0);
	for (size_t k = 0; k < sizeof(scale) / sizeof(scale[0]); k++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		struct hw_profile quiet = hw;
		int nf = 0, nb = 0;
		uint32_t k0 = UINT32_MAX, k1 = UINT32_MAX;
		quiet.slow_compute = quiet.slow_comm = 0;
		small(&in);
		in.hw = &quiet;
		in.lay.cp = 2;
		in.cpu_op_s = in.launch_s = in.event_s = in.gpu_lag_s = 0;
		in.scale[KC_ATTENTION] = scale[k];
		g = build(&in, &so, &st);
		for (uint32_t i = 0; i < g->n_colls; i++) {
			if (g->colls[i].kind != GC_SEND_RECV)
				continue;
			if (g->colls[i].bytes == 2097152)
				nf++;
			else if (g->colls[i].bytes == 4194304)
				nb++;
			else
				fail();
		}
		assert_int_equal(nf, 16);
		assert_int_equal(nb, 16);
		/* The first forward's two ring steps of layer 0, last step. */
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if (g->layer[u] == 0 && g->phase[u] == PH_FORWARD && g->mb[u] == 0 &&
			    strcmp(strtab_get(&g->st, g->name[u]), "flash_fwd_kernel") == 0 &&
			    g->iter[u] == 1) {
				if (k0 == UINT32_MAX || g->start_ns[u] < g->start_ns[k0]) {
					k1 = k0;
					k0 = u;
				} else if (k1 == UINT32_MAX || g->start_ns[u] < g->start_ns[k1]) {
					k1 = u;
				}
			}
		assert_true(k0 != UINT32_MAX && k1 != UINT32_MAX);
		{
			double gap = (double)(g->start_ns[k1] - g->start_ns[k0] - g->dur_ns[k0]);
			double want = e.time_s * 1e9 - (double)g->dur_ns[k0];
			print_message("cp 2, attention x %g: step 0 %.1f us, transfer %.1f us, "
				      "gap %.1f us\n",
				      scale[k], g->dur_ns[k0] / 1e3, e.time_s * 1e6, gap / 1e3);
			if (k == 0)
				assert_true(want < 0);
			if (k == 2)
				assert_true(want > 0);
			assert_true(fabs(gap - (want > 0 ? want : 0)) <= 2);
		}
		synth_out_release(&so);
		graph_free(g);
	}
}

/*
 * Llama 3's all-gather form of cp = 2 on the same model: each layer's
 * forward all-gathers the two ranks' key-value blocks, 2 x 2,097,152 =
 * 4,194,304 bytes over the 2 cp ranks, and its backward reduce-scatters
 * their gradients, as many bytes: 8 layers x 2 steps = 16 of each, and no
 * ring transfer.  The gather is on the compute stream (exposed): the
 * attention kernel starts when it ends.
 */
static void test_cp_allgather(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	int ng = 0, nr = 0;
	(void)state;
	small(&in);
	in.lay.cp = 2;
	in.lay.cp_comm = LAYOUT_CP_ALLGATHER;
	g = build(&in, &so, &st);
	for (uint32_t i = 0; i < g->n_colls; i++) {
		assert_true(g->colls[i].kind != GC_SEND_RECV);
		if (g->colls[i].kind == GC_ALL_GATHER || g->colls[i].kind == GC_REDUCE_SCATTER) {
			assert_int_equal(g->colls[i].bytes, 4194304);
			assert_int_equal(g->colls[i].group_size, 2);
			ng += g->colls[i].kind == GC_ALL_GATHER;
			nr += g->colls[i].kind == GC_REDUCE_SCATTER;
		}
	}
	assert_int_equal(ng, 16);
	assert_int_equal(nr, 16);
	for (uint32_t u = 0; u + 1 < g->n_nodes; u++)
		if (g->coll[u] != UINT32_MAX && g->colls[g->coll[u]].kind == GC_ALL_GATHER) {
			uint32_t v = u + 1; /* the next task on the compute stream */
			while (v < g->n_nodes && g->proc[v] != g->proc[u])
				v++;
			assert_true(v < g->n_nodes);
			assert_string_equal(strtab_get(&g->st, g->name[v]), "flash_fwd_kernel");
			assert_true(g->start_ns[v] >= g->start_ns[u] + g->dur_ns[u]);
		}
	synth_out_release(&so);
	graph_free(g);
}

/*
 * Sequence parallelism's gathers by the dtype Transformer Engine gathers
 * in, by hand, on the small GPT (8 layers, hidden 1024, one sequence of
 * 1024) at tp 2 with sp: each layer's forward reduce-scatters the
 * projection's and FC2's outputs and gathers FC1's and the next QKV's
 * normed inputs; its backward gathers the projection's and FC2's output
 * gradients, gathers QKV's and FC1's saved input shards again for their
 * weight gradients (Megatron-LM's LinearWithGradAccumulationAndAsync-
 * Communication.backward, Transformer Engine's ln_out_needs_gather) and
 * reduce-scatters two input gradients: a layer's backward 4 gathers and 2
 * reduce-scatters, 8 layers x 2 steps = 64 reduce-scatters, 96 gathers,
 * 32 of them the re-gathers, on the communication stream (beside the
 * input gradient's GEMM; every other tp collective is on the compute
 * stream).  The output layer (Megatron-LM's ColumnParallelLinear, bf16)
 * gathers its input again backward (its forward gather the last layer's)
 * and reduce-scatters its input gradient, once each of the 2: 66
 * reduce-scatters, 98 gathers, 2 of them the output layer's bf16
 * re-gathers in every dtype, 34 re-gathers in all.  The embedding (learned
 * positions: VocabParallelEmbedding's all-reduce, then a split, layer.c
 * embed_reduce) gathers its output gradient backward, bf16 on the compute
 * stream, once each of the 2: 100 gathers, 4 of them bf16 in every dtype.
 * The reduce-scatters are of bf16, 1024 x 1024 x 2 = 2,097,152 bytes, in
 * every dtype; the layers' gathers of fp8 under the per-tensor recipes
 * (delayed, current: 1,048,576 bytes), of bf16 in a bf16 run and under
 * blockwise (taken as bf16).  A LoRA adapter on FC1 asks for the gathered
 * bf16 norm output: FC1's input gather (one a layer, 16 in all) is of
 * bf16 again; LoRA freezes the weights, so no weight gradient and no
 * re-gather (64 gathers), and the embedding frozen, no gradient of it to
 * gather.
 */
/* A tp 2 sequence-parallel layer's backward (Megatron-LM's layers.py
 * LinearWithGradAccumulationAndAsyncCommunication.backward): each column-
 * parallel Linear's (QKV's, FC1's, the output layer's) input gradient, b s
 * h = 1 x 1024 x 1024
 * bf16 values (2 MiB), is reduce-scattered on the tensor-parallel stream
 * after its input-gradient GEMM, beside its weight-gradient GEMM (the next
 * kernel on the compute stream), and the compute stream waits for it
 * before the norm's backward consumes the gradient.  The forward's stay on
 * the compute stream.  Without sequence parallelism the same gradients are
 * all-reduced in the same place (allreduce_dgrad: all_reduce(grad_input,
 * async_op=True) after the dgrad matmul, waited after wgrad), the
 * forward's all-reduces (the projection's and FC2's outputs) on the
 * compute stream, and the embedding's (VocabParallelEmbedding's
 * reduce_from_tensor_model_parallel_region, once a microbatch on the
 * first stage: 2 more forward, the same bytes) there too. */
static void test_sp_rs_beside_wgrad(void **state)
{
	(void)state;
	for (int sp = 1; sp >= 0; sp--) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		uint32_t comp[2] = {UINT32_MAX, UINT32_MAX};
		int fwd = 0, side = 0, dx = 0, joined = 0, logits = 0;
		int kind = sp ? GC_REDUCE_SCATTER : GC_ALL_REDUCE;
		small(&in);
		in.lay.tp = 2;
		in.lay.sp = sp;
		g = build(&in, &so, &st);
		for (uint32_t i = 0; i < g->n_colls; i++) {
			uint32_t u = g->colls[i].node, pr = g->proc[u], rk = g->procs[pr].rank;
			/* (the data-parallel reductions: fp32, other sizes) */
			if (g->colls[i].kind != kind || g->colls[i].bytes != 2097152)
				continue;
			if (comp[rk] == UINT32_MAX)
				comp[rk] = pr; /* the forward's first: the compute stream */
			if (pr == comp[rk]) {
				fwd++;
				continue;
			}
			side++;
			/* Its predecessor on the compute stream: an input-
			 * gradient GEMM, the weight-gradient GEMM of the same
			 * Linear next. */
			for (uint32_t v = 0; v < g->n_nodes; v++) {
				if (g->proc[v] != comp[rk])
					continue;
				for (uint32_t e = g->out_off[v]; e < g->out_off[v + 1]; e++) {
					const char *a = strtab_get(&g->st, g->name[v]), *b;
					size_t n = strlen(a);
					if (g->out_dst[e] != u)
						continue;
					b = strtab_get(&g->st, g->name[v + 1]);
					const char *lin = strstr(a, "_qkv_dx")	 ? "_qkv_dw"
							  : strstr(a, "_fc1_dx") ? "_fc1_dw"
										 : "_logits_dw";
					assert_true(n > 3 && strcmp(a + n - 3, "_dx") == 0);
					assert_true(strstr(a, "_qkv_dx") || strstr(a, "_fc1_dx") ||
						    strstr(a, "_logits_dx"));
					assert_non_null(strstr(b, lin));
					logits += strstr(a, "_logits_dx") != NULL;
					dx++;
				}
			}
			/* What waits for it: the norm's backward on the compute
			 * stream. */
			for (uint32_t e = g->out_off[u]; e < g->out_off[u + 1]; e++) {
				uint32_t w = g->out_dst[e];
				if (g->proc[w] != comp[rk])
					continue;
				assert_string_equal(strtab_get(&g->st, g->name[w]),
						    "layer_norm_grad_input_kernel");
				joined++;
			}
		}
		print_message("%s: %d forward, %d beside the weight gradients (%d after an input "
			      "gradient, %d of them the output layer's, %d waited for)\n",
			      sp ? "reduce-scatters" : "all-reduces", fwd, side, dx, logits,
			      joined);
		/* 2 ranks x 4 layers x 2 microbatches x 2 Linears each way;
		 * the output layer's backward once a microbatch (the norm's
		 * backward after it is the final norm's); without sp the
		 * embedding's all-reduce forward, once a microbatch (with sp
		 * an all-reduce too, learned positions: not a reduce-scatter) */
		assert_int_equal(fwd, sp ? 32 : 34);
		assert_int_equal(side, 34);
		assert_int_equal(dx, 34);
		assert_int_equal(logits, 2);
		assert_int_equal(joined, 34);
		synth_out_release(&so);
		graph_free(g);
	}
}

/*
 * The sequence-parallel all-gathers of the small GPT at tp 2 (its 8
 * layers on each of the 2 ranks: 16 a step, each gather of 2^20 values)
 * by the bytes a value (kperf_lowp_gather_bytes): bf16 2; per
 * tensor fp8 every quantised gather 1 (the row-wise data); blockwise and
 * mxfp8 the forward's inputs (QKV's, FC1's: row-wise) and the backward's
 * re-gathers of them (column-wise) one copy with its scales, q = 1 + 4 /
 * 128 (blockwise: 1,081,344 B) or 1 + 1 / 32 (mxfp8: 1,081,344 B too) or
 * 0.5 + 1 / 16 (fp4, NVFP4: 589,824 B), 64 of them, and the projection's
 * and FC2's output gradients both copies, 2 q (2,162,688 B; fp4
 * 1,179,648), 32; the embedding's gradient's 4 gathers stay bf16.
 * A LoRA adapter on FC1 has its forward gather, and so its re-gather, in
 * bf16 (return_layernorm_output_gathered).
 */
static void test_sp_fp8_gather(void **state)
{
	static const struct {
		int dtype, recipe, lora;
		double q; /* B, a gather of one scaled copy (0: none) */
		int ag_fp8, ag_bf16, ag_q, ag_2q;
	} want[] = {{HW_BF16, LAYOUT_FP8_DELAYED, 0, 0, 0, 100, 0, 0},
		    {HW_FP8, LAYOUT_FP8_DELAYED, 0, 0, 96, 4, 0, 0},
		    {HW_FP8, LAYOUT_FP8_CURRENT, 0, 0, 96, 4, 0, 0},
		    {HW_FP8, LAYOUT_FP8_BLOCKWISE, 0, 1081344, 0, 4, 64, 32},
		    {HW_FP8, LAYOUT_FP8_MXFP8, 0, 1081344, 0, 4, 64, 32},
		    {HW_FP4, LAYOUT_FP8_DELAYED, 0, 589824, 0, 4, 64, 32},
		    {HW_FP8, LAYOUT_FP8_DELAYED, 1, 0, 48, 16, 0, 0}};
	struct hw_profile bw;
	(void)state;
	fp8_gpu(&bw);
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		int a1 = 0, a2 = 0, aq = 0, a2q = 0, rs = 0, side = 0, rs_side = 0;
		uint32_t rs_proc[2] = {UINT32_MAX, UINT32_MAX};
		small(&in);
		if (want[k].recipe == LAYOUT_FP8_MXFP8 || want[k].dtype == HW_FP4)
			in.hw = &bw; /* (both ask for a profile with an fp4 peak) */
		in.lay.tp = 2;
		in.lay.sp = 1;
		in.lay.dtype = want[k].dtype;
		in.lay.fp8_recipe = want[k].recipe;
		if (want[k].lora) {
			in.lay.lora_rank = 8;
			in.lay.lora_targets = LAYOUT_LORA_FC1;
		}
		g = build(&in, &so, &st);
		for (uint32_t i = 0; i < g->n_colls; i++) {
			uint32_t pr = g->proc[g->colls[i].node];
			if (g->colls[i].kind == GC_REDUCE_SCATTER) {
				assert_int_equal(g->colls[i].bytes, 2097152);
				/* the first (the forward's): the compute stream */
				if (rs_proc[g->procs[pr].rank] == UINT32_MAX)
					rs_proc[g->procs[pr].rank] = pr;
				rs_side += pr != rs_proc[g->procs[pr].rank];
				rs++;
			}
		}
		for (uint32_t i = 0; i < g->n_colls; i++) {
			uint32_t pr = g->proc[g->colls[i].node];
			if (g->colls[i].kind == GC_ALL_GATHER) {
				a1 += g->colls[i].bytes == 1048576;
				a2 += g->colls[i].bytes == 2097152;
				aq += g->colls[i].bytes == want[k].q;
				a2q += g->colls[i].bytes == 2 * want[k].q;
				side += pr != rs_proc[g->procs[pr].rank];
			}
		}
		print_message("sp gathers %zu: %d fp8, %d bf16, %d and %d of one and two scaled "
			      "copies (%d re-gathers), %d reduce-scatters\n",
			      k, a1, a2, aq, a2q, side, rs);
		assert_int_equal(rs, 66);
		/* the backward's 34 (2 a layer, the output layer's 2) beside
		 * the weight gradients' GEMMs, the forward's on the compute
		 * stream; under LoRA the frozen weights have none, so none
		 * leaves it */
		assert_int_equal(rs_side, want[k].lora ? 0 : 34);
		assert_int_equal(side, want[k].lora ? 0 : 34);
		assert_int_equal(a1, want[k].ag_fp8);
		assert_int_equal(a2, want[k].ag_bf16);
		assert_int_equal(aq, want[k].ag_q);
		assert_int_equal(a2q, want[k].ag_2q);
		synth_out_release(&so);
		graph_free(g);
	}
}

/* Whether node u is a kernel on rank 0's GPU in the second step (iter 1). */
static int rank0_step1_kernel(const struct graph *g, uint32_t u)
{
	return g->kind[u] == GN_KERNEL && g->procs[g->proc[u]].gpu &&
	       g->procs[g->proc[u]].rank == 0 && g->iter[u] == 1;
}

/*
 * The vocabulary-parallel embedding's and cross-entropy's tensor-parallel
 * collectives, by hand, on the small GPT (8 layers, b s h = 2 x 1024 x
 * 1024 with mbs 2, one microbatch, 2 steps, pp 1) at tp 2:
 *  - the embedding's output, 2 x 1024 x 1024 bf16 = 4,194,304 B, summed
 *    over tp (Megatron-LM VocabParallelEmbedding.forward): an all-reduce,
 *    or with sp and no learned positions (rope: reduce_scatter_embeddings)
 *    a reduce-scatter -- the step's first tp collective; with sp its
 *    gradient all-gathered backward (the backward of the reduce-scatter,
 *    or of scatter_to_sequence_parallel_region after learned positions) --
 *    the step's last;
 *  - the loss's three all-reduces of [s, b] fp32, 4 x 2 x 1024 = 8192 B
 *    (cross_entropy.py _VocabParallelCrossEntropy.forward): the logits'
 *    maximum after the passes that find it, then the predicted logit's and
 *    the sum of exponentials' after the sum, on the compute stream.
 * A step's tp collectives: without sp, each layer's 2 all-reduces forward
 * and 2 backward (QKV's and FC1's input gradients), the output layer's
 * input gradient's, the embedding's and the loss's 3: 8 x 4 + 1 + 1 + 3 =
 * 37; with sp each layer's 2 reduce-scatters and 2 gathers forward, 2
 * gathers of output gradients, 2 re-gathers and 2 reduce-scatters
 * backward (10), the output layer's re-gather and reduce-scatter, the
 * embedding's 2 and the loss's 3: 80 + 2 + 2 + 3 = 87.
 */
static void test_vocab_parallel_colls(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++) {
		int sp = k & 1, rope = k >> 1;
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		int n = 0, ce = 0, emb_first = 0, emb_last = 0;
		uint32_t first = UINT32_MAX, last = UINT32_MAX, comp = UINT32_MAX;
		small(&in);
		in.m.rope = rope;
		in.lay.tp = 2;
		in.lay.sp = sp;
		in.lay.mbs = 2;
		in.steps = 2;
		g = build(&in, &so, &st);
		for (uint32_t i = 0; i < g->n_colls; i++) {
			const struct graph_coll *x = &g->colls[i];
			const char *name = strtab_get(&g->st, g->name[x->node]);
			if (strncmp(strtab_get(&g->st, x->pg), "tp.", 3) != 0)
				continue;
			n++;
			if (first == UINT32_MAX)
				first = i, comp = g->proc[x->node];
			last = i;
			if (x->bytes == 8192) {
				/* the loss's: Max, Sum, Sum in turn, each after
				 * its pass on the compute stream */
				uint32_t v = x->node - 1;
				assert_int_equal(x->kind, GC_ALL_REDUCE);
				assert_int_equal(g->proc[x->node], comp);
				while (g->proc[v] != comp)
					v--;
				assert_string_equal(
				    name, ce % 3 == 0 ? "ncclDevKernel_AllReduce_Max_f32_RING_LL"
						      : "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
				assert_string_equal(
				    strtab_get(&g->st, g->name[v]),
				    ce % 3 == 0	  ? "cross_entropy_elementwise_fwd"
				    : ce % 3 == 1 ? "cross_entropy_softmax_fwd"
						  : "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
				ce++;
			}
			/* the embedding's: the step's first (forward) and,
			 * with sp, last (its gradient's gather) */
			if (x->bytes == 4194304 && g->proc[x->node] == comp) {
				uint32_t v = x->node - 1;
				while (g->proc[v] != comp)
					v--;
				if (strcmp(strtab_get(&g->st, g->name[v]),
					   "indexSelectLargeIndex") == 0) {
					assert_int_equal(x->kind, sp && rope ? GC_REDUCE_SCATTER
									     : GC_ALL_REDUCE);
					emb_first++;
				}
				for (v = x->node + 1; g->proc[v] != comp; v++)
					;
				/* (the first table's gradient copy after it:
				 * the position table's, or without positions
				 * the word table's) */
				if (strcmp(strtab_get(&g->st, g->name[v]),
					   "elementwise_kernel<copy> (embedding gradient)") == 0) {
					assert_int_equal(x->kind, GC_ALL_GATHER);
					emb_last++;
				}
			}
		}
		print_message("rope %d sp %d: %d tp collectives, %d of the loss, the embedding's "
			      "%d forward %d backward\n",
			      rope, sp, n, ce, emb_first, emb_last);
		assert_int_equal(n, 2 * (sp ? 87 : 37));
		assert_int_equal(ce, 2 * 3);
		assert_int_equal(emb_first, 2);
		assert_int_equal(emb_last, sp ? 2 : 0);
		/* the run's first is the embedding's forward reduction; with
		 * sp its last the embedding gradient's gather */
		assert_int_equal(g->colls[first].bytes, 4194304);
		assert_int_equal(g->colls[last].kind, sp ? GC_ALL_GATHER : GC_ALL_REDUCE);
		synth_out_release(&so);
		graph_free(g);
	}
}

/*
 * MTP's sequence-parallel gathers under fp8, by hand: the small GPT with
 * one MTP depth (a dense layer of its own, eh_proj 2h -> h / t, a second
 * loss) at tp 2 sp, one microbatch of 1 x 1024, 2 steps.  A step's
 * all-gathers: each of the 9 layers' 6 (its 2 rounds' gathers forward,
 * 2 output-gradient gathers and 2 re-gathers backward, test_sp_fp8_gather),
 * the embedding gradient's (the main one's; the depth's embedding too: 2),
 * the output layer's re-gather for each of the 2 losses, eh_proj's input
 * forward and its re-gather backward, the depth's output gathered over h
 * (gather_from_tensor_model_parallel_region) and, backward, its gradient
 * over the sequence (scatter_to_sequence_parallel_region's backward):
 * 54 + 2 + 2 + 2 + 2 = 62.  Under fp8 delayed scaling the layers' 54 and
 * eh_proj's 2 (Transformer Engine's Linear quantises its input before the
 * gather and gathers the saved fp8 shard again, te_linear_gather_bytes)
 * move 1 byte a value rather than 2: 54 x 1024 x 1024 + 2 x 2 x 1024 x
 * 1024 bytes less a step, the rest bf16 in both.
 */
static void test_mtp_fp8_gathers(void **state)
{
	double sum[2] = {0, 0};
	int n[2] = {0, 0};
	(void)state;
	for (int f = 0; f < 2; f++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		small(&in);
		in.m.mtp_layers = 1;
		in.lay.tp = 2;
		in.lay.sp = 1;
		in.steps = 2;
		in.lay.dtype = f ? HW_FP8 : HW_BF16;
		in.lay.fp8_recipe = LAYOUT_FP8_DELAYED;
		g = build(&in, &so, &st);
		for (uint32_t i = 0; i < g->n_colls; i++)
			if (g->colls[i].kind == GC_ALL_GATHER) {
				sum[f] += (double)g->colls[i].bytes;
				n[f]++;
			}
		synth_out_release(&so);
		graph_free(g);
	}
	print_message("mtp tp 2 sp: %d gathers, %.0f bytes bf16, %.0f fp8\n", n[0], sum[0], sum[1]);
	assert_int_equal(n[0], 2 * 62);
	assert_int_equal(n[1], 2 * 62);
	assert_true(sum[0] - sum[1] == 2 * (54.0 * 1048576 + 2 * 2097152));
}

/*
 * The shared experts' sequence-parallel gathers under fp8 delayed scaling,
 * by hand, on the MoE model above (3 MoE layers, b s h = 1 x 1024 x 1024)
 * at tp 2 sp, one microbatch, 2 steps: FC1 and FC2 are Transformer
 * Engine's own column- and row-parallel Linears (SharedExpertMLP), so FC1's
 * input is quantised before its gather (linear.py _Linear.forward) and
 * FC2's output gradient gathered in fp8 (base.py grad_output_preprocess):
 * 1,048,576 bytes each, 6 of each in the run.  Beside the dispatcher
 * (--moe-shared-expert-overlap) Megatron turns the Linears' communication
 * off and gathers explicitly in bf16: 2,097,152 bytes.
 */
static void test_shared_fp8_gathers(void **state)
{
	(void)state;
	for (int ov = 0; ov < 2; ov++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		int fc1 = 0, fc2 = 0;
		double want = ov ? 2097152 : 1048576;
		moe_small(&in);
		in.lay.tp = 2;
		in.lay.sp = 1;
		in.steps = 2;
		in.lay.dtype = HW_FP8;
		in.lay.fp8_recipe = LAYOUT_FP8_DELAYED;
		in.lay.moe_shared_overlap = ov;
		g = build(&in, &so, &st);
		for (uint32_t i = 0; i < g->n_colls; i++) {
			uint32_t u = g->colls[i].node, v = u + 1;
			const char *name;
			if (g->colls[i].kind != GC_ALL_GATHER)
				continue;
			/* the next GEMM on its stream (casts between, no other
			 * collective: beside the dispatcher the side stream
			 * also carries the layers' re-gathers) */
			for (int k = 0; v < g->n_nodes && k < 4; v++) {
				if (g->proc[v] != g->proc[u])
					continue;
				name = strtab_get(&g->st, g->name[v]);
				if (strstr(name, "gemm") || g->coll[v] != UINT32_MAX)
					break;
				k++;
			}
			if (v >= g->n_nodes || g->proc[v] != g->proc[u] || g->coll[v] != UINT32_MAX)
				continue;
			name = strtab_get(&g->st, g->name[v]);
			if (strstr(name, "shared_fc1") && !strstr(name, "_dx") &&
			    !strstr(name, "_dw")) {
				assert_true((double)g->colls[i].bytes == want);
				fc1++;
			}
			if (strstr(name, "shared_fc2_dx")) {
				assert_true((double)g->colls[i].bytes == want);
				fc2++;
			}
		}
		print_message("shared experts%s: %d FC1 input gathers, %d FC2 gradient gathers\n",
			      ov ? " beside the dispatcher" : "", fc1, fc2);
		assert_int_equal(fc1, 6);
		assert_int_equal(fc2, 6);
		synth_out_release(&so);
		graph_free(g);
	}
}

/*
 * Ulysses (cp_comm a2a) of cp = 2 on the same model (16 heads of 64, as
 * many key-value heads, 512 tokens a rank): each layer's forward
 * all-to-alls the rank's Q, K and V, 512 x (16 x 64 + 16 x 128) x 2 =
 * 3,145,728 bytes, before the attention and its output, 512 x 16 x 64 x 2
 * = 1,048,576 bytes, after; backward the output's gradient before and Q's,
 * K's and V's after: 8 layers x 2 of each size, over the 2 ranks, no ring
 * transfer.  The attention between runs 8 heads over the whole 1,024
 * tokens, after the all-to-all ends.  a2a+p2p at
 * tp 4, cp 4 in an 8-GPU domain: all-to-alls over the 2 cp ranks of a
 * domain (256 x (4 x 64 + 4 x 128) x 2 = 393,216 and 256 x 4 x 64 x 2 =
 * 131,072 bytes) and the ring over the other 2 with the p2p form's block,
 * 2 x 512 x 2 x 64 x 2 = 262,144 bytes (forward; twice backward).
 */
static void test_cp_a2a(void **state)
{
	static const struct {
		int tp, cp, form;
		double qkv, out, ring;
		int group;
	} want[] = {{1, 2, LAYOUT_CP_A2A, 3145728, 1048576, 0, 2},
		    {4, 4, LAYOUT_CP_A2A_P2P, 393216, 131072, 262144, 2}};
	(void)state;
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		int nq = 0, no = 0, nf = 0, nb = 0;
		small(&in);
		in.lay.tp = want[k].tp;
		in.lay.cp = want[k].cp;
		in.lay.cp_comm = want[k].form;
		g = build(&in, &so, &st);
		for (uint32_t i = 0; i < g->n_colls; i++) {
			const struct graph_coll *x = &g->colls[i];
			if (x->kind == GC_ALL_TO_ALL) {
				assert_int_equal(x->group_size, want[k].group);
				if (x->bytes == want[k].qkv)
					nq++;
				else if (x->bytes == want[k].out)
					no++;
				else
					fail();
			} else if (x->kind == GC_SEND_RECV) {
				if (x->bytes == want[k].ring)
					nf++;
				else if (x->bytes == 2 * want[k].ring)
					nb++;
				else
					fail();
			}
		}
		/* Per rank the graph holds: 8 layers x 2 of each all-to-all, one
		 * ring transfer each way a layer. */
		assert_int_equal(nq % 16, 0);
		assert_true(nq > 0);
		assert_int_equal(no, nq);
		assert_int_equal(nf, want[k].ring > 0 ? nq / 2 : 0);
		assert_int_equal(nb, nf);
		for (uint32_t u = 0; u + 1 < g->n_nodes; u++)
			if (g->coll[u] != UINT32_MAX &&
			    g->colls[g->coll[u]].kind == GC_ALL_TO_ALL &&
			    g->colls[g->coll[u]].bytes == want[k].qkv &&
			    g->phase[u] == PH_FORWARD && want[k].ring == 0) {
				uint32_t v = u + 1; /* the next task on the compute stream */
				while (v < g->n_nodes && g->proc[v] != g->proc[u])
					v++;
				assert_true(v < g->n_nodes);
				assert_string_equal(strtab_get(&g->st, g->name[v]),
						    "flash_fwd_kernel");
				assert_true(g->start_ns[v] >= g->start_ns[u] + g->dur_ns[u]);
			}
		synth_out_release(&so);
		graph_free(g);
	}
	{
		struct synth_in in;
		struct graph *g = NULL;
		struct synth_out so;
		struct prism_err err;
		small(&in);
		in.lay.tp = 8;
		in.lay.cp = 4;
		in.lay.cp_comm = LAYOUT_CP_A2A;
		prism_err_clear(&err);
		assert_int_equal(synth_build(&in, &g, &so, &err), PRISM_EARG);
		assert_string_equal(err.msg,
				    "layout: cp_comm a2a scatters the heads over 4 cp ranks: "
				    "the heads (2) and key-value heads (2) of a TP rank must "
				    "be divisible by 4");
	}
}

/*
 * cp splits every token-wise cost: the FLOPs of the replica's cp ranks add
 * up to the model's (each rank 1/cp of the GEMMs and of the causal
 * attention's model FLOPs), activations per layer halve, and the optimizer
 * state is sharded over dp x cp under ZeRO-1.  The bound stays below the
 * simulation; the description carries cp.
 */
static void test_cp_layout(void **state)
{
	struct synth_in in, b;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	struct mem_est m1, m2;
	struct predict_out p;
	struct prism_err err;
	char s[1024];
	(void)state;
	small(&in);
	in.lay.microbatches = 2;
	in.lay.zero = 1;
	in.lay.dp = 2;
	synth_mem(&in, &m1);
	in.lay.cp = 2;
	synth_mem(&in, &m2);
	assert_rel_close(m2.act_per_layer, m1.act_per_layer / 2, 1e-15);
	assert_rel_close(m2.optimizer, m1.optimizer / 2, 1e-15);
	g = build(&in, &so, &st);
	assert_rel_close(so.flops * 2, llm_flops_iter(&in.m, 2, 0), 1e-12);
	synth_out_release(&so);
	graph_free(g);
	prism_err_clear(&err);
	assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
	assert_int_equal(p.gpus, 4);
	assert_true(synth_lower_bound(&in) <= p.iter_s);
	synth_meta(&in, s, sizeof(s));
	assert_non_null(strstr(s, ";cp=2"));
	synth_in_default(&b);
	assert_int_equal(synth_meta_parse(s, &b, &err), 0);
	assert_int_equal(b.lay.cp, 2);
	in.m.seq = 1022;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: seq 1022 must be divisible by 2 x cp 2 (the causal "
				     "load balance's chunks)");
}

/* Kernels of rank 0 whose name holds `what`. */
static int count_kernels(const struct graph *g, const char *what)
{
	int n = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		n += g->kind[u] >= GN_KERNEL && g->procs[g->proc[u]].rank == 0 &&
		     strstr(strtab_get(&g->st, g->name[u]), what) != NULL;
	return n;
}

/*
 * FP8 delayed scaling's amax reduction (docs/MODEL.md "Delayed scaling's
 * amax reduction"), the small GPT by hand (8 layers, 4 fp8 GEMMs a layer:
 * QKV, projection, FC1, FC2) at tp 2, pp 2, dp 2, 4 microbatches: stage
 * 0's chunk of 4 layers has 16 GEMMs, so each microbatch's forward
 * all-reduces 16 x 3 = 48 fp32 amaxes (192 bytes) and its backward 16 x
 * 2 = 32 (128 bytes), with MAX over tp x dp = 4 ranks on the compute
 * stream, each followed by one fused update of 48 (32) histories of 1024:
 * 48 x (8 x 1024 + 16) = 393,984 bytes (262,656).  Rank 0 runs 4 + 4 of
 * each a step.  Interleaved (vp 2): 2-layer chunks, 8 GEMMs, 96 and 64
 * bytes, 8 + 8 a step.  The optimizer's per-layer update is gone; bf16
 * and current scaling have neither.  The estimate's host launches them
 * too (synth_stage_amax_s's host): an all-reduce and an update a chunk
 * each way, 2 x (21.6 + 5) us eager.
 */
static void test_fp8_amax_reduce(void **state)
{
	static const struct {
		int dtype, recipe, vp;
		int64_t fb, bb; /* the all-reduces' bytes, forward and backward */
		int n;		/* of each, rank 0, a step */
	} want[] = {{HW_FP8, LAYOUT_FP8_DELAYED, 1, 192, 128, 4},
		    {HW_FP8, LAYOUT_FP8_DELAYED, 2, 96, 64, 8},
		    {HW_BF16, LAYOUT_FP8_DELAYED, 1, 0, 0, 0},
		    {HW_FP8, LAYOUT_FP8_CURRENT, 1, 0, 0, 0}};
	(void)state;
	assert_true(synth_amax_update_bytes(48) == 393984);
	assert_true(synth_amax_update_bytes(32) == 262656);
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		int nf = 0, nb = 0, other = 0, upd, steps;
		uint32_t upd_proc = UINT32_MAX;
		double h[2];
		small(&in);
		in.lay.tp = 2;
		in.lay.pp = 2;
		in.lay.dp = 2;
		in.lay.microbatches = 4;
		if (want[k].vp > 1) {
			in.lay.vp = want[k].vp;
			in.lay.schedule = LAYOUT_INTERLEAVED;
		}
		in.lay.dtype = want[k].dtype;
		in.lay.fp8_recipe = want[k].recipe;
		steps = in.steps;
		assert_int_equal(synth_amax_group(&in).n, 4);
		g = build(&in, &so, &st);
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if (g->kind[u] >= GN_KERNEL && g->procs[g->proc[u]].rank == 0 &&
			    strstr(strtab_get(&g->st, g->name[u]),
				   "te_fused_amax_and_scale_update"))
				upd_proc = g->proc[u];
		for (uint32_t i = 0; i < g->n_colls; i++) {
			const struct graph_coll *x = &g->colls[i];
			uint32_t pr = g->proc[x->node];
			if (x->kind != GC_ALL_REDUCE || g->procs[pr].rank != 0 ||
			    strcmp(strtab_get(&g->st, x->pg), "amax.0") != 0)
				continue;
			assert_int_equal(x->group_size, 4);
			assert_int_equal(pr, upd_proc); /* on the compute stream */
			nf += x->bytes == want[k].fb;
			nb += x->bytes == want[k].bb;
			other += x->bytes != want[k].fb && x->bytes != want[k].bb;
		}
		upd = count_kernels(g, "te_fused_amax_and_scale_update");
		print_message("amax %zu: %d forward, %d backward all-reduces, %d updates\n", k, nf,
			      nb, upd);
		assert_int_equal(nf, want[k].n * steps);
		assert_int_equal(nb, want[k].n * steps);
		assert_int_equal(other, 0);
		assert_int_equal(upd, 2 * want[k].n * steps);
		assert_int_equal(count_kernels(g, "te_delayed_scaling_amax_and_scale_update"), 0);
		/* The host's launches of stage 0's a microbatch, each way: an
		 * all-reduce and an update a chunk, eager (an op and a launch
		 * each, on the compute stream: no event). */
		synth_stage_amax_s(&in, 0, h);
		assert_rel_close(h[0] + 1,
				 1 + (want[k].n ? in.lay.vp * 2 * (in.cpu_op_s + in.launch_s) : 0),
				 1e-12);
		assert_rel_close(h[1], h[0], 1e-12);
		synth_out_release(&so);
		graph_free(g);
	}
}

/*
 * A multi-token-prediction depth's extra work (Megatron-LM's
 * multi_token_prediction.py; its FLOPs as num_floating_point_operations
 * counts them), the small GPT model by hand (h 1024, ffn 4096, s 1024, V
 * 32000, tied): parameters, a layer 4h^2 + 2hf + 9h + f = 12,596,224,
 * eh_proj 2h^2 = 2,097,152, enorm, hnorm and the final norm 6h = 6,144:
 * 14,699,520.  FLOPs a token forward: the layer's GEMMs 2 (4h^2 + 2hf) =
 * 25,165,824 and attention 4 s h = 4,194,304, eh_proj 2 x 2h x h =
 * 4,194,304, the logits 2 V h = 65,536,000: 99,090,432, training x 3
 * 297,271,296.  Synth runs one more logits GEMM and one eh_proj a
 * microbatch forward; the last stage holds the depth's parameters more,
 * and with an untied head on two stages a copy of the word embedding (V h
 * = 32,768,000).
 */
static void test_mtp(void **state)
{
	struct synth_in in;
	struct synth_out so, so0;
	struct settle_out st;
	struct graph *g, *g0;
	struct mem_stage m0, m1;
	double p0, f0;
	(void)state;
	small(&in);
	in.lay.microbatches = 2;
	p0 = llm_params(&in.m);
	f0 = llm_flops_iter(&in.m, 1, 0);
	g0 = build(&in, &so0, &st);
	in.m.mtp_layers = 1;
	assert_rel_close(llm_params(&in.m) - p0, 14699520.0, 1e-15);
	assert_rel_close(llm_flops_iter(&in.m, 1, 0) - f0, 1024 * 297271296.0, 1e-15);
	g = build(&in, &so, &st);
	assert_rel_close(so.flops, llm_flops_iter(&in.m, 2, 0), 1e-12);
	assert_int_equal(count_kernels(g, "tn_n_logits"), 2 * count_kernels(g0, "tn_n_logits"));
	assert_int_equal(count_kernels(g, "eh_proj"), 3 * count_kernels(g0, "tn_n_logits"));
	synth_out_release(&so);
	synth_out_release(&so0);
	graph_free(g);
	graph_free(g0);
	/* It takes time; the bound stays below on one stage and on two. */
	for (int pp = 1; pp <= 2; pp++) {
		struct predict_out p, q;
		struct prism_err err;
		in.lay.pp = pp;
		in.m.mtp_layers = 0;
		assert_int_equal(predict_synth(&in, &q, NULL, NULL, &err), 0);
		in.m.mtp_layers = 1;
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		assert_true(p.iter_s > q.iter_s);
		assert_true(synth_lower_bound(&in) <= p.iter_s);
	}
	/* eh_proj at tp 2 (Transformer Engine's column-parallel Linear):
	 * its input, b s 2h = 1024 x 2048 bf16 (4,194,304 bytes), gathered
	 * forward on the compute stream under sp and again backward beside
	 * its input gradient's GEMM, its input gradient reduce-scattered
	 * beside its weight gradient's (all-reduced without sp), both on the
	 * communication stream: once a microbatch (2) and step. */
	for (int sp = 0; sp <= 1; sp++) {
		int steps = in.steps > 0 ? in.steps : 1, ag = 0, ag_side = 0, red_side = 0;
		uint32_t comp = UINT32_MAX;
		small(&in);
		in.lay.microbatches = 2;
		in.m.mtp_layers = 1;
		in.lay.tp = 2;
		in.lay.sp = sp;
		g = build(&in, &so, &st);
		for (uint32_t u = 0; u < g->n_nodes && comp == UINT32_MAX; u++)
			if (g->kind[u] == GN_KERNEL &&
			    strstr(strtab_get(&g->st, g->name[u]), "_eh_proj_dx"))
				comp = g->proc[u];
		for (uint32_t i = 0; i < g->n_colls; i++) {
			const struct graph_coll *x = &g->colls[i];
			int on_side = g->proc[x->node] != comp;
			if (x->bytes != 4194304)
				continue;
			if (x->kind == GC_ALL_GATHER) {
				ag++;
				ag_side += on_side;
			} else {
				assert_int_equal(x->kind, sp ? GC_REDUCE_SCATTER : GC_ALL_REDUCE);
				assert_true(on_side);
				red_side++;
			}
		}
		print_message(
		    "eh_proj, sp %d: %d gathers (%d beside dx), %d reductions beside dw\n", sp, ag,
		    ag_side, red_side);
		assert_int_equal(ag, sp ? 2 * 2 * steps : 0);
		assert_int_equal(ag_side, sp ? 2 * steps : 0);
		assert_int_equal(red_side, 2 * steps);
		synth_out_release(&so);
		graph_free(g);
	}
	small(&in);
	in.lay.microbatches = 2;
	/* Untied on two stages, the depth's embedding gradient is all-reduced
	 * between the first and the last stage (finalize_model_grads.py),
	 * V h fp32 values: 32000 x 1024 x 4 = 131,072,000 bytes, once a step
	 * on each of the two ranks. */
	for (int mtp = 0; mtp <= 1; mtp++) {
		int n = 0;
		in.lay.pp = 2;
		in.m.untied = 1;
		in.m.mtp_layers = mtp;
		g = build(&in, &so, &st);
		for (uint32_t i = 0; i < g->n_colls; i++)
			n += g->colls[i].kind == GC_ALL_REDUCE && g->colls[i].bytes == 131072000 &&
			     g->colls[i].group_size == 2;
		assert_int_equal(n, mtp ? 2 * (in.steps > 0 ? in.steps : 1) : 0);
		synth_out_release(&so);
		graph_free(g);
	}
	in.m.untied = 0;
	/* The last of two stages holds the depth; untied, the embedding too. */
	in.lay.pp = 2;
	in.m.mtp_layers = 0;
	mem_stage(&in.m, &in.lay, in.hw, 1, &m0);
	in.m.mtp_layers = 1;
	mem_stage(&in.m, &in.lay, in.hw, 1, &m1);
	assert_rel_close(m1.params - m0.params, 14699520.0, 1e-12);
	in.m.untied = 1;
	in.m.mtp_layers = 0;
	mem_stage(&in.m, &in.lay, in.hw, 1, &m0);
	in.m.mtp_layers = 1;
	mem_stage(&in.m, &in.lay, in.hw, 1, &m1);
	assert_rel_close(m1.params - m0.params, 14699520.0 + 32768000.0, 1e-12);
	mem_stage(&in.m, &in.lay, in.hw, 0, &m1);
	mem_stage(&in.m, &in.lay, in.hw, 0, &m0);
	assert_rel_close(m1.params, m0.params, 1e-15);
}

/* ---- hybrid Mamba/attention models (llm.h pattern) ------------------- */

/* One Mamba-2 layer (pattern "M"): hidden 256, 8 heads of 64 (d_i 512),
 * state 32, 2 groups, a conv of 4, chunks of 64, seq 256, vocab 1000, no
 * learned positions, tied. */
static void mamba_small(struct synth_in *in)
{
	small(in);
	in->m.layers = 1;
	in->m.hidden = 256;
	in->m.heads = 4;
	in->m.ffn = 1024;
	in->m.seq = 256;
	in->m.vocab = 1000;
	in->m.rope = 1;
	strcpy(in->m.pattern, "M");
	in->m.ssm_heads = 8;
	in->m.ssm_head_dim = 64;
	in->m.ssm_state = 32;
	in->m.ssm_groups = 2;
	in->m.ssm_conv = 4;
	in->m.ssm_chunk = 64;
	in->steps = 1;
}

/*
 * The Mamba-2 layer worked by hand (T = 256 tokens, h = 256, H = 8, P = 64,
 * N = 32, G = 2, Q = 64, 4 chunks).  in_proj's width 2 d_i + 2 G N + H =
 * 1024 + 128 + 8 = 1160.  Parameters: norm 512, in_proj 256 x 1160 =
 * 296,960, conv (512 + 128) x 5 = 3,200, dt_bias, A_log, D 24, gated norm
 * 512, out_proj 131,072: 432,280; the model adds the embedding 256,000 and
 * the final norm 512: 688,792.
 * FLOPs forward: in_proj 2 x 256 x 1160 x 256 = 152,043,520, out_proj 2 x
 * 256 x 256 x 512 = 67,108,864; the SSD scan (llm_ssd_flops) 2 T (G Q N +
 * H (Q P + 2 N P + N P / Q)) = 512 x (4096 + 8 x 8224) = 35,782,656, of
 * which its kernels' products are all but the states' passing (2 T H N P
 * / Q = 131,072): 35,651,584.  Training (llm_flops_iter): 3 x 254,935,040
 * + the logits 3 x 131,072,000 = 1,158,021,120.  The kernels: the
 * projections three times (657,457,152), the scan's products forward
 * (35,651,584) and backward 2 T (5 H N P + 2 H Q P + 3 G Q N) = 512 x
 * 159,744 = 81,788,928 (twice the forward's and the chunk states and C
 * B^T recomputed), the logits' 393,216,000: 1,168,113,664.
 * Bytes of the forward's memory-bound kernels: norm 4 T h = 262,144, the
 * two copies 4 T 1160 = 1,187,840 and 4 T 512 = 524,288, the convolution 4
 * T 640 = 655,360, dt's sums 10 T H = 20,480, the states' passing 8 x 4
 * chunks x H N P = 524,288, the gated norm 6 T 512 = 786,432, the
 * residual add 7 T h = 458,752: 4,419,584, in 13 kernels.
 */
static void test_mamba_layer(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	struct prism_err err;
	struct mem_est me;
	double ff = 0, fb = 0, full;
	int nk = 0;
	(void)state;
	mamba_small(&in);
	assert_true(llm_ssm_proj(&in.m) == 1160);
	assert_rel_close(llm_kind_params(&in.m, LLM_KIND_MAMBA), 432280.0, 1e-15);
	assert_rel_close(llm_params(&in.m), 688792.0, 1e-15);
	assert_rel_close(llm_ssd_flops(&in.m, 256, 8, 2), 35782656.0, 1e-15);
	assert_rel_close(llm_flops_iter(&in.m, 1, 0), 1158021120.0, 1e-15);
	g = build(&in, &so, &st);
	assert_rel_close(so.flops, 1168113664.0, 1e-12);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		double f, b;
		if (g->kind[u] != GN_KERNEL || g->layer[u] != 0 || g->phase[u] != PH_FORWARD)
			continue;
		assert_int_equal(cost_work(g, u, &f, &b), 1);
		nk++;
		if (cost_classify_node(g, u) == KC_GEMM)
			ff += f;
		else
			fb += b;
	}
	assert_int_equal(nk, 13);
	assert_rel_close(ff, 254803968.0, 1e-12);
	assert_rel_close(fb, 4419584.0, 1e-12);
	/* Backward, as a transformer block's end: the norm's backward (one
	 * kernel timed, two launched) and the residual stream's gradient
	 * summed, both read and the sum written: 6 T h = 393,216 bytes. */
	nk = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		double f, b;
		if (g->kind[u] != GN_KERNEL || g->layer[u] != 0 || g->phase[u] != PH_BACKWARD ||
		    !strstr(strtab_get(&g->st, g->name[u]), "residual gradient"))
			continue;
		assert_int_equal(cost_work(g, u, &f, &b), 1);
		assert_rel_close(b, 393216.0, 1e-15);
		nk++;
	}
	assert_int_equal(nk, 1);
	assert_true(synth_lower_bound(&in) <= st.iter_s);
	full = so.flops;
	synth_out_release(&so);
	graph_free(g);
	/* Activations (mem_act_kind): 5 s b h whole (327,680) and the split
	 * 2 x 1160 + 6 x 512 = 5,392 bytes a token (1,380,352). */
	assert_rel_close(mem_act_kind(&in.m, &in.lay, LLM_KIND_MAMBA), 1708032.0, 1e-15);
	synth_mem(&in, &me);
	assert_rel_close(me.params_per_gpu, 688792.0, 1e-15);
	/* tp 2: every rank does half of every product (heads and groups
	 * split). */
	in.lay.tp = 2;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), 0);
	g = build(&in, &so, &st);
	assert_rel_close(so.flops, full / 2, 1e-12);
	synth_out_release(&so);
	graph_free(g);
	/* tp 4 would split the 2 groups: refused, as Megatron-LM asserts. */
	in.lay.tp = 4;
	assert_int_equal(synth_check(&in, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: tp 4 must divide the Mamba heads (8) and groups (2): "
				     "each rank holds whole ones (Megatron-LM's MambaMixer)");
	/* fp8: in_proj's 1160 is not a multiple of 16, as MambaMixer
	 * asserts it must be. */
	in.lay.tp = 1;
	in.lay.dtype = HW_FP8;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), PRISM_EARG);
	assert_string_equal(err.msg,
			    "layout: fp8: the Mamba in_proj's width 2 d_inner + 2 groups x "
			    "state + heads = 1160 is not a multiple of 16 (Megatron-LM's "
			    "MambaMixer asserts it)");
	in.lay.dtype = HW_BF16;
	/* A layers edit cannot say what the new layers are. */
	in.lay.tp = 1;
	in.m.layers = 2;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), PRISM_EARG);
	assert_string_equal(err.msg, "model: layers 2 differs from the 1 layers of its hybrid "
				     "pattern (a hybrid model's layers are its pattern's)");
}

/* The pattern's characters as layer kinds; an attention layer and an MLP
 * layer hold a transformer layer's parameters between them; the run's
 * description carries the pattern and the mixer; stages count Mamba
 * layers as layers; a hybrid run folds as it runs whole (test_hier). */
static void test_hybrid_pattern(void **state)
{
	struct synth_in in, b;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	struct prism_err err;
	char d[4096];
	(void)state;
	small(&in);
	assert_false(llm_hybrid(&in.m));
	assert_int_equal(llm_layer_kind(&in.m, 3), LLM_KIND_FULL);
	assert_int_equal(llm_kind_layers(&in.m, LLM_KIND_FULL), 8);
	assert_rel_close(llm_kind_params(&in.m, LLM_KIND_ATTN) +
			     llm_kind_params(&in.m, LLM_KIND_MLP),
			 llm_layer_params(&in.m), 1e-15);
	mamba_small(&in);
	strcpy(in.m.pattern, "M-*M-M*-");
	in.m.layers = 8;
	assert_int_equal(llm_layer_kind(&in.m, 0), LLM_KIND_MAMBA);
	assert_int_equal(llm_layer_kind(&in.m, 1), LLM_KIND_MLP);
	assert_int_equal(llm_layer_kind(&in.m, 2), LLM_KIND_ATTN);
	assert_int_equal(llm_layer_kind(&in.m, 7), LLM_KIND_MLP);
	assert_int_equal(llm_kind_layers(&in.m, LLM_KIND_MAMBA), 3);
	assert_int_equal(llm_kind_layers(&in.m, LLM_KIND_ATTN), 2);
	assert_int_equal(llm_kind_layers(&in.m, LLM_KIND_MLP), 3);
	assert_int_equal(llm_kind_layers(&in.m, LLM_KIND_FULL), 0);
	/* The pattern through the description and back. */
	synth_meta(&in, d, sizeof(d));
	assert_non_null(strstr(d, ";hybrid_pattern=M-*M-M*-;ssm_heads=8;ssm_head_dim=64;"
				  "ssm_state=32;ssm_groups=2;ssm_conv=4;ssm_chunk=64"));
	synth_in_default(&b);
	prism_err_clear(&err);
	assert_int_equal(synth_meta_parse(d, &b, &err), 0);
	assert_memory_equal(&in.m, &b.m, sizeof(in.m));
	/* Two stages of 4: the first holds layers 0..3 (M - * M), the
	 * second the rest; each stage's parameters are its kinds'. */
	in.lay.pp = 2;
	in.lay.microbatches = 4;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), 0);
	{
		struct mem_stage s0, s1;
		double pm = llm_kind_params(&in.m, LLM_KIND_MAMBA),
		       pa = llm_kind_params(&in.m, LLM_KIND_ATTN),
		       pl = llm_kind_params(&in.m, LLM_KIND_MLP);
		mem_stage(&in.m, &in.lay, in.hw, 0, &s0);
		mem_stage(&in.m, &in.lay, in.hw, 1, &s1);
		/* stage 0: 2 M, 1 *, 1 - and the embedding; stage 1: 1 M, 1
		 * *, 2 - and the final norm and the tied head's copy */
		assert_rel_close(s0.params, 2 * pm + pa + pl + 256000.0, 1e-15);
		assert_rel_close(s1.params, pm + pa + 2 * pl + 512 + 256000.0, 1e-15);
	}
	g = build(&in, &so, &st);
	assert_true(synth_lower_bound(&in) <= st.iter_s);
	synth_out_release(&so);
	graph_free(g);
	/* The balanced partition on 3 stages against every split tried (an
	 * independent search): its largest stage time, by the kinds' times,
	 * is the least any split has. */
	{
		struct layout r;
		double w[LLM_KINDS] = {0}, emb, head, best = 1e300, got = 0, a;
		int first = 0;
		in.lay.pp = 3;
		in.lay.microbatches = 3;
		in.lay.partition = LAYOUT_PART_BALANCED;
		for (int k = 0; k < LLM_KINDS; k++) {
			double f, bw;
			synth_kind_layer_times(&in, k, &f, &bw, &a);
			w[k] = f + bw;
		}
		synth_extra_times(&in, &emb, &head);
		prism_err_clear(&err);
		assert_int_equal(synth_partition(&in, &r, &err), 0);
		for (int st3 = 0; st3 < 3; st3++) {
			double load = st3 == 0 ? emb : st3 == 2 ? head : 0;
			int n = layout_stage_layers(&in.m, &r, st3);
			for (int i = first; i < first + n; i++)
				load += w[llm_layer_kind(&in.m, i)];
			first += n;
			got = load > got ? load : got;
		}
		assert_int_equal(first, 8);
		for (int i = 1; i < 8; i++)
			for (int j = i + 1; j < 8; j++) {
				double l0 = emb, l1 = 0, l2 = head, mx;
				for (int k = 0; k < 8; k++)
					*(k < i	  ? &l0
					  : k < j ? &l1
						  : &l2) += w[llm_layer_kind(&in.m, k)];
				mx = l0 > l1 ? l0 : l1;
				mx = mx > l2 ? mx : l2;
				best = mx < best ? mx : best;
			}
		print_message("balanced %d,%d,%d: %.6f ms, best %.6f ms\n",
			      layout_stage_layers(&in.m, &r, 0), layout_stage_layers(&in.m, &r, 1),
			      layout_stage_layers(&in.m, &r, 2), got * 1e3, best * 1e3);
		assert_rel_close(got, best, 1e-9);
	}
}

/* The analytic estimates of in and of hy (its hybrid form) at a global
 * batch of 16: their inputs in *a and *ah, their estimates in *o, *oh. */
static void analytic_pair(const struct synth_in *in, const struct synth_in *hy,
			  struct analytic_in *a, struct analytic_in *ah, struct analytic_out *o,
			  struct analytic_out *oh)
{
	struct prism_err err;
	analytic_in_default(a);
	a->m = in->m;
	a->hw = in->hw;
	a->lay = in->lay;
	a->global_batch = 16;
	*ah = *a;
	ah->m = hy->m;
	prism_err_clear(&err);
	assert_int_equal(analytic_estimate(a, o, &err), 0);
	assert_int_equal(analytic_estimate(ah, oh, &err), 0);
}

/* A pattern of attention and MLP layers in pairs ("*-*-...") runs a
 * transformer's layers split in two: against the 4-layer model, the same
 * kernels (FLOPs), the same parameters on each stage, and the same
 * analytic estimate -- compute, tensor-parallel time, iteration -- and
 * lower bound to rounding, on 2 stages of tp 2 (each stage's two layers as
 * four), and with cp 2. */
static void test_hybrid_as_transformer(void **state)
{
	struct synth_in in, hy;
	struct synth_out so, sh;
	struct settle_out st, sth;
	struct graph *g, *gh;
	struct analytic_in a, ah;
	struct analytic_out o, oh;
	struct mem_est me, mh;
	struct prism_err err;
	(void)state;
	small(&in);
	in.m.layers = 4;
	in.lay.tp = 2;
	in.lay.pp = 2;
	in.lay.dp = 2;
	in.lay.sp = 1;
	in.lay.microbatches = 4;
	in.steps = 1;
	hy = in;
	strcpy(hy.m.pattern, "*-*-*-*-");
	hy.m.layers = 8;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&hy, &err), 0);
	assert_rel_close(llm_params(&hy.m), llm_params(&in.m), 1e-15);
	assert_rel_close(llm_flops_iter(&hy.m, 1, 0), llm_flops_iter(&in.m, 1, 0), 1e-15);
	g = build(&in, &so, &st);
	gh = build(&hy, &sh, &sth);
	assert_rel_close(sh.flops, so.flops, 1e-12);
	/* The optimizer runs per layer (its L2 norm, scale and Adam
	 * kernels, and the gradient buffer's fill): 8 layers' against 4, 16
	 * kernels more. */
	assert_int_equal(sh.kernels - so.kernels, 16);
	synth_mem(&in, &me);
	synth_mem(&hy, &mh);
	assert_rel_close(mh.params_per_gpu, me.params_per_gpu, 1e-15);
	analytic_pair(&in, &hy, &a, &ah, &o, &oh);
	assert_rel_close(oh.t_compute, o.t_compute, 1e-12);
	assert_rel_close(oh.t_tp, o.t_tp, 1e-12);
	assert_rel_close(oh.t_slot, o.t_slot, 1e-12);
	/* The optimizer's launches end this host-bound step: 8 layers'
	 * against 4, 8 more kernels a stage (synth_stage_host: each layer's
	 * four); the rest is the same. */
	{
		struct synth_stage_host shy[2], sin[2];
		synth_stage_host(&hy, shy);
		synth_stage_host(&in, sin);
		assert_rel_close(shy[1].opt_s - sin[1].opt_s, 8 * 26.6e-6, 1e-9);
	}
	assert_true(oh.t_opt > o.t_opt);
	assert_rel_close(oh.t_iter - oh.t_opt, o.t_iter - o.t_opt, 1e-12);
	assert_rel_close(synth_lower_bound(&hy), synth_lower_bound(&in), 1e-12);
	print_message("transformer as *-: synth %.6f / %.6f ms, analytic %.6f ms\n",
		      st.iter_s * 1e3, sth.iter_s * 1e3, o.t_iter * 1e3);
	/* The same with context parallelism (the attention layers' ring). */
	a.lay.cp = ah.lay.cp = in.lay.cp = hy.lay.cp = 2;
	a.global_batch = ah.global_batch = 8;
	assert_int_equal(analytic_estimate(&a, &o, &err), 0);
	assert_int_equal(analytic_estimate(&ah, &oh, &err), 0);
	assert_rel_close(oh.t_iter - oh.t_opt, o.t_iter - o.t_opt, 1e-12);
	assert_rel_close(synth_lower_bound(&hy), synth_lower_bound(&in), 1e-12);
	synth_out_release(&so);
	synth_out_release(&sh);
	graph_free(g);
	graph_free(gh);
}

/* A hybrid model's MoE layers (pattern "E", Nemotron 3): "*E*E*E*E" runs
 * a 4-layer MoE transformer's layers split in two, each attention block
 * its own layer and each MoE block another -- against moe_small with every
 * layer MoE: the same parameters (total and active), FLOPs, kernels'
 * FLOPs, all-to-alls, parameters and experts' parameters on each stage,
 * analytic estimate and bound, on 2 stages of ep 4 (tp 2 sp), the
 * optimizer's kernels per layer apart; and its units fold (test_hier). */
static void test_hybrid_moe(void **state)
{
	struct synth_in in, hy;
	struct synth_out so, sh;
	struct settle_out st, sth;
	struct graph *g, *gh;
	struct analytic_in a, ah;
	struct analytic_out o, oh;
	struct mem_stage m0, m1;
	struct prism_err err;
	int n0 = 0, n1 = 0;
	(void)state;
	moe_small(&in);
	in.m.first_dense = 0;
	in.lay.tp = 2;
	in.lay.sp = 1;
	in.lay.pp = 2;
	in.lay.dp = 2;
	in.lay.ep = 4;
	in.lay.microbatches = 4;
	in.steps = 1;
	hy = in;
	strcpy(hy.m.pattern, "*E*E*E*E");
	hy.m.layers = 8;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&hy, &err), 0);
	assert_int_equal(llm_moe_layers(&hy.m), 4);
	assert_true(llm_is_moe_layer(&hy.m, 1) && !llm_is_moe_layer(&hy.m, 2));
	assert_rel_close(llm_params(&hy.m), llm_params(&in.m), 1e-15);
	assert_rel_close(llm_active_params(&hy.m), llm_active_params(&in.m), 1e-15);
	assert_rel_close(llm_flops_iter(&hy.m, 1, 0), llm_flops_iter(&in.m, 1, 0), 1e-15);
	g = build(&in, &so, &st);
	gh = build(&hy, &sh, &sth);
	assert_rel_close(sh.flops, so.flops, 1e-12);
	for (uint32_t i = 0; i < g->n_colls; i++)
		n0 += g->colls[i].kind == GC_ALL_TO_ALL;
	for (uint32_t i = 0; i < gh->n_colls; i++)
		n1 += gh->colls[i].kind == GC_ALL_TO_ALL;
	assert_int_equal(n1, n0);
	assert_true(n0 > 0);
	for (int s = 0; s < 2; s++) {
		mem_stage(&in.m, &in.lay, in.hw, s, &m0);
		mem_stage(&hy.m, &hy.lay, hy.hw, s, &m1);
		assert_rel_close(m1.params, m0.params, 1e-15);
		assert_rel_close(m1.optimizer, m0.optimizer, 1e-15);
	}
	analytic_pair(&in, &hy, &a, &ah, &o, &oh);
	assert_rel_close(oh.t_compute, o.t_compute, 1e-12);
	/* (the optimizer's launches apart: per layer, 8 against 4) */
	assert_true(oh.t_opt > o.t_opt);
	assert_rel_close(oh.t_iter - oh.t_opt, o.t_iter - o.t_opt, 1e-12);
	assert_rel_close(synth_lower_bound(&hy), synth_lower_bound(&in), 1e-12);
	assert_true(synth_lower_bound(&hy) <= sth.iter_s);
	print_message("MoE transformer as *E: synth %.6f / %.6f ms, analytic %.6f / %.6f ms\n",
		      st.iter_s * 1e3, sth.iter_s * 1e3, o.t_iter * 1e3, oh.t_iter * 1e3);
	synth_out_release(&so);
	synth_out_release(&sh);
	graph_free(g);
	graph_free(gh);
}

/* The model file's pattern and mixer, and its errors with file and line;
 * the shipped Nemotron-H 8B. */
static void test_hybrid_load(void **state)
{
	static const struct bad_model bad[] = {
	    {"hybrid_override_pattern = \"M-X*\";\n",
	     ":7: 'hybrid_override_pattern' layer 2: 'X' is not M (Mamba), * (attention), - "
	     "(MLP) or E (MoE)"},
	    {"hybrid_override_pattern = \"ME-*\";\n",
	     ":7: 'hybrid_override_pattern''s E layers need 'experts' and 'top_k'"},
	    {"hybrid_override_pattern = \"M-*-/*-\";\n",
	     ":7: 'hybrid_override_pattern' at 4: '/' (multi-token-prediction patterns) is not "
	     "modelled"},
	    {"hybrid_override_pattern = \"M-|*-\";\n",
	     ":7: 'hybrid_override_pattern' at 2: '|' (pipeline stage boundaries) belongs to the "
	     "layout: give the stages' layers with --partition"},
	    {"hybrid_override_pattern = \"M-*\";\n",
	     ":2: 'layers' 4 differs from the 3 layers of 'hybrid_override_pattern'"},
	    {"hybrid_override_pattern = 5;\n",
	     ":7: 'hybrid_override_pattern' must be a string of M, * and - (one a layer)"},
	    {"n_groups = 8;\n", ":7: 'n_groups' needs Mamba layers ('M' in "
				"'hybrid_override_pattern')"},
	    {"hybrid_override_pattern = \"*-*-\";\nchunk_size = 64;\n",
	     ":8: 'chunk_size' needs Mamba layers ('M' in 'hybrid_override_pattern')"},
	    {"hybrid_override_pattern = \"M-M*\";\nmamba_num_heads = 12;\nn_groups = 8;\n",
	     ":9: 'mamba_num_heads' 12 must be divisible by 'n_groups' 8 (each group's B and C "
	     "serve whole heads, mamba_mixer.py)"},
	    {"hybrid_override_pattern = \"M-M*\";\nconv_kernel = 0;\n",
	     ":8: 'conv_kernel' must be a whole number in 1..64, not 0"},
	    {"hybrid_override_pattern = \"M-M*\";\nexperts = 8;\ntop_k = 2;\n",
	     ":8: 'experts' needs E layers in 'hybrid_override_pattern'"},
	    {"hybrid_override_pattern = \"MEM*\";\nexperts = 8;\ntop_k = 2;\nfirst_dense = 1;\n",
	     ":10: 'first_dense' with 'hybrid_override_pattern': the pattern's E layers are its "
	     "MoE layers"},
	};
	static const char head[] = "name = \"m\";\nlayers = 4;\nhidden = 1024;\nheads = 16;\n"
				   "seq = 1024;\nvocab = 32000;\n";
	struct llm m;
	struct prism_err err;
	(void)state;
	load_errors(head, bad, sizeof(bad) / sizeof(bad[0]));
	prism_err_clear(&err);
	assert_int_equal(llm_load(PRISM_SOURCE_DIR "/configs/models/nemotron-h-8b.cfg", &m, &err),
			 0);
	assert_int_equal(m.layers, 52);
	assert_int_equal(llm_kind_layers(&m, LLM_KIND_MAMBA), 24);
	assert_int_equal(llm_kind_layers(&m, LLM_KIND_ATTN), 4);
	assert_int_equal(llm_kind_layers(&m, LLM_KIND_MLP), 24);
	assert_int_equal(llm_layer_kind(&m, 7), LLM_KIND_ATTN);
	assert_int_equal(llm_layer_kind(&m, 51), LLM_KIND_MLP);
	/* in_proj 4096 x 18,560 (2 x 8192 + 2 x 8 x 128 + 128), as the
	 * checkpoint's mixer.in_proj; by hand: Mamba layers 24 x
	 * 109,644,160, attention 4 x 41,967,616, MLP 24 x 176,194,560, the
	 * untied embedding and head 2 x 131072 x 4096, the final norm 8192:
	 * 8,101,749,760 (the checkpoint: 8,100,852,736; prism adds norms'
	 * biases and linear biases Nemotron-H has not). */
	assert_true(llm_ssm_proj(&m) == 18560);
	assert_rel_close(llm_kind_params(&m, LLM_KIND_MAMBA), 109644160.0, 1e-15);
	assert_rel_close(llm_params(&m), 8101749760.0, 1e-15);
	/* Nemotron 3 Nano: 23 M, 6 *, 23 E; an E layer its norm 5,376, the
	 * router 128 x 2688 = 344,064 and 128 + 2 experts of 2 x 2688 x 1856
	 * = 9,977,856 (squared ReLU, not gated): 1,297,470,720; active with 6
	 * routed: 5,376 + 344,064 + 8 x 9,977,856 = 80,172,288. */
	assert_int_equal(llm_load(PRISM_SOURCE_DIR "/configs/models/nemotron-3-nano.cfg", &m, &err),
			 0);
	assert_int_equal(llm_kind_layers(&m, LLM_KIND_MAMBA), 23);
	assert_int_equal(llm_kind_layers(&m, LLM_KIND_ATTN), 6);
	assert_int_equal(llm_kind_layers(&m, LLM_KIND_MOE), 23);
	assert_int_equal(llm_moe_layers(&m), 23);
	assert_rel_close(llm_kind_params(&m, LLM_KIND_MOE), 1297470720.0, 1e-15);
	assert_rel_close(llm_kind_active_params(&m, LLM_KIND_MOE), 80172288.0, 1e-15);
}

/* The first kernel on rank 0 whose name holds `what`: its duration (ns),
 * 0 if none. */
static int64_t first_kernel_ns(const struct graph *g, const char *what)
{
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->kind[u] >= GN_KERNEL && g->procs[g->proc[u]].rank == 0 &&
		    strstr(strtab_get(&g->st, g->name[u]), what) != NULL)
			return g->dur_ns[u];
	return 0;
}

/*
 * The optimizer's precision (layout.h optimizer_dtype, mem.c
 * mem_param_bytes and mem_opt_traffic), the small GPT model by hand (h
 * 1024, ffn 4096: a layer's P = 12h^2 + 13h = 12,596,224 parameters) on
 * the H100 profile, whose optimizer kernels (multi-tensor-apply: its
 * elementwise line's multi_tensor_eff) take 1.270 us + bytes / (3350 GB/s
 * x 0.632) over 2-byte values, x 0.789 (multi_tensor_fp32_eff) over fp32
 * ones (mem_opt_traffic's grad_elem, state_elem: cost_mem_impl).
 *  - Bytes per parameter (weights + gradients + optimizer state): fp32
 *    2 + 4 + 12 (Megatron-LM's); bf16-states 2 + 4 + 6 (bf16 moments,
 *    the fp32 master as a 16-bit remainder: Transformer Engine's
 *    store_param_remainders), 2 + 4 + 8 under fp8 current scaling
 *    (Megatron keeps its own fp32 master there); pure bf16 2 + 2 + 4.
 *  - Layer 0's Adam kernel: 30 P = 377,886,720 bytes over fp32 states,
 *    144.238 us (179.754 at 0.632); 20 P = 251,924,480, 120.259 us
 *    (bf16-states: bf16 moments, 2-byte); 14 P = 176,347,136, 84.563
 *    us (pure bf16: PyTorch's fused AdamW reads weight, gradient and two
 *    moments, writes three).  The clipping over fp32 main gradients
 *    (fp32 and bf16-states): the norm 4 P, 20.332 us, the scaling 8 P,
 *    39.395 us; over pure bf16's gradients 2 P, 13.169 us, and 4 P,
 *    25.068 us; none with clip_grad 0.
 *  - Gradients all-reduced in bf16 under pure bf16 (2 bytes a parameter),
 *    fp32 otherwise.
 *  - Refused where no framework runs it.
 */
static void test_optimizer_dtype(void **state)
{
	static const struct {
		int opt, dtype, recipe, zero, clip;
		double w, g, o, adam_ns, norm_ns, scale_ns;
	} t[] = {
	    {LAYOUT_OPT_FP32, HW_BF16, 0, 0, 1, 2, 4, 12, 144238.322, 20332.443, 39394.886},
	    {LAYOUT_OPT_BF16_STATES, HW_BF16, 0, 1, 1, 2, 4, 6, 120259.458, 20332.443, 39394.886},
	    {LAYOUT_OPT_BF16_STATES, HW_FP8, LAYOUT_FP8_CURRENT, 1, 1, 2, 4, 8, 0, 0, 0},
	    {LAYOUT_OPT_BF16, HW_BF16, 0, 0, 1, 2, 2, 4, 84562.620, 13168.946, 25067.892},
	    {LAYOUT_OPT_BF16, HW_BF16, 0, 0, 0, 2, 2, 4, 84562.620, 0, 0},
	};
	struct prism_err err;
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct mem_stage ms;
		struct graph *g;
		double w, gb, o;
		small(&in);
		in.lay.optimizer_dtype = t[i].opt;
		in.lay.dtype = t[i].dtype;
		in.lay.fp8_recipe = t[i].recipe;
		in.lay.zero = t[i].zero;
		in.lay.clip_grad = t[i].clip;
		mem_param_bytes(&in.lay, &w, &gb, &o);
		assert_rel_close(w, t[i].w, 1e-15);
		assert_rel_close(gb, t[i].g, 1e-15);
		assert_rel_close(o, t[i].o, 1e-15);
		mem_stage(&in.m, &in.lay, in.hw, 0, &ms);
		assert_rel_close(ms.grads, t[i].g * ms.params, 1e-15);
		assert_rel_close(ms.optimizer, t[i].o * ms.params, 1e-15);
		if (t[i].adam_ns == 0)
			continue;
		g = build(&in, &so, &st);
		assert_true(fabs((double)first_kernel_ns(g, "FusedAdam") - t[i].adam_ns) <= 1);
		assert_true(fabs((double)first_kernel_ns(g, "L2NormFunctor") - t[i].norm_ns) <= 1);
		assert_true(fabs((double)first_kernel_ns(g, "ScaleFunctor") - t[i].scale_ns) <= 1);
		assert_int_equal(count_kernels(g, "L2NormFunctor") > 0, t[i].clip);
		synth_out_release(&so);
		graph_free(g);
		/* The gradients' reduction in the main gradients' dtype. */
		in.lay.dp = 2;
		assert_rel_close(synth_grad_bytes(&in), t[i].g, 1e-15);
	}
	/* Refused: bf16-states outside Megatron-LM's distributed optimizer,
	 * pure bf16 in it or DeepSpeed's, either with fp16 weights. */
	{
		struct synth_in in;
		small(&in);
		prism_err_clear(&err);
		in.lay.optimizer_dtype = LAYOUT_OPT_BF16_STATES;
		assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
		assert_non_null(strstr(err.msg, "zero 1 with dp_impl megatron"));
		in.lay.zero = 1;
		assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), 0);
		in.lay.optimizer_dtype = LAYOUT_OPT_BF16;
		assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
		in.lay.dp_impl = LAYOUT_DP_DEEPSPEED;
		assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
		in.lay.dp_impl = LAYOUT_DP_FSDP2;
		in.lay.zero = 3;
		assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), 0);
		in.lay.zero = 0;
		in.lay.dtype = HW_FP16;
		prism_err_clear(&err);
		assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
		assert_non_null(strstr(err.msg, "needs bf16 weights"));
	}
}

/* Rank 0's collectives of kind on `bytes` bytes labelled dtype, over the
 * whole run. */
static int colls_of(const struct graph *g, int kind, int64_t bytes, const char *dtype)
{
	int n = 0;
	for (uint32_t i = 0; i < g->n_colls; i++) {
		const struct graph_coll *x = &g->colls[i];
		n += x->kind == kind && x->bytes == bytes && g->procs[g->proc[x->node]].rank == 0 &&
		     strcmp(strtab_get(&g->st, x->dtype), dtype) == 0;
	}
	return n;
}

/* Rank 0's collectives of kind and dtype: their bytes summed (their count
 * into *n). */
static double coll_bytes(const struct graph *g, int kind, const char *dtype, int *n)
{
	double b = 0;
	*n = 0;
	for (uint32_t i = 0; i < g->n_colls; i++) {
		const struct graph_coll *x = &g->colls[i];
		if (x->kind == kind && g->procs[g->proc[x->node]].rank == 0 &&
		    strcmp(strtab_get(&g->st, x->dtype), dtype) == 0) {
			b += (double)x->bytes;
			(*n)++;
		}
	}
	return b;
}

/* A collective as a timeline carries it. */
struct coll_key {
	int kind;
	int64_t bytes;
	char dtype[16];
};

static int coll_key_cmp(const void *a, const void *b)
{
	const struct coll_key *x = a, *y = b;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return strcmp(x->dtype, y->dtype);
}

/* Rank 0's collectives of g (every one of a graph of one rank), sorted;
 * their count. */
static size_t coll_keys(const struct graph *g, struct coll_key **out)
{
	size_t n = 0;
	*out = calloc(g->n_colls + 1, sizeof(**out));
	assert_non_null(*out);
	for (uint32_t i = 0; i < g->n_colls; i++) {
		const struct graph_coll *x = &g->colls[i];
		if (g->procs[g->proc[x->node]].rank != 0)
			continue;
		(*out)[n].kind = x->kind;
		(*out)[n].bytes = x->bytes;
		snprintf((*out)[n].dtype, sizeof((*out)[n].dtype), "%s",
			 strtab_get(&g->st, x->dtype));
		/* bytes its dtype's elements do not divide: written as bytes */
		if (x->bytes % dtype_bytes((*out)[n].dtype, DTYPE_COLL))
			snprintf((*out)[n].dtype, sizeof((*out)[n].dtype), "Byte");
		n++;
	}
	qsort(*out, n, sizeof(**out), coll_key_cmp);
	return n;
}

/* The whole of file path, NUL-ended (the caller frees it). */
static char *file_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long len;
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/* g simulated, rank 0's timeline written to path and read back: rank 0's
 * collectives come back with their kind, bytes and dtype. */
static void timeline_round_trip(const struct graph *g, const char *path)
{
	struct timeline_opts to = {0, NULL, 0};
	struct sim_opts o;
	struct sim *s = sim_new(g);
	struct kineto_trace tr;
	struct strtab st;
	struct build_opts bo;
	struct prism_err err;
	struct graph *back = NULL;
	struct coll_key *a, *b;
	size_t na, nb;
	prism_err_clear(&err);
	sim_opts_default(&o);
	assert_non_null(s);
	assert_int_equal(sim_run(s, &o, &err), 0);
	assert_int_equal(timeline_write(s, path, &to, &err), 0);
	sim_free(s);
	assert_int_equal(strtab_init(&st), 0);
	assert_int_equal(kineto_read(path, &st, &tr, &err), 0);
	build_opts_default(&bo);
	assert_int_equal(build_graph(&tr, 1, &st, &bo, &back, &err), 0);
	kineto_release(&tr);
	strtab_release(&st);
	na = coll_keys(g, &a);
	nb = coll_keys(back, &b);
	assert_true(na > 0);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(a[i].kind, b[i].kind);
		assert_int_equal(a[i].bytes, b[i].bytes);
		assert_string_equal(a[i].dtype, b[i].dtype);
	}
	free(a);
	free(b);
	graph_free(back);
}

/*
 * Each collective labelled with the dtype it moves (emit.c se_dtype), so
 * that a timeline's elements (bytes / the label's size, sim/timeline.c)
 * are the data's; the small GPT by hand (P_l = 12,596,224 a layer, P =
 * 134,588,416; 1,024 tokens a microbatch), dp 2:
 *  - bf16, ZeRO-0: the gradients all-reduced in fp32 (Megatron-LM's
 *    accumulate_allreduce_grads_in_fp32 for bf16), 4 P = 538,353,664
 *    bytes a step, "Float" (were "BFloat16": twice the elements).
 *  - fp32, ZeRO-1: a layer's updated weights gathered in fp32, 4 P_l =
 *    50,384,896 bytes "Float" (12,596,224 elements), the gradients
 *    reduce-scattered 4 P "Float".
 *  - fp16, ZeRO-1: 2 P_l = 25,192,448 bytes "Half", the gradients 2 P
 *    "Half" (fp16 main gradients).
 *  - tp 2: the activations' all-reduces "BFloat16", the cross-entropy's
 *    three all-reduces a microbatch of 1,024 fp32 values each, "Float".
 *  - fp8 blockwise with fp8 primary weights: the amaxes' all-reduce
 *    (below).
 * Each timeline read back gives every collective's bytes again; the fp32
 * run's writes the layer gather as 12,596,224 "Float" elements.
 */
static void test_coll_dtypes(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	char path[] = "/tmp/prism-dtypes-XXXXXX", *buf;
	int steps, n, fd;
	(void)state;
	small(&in);
	in.lay.dp = 2;
	steps = in.steps > 0 ? in.steps : 1;
	g = build(&in, &so, &st);
	assert_true(coll_bytes(g, GC_ALL_REDUCE, "Float", &n) == 538353664.0 * steps);
	assert_true(coll_bytes(g, GC_ALL_REDUCE, "BFloat16", &n) == 0 && n == 0);
	synth_out_release(&so);
	graph_free(g);

	in.lay.zero = 1;
	in.lay.dtype = HW_FP32;
	g = build(&in, &so, &st);
	assert_int_equal(colls_of(g, GC_ALL_GATHER, 50384896, "Float"), 8 * steps);
	assert_true(coll_bytes(g, GC_REDUCE_SCATTER, "Float", &n) == 538353664.0 * steps);
	assert_true(coll_bytes(g, GC_ALL_GATHER, "BFloat16", &n) == 0 && n == 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	timeline_round_trip(g, path);
	buf = file_text(path);
	assert_non_null(strstr(buf,
			       "\"Collective name\":\"all_gather\",\"In msg nelems\":12596224,"
			       "\"Out msg nelems\":12596224,\"Group size\":2,\"dtype\":\"Float\""));
	free(buf);
	synth_out_release(&so);
	graph_free(g);

	in.lay.dtype = HW_FP16;
	g = build(&in, &so, &st);
	assert_int_equal(colls_of(g, GC_ALL_GATHER, 25192448, "Half"), 8 * steps);
	assert_true(coll_bytes(g, GC_REDUCE_SCATTER, "Half", &n) == 269176832.0 * steps);
	assert_true(coll_bytes(g, GC_ALL_GATHER, "BFloat16", &n) == 0 && n == 0);
	synth_out_release(&so);
	graph_free(g);

	/* Blockwise fp8 primary weights: the amaxes' all-reduce, 4 bytes a
	 * 128 x 128 block of the 8 layers' 100,769,792 parameters, 24,602
	 * bytes, which a float does not divide (6,150.5: prism's blocks are
	 * fractional); the timeline writes them as bytes. */
	in.lay.dtype = HW_FP8;
	in.lay.fp8_recipe = LAYOUT_FP8_BLOCKWISE;
	in.lay.fp8_param_gather = 1;
	g = build(&in, &so, &st);
	assert_int_equal(colls_of(g, GC_ALL_REDUCE, 24602, "Float"), steps);
	timeline_round_trip(g, path);
	buf = file_text(path);
	assert_non_null(strstr(buf, "\"In msg nelems\":24602,\"Out msg nelems\":24602,"
				    "\"Group size\":2,\"dtype\":\"Byte\""));
	free(buf);
	unlink(path);
	synth_out_release(&so);
	graph_free(g);

	small(&in);
	in.lay.tp = 2;
	g = build(&in, &so, &st);
	assert_int_equal(colls_of(g, GC_ALL_REDUCE, 4096, "Float"),
			 3 * in.lay.microbatches * steps);
	assert_true(coll_bytes(g, GC_ALL_REDUCE, "BFloat16", &n) > 0 && n > 0);
	synth_out_release(&so);
	graph_free(g);
}

/* DeepSpeed's ZeRO-1 with fp32 main gradients is its BF16_Optimizer, whose
 * boundary all-reduces the whole fp32 gradient buffer cast to the
 * communication dtype, bf16 by default (engine.py allreduce_gradients ->
 * buffered_allreduce_fallback -> allreduce_bucket; layout_dp_traits
 * ar_flat).  The small GPT (P = 134,588,416) at dp 2: one all-reduce a
 * step of 2 P = 269,176,832 bytes "BFloat16" on rank 0, none during the
 * backward (no bucket: it waits for the backward's end), no
 * reduce-scatter; on the wire a ring all-reduce's 2 (n - 1) / n of it,
 * 269,176,832 bytes at n = 2, twice the reduce-scatter's (n - 1) / n x
 * 2 P = 134,588,416 that DeepSpeed's ZeRO optimizer (bf16 main
 * gradients: auto) sends for the same gradients, in buckets. */
static void test_ds_bf16_allreduce(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	int steps, n;
	(void)state;
	small(&in);
	in.lay.dp = 2;
	in.lay.zero = 1;
	in.lay.dp_impl = LAYOUT_DP_DEEPSPEED;
	in.lay.main_grads = LAYOUT_GRADS_FP32;
	steps = in.steps > 0 ? in.steps : 1;
	g = build(&in, &so, &st);
	assert_int_equal(colls_of(g, GC_ALL_REDUCE, 269176832, "BFloat16"), steps);
	assert_true(coll_bytes(g, GC_ALL_REDUCE, "BFloat16", &n) == 269176832.0 * steps &&
		    n == steps);
	/* Not in fp32 (4 P; the step's few small fp32 all-reduces apart). */
	assert_int_equal(colls_of(g, GC_ALL_REDUCE, 538353664, "Float"), 0);
	assert_true(coll_bytes(g, GC_ALL_REDUCE, "Float", &n) < 1e6);
	assert_true(coll_bytes(g, GC_REDUCE_SCATTER, "BFloat16", &n) == 0 && n == 0);
	assert_true(coll_bytes(g, GC_REDUCE_SCATTER, "Float", &n) == 0 && n == 0);
	synth_out_release(&so);
	graph_free(g);

	in.lay.main_grads = LAYOUT_GRADS_AUTO;
	g = build(&in, &so, &st);
	/* Bucketed: 40e6-parameter buckets (layout_bucket_params) reduced as
	 * they fill, more than one a step. */
	assert_true(coll_bytes(g, GC_REDUCE_SCATTER, "BFloat16", &n) == 269176832.0 * steps &&
		    n > steps);
	assert_true(coll_bytes(g, GC_ALL_REDUCE, "BFloat16", &n) == 0 && n == 0);
	synth_out_release(&so);
	graph_free(g);
}

/*
 * An fp32 run's activations cross the ranks in fp32 (kperf_act_bytes 4:
 * Megatron-LM's params_dtype and pipeline_dtype torch.float without
 * --bf16/--fp16), bf16's in 2 bytes a value.  The small GPT by hand, a
 * microbatch of b s = 1 x 1024 tokens, h 1024:
 *  - tp 2 with sequence parallelism, pp 2: a layer's all-gather of b s h
 *    = 1,048,576 values, 4,194,304 bytes "Float" (bf16: 2,097,152
 *    "BFloat16"), its reduce-scatter the same; a pipeline send of the
 *    rank's b s h / t = 524,288 values, 2,097,152 bytes "Float" (bf16
 *    1,048,576), one a microbatch forward from stage 0; no all-gather
 *    or send of rank 0 labelled "BFloat16".  The timeline writes the gather as
 *    1,048,576 "Float" elements.
 *  - cp 2 (the ring): a forward transfer of the key-value block, K and V
 *    of b s / cp = 512 tokens x 16 heads / 1 x 64 = 2 x 524,288 values,
 *    4,194,304 bytes "Float" (bf16 2,097,152).  The memory model's
 *    working memory is the ring's backward (mem.c cp_ring_bytes:
 *    Transformer Engine's two buffers of K, V and their gradients, 4 x 2
 *    x 512 x 16 x 64 = 4,194,304 values, and dq_buffer, 512 x 16 x 64 =
 *    524,288; more than the forward's 2 blocks), 2 x 4,718,592 =
 *    9,437,184 bytes more under fp32 and nothing else moved.
 * The estimate's forward tensor-parallel time (synth_layer_tp_s) is the
 * layer's two rounds, each a reduce-scatter and an all-gather of b s h
 * over the 2 ranks, priced by the collective model on those bytes:
 * 4,194,304 under fp32, 2,097,152 under bf16.  (Its backward's excess
 * is not compared: the reductions beside the weight-gradient GEMMs hide
 * more behind fp32's slower GEMMs.)
 */
static void test_fp32_activations(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	char path[] = "/tmp/prism-fp32act-XXXXXX", *buf;
	int steps, n, fd;
	double tpf[2], tpa[2];
	struct mem_stage ms[2];
	(void)state;
	for (int fp32 = 0; fp32 < 2; fp32++) {
		const char *dt = fp32 ? "Float" : "BFloat16";
		double eb = fp32 ? 4 : 2;
		small(&in);
		in.lay.dtype = fp32 ? HW_FP32 : HW_BF16;
		in.lay.tp = 2;
		in.lay.sp = 1;
		in.lay.pp = 2;
		steps = in.steps > 0 ? in.steps : 1;
		tpa[fp32] = synth_layer_tp_s(&in, &tpf[fp32]);
		g = build(&in, &so, &st);
		assert_true(colls_of(g, GC_ALL_GATHER, (int64_t)(1048576 * eb), dt) > 0);
		assert_true(colls_of(g, GC_REDUCE_SCATTER, (int64_t)(1048576 * eb), dt) > 0);
		assert_int_equal(colls_of(g, GC_SEND, (int64_t)(524288 * eb), dt),
				 in.lay.microbatches * steps);
		assert_int_equal(
		    colls_of(g, GC_SEND, (int64_t)(524288 * (6 - eb)), fp32 ? "BFloat16" : "Float"),
		    0);
		if (fp32) {
			assert_true(coll_bytes(g, GC_ALL_GATHER, "BFloat16", &n) == 0 && n == 0);
			assert_true(coll_bytes(g, GC_SEND, "BFloat16", &n) == 0 && n == 0);
			fd = mkstemp(path);
			assert_true(fd >= 0);
			close(fd);
			timeline_round_trip(g, path);
			buf = file_text(path);
			assert_non_null(strstr(buf, "\"Collective name\":\"all_gather\",\"In msg "
						    "nelems\":1048576,\"Out msg nelems\":1048576,"
						    "\"Group size\":2,\"dtype\":\"Float\""));
			free(buf);
			unlink(path);
		}
		synth_out_release(&so);
		graph_free(g);

		small(&in);
		in.lay.dtype = fp32 ? HW_FP32 : HW_BF16;
		in.lay.cp = 2;
		mem_stage(&in.m, &in.lay, in.hw, 0, &ms[fp32]);
		g = build(&in, &so, &st);
		assert_true(colls_of(g, GC_SEND_RECV, (int64_t)(1048576 * eb), dt) > 0);
		synth_out_release(&so);
		graph_free(g);
	}
	assert_true(ms[1].transient - ms[0].transient == 9437184);
	for (int fp32 = 0; fp32 < 2; fp32++) {
		struct comm_est rs, ag;
		double b = fp32 ? 4194304 : 2097152;
		small(&in);
		assert_int_equal(comm_time(in.hw, GC_REDUCE_SCATTER, b, (struct comm_group){2, 2},
					   in.comm_eff, COMM_AUTO, &rs),
				 0);
		assert_int_equal(comm_time(in.hw, GC_ALL_GATHER, b, (struct comm_group){2, 2},
					   in.comm_eff, COMM_AUTO, &ag),
				 0);
		assert_true(fabs(tpf[fp32] - 2 * (rs.time_s + ag.time_s)) < 1e-15);
		assert_true(tpa[fp32] > tpf[fp32]);
	}
}

/* Rank 0's kernels of layer 0, microbatch 0, in one phase of its first
 * step whose name holds `what`: their bytes summed (cost_work), their
 * count into *n. */
static double layer0_bytes(const struct graph *g, int phase, const char *what, int *n)
{
	double sum = 0;
	int32_t it = -1;
	*n = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		double f, b;
		if (g->kind[u] != GN_KERNEL || g->procs[g->proc[u]].rank != 0 || g->layer[u] != 0 ||
		    g->mb[u] != 0 || g->phase[u] != phase || (it >= 0 && g->iter[u] != it))
			continue;
		it = g->iter[u];
		if (!strstr(strtab_get(&g->st, g->name[u]), what))
			continue;
		assert_int_equal(cost_work(g, u, &f, &b), 1);
		sum += b;
		(*n)++;
	}
	return sum;
}

/*
 * The residual stream's element size (kperf_resid_bytes; docs/MODEL.md
 * "FP32 residual connection"), the small GPT by hand: a layer's b s h =
 * 1 x 1024 x 1024 = nh = 1,048,576 values, tp 1, dropout on, three runs:
 * bf16; bf16 with fp32_residual (Megatron-LM's --fp32-residual-
 * connection: the stream fp32, the modules bf16); and an fp32 run
 * (everything 4 bytes).  Per layer, forward:
 *  - the two bias-dropout-adds (the branch, the residual read, the sum
 *    written, the one-byte mask): bf16 (2 + 2 + 2 + 1) nh = 7 nh each,
 *    fp32_residual (2 + 4 + 4 + 1) = 11 nh, fp32 (4 + 4 + 4 + 1) = 13 nh;
 *  - fp32_residual's casts of the stream to bf16 before the two norms
 *    (TELayerNormColumnParallelLinear's x.to(), 4 + 2): 6 nh each, none
 *    in the others;
 *  - the two norms (input read, output written): 4 nh each in bf16 and
 *    under fp32_residual (they read the bf16 cast), 8 nh in fp32.
 * Backward:
 *  - the two dropouts' backward (the stream's gradient and the mask read,
 *    the gradient written): 5 nh bf16, 9 nh fp32_residual and fp32; then
 *    under fp32_residual the branch's gradient cast to bf16 (6 nh), and
 *    after each norm's backward its gradient cast to fp32 (6 nh);
 *  - the two residual junctions' gradient sums (two read, one written):
 *    6 nh bf16, 12 nh fp32_residual and fp32.
 * The embedding's output is cast to fp32 once a microbatch (2 + 4 = 6 nh;
 * embeddings.float()); at tp 2 with sequence parallelism, learned
 * positions split after the cast, so its backward all-gathers the fp32
 * gradient.  At pp 2 the pipeline's sends are fp32 under
 * fp32_residual (pipeline_dtype torch.float): nh x 4 = 4,194,304 bytes
 * "Float", one a microbatch forward from stage 0, none "BFloat16"; the
 * estimate's transfer (synth_pp_transfer_s) the fp32 run's.  Memory: the
 * layer's saved tensors as bf16's (the norms keep their bf16 casts)
 * except a fully recomputed layer's checkpointed input, 4 nh (bf16 2 nh),
 * and recomputing mlp, whose checkpoint keeps the fp32 input where the
 * norm kept its cast: 2 nh more; at pp 2 the last stage holds its
 * received fp32 input until the backward, 4 nh a microbatch held.  The bound stays under the simulated
 * step.
 */
static void test_fp32_residual(void **state)
{
	static const struct {
		const char *what;
		int phase;
		double per[3]; /* bytes a kernel over nh: bf16, fp32_residual, fp32 */
	} want[] = {
	    {"fused_bias_dropout_add_kernel", PH_FORWARD, {7, 11, 13}},
	    {"(residual to bf16)", PH_FORWARD, {0, 6, 0}},
	    {"vectorized_layer_norm_kernel", PH_FORWARD, {4, 4, 8}},
	    {"masked_scale_kernel_dropout_backward", PH_BACKWARD, {5, 9, 9}},
	    {"(gradient to bf16)", PH_BACKWARD, {0, 6, 0}},
	    {"(gradient to fp32)", PH_BACKWARD, {0, 6, 0}},
	    {"(residual gradient)", PH_BACKWARD, {6, 12, 12}},
	};
	const double nh = 1048576;
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct prism_err err;
	struct graph *g;
	double pp_s[3], act[3], full[3], mlp[3];
	struct mem_stage ms0[3], ms1[3];
	int n, steps;
	(void)state;
	for (int v = 0; v < 3; v++) {
		small(&in);
		in.lay.dtype = v == 2 ? HW_FP32 : HW_BF16;
		in.lay.fp32_residual = v == 1;
		g = build(&in, &so, &st);
		steps = in.steps > 0 ? in.steps : 1;
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			double b = layer0_bytes(g, want[i].phase, want[i].what, &n);
			assert_int_equal(n, want[i].per[v] > 0 ? 2 : 0);
			assert_true(b == 2 * want[i].per[v] * nh);
		}
		assert_int_equal(count_kernels(g, "(embedding to fp32)"),
				 v == 1 ? in.lay.microbatches * steps : 0);
		assert_true(synth_lower_bound(&in) <= st.iter_s);
		synth_out_release(&so);
		graph_free(g);

		act[v] = mem_act_per_layer(&in.m, &in.lay);
		in.lay.recompute = LAYOUT_RECOMPUTE_SELECTIVE;
		in.lay.recompute_modules = LAYOUT_RC_MLP;
		mlp[v] = mem_act_per_layer(&in.m, &in.lay);
		in.lay.recompute = LAYOUT_RECOMPUTE_FULL;
		full[v] = mem_act_per_layer(&in.m, &in.lay);

		small(&in);
		in.lay.dtype = v == 2 ? HW_FP32 : HW_BF16;
		in.lay.fp32_residual = v == 1;
		in.lay.pp = 2;
		in.lay.microbatches = 4;
		pp_s[v] = synth_pp_transfer_s(&in);
		mem_stage(&in.m, &in.lay, in.hw, 0, &ms0[v]);
		mem_stage(&in.m, &in.lay, in.hw, 1, &ms1[v]);
		g = build(&in, &so, &st);
		steps = in.steps > 0 ? in.steps : 1;
		assert_int_equal(
		    colls_of(g, GC_SEND, (int64_t)(nh * (v ? 4 : 2)), v ? "Float" : "BFloat16"),
		    in.lay.microbatches * steps);
		if (v) {
			assert_true(coll_bytes(g, GC_SEND, "BFloat16", &n) == 0 && n == 0);
		}
		assert_true(synth_lower_bound(&in) <= st.iter_s);
		synth_out_release(&so);
		graph_free(g);
	}
	assert_true(pp_s[1] == pp_s[2] && pp_s[1] > pp_s[0]);
	/* Stage 1 (the last: one microbatch held at its peak) keeps its
	 * received fp32 input beside the norm's bf16 copy, 4 nh; stage 0's
	 * input is the embedding's, freed. */
	assert_true(ms1[1].activations - ms1[0].activations == 4 * nh);
	assert_true(ms1[1].inflight == 1 && ms0[1].activations == ms0[0].activations);
	/* tp 2 with sequence parallelism: the layers' gathers stay bf16 (b s h
	 * = 2,097,152 bytes "BFloat16"); the embedding (learned positions:
	 * all-reduced, cast, then split) gathers its fp32 gradient once a
	 * microbatch, 4,194,304 bytes "Float", and casts it back after. */
	small(&in);
	in.lay.fp32_residual = 1;
	in.lay.tp = 2;
	in.lay.sp = 1;
	g = build(&in, &so, &st);
	steps = in.steps > 0 ? in.steps : 1;
	assert_int_equal(colls_of(g, GC_ALL_GATHER, 4194304, "Float"), in.lay.microbatches * steps);
	assert_true(colls_of(g, GC_ALL_GATHER, 2097152, "BFloat16") > 0);
	assert_int_equal(count_kernels(g, "(embedding gradient to bf16)"),
			 in.lay.microbatches * steps);
	synth_out_release(&so);
	graph_free(g);
	assert_true(act[1] == act[0]);
	assert_true(mlp[1] - mlp[0] == 2 * nh);
	assert_true(full[0] == 2 * nh && full[1] == 4 * nh && full[2] == 4 * nh);
	/* Where Megatron-LM refuses it (arguments.py: "residual connection in
	 * fp32 only supported when using fp16 or bf16"). */
	small(&in);
	in.lay.dtype = HW_FP32;
	in.lay.fp32_residual = 1;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: fp32_residual with dtype fp32: Megatron-LM keeps the "
				     "residual in fp32 only around bf16 or fp16 modules (an fp32 "
				     "run's is fp32 already)");
	in.lay.dtype = HW_BF16;
	in.lay.framework = LAYOUT_FW_TORCH;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: fp32_residual is Megatron-LM's "
				     "--fp32-residual-connection (framework megatron), not torch");
}

/*
 * What crosses the tensor-parallel wire under fp8 (kperf_lowp_gather_bytes),
 * with and without Transformer Engine's userbuffers (--tp-overlap).  The
 * small GPT at tp 8 with sequence parallelism, a microbatch of b s = 1 x
 * 1024 tokens, h 1024, 8 layers, 2 steps: every all-gather and
 * reduce-scatter is of b s h = 1,048,576 values.  Under bf16 each is
 * 2,097,152 bytes "BFloat16".  Under fp8 (delayed scaling) a layer's
 * gathers of QKV's and FC1's inputs, of the projection's and FC2's output
 * gradients and the two re-gathers of the saved inputs for the weight
 * gradients are the uint8 data, 1,048,576 bytes "Byte": 6 a layer, 48 a
 * step, 96 in all; the reduce-scatters stay 2,097,152 bytes "BFloat16"
 * (66: 4 a layer, the output layer's and the embedding's, a step twice),
 * and the 4 bf16 gathers are the output layer's (a bf16
 * ColumnParallelLinear in Megatron-LM, its input re-gathered for its
 * weight gradient) and the embedding's gradient's, 2 a step.  Userbuffers
 * moves the same bytes (base.py fill_userbuffers_buffer_for_all_gather
 * into initialize_ub's uint8 all-gather buffers): the same 96 and 4, only
 * placed beside the GEMMs (before issue 33's fp8 wire the overlapped
 * gathers were 2 bytes a value: 96 of 2,097,152 bytes "BFloat16" more).
 * mxfp8 gathers each usage's data with its E8M0 scales, 1 + 1/32 bytes a
 * value: 1,081,344 bytes one copy (the forward's 2 and the 2 re-gathers a
 * layer: 64), 2,162,688 both (the 2 output gradients a layer: 32).
 */
static void test_fp8_tp_gathers(void **state)
{
	static const struct {
		int dtype, recipe, ov;
		int fp8, bf16, q, q2; /* gathers of 1 B, 2 B, 1 + 1/32 B, twice that */
	} want[] = {{HW_BF16, LAYOUT_FP8_DELAYED, 0, 0, 100, 0, 0},
		    {HW_BF16, LAYOUT_FP8_DELAYED, 1, 0, 100, 0, 0},
		    {HW_FP8, LAYOUT_FP8_DELAYED, 0, 96, 4, 0, 0},
		    {HW_FP8, LAYOUT_FP8_DELAYED, 1, 96, 4, 0, 0},
		    {HW_FP8, LAYOUT_FP8_CURRENT, 1, 96, 4, 0, 0},
		    {HW_FP8, LAYOUT_FP8_MXFP8, 1, 0, 4, 64, 32}};
	struct hw_profile bw;
	(void)state;
	fp8_gpu(&bw);
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		int n8, n16, nq, nq2, nrs;
		small(&in);
		if (want[k].recipe == LAYOUT_FP8_MXFP8)
			in.hw = &bw;
		in.lay.tp = 8;
		in.lay.sp = 1;
		in.lay.tp_overlap = want[k].ov;
		in.lay.dtype = want[k].dtype;
		in.lay.fp8_recipe = want[k].recipe;
		g = build(&in, &so, &st);
		n8 = colls_of(g, GC_ALL_GATHER, 1048576, "Byte");
		n16 = colls_of(g, GC_ALL_GATHER, 2097152, "BFloat16");
		nq = colls_of(g, GC_ALL_GATHER, 1081344, "Byte");
		nq2 = colls_of(g, GC_ALL_GATHER, 2162688, "Byte");
		nrs = colls_of(g, GC_REDUCE_SCATTER, 2097152, "BFloat16");
		print_message("tp 8 sp%s, %s %s: gathers %d of 1 B, %d of 2 B, %d and %d of "
			      "1 + 1/32 B a value, %d reduce-scatters\n",
			      want[k].ov ? " overlapped" : "", hw_dtype_name(want[k].dtype),
			      layout_fp8_recipe_name(want[k].recipe), n8, n16, nq, nq2, nrs);
		assert_int_equal(n8, want[k].fp8);
		assert_int_equal(n16, want[k].bf16);
		assert_int_equal(nq, want[k].q);
		assert_int_equal(nq2, want[k].q2);
		assert_int_equal(nrs, 66);
		synth_out_release(&so);
		graph_free(g);
	}
}

/*
 * Context parallelism's key-value blocks under fp8 attention
 * (kperf_cp_kv_bytes).  The small GPT at cp 2, tp 1 (16 heads of 64, seq
 * 1024: a rank's 512 tokens), 8 layers, 2 steps: a rank's K and V are 2 x
 * 512 x 16 x 64 = 1,048,576 values.
 *  - bf16 attention: each layer's forward sends the block once (cp - 1),
 *    2,097,152 bytes "BFloat16", and its backward the block with its
 *    gradient, 4,194,304 bytes: 16 of each.
 *  - fp8 attention, delayed (and current) scaling: the forward's block is
 *    the uint8 data, 1,048,576 bytes "Byte"; the backward sends the block
 *    alone, 1,048,576 bytes (32 SendRecvs of it in all), and the
 *    gradients go by one all-to-all of cp x the block, 2,097,152 bytes
 *    "Byte" over the 2 ranks, issued before the last step's kernel and
 *    waited after it: with attention kernels far shorter than it (x 0.01)
 *    and no host costs, the compute stream's next kernel starts after it
 *    ends.
 *  - mxfp8: the blocks travel in bf16 (2,097,152 bytes "BFloat16", 32),
 *    the gradients' all-to-all in uint8 as above.
 *  - the all-gather form (Llama 3's), delayed: the forward gathers cp x
 *    the uint8 block, 2,097,152 bytes "Byte", the backward reduce-scatters
 *    the gradients in bf16, 4,194,304 bytes.
 */
static void test_fp8_cp_ring(void **state)
{
	static const struct {
		int recipe, fp8_attn, ag;
		int kv1, kv2, kvdkv, a2a; /* SendRecvs of 1 B and 2 B blocks, of
					   * block and gradient; all-to-alls */
	} want[] = {{LAYOUT_FP8_DELAYED, 0, 0, 0, 16, 16, 0},
		    {LAYOUT_FP8_DELAYED, 1, 0, 32, 0, 0, 16},
		    {LAYOUT_FP8_CURRENT, 1, 0, 32, 0, 0, 16},
		    {LAYOUT_FP8_MXFP8, 1, 0, 0, 32, 0, 16},
		    {LAYOUT_FP8_DELAYED, 1, 1, 0, 0, 0, 0}};
	struct hw_profile bw, quiet = hw;
	(void)state;
	fp8_gpu(&bw);
	bw.slow_compute = bw.slow_comm = quiet.slow_compute = quiet.slow_comm = 0;
	/* kperf_cp_kv_bytes: the activations' bytes without fp8 attention
	 * (fp32's 4), 1 with it but mxfp8's blocks (bf16, 2); the
	 * gradients' all-to-all 1 under every recipe */
	assert_true(kperf_cp_kv_bytes(HW_FP32, LAYOUT_FP8_DELAYED, 0, 1) == 4);
	assert_true(kperf_cp_kv_bytes(HW_FP8, LAYOUT_FP8_MXFP8, 0, 0) == 2);
	assert_true(kperf_cp_kv_bytes(HW_BF16, LAYOUT_FP8_MXFP8, 1, 0) == 1);
	assert_true(kperf_cp_kv_bytes(HW_FP8, LAYOUT_FP8_BLOCKWISE, 1, 0) == 1);
	assert_true(kperf_cp_kv_bytes(HW_FP4, LAYOUT_FP8_DELAYED, 1, 0) == 1);
	assert_true(kperf_cp_kv_bytes(HW_FP8, LAYOUT_FP8_MXFP8, 1, 0) == 2);
	assert_true(kperf_cp_kv_bytes(HW_FP8, LAYOUT_FP8_MXFP8, 1, 1) == 1);
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		int waited = 0;
		small(&in);
		in.hw = want[k].recipe == LAYOUT_FP8_MXFP8 ? &bw : &quiet;
		/* no host costs, attention kernels far shorter than the
		 * all-to-all: what follows the last step waits for it */
		in.cpu_op_s = in.launch_s = in.event_s = in.gpu_lag_s = 0;
		in.scale[KC_ATTENTION] = 0.01;
		in.lay.cp = 2;
		in.lay.dtype = HW_FP8;
		in.lay.fp8_recipe = want[k].recipe;
		in.lay.fp8_attention = want[k].fp8_attn;
		in.lay.cp_comm = want[k].ag ? LAYOUT_CP_ALLGATHER : LAYOUT_CP_P2P;
		g = build(&in, &so, &st);
		assert_int_equal(colls_of(g, GC_SEND_RECV, 1048576, "Byte"), want[k].kv1);
		assert_int_equal(colls_of(g, GC_SEND_RECV, 2097152, "BFloat16"), want[k].kv2);
		assert_int_equal(colls_of(g, GC_SEND_RECV, 4194304, "BFloat16"), want[k].kvdkv);
		assert_int_equal(colls_of(g, GC_ALL_TO_ALL, 2097152, "Byte"), want[k].a2a);
		if (want[k].ag) {
			assert_int_equal(colls_of(g, GC_ALL_GATHER, 2097152, "Byte"), 16);
			assert_int_equal(colls_of(g, GC_REDUCE_SCATTER, 4194304, "BFloat16"), 16);
		}
		for (uint32_t i = 0; i < g->n_colls; i++) {
			const struct graph_coll *x = &g->colls[i];
			uint32_t u = x->node, v, p;
			if (x->kind != GC_ALL_TO_ALL)
				continue;
			assert_int_equal(x->group_size, 2);
			/* the last step's kernel, beside it (the one that
			 * starts nearest), and the compute stream's next kernel
			 * (a stream's tasks are contiguous, in order) */
			p = UINT32_MAX;
			for (v = 0; v < g->n_nodes; v++)
				if (g->procs[g->proc[v]].rank == g->procs[g->proc[u]].rank &&
				    strcmp(strtab_get(&g->st, g->name[v]),
					   "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel") == 0 &&
				    (p == UINT32_MAX || llabs(g->start_ns[v] - g->start_ns[u]) <
							    llabs(g->start_ns[p] - g->start_ns[u])))
					p = v;
			assert_true(p != UINT32_MAX);
			for (v = p + 1; v < g->n_nodes && g->proc[v] == g->proc[p]; v++)
				if (g->kind[v] == GN_KERNEL)
					break;
			assert_true(v < g->n_nodes && g->proc[v] == g->proc[p]);
			assert_true(g->start_ns[v] >= g->start_ns[u] + g->dur_ns[u]);
			waited++;
		}
		assert_int_equal(waited, want[k].a2a);
		synth_out_release(&so);
		graph_free(g);
	}
}

/*
 * FP8 primary weights (layout.h fp8_param_gather: Megatron-LM's
 * --fp8-param-gather; docs/MODEL.md "FP8 primary weights"), the small GPT
 * by hand on the H100 profile (fp8 GEMMs TN-only), fp8 delayed scaling,
 * dp 2, ZeRO-1 (Megatron-LM's distributed optimizer), one stage of 8
 * layers.  A layer's P_l = 12 h^2 + 13 h = 12,596,224 parameters, the 8
 * layers' 100,769,792; the embedding 32,000 x 1024 + 1024 x 1024 (learned
 * positions) = 33,816,576, the final norm 2 x 1024 = 2,048 (the head tied
 * on the same stage): P = 134,588,416.
 *  - One layer's updated weights all-gathered: without, bf16, 2 P_l =
 *    25,192,448 bytes ("BFloat16"); with, the uint8 buffer's fp8 data, P_l
 *    = 12,596,224 bytes ("Byte": 12,596,224 elements).  The embedding's
 *    and norm's stay bf16 in their own buffer: 2 x 33,818,624 =
 *    67,637,248 bytes either way.
 *  - Stage memory, weights: without, the bf16 weights 2 P = 269,176,832
 *    and TE's fp8 copy and transpose of each layer weight 2 x 100,769,792
 *    = 201,539,584: 470,716,416 bytes; with, no bf16 copy of a layer
 *    weight: 2 (P - 100,769,792) = 67,637,248 bf16 and the fp8 parameter
 *    with its transpose (1 + 1) x 100,769,792 = 201,539,584:
 *    269,176,832 bytes, 201,539,584 fewer.  Gradients (4 P) and the
 *    sharded optimizer state (12 P / 2) unchanged.
 *  - The optimizer: per layer FusedAdam over the 6,298,112-parameter
 *    shard without the bf16 write (28 bytes a parameter, not 30), then the
 *    master shard's cast to fp8 (te_cast_master_to_fp8, 4 + 1 = 5 bytes a
 *    parameter; delayed scaling has no amax pass); the amaxes of the 32
 *    linear weights all-reduced (max) over the 2 ranks: 128 bytes of
 *    "Float".  Current scaling adds the amax pass (4 bytes a parameter).
 *  - The lower bound stays under the simulated step (delayed, current,
 *    blockwise).
 *  - The forward's weight quantisation on the first microbatch: the
 *    transpose of the fp8 weight (post_all_gather_processing:
 *    te_transpose_fp8_weight, 1 + 1 bytes a value) in place of the
 *    cast-transpose of the bf16 one, 4 linears a layer.
 */
static void test_fp8_param_gather(void **state)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct mem_stage ms;
	struct mem_opt_traffic t;
	struct prism_err err;
	struct graph *g;
	int steps, n;
	(void)state;
	small(&in);
	in.lay.dtype = HW_FP8;
	in.lay.fp8_recipe = LAYOUT_FP8_DELAYED;
	in.lay.dp = 2;
	in.lay.zero = 1;
	steps = in.steps > 0 ? in.steps : 1;
	assert_false(hw.fp8_any_layout);
	assert_true(mem_param_gather_bytes(&in.lay) == 2);
	mem_stage(&in.m, &in.lay, in.hw, 0, &ms);
	assert_true(ms.params == 134588416.0);
	assert_true(ms.weights == 470716416.0);
	assert_true(ms.grads == 4 * 134588416.0);
	assert_true(ms.optimizer == 6 * 134588416.0);
	g = build(&in, &so, &st);
	assert_int_equal(colls_of(g, GC_ALL_GATHER, 25192448, "BFloat16"), 8 * steps);
	assert_int_equal(colls_of(g, GC_ALL_GATHER, 67637248, "BFloat16"), steps);
	assert_int_equal(count_kernels(g, "te_cast_transpose_fp8_weight"), 32 * steps);
	assert_int_equal(count_kernels(g, "te_cast_master_to_fp8"), 0);
	synth_out_release(&so);
	graph_free(g);

	in.lay.fp8_param_gather = 1;
	assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), 0);
	assert_true(mem_param_gather_bytes(&in.lay) == 1);
	mem_stage(&in.m, &in.lay, in.hw, 0, &ms);
	assert_true(ms.weights == 269176832.0);
	assert_true(ms.grads == 4 * 134588416.0);
	assert_true(ms.optimizer == 6 * 134588416.0);
	mem_opt_traffic(&in.lay, &t);
	assert_true(t.adam == 30 && t.adam_fp8w == 28 && t.quant == 5 && t.quant_amax == 0);
	g = build(&in, &so, &st);
	assert_int_equal(colls_of(g, GC_ALL_GATHER, 25192448, "BFloat16"), 0);
	assert_int_equal(colls_of(g, GC_ALL_GATHER, 12596224, "Byte"), 8 * steps);
	assert_int_equal(colls_of(g, GC_ALL_GATHER, 67637248, "BFloat16"), steps);
	assert_int_equal(colls_of(g, GC_ALL_REDUCE, 128, "Float"), steps);
	assert_int_equal(count_kernels(g, "te_cast_transpose_fp8_weight"), 0);
	assert_int_equal(count_kernels(g, "te_transpose_fp8_weight"), 32 * steps);
	/* (kind_count: the step's first iteration) */
	assert_int_equal(kind_count(g, "te_cast_master_to_fp8", 5 * 6298112.0, &n), 8);
	assert_int_equal(n, 8);
	assert_int_equal(count_kernels(g, "te_compute_amax_master"), 0);
	synth_out_release(&so);
	graph_free(g);
	in.lay.fp8_recipe = LAYOUT_FP8_CURRENT;
	mem_opt_traffic(&in.lay, &t);
	assert_true(t.quant_amax == 4 && t.quant == 5);
	/* The bound stays under the simulated step for each recipe. */
	for (int rc = LAYOUT_FP8_DELAYED; rc <= LAYOUT_FP8_BLOCKWISE; rc++) {
		struct predict_out p;
		in.lay.fp8_recipe = rc;
		prism_err_clear(&err);
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		assert_true(synth_lower_bound(&in) <= p.iter_s);
	}

	/* Refused where Megatron-LM does not run it, or prism does not model
	 * it. */
	in.lay.fp8_recipe = LAYOUT_FP8_DELAYED;
	in.lay.zero = 0;
	prism_err_clear(&err);
	assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: fp8_param_gather needs a sharded optimizer (zero 1 "
				     "or 2): Megatron-LM's --fp8-param-gather only runs with its "
				     "distributed optimizer or FSDP");
	in.lay.zero = 1;
	in.lay.dtype = HW_BF16;
	prism_err_clear(&err);
	assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
	assert_non_null(strstr(err.msg, "fp8_param_gather needs dtype fp8"));
	in.lay.dtype = HW_FP8;
	in.lay.zero = 3;
	prism_err_clear(&err);
	assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
	assert_non_null(strstr(err.msg, "not zero 3 with dp_impl megatron"));
	in.lay.zero = 1;
	in.lay.optimizer_dtype = LAYOUT_OPT_BF16_STATES;
	prism_err_clear(&err);
	assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
	assert_non_null(strstr(err.msg, "optimizer_dtype fp32"));
}

/*
 * LoRA (layout.h lora_rank; Megatron-Bridge's LoRALinear and
 * ParallelLinearAdapter), the small GPT model by hand: h 1024, 16 heads
 * (QKV 3072 wide), ffn 4096 (GeLU), s 1024, rank 8, tp 2 without sequence
 * parallelism.  Layer 0's forward: after QKV its adapter's A (1024 tokens
 * x 1024 -> 8 / 2 = 4), A's output all-gathered (1024 x 8 x 2 = 16,384
 * bytes), B (8 -> 3072 / 2 = 1536); after the projection's all-reduce
 * (1024 x 1024 x 2 = 2,097,152) its adapter's A (1024 / 2 = 512 -> 8)
 * all-reduced (16,384), B (8 -> 512) gathered (2,097,152); the same for
 * FC1 (1024 -> 4, 8 -> 2048) and FC2 (2048 -> 8, 8 -> 512).  Backward each
 * adapter's two GEMMs' input and weight gradients, B's input gradient
 * all-reduced, a column target's A's input gradient all-reduced too
 * (2,097,152), and of the base only the input gradients: no base _dw GEMM,
 * no logits _dw, no embedding backward.  Parameters trained a layer on a
 * rank: 8 (1024 + 3072) + 8 (1024 + 1024) + 8 (1024 + 4096) + 8 (4096 +
 * 1024) = 131,072, / 2 = 65,536: eight Adam kernels a step (no embedding's,
 * no final norm's), gradients 4 x 8 x 65,536 = 2,097,152 bytes, optimizer
 * state 12 x 8 x 65,536 = 6,291,456.
 */
static void test_lora(void **state)
{
	struct synth_in in;
	struct synth_out so, so0;
	struct settle_out st;
	struct graph *g, *g0;
	struct mem_stage ms;
	struct prism_err err;
	char gemms[4096], colls[1024];
	int steps;
	(void)state;
	small(&in);
	in.lay.tp = 2;
	in.lay.microbatches = 2;
	steps = in.steps > 0 ? in.steps : 1;
	g0 = build(&in, &so0, &st);
	in.lay.lora_rank = 8;
	assert_rel_close(layout_lora_params(&in.m, &in.lay), 65536.0, 1e-15);
	g = build(&in, &so, &st);
	layer_work(g, PH_FORWARD, "lora", gemms, sizeof(gemms), colls, sizeof(colls));
	assert_string_equal(gemms, "[[1024, 1024], [1024, 4]];[[1024, 8], [8, 1536]];"
				   "[[1024, 512], [512, 8]];[[1024, 8], [8, 512]];"
				   "[[1024, 1024], [1024, 4]];[[1024, 8], [8, 2048]];"
				   "[[1024, 2048], [2048, 8]];[[1024, 8], [8, 512]]");
	assert_string_equal(colls, "AG 16384;AR 2097152;AR 16384;AG 2097152;AG 16384;AR 2097152;"
				   "AR 16384;AG 2097152");
	layer_work(g, PH_BACKWARD, NULL, gemms, sizeof(gemms), colls, sizeof(colls));
	assert_string_equal(
	    gemms,
	    /* FC2's adapter, then FC2's input gradient */
	    "[[1024, 512], [512, 8]];[[8, 1024], [1024, 512]];[[1024, 8], [8, 2048]];"
	    "[[2048, 1024], [1024, 8]];[[1024, 1024], [1024, 2048]];"
	    /* FC1's */
	    "[[1024, 2048], [2048, 8]];[[8, 1024], [1024, 2048]];[[1024, 4], [4, 1024]];"
	    "[[1024, 1024], [1024, 4]];[[1024, 2048], [2048, 1024]];"
	    /* the projection's */
	    "[[1024, 512], [512, 8]];[[8, 1024], [1024, 512]];[[1024, 8], [8, 512]];"
	    "[[512, 1024], [1024, 8]];[[1024, 1024], [1024, 512]];"
	    /* QKV's */
	    "[[1024, 1536], [1536, 8]];[[8, 1024], [1024, 1536]];[[1024, 4], [4, 1024]];"
	    "[[1024, 1024], [1024, 4]];[[1024, 1536], [1536, 1024]]");
	/* Per block: the row adapter's [b s, r] all-reduce, the column
	 * adapter's, its A's input gradient all-reduced (b s h, 2 MiB), then
	 * the frozen base Linear's input gradient all-reduced after its
	 * GEMM (LinearWithFrozenWeight: at once, no weight gradient to
	 * overlap); the row-parallel Linear's gradient needs none without
	 * sequence parallelism. */
	assert_string_equal(colls, "AR 16384;AR 16384;AR 2097152;AR 2097152;AR 16384;AR 16384;"
				   "AR 2097152;AR 2097152");
	/* The step: four adapters' weight gradients a layer and microbatch,
	 * no other weight gradient; Adam over the adapters alone. */
	assert_int_equal(count_kernels(g, "lora_a_dw"), 4 * 8 * 2 * steps);
	assert_int_equal(count_kernels(g, "_dw"),
			 count_kernels(g, "lora_a_dw") + count_kernels(g, "lora_b_dw"));
	assert_true(count_kernels(g0, "_dw") > 0);
	assert_int_equal(count_kernels(g, "embedding_backward"), 0);
	assert_int_equal(count_kernels(g, "FusedAdam"), 8 * steps);
	assert_int_equal(count_kernels(g0, "FusedAdam"), 10 * steps);
	mem_stage(&in.m, &in.lay, in.hw, 0, &ms);
	assert_rel_close(ms.train, 8 * 65536.0, 1e-15);
	assert_rel_close(ms.grads, 4 * 8 * 65536.0, 1e-15);
	assert_rel_close(ms.optimizer, 12 * 8 * 65536.0, 1e-15);
	assert_rel_close(ms.weights, 2 * ms.params, 1e-15);
	synth_out_release(&so);
	synth_out_release(&so0);
	graph_free(g);
	graph_free(g0);
	/* The estimate follows the simulation no worse than it does full
	 * training's (the adapters' collectives counted, the frozen weights'
	 * gradients not), the bound stays below it, with and without
	 * sequence parallelism.  On a model the GPU decides (hidden 4096,
	 * four sequences a microbatch): small()'s is host-bound at eager's
	 * 26.6 us a kernel, LoRA's steps most (its adapters' 16 collectives
	 * a layer and microbatch, whose launches and event waits the
	 * estimate's host does not count: 33.3 ms simulated, 25.4
	 * estimated, full training 15.4 and 12.4). */
	in.m.hidden = 4096, in.m.ffn = 16384, in.m.heads = 32;
	in.lay.mbs = 4;
	for (int sp = 0; sp <= 1; sp++) {
		struct predict_out p, p0;
		double a, a0;
		in.lay.sp = sp;
		in.lay.lora_rank = 0;
		assert_int_equal(predict_synth(&in, &p0, NULL, NULL, &err), 0);
		a0 = predict_analytic(&in);
		in.lay.lora_rank = 8;
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		a = predict_analytic(&in);
		print_message("lora sp %d: simulated %.3f ms, analytic %.3f ms, bound %.3f ms; "
			      "full training %.3f, %.3f ms\n",
			      sp, p.iter_s * 1e3, a * 1e3, synth_lower_bound(&in) * 1e3,
			      p0.iter_s * 1e3, a0 * 1e3);
		/* (+ 0.03: with sp, full training's step re-gathers two
		 * inputs a layer, which its estimate counts, and LoRA's, its
		 * weights frozen, none; its estimate 3.3 % under.) */
		assert_true(fabs(a / p.iter_s - 1) <= fabs(a0 / p0.iter_s - 1) + 0.03);
		assert_true(synth_lower_bound(&in) <= p.iter_s);
	}
	/* Under a zero-bubble schedule the W passes hold the adapters' weight
	 * gradients alone; the bound stays below the step. */
	{
		struct predict_out p;
		in.lay.sp = 0;
		in.lay.pp = 2;
		in.lay.microbatches = 4;
		in.lay.schedule = LAYOUT_ZB1P;
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		assert_true(synth_lower_bound(&in) <= p.iter_s);
		in.lay.pp = 1;
		in.lay.microbatches = 2;
		in.lay.schedule = LAYOUT_1F1B;
	}
	/* The rules: A's rank split over tp; no LoRA on experts. */
	in.lay.sp = 0;
	in.lay.lora_rank = 3;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: lora_rank 3 must be divisible by tp 2 (a "
				     "column-parallel target's A matrix splits the rank)");
	in.lay.lora_targets = LAYOUT_LORA_PROJ | LAYOUT_LORA_FC2;
	assert_int_equal(synth_check(&in, &err), 0);
	assert_string_equal(layout_lora_targets_name(in.lay.lora_targets),
			    "linear_proj,linear_fc2");
	assert_int_equal(layout_lora_targets_parse("linear_fc2 linear_proj"),
			 LAYOUT_LORA_PROJ | LAYOUT_LORA_FC2);
	assert_int_equal(layout_lora_targets_parse("q_proj"), -1);
	moe_small(&in);
	in.lay.lora_rank = 8;
	prism_err_clear(&err);
	assert_int_equal(synth_check(&in, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: LoRA on mixture-of-experts layers is not modelled "
				     "(dense layers with linear_qkv, linear_proj, linear_fc1, "
				     "linear_fc2 only)");
}

/* ---- the host by execution mode (exec; docs/MODEL.md "Host") ---------- */

/* A bare run of `layers` layers whose every kernel takes kernel_s on the
 * GPU (the class lines' overhead, the model's share made nil): its step
 * time, and per step its kernels (*n) and the host's time (*host). */
static double exec_step(int exec, int layers, double kernel_s, double *n, double *host)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	small(&in);
	in.m.layers = layers;
	in.bare = 1;
	in.lay.exec = exec;
	for (int c = 0; c < KC_NCLASSES; c++) {
		in.cost[c].overhead_s = kernel_s;
		in.cost[c].eff = 1e15;
	}
	g = build(&in, &so, &st);
	*n = (double)so.kernels / so.steps;
	*host = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->proc[u] == g->proc[0] && g->kind[u] != GN_KERNEL && g->kind[u] != GN_WAIT)
			*host += (double)g->dur_ns[u] * 1e-9 / so.steps;
	synth_out_release(&so);
	graph_free(g);
	return st.iter_s;
}

/* Launches a layer's backward makes beyond its timed kernels: its two
 * norms' backwards are two kernels each (the input's gradient, the
 * weight's and bias's reduction), flash attention's three (the dot of the
 * output with its gradient, the main kernel, the query gradient's
 * conversion): 1 + 1 + 2. */
#define EXTRA_LAUNCHES_BWD 4

/* A host-bound unit sets the step.  Eager, 21.6 + 5 us a kernel (the
 * measured default, synth.h) and 5 us for each launch more of a
 * multi-kernel op (2 layers x EXTRA_LAUNCHES_BWD): with 5 us kernels the
 * host is behind and the step is its n ops and launches (the last
 * kernel's 1 us lag and 5 us after them); with 50 us kernels the GPU is,
 * and the step is the first launch and then n kernels of 1 + 50 us. */
static void test_exec_host_bound(void **state)
{
	double n, host, t, x = 2 * EXTRA_LAUNCHES_BWD * 5e-6;
	(void)state;
	t = exec_step(LAYOUT_EXEC_EAGER, 2, 5e-6, &n, &host);
	assert_true(n > 20);
	assert_rel_close(host, n * 26.6e-6 + x, 1e-6); /* its ops and launches */
	assert_rel_close(t, n * 26.6e-6 + x + 6e-6, 0.01);
	t = exec_step(LAYOUT_EXEC_EAGER, 2, 50e-6, &n, &host);
	assert_rel_close(t, 26.6e-6 + n * 51e-6, 0.01);
}

/* Graphs: a dense layer's forward and backward are one graph launch each
 * (synth_graph_fit's fixed cost), no per-kernel host cost, each node
 * 0.568 us on the GPU: 2 layers x (forward, backward) = 4 launches of
 * 15.50 us, and the GPU-bound step the first launch then n x (5 +
 * 0.568) us. */
static void test_exec_graphs(void **state)
{
	double n, host, t, fixed, node, f, b;
	struct synth_in in;
	(void)state;
	synth_graph_fit(&fixed, &node);
	t = exec_step(LAYOUT_EXEC_GRAPHS, 2, 5e-6, &n, &host);
	assert_rel_close(host, 4 * fixed, 1e-4); /* in whole ns */
	assert_rel_close(t, fixed + n * (5e-6 + node), 0.01);
	/* the dry run's host times: one launch a forward, one a backward */
	small(&in);
	in.lay.exec = LAYOUT_EXEC_GRAPHS;
	synth_layer_host(&in, 0, &f, &b);
	assert_rel_close(f, fixed, 1e-9);
	assert_rel_close(b, fixed, 1e-9);
}

/* Compiled: a layer's forward is the compiled graph's guards and eager's
 * kernels through Inductor's launcher: n_f x 9.1 + 37.5 us where eager's
 * is n_f x 26.6 us. */
static void test_exec_compiled(void **state)
{
	struct synth_in in;
	double ef, eb, cf, cb, nf, nb;
	(void)state;
	small(&in);
	synth_layer_host(&in, 0, &ef, &eb);
	nf = ef / 26.6e-6, nb = (eb - EXTRA_LAUNCHES_BWD * 5e-6) / 26.6e-6;
	assert_true(fabs(nf - round(nf)) < 1e-6 && nf >= 10);
	assert_true(fabs(nb - round(nb)) < 1e-6 && nb > nf);
	in.lay.exec = LAYOUT_EXEC_COMPILED;
	synth_layer_host(&in, 0, &cf, &cb);
	assert_rel_close(cf, SYNTH_INDUCTOR_GRAPH_S + nf * SYNTH_INDUCTOR_RUN_S, 1e-9);
	assert_rel_close(cb,
			 SYNTH_INDUCTOR_GRAPH_S + nb * SYNTH_INDUCTOR_RUN_S +
			     EXTRA_LAUNCHES_BWD * SYNTH_INDUCTOR_LAUNCH_S,
			 1e-9);
}

/* The fitted costs reproduce their source rows: the least-squares line
 * through ocannl's six replays (hand-computed: 15.504 us + 0.56821 us a
 * node) within 6 % of each, and the rows as ../shared/kernels/other.csv
 * has them where it is here. */
static void test_exec_rows(void **state)
{
	static const double rows[][2] = {{8, 19.4},  {16, 25.6}, {24, 28.7},
					 {36, 37.9}, {64, 49.1}, {117, 82.9}};
	double fixed, node;
	char line[4096];
	int seen = 0, ind = 0;
	FILE *f;
	(void)state;
	synth_graph_fit(&fixed, &node);
	assert_rel_close(fixed, 15.504e-6, 1e-4);
	assert_rel_close(node, 0.56821e-6, 1e-4);
	for (int i = 0; i < 6; i++)
		assert_rel_close(fixed + rows[i][0] * node, rows[i][1] * 1e-6, 0.06);
	f = fopen(PRISM_SOURCE_DIR "/../shared/kernels/other.csv", "r");
	if (!f) {
		print_message("../shared/kernels/other.csv absent: the rows are not read\n");
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *q;
		if ((q = strstr(line, "stream-captured CUDA graph replay + sync,"))) {
			double v = atof(q + strlen("stream-captured CUDA graph replay + sync,"));
			int n = atoi(strstr(line, "N=") + 2);
			for (int i = 0; i < 6; i++)
				if (rows[i][0] == n && fabs(rows[i][1] - v) < 1e-9)
					seen++;
		}
		if (strstr(line, "19-arg\",host time per launch,")) {
			double v = atof(strstr(line, "19-arg\",host time per launch,") + 29);
			if (strstr(line, "CachingAutotuner.run") &&
			    fabs(v - SYNTH_INDUCTOR_RUN_S * 1e6) < 1e-9)
				ind++;
			if (strstr(line, "nop_triton_direct_culaunch") &&
			    fabs(v - SYNTH_INDUCTOR_LAUNCH_S * 1e6) < 1e-9)
				ind++;
		}
		if ((strstr(line, "nop_inductor_kernel:") &&
		     strstr(line, " 0-arg\",host time per launch,44.3,")) ||
		    (strstr(line, "CachingAutotuner.run") &&
		     strstr(line, " 0-arg\",host time per launch,6.8,")))
			ind++;
	}
	fclose(f);
	assert_int_equal(seen, 6);
	assert_int_equal(ind, 4);
	assert_rel_close(SYNTH_INDUCTOR_GRAPH_S, 37.5e-6, 1e-9);
}

/*
 * The embedding's own kernels (docs/MODEL.md "The embedding's own
 * kernels", layer.c embed_fwd_rest, sl_embed_bwd): rank 0's second step of
 * the small model at tp 2, 4 microbatches, with learned positions or rope,
 * with and without sequence parallelism, its kernels a microbatch counted
 * by name.  By hand, forward: the word lookup, the transpose's copy, the
 * dropout (3), the position lookup and add with learned positions (+2),
 * sp's clone of the rank's tokens (+1); backward: the dropout's, the word
 * table's gradient copy, fill and scatter (4), the position table's three
 * with learned positions (+3).  So 12 and 13 with positions (sp 0, 1), 7
 * and 8 with rope.  Both tables' fills one each, however many tokens.
 */
static void test_embed_kernels(void **state)
{
	static const char *const names[] = {
	    "indexSelectLargeIndex",
	    "indexSelectLargeIndex (positions)",
	    "vectorized_elementwise_kernel<add> (positions)",
	    "elementwise_kernel<copy> (embedding transpose)",
	    "elementwise_kernel<copy> (embedding scatter clone)",
	    "fused_dropout_kernel (embedding)",
	    "masked_scale_kernel_dropout_backward (embedding)",
	    "elementwise_kernel<copy> (embedding gradient)",
	    "vectorized_elementwise_kernel<fill> (embedding gradient)",
	    "embedding_backward_feature_kernel (positions)",
	    "embedding_backward_feature_kernel"};
	(void)state;
	for (int rope = 0; rope <= 1; rope++)
		for (int sp = 0; sp <= 1; sp++) {
			struct synth_in in;
			struct synth_out so;
			struct settle_out st;
			struct graph *g;
			int n = 0, fill = 0, want = (rope ? 7 : 12) + sp;
			small(&in);
			in.m.rope = rope;
			in.lay.tp = 2;
			in.lay.sp = sp;
			in.lay.microbatches = 4;
			g = build(&in, &so, &st);
			for (uint32_t u = 0; u < g->n_nodes; u++) {
				const char *name = strtab_get(&g->st, g->name[u]);
				if (!rank0_step1_kernel(g, u))
					continue;
				for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
					n += strcmp(name, names[k]) == 0;
				fill += strcmp(name, names[8]) == 0;
			}
			print_message("rope %d sp %d: %d embedding kernels a step\n", rope, sp, n);
			assert_int_equal(n, 4 * want);
			assert_int_equal(fill, 4 * (rope ? 1 : 2));
			synth_out_release(&so);
			graph_free(g);
		}
}

/*
 * The framework's modules (docs/MODEL.md "The framework's modules"): the
 * small GPT (hidden 1024, FFN 4096, one sequence of 1024 tokens a
 * microbatch, tp 1), rank 0's second step, layer 0.  By hand: under
 * framework torch each of the layer's four linears has its bias gradient
 * as a reduction of its own after its weight gradient, backward in the
 * order FC2 (n 1024), FC1 (4096), projection (1024), QKV (3072), each
 * reading m n bf16 values and writing n: 2 (1024 n + n) bytes, its op one
 * tensor of a quarter of that (524,800, 2,099,200, 524,800, 1,574,400).
 * Without dropout the two dropout backwards go (the layer's backward has
 * 4 - 2 = 2 kernels more than Megatron-LM's with dropout) and the
 * embedding's two dropout kernels too.  The host: a sum is an op and two
 * launches (its kernel and its semaphores' memset), and the attention's
 * cuDNN graph a memset more each way: forward + 5 us, backward
 * 4 x (21.6 + 5 + 5) + 5 = 131.4 us; dropout's two backward kernels are
 * 2 x 26.6 = 53.2 us.  The bias-dropout-add keeps its kernel at p 0, less
 * its mask's byte a value written.
 */
static void test_framework_kernels(void **state)
{
	static const double sum_vals[] = {524800, 2099200, 524800, 1574400};
	int n[3] = {0, 0, 0}, sums = 0, drop = 0;
	double f[3], b[3];
	(void)state;
	for (int k = 0; k < 3; k++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		small(&in);
		in.lay.microbatches = 1;
		in.lay.framework = k == 2 ? LAYOUT_FW_TORCH : LAYOUT_FW_MEGATRON;
		in.lay.no_dropout = k > 0;
		synth_layer_host(&in, 0, &f[k], &b[k]);
		g = build(&in, &so, &st);
		for (uint32_t u = 0; u < g->n_nodes; u++) {
			const char *name = strtab_get(&g->st, g->name[u]);
			if (!rank0_step1_kernel(g, u))
				continue;
			drop += k > 0 && strstr(name, "dropout_kernel") != NULL;
			drop += k > 0 && strstr(name, "dropout_backward") != NULL;
			if (g->layer[u] != 0)
				continue;
			n[k] += g->phase[u] == PH_BACKWARD;
			if (strstr(name, "sum_functor") != NULL) {
				char want[32];
				snprintf(want, sizeof(want), "[[%.0f]]", sum_vals[sums % 4]);
				assert_int_equal(k, 2);
				assert_string_equal(strtab_get(&g->st, g->op_dims[u]), want);
				sums++;
			}
		}
		synth_out_release(&so);
		graph_free(g);
	}
	assert_int_equal(sums, 4);
	assert_int_equal(drop, 0);
	assert_int_equal(n[1], n[0] - 2);
	assert_int_equal(n[2], n[1] + 4);
	assert_rel_close(b[0] - b[1], 2 * 26.6e-6, 1e-9);
	assert_rel_close(f[1], f[0], 1e-12);
	assert_rel_close(f[2] - f[1], 5e-6, 1e-9);
	assert_rel_close(b[2] - b[1], 4 * 31.6e-6 + 5e-6, 1e-9);
}

/* The analytic estimate: a small layer's eager launches outlast its GPU
 * side, so the slot is the host's (n x (forward + backward) and the
 * embedding's and head's launches, one stage), and the step's end the
 * optimizer's launches: 6 parameter groups (4 layers, the embedding, the
 * final norm: the head is tied) x 3 passes (the norm's squares, the clip's
 * scaling, Adam), 18 x 26.6 us.  The simulation's step is the same
 * (within its closing sync's 2 us).  Under graphs the layers' host is 2
 * graph launches each, the embedding, head and optimizer eager: the
 * units are the GPU's with the eager embedding's launches (at s 2304: its
 * 12 kernels' 319 us of launches outlast its GPU time, but a forward and
 * backward pair runs at the longer of its GPU side and both directions'
 * launches, unit_pace, so the slot is the compute, as before the
 * embedding's own kernels, docs/MODEL.md "The embedding's own kernels";
 * s 1792 until the attention backward's fixed cost went with the head
 * dim, 64 here: the GPU side there, 620 us, now under the host's 661)
 * and the optimizer's launches, begun while the
 * GPU still runs the backward, set the step's end.  (At s 2048,
 * once H100's elementwise floor rose to 1.270 us, the GPU side with its
 * waits for the eager launches, 130.8 us idle in the simulation, ends
 * after the optimizer's launches: the estimate, which counts no such
 * idle where the units are the GPU's, is 2.1 % short there, 13-15 % at
 * s 3072-4096 -- a gap of the estimate, not of this regime.) */
static void test_exec_analytic(void **state)
{
	struct analytic_in a;
	struct analytic_out o;
	struct prism_err err;
	struct synth_in in;
	struct synth_extra_host eh;
	struct predict_out p;
	struct synth_stage_host sh;
	double hf, hb;
	(void)state;
	analytic_in_default(&a);
	a.m = (struct llm){.layers = 4,
			   .hidden = 128,
			   .heads = 2,
			   .ffn = 512,
			   .seq = 128,
			   .vocab = 1024,
			   .name = "t"};
	a.hw = &hw;
	a.global_batch = 1;
	assert_int_equal(analytic_estimate(&a, &o, &err), 0);
	synth_in_default(&in);
	in.m = a.m;
	in.hw = &hw;
	in.lay = a.lay;
	in.lay.microbatches = 1;
	synth_layer_host(&in, 0, &hf, &hb);
	synth_extra_host(&in, &eh);
	assert_true(4 * (hf + hb) > o.t_compute);
	assert_rel_close(
	    o.t_slot, 4 * (hf + hb) + eh.emb_fwd_s + eh.emb_bwd_s + eh.head_fwd_s + eh.head_bwd_s,
	    1e-9);
	/* eager and a tied embedding on one stage with learned positions:
	 * the lookups, the positions' add, the transpose's copy and the
	 * dropout (5 kernels); the dropout's gradient, each table's copy and
	 * fill, their scatters (7); the norm, logits, cross-entropy's two
	 * passes (4), their gradients (the loss's, the logits' two, the norm's
	 * of two kernels: 4 ops and 5 launches) */
	assert_rel_close(eh.emb_fwd_s, 5 * 26.6e-6, 1e-12);
	assert_rel_close(eh.emb_bwd_s, 7 * 26.6e-6, 1e-12);
	assert_rel_close(eh.head_fwd_s, 4 * 26.6e-6, 1e-12);
	assert_rel_close(eh.head_bwd_s, 4 * 26.6e-6 + 5e-6, 1e-12);
	synth_stage_host(&in, &sh);
	/* (24 launches: each layer's norm, clip scaling, Adam and Megatron-
	 * LM's gradient buffer's zero-fill, the embedding's and the head's) */
	assert_rel_close(sh.opt_s, 24 * 26.6e-6, 1e-12);
	assert_true(sh.xfer_fwd_s == 0 && sh.xfer_bwd_s == 0); /* one stage */
	assert_rel_close(o.t_iter, o.t_slot + sh.opt_s, 1e-9);
	assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
	assert_true(fabs(o.t_iter - p.iter_s) < 3e-6);
	a.lay.exec = in.lay.exec = LAYOUT_EXEC_GRAPHS;
	assert_int_equal(analytic_estimate(&a, &o, &err), 0);
	assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
	assert_rel_close(o.t_iter, p.iter_s, 0.005);
	a.m.seq = in.m.seq = 2304;
	assert_int_equal(analytic_estimate(&a, &o, &err), 0);
	assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
	synth_extra_host(&in, &eh);
	print_message("graphs, s 2304: slot %.1f us, compute %.1f us; step %.1f us, simulated "
		      "%.1f us\n",
		      o.t_slot * 1e6, o.t_compute * 1e6, o.t_iter * 1e6, p.iter_s * 1e6);
	/* The embedding's eager launches outlast its forward's GPU side, but
	 * the forward and backward pair runs at the longer of its GPU side
	 * and the host's launches of both (unit_pace): the GPU's. */
	assert_true(eh.emb_fwd_s + eh.emb_bwd_s > 0);
	assert_rel_close(o.t_slot, o.t_compute, 1e-9);
	assert_rel_close(o.t_iter, p.iter_s, 0.005);
}

/* The host's time of layer `layer`'s forward or backward (phase) of
 * microbatch mb on rank 0 in g: its host thread's tasks so stamped (op
 * CPU time, launches, event records and waits), in ns. */
static int64_t layer_host_ns(const struct graph *g, int layer, int mb, int phase)
{
	int64_t t = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (!g->procs[g->proc[u]].gpu && g->procs[g->proc[u]].rank == 0 &&
		    g->layer[u] == layer && g->mb[u] == mb && g->phase[u] == phase)
			t += g->dur_ns[u];
	return t;
}

/* The analytic host rule (synth_layer_host, a dry run of the layer) holds
 * exactly what the built graph's host thread spends on that layer, for
 * every form that launches collectives or waits on events: tensor
 * parallelism's all-reduces, sequence parallelism's reduce-scatters and
 * all-gathers (and their overlapped side stream's events), MLA's gathers
 * of its compressed widths, context parallelism's ring (its transfers and
 * their events), all-gather and Ulysses forms, and an MoE layer's
 * dispatch and combine under every dispatcher (shared experts beside it:
 * their events; the 1F1B all-to-all overlap's parts and chained events,
 * eager only: it is refused compiled and fully recomputed), eager and
 * compiled, with full recomputation.  The
 * middle of three microbatches (no first-microbatch casts, no gradient
 * reduction), layer 0 dense and the last MoE; to the nanosecond (every
 * host cost a whole number of ns).  Hand count of the simplest (tp 2, no
 * sp): a dense layer's forward is its eager kernels plus 2 all-reduces,
 * each one more op and launch (26.6 us), and no event; its backward the
 * same 2 and 4 events (two a side stream's visit: linear_bwd_g). */
static void test_exec_host_forms(void **state)
{
	enum {
		TP,
		SP,
		SPO,
		MLA,
		RING,
		AG,
		A2A,
		A2AP,
		MOE_A2A,
		MOE_AG,
		MOE_FLEX,
		MOE_HEP,
		MOE_SH,
		MOE_OV,
		NF
	};
	(void)state;
	for (int form = 0; form < NF; form++)
		for (int x = 0; x < 3; x++) { /* eager, compiled, eager + full recompute */
			struct synth_in in;
			struct synth_out so;
			struct settle_out st;
			struct graph *g;
			double f, b, mf, mb_;
			int moe = form >= MOE_A2A;
			if (moe)
				moe_small(&in);
			else
				small(&in);
			in.m.layers = 4;
			in.m.seq = 512;
			in.steps = 1;
			in.lay.microbatches = 3;
			if (form == MOE_OV && x > 0)
				continue; /* (refused compiled and fully recomputed) */
			in.lay.exec = x == 1 ? LAYOUT_EXEC_COMPILED : LAYOUT_EXEC_EAGER;
			if (x == 2)
				in.lay.recompute = LAYOUT_RECOMPUTE_FULL;
			in.lay.tp = form <= MLA || moe ? 2 : 1;
			in.lay.sp = form == SP || form == SPO || form == MLA || moe;
			in.lay.tp_overlap = form == SPO;
			if (form == MLA)
				mla_dims(&in.m, 384, 256, 64, 32, 64);
			in.lay.cp = form == RING || form == AG || form == A2A ? 2
				    : form == A2AP			      ? 16
									      : 1;
			in.lay.cp_comm = form == AG	? LAYOUT_CP_ALLGATHER
					 : form == A2A	? LAYOUT_CP_A2A
					 : form == A2AP ? LAYOUT_CP_A2A_P2P
							: LAYOUT_CP_P2P;
			if (form == A2AP)
				in.m.seq = 2048;
			if (moe) {
				in.lay.dp = 2;
				in.lay.ep = 2;
				in.lay.moe_dispatcher = form == MOE_AG	   ? LAYOUT_DISP_ALLGATHER
							: form == MOE_FLEX ? LAYOUT_DISP_FLEX
							: form == MOE_HEP  ? LAYOUT_DISP_HYBRIDEP
									   : LAYOUT_DISP_ALLTOALL;
				in.lay.moe_shared_overlap = form == MOE_SH;
				in.lay.moe_a2a_overlap = form == MOE_OV;
			}
			g = build(&in, &so, &st);
			synth_layer_host(&in, 0, &f, &b);
			assert_int_equal(layer_host_ns(g, 0, 1, PH_FORWARD),
					 prism_ns_round(f * 1e9));
			assert_int_equal(layer_host_ns(g, 0, 1, PH_BACKWARD),
					 prism_ns_round(b * 1e9));
			if (moe) {
				synth_layer_host(&in, 1, &mf, &mb_);
				assert_int_equal(layer_host_ns(g, 3, 1, PH_FORWARD),
						 prism_ns_round(mf * 1e9));
				assert_int_equal(layer_host_ns(g, 3, 1, PH_BACKWARD),
						 prism_ns_round(mb_ * 1e9));
			}
			if (form == MOE_OV) {
				/* by hand: the MoE layer's four stream changes a
				 * side (attention -> dispatch -> experts -> combine
				 * -> its compute; backward the reverse), each an
				 * event's record and wait; the dense layer none */
				struct synth_in pl = in;
				double pf, pb, df, db;
				pl.lay.moe_a2a_overlap = 0;
				synth_layer_host(&pl, 1, &pf, &pb);
				synth_layer_host(&pl, 0, &df, &db);
				assert_rel_close(mf, pf + 8 * in.event_s, 1e-12);
				assert_rel_close(mb_, pb + 8 * in.event_s, 1e-12);
				assert_rel_close(f, df, 1e-12);
				assert_rel_close(b, db, 1e-12);
			}
			if (form == TP && x == 0) {
				/* the same layer at tp 1 with 2 launches more */
				struct synth_in one = in;
				double f1, b1;
				one.lay.tp = 1;
				synth_layer_host(&one, 0, &f1, &b1);
				assert_rel_close(f, f1 + 2 * 26.6e-6, 1e-12);
				/* backward the 2 column-parallel Linears' input
				 * gradients all-reduced on the tensor-parallel
				 * stream beside their weight gradients: each
				 * issued and joined by an event's record and
				 * wait */
				assert_rel_close(b, b1 + 2 * 26.6e-6 + 8 * in.event_s, 1e-12);
			}
			synth_out_release(&so);
			graph_free(g);
		}
}

/* The host of rank 0's units (phase, microbatch mb; every task, its layers'
 * and the rest's), in ns. */
static int64_t unit_host_ns(const struct graph *g, int mb, int phase)
{
	int64_t t = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (!g->procs[g->proc[u]].gpu && g->procs[g->proc[u]].rank == 0 && g->mb[u] == mb &&
		    g->phase[u] == phase && g->kind[u] != GN_WAIT)
			t += g->dur_ns[u];
	return t;
}

/* The data-parallel work's host (synth_stage_host's dp_fwd_s, dp_bwd_s,
 * dp_last_s: a dry run of unit_fwd and unit_bwd with their layers, the
 * embedding and the head left out) is what the built graph's host spends
 * beyond the layers, embedding and head: one stage, dp 2, 3 microbatches,
 * the middle one's forward and backward and the last one's backward
 * (with the stage's closing flush), to the nanosecond.  Forms: ZeRO-0
 * with and without overlap_grad (the last backward's buckets), ZeRO-1,
 * ZeRO-2 (every backward reduces), ZeRO-3 under Megatron, DeepSpeed,
 * FSDP and FSDP2 (per-layer gathers with their copies, forward and
 * backward, each backward's reduce-scatters), FSDP's ZeRO-2 (gathers
 * every forward), 4-way hybrid sharding, an MoE model over ep 2 (its
 * experts' own reductions), eager and compiled. */
static void test_exec_dp_host(void **state)
{
	(void)state;
	for (int k = 0; k < 11; k++)
		for (int x = 0; x < 2; x++) {
			struct synth_in in;
			struct synth_out so;
			struct settle_out st;
			struct synth_extra_host eh;
			struct synth_stage_host sh;
			struct graph *g;
			double f, b, mf = 0, mb_ = 0;
			int nm;
			if (k == 10)
				moe_small(&in);
			else
				small(&in);
			in.m.layers = 4;
			in.steps = 1;
			in.lay.microbatches = 3;
			in.lay.dp = k == 9 ? 4 : 2;
			in.lay.exec = x ? LAYOUT_EXEC_COMPILED : LAYOUT_EXEC_EAGER;
			in.lay.overlap_grad = k != 1;
			in.lay.zero = k <= 1 ? 0 : k == 2 || k == 10 ? 1 : k == 3 || k == 8 ? 2 : 3;
			in.lay.dp_impl = k == 5		    ? LAYOUT_DP_DEEPSPEED
					 : k == 6	    ? LAYOUT_DP_FSDP
					 : k == 7 || k == 8 ? LAYOUT_DP_FSDP2
							    : LAYOUT_DP_MEGATRON;
			if (k == 9)
				in.lay.shard = 2;
			if (k == 10)
				in.lay.ep = 2;
			g = build(&in, &so, &st);
			nm = llm_moe_layers(&in.m);
			synth_layer_host(&in, 0, &f, &b);
			if (nm > 0)
				synth_layer_host(&in, 1, &mf, &mb_);
			synth_extra_host(&in, &eh);
			synth_stage_host(&in, &sh);
			if (k >= 3 && k <= 9)
				assert_true(sh.dp_bwd_s > 0);
			if (k >= 4 && k <= 9)
				assert_true(sh.dp_fwd_s > 0);
			if (k <= 2 || k == 10)
				assert_true(sh.dp_last_s > 0 && sh.dp_bwd_s == 0);
			else
				assert_true(sh.dp_last_s == 0);
			assert_int_equal(unit_host_ns(g, 1, PH_FORWARD),
					 prism_ns_round(((4 - nm) * f + nm * mf + eh.emb_fwd_s +
							 eh.head_fwd_s + sh.dp_fwd_s) *
							1e9));
			assert_int_equal(unit_host_ns(g, 1, PH_BACKWARD),
					 prism_ns_round(((4 - nm) * b + nm * mb_ + eh.emb_bwd_s +
							 eh.head_bwd_s + sh.dp_bwd_s) *
							1e9));
			assert_int_equal(
			    unit_host_ns(g, 2, PH_BACKWARD),
			    prism_ns_round(((4 - nm) * b + nm * mb_ + eh.emb_bwd_s + eh.head_bwd_s +
					    sh.dp_bwd_s + sh.dp_last_s) *
					   1e9));
			synth_out_release(&so);
			graph_free(g);
		}
}

/* A stage's host outside its layers (synth_stage_host, a dry run of
 * step.c's optimizer and transfers) is what the built graph's host thread
 * spends there.  The optimizer's: what the graph's host thread spends in each
 * stage's optimizer step, to the nanosecond: over 2 stages (a tied
 * embedding's all-reduce between them, the gradient norm's over the
 * stages), under ZeRO 0, 1 (the updated weights gathered, or left to the
 * next step with overlap_param) and 2, fp16 (the unscale and the
 * found-inf flag's all-reduce), fp8 under delayed scaling (its amax
 * updates), an MoE model's experts over their own group, and no clipping. */
static void test_exec_stage_host(void **state)
{
	(void)state;
	for (int k = 0; k < 8; k++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		struct synth_stage_host sh[2];
		if (k == 6)
			moe_small(&in);
		else
			small(&in);
		in.m.layers = 4;
		in.steps = 1;
		in.lay.pp = 2;
		in.lay.dp = 2;
		in.lay.microbatches = 2;
		in.lay.zero = k == 1 || k == 2 || k == 6 ? 1 : k == 3 ? 2 : 0;
		in.lay.overlap_param = k == 2;
		if (k == 4)
			in.lay.dtype = HW_FP16;
		if (k == 5) {
			in.lay.dtype = HW_FP8;
			in.lay.fp8_recipe = LAYOUT_FP8_DELAYED;
		}
		if (k == 6)
			in.lay.ep = 2;
		in.lay.clip_grad = k != 7;
		g = build(&in, &so, &st);
		synth_stage_host(&in, sh);
		for (int r = 0; r < 2; r++) {
			int64_t t = 0;
			for (uint32_t u = 0; u < g->n_nodes; u++)
				if (!g->procs[g->proc[u]].gpu &&
				    g->procs[g->proc[u]].rank == (uint32_t)r &&
				    g->phase[u] == PH_OPTIMIZER && g->kind[u] != GN_WAIT)
					t += g->dur_ns[u];
			assert_true(t > 0);
			assert_int_equal(t, prism_ns_round(sh[r].opt_s * 1e9));
		}
		synth_out_release(&so);
		graph_free(g);
	}
	/* The pipeline transfers' (with the embedding's and the head's, all
	 * outside the layers): the middle of 3 microbatches on 2 and 4
	 * stages, 1F1B, interleaved (2 chunks a stage), the compute waiting
	 * for each send (no pp_overlap), eager and under graphs. */
	for (int k = 0; k < 4; k++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct synth_extra_host eh;
		struct synth_stage_host sh[4];
		struct graph *g;
		small(&in);
		in.steps = 1;
		in.lay.pp = k == 0 ? 2 : 4;
		in.lay.microbatches = k == 1 ? 4 : 3;
		if (k == 1) {
			in.lay.schedule = LAYOUT_INTERLEAVED;
			in.lay.vp = 2;
		}
		in.lay.pp_overlap = k != 2;
		in.lay.exec = k == 3 ? LAYOUT_EXEC_GRAPHS : LAYOUT_EXEC_EAGER;
		g = build(&in, &so, &st);
		synth_stage_host(&in, sh);
		synth_extra_host(&in, &eh);
		for (int r = 0; r < in.lay.pp; r++) {
			double f = sh[r].xfer_fwd_s, b = sh[r].xfer_bwd_s;
			assert_true(f > 0 && b > 0);
			if (r == 0)
				f += eh.emb_fwd_s, b += eh.emb_bwd_s;
			if (r == in.lay.pp - 1)
				f += eh.head_fwd_s, b += eh.head_bwd_s;
			for (int ph = PH_FORWARD; ph <= PH_BACKWARD; ph++) {
				int64_t t = 0;
				for (uint32_t u = 0; u < g->n_nodes; u++)
					if (!g->procs[g->proc[u]].gpu &&
					    g->procs[g->proc[u]].rank == (uint32_t)r &&
					    g->layer[u] == -1 && g->mb[u] == 1 && g->phase[u] == ph)
						t += g->dur_ns[u];
				assert_int_equal(t,
						 prism_ns_round((ph == PH_FORWARD ? f : b) * 1e9));
			}
		}
		synth_out_release(&so);
		graph_free(g);
	}
}

/* Host-bound steps, the estimate against the simulation: a small model
 * (4 layers, h 512, s 512) at microbatch 1, 4 microbatches, eager, under
 * each form that launches collectives (tp 2, tp 2 with sp, cp 2 as a
 * ring -- and under fp8 attention, its gradients' all-to-all --, an
 * all-gather and all-to-alls, MoE over ep 2 and dp 2).  Both say
 * the host sets the step: the estimate's slot is its host's launches
 * (the layers' synth_layer_host, the embedding's and head's), longer than
 * the slot's GPU side, and the simulated step's host thread is busy over
 * 96 % of it and more.  Without data parallelism (tp 2, with and without
 * sp) the estimate's step is the simulated host's busy time within 0.5 %
 * (the optimizer's launches ending it) and the simulated step within
 * 0.5 %.  With it (cp 2's gradients reduced over the 2 ranks, dp 2 under
 * MoE) the step outlasts the host: its last backward's last gradient
 * bucket (the model's 4 layers and embedding, one bucket) is all-reduced
 * after the backward and the GPU's optimizer waits for it (grad_chain in
 * analytic.c); the estimate is below the simulated step and within 0.5 %
 * (MoE: 1 %, its experts' own buckets taken as hidden where they fit the
 * last backward).  Until 2026-11-27 the estimate hid the bucket behind
 * the last backward and the cp 2 forms came out 2.9-3.2 % short.  Before
 * the collectives' launches, the events, the embedding's, head's and
 * optimizer's were counted, the estimate was 18-29 % short. */
/* The analytic estimate of in's layout on the test profile, global_batch
 * sequences a step (the setup the estimate's tests share). */
static void estimate_of(const struct synth_in *in, int global_batch, struct analytic_out *o)
{
	struct analytic_in a;
	struct prism_err err;
	analytic_in_default(&a);
	a.m = in->m;
	a.hw = in->hw;
	a.lay = in->lay;
	a.global_batch = global_batch;
	prism_err_clear(&err);
	assert_int_equal(analytic_estimate(&a, o, &err), 0);
}

/*
 * Megatron-FSDP's ZeRO-2 (optim_grads) reduces each FSDP unit's gradient
 * as the unit's backward completes (layout_unit_reduce; docs/MODEL.md
 * "Megatron-FSDP's ZeRO-2 reductions a unit"), in its bf16 main gradients:
 * on the small GPT (8 layers of P = 12,596,224, the tied embedding V h +
 * s h = 33,816,576 and the final norm 2h = 2,048) at dp 2, each of rank
 * 0's 4 backwards reduce-scatters 8 layers of 2 P bytes, the norm's 4,096
 * and the embedding's 67,633,152: 10 a microbatch, 40 a step, in NCCL's
 * bf16 kernel; DeepSpeed's ZeRO-2 fills Megatron's 40M-parameter buckets
 * across layers (4 layers of 12.6M to a bucket): 2 layers' buckets, the
 * embedding's with the last, 3 a microbatch.  The estimate follows the
 * chain (grad_chain): within 1 % of the simulated step.
 */
static void test_mfsdp_unit_reduce(void **state)
{
	const double P = 12596224;
	(void)state;
	for (int impl = LAYOUT_DP_MEGATRON; impl <= LAYOUT_DP_DEEPSPEED; impl++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct analytic_out o;
		struct graph *g;
		int n_rs = 0, n_layer = 0, n_bf16 = 0;
		small(&in);
		in.lay.dp = 2;
		in.lay.zero = 2;
		in.lay.microbatches = 4;
		in.lay.dp_impl = impl;
		estimate_of(&in, in.lay.microbatches * in.lay.dp, &o);
		g = build(&in, &so, &st);
		for (uint32_t c = 0; c < g->n_colls; c++) {
			uint32_t u = g->colls[c].node;
			if (g->procs[g->proc[u]].rank != 0 || g->iter[u] != 1 ||
			    g->colls[c].kind != GC_REDUCE_SCATTER)
				continue;
			n_rs++;
			n_layer += g->colls[c].bytes == (int64_t)(2 * P);
			n_bf16 += strstr(strtab_get(&g->st, g->name[u]), "_bf16_") != NULL;
		}
		print_message("%s: %d reduce-scatters, estimate %.3f ms, simulated %.3f ms\n",
			      layout_dp_impl_name(impl), n_rs, o.t_iter * 1e3, st.iter_s * 1e3);
		assert_int_equal(n_rs, impl == LAYOUT_DP_MEGATRON ? 40 : 12);
		assert_int_equal(n_layer, impl == LAYOUT_DP_MEGATRON ? 32 : 0);
		assert_int_equal(n_bf16, n_rs);
		assert_true(fabs(o.t_iter / st.iter_s - 1) < 0.01);
		synth_out_release(&so);
		graph_free(g);
	}
}

/*
 * The routed experts' gradients under Megatron-FSDP's ZeRO-2 are reduced a
 * unit too (each (FSDP unit, expert) bucket group as the layer completes:
 * megatron_fsdp/param_and_grad_buffer.py _get_parameter_groups), over the
 * expert data-parallel group: the small MoE model (4 layers, the first
 * dense; 8 experts of 3 h fe = 3,145,728) at dp 4, ep 2 (edp 2), 4
 * microbatches: rank 0 holds 4 experts of each MoE layer, me = 12,582,912
 * parameters, and each backward reduce-scatters each of the 3 MoE layers'
 * 2 me = 25,165,824 bytes over "edp": 12 a step.  DeepSpeed's ZeRO-2 fills
 * its bucket of max(40M, 1M x dp) parameters across layers: the 3 layers'
 * 37,748,736 parameters go together at the backward's end, 4 a step of 2 x
 * 3 me bytes.
 */
static void test_mfsdp_expert_reduce(void **state)
{
	const double me = 4 * 3145728.0;
	(void)state;
	for (int impl = LAYOUT_DP_MEGATRON; impl <= LAYOUT_DP_DEEPSPEED; impl++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct graph *g;
		int n_unit = 0, n_all = 0;
		moe_small(&in);
		in.lay.dp = 4;
		in.lay.ep = 2;
		in.lay.zero = 2;
		in.lay.microbatches = 4;
		in.lay.dp_impl = impl;
		g = build(&in, &so, &st);
		for (uint32_t c = 0; c < g->n_colls; c++) {
			uint32_t u = g->colls[c].node;
			if (g->procs[g->proc[u]].rank != 0 || g->iter[u] != 1 ||
			    g->colls[c].kind != GC_REDUCE_SCATTER)
				continue;
			n_unit += g->colls[c].bytes == (int64_t)(2 * me);
			n_all += g->colls[c].bytes == (int64_t)(2 * 3 * me);
		}
		assert_int_equal(n_unit, impl == LAYOUT_DP_MEGATRON ? 12 : 0);
		assert_int_equal(n_all, impl == LAYOUT_DP_MEGATRON ? 0 : 4);
		synth_out_release(&so);
		graph_free(g);
	}
}

static void test_exec_host_verdict(void **state)
{
	enum { TP, SP, RING, RING8, AG, A2A, MOE, NF };
	static const char *const names[NF] = {
	    "tp 2",	"tp 2 sp", "cp 2 ring", "cp 2 ring, fp8 attention", "cp 2 all-gather",
	    "cp 2 a2a", "ep 2 MoE"};
	(void)state;
	for (int form = 0; form < NF; form++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct analytic_out o;
		struct synth_extra_host eh;
		struct graph *g;
		double hf, hb, mhf = 0, mhb = 0, busy = 0, host;
		int nm;
		if (form == MOE)
			moe_small(&in);
		else
			small(&in);
		in.m.layers = 4;
		in.m.hidden = 512;
		in.m.heads = 8;
		in.m.ffn = 2048;
		in.m.expert_ffn = 512;
		in.m.seq = 512;
		in.steps = 2;
		in.lay.microbatches = 4;
		in.lay.tp = form == TP || form == SP || form == MOE ? 2 : 1;
		in.lay.sp = form == SP || form == MOE;
		in.lay.cp = form == RING || form == RING8 || form == AG || form == A2A ? 2 : 1;
		in.lay.cp_comm = form == AG    ? LAYOUT_CP_ALLGATHER
				 : form == A2A ? LAYOUT_CP_A2A
					       : LAYOUT_CP_P2P;
		in.lay.fp8_attention = form == RING8;
		if (form == MOE)
			in.lay.dp = in.lay.ep = 2;
		nm = llm_moe_layers(&in.m);
		estimate_of(&in, in.lay.microbatches * in.lay.dp, &o);
		synth_layer_host(&in, 0, &hf, &hb);
		if (nm > 0)
			synth_layer_host(&in, 1, &mhf, &mhb);
		synth_extra_host(&in, &eh);
		host = (4 - nm) * (hf + hb) + nm * (mhf + mhb) + eh.emb_fwd_s + eh.emb_bwd_s +
		       eh.head_fwd_s + eh.head_bwd_s;
		g = build(&in, &so, &st);
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if (!g->procs[g->proc[u]].gpu && g->procs[g->proc[u]].rank == 0 &&
			    g->iter[u] == 1 && g->kind[u] != GN_WAIT)
				busy += g->dur_ns[u] * 1e-9;
		print_message("%s: estimate %.3f ms (slot %.1f us: host; GPU %.1f us), simulated "
			      "%.3f ms (host busy %.3f ms)\n",
			      names[form], o.t_iter * 1e3, o.t_slot * 1e6,
			      (o.t_compute + o.t_tp + o.t_p2p) * 1e6, st.iter_s * 1e3, busy * 1e3);
		assert_rel_close(o.t_slot, host, 1e-9);
		assert_true(o.t_compute + o.t_tp + o.t_p2p < 0.5 * host);
		assert_true(busy > 0.96 * st.iter_s);
		/* Below the simulated step always (a screen); the host's busy
		 * time within 0.5 % without data parallelism, where the
		 * optimizer's launches end the step. */
		assert_true(o.t_iter < st.iter_s);
		if (form == TP || form == SP)
			assert_rel_close(o.t_iter, busy, 0.005);
		assert_rel_close(o.t_iter, st.iter_s, form == MOE ? 0.01 : 0.005);
		synth_out_release(&so);
		graph_free(g);
	}
}

/* A host-bound pipeline's fill and drain run at the GPU's pace: each
 * stage's host launches its units without waiting (eager launches
 * queue), so a stage's GPU waits for the stages before it only where
 * their GPU work (not their launches) is still running.  The small model
 * on 1, 2 and 4 stages, 4 microbatches, host-bound (on one stage the slot
 * is its launches, its GPU side under 0.6 of it): the estimate's bubble
 * is the fill and drain by stage at the GPUs' pace (pipe_ends; stage 0's
 * first forward at its host's), below as many host-bound slots, and the
 * estimate stays under the simulated step, within 5 % (one stage's gap,
 * 0.09 ms, is the optimizer's host-bound norm passes and the launch lag
 * before it; on 4 stages 0.40 ms, the last stage's GPU not quite catching
 * up its host while it waits for the stages before).  With the stages'
 * host-bound slots as the bubble (as before) the estimate was above the
 * simulated step on 2 stages (16.72 against 15.76 ms). */
static void test_host_bound_bubble(void **state)
{
	double off1 = 0;
	(void)state;
	for (int k = 0; k < 3; k++) {
		struct synth_in in;
		struct analytic_out o;
		struct predict_out p;
		struct prism_err err;
		small(&in);
		in.m.layers = 8;
		in.lay.pp = k == 0 ? 1 : k == 1 ? 2 : 4;
		in.lay.microbatches = 4;
		estimate_of(&in, in.lay.microbatches, &o);
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		print_message(
		    "pp %d: estimate %.3f ms (slot %.1f us, GPU %.1f us, bubble %.1f us), "
		    "simulated %.3f ms\n",
		    in.lay.pp, o.t_iter * 1e3, o.t_slot * 1e6,
		    (o.t_compute + o.t_tp + o.t_p2p) * 1e6, o.t_bubble * 1e6, p.iter_s * 1e3);
		if (k == 0) {
			assert_true(o.t_compute + o.t_tp + o.t_p2p < 0.6 * o.t_slot);
			off1 = p.iter_s - o.t_iter;
			assert_true(off1 > 0);
			continue;
		}
		assert_true(o.t_bubble < (in.lay.pp - 1) * o.t_slot);
		/* Below the simulated step and within 5 % of it (the bubble at
		 * the host-bound slots put pp 2 at 16.72 ms against 15.76; the
		 * tail at the update's bytes alone, before test_opt_tail's
		 * optimizer, 14.90 and on 4 stages 9.66 against 10.57). */
		assert_true(o.t_iter < p.iter_s && p.iter_s - o.t_iter < 0.05 * p.iter_s);
	}
}

/*
 * The fill and drain by stage (docs/MODEL.md "Analytic estimate",
 * pipe_ends) with each stage's own tail: the small model (gpt-small's
 * shape) on 2 stages, 8 microbatches, host-bound, under 1F1B,
 * interleaved (vp 2), ZB-1P and ZB-2P at dp 2, and ZB-1P at dp 1.  The
 * simulated step: the last stage's host launches its units from the
 * start, so its GPU absorbs stage 0's first forward; stage 0's last
 * backward runs after the last stage's (1F1B: the drain, stage 0's
 * backward on its GPU, 0.87 ms), or beside the last stage's held W passes
 * (ZB-1P: two of them, at its host's pace); then the tied word
 * embedding's gradient all-reduce between the two stages (0.49 ms) and
 * the optimizer.  The estimate is below the simulated step in every
 * case, within 0.6 % (ZB-2P 1.6 %: its held W passes taken as twice
 * ZB-1P's, early, so never late).  Before (every other stage's slot once
 * as the bubble, every stage ending together, no embedding all-reduce,
 * the transfers in the slot under pp_overlap): 3.2, 2.6, 1.6 and 1.5 %
 * short at dp 2 (with the data-parallel tail then short too), and ZB-1P
 * at dp 1 1.0 % above the simulated step.
 */
static void test_pipe_ends(void **state)
{
	static const struct {
		int sched, vp, dp;
		double tol;
	} cs[] = {{LAYOUT_1F1B, 1, 2, 0.006},
		  {LAYOUT_INTERLEAVED, 2, 2, 0.006},
		  {LAYOUT_ZB1P, 1, 2, 0.006},
		  {LAYOUT_ZB2P, 1, 2, 0.016},
		  {LAYOUT_ZB1P, 1, 1, 0.006}};
	(void)state;
	for (size_t k = 0; k < sizeof(cs) / sizeof(cs[0]); k++) {
		struct synth_in in;
		struct analytic_out o;
		struct predict_out p;
		struct prism_err err;
		small(&in);
		in.lay.pp = 2;
		in.lay.dp = cs[k].dp;
		in.lay.vp = cs[k].vp;
		in.lay.schedule = cs[k].sched;
		in.lay.microbatches = 8;
		estimate_of(&in, in.lay.microbatches * in.lay.dp, &o);
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		print_message(
		    "schedule %d vp %d dp %d: estimate %.3f ms (bubble %.1f us), simulated "
		    "%.3f ms (%+.2f %%)\n",
		    cs[k].sched, cs[k].vp, cs[k].dp, o.t_iter * 1e3, o.t_bubble * 1e6,
		    p.iter_s * 1e3, 100 * (o.t_iter / p.iter_s - 1));
		assert_true(o.t_compute + o.t_tp + o.t_p2p < 0.8 * o.t_slot); /* host-bound */
		assert_true(o.t_iter < p.iter_s);
		assert_true(o.t_iter > (1 - cs[k].tol) * p.iter_s);
	}
}

/*
 * A pipeline transfer's bytes a tensor-parallel rank, by hand: GPT-3 1.3B
 * (h 2048, s 2048), b 1, tp 2, pp 4, dp 64 (each stage's 128 ranks on 16
 * nodes: the transfer between nodes, one NIC, {2, 1}).
 *   pp_scatter_gather off, no sp (Megatron-core: get_tensor_shapes keeps
 *     the whole sequence): 2048 x 2048 x 2 = 8,388,608 bytes;
 *   with sp (each rank holds s / t): 4,194,304 bytes;
 *   pp_scatter_gather on, no sp (Megatron-LM 2021): 4,194,304 bytes;
 *   pp_scatter_gather on with sp: sp's 4,194,304 (the knob refused by
 *   layout_check; the bytes are sp's).
 * synth_pp_transfer_s prices the bytes synth's pp_send and pp_recv emit
 * (pp_bytes), and the whole tensor's transfer is the slower, so that a
 * transfer at 1 / t in the default case fails.  The simulated step with
 * the whole tensor is the longer too (the sends beside the compute, but
 * the fill and drain wait for them).
 */
static void test_pp_transfer_bytes(void **state)
{
	static const struct {
		int sp, sg;
		double bytes;
	} cases[] = {{0, 0, 8388608.0}, {1, 0, 4194304.0}, {0, 1, 4194304.0}, {1, 1, 4194304.0}};
	static const struct {
		int tp, pp, dp, vp, m, sched, rec, zero, sp;
	} c = {2, 4, 64, 1, 8, LAYOUT_1F1B, LAYOUT_RECOMPUTE_NONE, 0, 0};
	double iter[4] = {0};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct synth_in in;
		struct comm_est ce;
		struct predict_out p;
		struct prism_err err;
		double t;
		small(&in);
		in.m = gpt3_1_3b();
		FIXTURE_SHAPE(&in, c);
		in.lay.sp = cases[i].sp;
		in.lay.pp_scatter_gather = cases[i].sg;
		assert_int_equal(comm_time(&hw, GC_SEND, cases[i].bytes, (struct comm_group){2, 1},
					   in.comm_eff, COMM_AUTO, &ce),
				 0);
		t = synth_pp_transfer_s(&in);
		print_message("sp %d scatter-gather %d: %.0f bytes, %.2f us (synth %.2f us)\n",
			      cases[i].sp, cases[i].sg, cases[i].bytes, ce.time_s * 1e6, t * 1e6);
		assert_true(ce.time_s > 0);
		assert_true(fabs(t - ce.time_s) <= 1e-12 * ce.time_s);
		prism_err_clear(&err);
		if (cases[i].sp && cases[i].sg) { /* refused: layout_check */
			assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), PRISM_EARG);
			continue;
		}
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		iter[i] = p.iter_s;
	}
	/* the whole tensor against half of it: a longer step (under sp the
	 * knob is refused: sp's own transfers are 1 / t) */
	print_message("step: %.4f ms whole, %.4f ms scattered\n", iter[0] * 1e3, iter[2] * 1e3);
	assert_true(iter[0] > iter[2]);
}

/*
 * The receiver's all-gather under pp_scatter_gather, by hand: the small
 * GPT (h 1024, s 1024), b 1, tp 2 (no sp), pp 2, 4 microbatches, on
 * h100-dgx.  Each rank receives its 1 / t piece, 1 x 1024 x 1024 x 2 / 2
 * = 1,048,576 bytes, and the pair all-gather the whole 2,097,152 (the
 * collective's output) over NVLink: a ring of 2, one step, 1,048,576
 * bytes on the wire at 450 GB/s x nvlink_bus_eff 0.643 = 289.35 GB/s,
 * 3.623902 us; LL128 (a step 4.032 x 1.9 / 3.4 = 2.253176 us, the bytes
 * at 0.92: 3.939024 us) beats Simple (4.032 + 3.623902) and LL (0.711529
 * + 7.247804), plus collective_base_us 23.850: 30.042200 us a gather.
 * 1F1B: stage 0 gathers each microbatch's gradient (backward), stage 1
 * its activations (forward), one each.  Interleaved, vp 2 (chunks of 2
 * layers, model chunks 0, 2 on stage 0 and 1, 3 on stage 1): stage 0
 * receives chunk 2's activations and chunks 0's and 2's gradients (1 + 2),
 * stage 1 chunk 1's and 3's activations and chunk 1's gradients (2 + 1).
 * The graph holds that many all-gathers of 2,097,152 bytes a step, each
 * on a compute stream (among the layers' kernels), 30.042 us long; none
 * without the knob.  Megatron-LM 2021's p2p_communication.py
 * (_communicate: gather_split_1d_tensor after the receives).
 */
static void test_pp_gather(void **state)
{
	static const struct {
		int vp, sched, nf[2], nb[2];
	} cs[] = {{1, LAYOUT_1F1B, {0, 1}, {1, 0}}, {2, LAYOUT_INTERLEAVED, {1, 2}, {2, 1}}};
	const double one = 30.042200e-6;
	(void)state;
	for (size_t k = 0; k < sizeof(cs) / sizeof(cs[0]); k++)
		for (int sg = 0; sg <= 1; sg++) {
			struct synth_in in;
			struct synth_out so;
			struct settle_out st;
			struct graph *g;
			int n = 0, want = 0;
			small(&in);
			in.lay.tp = 2;
			in.lay.pp = 2;
			in.lay.vp = cs[k].vp;
			in.lay.schedule = cs[k].sched;
			in.lay.microbatches = 4;
			in.lay.pp_scatter_gather = sg;
			for (int s = 0; s < 2; s++) {
				double f, b;
				synth_pp_gather_s(&in, s, &f, &b);
				print_message("vp %d sg %d stage %d: gathers %.6f us forward, %.6f "
					      "us backward\n",
					      cs[k].vp, sg, s, f * 1e6, b * 1e6);
				assert_rel_close(f, sg * cs[k].nf[s] * one, 1e-6);
				assert_rel_close(b, sg * cs[k].nb[s] * one, 1e-6);
				want += sg * in.lay.microbatches * (cs[k].nf[s] + cs[k].nb[s]);
			}
			g = build(&in, &so, &st);
			for (uint32_t i = 0; i < g->n_colls; i++) {
				const struct graph_coll *x = &g->colls[i];
				uint32_t p = g->proc[x->node], kern = 0;
				if (x->kind != GC_ALL_GATHER)
					continue;
				n++;
				assert_int_equal(x->bytes, 2097152);
				assert_int_equal(x->group_size, 2);
				assert_int_equal(strncmp(strtab_get(&g->st, x->pg), "tp.", 3), 0);
				assert_true(llabs(g->dur_ns[x->node] - 30042) <= 1);
				for (uint32_t u = g->procs[p].first;
				     u < g->procs[p].first + g->procs[p].n && !kern; u++)
					kern = g->kind[u] == GN_KERNEL;
				assert_true(kern); /* a compute stream */
			}
			print_message("vp %d sg %d: %d all-gathers over %d steps\n", cs[k].vp, sg,
				      n, in.steps);
			assert_int_equal(n, in.steps * want);
			synth_out_release(&so);
			graph_free(g);
		}
}

/*
 * Uneven interleaved stages (docs/MODEL.md "Analytic estimate",
 * fwd_share in analytic.c): GPT-3 1.3B at tp 2 sp, pp 4 vp 2, dp 64, 8
 * microbatches of 1, the stages' layers 6,6,8,4 (the default sweep's
 * balanced partition).  Stage 2 (8 layers) is the slowest and host-bound
 * both ways, so its slot is its host's launches: 8 layers' forward and
 * backward and its transfers' (synth_layer_host, synth_stage_host), and
 * its host, 8 x (slot - GPU side) ahead, absorbs the fill.  The pipeline
 * part then ends with the drain: the last microbatch's chunk-0 backward
 * back through stages 1 and 0 on their GPUs, 3 layers each (v = 2 of
 * the 6), a layer's backward lb with its backward tensor-parallel time ar
 * - arf (sp's reduce-scatter and re-gather beside the GEMMs: 87 of the
 * layer's 254 us), half a transfer each way a stage (pp_overlap) and
 * stage 0's share of its embedding's compute and its gradient's all-
 * gather (sp; synth_extra_tp_s, 14 us):
 *   bubble = (12 (lb + ar - arf) + p2p + emb lb / (lf + lb) + eg) / 2
 * = 3.54 ms (3.50 before session 27's attention refit: lb 470.2 ->
 * 472.2 us; the simulated drain, stage 2's last backward to stage 0's,
 * 3.81 ms: each layer 591 us with its re-gather waited for, and a 134 us
 * receive a stage).  With the stages' GPU sides split as the compute
 * (the forward 224 of 697 us a layer, a third of the 254 us of tensor
 * parallelism with it, where the dry run has two thirds) the drain was
 * 4.01 ms and the estimate 87.655 ms against 87.541 simulated; 87.139
 * now.  The old drain put back must land above the simulated step (the
 * case can catch the error).
 */
static void test_analytic_uneven_interleaved(void **state)
{
	struct synth_in in;
	struct analytic_out o;
	struct predict_out p;
	struct prism_err err;
	struct synth_stage_host sh[4];
	struct comm_est ce;
	double lf, lb, la, hf, hb, ar, arf, emb, head, etp[2], htp, p2p, ff, slot, drain, old;
	static const struct {
		int tp, pp, dp, vp, m, sched, rec, zero, sp;
	} c = {2, 4, 64, 2, 8, LAYOUT_INTERLEAVED, LAYOUT_RECOMPUTE_NONE, 0, 1};
	(void)state;
	small(&in);
	in.m = gpt3_1_3b();
	FIXTURE_SHAPE(&in, c);
	prism_err_clear(&err);
	assert_int_equal(layout_partition_parse("6,6,8,4", &in.lay, &err), 0);
	at_reference(&in);
	estimate_of(&in, 8 * 64, &o);
	assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
	synth_layer_times(&in, &lf, &lb, &la);
	ar = synth_layer_tp_s(&in, &arf);
	synth_layer_host(&in, 0, &hf, &hb);
	synth_stage_host(&in, sh);
	synth_extra_times(&in, &emb, &head);
	synth_extra_tp_s(&in, etp, &htp);
	/* b s h / tp bf16 activations between nodes (2 x 64 ranks a stage) */
	assert_int_equal(comm_time(&hw, GC_SEND_RECV, 2048.0 * 2048 * 2 / 2,
				   (struct comm_group){2, 1}, 1, COMM_AUTO, &ce),
			 0);
	p2p = 2 * ce.time_s;
	ff = lf / (lf + lb);
	slot =
	    8 * (hf + hb) + sh[2].xfer_fwd_s + sh[2].dp_fwd_s + sh[2].xfer_bwd_s + sh[2].dp_bwd_s;
	drain = (12 * (lb + ar - arf) + p2p + emb * (1 - ff) + etp[1]) / 2;
	/* the compute's split: each stage's GPU side c + n ar, its backward
	 * share 1 - ff */
	old = ((12 * (lf + lb + ar) + emb) * (1 - ff) + p2p) / 2;
	print_message("layer: f %.1f b %.1f us, tp %.1f (forward %.1f) us, host %.1f + %.1f us; "
		      "slot %.3f ms, drain %.3f ms (was %.3f); estimate %.3f ms, simulated "
		      "%.3f ms\n",
		      lf * 1e6, lb * 1e6, ar * 1e6, arf * 1e6, hf * 1e6, hb * 1e6, slot * 1e3,
		      drain * 1e3, old * 1e3, o.t_iter * 1e3, p.iter_s * 1e3);
	/* stage 2 host-bound both ways: the host's forward over the GPU's by
	 * the compute's split */
	assert_true(8 * hf > (8 * (lf + lb + ar)) * ff);
	assert_true(8 * hb > (8 * (lf + lb + ar)) * (1 - ff));
	assert_rel_close(o.t_slot, slot, 1e-9);
	assert_rel_close(o.t_bubble, drain, 1e-9);
	/* 3.54 ms until session 28's GH100 bf16 attention refit (the
	 * backward's fixed cost a block 28.424 -> 20.175 us at head dim 128:
	 * a layer's backward shorter) */
	assert_rel_close(drain, 3.487e-3, 0.01);
	assert_rel_close(old, 4.01e-3, 0.01);
	assert_true(o.t_iter <= p.iter_s);
	assert_true(o.t_iter > 0.99 * p.iter_s);
	assert_true(o.t_iter - drain + old > p.iter_s);
}

/*
 * The estimate's tail on a host-bound stage is the GPU's optimizer step
 * as the graph runs it (docs/MODEL.md "Host"): on one stage with no other
 * rank the host's launches end before the optimizer's kernels do, and
 * what the step waits for after its last backward is each of those
 * kernels in turn -- fp16's unscale, the clipping norm and scale, the
 * update -- no collective (groups of one).  The estimate's t_opt must be
 * the built graph's optimizer kernels' durations summed (one step), for
 * bf16 with and without clipping and for fp16; and more than the update
 * alone where the clipping passes run (the estimate used to charge the
 * update's bytes at HBM bandwidth, 1.23 ms short on gpt-small).
 */
static void test_opt_tail(void **state)
{
	double clip = 0;
	(void)state;
	for (int k = 0; k < 3; k++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct synth_stage_host sh[1];
		struct analytic_out o;
		struct graph *g;
		int64_t ns = 0, norm = 0;
		small(&in);
		in.steps = 1;
		in.lay.microbatches = 4;
		in.lay.clip_grad = k != 1;
		in.lay.dtype = k == 2 ? HW_FP16 : HW_BF16;
		estimate_of(&in, in.lay.microbatches, &o);
		/* host-bound: the units' GPU side well under the host's slot */
		assert_true(o.t_compute + o.t_tp + o.t_p2p < 0.6 * o.t_slot);
		synth_stage_host(&in, sh);
		g = build(&in, &so, &st);
		for (uint32_t u = 0; u < g->n_nodes; u++)
			if (g->kind[u] == GN_KERNEL && g->phase[u] == PH_OPTIMIZER) {
				ns += g->dur_ns[u];
				norm +=
				    strstr(strtab_get(&g->st, g->name[u]), "L2NormFunctor") != NULL;
			}
		print_message("clip %d dtype %d: estimate's optimizer %.1f us (launches %.1f us), "
			      "graph's %.1f us\n",
			      in.lay.clip_grad, in.lay.dtype, o.t_opt * 1e6, sh[0].opt_s * 1e6,
			      ns * 1e-3);
		assert_true(sh[0].opt_s < o.t_opt); /* the GPU's, not the launches */
		assert_true(fabs(o.t_opt * 1e9 - (double)ns) < 64);
		assert_true(o.t_dp_exposed == 0);
		assert_int_equal(norm > 0, in.lay.clip_grad);
		if (k == 0)
			clip = o.t_opt;
		else if (k == 1) /* the norm and scale passes: more than the update */
			assert_true(clip > o.t_opt);
		graph_free(g);
		synth_out_release(&so);
	}
}

/*
 * The data-parallel gradient buckets after the last backward
 * (docs/MODEL.md "Analytic estimate", grad_chain): the small model (8
 * layers of 12.6M parameters, a 32.8M-parameter embedding tied to the
 * head) at dp 2, 8 microbatches, host-bound, ZeRO-0 and ZeRO-1 with
 * overlap_grad.  Megatron's 40M-parameter buckets fill as the backward
 * makes the gradients: layers 7-4, layers 3-0, then the embedding alone,
 * so the second bucket is reduced from the end of layer 0's backward and
 * the third after the whole backward; the simulated step's data-parallel
 * stream runs past the compute stream's last backward kernel by over a
 * bucket's reduction (0.45 ms under ZeRO-1, 1.04 under ZeRO-0; 0.61 and
 * 1.20 before the embedding's own kernels, docs/MODEL.md "Kernels of a
 * step": its backward's 7 launches, 0.16 ms of host, now run after layer
 * 0's gradients are in, and the estimate's grad_chain takes them, emb_tail).
 * The estimate's exposed data-parallel time (its ZeRO-1 weights' gathers,
 * 0.72 ms after the optimizer, aside) is below that run-past, within
 * 0.1 ms (94 us short, 90 before the embedding's kernels; once "within
 * 20 %", which the shorter run-past turned into 21 % for the same gap):
 * it leaves out what of it runs while the host's launches of the
 * reductions hold the backward's end back (opt_or_host's late, 92 us
 * here: all three buckets' launches, where the simulated backward ends 60
 * us after its slots, the last bucket's launch coming after it); and its
 * step is below the simulated one within 0.5 %.  Until
 * 2026-11-27 the estimate hid every reduction behind 2/3 of the last
 * backward's compute: 1.20 ms (ZeRO-0) and 0.84 ms (ZeRO-1) short, 2.3
 * and 1.6 %.
 */
static void test_grad_chain(void **state)
{
	(void)state;
	for (int zero = 0; zero <= 1; zero++) {
		struct synth_in in;
		struct synth_out so;
		struct settle_out st;
		struct analytic_out o;
		struct graph *g;
		int64_t bwd_end = 0, red_end = 0, ag = 0;
		double run_past, gather;
		small(&in);
		in.steps = 2;
		in.lay.dp = 2;
		in.lay.zero = zero;
		in.lay.microbatches = 8;
		estimate_of(&in, in.lay.microbatches * in.lay.dp, &o);
		g = build(&in, &so, &st);
		/* Rank 0's last step: the compute stream's last backward kernel,
		 * the gradients' last reduction, the weights' gathers. */
		for (uint32_t u = 0; u < g->n_nodes; u++) {
			const struct graph_proc *pr = &g->procs[g->proc[u]];
			const char *name = strtab_get(&g->st, g->name[u]);
			int64_t end = g->start_ns[u] + g->dur_ns[u];
			if (!pr->gpu || pr->rank != 0 || g->iter[u] != 1)
				continue;
			if (g->kind[u] == GN_KERNEL && g->phase[u] == PH_BACKWARD && end > bwd_end)
				bwd_end = end;
			if (g->kind[u] == GN_COLL &&
			    (strstr(name, "AllReduce_Sum_f32") || strstr(name, "ReduceScatter")) &&
			    g->phase[u] != PH_OPTIMIZER && end > red_end)
				red_end = end;
			if (g->kind[u] == GN_COLL && strstr(name, "AllGather"))
				ag += g->dur_ns[u];
		}
		run_past = (red_end - bwd_end) * 1e-9;
		gather = ag * 1e-9;
		print_message(
		    "ZeRO-%d: estimate %.3f ms (data-parallel exposed %.1f us), simulated "
		    "%.3f ms (reductions past the backward %.1f us, gathers %.1f us)\n",
		    zero, o.t_iter * 1e3, o.t_dp_exposed * 1e6, st.iter_s * 1e3, run_past * 1e6,
		    gather * 1e6);
		assert_true(run_past > 4e-4);
		assert_true(zero == 1 ? gather > 5e-4 : gather == 0);
		assert_true(o.t_dp_exposed - gather < run_past);
		assert_true(o.t_dp_exposed - gather > run_past - 1e-4);
		assert_true(o.t_iter < st.iter_s && o.t_iter > 0.995 * st.iter_s);
		synth_out_release(&so);
		graph_free(g);
	}
}

/*
 * ZeRO-3 on a host-bound stage (docs/MODEL.md "Host"): every microbatch's
 * per-layer gathers and reduce-scatters run on the data-parallel stream
 * while the GPU waits for the host's launches, so what the estimate
 * counts exposed of them each microbatch hides in the host-bound slot
 * (host_hides) rather than adding to the step.  The small model at dp 4,
 * 4 microbatches, Megatron's ZeRO-3: the slot is the host's (GPU side
 * under 0.6 of it), nothing of the collectives is left exposed, and the
 * estimate is within 2 % of the simulated step (gpt-small: 32.31 ms
 * against 29.53 with the exposure added after the host-bound slots,
 * +9 %; 29.25 now).  Each unit hides its own: with FSDP's ZeRO-3, 3
 * sequences a microbatch and full recomputation the forward is
 * host-bound and the backward (its forward again) not, so the backward's
 * gathers and reduce-scatters stay exposed: 44.436 ms against 47.786
 * simulated (43.999 with the whole slot's excess set against the whole
 * exposure, the forward's spare launch time hiding backward work its
 * host has not issued yet).  4 sequences since session 27: with the
 * attention backward's fixed cost by head dim (64 here) the backward at
 * 3 was host-bound too (nothing exposed); at 4, 50.345 ms against
 * 54.657 simulated, 871 us exposed; 49.753 against 54.084 (0.9199),
 * 868 us, since session 28's GH100 bf16 attention refit (gpt-small's
 * head dim 64: the backward's fixed cost a block 28.424 x 0.5 -> 20.175
 * x 0.5 us, d64 0.847 -> 0.762; the estimate 0.592 ms and the simulated
 * step 0.573 ms shorter, the ratio 0.921 -> 0.920): held within 8.5 %.
 */
static void test_zero3_host_bound(void **state)
{
	struct synth_in in;
	struct analytic_out o;
	struct predict_out p;
	struct prism_err err;
	(void)state;
	small(&in);
	in.lay.dp = 4;
	in.lay.zero = 3;
	in.lay.microbatches = 4;
	estimate_of(&in, in.lay.microbatches * in.lay.dp, &o);
	assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
	print_message("ZeRO-3 dp 4: estimate %.3f ms (slot %.1f us, GPU %.1f us, exposed %.1f "
		      "of %.1f us), simulated %.3f ms\n",
		      o.t_iter * 1e3, o.t_slot * 1e6, (o.t_compute + o.t_tp + o.t_p2p) * 1e6,
		      o.t_dp_exposed * 1e6, o.t_dp * 1e6, p.iter_s * 1e3);
	assert_true(o.t_compute + o.t_tp + o.t_p2p < 0.6 * o.t_slot);
	assert_true(o.t_dp > 0 && o.t_dp_exposed == 0);
	assert_true(fabs(o.t_iter - p.iter_s) < 0.02 * p.iter_s);
	in.lay.dp_impl = LAYOUT_DP_FSDP;
	in.lay.mbs = 4;
	in.lay.recompute = LAYOUT_RECOMPUTE_FULL;
	estimate_of(&in, in.lay.microbatches * in.lay.dp * in.lay.mbs, &o);
	assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
	print_message("FSDP ZeRO-3 mbs 4 full recompute: estimate %.3f ms (exposed %.1f us), "
		      "simulated %.3f ms\n",
		      o.t_iter * 1e3, o.t_dp_exposed * 1e6, p.iter_s * 1e3);
	assert_true(o.t_iter <= p.iter_s);
	assert_true(o.t_iter > 0.915 * p.iter_s);
	assert_true(o.t_dp_exposed > 400e-6); /* the backward's */
}

/*
 * ZeRO-3 on a host-bound stage, gpt3-1.3b at tp 8 pp 1 with sp, 8
 * microbatches of 1 over dp 8 (64 H100s; the estimate must stay at or
 * below the simulated step: a sweep's screen drops what it puts beyond
 * the best).  Two overcounts found by an exhaustive ZeRO-3 sweep:
 *
 * - the host's spare launch time that hides a unit's gathers and
 *   reductions (host_hides) was measured against the slot's GPU side split
 *   as the compute splits (a third forward), while the exposure it hides
 *   (stage_dp's each[]) is measured against the layer's forward and
 *   backward as the dry run splits them (the tensor-parallel collectives
 *   two thirds forward under sp): the backward's host seemed 2.2 ms less
 *   ahead of its GPU than it is.  FSDP2 with prefetch 2 and selective
 *   recomputation was estimated 299.868 ms against 293.898 simulated (+2.0
 *   %); the larger of the two splits' slack hides the exposure now;
 * - the gradient norm's all-reduce (synth_grad_stats_s) was added after the
 *   optimizer even where the optimizer is its host's launches, which issue
 *   that all-reduce and run on while the GPU runs it: a wholly host-bound
 *   step under DeepSpeed (its exposure all hidden) was estimated 62 us
 *   above its simulated step (235.048 against 234.986 ms).  It is the
 *   optimizer's GPU side now, so such a step is by hand its m slots and
 *   the optimizer's launches: m x slot + t_opt, to the nanosecond.
 */
static void test_zero3_estimate_bound(void **state)
{
	struct synth_in in;
	struct analytic_out o;
	struct predict_out p;
	struct prism_err err;
	static const int impls[] = {LAYOUT_DP_FSDP2, LAYOUT_DP_DEEPSPEED};
	(void)state;
	for (size_t i = 0; i < sizeof impls / sizeof impls[0]; i++) {
		small(&in);
		in.m = gpt3_1_3b();
		in.lay.tp = 8;
		in.lay.dp = 8;
		in.lay.sp = 1;
		in.lay.zero = 3;
		in.lay.dp_impl = impls[i];
		in.lay.prefetch = i == 0 ? 2 : 1;
		in.lay.recompute = i == 0 ? LAYOUT_RECOMPUTE_SELECTIVE : LAYOUT_RECOMPUTE_NONE;
		in.lay.microbatches = 8;
		estimate_of(&in, 64, &o);
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		print_message("ZeRO-3 %s tp 8 dp 8 sp: estimate %.3f ms (slot %.3f, exposed %.3f, "
			      "optimizer %.3f ms), simulated %.3f ms\n",
			      layout_dp_impl_name(in.lay.dp_impl), o.t_iter * 1e3, o.t_slot * 1e3,
			      o.t_dp_exposed * 1e3, o.t_opt * 1e3, p.iter_s * 1e3);
		assert_true(o.t_iter <= p.iter_s);
		assert_true(o.t_iter > 0.95 * p.iter_s);
		if (i == 1) {
			/* every unit host-bound, its exposure hidden */
			assert_true(o.t_dp_exposed == 0);
			assert_true(fabs(o.t_iter - (8 * o.t_slot + o.t_opt)) < 1e-9);
		}
	}
	/* FSDP's ZeRO-2 (SHARD_GRAD_OP) reduces each layer as its backward
	 * ends, the replicas' all-reduce with it: at dp 512 over shards of 8
	 * (tp 1, one microbatch of 1, full recomputation) the stage's
	 * reduce-scatter past 2/3 of its compute and the replicas' all-reduce
	 * of the whole stage after it put the estimate at 65.117 ms against
	 * 55.511 simulated (+17 %). */
	small(&in);
	in.m = gpt3_1_3b();
	in.lay.dp = 512;
	in.lay.shard = 8;
	in.lay.zero = 2;
	in.lay.dp_impl = LAYOUT_DP_FSDP;
	in.lay.recompute = LAYOUT_RECOMPUTE_FULL;
	in.lay.microbatches = 1;
	estimate_of(&in, 512, &o);
	assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
	print_message("FSDP ZeRO-2 dp 512 shard 8: estimate %.3f ms (exposed %.3f ms), simulated "
		      "%.3f ms\n",
		      o.t_iter * 1e3, o.t_dp_exposed * 1e3, p.iter_s * 1e3);
	assert_true(o.t_iter <= p.iter_s);
	assert_true(o.t_iter > 0.85 * p.iter_s);
}

/*
 * ZeRO-3 without a pipeline at dp 64 and 128 (gpt3-1.3b, 512 GPUs of
 * h100-dgx, one microbatch of 4 or 8): a layer's gather (and backward its
 * reduce-scatter) on the data-parallel stream runs beside the layer's
 * whole forward (backward) on the compute stream -- its kernels and its
 * tensor-parallel collectives, which that stream runs in order -- so only
 * what exceeds both is exposed.  The estimate compared it with the
 * kernels alone and added the tensor-parallel collectives in the slot as
 * well: 94.06 ms against 82.91 simulated at tp 4 with sp (+13 %), 96.72
 * against 93.76 at tp 8 (+3 %), enough to screen such a candidate out of
 * a sweep whose best simulated step it beats.  Now the estimate is at or
 * below the simulated step and within 10 % of it (75.61, 76.89 and 90.53
 * ms against 82.75, 84.98 and 97.94 simulated, sp's backward re-gathers
 * and reduce-scatters counted by both as far as their GEMMs do not cover
 * them; 74.19 and
 * 75.03 with sp while the estimate priced sp's gathers and
 * reduce-scatters as half an all-reduce each, 192 us at tp 8, where the
 * simulation's take 255 each: 20 % under at tp 8).
 */
static void test_zero3_tp_overlap(void **state)
{
	static const int layouts[][4] = {{4, 128, 4, 1}, {4, 128, 4, 0}, {8, 64, 8, 1}};
	(void)state;
	for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
		struct synth_in in;
		struct analytic_out o;
		struct predict_out p;
		struct prism_err err;
		small(&in);
		in.m = gpt3_1_3b();
		in.lay.tp = layouts[i][0];
		in.lay.dp = layouts[i][1];
		in.lay.mbs = layouts[i][2];
		in.lay.sp = layouts[i][3];
		in.lay.zero = 3;
		in.lay.microbatches = 1;
		estimate_of(&in, 512, &o);
		assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
		print_message("ZeRO-3 tp %d dp %d sp %d: estimate %.3f ms (exposed %.3f ms), "
			      "simulated %.3f ms\n",
			      in.lay.tp, in.lay.dp, in.lay.sp, o.t_iter * 1e3, o.t_dp_exposed * 1e3,
			      p.iter_s * 1e3);
		assert_true(o.t_iter <= p.iter_s);
		assert_true(o.t_iter > 0.9 * p.iter_s);
	}
}

/*
 * FSDP2's copy-out under ZeRO-3 (zero3_copy_out in analytic.c): GPT-3
 * 175B at tp 1, pp 1, dp 256, 6 microbatches of 1, full recomputation.
 * A layer's gather (3.6 GB of bf16 weights over 256 ranks across nodes,
 * 13.6 ms) outlasts its forward (10.8 ms), and backward its gather with
 * the next layer's reduce-scatter (44 ms) its recomputed forward and
 * backward (33 ms): the data-parallel stream sets the pace, busy 99 % of
 * the simulated step.  Each gather's copy-out (2.8 ms on the compute
 * stream) runs while the next gather is under way, so a layer takes the
 * longer of its data-parallel work and its compute with the copy-out.
 * With the copy-outs added to the excess in full the estimate was 36.698
 * s against 36.345 simulated (+1.0 %); 33.463 then, 33.329 against 36.261
 * since H100's elementwise refit, 33.009 against 35.945 since its second
 * (Megatron's recompiled bias_swiglu rows left out) (the rest of the gap is
 * contention: the gathers beside the compute slowed by the profile's
 * 11.3 %, which the estimate leaves out).  Under FSDP (no copy-out) and
 * Megatron's ZeRO-3 (the same form, t_out 0) nothing moved.
 */
static void test_zero3_copy_out(void **state)
{
	struct synth_in in;
	struct analytic_out o;
	struct predict_out p;
	struct prism_err err;
	static const struct {
		int tp, pp, dp, vp, m, sched, rec, zero, sp;
	} c = {1, 1, 256, 1, 6, LAYOUT_1F1B, LAYOUT_RECOMPUTE_FULL, 3, 0};
	(void)state;
	small(&in);
	prism_err_clear(&err);
	assert_int_equal(llm_load(PRISM_SOURCE_DIR "/configs/models/gpt3-175b.cfg", &in.m, &err),
			 0);
	FIXTURE_SHAPE(&in, c);
	in.lay.dp_impl = LAYOUT_DP_FSDP2;
	at_reference(&in);
	estimate_of(&in, 6 * 256, &o);
	assert_int_equal(predict_synth(&in, &p, NULL, NULL, &err), 0);
	print_message("estimate %.3f s (exposed %.3f s), simulated %.3f s\n", o.t_iter,
		      o.t_dp_exposed, p.iter_s);
	assert_true(o.t_iter <= p.iter_s);
	assert_true(o.t_iter > 0.9 * p.iter_s);
	/* A microbatch's exposure: 96 layers of max(13.574 - 10.799, 2.460)
	 * forward and max(13.574 + 29.724 - 33.210, 2.460) backward, and each
	 * direction's first gather, 2 x 13.574: 1262.0 ms (1302.4 before
	 * H100's second elementwise refit, 0.775 -> 0.880 of HBM, shortened
	 * the copy-out, the compute and the reduce-scatter's copies; 1321.4
	 * before its first; 1860.5 with the copy-outs in full). */
	/* (1262.0 ms until session 28: GH100's bf16 attention refit, its
	 * fixed costs a block smaller at head dim 128, took 11.5 us off a
	 * layer's forward, 10.799 -> 10.788 ms, and 113.1 us off its
	 * recomputed forward and backward, 33.210 -> 33.097 ms: 1274.0 ms) */
	assert_rel_close(o.t_dp_exposed / 6, 96 * (2.787e-3 + 10.201e-3) + 2 * 13.574e-3, 0.001);
}

/*
 * Activation offloading worked by hand (docs/MODEL.md "Activation
 * offloading").  The small model (8 layers, h 1024, s 1024, b 1, flash
 * attention, no tensor parallelism) saves 34 s b h = 34 x 2^20 =
 * 35,651,584 bytes a layer (Korthikanti's Table 2 without the scores).
 * Over H100's PCIe 5 as measured (55.06 GB/s to the host, 55.43 back) a
 * layer's copy out takes 35,651,584 / 55.06e9 = 647.504 us and back
 * 643.182 us.  On a bare run without host costs (the GPU's work alone), one
 * microbatch, with f and b a layer's forward and backward:
 *  - N = 7 of 8 (L - N = 1): each copy lies between its layer and the
 *    next, the step grows by 7 x (copy out + copy back);
 *  - N = 4: the copies run back to back behind layer 0 and layer 7 waits
 *    for the fourth, forward 4 x 647.504 - 6 f, backward 4 x 643.182 - 6
 *    b (a copy outlasts a layer here);
 *  - N = 4 over a link 100 times as fast (6.475 us a copy): 4 copies
 *    under 6 layers, hidden: the step as without offloading;
 * and the microbatch holds 4 x 35,651,584 bytes less at the peak.
 */
static void offload_run(struct synth_in *in, const struct hw_profile *h, int n)
{
	small(in);
	in->hw = h;
	in->bare = 1;
	in->steps = 1;
	in->lay.microbatches = 1;
	in->cpu_op_s = in->launch_s = in->gpu_lag_s = in->event_s = 0;
	in->lay.offload_layers = n;
}

static int64_t offload_step(const struct hw_profile *h, int n, int64_t *f, int64_t *b,
			    int64_t *out_ns, int *copies)
{
	struct synth_in in;
	struct synth_out so;
	struct settle_out st;
	struct graph *g;
	int c2;
	int64_t t;
	offload_run(&in, h, n);
	g = build(&in, &so, &st);
	*f = *b = 0;
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if (g->kind[u] == GN_KERNEL && g->layer[u] == 0)
			*(g->phase[u] == PH_FORWARD ? f : b) += g->dur_ns[u];
	*out_ns = named_ns(g, "Memcpy DtoH (Device -> Pinned)", copies);
	named_ns(g, "Memcpy HtoD (Pinned -> Device)", &c2);
	assert_int_equal(c2, *copies);
	t = llround(st.iter_s * 1e9);
	synth_out_release(&so);
	graph_free(g);
	return t;
}

static void test_offload(void **state)
{
	struct hw_profile fast = hw;
	struct synth_in in;
	struct mem_est m0, m4;
	int64_t f, b, x, y, t0, t7, t4, tf, d;
	int n;
	double a;
	(void)state;
	offload_run(&in, &hw, 0);
	a = mem_act_per_layer(&in.m, &in.lay);
	assert_true(a == 34.0 * 1048576);
	x = prism_ns_round(a / 55.06e9 * 1e9); /* 647,504 ns */
	y = prism_ns_round(a / 55.43e9 * 1e9); /* 643,182 ns */
	assert_int_equal(x, 647504);
	assert_int_equal(y, 643182);
	t0 = offload_step(&hw, 0, &f, &b, &d, &n);
	assert_int_equal(n, 0);
	assert_true(x > f && y > b); /* a copy outlasts a layer */
	/* Every layer offloaded but the last: all of the copies exposed. */
	t7 = offload_step(&hw, 7, &f, &b, &d, &n);
	assert_int_equal(n, 7);
	assert_int_equal(d, 7 * x);
	assert_int_equal(t7 - t0, 7 * (x + y));
	/* Half: what 6 layers do not cover. */
	t4 = offload_step(&hw, 4, &f, &b, &d, &n);
	assert_int_equal(n, 4);
	assert_int_equal(t4 - t0, (4 * x - 6 * f) + (4 * y - 6 * b));
	assert_int_equal(t4 - t0, llround(1e9 * (synth_offload_exposed(8, 4, f / 1e9, x / 1e9) +
						 synth_offload_exposed(8, 4, b / 1e9, y / 1e9))));
	/* A link 100 times as fast: hidden. */
	fast.host_d2h_Bps *= 100;
	fast.host_h2d_Bps *= 100;
	tf = offload_step(&fast, 4, &f, &b, &d, &n);
	assert_int_equal(n, 4);
	assert_true(4 * (d / 4) <= 6 * f);
	assert_int_equal(tf, t0);
	/* The closed form's branches. */
	assert_true(synth_offload_exposed(8, 7, 1, 3) == 21);
	assert_true(synth_offload_exposed(8, 4, 1, 3) == 6);
	assert_true(synth_offload_exposed(8, 4, 1, 1.5) == 0);
	assert_true(synth_offload_exposed(8, 0, 1, 3) == 0);
	/* Memory: the 4 layers' activations leave the peak. */
	offload_run(&in, &hw, 0);
	mem_estimate(&in.m, &in.lay, &hw, &m0);
	in.lay.offload_layers = 4;
	mem_estimate(&in.m, &in.lay, &hw, &m4);
	assert_true(m0.activations - m4.activations == 4 * a);
	/* The bound: each microbatch's copies, all exposed at N = 7. */
	{
		double l0, l7;
		struct settle_out st;
		struct synth_out so;
		struct graph *g;
		offload_run(&in, &hw, 0);
		in.bare = 0;
		l0 = synth_lower_bound(&in);
		in.lay.offload_layers = 7;
		l7 = synth_lower_bound(&in);
		assert_rel_close(l7 - l0, 7 * (a / 55.06e9 + a / 55.43e9), 1e-9);
		g = build(&in, &so, &st);
		assert_true(l7 <= st.iter_s);
		synth_out_release(&so);
		graph_free(g);
	}
	/* The analytic estimate: its waits, 7 x (out + back). */
	{
		struct analytic_in ai;
		struct analytic_out ao;
		struct prism_err err;
		analytic_in_default(&ai);
		offload_run(&in, &hw, 7);
		ai.m = in.m;
		ai.hw = &hw;
		ai.global_batch = 1;
		ai.lay.offload_layers = 7;
		assert_int_equal(analytic_estimate(&ai, &ao, &err), 0);
		assert_rel_close(ao.t_offload, 7 * (a / 55.06e9 + a / 55.43e9), 1e-9);
		/* 2 copies (5.2 ms out) beside 6 layers: partly exposed; over
		 * the link 100 times as fast, hidden.  At 4 sequences a
		 * microbatch, where the layers are GPU-bound (at one, the
		 * host's launches, 26.6 us a kernel, outlast the copies). */
		ai.lay.offload_layers = 2;
		ai.lay.mbs = 4;
		ai.global_batch = 4;
		a = mem_act_per_layer(&ai.m, &ai.lay);
		assert_true(a == 4 * 34.0 * 1048576);
		assert_int_equal(analytic_estimate(&ai, &ao, &err), 0);
		print_message("offload 2 of 8 layers at mbs 4: %.3f ms exposed\n",
			      ao.t_offload * 1e3);
		assert_true(ao.t_offload > 0 && ao.t_offload < 2 * (a / 55.06e9 + a / 55.43e9));
		ai.hw = &fast;
		assert_int_equal(analytic_estimate(&ai, &ao, &err), 0);
		assert_true(ao.t_offload == 0);
	}
}

/* Offloading where Megatron-LM refuses it, and on a profile without a
 * host link. */
static void test_offload_rules(void **state)
{
	struct hw_profile bare_hw = hw;
	struct synth_in in;
	struct prism_err err;
	(void)state;
	offload_run(&in, &hw, 8);
	prism_err_clear(&err);
	assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
	assert_non_null(strstr(err.msg, "below the 8 layers"));
	in.lay.offload_layers = 2;
	prism_err_clear(&err);
	assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), 0);
	in.lay.pp = 2;
	prism_err_clear(&err);
	assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
	assert_non_null(strstr(err.msg, "needs pp 1"));
	in.lay.pp = 1;
	in.lay.recompute = LAYOUT_RECOMPUTE_SELECTIVE;
	prism_err_clear(&err);
	assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
	assert_non_null(strstr(err.msg, "recompute selective"));
	in.lay.recompute = LAYOUT_RECOMPUTE_NONE;
	in.lay.exec = LAYOUT_EXEC_GRAPHS;
	prism_err_clear(&err);
	assert_int_equal(layout_check(&in.m, &in.lay, &hw, &err), PRISM_EARG);
	assert_non_null(strstr(err.msg, "exec graphs"));
	in.lay.exec = LAYOUT_EXEC_EAGER;
	bare_hw.host_link = HW_HOST_NONE;
	bare_hw.host_d2h_Bps = bare_hw.host_h2d_Bps = 0;
	prism_err_clear(&err);
	assert_int_equal(layout_check(&in.m, &in.lay, &bare_hw, &err), PRISM_EARG);
	assert_non_null(strstr(err.msg, "no host link"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flops_formula),
	    cmocka_unit_test(test_times_memo),
	    cmocka_unit_test(test_stage_host_one_pass),
	    cmocka_unit_test(test_stage_host_memo),
	    cmocka_unit_test(test_host_memo),
	    cmocka_unit_test(test_tp_memo),
	    cmocka_unit_test(test_times_key),
	    cmocka_unit_test(test_bound_mem_memo),
	    cmocka_unit_test(test_pipeline_bubble),
	    cmocka_unit_test(test_zb_bubble),
	    cmocka_unit_test(test_zbv_bubble),
	    cmocka_unit_test(test_step_end),
	    cmocka_unit_test(test_head_colls),
	    cmocka_unit_test(test_dpv_bubble),
	    cmocka_unit_test(test_layout_errors),
	    cmocka_unit_test(test_meta_round_trip),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_task_bound),
	    cmocka_unit_test(test_retime_clone),
	    cmocka_unit_test(test_fit_scales),
	    cmocka_unit_test(test_lower_bound),
	    cmocka_unit_test(test_fp8_layer),
	    cmocka_unit_test(test_fp8_recipes),
	    cmocka_unit_test(test_fp8_fused_norm),
	    cmocka_unit_test(test_selective_recompute),
	    cmocka_unit_test(test_recompute_modules),
	    cmocka_unit_test(test_accumulation_adds),
	    cmocka_unit_test(test_bf16_optimizer_adds),
	    cmocka_unit_test(test_zero3_layer),
	    cmocka_unit_test(test_zero3_impls),
	    cmocka_unit_test(test_mfsdp_fill),
	    cmocka_unit_test(test_mfsdp_unit_reduce),
	    cmocka_unit_test(test_mfsdp_expert_reduce),
	    cmocka_unit_test(test_unfused_attention),
	    cmocka_unit_test(test_moe_counts),
	    cmocka_unit_test(test_moe_all_to_all),
	    cmocka_unit_test(test_moe_memory),
	    cmocka_unit_test(test_moe_lower_bound),
	    cmocka_unit_test(test_moe_rules),
	    cmocka_unit_test(test_moe_load),
	    cmocka_unit_test(test_moe_dispatchers),
	    cmocka_unit_test(test_moe_dispatch_bytes),
	    cmocka_unit_test(test_moe_shared_overlap),
	    cmocka_unit_test(test_moe_a2a_overlap),
	    cmocka_unit_test(test_moe_a2a_overlap_refused),
	    cmocka_unit_test(test_moe_a2a_overlap_memory),
	    cmocka_unit_test(test_dpv_a2a_overlap),
	    cmocka_unit_test(test_moe_interleaved),
	    cmocka_unit_test(test_mtp),
	    cmocka_unit_test(test_mamba_layer),
	    cmocka_unit_test(test_hybrid_pattern),
	    cmocka_unit_test(test_hybrid_load),
	    cmocka_unit_test(test_hybrid_as_transformer),
	    cmocka_unit_test(test_hybrid_moe),
	    cmocka_unit_test(test_lora),
	    cmocka_unit_test(test_optimizer_dtype),
	    cmocka_unit_test(test_fp8_param_gather),
	    cmocka_unit_test(test_coll_dtypes),
	    cmocka_unit_test(test_ds_bf16_allreduce),
	    cmocka_unit_test(test_fp32_activations),
	    cmocka_unit_test(test_fp8_tp_gathers),
	    cmocka_unit_test(test_fp8_cp_ring),
	    cmocka_unit_test(test_fp32_residual),
	    cmocka_unit_test(test_mla_layer),
	    cmocka_unit_test(test_mla_load),
	    cmocka_unit_test(test_cp_ring),
	    cmocka_unit_test(test_cp_allgather),
	    cmocka_unit_test(test_sp_fp8_gather),
	    cmocka_unit_test(test_vocab_parallel_colls),
	    cmocka_unit_test(test_mtp_fp8_gathers),
	    cmocka_unit_test(test_shared_fp8_gathers),
	    cmocka_unit_test(test_fp8_amax_reduce),
	    cmocka_unit_test(test_sp_rs_beside_wgrad),
	    cmocka_unit_test(test_cp_a2a),
	    cmocka_unit_test(test_cp_layout),
	    cmocka_unit_test(test_exec_host_bound),
	    cmocka_unit_test(test_exec_graphs),
	    cmocka_unit_test(test_exec_compiled),
	    cmocka_unit_test(test_exec_rows),
	    cmocka_unit_test(test_embed_kernels),
	    cmocka_unit_test(test_framework_kernels),
	    cmocka_unit_test(test_exec_analytic),
	    cmocka_unit_test(test_exec_host_forms),
	    cmocka_unit_test(test_exec_dp_host),
	    cmocka_unit_test(test_host_bound_bubble),
	    cmocka_unit_test(test_opt_tail),
	    cmocka_unit_test(test_zero3_host_bound),
	    cmocka_unit_test(test_zero3_tp_overlap),
	    cmocka_unit_test(test_zero3_estimate_bound),
	    cmocka_unit_test(test_zero3_copy_out),
	    cmocka_unit_test(test_grad_chain),
	    cmocka_unit_test(test_pipe_ends),
	    cmocka_unit_test(test_pp_transfer_bytes),
	    cmocka_unit_test(test_pp_gather),
	    cmocka_unit_test(test_analytic_uneven_interleaved),
	    cmocka_unit_test(test_exec_stage_host),
	    cmocka_unit_test(test_exec_host_verdict),
	    cmocka_unit_test(test_offload),
	    cmocka_unit_test(test_offload_rules),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
