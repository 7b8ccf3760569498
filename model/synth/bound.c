/*
 * bound.c - closed forms (synth.h): the kernel model's times of a layer,
 * of the embedding and of the head, from a dry run of layer.c's kernels
 * (a ctx that adds up their times and builds nothing), and the host's
 * time of the same and of a stage's optimizer (emit.c adds what each
 * launch and event wait would cost the host thread); an MoE layer's
 * all-to-all, its bytes and time; and a lower bound of the step's time
 * from the least times of the GEMMs, the attention and the
 * tensor-parallel collectives.
 */
#include "synth_int.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "analytic.h"
#include "comm.h"
#include "hash.h"
#include "kperf.h"

/* A context that only adds up the kernel model's times (dry_s) of one
 * rank, rk, building nothing.  Zeroed but for the ops' memo (21 of its 24
 * KB) and the interned names' cache beside it, which only se_record_op
 * and se_intern read and a dry run never reaches: the
 * judging of every candidate of a sweep makes a few of these, and zeroing
 * the memo was 1.5 % of the default sweep. */
_Static_assert(offsetof(struct ctx, em.names) ==
		   offsetof(struct ctx, em.memo) + sizeof(((struct ctx *)0)->em.memo),
	       "dry_ctx skips em.memo and em.names as one span");

static void dry_ctx(struct ctx *c, struct rankst *rk, const struct synth_in *in)
{
	size_t memo = offsetof(struct ctx, em.memo),
	       past = offsetof(struct ctx, em.names) + sizeof(c->em.names);
	memset(c, 0, memo);
	memset((char *)c + past, 0, sizeof(*c) - past);
	memset(rk, 0, sizeof(*rk));
	c->in = in;
	sl_ctx_bytes(c);
	c->hw = sl_run_hw(in, &c->hw_run);
	c->dry = 1;
	c->kdb_gpu = -1;
	c->rk = rk;
	synth_host(in, &c->em.host);
}

/* dry_ctx for one unit of a steady microbatch (mb 1: fp8 weights already
 * cast where kept), its phase and layer (-1: a dense one, outside every
 * region), and its shape into *z where z is given: the estimate's dry
 * runs' one setup. */
static void dry_unit(struct ctx *c, struct rankst *rk, const struct synth_in *in, int phase,
		     int layer, struct shape *z)
{
	dry_ctx(c, rk, in);
	rk->mb = 1;
	rk->phase = phase;
	rk->layer = layer;
	if (z)
		sl_shape(in, z);
}

/* A dry forward timing its tensor-parallel collectives (dry_comm), the
 * group within an NVLink domain as synth_build places it. */
static void dry_tp_unit(struct ctx *c, struct rankst *rk, const struct synth_in *in,
			struct shape *z)
{
	dry_unit(c, rk, in, PH_FORWARD, -1, z);
	c->dry_comm = 1;
	z->tp_per_node = in->lay.tp;
}

/*
 * The last inputs' layer, embedding and head times, per thread: judging
 * one candidate of a sweep times the same input's layer, embedding and
 * head several times (synth_partition's balanced placement from each
 * synth_mem_layout -- the memory, the estimate, its stages' host time,
 * the bound -- and the estimate's own terms), each a dry run of some
 * 10,000 instructions.  An entry holds for the input as the dry runs
 * read it (tm_key) and its profile's bytes: the candidate's input and the
 * estimate's (synth_in_default with the candidate's model, profile and
 * layout) differ only in what they do not read, so the estimate's
 * placement finds the times the candidate's made; two entries, the older
 * replaced.  test_synth's test_times_key checks the key against cold runs.
 */
enum { TM_LAYER = 1, TM_EXTRA = 2 };
struct times_memo {
	struct synth_in in;
	struct hw_profile hw;
	unsigned have; /* TM_ bits; 0: an empty entry */
	double lt[3];  /* synth_layer_times' */
	double lh[3];  /* and their compute-heavy parts (synth_layer_split) */
	double et[2];  /* synth_extra_times' */
	double eh[2];  /* and theirs */
};
static _Thread_local struct times_memo tmemo[2];
static _Thread_local int tmemo_last; /* the entry used last */

/* in as a kernel-time dry run reads it (dry_ctx: no kernel database, the
 * kernels' GPU times alone: no host's cost, no collective priced; the
 * layer on no stage): those fields cleared, its gradient adds as they
 * resolve (synth_acc_bytes; none: -1). */
static void tm_key(const struct synth_in *in, struct synth_in *x)
{
	double acc = synth_acc_bytes(in->acc_elem_bytes, &in->lay);
	*x = *in;
	x->kdb = NULL;
	x->steps = 0;
	x->comm_eff = 0;
	x->cpu_op_s = x->launch_s = x->gpu_lag_s = x->event_s = 0;
	x->acc_elem_bytes = acc > 0 ? acc : -1;
	memset(x->hw_id, 0, sizeof(x->hw_id));
	x->no_shapes = x->units = x->units_by_slot = x->unit_log = 0;
	x->lay.partition = 0;
	memset(x->lay.part, 0, sizeof(x->lay.part));
	x->lay.part_chunks = x->lay.part_first = x->lay.part_last = x->lay.part_mtp = 0;
}

/* in's entry, emptied where in is new (replacing the one used before
 * last); NULL where in has no profile. */
static struct times_memo *times_memo(const struct synth_in *in)
{
	struct times_memo *e;
	struct synth_in x;
	if (!in->hw)
		return NULL;
	tm_key(in, &x);
	for (int i = 0; i < 2; i++) {
		e = &tmemo[tmemo_last ^ i];
		if (e->have && memcmp(&e->in, &x, sizeof(x)) == 0 &&
		    memcmp(&e->hw, in->hw, sizeof(*in->hw)) == 0) {
			tmemo_last ^= i;
			return e;
		}
	}
	tmemo_last ^= 1;
	e = &tmemo[tmemo_last];
	memcpy(&e->in, &x, sizeof(x));
	memcpy(&e->hw, in->hw, sizeof(*in->hw));
	e->have = 0;
	return e;
}

static void extra_times(const struct synth_in *in, double t[2], double h[2]);

/* The kernel model's time of the embedding's forward and backward (*emb)
 * and of the head's and loss's (*head), one microbatch. */
void synth_extra_times(const struct synth_in *in, double *emb, double *head)
{
	double t[2], h[2];
	synth_extra_split(in, t, h);
	*emb = t[0], *head = t[1];
}

void synth_extra_split(const struct synth_in *in, double t[2], double h[2])
{
	struct times_memo *e = times_memo(in);
	if (e && (e->have & TM_EXTRA)) {
		memcpy(t, e->et, sizeof(e->et));
		memcpy(h, e->eh, sizeof(e->eh));
		return;
	}
	extra_times(in, t, h);
	if (e) {
		memcpy(e->et, t, sizeof(e->et));
		memcpy(e->eh, h, sizeof(e->eh));
		e->have |= TM_EXTRA;
	}
}

static void extra_times(const struct synth_in *in, double t[2], double h[2])
{
	struct ctx c;
	struct rankst rk;
	struct shape z;

	dry_ctx(&c, &rk, in);
	sl_shape(in, &z);
	sl_embed_fwd(&c, 0, &z);
	sl_embed_bwd(&c, 0, &z);
	t[0] = c.dry_s, h[0] = c.dry_heavy_s;
	c.dry_s = c.dry_heavy_s = 0;
	sl_head_fwd(&c, 0, &z);
	sl_head_bwd(&c, 0, &z);
	t[1] = c.dry_s, h[1] = c.dry_heavy_s;
}

void synth_extra_tp_s(const struct synth_in *in, double emb_s[2], double *head_s)
{
	struct ctx c;
	struct rankst rk;
	struct shape z;

	dry_tp_unit(&c, &rk, in, &z);
	sl_embed_fwd(&c, 0, &z);
	emb_s[0] = c.dry_comm_s;
	rk.phase = PH_BACKWARD;
	sl_embed_bwd(&c, 0, &z);
	emb_s[1] = c.dry_comm_s - emb_s[0];
	rk.phase = PH_FORWARD;
	sl_head_fwd(&c, 0, &z);
	*head_s = c.dry_comm_s - emb_s[0] - emb_s[1];
}

/*
 * The host's dry runs of a layer (synth_layer_host) and of the embedding
 * and head (synth_extra_host), and a layer's tensor-parallel collectives
 * (synth_layer_tp_s), per thread: the estimate runs them for every
 * candidate it judges.  A layer issues the same collectives of the same
 * sizes, and its kernels beside them take the same time, whatever the
 * ZeRO stage (its gathers and reductions are the units', not the
 * layer's), the schedule with its virtual stages, and the partition (a
 * dry run's layer is on no stage).  A dry run's host time counts launches and
 * event calls, and a layer launches the same whatever its microbatch
 * holds (mbs, and the count it gives: each kernel and collective one
 * launch, its waits the same), the embedding and head the same whatever
 * the recomputation (they are never recomputed); the embedding's backward
 * GPU time (emb_bwd_gpu_s) moves with mbs, so mbs stays in that key.  A
 * call's result is kept under its layout with those fields cleared, its
 * gradient adds (acc_elem_bytes) and which call it is, the rest of the
 * input and the profile compared whole (one per thread: another empties
 * the memo).  The same layout's variants lie a few hundred candidates
 * apart in a sweep's order (mbs its third digit), hence 1,024 entries.
 * test_synth's test_host_memo and test_tp_memo check the claims and the
 * memo against cold runs.  The bound's memory-bound kernels of a layer
 * (layer_mem_s, HM_MEM + its kind) are kept the same way under the
 * layout as the times memo keys it (tm_key: the partition's fields out;
 * the microbatch count kept) and without the clock: the bound runs at
 * its own (bound_in), and a memory-bound kernel's time reads the
 * bandwidth, not the clock (kperf_mem_impl_s); in a table of their own
 * (64 entries), since the bound's input is the candidate's and the
 * estimate's host runs' is its own (synth_in_default's): one table would
 * be emptied at every call of the other.  test_bound_mem_memo.
 */
enum { HM_DENSE = 1, HM_MOE, HM_EXTRA, HM_TP, HM_MEM };
#define HOST_MEMO 1024 /* entries, direct-mapped by the key's hash */
#define MEM_MEMO  64   /* the bound's (HM_MEM) */
struct host_memo {
	struct layout lay; /* the key: the input's layout, as hm_find clears it */
	double acc;	   /* and its acc_elem_bytes (the rest: hm_in) */
	double clock;	   /* and its clock, where the call reads it (hm_clock) */
	int what;	   /* HM_ (0: empty) */
	double out[5];
};
static _Thread_local struct host_memo hmemo[HOST_MEMO], mmemo[MEM_MEMO];
/* each table's input, its layout and adds cleared, no profile, and the
 * profile ([0] hmemo's, [1] mmemo's) */
static _Thread_local struct synth_in hm_in[2];
static _Thread_local struct hw_profile hm_hw[2];

/* The clock call `what` reads of in: a layer's host times count launches
 * and event calls, the same at any clock the GPU runs at (the step's own,
 * synth_in.clock, which a sweep sets per candidate); the embedding's
 * backward GPU time and the tensor-parallel collectives' kernels keep it. */
static double hm_clock(const struct synth_in *in, int what)
{
	return what == HM_DENSE || what == HM_MOE || what >= HM_MEM ? 0 : in->clock;
}

/* The entry of in for call `what` (*hit: it holds the result), or NULL
 * where in has no profile. */
static struct host_memo *hm_find(const struct synth_in *in, int what, int *hit)
{
	struct synth_in x = *in;
	struct host_memo *e, *tab = what >= HM_MEM ? mmemo : hmemo;
	int t = what >= HM_MEM, n = t ? MEM_MEMO : HOST_MEMO;
	if (!in->hw)
		return NULL;
	memset(&x.lay, 0, sizeof(x.lay));
	x.hw = NULL;
	x.acc_elem_bytes = 0;
	x.clock = 0;
	if (memcmp(&x, &hm_in[t], sizeof(x)) != 0 ||
	    memcmp(in->hw, &hm_hw[t], sizeof(hm_hw[t])) != 0) {
		hm_in[t] = x;
		hm_hw[t] = *in->hw;
		for (int i = 0; i < n; i++)
			tab[i].what = 0;
	}
	x.lay = in->lay;
	if (what == HM_EXTRA) {
		x.lay.recompute = 0;
		x.lay.recompute_modules = 0;
	} else if (what == HM_TP || what >= HM_MEM) {
		if (what == HM_TP) {
			x.lay.zero = 0;
			x.lay.schedule = 0;
			x.lay.vp = 0;
		}
		x.lay.partition = 0;
		memset(x.lay.part, 0, sizeof(x.lay.part));
		x.lay.part_chunks = x.lay.part_first = x.lay.part_last = x.lay.part_mtp = 0;
	} else {
		x.lay.mbs = 0;
	}
	if (what < HM_MEM)
		x.lay.microbatches = 0;
	_Static_assert(sizeof(struct layout) % 8 == 0, "a layout hashed by words");
	e = &tab[(hash_words(HASH_SEED + (uint64_t)what, &x.lay, sizeof(x.lay)) >> 40) %
		 (unsigned)n];
	*hit = e->what == what && e->acc == in->acc_elem_bytes && e->clock == hm_clock(in, what) &&
	       memcmp(&e->lay, &x.lay, sizeof(x.lay)) == 0;
	if (!*hit) {
		e->lay = x.lay;
		e->acc = in->acc_elem_bytes;
		e->clock = hm_clock(in, what);
		e->what = 0;
	}
	return e;
}

static void extra_host(const struct synth_in *in, struct synth_extra_host *h);

void synth_extra_host(const struct synth_in *in, struct synth_extra_host *h)
{
	int hit;
	struct host_memo *e = hm_find(in, HM_EXTRA, &hit);
	if (e && hit) {
		h->emb_fwd_s = e->out[0], h->emb_bwd_s = e->out[1], h->head_fwd_s = e->out[2],
		h->head_bwd_s = e->out[3], h->emb_bwd_gpu_s = e->out[4];
		return;
	}
	extra_host(in, h);
	if (e) {
		e->out[0] = h->emb_fwd_s, e->out[1] = h->emb_bwd_s, e->out[2] = h->head_fwd_s,
		e->out[3] = h->head_bwd_s, e->out[4] = h->emb_bwd_gpu_s;
		e->what = HM_EXTRA;
	}
}

static void extra_host(const struct synth_in *in, struct synth_extra_host *h)
{
	struct ctx c;
	struct rankst rk;
	struct shape z;
	void (*part[4])(struct ctx *, int, const struct shape *) = {sl_embed_fwd, sl_embed_bwd,
								    sl_head_fwd, sl_head_bwd};
	double *out[4] = {&h->emb_fwd_s, &h->emb_bwd_s, &h->head_fwd_s, &h->head_bwd_s};

	dry_unit(&c, &rk, in, PH_FORWARD, -1, &z);
	c.dry_host = 1;
	c.dry_out = 1;
	for (int i = 0; i < 4; i++) {
		rk.phase = i % 2 ? PH_BACKWARD : PH_FORWARD;
		c.dry_host_s = c.dry_s = 0;
		part[i](&c, 0, &z);
		*out[i] = c.dry_host_s;
		if (i == 1)
			h->emb_bwd_gpu_s = c.dry_s;
	}
}

/* Additions to the host's time kept from a stage's optimizer pass
 * (synth_stage_host); a stage that makes more runs its pass again. */
#define STAGE_HOST_LOG 4096

/* synth_stage_host's dry runs: in, its layout placed as lay. */
static void stage_host_run(const struct synth_in *in, const struct layout *lay,
			   struct synth_stage_host *st)
{
	static _Thread_local struct rankst rk[LAYOUT_MAX_STAGES];
	static _Thread_local double log[STAGE_HOST_LOG];
	struct ctx c;
	struct shape z;
	int pp = in->lay.pp;
	unsigned n0;

	dry_ctx(&c, rk, in);
	c.dry_host = 1;
	c.dry_out = 1; /* (layer -1 is outside every region, as built) */
	memset(rk, 0, sizeof(rk[0]) * (size_t)pp);
	c.lay = *lay;
	sl_shape(in, &z);
	for (int r = 0; r < pp; r++) {
		rk[r].layer = -1;
		rk[r].mb = 1;
		rk[r].phase = PH_FORWARD;
		ss_transfers(&c, r, &z, &st[r].xfer_fwd_s, &st[r].xfer_bwd_s);
		/* The optimizer's host time and its kernels' GPU time (the
		 * collectives left to the estimate's data-parallel and
		 * statistics terms) from one pass, its kernels timed: a dry
		 * run for the host's time alone launches the same tasks and
		 * adds the same host times, its kernels untimed.  It was two
		 * passes, the host's time then the kernels' (with the host's
		 * added again onto the first's): its additions are made again
		 * from the log, so that the next stage's transfers
		 * (differences of dry_host_s) are the same bits. */
		c.dry_host_s = 0;
		c.dry_host = 0;
		c.dry_s = 0;
		c.dry_log = log;
		c.dry_log_n = 0;
		c.dry_log_cap = STAGE_HOST_LOG;
		n0 = c.dry_tasks;
		if (!in->bare)
			ss_optimizer(&c, r, &z);
		c.dry_log = NULL;
		st[r].opt_s = c.dry_host_s;
		st[r].opt_gpu_s = c.dry_s;
		if (c.dry_log_n <= STAGE_HOST_LOG) {
			for (int i = 0; i < c.dry_log_n; i++)
				c.dry_host_s += log[i];
			c.dry_tasks += c.dry_tasks - n0;
		} else {
			ss_optimizer(&c, r, &z); /* (past the log: the pass again) */
		}
		c.dry_host = 1;
		st[r].dp_fwd_s = st[r].dp_bwd_s = st[r].dp_last_s = 0;
		/* (none without data parallelism: the units issue nothing) */
		if (!in->bare && (layout_dpc(&c.lay) > 1 || z.edp > 1))
			ss_dp_host(&c, r, &z, &st[r].dp_fwd_s, &st[r].dp_bwd_s, &st[r].dp_last_s);
	}
}

/*
 * The stages' host times of the estimate, per thread: judging a sweep
 * times every candidate's stages, and candidates that differ only in
 * their microbatches (mbs, and the count it gives) or their
 * recomputation time the same -- a dry run's host times count launches
 * and event calls, which neither changes (the transfers, the data-parallel
 * work's gathers and reductions, the optimizer's passes: one each
 * whatever the microbatch holds, and a dry run of the data-parallel work
 * runs no layer, recomputed or not), and the optimizer's kernels move the
 * parameters alone (ss_optimizer, opt_pass, adam).  Kept under the
 * input's layout and its placement with those three fields cleared
 * (sh_key; the placement itself may move with them: a balanced one
 * follows the layer's times), and the rest of the input and the profile
 * (one per thread: a new one empties the memo).  test_synth's
 * test_stage_host_memo checks the claim and the memo against cold runs.
 */
#define SH_MEMO	      256  /* entries, direct-mapped by the key's hash */
#define SH_RING	      4096 /* the entries' stages, a ring */
#define SH_MEMO_MAXPP 64   /* the deepest pipeline kept */
struct sh_memo {
	uint64_t h;  /* the key's hash (0: empty) */
	uint64_t at; /* its stages' first place in the ring (sh_n's count) */
	struct layout in_lay, lay;
	int pp;
};
static _Thread_local struct sh_memo sh_memo[SH_MEMO];
static _Thread_local struct synth_stage_host sh_ring[SH_RING];
static _Thread_local uint64_t sh_n;	    /* stages written to the ring */
static _Thread_local struct synth_in sh_in; /* its layout cleared, no profile */
static _Thread_local struct hw_profile sh_hw;

/* A layout as the stages' host times read it (sh_memo). */
static void sh_key(struct layout *l)
{
	l->mbs = 0;
	l->microbatches = 0;
	l->recompute = 0;
}

/* in's key (kin, klay: its layout and lay, its placement, as sh_key
 * leaves them; its entries emptied where the rest of in or its profile
 * is not the memo's): the hash, never 0. */
static uint64_t sh_memo_key(const struct synth_in *in, const struct layout *lay, struct layout *kin,
			    struct layout *klay)
{
	struct synth_in x = *in;
	uint64_t h;
	memset(&x.lay, 0, sizeof(x.lay));
	x.hw = NULL;
	if (memcmp(&x, &sh_in, sizeof(x)) != 0 || memcmp(in->hw, &sh_hw, sizeof(sh_hw)) != 0) {
		sh_in = x;
		sh_hw = *in->hw;
		for (int i = 0; i < SH_MEMO; i++)
			sh_memo[i].h = 0;
	}
	*kin = in->lay;
	*klay = *lay;
	sh_key(kin);
	sh_key(klay);
	_Static_assert(sizeof(struct layout) % 8 == 0, "a layout hashed by words");
	h = hash_words(hash_words(HASH_SEED, kin, sizeof(*kin)), klay, sizeof(*klay));
	return h ? h : 1;
}

void synth_stage_host(const struct synth_in *in, struct synth_stage_host *st)
{
	struct layout lay, kin, klay;
	struct sh_memo *e;
	int pp = in->lay.pp;
	uint64_t h;

	synth_mem_layout(in, &lay);
	if (!in->hw || pp > SH_MEMO_MAXPP) {
		stage_host_run(in, &lay, st);
		return;
	}
	h = sh_memo_key(in, &lay, &kin, &klay);
	e = &sh_memo[(h >> 40) % SH_MEMO];
	/* (its stages still in the ring: not written over since) */
	if (e->h == h && e->pp == pp && sh_n - e->at <= SH_RING &&
	    memcmp(&e->in_lay, &kin, sizeof(kin)) == 0 &&
	    memcmp(&e->lay, &klay, sizeof(klay)) == 0) {
		for (int r = 0; r < pp; r++)
			st[r] = sh_ring[(e->at + (uint64_t)r) % SH_RING];
		return;
	}
	stage_host_run(in, &lay, st);
	e->h = h;
	e->at = sh_n;
	e->in_lay = kin;
	e->lay = klay;
	e->pp = pp;
	for (int r = 0; r < pp; r++)
		sh_ring[sh_n++ % SH_RING] = st[r];
}

static double layer_tp_s(const struct synth_in *in, double *fwd_s);

double synth_layer_tp_s(const struct synth_in *in, double *fwd_s)
{
	int hit;
	double f, t;
	struct host_memo *e = hm_find(in, HM_TP, &hit);
	if (e && hit) {
		if (fwd_s)
			*fwd_s = e->out[0];
		return e->out[1];
	}
	t = layer_tp_s(in, &f);
	if (fwd_s)
		*fwd_s = f;
	if (e) {
		e->out[0] = f, e->out[1] = t;
		e->what = HM_TP;
	}
	return t;
}

static double layer_tp_s(const struct synth_in *in, double *fwd_s)
{
	struct ctx c;
	struct rankst rk;
	struct shape z;

	dry_tp_unit(&c, &rk, in, &z);
	/* each rank's s / cp tokens, context parallelism's own collectives
	 * left out: the estimate's context-parallel term (cp_terms) */
	z.cp = 1;
	sl_layer_fwd(&c, 0, &z);
	if (fwd_s)
		*fwd_s = c.dry_comm_s;
	rk.phase = PH_BACKWARD;
	sl_layer_bwd(&c, 0, &z);
	return c.dry_comm_s;
}

/* Layer `layer`'s fp8 GEMMs, as its forward counts them (layer.c
 * fp8_gemms). */
static double layer_fp8_gemms(const struct synth_in *in, const struct shape *z, int layer)
{
	struct ctx c;
	struct rankst rk;
	dry_unit(&c, &rk, in, PH_FORWARD, layer, NULL);
	c.dry_kind = llm_layer_kind(&in->m, layer);
	sl_layer_fwd(&c, 0, z);
	return rk.fp8_gemms;
}

double ss_chunk_fp8_gemms(const struct synth_in *in, const struct layout *lay, int stage, int ch)
{
	struct shape z;
	/* A layer's count by its kind and whether it has experts: a few
	 * dry forwards, not one a layer. */
	double memo[LLM_KINDS][2], g = 0;
	int seen[LLM_KINDS][2] = {{0}};
	int l0 = layout_chunk_first(&in->m, lay, stage, ch),
	    nl = layout_chunk_layers(&in->m, lay, stage, ch);

	if (!sl_low_precision(in->lay.dtype))
		return 0;
	sl_shape(in, &z);
	for (int l = l0; l < l0 + nl; l++) {
		int k = llm_layer_kind(&in->m, l), e = llm_is_moe_layer(&in->m, l);
		if (!seen[k][e]) {
			memo[k][e] = layer_fp8_gemms(in, &z, l);
			seen[k][e] = 1;
		}
		g += memo[k][e];
	}
	return g;
}

double synth_stage_amax_s(const struct synth_in *in, int stage, double host[2])
{
	struct ctx c;
	struct rankst rk;
	double h[2] = {0, 0};

	if (host)
		host[0] = host[1] = 0;
	if (in->lay.dtype != HW_FP8 || in->lay.fp8_recipe != LAYOUT_FP8_DELAYED)
		return 0;
	dry_unit(&c, &rk, in, PH_FORWARD, -1, NULL);
	c.dry_comm = 1;
	c.dry_out = 1; /* (layer -1 outside every region, as built) */
	synth_mem_layout(in, &c.lay);
	for (int ch = 0; ch < layout_stage_chunks(&c.lay); ch++) {
		double g = ss_chunk_fp8_gemms(in, &c.lay, stage, ch);
		for (int fwd = 1; fwd >= 0; fwd--) {
			double h0 = c.dry_host_s;
			rk.phase = fwd ? PH_FORWARD : PH_BACKWARD;
			ss_amax_update(&c, 0, g, fwd);
			h[!fwd] += c.dry_host_s - h0;
		}
	}
	if (host)
		host[0] = h[0], host[1] = h[1];
	return c.dry_s + c.dry_comm_s;
}

/* The first layer of kind k (0 where there is none). */
static int first_of_kind(const struct llm *m, int k)
{
	for (int l = 0; l < m->layers; l++)
		if (llm_layer_kind(m, l) == k)
			return l;
	return 0;
}

/* One layer's times t (forward, backward, attention forward) and their
 * compute-heavy parts h, its attention windowed by win (0: global); kind:
 * a hybrid model's layer kind (LLM_KIND_FULL otherwise). */
static void layer_times_win(const struct synth_in *in, int moe, int kind, int win, double t[3],
			    double h[3])
{
	struct ctx c;
	struct rankst rk;
	struct shape z;

	/* a dense layer, an MoE one, or a hybrid model's E layer */
	dry_unit(&c, &rk, in, PH_FORWARD,
		 kind == LLM_KIND_MOE ? first_of_kind(&in->m, kind)
		 : moe		      ? in->m.layers - 1
				      : -1,
		 &z);
	c.dry_window = win;
	c.dry_kind = kind;
	sl_layer_fwd(&c, 0, &z);
	t[0] = c.dry_s, h[0] = c.dry_heavy_s;
	c.dry_s = c.dry_heavy_s = 0;
	rk.phase = PH_BACKWARD;
	sl_layer_bwd(&c, 0, &z);
	t[1] = c.dry_s, h[1] = c.dry_heavy_s;
	c.dry_s = c.dry_heavy_s = 0;
	sl_attn_fwd(&c, 0, &z);
	t[2] = c.dry_s, h[2] = c.dry_heavy_s;
}

/* A layer's times: with sliding windows, the mean of a windowed and a
 * global layer's, weighted by how many of each the model has (of kind's
 * layers, for a hybrid model's). */
static void layer_times_of(const struct synth_in *in, int moe, int kind, double t[3], double h[3])
{
	const struct llm *m = &in->m;
	double tw[3], hw[3], nw = 0, n = 0;
	layer_times_win(in, moe, kind, 0, t, h);
	if (m->window <= 0)
		return;
	for (int l = 0; l < m->layers; l++)
		if (llm_layer_kind(m, l) == kind) {
			nw += llm_window(m, l) > 0;
			n++;
		}
	if (n <= 0)
		return;
	layer_times_win(in, moe, kind, m->window, tw, hw);
	for (int i = 0; i < 3; i++) {
		t[i] += (tw[i] - t[i]) * nw / n;
		h[i] += (hw[i] - h[i]) * nw / n;
	}
}

void synth_kind_layer_times(const struct synth_in *in, int k, double *fwd_s, double *bwd_s,
			    double *attn_fwd_s)
{
	double t[3], h[3];
	layer_times_of(in, 0, k, t, h);
	*fwd_s = t[0], *bwd_s = t[1], *attn_fwd_s = t[2];
}

/* One layer's host time in a dry run, forward and backward: kind, a
 * hybrid model's kind of layer (LLM_KIND_FULL otherwise), and layer, the
 * one timed (-1: a dense one). */
static void layer_host(const struct synth_in *in, int kind, int layer, double *fwd_s, double *bwd_s)
{
	struct ctx c;
	struct rankst rk;
	struct shape z;

	dry_unit(&c, &rk, in, PH_FORWARD, layer, &z);
	c.dry_host = 1;
	c.dry_kind = kind;
	/* The 1F1B all-to-all overlap builds a layer by parts, chained by
	 * events (step.c unit_pair). */
	if (layout_a2a_overlap(&in->m, &in->lay))
		ss_layer_parts(&c, 0, &z, layer, 1);
	else
		sl_layer_fwd(&c, 0, &z);
	*fwd_s = c.dry_host_s;
	c.dry_host_s = 0;
	rk.phase = PH_BACKWARD;
	if (layout_a2a_overlap(&in->m, &in->lay))
		ss_layer_parts(&c, 0, &z, layer, 0);
	else
		sl_layer_bwd(&c, 0, &z);
	*bwd_s = c.dry_host_s;
}

void synth_kind_layer_host(const struct synth_in *in, int k, double *fwd_s, double *bwd_s)
{
	layer_host(in, k, k == LLM_KIND_MOE ? first_of_kind(&in->m, k) : -1, fwd_s, bwd_s);
}

void synth_layer_host(const struct synth_in *in, int moe, double *fwd_s, double *bwd_s)
{
	int hit, what = moe && llm_moe_layers(&in->m) > 0 ? HM_MOE : HM_DENSE;
	struct host_memo *e = hm_find(in, what, &hit);
	if (e && hit) {
		*fwd_s = e->out[0], *bwd_s = e->out[1];
		return;
	}
	layer_host(in, LLM_KIND_FULL, what == HM_MOE ? in->m.layers - 1 : -1, fwd_s, bwd_s);
	if (e) {
		e->out[0] = *fwd_s, e->out[1] = *bwd_s;
		e->what = what;
	}
}

/* One layer's W pass (its weight gradients), its attention windowed by
 * win. */
static double layer_wgrad_win(const struct synth_in *in, int moe, int win, double *heavy)
{
	struct ctx c;
	struct rankst rk;
	struct shape z;

	dry_unit(&c, &rk, in, PH_BACKWARD, moe ? in->m.layers - 1 : -1, &z);
	c.dry_window = win;
	c.pass = SL_PASS_W;
	sl_layer_bwd(&c, 0, &z);
	*heavy = c.dry_heavy_s;
	return c.dry_s;
}

double synth_layer_wgrad_host_s(const struct synth_in *in, int moe)
{
	struct ctx c;
	struct rankst rk;
	struct shape z;

	dry_unit(&c, &rk, in, PH_BACKWARD,
		 moe && llm_moe_layers(&in->m) > 0 ? in->m.layers - 1 : -1, &z);
	c.dry_host = 1;
	c.pass = SL_PASS_W;
	sl_layer_bwd(&c, 0, &z);
	return c.dry_host_s;
}

double synth_layer_wgrad_split(const struct synth_in *in, int moe, double *heavy)
{
	const struct llm *m = &in->m;
	double w, hw, nw = 0, x;
	moe = moe && llm_moe_layers(m) > 0;
	w = layer_wgrad_win(in, moe, 0, heavy);
	if (m->window <= 0)
		return w;
	for (int l = 0; l < m->layers; l++)
		nw += llm_window(m, l) > 0;
	x = layer_wgrad_win(in, moe, m->window, &hw);
	*heavy += (hw - *heavy) * nw / m->layers;
	return w + (x - w) * nw / m->layers;
}

double synth_layer_wgrad_s(const struct synth_in *in, int moe)
{
	double h;
	return synth_layer_wgrad_split(in, moe, &h);
}

void synth_layer_split(const struct synth_in *in, int moe, int kind, double t[3], double h[3])
{
	struct times_memo *e;
	moe = moe && llm_moe_layers(&in->m) > 0;
	if (moe || kind != LLM_KIND_FULL) {
		layer_times_of(in, moe, kind, t, h);
		return;
	}
	e = times_memo(in);
	if (e && (e->have & TM_LAYER)) {
		memcpy(t, e->lt, sizeof(e->lt));
		memcpy(h, e->lh, sizeof(e->lh));
		return;
	}
	layer_times_of(in, 0, LLM_KIND_FULL, t, h);
	if (e) {
		memcpy(e->lt, t, sizeof(e->lt));
		memcpy(e->lh, h, sizeof(e->lh));
		e->have |= TM_LAYER;
	}
}

void synth_layer_times(const struct synth_in *in, double *fwd_s, double *bwd_s, double *attn_fwd_s)
{
	double t[3], h[3];
	synth_layer_split(in, 0, LLM_KIND_FULL, t, h);
	*fwd_s = t[0], *bwd_s = t[1], *attn_fwd_s = t[2];
}

void synth_moe_layer_times(const struct synth_in *in, double *fwd_s, double *bwd_s,
			   double *attn_fwd_s)
{
	double t[3], h[3];
	synth_layer_split(in, 1, LLM_KIND_FULL, t, h);
	*fwd_s = t[0], *bwd_s = t[1], *attn_fwd_s = t[2];
}

/* The dispatcher's collectives of one MoE layer's forward (sl_moe_colls):
 * the all-to-alls alone (a2a), or every one with the combine's (an
 * all-gather's reduce-scatter; routing maps have none). */
static double moe_colls_s(const struct synth_in *in, int a2a)
{
	struct shape z;
	struct sl_moe_coll cl[SL_MOE_COLLS];
	struct comm_est e;
	double t = 0;
	int n;
	sl_shape(in, &z);
	n = sl_moe_colls(&z, cl);
	for (int i = 0; i < n; i++) {
		if (a2a && cl[i].kind != GC_ALL_TO_ALL)
			continue;
		if (comm_time(in->hw, cl[i].kind, cl[i].bytes, cl[i].g, in->comm_eff, COMM_AUTO,
			      &e) == 0)
			t += e.time_s;
		if (a2a || cl[i].routing)
			continue;
		if (comm_time(in->hw, cl[i].kind == GC_ALL_GATHER ? GC_REDUCE_SCATTER : cl[i].kind,
			      cl[i].bytes, cl[i].g, in->comm_eff, COMM_AUTO, &e) == 0)
			t += e.time_s;
	}
	return t;
}

double synth_moe_a2a_s(const struct synth_in *in)
{
	return moe_colls_s(in, 1);
}

double synth_moe_dispatch_s(const struct synth_in *in)
{
	return moe_colls_s(in, 0);
}

double synth_moe_a2a_bytes(const struct synth_in *in)
{
	struct shape z;
	sl_shape(in, &z);
	return z.moe && z.ep > 1 ? sl_moe_a2a_bytes(&z) : 0;
}

/* What a kernel of class cls whose kernel-model time is at least min_s
 * takes at least, through the class's line and scale; 0 where the line
 * makes no bound (a negative fitted overhead: a fitted line may). */
static double line_bound(const struct synth_in *in, int cls, double min_s)
{
	const struct calib_class *k = &in->cost[cls];
	double e = k->eff > 0 ? k->eff : 1;
	if (k->overhead_s < 0 || in->scale[cls] <= 0)
		return 0;
	return min_s / e * in->scale[cls];
}

/* The least time of one layer's GEMMs and attention core on one
 * tensor-parallel rank, forward (*f) and backward (*b, without
 * recomputation): every GEMM at least its FLOPs at the achievable peak of
 * its dtype (kperf_gemm_min_s), the attention kernels at least their block
 * work at the pass's achievable peak (kperf_attn_min_s). */
static void layer_bound_of(const struct synth_in *in, const struct hw_profile *hw, int kind,
			   double *f, double *b, double *attn_f)
{
	const struct llm *m = &in->m;
	double bt = in->lay.mbs, t = in->lay.tp, gemm, attn, af, ab;
	int dt = layout_attn_dtype(&in->lay), cp = layout_cp(&in->lay);

	llm_kind_flops(m, kind, bt, &gemm, &attn);
	if (kind == LLM_KIND_MOE) {
		/* A hybrid model's E layer: moe_layer_bound's GEMMs without the
		 * attention's (the router, the shared experts unless beside
		 * the dispatcher, the busiest rank's routed tokens). */
		struct shape z;
		double fl;
		sl_shape(in, &z);
		fl = llm_gemm_flops(z.n_tok, z.E, z.h) +
		     (in->lay.moe_shared_overlap ? 0 : z.shared) *
			 (llm_gemm_flops(z.b * z.s, z.fe_in, z.h) +
			  llm_gemm_flops(z.b * z.s, z.h, z.fe)) /
			 z.t +
		     llm_gemm_flops(z.M, z.fe_in / z.etp, z.h) +
		     llm_gemm_flops(z.M, z.h, z.fe / z.etp);
		*f = line_bound(in, KC_GEMM, kperf_gemm_min_s(hw, in->lay.dtype, fl));
		*b = 2 * *f;
		*attn_f = 0;
		return;
	}
	if (kind == LLM_KIND_MAMBA || kind == LLM_KIND_MLP) {
		/* No attention.  A Mamba layer's SSD products run as GEMMs
		 * (layer.c ssd_gemm; bf16 unless fp32, and no fewer chunks
		 * than s / Q): the scan's FLOPs less the states' passing
		 * (memory-bound), at the bf16 peak; backward twice them (its
		 * recomputed products left out: a weaker bound). */
		double T = bt * m->seq, scan = 0;
		int sdt =
		    in->lay.dtype == HW_FP32 || in->lay.dtype == HW_TF32 ? in->lay.dtype : HW_BF16;
		if (kind == LLM_KIND_MAMBA)
			scan = line_bound(
			    in, KC_GEMM,
			    kperf_gemm_min_s(hw, sdt,
					     (attn - 2 * T * m->ssm_heads * (double)m->ssm_state *
							 m->ssm_head_dim / m->ssm_chunk) /
						 t));
		gemm = line_bound(in, KC_GEMM, kperf_gemm_min_s(hw, in->lay.dtype, gemm / t / cp));
		*f = gemm + scan;
		*b = 2 * (gemm + scan);
		*attn_f = 0;
		return;
	}
	gemm = line_bound(in, KC_GEMM, kperf_gemm_min_s(hw, in->lay.dtype, gemm / t / cp));
	if (cp > 1) {
		/* The ring's steps (ring_attn) over the q = cp / a groups, at
		 * a-th of the heads after Ulysses' all-to-all (cp_attn): the
		 * rank's own causal block and q - 1 half blocks, each at least
		 * its work at the peak.  The all-gather form does the same
		 * work. */
		int a = layout_cp_a2a(&in->lay, hw_domain(hw)), q = cp / a;
		double heads = m->heads / t / a, d = llm_head_dim(m), sl = (double)m->seq / q;
		af = line_bound(in, KC_ATTENTION,
				kperf_attn_min_s(hw, dt, 0, bt, heads, sl, sl, d, 1)) +
		     (q - 1) * line_bound(in, KC_ATTENTION,
					  kperf_attn_min_s(hw, dt, 0, bt, heads, sl / 2, sl, d, 0));
		ab = line_bound(in, KC_ATTENTION,
				kperf_attn_min_s(hw, dt, 1, bt, heads, sl, sl, d, 1)) +
		     (q - 1) * line_bound(in, KC_ATTENTION,
					  kperf_attn_min_s(hw, dt, 1, bt, heads, sl / 2, sl, d, 0));
	} else if (in->lay.flash) {
		/* A windowed layer's band is the least any layer runs: a bound
		 * for every layer. */
		double heads = m->heads / t, d = llm_head_dim(m), win = m->window;
		af = line_bound(
		    in, KC_ATTENTION,
		    kperf_attn_win_min_s(hw, dt, 0, bt, heads, m->seq, m->seq, d, 1, win));
		ab = line_bound(
		    in, KC_ATTENTION,
		    kperf_attn_win_min_s(hw, dt, 1, bt, heads, m->seq, m->seq, d, 1, win));
	} else {
		af = line_bound(in, KC_GEMM, kperf_gemm_min_s(hw, dt, attn / t));
		ab = 2 * af;
	}
	*f = gemm + af;
	/* Under LoRA the frozen weights have no gradient GEMM: the input's
	 * alone (the adapters' GEMMs left out: a weaker bound). */
	*b = (layout_lora(&in->lay, 0) ? 1 : 2) * gemm + ab;
	*attn_f = af;
}

static void layer_bound(const struct synth_in *in, const struct hw_profile *hw, double *f,
			double *b, double *attn_f)
{
	layer_bound_of(in, hw, LLM_KIND_FULL, f, b, attn_f);
}

/* The forward FLOPs of one layer's attention projections on one
 * tensor-parallel rank (T tokens): QKV and the projection, or MLA's down
 * projections whole on the rank's tokens (T / t with sequence
 * parallelism) and the rest split (layer.c's mla_fwd). */
static double attn_gemm_flops(const struct synth_in *in, const struct shape *z, double T)
{
	const struct llm *m = &in->m;
	double down = llm_mla_down_params(m);
	if (!z->mla)
		return llm_gemm_flops(T, z->qkv_r, z->h) + llm_gemm_flops(T, z->h, z->wo) / z->t;
	return 2 * T * (llm_attn_params(m) - down) / z->t + 2 * (in->lay.sp ? T / z->t : T) * down;
}

/* The same for a mixture-of-experts layer on the busiest rank: its
 * attention, projection, router, shared and routed experts' FLOPs
 * (llm_moe_layer_flops' terms on the rank's tokens) at the peak. */
static void moe_layer_bound(const struct synth_in *in, const struct hw_profile *hw, double *f,
			    double *b, double *attn_f)
{
	struct shape z;
	double T, fl, g, fd, bd, ab;
	layer_bound(in, hw, &fd, &bd, attn_f);
	ab = bd - 2 * (fd - *attn_f); /* the attention core's backward */
	sl_shape(in, &z);
	T = z.b * z.s;
	/* Shared experts overlapped with the dispatcher run on a side stream:
	 * left out (the compute stream's work alone bounds the step). */
	fl = attn_gemm_flops(in, &z, T) + llm_gemm_flops(z.n_tok, z.E, z.h) +
	     (in->lay.moe_shared_overlap ? 0 : z.shared) *
		 (llm_gemm_flops(T, z.fe_in, z.h) + llm_gemm_flops(T, z.h, z.fe)) / z.t +
	     llm_gemm_flops(z.M, z.fe_in / z.etp, z.h) + llm_gemm_flops(z.M, z.h, z.fe / z.etp);
	g = line_bound(in, KC_GEMM, kperf_gemm_min_s(hw, in->lay.dtype, fl));
	*f = g + *attn_f;
	*b = 2 * g + ab;
}

/* The least time of the GEMMs selective recomputation's modules re-run
 * in a dense layer (moe 0) or a mixture-of-experts layer (moe 1), beyond
 * the attention core's (layer_bound's attn_f): mlp's FC1 and FC2,
 * mla_up_proj's up projections, moe's router, shared and routed experts,
 * shared_experts' (shared experts beside the dispatcher left out, as in
 * moe_layer_bound).  The norms and moe_act's activation are left out: a
 * weaker bound. */
static double rc_bound(const struct synth_in *in, const struct hw_profile *hw, int moe)
{
	const struct layout *l = &in->lay;
	struct shape z;
	double T, hq, fl = 0, sh;
	sl_shape(in, &z);
	T = z.b * z.s;
	hq = z.a / z.t;
	sh =
	    l->moe_shared_overlap
		? 0
		: z.shared * (llm_gemm_flops(T, z.fe_in, z.h) + llm_gemm_flops(T, z.h, z.fe)) / z.t;
	if (!moe && layout_rc(l, LAYOUT_RC_MLP))
		fl += (llm_gemm_flops(T, z.f_in, z.h) + llm_gemm_flops(T, z.h, z.f)) / z.t;
	if (z.mla && layout_rc(l, LAYOUT_RC_MLA_UP_PROJ))
		fl += llm_gemm_flops(T, hq * z.dqk, z.ql > 0 ? z.ql : z.h) +
		      llm_gemm_flops(T, hq * (z.dqk - z.rope + z.dv), z.kvl);
	if (moe && layout_rc(l, LAYOUT_RC_MOE))
		fl += llm_gemm_flops(z.n_tok, z.E, z.h) + sh +
		      llm_gemm_flops(z.M, z.fe_in / z.etp, z.h) +
		      llm_gemm_flops(z.M, z.h, z.fe / z.etp);
	else if (moe && layout_rc(l, LAYOUT_RC_SHARED))
		fl += sh;
	return fl > 0 ? line_bound(in, KC_GEMM, kperf_gemm_min_s(hw, l->dtype, fl)) : 0;
}

/* One tensor-parallel collective of kind over bs tokens' activations of
 * width w, eb bytes a value: its time, 0 where comm_time has none. */
static double tp_coll_eb_s(const struct synth_in *in, int kind, double bs, double w, double eb)
{
	struct comm_group g = {in->lay.tp, in->lay.tp};
	struct comm_est e;
	return comm_time(in->hw, kind, bs * w * eb, g, in->comm_eff, COMM_AUTO, &e) == 0 ? e.time_s
											 : 0;
}

/* The same in the activations' dtype (kperf_act_bytes: bf16's 2, fp32's
 * 4). */
static double tp_coll_s(const struct synth_in *in, int kind, double bs, double w)
{
	return tp_coll_eb_s(in, kind, bs, w, kperf_act_bytes(in->lay.dtype));
}

/* The least bytes a value of a sequence-parallel gather of b s h that
 * layer.c's gather_bytes gives a usage (kperf_lowp_gather_bytes; the
 * activations' kperf_act_bytes where the framework gathers them
 * unquantised, or blockwise's and mxfp8's two copies are more). */
static double sp_gather_eb(const struct synth_in *in, int usage)
{
	const struct layout *l = &in->lay;
	double eb = kperf_lowp_gather_bytes(l->dtype, l->fp8_recipe, l->exec, usage),
	       ab = kperf_act_bytes(l->dtype);
	return eb < ab ? eb : ab;
}

/* MLA's attention's tensor-parallel collectives on the compute stream
 * (layer.c's mla_fwd and mla_bwd), forward (*f) and backward (*b): with
 * sequence parallelism the compressed q's (or hidden's), kv's and RoPE's
 * key's all-gathers and the projection's reduce-scatter, backward the
 * projection's all-gather and RoPE's key's reduce-scatter (the compressed
 * q's and kv's gradients reduce-scattered beside their up projections'
 * weight gradients: linear_bwd_g); without, the projection's all-reduce
 * forward and none backward (the compressed q's and kv's gradients'
 * all-reduces beside those GEMMs). */
static void mla_tp_s(const struct synth_in *in, double bs, double *f, double *b)
{
	const struct llm *m = &in->m;
	double h = m->hidden, q = m->q_lora_rank > 0 ? m->q_lora_rank : h;
	double kv = m->kv_lora_rank, rope = m->qk_rope_head_dim;
	if (in->lay.sp) {
		*f = tp_coll_s(in, GC_ALL_GATHER, bs, q) + tp_coll_s(in, GC_ALL_GATHER, bs, kv) +
		     (rope > 0 ? tp_coll_s(in, GC_ALL_GATHER, bs, rope) : 0) +
		     tp_coll_s(in, GC_REDUCE_SCATTER, bs, h);
		*b = (rope > 0 ? tp_coll_s(in, GC_REDUCE_SCATTER, bs, rope) : 0) +
		     tp_coll_eb_s(in, GC_ALL_GATHER, bs, h, sp_gather_eb(in, KPERF_GATHER_BOTH));
	} else {
		*f = tp_coll_s(in, GC_ALL_REDUCE, bs, h);
		*b = 0;
	}
}

/* The tensor-parallel collectives of one round over the activations of
 * bs tokens: an all-reduce, or with sequence parallelism a reduce-scatter
 * and an all-gather (of the forward GEMM's input: sp_gather_eb). */
static double tp_round_s(const struct synth_in *in, double bs)
{
	double h = in->m.hidden;
	if (!in->lay.sp)
		return tp_coll_s(in, GC_ALL_REDUCE, bs, h);
	return tp_coll_s(in, GC_REDUCE_SCATTER, bs, h) +
	       tp_coll_eb_s(in, GC_ALL_GATHER, bs, h, sp_gather_eb(in, KPERF_GATHER_ROW));
}

/*
 * The step's least time from the least forward and backward time of a
 * dense layer (dense) and of a mixture-of-experts layer (moe), bs tokens
 * a microbatch.  Stage k's compute stream runs all of its units one after
 * another, the last stage's with the logits (forward and both gradients)
 * in each of its last-chunk units; none can start before the first
 * microbatch's forward has crossed the first chunks of the k stages
 * before it, and after its last unit (its first chunk's backward) the
 * gradient crosses them back: the step holds those chunks' forwards and
 * backwards and stage k's work, one after another.  The largest over k
 * bounds the step (with even stages, the last stage's: (p - 1) chunks +
 * m v chunks + the logits).  A zero-bubble schedule's stage may end on W
 * passes, and the gradient crosses the stages before it as B passes: the
 * step holds, for each k, the forwards before it and its work, or the
 * forwards before it, its work less its W parts (dense_w, moe_w a
 * layer's least weight-gradient GEMMs; a third of the logits' GEMMs) and
 * the B passes of the stages before it.  Under ZB-V's V stage k's chunk 0
 * is model chunk k, as 1F1B's, and its last pass a B of it (or a W): the
 * same holds with both chunks' work and the head on stage 0.
 */
/* The least work of chunk c of stage k: its layers' by their kinds
 * (kindw, a hybrid model's), or its dense and MoE layers'. */
static double chunk_work(const struct llm *m, const struct layout *r, int k, int c, double dense,
			 double moe, const double *kindw)
{
	int n = layout_chunk_layers(m, r, k, c), nm = layout_chunk_moe(m, r, k, c);
	double w = 0;
	if (kindw) {
		int l0 = layout_chunk_first(m, r, k, c);
		for (int i = l0; i < l0 + n; i++)
			w += kindw[llm_layer_kind(m, i)];
		return w;
	}
	return nm > 0 ? (n - nm) * dense + nm * moe : n * dense;
}

static double fill_drain_bound(const struct synth_in *in, const struct hw_profile *hw, double bs,
			       double dense, double moe, double dense_f, double moe_f,
			       double dense_w, double moe_w, const double *kindw)
{
	const struct layout *l = &in->lay;
	const struct llm *m = &in->m;
	double h = m->hidden, t = l->tp;
	struct layout r;
	double fill = 0, best = 0, logits = 0, ffill = 0, fillw = 0;
	int zb = layout_zb(l->schedule), hs = layout_head_stage(l), v = layout_stage_chunks(l);

	synth_mem_layout(in, &r);
	if (!in->bare)
		logits = (double)l->microbatches * (layout_lora(l, 0) ? 2 : 3) *
			 line_bound(in, KC_GEMM,
				    kperf_gemm_min_s(hw, sl_logit_dtype(in),
						     llm_gemm_flops(bs, m->vocab, h) / t));
	for (int k = 0; k < l->pp; k++) {
		double w = 0, wm = 0, ww;
		int c0 = layout_chunk_layers(m, &r, k, 0), c0m = layout_chunk_moe(m, &r, k, 0);
		for (int c = 0; c < v; c++) {
			w += layout_chunk_layers(m, &r, k, c);
			wm += layout_chunk_moe(m, &r, k, c);
		}
		ww = (double)l->microbatches * ((w - wm) * dense_w + wm * moe_w);
		if (kindw) {
			w = 0;
			for (int c = 0; c < l->vp; c++)
				w += chunk_work(m, &r, k, c, dense, moe, kindw);
			w *= (double)l->microbatches;
		} else if (wm > 0) {
			w = (double)l->microbatches * ((w - wm) * dense + wm * moe);
		} else {
			w *= (double)l->microbatches * dense;
		}
		if (k == hs) {
			w += logits;
			ww += layout_lora(l, 0) ? 0 : logits / 3;
		}
		/* Multi-token prediction: each depth's layer (the last decoder
		 * layer's kind) and logits on the last stage (its eh_proj left
		 * out: a weaker bound). */
		if (k == hs && m->mtp_layers > 0 && !in->bare) {
			int mo = llm_is_moe_layer(m, m->layers - 1);
			w +=
			    m->mtp_layers * (logits + (double)l->microbatches * (mo ? moe : dense));
			ww += m->mtp_layers *
			      (logits / 3 + (double)l->microbatches * (mo ? moe_w : dense_w));
		}
		/* Under pp_scatter_gather its compute stream rebuilds each
		 * transfer it receives, every microbatch (synth_pp_gather_s;
		 * the stages' before it left out of the fill: a weaker
		 * bound). */
		{
			double gf, gb;
			synth_pp_gather_s(in, k, &gf, &gb);
			w += (double)l->microbatches * (gf + gb);
		}
		if (fill + w > best && !zb)
			best = fill + w;
		if (zb && kindw) {
			/* A hybrid model's kinds have no forward or
			 * weight-gradient parts here: the stage's own work
			 * alone (a weaker bound). */
			if (w > best)
				best = w;
		} else if (zb) {
			if (ffill + w > best)
				best = ffill + w;
			if (fill - fillw + w - ww > best)
				best = fill - fillw + w - ww;
		}
		fill += kindw ? chunk_work(m, &r, k, 0, dense, moe, kindw)
			      : (c0 - c0m) * dense + c0m * moe;
		ffill += (c0 - c0m) * dense_f + c0m * moe_f;
		fillw += (c0 - c0m) * dense_w + c0m * moe_w;
	}
	return best;
}

double synth_offload_exposed(int L, int N, double f, double x)
{
	double e;
	if (N <= 0 || L <= N)
		return 0;
	if (L - N == 1)
		return N * x;
	e = N * x - (L - 2) * f;
	return e > 0 ? e : 0;
}

void synth_offload_copy_s(const struct synth_in *in, const struct hw_profile *hw, int moe,
			  double *d2h_s, double *h2d_s)
{
	double a = moe ? mem_act_moe_layer(&in->m, &in->lay) : mem_act_per_layer(&in->m, &in->lay);
	*d2h_s = hw->host_d2h_Bps > 0 ? a / hw->host_d2h_Bps : 0;
	*h2d_s = hw->host_h2d_Bps > 0 ? a / hw->host_h2d_Bps : 0;
}

/* Activation offloading's least wait, one microbatch of stage 0's chunk
 * (offloading runs with pp 1): forward, copy 0 starts after layer 0 and
 * the last layer starts after the last copy, the copies one after another
 * on their stream, so the forward takes at least f0 + (the copies) +
 * f_last -- beyond the layers' own sum, the wait; with L - N = 1 each copy
 * lies between two layers: all of it.  The backward alike.  fl and bl a
 * layer's least forward and backward (the smaller of a dense and an MoE
 * layer's), sf and sb the chunk's layers' sums. */
static double offload_bound(const struct synth_in *in, double fl, double bl, double sf, double sb)
{
	const struct llm *m = &in->m;
	struct layout r;
	int L, N;
	double X = 0, Y = 0, w = 0;

	synth_mem_layout(in, &r);
	L = layout_chunk_layers(m, &r, 0, 0);
	N = r.offload_layers < L ? r.offload_layers : L - 1;
	if (N <= 0 || r.pp != 1)
		return 0;
	for (int i = 0; i < N; i++) {
		double x, y;
		synth_offload_copy_s(in, in->hw, m->experts > 0 && llm_is_moe_layer(m, i), &x, &y);
		X += x;
		Y += y;
	}
	if (L - N == 1)
		return X + Y;
	if (2 * fl + X > sf)
		w += 2 * fl + X - sf;
	if (2 * bl + Y > sb)
		w += 2 * bl + Y - sb;
	return w;
}

/* The memory-bound kernels on the compute stream of a dense layer's
 * steady forward (*f) and backward (*b), a hybrid model's of kind `kind`
 * (LLM_KIND_FULL otherwise), without recomputation (the
 * recomputed forward is the bound's own term) or gradient accumulation's
 * adds (the first microbatch has none): norms, elementwise passes,
 * casts, as layer.c emits them (sl_kernel_on), each timed by the kernel
 * model as the simulated graph times it (ktime: the same function of its
 * bytes, calibration line and scale, the kernel database left out: the
 * bound is 0 with one).  Contention only stretches them.  The GEMMs and
 * the attention core are layer_bound's. */
static void layer_mem_s(const struct synth_in *in, int kind, double *f, double *b)
{
	struct synth_in q = *in;
	struct ctx c;
	struct rankst rk;
	struct shape z;
	struct host_memo *e;
	int hit;
	q.acc_elem_bytes = -1;
	q.lay.recompute = LAYOUT_RECOMPUTE_NONE;
	q.lay.recompute_modules = 0;
	if ((e = hm_find(&q, HM_MEM + kind, &hit)) && hit) {
		*f = e->out[0], *b = e->out[1];
		return;
	}
	dry_unit(&c, &rk, &q, PH_FORWARD, -1, &z);
	c.dry_kind = kind;
	sl_layer_fwd(&c, 0, &z);
	*f = c.dry_mem_s;
	c.dry_mem_s = 0;
	rk.phase = PH_BACKWARD;
	sl_layer_bwd(&c, 0, &z);
	*b = c.dry_mem_s;
	if (e) {
		e->out[0] = *f, e->out[1] = *b;
		e->what = HM_MEM + kind;
	}
}

/* What a dense layer's backward input-gradient reductions add beyond the
 * weight-gradient GEMMs beside them: each block's column-parallel Linear
 * (QKV, or MLA's own: left to mla_tp_s; FC1) all-reduces its input
 * gradient (reduce-scatters it with sequence parallelism) on the
 * tensor-parallel stream after its input gradient's GEMM, and the compute
 * stream, running the weight gradient's GEMM meanwhile, waits for it at
 * the end of the Linear's backward (layer.c linear_bwd_dt: side_issued,
 * side_joined; Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication
 * .backward, handle.wait() after the wgrad GEMM): that stretch takes at
 * least the longer of the GEMM's least time (which the layer's bound
 * already counts) and the collective's, so the bound adds max(0,
 * collective - the GEMM's least time) a block: *xa the attention's, *xm
 * the MLP's.  Contention only slows either.  (A frozen weight's
 * reduction waits at once: LoRA left out.) */
static void bwd_reduce_excess(const struct synth_in *in, const struct hw_profile *hw, double *xa,
			      double *xm)
{
	const struct layout *l = &in->lay;
	struct shape z;
	int kind = l->sp ? GC_REDUCE_SCATTER : GC_ALL_REDUCE, dt = l->dtype;
	double c, wq, wf, T;
	sl_shape(in, &z);
	T = z.b * z.s;
	c = tp_coll_s(in, kind, T, z.h);
	wq = line_bound(in, KC_GEMM, kperf_gemm_min_s(hw, dt, llm_gemm_flops(T, z.qkv_r, z.h)));
	wf =
	    line_bound(in, KC_GEMM, kperf_gemm_min_s(hw, dt, llm_gemm_flops(T, z.f_in, z.h) / z.t));
	*xa = !llm_mla(&in->m) && c > wq ? c - wq : 0;
	*xm = c > wf ? c - wf : 0;
}

/* The data-parallel stream's least time where every microbatch reduces
 * its gradients (ZeRO-2 and ZeRO-3, sharded over G > 1 ranks: step.c's
 * unit_bwd reduces each backward's, grad_ready and grad_flush on S_DP,
 * one stream): stage k's n_k layers' gradients (n_k z.params, the
 * layers' alone: the embedding's and head's left out) reduce-scattered
 * over the sharding group, with hybrid sharding the shard all-reduced
 * over the replicas, each microbatch, in buckets or a layer at a time;
 * ZeRO-3 gathers each layer's weights for its forward and again for its
 * backward, FSDP's SHARD_GRAD_OP for its forward, each microbatch, on the
 * same stream.  A collective's time is the least over algorithms and
 * protocols of an affine function of its bytes with a non-negative fixed
 * part (comm_time): concave, so subadditive, and the buckets' or layers'
 * collectives take at least one collective of their sum; the copies
 * around them (>= 0) and contention only add.  No reduction starts before
 * the first microbatch's loss, so after its forward through the whole
 * model (fchain: the layers' least forward one after another); the
 * gathers start with the step.  So the step takes at least, for every
 * stage, max(fchain + m red, m (red + gathers)).  0 where it does not
 * apply (MoE, hybrid and LoRA models, ZeRO-0/1, bare). */
static double dp_stream_bound(const struct synth_in *in, double fchain)
{
	const struct layout *l = &in->lay;
	const struct llm *m = &in->m;
	struct layout r;
	struct layout_dp_traits t;
	struct comm_est e;
	struct shape z;
	double w, g, o, mb = l->microbatches, best = 0;
	int G, R, cap, gathers;

	if (in->bare || l->zero < 2 || layout_lora(l, 0) || llm_moe_layers(m) > 0 ||
	    llm_hybrid(m) || layout_dpc(l) <= 1)
		return 0;
	synth_mem_layout(in, &r);
	G = layout_shard_group(&r);
	if (G <= 1)
		return 0;
	R = layout_dpc(&r) / G;
	cap = hw_domain(in->hw) / l->tp;
	sl_shape(in, &z);
	mem_param_bytes(&r, &w, &g, &o);
	layout_dp_traits(&r, z.params, w, g, &t);
	gathers = l->zero >= 3							  ? 2
		  : l->dp_impl == LAYOUT_DP_FSDP || l->dp_impl == LAYOUT_DP_FSDP2 ? 1
										  : 0;
	for (int k = 0; k < l->pp; k++) {
		double P = layout_stage_layers(m, &r, k) * z.params, red = 0, ag = 0;
		struct comm_group gg = {G, comm_per_domain(G, cap)};
		if (!(P > 0))
			continue;
		if (comm_time(in->hw, GC_REDUCE_SCATTER, P * t.rs_bytes, gg, in->comm_eff,
			      COMM_AUTO, &e) == 0)
			red = e.time_s;
		if (R > 1) {
			int rc = cap / G;
			struct comm_group gr = {R, comm_per_domain(R, rc > 0 ? rc : 1)};
			if (comm_time(in->hw, GC_ALL_REDUCE, P * t.rs_bytes / G, gr, in->comm_eff,
				      COMM_AUTO, &e) == 0)
				red += e.time_s;
		}
		if (gathers &&
		    comm_time(in->hw, GC_ALL_GATHER, P * w, gg, in->comm_eff, COMM_AUTO, &e) == 0)
			ag = gathers * e.time_s;
		best = fmax(best, fmax(fchain + mb * red, mb * (red + ag)));
	}
	return best;
}

/* in at the clock its bound takes (synth_lower_bound): the faster of its
 * step's own (analytic_step_clock: in->clock where set, else its
 * estimate's) and the reference one, the profile's step clock at the
 * layout's dtype and cap -- the simulated step runs at its own, and one at
 * the reference clock would not bound a step whose own mix runs faster
 * (*q: the copy where it is not in itself). */
static const struct synth_in *bound_in(const struct synth_in *in, struct synth_in *q)
{
	double c = analytic_step_clock(in), ref;
	if (!(c > 0))
		return in; /* (no balance: the reference) */
	ref = hw_run_clock(in->hw, in->lay.dtype, in->lay.power_w);
	c = c > ref ? c : 0;
	if (c == in->clock)
		return in;
	*q = *in;
	q->clock = c;
	return q;
}

double synth_lower_bound(const struct synth_in *in)
{
	const struct layout *l = &in->lay;
	const struct llm *m = &in->m;
	double b = l->mbs, t = l->tp, bs = b * m->seq / layout_cp(l);
	double att_f = 0, att_b = 0, mlp = 0, mlp_b = 0, tp_f, tp_b, f, bw, af, lb, mfw = 0,
	       mbw = 0, best;
	double fw_w, mw = 0;   /* a layer's least weight-gradient GEMMs: its forward GEMMs' */
	double xa = 0, xm = 0; /* a layer's backward reductions beyond their wgrads */
	struct hw_profile buf;
	struct synth_in q;
	const struct hw_profile *hw;

	in = bound_in(in, &q);
	hw = sl_run_hw(in, &buf); /* at the layout's power (bound_in) */

	if (in->hw->peak_flops[in->lay.dtype] <= 0 || l->pp < 1 || l->vp < 1 || in->kdb)
		return 0;
	/* One layer's forward on one tensor-parallel rank: its GEMMs, its
	 * attention, and the tensor-parallel collectives (on the compute
	 * stream: two rounds, the attention's and the MLP's, each an
	 * all-reduce or reduce-scatter + all-gather; MLA's attention its own,
	 * mla_tp_s). */
	layer_bound(in, hw, &f, &lb, &af);
	/* Under LoRA no base weight has a W pass (the adapters' left out). */
	fw_w = layout_lora(l, 0) ? 0 : f - af;
	/* A dense layer's memory-bound kernels (layer_mem_s). */
	if (!in->bare) {
		double xf, xbm;
		layer_mem_s(in, LLM_KIND_FULL, &xf, &xbm);
		f += xf;
		lb += xbm;
	}
	/* Overlapped with the GEMMs (tp_overlap), the collectives leave the
	 * compute stream: the bound keeps the GEMMs alone. */
	if (t > 1 && !in->bare && !(l->tp_overlap && l->sp)) {
		att_f = mlp = tp_round_s(in, bs);
		/* Backward: the block's reduce-scatter (sequence parallel)
		 * or all-reduce runs beside its column-parallel Linear's
		 * weight-gradient GEMM (linear_bwd_g); the bound keeps the
		 * sequence-parallel gather alone. */
		att_b = mlp_b = l->sp ? tp_coll_eb_s(in, GC_ALL_GATHER, bs, in->m.hidden,
						     sp_gather_eb(in, KPERF_GATHER_BOTH))
				      : 0;
		if (llm_mla(m))
			mla_tp_s(in, bs, &att_f, &att_b);
	}
	tp_f = att_f + mlp;
	tp_b = att_b + mlp_b;
	if (t > 1 && !in->bare && !(l->tp_overlap && l->sp) && !layout_lora(l, 0))
		bwd_reduce_excess(in, hw, &xa, &xm);
	/* Backward: its GEMMs and attention, the same collectives, and the
	 * forward again under full recomputation or, under selective
	 * recomputation, its modules' (the attention core's; the MLP's GEMMs
	 * and its collectives' round; ...: rc_bound). */
	bw = lb + tp_b + xa + xm + (l->recompute == LAYOUT_RECOMPUTE_FULL ? f + tp_f : 0) +
	     (layout_rc(l, LAYOUT_RC_CORE_ATTN) ? af : 0) + rc_bound(in, hw, 0) +
	     (layout_rc(l, LAYOUT_RC_MLP) ? mlp : 0);
	/* Mixture-of-experts layers: their GEMMs (moe_layer_bound) and the
	 * tensor-parallel collectives they keep: the attention's, and the
	 * shared experts' round (the routed experts' all-to-alls and expert
	 * tensor-parallel collectives are left out: a weaker bound). */
	if (llm_moe_layers(m) > 0) {
		int sh = m->shared_experts > 0 && !l->moe_shared_overlap;
		double mf, mb, maf, mtp_f = sh ? tp_f : att_f, mtp_b = sh ? tp_b : att_b;
		moe_layer_bound(in, hw, &mf, &mb, &maf);
		mw = mf - maf;
		/* its attention block's memory-bound kernels and backward
		 * reduction beyond its wgrad, as a hybrid model's attention
		 * layer's (the experts' part's left out: a weaker bound) */
		if (!in->bare && !llm_hybrid(m)) {
			double xf, xbm;
			layer_mem_s(in, LLM_KIND_ATTN, &xf, &xbm);
			mf += xf;
			mb += xbm + xa;
		}
		mbw = mb + mtp_b + (l->recompute == LAYOUT_RECOMPUTE_FULL ? mf + mtp_f : 0) +
		      (layout_rc(l, LAYOUT_RC_CORE_ATTN) ? maf : 0) + rc_bound(in, hw, 1);
		mfw = mf + mtp_f;
	}
	f += tp_f;
	if (llm_hybrid(m)) {
		/* A hybrid model: each kind's layer with one tensor-parallel
		 * round (its block's), the forward again under full
		 * recomputation, the attention core under core_attn, the MLP's
		 * GEMMs and round under mlp (other modules left out: a weaker
		 * bound). */
		double kw[LLM_KINDS];
		kw[LLM_KIND_FULL] = f + bw;
		for (int k = LLM_KIND_MAMBA; k < LLM_KINDS; k++) {
			double kf, kb, ka, kg, rf = k == LLM_KIND_ATTN ? att_f : mlp,
					       rb = k == LLM_KIND_ATTN ? att_b : mlp_b;
			if (k == LLM_KIND_MOE && (m->shared_experts == 0 || l->moe_shared_overlap))
				rf = rb = 0;	      /* no shared experts' round on the stream */
			if (!llm_kind_layers(m, k)) { /* none of that kind */
				kw[k] = 0;
				continue;
			}
			layer_bound_of(in, hw, k, &kf, &kb, &ka);
			kg = kf; /* its GEMMs: what the mlp module re-runs */
			/* its memory-bound kernels, and its block's backward
			 * reduction beyond its wgrad (an MoE or Mamba
			 * layer's: none, a weaker bound) */
			if (!in->bare && k != LLM_KIND_MOE && k != LLM_KIND_MAMBA) {
				double xf, xbm;
				layer_mem_s(in, k, &xf, &xbm);
				kf += xf;
				kb += xbm + (k == LLM_KIND_ATTN ? xa : xm);
			}
			kb += rb + (l->recompute == LAYOUT_RECOMPUTE_FULL ? kf + rf : 0);
			if (k == LLM_KIND_ATTN && layout_rc(l, LAYOUT_RC_CORE_ATTN))
				kb += ka;
			if (k == LLM_KIND_MLP && layout_rc(l, LAYOUT_RC_MLP))
				kb += kg + rf;
			kw[k] = kf + rf + kb;
		}
		best = fill_drain_bound(in, hw, bs, f + bw, mfw + mbw, f, mfw, fw_w, mw, kw);
	} else {
		best = fill_drain_bound(in, hw, bs, f + bw, mfw + mbw, f, mfw, fw_w, mw, NULL);
	}
	/* Activation offloading (pp 1): each microbatch's least wait for its
	 * copies beyond the layers (a hybrid model's layers are not all the
	 * dense layer f: none, a weaker bound). */
	if (l->offload_layers > 0 && l->pp == 1 && !llm_hybrid(m)) {
		struct layout r;
		double n, nm, fl, bl;
		synth_mem_layout(in, &r);
		n = layout_chunk_layers(m, &r, 0, 0);
		nm = layout_chunk_moe(m, &r, 0, 0);
		fl = nm >= n ? mfw : nm > 0 && mfw < f ? mfw : f;
		bl = nm >= n ? mbw : nm > 0 && mbw < bw ? mbw : bw;
		best += (double)l->microbatches * offload_bound(in, fl, bl, (n - nm) * f + nm * mfw,
								(n - nm) * bw + nm * mbw);
	}
	/* After every stage's last unit, before any optimizer: the gradient
	 * statistics' all-reduces across the stages (0 when bare).  Or the
	 * data-parallel stream's least time, where every microbatch
	 * reduces (dp_stream_bound). */
	return fmax(best + synth_grad_stats_s(in), dp_stream_bound(in, m->layers * f));
}
