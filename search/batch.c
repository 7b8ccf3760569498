/* batch.c - a sweep's search, batch by batch (batch.h). */
#include "batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "vec.h"

static const char *const mode_names[] = {"screen", "optimise", "exhaustive"};

const char *batch_mode_name(int mode)
{
	return mode >= 0 && mode <= BATCH_EXHAUSTIVE ? mode_names[mode] : "?";
}

/* Best-first per GPU count; equal estimates in the sweep's order. */
static int cmp_analytic(const void *a, const void *b)
{
	const struct batch_ref *x = a, *y = b;
	if (x->gpus != y->gpus)
		return x->gpus < y->gpus ? -1 : 1;
	if (x->analytic_s != y->analytic_s)
		return x->analytic_s < y->analytic_s ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* Candidates made at once while the sweep is enumerated, and what is kept
 * of each. */
#define ENUM_CHUNK 4096
struct made {
	int ok, status, gpus;
	int placed;  /* a pending one's placement in place (sweep_placement) */
	int has_mem; /* and its memory (sweep_memory) */
	double analytic_s, bound_s, clock;
	char reason[160]; /* the first candidate's only */
	struct layout place;
	struct mem_est mem;
};

/* Placement p's number in sp->places (from 1), added where new (at: by
 * their hashes); 0 where its hash is another's, or out of memory (its
 * candidate makes it again). */
static uint32_t place_id(struct batch_space *sp, struct imap *at, size_t *cap,
			 const struct layout *p)
{
	_Static_assert(sizeof(struct layout) % 8 == 0, "a layout hashed by words");
	int64_t key = (int64_t)(hash_words(HASH_SEED, p, sizeof(*p)) >> 1);
	uint32_t i = imap_get(at, key), old;
	if (i != IMAP_NONE)
		return memcmp(&sp->places[i], p, sizeof(*p)) == 0 ? i + 1 : 0;
	if (sp->nplaces >= UINT32_MAX - 1 ||
	    vec_reserve_((void **)&sp->places, cap, sp->nplaces + 1, sizeof(*sp->places)) ||
	    imap_put(at, key, (uint32_t)sp->nplaces, &old))
		return 0;
	sp->places[sp->nplaces] = *p;
	return (uint32_t)++sp->nplaces;
}

/* mem kept in sp->mems: its number there (from 1), or 0 where out of
 * memory (its candidate estimates it again). */
static uint32_t mem_id(struct batch_space *sp, size_t *cap, const struct mem_est *mem)
{
	if (sp->nmems >= UINT32_MAX - 1 ||
	    vec_reserve_((void **)&sp->mems, cap, sp->nmems + 1, sizeof(*sp->mems)))
		return 0;
	sp->mems[sp->nmems] = *mem;
	return (uint32_t)++sp->nmems;
}

/* The chunk's candidates into sp, in order: a pending one as a ref, a
 * rejected one as its index. */
static int keep(struct batch_space *sp, const struct made *mk, int nk, uint64_t i0, size_t *cap,
		size_t *rcap, size_t *scap, struct imap *at, size_t *pcap, size_t *mcap)
{
	for (int j = 0; j < nk; j++) {
		if (!mk[j].ok)
			continue;
		if (sp->n++ == 0)
			snprintf(sp->first_reason, sizeof(sp->first_reason), "%s",
				 mk[j].reason[0] ? mk[j].reason : "none");
		if (mk[j].status == CS_PENDING) {
			if (vec_reserve_((void **)&sp->order, cap, sp->norder + 1,
					 sizeof(*sp->order)))
				return PRISM_ENOMEM;
			sp->order[sp->norder++] = (struct batch_ref){
			    (uint32_t)(i0 + (uint64_t)j),
			    mk[j].gpus,
			    mk[j].analytic_s,
			    mk[j].bound_s,
			    mk[j].clock,
			    mk[j].placed ? place_id(sp, at, pcap, &mk[j].place) : 0,
			    mk[j].has_mem ? mem_id(sp, mcap, &mk[j].mem) : 0};
		} else {
			if (vec_reserve_((void **)&sp->rejected, rcap, sp->nrejected + 1,
					 sizeof(*sp->rejected)) ||
			    vec_reserve_((void **)&sp->rejected_status, scap, sp->nrejected + 1,
					 sizeof(*sp->rejected_status)))
				return PRISM_ENOMEM;
			sp->rejected_status[sp->nrejected] = (uint8_t)mk[j].status;
			sp->rejected[sp->nrejected++] = (uint32_t)(i0 + (uint64_t)j);
		}
	}
	return 0;
}

struct space_job {
	const struct sweep *sw;
	struct made *mk;
	uint64_t i0;
	long first;
};

static void make_one(void *ctx, int j, int t)
{
	(void)t;
	struct space_job *J = ctx;
	struct made *mk = J->mk;
	struct cand k;
	mk[j].ok = sweep_verdict(J->sw, J->i0 + (uint64_t)j, &k) == 0;
	mk[j].status = k.status;
	mk[j].gpus = k.gpus;
	mk[j].analytic_s = k.analytic_s;
	mk[j].bound_s = k.bound_s;
	mk[j].clock = k.in.clock;
	mk[j].reason[0] = '\0';
	mk[j].placed = mk[j].ok && k.status == CS_PENDING && sweep_placement(&k, &mk[j].place);
	mk[j].has_mem = mk[j].ok && k.status == CS_PENDING && sweep_memory(&k, &mk[j].mem);
	if (mk[j].ok && J->first == 0)
		snprintf(mk[j].reason, sizeof(mk[j].reason), "%s", k.reason);
}

static int interleave(struct batch_ref *o, size_t n);

int batch_space(const struct sweep *sw, struct pool *pool, struct batch_space *sp,
		struct prism_err *err)
{
	uint64_t total = sweep_count(sw);
	size_t cap = 0, rcap = 0, scap = 0, pcap = 0, mcap = 0;
	struct made *mk = prism_malloc(ENUM_CHUNK * sizeof(*mk));
	struct imap at = {0}; /* the placements by their hashes */

	memset(sp, 0, sizeof(*sp));
	snprintf(sp->first_reason, sizeof(sp->first_reason), "none");
	if (!mk)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	/* Made by the threads a chunk at a time (sweep_verdict only reads
	 * the sweep), kept in order. */
	for (uint64_t i0 = 0; i0 < total; i0 += ENUM_CHUNK) {
		int nk = total - i0 < ENUM_CHUNK ? (int)(total - i0) : ENUM_CHUNK;
		struct space_job J = {sw, mk, i0, sp->n};
		pool_for(pool, nk, 64, 0, make_one, &J);
		if (keep(sp, mk, nk, i0, &cap, &rcap, &scap, &at, &pcap, &mcap)) {
			free(mk);
			imap_release(&at);
			batch_space_release(sp);
			return prism_err_set(err, PRISM_ENOMEM, "out of memory");
		}
	}
	free(mk);
	imap_release(&at);
	if (sp->norder)
		qsort(sp->order, sp->norder, sizeof(*sp->order), cmp_analytic);
	if (interleave(sp->order, sp->norder)) {
		batch_space_release(sp);
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	}
	return 0;
}

/* The ramp's stage of the rank-th candidate (0: the best estimate) of its
 * GPU count: 0 for the first, 1 for the next 2, 2 for the next 4, ... */
static int stage_of(size_t rank)
{
	int s = 0;
	while ((rank + 1) >> (s + 1))
		s++;
	return s;
}

/* o[0..n), sorted per GPU count, made stage by stage: each count's stage 0
 * (its best estimate), then each count's stage 1, ...; in each, the GPU
 * counts in order and each count's candidates best-first.  0, or
 * PRISM_ENOMEM. */
static int interleave(struct batch_ref *o, size_t n)
{
	struct batch_ref *t = NULL;
	VEC(size_t) start = {0}; /* each count's first, then n */
	size_t k = 0;
	int rc = PRISM_ENOMEM;

	if (n == 0)
		return 0;
	for (size_t i = 0; i <= n; i++)
		if ((i == n || i == 0 || o[i].gpus != o[i - 1].gpus) && VEC_PUSH(start, i))
			goto out;
	if (!(t = prism_malloc(n * sizeof(*t))))
		goto out;
	/* Stage s: ranks 2^s - 1 to 2^(s+1) - 2 of each count. */
	for (size_t lo = 0; k < n; lo = 2 * lo + 1)
		for (size_t g = 0; g + 1 < start.n; g++)
			for (size_t r = lo; r < 2 * lo + 1 && start.v[g] + r < start.v[g + 1]; r++)
				t[k++] = o[start.v[g] + r];
	memcpy(o, t, n * sizeof(*t));
	rc = 0;
out:
	free(t);
	VEC_FREE(start);
	return rc;
}

/* A GPU count's place in batch_plan's walk. */
struct plan_count {
	int gpus, stage; /* its stage in the batch being planned (-1: none) */
	size_t seen;	 /* its candidates before */
};

size_t batch_plan(const struct batch_ref *order, size_t n, int bsize, int mode, int *sizes)
{
	struct plan_count c[64];
	size_t nb = 0;
	int nc = 0, in = 0;

	for (size_t i = 0; i < n; i++) {
		int j = 0, s;
		while (j < nc && c[j].gpus != order[i].gpus)
			j++;
		if (j == nc && nc < (int)(sizeof(c) / sizeof(c[0])))
			c[nc++] = (struct plan_count){order[i].gpus, -1, 0};
		/* More GPU counts than c holds: the later ones in plain
		 * batches (stage 0 throughout), the rows as determined. */
		s = j < nc ? stage_of(c[j].seen++) : 0;
		if (in == bsize ||
		    (mode != BATCH_EXHAUSTIVE && j < nc && c[j].stage >= 0 && c[j].stage != s)) {
			sizes[nb++] = in;
			in = 0;
			for (int q = 0; q < nc; q++)
				c[q].stage = -1;
		}
		if (j < nc)
			c[j].stage = s;
		in++;
	}
	if (in)
		sizes[nb++] = in;
	return nb;
}

size_t batch_unstored(struct batch_ref *order, size_t *n, int *sizes, size_t nb, const char *stored)
{
	size_t k = 0, i = 0, left = 0;
	for (size_t b = 0; b < nb; b++) {
		int kept = 0;
		for (int j = 0; j < sizes[b]; j++, i++)
			if (!stored[i]) {
				order[k++] = order[i];
				kept++;
			}
		if (kept)
			sizes[left++] = kept;
	}
	*n = k;
	return left;
}

void batch_space_release(struct batch_space *sp)
{
	free(sp->order);
	free(sp->rejected);
	free(sp->rejected_status);
	free(sp->places);
	sp->places = NULL;
	sp->nplaces = 0;
	free(sp->mems);
	sp->mems = NULL;
	sp->nmems = 0;
	sp->order = NULL;
	sp->rejected = NULL;
	sp->rejected_status = NULL;
	sp->norder = sp->nrejected = 0;
}

double *batch_best_of(struct batch_best *b, int gpus, int hw, int seq)
{
	for (int i = 0; i < b->n; i++)
		if (b->gpus[i] == gpus && b->hw[i] == hw && b->seq[i] == seq)
			return &b->t[i];
	if (b->n == BATCH_MAX_BEST)
		return NULL;
	b->gpus[b->n] = gpus;
	b->hw[b->n] = hw;
	b->seq[b->n] = seq;
	b->t[b->n] = 0;
	return &b->t[b->n++];
}

void batch_best_add(struct batch_best *b, const struct cand *c, int n)
{
	for (int i = 0; i < n; i++) {
		double *t = batch_best_of(b, c[i].gpus, c[i].hw, c[i].in.m.seq);
		if (c[i].status == CS_SIMULATED && t && (*t == 0 || c[i].p.iter_s < *t))
			*t = c[i].p.iter_s;
	}
}

void batch_screen(struct cand *k, int mode, double best, double margin)
{
	if (mode == BATCH_EXHAUSTIVE || best <= 0)
		return;
	if (k->bound_s >= best) {
		k->status = CS_SCREENED;
		snprintf(k->reason, sizeof(k->reason),
			 "lower bound %.3f ms >= best simulated %.3f ms", k->bound_s * 1e3,
			 best * 1e3);
	} else if (mode == BATCH_SCREEN && k->analytic_s > best * (1 + margin)) {
		k->status = CS_SCREENED;
		snprintf(k->reason, sizeof(k->reason),
			 "analytic %.3f ms > best simulated %.3f ms + %.0f%%", k->analytic_s * 1e3,
			 best * 1e3, margin * 100);
	}
}

struct make_job {
	const struct sweep *sw;
	const struct batch_ref *refs;
	const struct layout *places;
	const struct mem_est *mems;
	struct cand *batch;
};

static void make_cand(void *ctx, int i, int t)
{
	(void)t;
	struct make_job *J = ctx;
	const struct batch_ref *r = &J->refs[i];
	/* Judged once, by batch_space. */
	struct cand *k = &J->batch[i];
	struct sweep_judged j = {r->analytic_s, r->bound_s, r->clock};
	if (J->places && r->place > 0)
		sweep_candidate_placed(J->sw, r->index, &j, &J->places[r->place - 1],
				       J->mems && r->mem > 0 ? &J->mems[r->mem - 1] : NULL, k);
	else
		sweep_candidate_pending(J->sw, r->index, &j, k);
	k->index = r->index;
	k->canon = 0;
}

/* Its canonical key, once it is left to simulate. */
static void key_cand(void *ctx, int i, int t)
{
	(void)t;
	struct make_job *J = ctx;
	struct cand *k = &J->batch[i];
	if (k->status == CS_PENDING)
		k->canon = sweep_canon_key(J->sw, k);
}

void batch_make(const struct sweep *sw, struct pool *pool, const struct batch_ref *refs, int n,
		const struct layout *places, const struct mem_est *mems, int mode,
		struct batch_best *best, struct cand *batch, struct progress *pg)
{
	struct make_job J = {sw, refs, places, mems, batch};
	/* The best times change only between batches, so the threads make the
	 * candidates. */
	pool_for(pool, n, 1, 0, make_cand, &J);
	for (int i = 0; i < n; i++) {
		double *b = batch_best_of(best, batch[i].gpus, batch[i].hw, batch[i].in.m.seq);
		batch_screen(&batch[i], mode, b ? *b : 0, sw->margin);
		if (pg && pg->f && batch[i].status == CS_SCREENED)
			progress_add(pg, 0);
	}
	pool_for(pool, n, 1, 0, key_cand, &J);
}

double batch_cost(const struct cand *k)
{
	const struct layout *l = &k->in.lay;
	int m = l->microbatches, v = layout_stage_chunks(l), cap = 4 * l->pp * v;
	return (double)l->pp * v * (m < cap ? m : cap);
}

/* Costliest first, then in batch order. */
static int cmp_cost(const void *a, const void *b)
{
	const struct batch_job *x = a, *y = b;
	if (x->cost != y->cost)
		return x->cost > y->cost ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

struct sim_job {
	const struct sweep *sw;
	struct cand *batch;
	const struct batch_job *work;
	struct progress *pg;
	struct predict_scratch *const *scr; /* per pool thread, or NULL */
};

static void simulate_one(void *ctx, int w, int t)
{
	struct sim_job *J = ctx;
	struct cand *k = &J->batch[J->work[w].i];
	struct prism_err e;
	prism_err_clear(&e);
	/* Twins at one clock whichever runs (sweep.h). */
	if (k->canon)
		k->in.clock = sweep_twin_clock(k);
	if (predict_eval(&J->sw->bl.pb, &k->in, J->scr ? J->scr[t] : NULL, &k->p, NULL, NULL, &e) ==
	    0) {
		k->status = CS_SIMULATED;
	} else {
		k->status = CS_FAILED;
		snprintf(k->reason, sizeof(k->reason), "%.159s", e.msg);
	}
	if (J->pg && J->pg->f)
		progress_add(J->pg, 1);
}

/* work[0..nw) simulated, the costliest first. */
static void simulate_work(const struct sweep *sw, struct pool *pool, struct cand *batch,
			  struct batch_job *work, int nw, int threads, struct progress *pg,
			  struct predict_scratch *const *scr)
{
	struct sim_job J = {sw, batch, work, pg, scr};
	qsort(work, (size_t)nw, sizeof(*work), cmp_cost);
	pool_for(pool, nw, 1, threads, simulate_one, &J);
}

void batch_simulate(const struct sweep *sw, struct pool *pool, struct cand *batch, int n,
		    const int *owner, int rank, int threads, struct batch_job *work,
		    struct progress *pg, struct predict_scratch *const *scr)
{
	int nw = 0;
	for (int i = 0; i < n; i++)
		if (owner[i] == rank)
			work[nw++] = (struct batch_job){batch_cost(&batch[i]), i};
	simulate_work(sw, pool, batch, work, nw, threads, pg, scr);
}

void batch_twins_release(struct batch_twins *tw)
{
	imap_release(&tw->at);
	free(tw->kept);
	imap_release(&tw->first);
	free(tw->lead);
	memset(tw, 0, sizeof(*tw));
}

/* A canonical key (nonzero) as the maps take it: never IMAP_EMPTY. */
static int64_t map_key(uint64_t canon)
{
	return (int64_t)(canon >> 1);
}

/* The kept simulation of k's twin, or NULL. */
static const struct predict_out *twin_find(const struct sweep *sw, const struct batch_twins *tw,
					   const struct cand *k)
{
	uint32_t at = k->canon ? imap_get(&tw->at, map_key(k->canon)) : IMAP_NONE;
	const struct batch_kept *e = at == IMAP_NONE ? NULL : &tw->kept[at];
	return e && sweep_same_graph_at(sw, k, (uint64_t)e->index) ? &e->p : NULL;
}

/* k's prediction kept under its key (the first of it): 0, or
 * PRISM_ENOMEM. */
static int twin_keep(struct batch_twins *tw, const struct cand *k)
{
	uint32_t old;
	if (tw->n >= UINT32_MAX ||
	    vec_reserve_((void **)&tw->kept, &tw->kcap, tw->n + 1, sizeof(*tw->kept)) ||
	    imap_put(&tw->at, map_key(k->canon), (uint32_t)tw->n, &old))
		return PRISM_ENOMEM;
	if (old == IMAP_NONE)
		tw->kept[tw->n++] = (struct batch_kept){k->p, k->index};
	return 0;
}

/* k given its twin's prediction, derived again for k's own layout (its
 * memory, sweep_canon_key). */
static void follow(struct cand *k, const struct predict_out *p, struct progress *pg)
{
	k->p = *p;
	predict_derive(&k->in, p->iter_s, &k->p);
	k->status = CS_SIMULATED;
	if (pg && pg->f)
		progress_add(pg, 1);
}

void batch_simulate_twins(const struct sweep *sw, struct pool *pool, struct cand *batch, int n,
			  const int *owner, int rank, int threads, struct batch_job *work,
			  struct progress *pg, struct batch_twins *tw,
			  struct predict_scratch *const *scr)
{
	const struct predict_out *p;
	int nw = 0, nf = 0;

	if (!tw || vec_reserve_((void **)&tw->lead, &tw->lcap, (size_t)n, sizeof(*tw->lead))) {
		batch_simulate(sw, pool, batch, n, owner, rank, threads, work, pg, scr);
		return;
	}
	imap_clear(&tw->first);
	/* Followers of an earlier batch's twin take its prediction; the
	 * first pending candidate of each key in the batch leads it, and
	 * the others of its canonical input wait for it. */
	for (int i = 0; i < n; i++) {
		struct cand *k = &batch[i];
		uint32_t j;
		tw->lead[i] = -1;
		if (owner[i] != rank)
			continue;
		if (k->status == CS_PENDING && k->canon) {
			if ((p = twin_find(sw, tw, k))) {
				follow(k, p, pg);
				continue;
			}
			if (imap_put(&tw->first, map_key(k->canon), (uint32_t)i, &j))
				j = IMAP_NONE; /* out of memory: simulated */
			else if (j != IMAP_NONE && sweep_same_graph(&batch[j], k)) {
				tw->lead[i] = (int)j;
				nf++;
				continue;
			}
		}
		work[nw++] = (struct batch_job){batch_cost(k), i};
	}
	simulate_work(sw, pool, batch, work, nw, threads, pg, scr);
	/* Those that waited, from their leaders. */
	nw = 0;
	for (int i = 0; nf && i < n; i++) {
		struct cand *k = &batch[i];
		int j = tw->lead[i];
		if (j < 0)
			continue;
		if (batch[j].status == CS_SIMULATED)
			follow(k, &batch[j].p, pg);
		else /* its twin failed: its own simulation says why */
			work[nw++] = (struct batch_job){batch_cost(k), i};
	}
	simulate_work(sw, pool, batch, work, nw, threads, pg, scr);
	for (int i = 0; i < n; i++)
		if (owner[i] == rank && batch[i].canon && batch[i].status == CS_SIMULATED &&
		    twin_keep(tw, &batch[i])) {
			batch_twins_release(tw); /* out of memory: simulate them */
			return;
		}
}
