/*
 * ueval.c - the unit map's evaluator (synth.h synth_unit_eval; issue 38's
 * unit map, step 5): a build's units and tails timed from their maps
 * (umap.c) alone, exit by exit, where nothing contends.
 *
 * The log's items (so->ulog: the units repeated from templates, then the
 * tails) are ports: entries and exits.  An entry takes its value from
 * earlier exits -- a processor's (SYNTH_PORT_PROC) from the END exit of
 * the stage's latest earlier item on that processor, a stream's last
 * (SYNTH_PORT_LAST) from the latest earlier LAST exit of that stream, a
 * transfer's other side (SYNTH_PORT_PEER) from the ARRIVE exits of its
 * instance's other members -- and an exit is the max over the entries with
 * a path to it of the entry plus the path.  Both are counted down: an
 * entry is known once its sources are, an exit once its entries with a
 * finite path are (the maps' rows say which), a worklist over exits.
 */
#include "synth_int.h"

#include <stdlib.h>
#include <string.h>

/* Processor offsets (from a stage's host thread) and streams a map may
 * name. */
#define EV_PROCS 64

/* A collective of the graph: its instance's key and where it is. */
struct ev_coll {
	uint32_t pg, seq, kind, rank, node;
};

/* The evaluator's working state. */
struct ev {
	const struct synth_tpl *tpl;
	const struct synth_out *so;
	const struct graph *g;
	struct synth_unit_map *map; /* each item's */
	uint32_t *in0, *out0;	    /* each item's first entry and exit */
	uint32_t n_in, n_out;	    /* in all */
	uint32_t *item_of;	    /* each entry's and each exit's item */
	uint32_t *node_item;	    /* each graph task's item */
	uint32_t *order;	    /* the items, stage by stage, in build order */
	/* Each entry's sources (exits): src[soff[e] .. soff[e + 1]); its
	 * value where it has none (a processor never used before: the host's
	 * time 0, any other none). */
	uint32_t *soff, *src;
	int64_t *init;
	/* Each exit's entries that read it: dep[doff[x] .. doff[x + 1]). */
	uint32_t *doff, *dep;
	uint32_t *pend_in, *pend_out, *work;
	int64_t *vin, *vout;
	struct ev_coll *colls;
	uint32_t *inst_n; /* each collective's instance's members */
	/* Each map's finite weights, made once a map (a template's serves
	 * every unit of it): item i's map is kmap[i]; its exit o's weights
	 * (entry rj, weight rw) from rj[ro[kr[m] + o]] to rj[ro[kr[m] + o +
	 * 1]]; its entry j's exits co[cof[kc[m] + j] .. cof[kc[m] + j + 1]). */
	uint32_t *kmap, *kr, *kc, *ro, *rj, *cof, *co;
	int64_t *rw;
};

static void ev_free(struct ev *e)
{
	free(e->map);
	free(e->in0);
	free(e->out0);
	free(e->item_of);
	free(e->node_item);
	free(e->order);
	free(e->soff);
	free(e->src);
	free(e->init);
	free(e->doff);
	free(e->dep);
	free(e->pend_in);
	free(e->pend_out);
	free(e->work);
	free(e->vin);
	free(e->vout);
	free(e->colls);
	free(e->inst_n);
	free(e->kmap);
	free(e->kr);
	free(e->kc);
	free(e->ro);
	free(e->rj);
	free(e->cof);
	free(e->co);
	free(e->rw);
}

/* Each map's finite weights by exit and by entry (ev.kmap ...), each
 * distinct map once: 0 or PRISM_ENOMEM. */
static int ev_sparse(struct ev *e)
{
	const struct synth_out *so = e->so;
	size_t n = so->n_ulog, nk = 0, nro = 0, nnz = 0, ncof = 0;
	uint32_t nt = 0, *first;

	for (size_t i = 0; i < n - so->n_tails; i++)
		if (so->ulog[i].tpl + 1 > nt)
			nt = so->ulog[i].tpl + 1;
	/* (a unit's map by its template, a tail's by its place) */
	first = prism_malloc(((size_t)nt + n) * sizeof(*first));
	e->kmap = prism_malloc(n * sizeof(*e->kmap));
	if (!first || !e->kmap) {
		free(first);
		return PRISM_ENOMEM;
	}
	for (size_t k = 0; k < (size_t)nt + n; k++)
		first[k] = NONE32;
	for (size_t i = 0; i < n; i++) {
		size_t key = i < n - so->n_tails ? so->ulog[i].tpl : nt + i;
		const struct synth_unit_map *mp = &e->map[i];
		if (first[key] == NONE32) {
			first[key] = (uint32_t)nk++;
			nro += mp->n_out + 1;
			ncof += mp->n_in + 1;
			for (size_t q = 0; q < (size_t)mp->n_in * mp->n_out; q++)
				nnz += mp->m[q] != INT64_MIN;
		}
		e->kmap[i] = first[key];
	}
	free(first);
	e->kr = prism_malloc((nk + 1) * sizeof(*e->kr));
	e->kc = prism_malloc((nk + 1) * sizeof(*e->kc));
	e->ro = prism_malloc((nro + 1) * sizeof(*e->ro));
	e->cof = prism_malloc((ncof + 1) * sizeof(*e->cof));
	e->rj = prism_malloc((nnz + 1) * sizeof(*e->rj));
	e->co = prism_malloc((nnz + 1) * sizeof(*e->co));
	e->rw = prism_malloc((nnz + 1) * sizeof(*e->rw));
	if (!e->kr || !e->kc || !e->ro || !e->cof || !e->rj || !e->co || !e->rw)
		return PRISM_ENOMEM;
	nk = nro = ncof = 0;
	for (size_t i = 0, z = 0, zc = 0; i < n; i++) {
		const struct synth_unit_map *mp = &e->map[i];
		if (e->kmap[i] != nk)
			continue; /* (made at its first item) */
		e->kr[nk] = (uint32_t)nro;
		e->kc[nk++] = (uint32_t)ncof;
		for (uint32_t o = 0; o < mp->n_out; o++) {
			e->ro[nro++] = (uint32_t)z;
			for (uint32_t j = 0; j < mp->n_in; j++)
				if (mp->m[(size_t)o * mp->n_in + j] != INT64_MIN) {
					e->rj[z] = j;
					e->rw[z++] = mp->m[(size_t)o * mp->n_in + j];
				}
		}
		e->ro[nro++] = (uint32_t)z;
		for (uint32_t j = 0; j < mp->n_in; j++) {
			e->cof[ncof++] = (uint32_t)zc;
			for (uint32_t o = 0; o < mp->n_out; o++)
				if (mp->m[(size_t)o * mp->n_in + j] != INT64_MIN)
					e->co[zc++] = o;
		}
		e->cof[ncof++] = (uint32_t)zc;
	}
	return 0;
}

/* Item i's port of kind (and task) among its n ports p: its index, or
 * NONE32. */
static uint32_t port_of(const struct synth_port *p, uint32_t n, uint8_t kind, uint32_t task)
{
	for (uint32_t j = 0; j < n; j++)
		if (p[j].kind == kind && p[j].task == task)
			return j;
	return NONE32;
}

/* The items' maps, ports and tasks: 0, SYNTH_EVAL_*, PRISM_ENOMEM. */
static int ev_items(struct ev *e, const struct synth_tpl *tpl)
{
	const struct synth_out *so = e->so;
	size_t n = so->n_ulog, tasks = 0;

	e->map = prism_malloc(n * sizeof(*e->map));
	e->in0 = prism_malloc((n + 1) * sizeof(*e->in0));
	e->out0 = prism_malloc((n + 1) * sizeof(*e->out0));
	e->node_item = prism_malloc((e->g->n_nodes ? e->g->n_nodes : 1) * sizeof(*e->node_item));
	if (!e->map || !e->in0 || !e->out0 || !e->node_item)
		return PRISM_ENOMEM;
	for (uint32_t v = 0; v < e->g->n_nodes; v++)
		e->node_item[v] = NONE32;
	e->n_in = e->n_out = 0;
	for (size_t i = 0; i < n; i++) {
		const struct synth_unit_rec *u = &so->ulog[i];
		int tail = i >= n - so->n_tails;
		if ((tail ? synth_tpl_tail_map(tpl, u->tpl, &e->map[i])
			  : synth_tpl_unit_map(tpl, u->tpl, &e->map[i])) ||
		    e->map[i].n_tasks != u->n)
			return SYNTH_EVAL_NOLOG;
		for (uint32_t t = 0; t < u->n; t++) {
			uint32_t v = so->ulog_nodes[u->node0 + t];
			if (v >= e->g->n_nodes || e->node_item[v] != NONE32)
				return SYNTH_EVAL_UNCOVERED;
			e->node_item[v] = (uint32_t)i;
		}
		tasks += u->n;
		e->in0[i] = e->n_in;
		e->out0[i] = e->n_out;
		e->n_in += e->map[i].n_in;
		e->n_out += e->map[i].n_out;
	}
	e->in0[n] = e->n_in;
	e->out0[n] = e->n_out;
	if (tasks != e->g->n_nodes || so->n_units_kept)
		return SYNTH_EVAL_UNCOVERED;
	for (size_t i = 0; i < n; i++)
		if (e->map[i].n_in == 0)
			return SYNTH_EVAL_NOMAP;
	return 0;
}

/* The graph's collectives as instances (sim.c match_collectives: one per
 * process group, sequence and kind, a send and its receive one kind, one
 * member a rank): each collective's member count.  0, SYNTH_EVAL_RENDEZVOUS
 * where a rank has two members of one, PRISM_ENOMEM. */
static int ev_instances(struct ev *e)
{
	const struct graph *g = e->g;
	uint32_t nc = g->n_colls, cap = 16, ni = 0, *tab, *id, *rep, *pos;
	struct ev_coll *x;
	void *blk;

	while (cap < 2 * (size_t)nc)
		cap *= 2;
	e->colls = prism_malloc((nc ? nc : 1) * sizeof(*e->colls));
	e->inst_n = prism_malloc((nc ? nc : 1) * sizeof(*e->inst_n));
	blk = prism_malloc((size_t)nc * sizeof(*x) + (3 * (size_t)nc + 1 + cap) * sizeof(*tab));
	if (!e->colls || !e->inst_n || !blk) {
		free(blk);
		return PRISM_ENOMEM;
	}
	x = blk;
	tab = (uint32_t *)(x + nc);
	id = tab + cap;
	rep = id + nc;
	pos = rep + nc;
	for (uint32_t k = 0; k < cap; k++)
		tab[k] = NONE32;
	/* Each collective's instance by (pg, seq, kind), hashed, in the order
	 * first met; then the collectives by instance (a counting sort). */
	for (uint32_t c = 0; c < nc; c++) {
		uint8_t k = g->colls[c].kind;
		uint64_t h;
		uint32_t q;
		x[c] = (struct ev_coll){g->colls[c].pg, g->colls[c].seq,
					k == GC_SEND || k == GC_RECV ? GC_SEND_RECV : k,
					g->procs[g->proc[g->colls[c].node]].rank, g->colls[c].node};
		h = ((uint64_t)x[c].pg * 0x9E3779B97F4A7C15ull) ^
		    (((uint64_t)x[c].seq << 8 | x[c].kind) * 0xC2B2AE3D27D4EB4Full);
		for (q = (uint32_t)(h ^ (h >> 29)) & (cap - 1); tab[q] != NONE32;
		     q = (q + 1) & (cap - 1))
			if (x[rep[tab[q]]].pg == x[c].pg && x[rep[tab[q]]].seq == x[c].seq &&
			    x[rep[tab[q]]].kind == x[c].kind)
				break;
		if (tab[q] == NONE32) {
			tab[q] = ni;
			rep[ni++] = c;
		}
		id[c] = tab[q];
	}
	memset(pos, 0, ((size_t)ni + 1) * sizeof(*pos));
	for (uint32_t c = 0; c < nc; c++)
		pos[id[c] + 1]++;
	for (uint32_t k = 0; k < ni; k++)
		pos[k + 1] += pos[k];
	for (uint32_t c = 0; c < nc; c++)
		e->colls[pos[id[c]]++] = x[c];
	free(blk);
	for (uint32_t a = 0, b; a < nc; a = b) {
		for (b = a + 1;
		     b < nc && e->colls[b].pg == e->colls[a].pg &&
		     e->colls[b].seq == e->colls[a].seq && e->colls[b].kind == e->colls[a].kind;
		     b++)
			for (uint32_t k = a; k < b; k++)
				if (e->colls[k].rank == e->colls[b].rank)
					return SYNTH_EVAL_RENDEZVOUS;
		for (uint32_t k = a; k < b; k++)
			e->inst_n[k] = b - a;
	}
	return 0;
}

/* Contention on, whether a rank's contended tasks (sim.c mp_contended:
 * a GPU's kernels, folded tasks, collectives with no other member) lie on
 * two streams: the plain pass's domain (sim.c mp_streams).  1: they do,
 * 0: they do not, -1: out of memory. */
static int ev_streams(const struct ev *e, const uint8_t *folded, const uint8_t *alone)
{
	const struct graph *g = e->g;
	uint32_t ranks = 0, *first;

	for (uint32_t p = 0; p < g->n_procs; p++)
		if (g->procs[p].rank + 1 > ranks)
			ranks = g->procs[p].rank + 1;
	if (!(first = prism_malloc((ranks ? ranks : 1) * sizeof(*first))))
		return -1;
	for (uint32_t r = 0; r < ranks; r++)
		first[r] = NONE32;
	for (uint32_t p = 0; p < g->n_procs; p++) {
		const struct graph_proc *pr = &g->procs[p];
		for (uint32_t u = pr->first; pr->gpu && u < pr->first + pr->n; u++) {
			if (!(folded[u] || g->kind[u] == GN_KERNEL ||
			      (g->kind[u] == GN_COLL && (g->coll[u] == NONE32 || alone[u]))))
				continue;
			if (first[pr->rank] == NONE32) {
				first[pr->rank] = p;
			} else if (first[pr->rank] != p) {
				free(first);
				return 1;
			}
		}
	}
	free(first);
	return 0;
}

/* Each PEER entry's count of sources (the other members' ARRIVE exits)
 * added to cnt; a collective with other members must be a PEER entry and
 * an ARRIVE exit of its item.  0, or SYNTH_EVAL_RENDEZVOUS. */
static int ev_peers(struct ev *e, uint32_t *cnt)
{
	const struct graph *g = e->g;
	uint32_t nc = g->n_colls;

	for (uint32_t a = 0; a < nc; a++) {
		uint32_t i = e->node_item[e->colls[a].node];
		const struct synth_unit_map *mp = &e->map[i];
		uint32_t t = 0, j;
		if (e->inst_n[a] < 2)
			continue;
		while (e->so->ulog_nodes[e->so->ulog[i].node0 + t] != e->colls[a].node)
			t++;
		j = port_of(mp->in, mp->n_in, SYNTH_PORT_PEER, t);
		if (j == NONE32 || port_of(mp->out, mp->n_out, SYNTH_PORT_ARRIVE, t) == NONE32)
			return SYNTH_EVAL_RENDEZVOUS;
		cnt[e->in0[i] + j] += e->inst_n[a] - 1;
	}
	return 0;
}

/* Item i's PROC and LAST entries in the walk: their sources counted
 * into cnt and their values where none (!fill), or their sources written
 * (fill); proc_end / last, the latest earlier END exit of each processor
 * and LAST exit of each stream on the stage (NONE32: none), moved past
 * the item. */
static void ev_walk_item(struct ev *e, uint32_t i, uint32_t *proc_end, uint32_t *last,
			 uint32_t *cnt, int fill)
{
	const struct synth_unit_map *mp = &e->map[i];
	for (uint32_t j = 0; j < mp->n_in; j++) {
		const struct synth_port *p = &mp->in[j];
		uint32_t x = NONE32, en = e->in0[i] + j;
		if (p->kind == SYNTH_PORT_PROC)
			x = proc_end[p->proc];
		else if (p->kind == SYNTH_PORT_LAST)
			x = last[p->proc];
		if (!fill && p->kind == SYNTH_PORT_PEER)
			e->init[en] = INT64_MIN;
		if (p->kind == SYNTH_PORT_PEER)
			continue;
		if (!fill) {
			cnt[en] += x != NONE32;
			e->init[en] = p->kind == SYNTH_PORT_PROC && p->proc == 0 ? 0 : INT64_MIN;
		} else if (x != NONE32) {
			e->src[e->soff[en] + cnt[en]++] = x;
		}
	}
	for (uint32_t o = 0; o < mp->n_out; o++) {
		const struct synth_port *p = &mp->out[o];
		if (p->kind == SYNTH_PORT_END)
			proc_end[p->proc] = e->out0[i] + o;
		else if (p->kind == SYNTH_PORT_LAST)
			last[p->proc] = e->out0[i] + o;
	}
}

/* The entries' sources (soff, src) and their readers (doff, dep):
 * 0, SYNTH_EVAL_*, PRISM_ENOMEM. */
static int ev_sources(struct ev *e)
{
	const struct synth_out *so = e->so;
	size_t n = so->n_ulog;
	uint32_t proc_end[EV_PROCS], last[EV_PROCS], *cnt;
	int rc;

	e->soff = prism_calloc(e->n_in + 1, sizeof(*e->soff));
	e->init = prism_malloc((e->n_in + 1) * sizeof(*e->init));
	e->doff = prism_calloc(e->n_out + 1, sizeof(*e->doff));
	if (!e->soff || !e->init || !e->doff)
		return PRISM_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct synth_unit_map *mp = &e->map[i];
		for (uint32_t j = 0; j < mp->n_in + mp->n_out; j++) {
			const struct synth_port *p =
			    j < mp->n_in ? &mp->in[j] : &mp->out[j - mp->n_in];
			if ((p->kind == SYNTH_PORT_PROC || p->kind == SYNTH_PORT_END ||
			     p->kind == SYNTH_PORT_LAST) &&
			    (p->proc < 0 || p->proc >= EV_PROCS))
				return SYNTH_EVAL_NOMAP;
		}
	}
	/* Two walks: count, then fill (soff[e + 1] the count first). */
	cnt = e->soff + 1;
	for (int fill = 0; fill < 2; fill++) {
		if (fill) {
			for (uint32_t k = 0; k < e->n_in; k++)
				e->soff[k + 1] += e->soff[k];
			if (!(e->src = prism_malloc((e->soff[e->n_in] + 1) * sizeof(*e->src))))
				return PRISM_ENOMEM;
			cnt = e->pend_in;
			memset(cnt, 0, e->n_in * sizeof(*cnt));
		}
		for (size_t k = 0; k < n; k++) {
			uint32_t i = e->order[k];
			if (k == 0 || so->ulog[i].rank != so->ulog[e->order[k - 1]].rank)
				for (int q = 0; q < EV_PROCS; q++)
					proc_end[q] = last[q] = NONE32;
			ev_walk_item(e, i, proc_end, last, cnt, fill);
		}
		if (!fill && (rc = ev_peers(e, cnt)) != 0)
			return rc;
	}
	/* The PEER entries' sources (their place after the walk's). */
	for (uint32_t a = 0, b; a < e->g->n_colls; a = b) {
		b = a + e->inst_n[a];
		if (e->inst_n[a] < 2)
			continue;
		for (uint32_t x = a; x < b; x++)
			for (uint32_t y = a; y < b; y++) {
				uint32_t ix = e->node_item[e->colls[x].node],
					 iy = e->node_item[e->colls[y].node], tx = 0, ty = 0;
				const uint32_t *nx = so->ulog_nodes + so->ulog[ix].node0,
					       *ny = so->ulog_nodes + so->ulog[iy].node0;
				if (x == y)
					continue;
				while (nx[tx] != e->colls[x].node)
					tx++;
				while (ny[ty] != e->colls[y].node)
					ty++;
				{
					uint32_t en =
					    e->in0[ix] + port_of(e->map[ix].in, e->map[ix].n_in,
								 SYNTH_PORT_PEER, tx);
					uint32_t ex =
					    e->out0[iy] + port_of(e->map[iy].out, e->map[iy].n_out,
								  SYNTH_PORT_ARRIVE, ty);
					e->src[e->soff[en] + cnt[en]++] = ex;
				}
			}
	}
	/* Each exit's readers. */
	for (uint32_t k = 0; k < e->soff[e->n_in]; k++)
		e->doff[e->src[k] + 1]++;
	for (uint32_t x = 0; x < e->n_out; x++)
		e->doff[x + 1] += e->doff[x];
	if (!(e->dep = prism_malloc((e->doff[e->n_out] + 1) * sizeof(*e->dep))))
		return PRISM_ENOMEM;
	memset(e->pend_out, 0, e->n_out * sizeof(*e->pend_out));
	for (uint32_t en = 0; en < e->n_in; en++)
		for (uint32_t k = e->soff[en]; k < e->soff[en + 1]; k++) {
			uint32_t x = e->src[k];
			e->dep[e->doff[x] + e->pend_out[x]++] = en;
		}
	return 0;
}

/* Exit o (global) of item i, its entries known: the max over them of
 * the entry plus the path. */
static int64_t ev_exit(const struct ev *e, uint32_t i, uint32_t o)
{
	const uint32_t *ro = e->ro + e->kr[e->kmap[i]] + (o - e->out0[i]);
	const int64_t *in = e->vin + e->in0[i];
	int64_t x = INT64_MIN;
	for (uint32_t k = ro[0]; k < ro[1]; k++)
		if (in[e->rj[k]] != INT64_MIN && prism_time_add(in[e->rj[k]], e->rw[k]) > x)
			x = prism_time_add(in[e->rj[k]], e->rw[k]);
	return x;
}

/* Entry en known: its value; the exits it reaches counted down, the
 * known pushed onto work[*nw]. */
static void ev_entry(struct ev *e, uint32_t en, uint32_t *nw)
{
	uint32_t i = e->item_of[en], j = en - e->in0[i];
	const uint32_t *cof = e->cof + e->kc[e->kmap[i]] + j;
	int64_t v = e->soff[en] == e->soff[en + 1] ? e->init[en] : INT64_MIN;
	for (uint32_t k = e->soff[en]; k < e->soff[en + 1]; k++)
		if (e->vout[e->src[k]] > v)
			v = e->vout[e->src[k]];
	e->vin[en] = v;
	for (uint32_t k = cof[0]; k < cof[1]; k++)
		if (--e->pend_out[e->out0[i] + e->co[k]] == 0)
			e->work[(*nw)++] = e->out0[i] + e->co[k];
}

/* The worklist: 0, or SYNTH_EVAL_CYCLE where exits are left. */
static int ev_run(struct ev *e)
{
	size_t n = e->so->n_ulog;
	uint32_t nw = 0, done = 0;

	for (size_t i = 0; i < n; i++) {
		const struct synth_unit_map *mp = &e->map[i];
		for (uint32_t j = 0; j < mp->n_in; j++)
			e->item_of[e->in0[i] + j] = (uint32_t)i;
		for (uint32_t o = 0; o < mp->n_out; o++) {
			const uint32_t *ro = e->ro + e->kr[e->kmap[i]] + o;
			uint32_t c = ro[1] - ro[0];
			e->pend_out[e->out0[i] + o] = c;
			if (c == 0)
				e->work[nw++] = e->out0[i] + o;
		}
	}
	for (uint32_t en = 0; en < e->n_in; en++) {
		e->pend_in[en] = e->soff[en + 1] - e->soff[en];
		if (e->pend_in[en] == 0)
			ev_entry(e, en, &nw);
	}
	while (nw > 0) {
		uint32_t x = e->work[--nw], i = e->item_of[e->n_in + x];
		e->vout[x] = ev_exit(e, i, x);
		done++;
		for (uint32_t k = e->doff[x]; k < e->doff[x + 1]; k++)
			if (--e->pend_in[e->dep[k]] == 0)
				ev_entry(e, e->dep[k], &nw);
	}
	return done == e->n_out ? 0 : SYNTH_EVAL_CYCLE;
}

/* Every pair's guard (synth.h synth_pair_guard) on its unit's evaluated
 * entries: 0, or SYNTH_EVAL_GUARD where one fails.  Checking them after
 * the run is exact: the first failing guard in the order of dependence
 * reads entries that only units whose guards hold set, so a failure is
 * never masked by an earlier one's wrong exits. */
static int ev_guards(const struct ev *e)
{
	size_t n = e->so->n_ulog - e->so->n_tails;
	for (size_t i = 0; i < n; i++) {
		const struct synth_unit_map *mp = &e->map[i];
		const int64_t *in = e->vin + e->in0[i];
		for (uint32_t g = 0; g < mp->n_guard; g++) {
			const int64_t *ra = mp->gm + (size_t)2 * g * mp->n_in, *rh = ra + mp->n_in;
			int64_t a = INT64_MIN, h = INT64_MIN;
			for (uint32_t j = 0; j < mp->n_in; j++) {
				if (ra[j] != INT64_MIN && in[j] != INT64_MIN &&
				    prism_time_add(in[j], ra[j]) > a)
					a = prism_time_add(in[j], ra[j]);
				if (rh[j] != INT64_MIN && in[j] != INT64_MIN &&
				    prism_time_add(in[j], rh[j]) > h)
					h = prism_time_add(in[j], rh[j]);
			}
			if (a == INT64_MIN || h == INT64_MIN || a - h < mp->guard[g].bound)
				return SYNTH_EVAL_GUARD;
		}
	}
	return 0;
}

/* The walk's order and the working arrays: 0 or PRISM_ENOMEM. */
static int ev_alloc(struct ev *e)
{
	size_t n = e->so->n_ulog, nk;
	uint32_t ranks = 0, steps = 0, *pos;

	e->order = prism_malloc(n * sizeof(*e->order));
	e->item_of = prism_malloc((e->n_in + e->n_out + 1) * sizeof(*e->item_of));
	e->pend_in = prism_malloc((e->n_in + 1) * sizeof(*e->pend_in));
	e->pend_out = prism_malloc((e->n_out + 1) * sizeof(*e->pend_out));
	e->work = prism_malloc((e->n_out + 1) * sizeof(*e->work));
	e->vin = prism_malloc((e->n_in + 1) * sizeof(*e->vin));
	e->vout = prism_malloc((e->n_out + 1) * sizeof(*e->vout));
	if (!e->order || !e->item_of || !e->pend_in || !e->pend_out || !e->work || !e->vin ||
	    !e->vout)
		return PRISM_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct synth_unit_rec *u = &e->so->ulog[i];
		ranks = u->rank + 1 > ranks ? u->rank + 1 : ranks;
		steps = u->step + 1 > steps ? u->step + 1 : steps;
		for (uint32_t o = 0; o < e->map[i].n_out; o++)
			e->item_of[e->n_in + e->out0[i] + o] = (uint32_t)i;
	}
	/* By stage, step, units before the tail, then build order: a
	 * counting sort on the first three (stable). */
	nk = (size_t)ranks * steps * 2;
	if (!(pos = prism_calloc(nk + 1, sizeof(*pos))))
		return PRISM_ENOMEM;
#define EV_KEY(i)                                                                                  \
	(((size_t)e->so->ulog[i].rank * steps + e->so->ulog[i].step) * 2 +                         \
	 ((i) >= n - e->so->n_tails))
	for (size_t i = 0; i < n; i++)
		pos[EV_KEY(i) + 1]++;
	for (size_t k = 0; k < nk; k++)
		pos[k + 1] += pos[k];
	for (size_t i = 0; i < n; i++)
		e->order[pos[EV_KEY(i)]++] = (uint32_t)i;
#undef EV_KEY
	free(pos);
	return 0;
}

/* The exit of kind a or b (SYNTH_PORT_*) of graph task v (in a unit or
 * tail): its value, or INT64_MIN where v is none of its item's. */
static int64_t ev_exit_of(const struct ev *e, uint32_t v, uint8_t a, uint8_t b)
{
	uint32_t i = v < e->g->n_nodes ? e->node_item[v] : NONE32, t = 0;
	const uint32_t *nodes;
	if (i == NONE32)
		return INT64_MIN;
	nodes = e->so->ulog_nodes + e->so->ulog[i].node0;
	while (nodes[t] != v)
		t++;
	for (uint32_t o = 0; o < e->map[i].n_out; o++)
		if ((e->map[i].out[o].kind == a || e->map[i].out[o].kind == b) &&
		    e->map[i].out[o].task == t)
			return e->vout[e->out0[i] + o];
	return INT64_MIN;
}

/* The first step's unit span (settle.c: from the first unit's first
 * compute task's start to the last's end, of the first n_units / steps
 * units): the START exits and each unit's last compute task's exit (its
 * processor's END); -1 where one is not an exit. */
static int64_t ev_span(const struct ev *e, int64_t *lo, int64_t *hi)
{
	const struct synth_out *so = e->so;
	size_t per_step = so->steps > 0 ? so->n_units / (size_t)so->steps : 0;
	*lo = INT64_MAX;
	*hi = INT64_MIN;
	for (size_t k = 0; k < per_step; k++) {
		int64_t a = ev_exit_of(e, so->unit_first[k], SYNTH_PORT_START, SYNTH_PORT_START);
		int64_t b = ev_exit_of(e, so->unit_last[k], SYNTH_PORT_END, SYNTH_PORT_LAST);
		if (a == INT64_MIN || b == INT64_MIN)
			return -1;
		*lo = a < *lo ? a : *lo;
		*hi = b > *hi ? b : *hi;
	}
	return *hi > *lo ? *hi - *lo : 0;
}

/* Row r of n_in values on entries in: max_j (r[j] + in[j]), INT64_MIN
 * none (a task's start or end, synth_unit_map.ts, te). */
static int64_t ev_row(const int64_t *r, const int64_t *in, uint32_t n)
{
	int64_t x = INT64_MIN;
	for (uint32_t j = 0; j < n; j++)
		if (r[j] != INT64_MIN && in[j] != INT64_MIN && prism_time_add(in[j], r[j]) > x)
			x = prism_time_add(in[j], r[j]);
	return x;
}

/* Graph task v's start (end: its end) from its item's entries. */
static int64_t ev_task_time(const struct ev *e, uint32_t v, int end)
{
	uint32_t i = v < e->g->n_nodes ? e->node_item[v] : NONE32, t = 0;
	const struct synth_unit_map *mp;
	const uint32_t *nodes;
	if (i == NONE32)
		return INT64_MIN;
	mp = &e->map[i];
	nodes = e->so->ulog_nodes + e->so->ulog[i].node0;
	while (nodes[t] != v)
		t++;
	return ev_row((end ? mp->te : mp->ts) + (size_t)t * mp->n_in, e->vin + e->in0[i], mp->n_in);
}

/* Whether GPU task t of item i (its start a) was bound by its launch, as
 * settle.c counts it: its launch's release later than its other ones
 * (sim.c mp_release; at a tie the one released first binds: never the
 * launch), unless a transfer with other members that another arrived
 * last for (bound by that one) -- and, a unit task, whatever its edges,
 * where its launches held its kernels (fold_final: its end past its
 * start plus its rest; a pair's: a piece whose launch came after its
 * other releases, pair_final, stepped where its start is before its
 * bound).  1, 0, or -1 where the pair's lanes could not be stepped. */
static int ev_bound(const struct ev *e, uint32_t i, uint32_t t, int64_t a)
{
	const struct synth_unit_map *mp = &e->map[i];
	const struct synth_map_task *k = &mp->task[t];
	const int64_t *in = e->vin + e->in0[i];
	size_t r = (size_t)t * mp->n_in;
	uint32_t j = k->kind == GN_P2P || k->kind == GN_COLL
			 ? port_of(mp->in, mp->n_in, SYNTH_PORT_PEER, t)
			 : NONE32;
	int64_t h, hl = k->launched ? ev_row(mp->tl + r, in, mp->n_in) : INT64_MIN;
	int lb = hl != INT64_MIN && hl > ev_row(mp->tr + r, in, mp->n_in);

	if (j != NONE32 && in[j] != INT64_MIN) {
		uint32_t o = port_of(mp->out, mp->n_out, SYNTH_PORT_ARRIVE, t);
		if (o == NONE32 || e->vout[e->out0[i] + o] <= in[j])
			lb = 0;
	}
	if (k->reach == INT64_MIN && !k->pair)
		return lb;
	h = ev_row(mp->ts, in, mp->n_in); /* its unit's host start */
	if (!k->pair)
		return lb || prism_time_add(h, k->reach) > prism_time_add(a, k->dur);
	if (a - h >= k->bound)
		return lb;
	/* Stepped (room for its pieces' ends grown until it fits). */
	for (size_t np = 256; np <= ((size_t)1 << 20); np *= 16) {
		int64_t *ends = prism_malloc(np * sizeof(*ends)), end;
		int held = 0, rc;
		if (!ends)
			return -1;
		rc =
		    synth_tpl_pair_held(e->tpl, e->so->ulog[i].tpl, t, a, h, ends, np, &end, &held);
		free(ends);
		if (rc >= 0)
			return rc ? -1 : lb || held;
	}
	return -1;
}

/* Item i's tasks into ev's outputs: each stage's host time, its steps'
 * GPU spans, its first step's busy time inside [lo, hi] on its compute
 * stream (processor offset comp), its launch-bound tasks: 0, or
 * SYNTH_EVAL_NOMAP where a pair's lanes could not be stepped. */
static int ev_item_out(const struct ev *e, uint32_t i, int32_t comp, int64_t lo, int64_t hi,
		       struct synth_ueval *ev)
{
	const struct synth_unit_rec *u = &e->so->ulog[i];
	const struct synth_unit_map *mp = &e->map[i];
	const int64_t *in = e->vin + e->in0[i];
	struct synth_ueval_step *st = &ev->step[(size_t)u->rank * ev->n_steps + u->step];
	int in_range = u->rank < LAYOUT_MAX_STAGES;

	for (uint32_t t = 0; t < mp->n_tasks; t++) {
		const struct synth_map_task *k = &mp->task[t];
		int64_t a, b;
		if (k->proc == 0) {
			if (k->kind != GN_WAIT && in_range)
				ev->host_ns[u->rank] += k->dur;
			continue;
		}
		a = ev_row(mp->ts + (size_t)t * mp->n_in, in, mp->n_in);
		b = ev_row(mp->te + (size_t)t * mp->n_in, in, mp->n_in);
		st->gpu_a = a < st->gpu_a ? a : st->gpu_a;
		st->gpu_b = b > st->gpu_b ? b : st->gpu_b;
		switch (ev_bound(e, i, t, a)) {
		case 1:
			ev->launch_bound++;
			if (in_range)
				ev->launch_bound_stage[u->rank]++;
			break;
		case -1:
			return SYNTH_EVAL_NOMAP;
		}
		if (k->proc == comp && in_range && hi > lo && a >= lo && b <= hi)
			ev->busy_ns[u->rank] += k->busy >= 0 ? k->busy : b - a;
	}
	return 0;
}

/* Each stage's steps as metrics.c's iterations take them (the host side,
 * the GPU side to the next step's first GPU task, the later of them),
 * and the step time: the slowest stage's, the mean over the steps after
 * the first (metrics_step_time: in step order, as it sums). */
static void ev_steps(struct synth_ueval *ev)
{
	double sum = 0;
	int cnt = 0;
	for (uint32_t r = 0; r < ev->n_ranks; r++)
		for (uint32_t s = 0; s < ev->n_steps; s++) {
			struct synth_ueval_step *a = &ev->step[(size_t)r * ev->n_steps + s];
			const struct synth_ueval_step *nx = s + 1 < ev->n_steps ? a + 1 : NULL;
			int64_t gpu = 0;
			if (a->gpu_a != INT64_MAX) {
				gpu = nx && nx->gpu_a != INT64_MAX && nx->gpu_a >= a->gpu_a
					  ? nx->gpu_a - a->gpu_a
					  : a->gpu_b - a->gpu_a;
			}
			a->pred_ns = a->host_b - a->host_a;
			if (gpu > a->pred_ns)
				a->pred_ns = gpu;
		}
	for (uint32_t s = ev->n_steps > 1 ? 1 : 0; s < ev->n_steps; s++) {
		int64_t w = -1;
		for (uint32_t r = 0; r < ev->n_ranks; r++)
			if (ev->step[(size_t)r * ev->n_steps + s].pred_ns > w)
				w = ev->step[(size_t)r * ev->n_steps + s].pred_ns;
		if (w >= 0) {
			sum += (double)w * 1e-9;
			cnt++;
		}
	}
	ev->iter_s = cnt ? sum / cnt : 0;
}

/* The points' outputs (synth.h synth_ueval.step ...): 0, or
 * PRISM_ENOMEM. */
static int ev_outputs(struct ev *e, struct synth_ueval *ev, int64_t lo, int64_t hi)
{
	const struct synth_out *so = e->so;
	size_t ns = (size_t)ev->n_ranks * ev->n_steps;
	int32_t comp[LAYOUT_MAX_STAGES];

	ev->step = prism_malloc((ns ? ns : 1) * sizeof(*ev->step));
	if (!ev->step)
		return PRISM_ENOMEM;
	for (size_t k = 0; k < ns; k++)
		ev->step[k] =
		    (struct synth_ueval_step){INT64_MIN, INT64_MIN, INT64_MAX, INT64_MIN, 0};
	/* Each stage's compute stream, from its host thread (a unit's first
	 * task runs there). */
	for (int r = 0; r < LAYOUT_MAX_STAGES; r++)
		comp[r] = -1;
	for (size_t i = 0; i < so->n_ulog; i++) {
		uint32_t r = so->ulog[i].rank;
		if (r < LAYOUT_MAX_STAGES && r < (uint32_t)so->stages && comp[r] < 0)
			comp[r] = (int32_t)(so->compute[r] -
					    e->g->proc[so->ulog_nodes[so->ulog[i].node0]]);
	}
	for (size_t i = 0; i < so->n_ulog; i++) {
		uint32_t r = so->ulog[i].rank;
		int rc =
		    ev_item_out(e, (uint32_t)i, r < LAYOUT_MAX_STAGES ? comp[r] : -1, lo, hi, ev);
		if (rc)
			return rc;
	}
	for (int r = 0; r < LAYOUT_MAX_STAGES; r++)
		ev->host_ns[r] /= so->steps > 0 ? so->steps : 1;
	/* The host sides: the step's first host task's start, its closing
	 * synchronize's end. */
	for (size_t k = 0; k < so->n_steps; k++) {
		uint32_t f = so->step_first[k], i = e->node_item[f];
		struct synth_ueval_step *st;
		if (i == NONE32)
			return SYNTH_EVAL_UNCOVERED;
		st = &ev->step[(size_t)so->ulog[i].rank * ev->n_steps + so->ulog[i].step];
		st->host_a = ev_task_time(e, f, 0);
		st->host_b = ev_task_time(e, so->step_last[k], 1);
	}
	ev_steps(ev);
	return 0;
}

/* The results into ev: 0 or PRISM_ENOMEM. */
static int ev_take(struct ev *e, struct synth_ueval *ev)
{
	const struct synth_out *so = e->so;
	size_t n = so->n_ulog;
	int64_t lo, hi;
	int rc;

	ev->n_items = n;
	ev->n_ranks = ev->n_steps = 0;
	for (size_t i = 0; i < n; i++) {
		if (so->ulog[i].rank + 1 > ev->n_ranks)
			ev->n_ranks = so->ulog[i].rank + 1;
		if (so->ulog[i].step + 1 > ev->n_steps)
			ev->n_steps = so->ulog[i].step + 1;
	}
	ev->span_ns = ev_span(e, &lo, &hi);
	if ((rc = ev_outputs(e, ev, lo, hi)) != 0)
		return rc;
	ev->x = e->vout;
	ev->off = e->out0;
	e->vout = NULL;
	e->out0 = NULL;
	ev->end = prism_malloc(((size_t)ev->n_ranks * ev->n_steps + 1) * sizeof(*ev->end));
	if (!ev->end)
		return PRISM_ENOMEM;
	for (size_t k = 0; k < (size_t)ev->n_ranks * ev->n_steps; k++)
		ev->end[k] = INT64_MIN;
	for (size_t i = n - so->n_tails; i < n; i++) {
		const struct synth_unit_map *mp = &e->map[i];
		for (uint32_t o = 0; o < mp->n_out; o++)
			if (mp->out[o].kind == SYNTH_PORT_END && mp->out[o].proc == 0)
				ev->end[(size_t)so->ulog[i].rank * ev->n_steps + so->ulog[i].step] =
				    ev->x[ev->off[i] + o];
	}
	return 0;
}

int synth_unit_eval(const struct synth_tpl *tpl, const struct synth_out *so, const struct graph *g,
		    struct synth_ueval *ev)
{
	struct ev e;
	uint8_t *folded = NULL;
	int rc;

	memset(ev, 0, sizeof(*ev));
	memset(&e, 0, sizeof(e));
	if (!so->ulog || so->n_ulog == so->n_tails || so->n_tails == 0)
		return SYNTH_EVAL_NOLOG;
	e.tpl = tpl;
	e.so = so;
	e.g = g;
	if ((rc = ev_items(&e, tpl)) != 0 || (rc = ev_instances(&e)) != 0)
		goto out;
	if (so->slow_compute != 0 || so->slow_comm != 0) {
		/* (two flags a task: folded, a collective alone) */
		folded = prism_calloc(g->n_nodes ? 2 * (size_t)g->n_nodes : 1, 1);
		if (!folded) {
			rc = PRISM_ENOMEM;
			goto out;
		}
		for (size_t k = 0; k < so->n_marks; k++)
			if (so->marks[k].node < g->n_nodes)
				folded[so->marks[k].node] = 1;
		for (uint32_t a = 0; a < g->n_colls; a++)
			folded[g->n_nodes + e.colls[a].node] = e.inst_n[a] < 2;
		rc = ev_streams(&e, folded, folded + g->n_nodes);
		if (rc) {
			rc = rc < 0 ? PRISM_ENOMEM : SYNTH_EVAL_CONTENTION;
			goto out;
		}
	}
	if ((rc = ev_alloc(&e)) != 0 || (rc = ev_sources(&e)) != 0 || (rc = ev_sparse(&e)) != 0 ||
	    (rc = ev_run(&e)) != 0 || (rc = ev_guards(&e)) != 0 || (rc = ev_take(&e, ev)) != 0)
		goto out;
out:
	free(folded);
	ev_free(&e);
	if (rc)
		synth_ueval_free(ev);
	return rc;
}

void synth_ueval_free(struct synth_ueval *ev)
{
	free(ev->x);
	free(ev->off);
	free(ev->end);
	free(ev->step);
	memset(ev, 0, sizeof(*ev));
}
