/* calib.c - least-squares kernel efficiency per class (GSL). */
#include "calib.h"

#include <gsl/gsl_fit.h>
#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "kbench.h"
#include "kperf.h"
#include "layout.h"

const char *calib_profile_for(const char *name, double mem)
{
	/* An A100 whose name gives no memory size ("A100-PG509-200"): by the
	 * memory the trace records. */
	if (strstr(name, "A100") && !strstr(name, "40GB") && !strstr(name, "80GB") &&
	    !strstr(name, "PCIe"))
		return mem > 50e9 ? "a100-80gb-dgx" : "a100-40gb-dgx";
	/* ROCm names the GPU "AMD Instinct MI300X" (a virtual function under
	 * SR-IOV, as in cloud VMs: "AMD Instinct MI300X VF"); the measurement
	 * rows' profile mapping (kbench_profile) leaves AMD out, as no AMD
	 * row is fitted. */
	if (strstr(name, "MI300X"))
		return "mi300x";
	if (strstr(name, "MI325X"))
		return "mi325x";
	if (strstr(name, "MI355X"))
		return "mi355x";
	return kbench_profile(name);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int calib_fitted_class(int c)
{
	/* Collectives belong to the communication model; copies and sets
	 * carry their own byte counts rather than their op's shapes, and an
	 * embedding touches a few rows of a table its shapes count whole:
	 * none of these is predicted from op shapes. */
	return c >= 0 && c < KC_NCLASSES && c != KC_COLLECTIVE && c != KC_OTHER && c != KC_MEMCPY &&
	       c != KC_MEMSET && c != KC_EMBEDDING;
}

int calib_point(const struct graph *g, const struct hw_profile *hw, uint32_t u, int c,
		double *ideal, double *work, int *dtype)
{
	double f, b, peak;
	int dt = -1;

	if (g->kind[u] < GN_KERNEL || !cost_work(g, u, &f, &b) || g->dur_ns[u] <= 0)
		return 0;
	if (cost_compute_bound(c)) {
		dt = cost_dtype(g, u);
		/* fp32 GEMMs on tensor cores (Ampere's default for matmul until
		 * PyTorch 1.12) run at the TF32 peak. */
		if (dt == HW_FP32 && hw->peak_flops[HW_TF32] > 0 &&
		    strstr(strtab_get(&g->st, g->name[u]), "tensorop"))
			dt = HW_TF32;
		peak = dt >= 0 ? hw->peak_flops[dt] : 0;
		if (f <= 0 || peak <= 0)
			return 0;
		*ideal = f / peak;
		*work = f;
	} else {
		if (b <= 0)
			return 0;
		*ideal = b / hw->hbm_Bps;
		*work = b;
	}
	*dtype = dt;
	return 1;
}

const char *calib_flag(const struct graph *g, const struct hw_profile *hw, int cls,
		       const struct calib_class *c, char *buf, size_t n)
{
	double t[HW_NDTYPES] = {0};
	int dt = -1;
	const char *peak;

	if (c->n < 3)
		return NULL;
	/* The dtype most of the class's time ran in (FLOP-bound classes). */
	for (uint32_t u = 0; c->by_flops && u < g->n_nodes; u++) {
		double ideal, work;
		int d;
		if (g->kind[u] >= GN_KERNEL && cost_classify_node(g, u) == cls &&
		    calib_point(g, hw, u, cls, &ideal, &work, &d) && d >= 0 && d < HW_NDTYPES)
			t[d] += (double)g->dur_ns[u];
	}
	for (int d = 0; d < HW_NDTYPES; d++)
		if (t[d] > 0 && (dt < 0 || t[d] > t[dt]))
			dt = d;
	peak = !c->by_flops ? "HBM bandwidth" : dt >= 0 ? hw_dtype_name(dt) : "the";
	if (c->eff > 1)
		snprintf(buf, n,
			 "%s: %.0f%% of the %s%s: faster than the profile's peak allows, so "
			 "not a cost model (%s)",
			 cost_class_name(cls), 100 * c->eff, peak, c->by_flops ? " peak" : "",
			 !c->by_flops ? "the shapes count more bytes than the kernels move: "
					"operands broadcast, in place or served from cache"
			 : dt == HW_FP32
			     ? "fp32 ops on tensor cores run at the TF32 rate (allow_tf32), "
			       "which their names do not say, timed against the fp32 peak"
			     : "the shapes count more work than the kernels do, or the GPU is "
			       "faster than its profile");
	else if (c->eff <= 0)
		snprintf(buf, n,
			 "%s: no efficiency (the time does not grow with the work): not a cost "
			 "model",
			 cost_class_name(cls));
	else if (c->overhead_s < 0)
		snprintf(buf, n,
			 "%s: a negative overhead (%.2f us): small kernels run faster than the "
			 "large ones' rate allows (more than one kind of kernel in the class, "
			 "or a rate that grows with size), so not a cost model",
			 cost_class_name(cls), c->overhead_s * 1e6);
	else
		return NULL;
	return buf;
}

int calib_fit(const struct graph *g, const struct hw_profile *hw,
	      struct calib_class out[KC_NCLASSES])
{
	int rc = 0;
	double *x = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*x));
	double *y = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*y));
	double *err = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*err));
	uint8_t *cls = prism_malloc(g->n_nodes ? g->n_nodes : 1);

	memset(out, 0, KC_NCLASSES * sizeof(*out));
	if (!x || !y || !err || !cls || cost_classify_all(g, cls)) {
		rc = PRISM_ENOMEM;
		goto done;
	}
	for (int c = 0; c < KC_NCLASSES; c++) {
		size_t n = 0;
		double c0, c1, cov00, cov01, cov11, ss, mx = 0, sxx = 0, sum = 0;
		int flops = cost_compute_bound(c);

		if (!calib_fitted_class(c))
			continue;
		for (uint32_t u = 0; u < g->n_nodes; u++) {
			double work;
			int dt;
			if (cls[u] != c || !calib_point(g, hw, u, c, &x[n], &work, &dt))
				continue;
			y[n] = g->dur_ns[u] / 1e9;
			n++;
		}
		out[c].n = n;
		out[c].by_flops = flops;
		if (n < 3)
			continue;
		/* Weighted least squares, w = 1/y^2: it minimises relative error,
		 * so a 5 us kernel counts as much as a 5 ms one. */
		{
			double sw = 0, *w = err; /* err doubles as the weights first */
			for (size_t i = 0; i < n; i++) {
				w[i] = 1 / (y[i] * y[i]);
				sw += w[i];
				mx += w[i] * x[i];
			}
			mx /= sw;
			for (size_t i = 0; i < n; i++)
				sxx += w[i] * (x[i] - mx) * (x[i] - mx);
			if (sxx <= 1e-12 * sw * mx * mx) {
				/* Every point the same work: no slope to fit; the
				 * weighted line through the origin. */
				double num = 0, den = 0;
				for (size_t i = 0; i < n; i++) {
					num += w[i] * x[i] * y[i];
					den += w[i] * x[i] * x[i];
				}
				c0 = 0;
				c1 = den > 0 ? num / den : 0;
				sxx = 0;
			} else {
				gsl_fit_wlinear(x, 1, w, 1, y, 1, n, &c0, &c1, &cov00, &cov01,
						&cov11, &ss);
			}
			out[c].overhead_s = c0;
			out[c].eff = c1 > 0 ? 1 / c1 : 0;
			/* Leave-one-out from the weighted hat values:
			 * h_i = w_i (1/sum w + (x_i - mean)^2 / Sxx). */
			for (size_t i = 0; i < n; i++) {
				double h = w[i] * (1 / sw +
						   (sxx > 0 ? (x[i] - mx) * (x[i] - mx) / sxx : 0));
				double r = y[i] - (c0 + c1 * x[i]);
				double pred = h < 1 ? y[i] - r / (1 - h) : c0 + c1 * x[i];
				out[c].measured_s += y[i];
				w[i] = (pred > y[i] ? pred - y[i] : y[i] - pred) / y[i];
				sum += w[i];
			}
		}
		out[c].loo_mean = sum / n;
		qsort(err, n, sizeof(*err), cmp_double);
		out[c].loo_median = n % 2 ? err[n / 2] : (err[n / 2 - 1] + err[n / 2]) / 2;
	}
done:
	free(x);
	free(y);
	free(err);
	free(cls);
	return rc;
}

int calib_comm_fit(const struct graph *g, const struct hw_profile *hw,
		   struct calib_comm out[GC_NKINDS])
{
	double *e = prism_malloc((g->n_colls ? g->n_colls : 1) * sizeof(*e));

	memset(out, 0, GC_NKINDS * sizeof(*out));
	if (!e)
		return PRISM_ENOMEM;
	for (int k = 0; k < GC_NKINDS; k++) {
		size_t n = 0;
		for (uint32_t c = 0; c < g->n_colls; c++) {
			const struct graph_coll *gc = &g->colls[c];
			struct comm_group grp;
			struct comm_est full;
			double t = g->dur_ns[gc->node] / 1e9, lo, hi;
			/* A group beyond any layout's GPUs (a graph file's: the
			 * trace reader refuses one) is no int to divide by. */
			if (gc->kind != k || gc->bytes <= 0 || gc->group_size < 2 ||
			    gc->group_size > LAYOUT_MAX_GPUS || t <= 0)
				continue;
			grp.n = (int)gc->group_size;
			grp.per_node = grp.n <= hw_domain(hw) ? grp.n : hw_domain(hw);
			if (grp.n % grp.per_node)
				continue;
			/* The efficiency at which the model gives t: the model's
			 * time falls as eff rises (each protocol's latency plus
			 * its bandwidth term over eff, the fastest taken), so
			 * bisect on log eff; a time below the model's at the
			 * largest eff says nothing of it. */
			if (comm_time(hw, k, (double)gc->bytes, grp, COMM_MAX_EFF, COMM_AUTO,
				      &full) ||
			    t <= full.time_s)
				continue;
			lo = log(1e-4);
			hi = log(COMM_MAX_EFF);
			for (int it = 0; it < 60; it++) {
				double mid = (lo + hi) / 2;
				if (comm_time(hw, k, (double)gc->bytes, grp, exp(mid), COMM_AUTO,
					      &full))
					break;
				if (full.time_s > t)
					lo = mid;
				else
					hi = mid;
			}
			e[n++] = exp((lo + hi) / 2);
		}
		out[k].n = n;
		if (n == 0)
			continue;
		qsort(e, n, sizeof(*e), cmp_double);
		out[k].median_eff = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
		out[k].best_eff = e[n - 1];
	}
	free(e);
	return 0;
}

/* Task u as a GEMM the kernel model times: its batch, M, N, K in d, the
 * dtype it runs in (fp32 on tensor cores, by its kernel's name, as tf32)
 * and the model's time; 0 for any other task. */
static int gemm_point(const struct graph *g, const struct hw_profile *hw, uint32_t u, double d[4],
		      int *dt, double *model_s)
{
	if (g->dur_ns[u] <= 0 || !cost_gemm_dims(g, u, d))
		return 0;
	*dt = cost_dtype(g, u);
	if (*dt == HW_FP32 && hw->peak_flops[HW_TF32] > 0 &&
	    strstr(strtab_get(&g->st, g->name[u]), "tensorop"))
		*dt = HW_TF32;
	return *dt >= 0 && (*model_s = kperf_gemm_s(hw, *dt, d[0], d[1], d[2], d[3])) > 0;
}

int calib_kernel_model(const struct graph *g, const struct hw_profile *hw, struct calib_kmodel *out)
{
	double *e = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*e));
	double *f = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*f));
	double sum = 0, fsum = 0, ssum = 0;

	memset(out, 0, sizeof(*out));
	if (!e || !f) {
		free(e);
		free(f);
		return PRISM_ENOMEM;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		double d[4], t, p, fl;
		int dt;
		if (!gemm_point(g, hw, u, d, &dt, &p))
			continue;
		t = g->dur_ns[u] / 1e9;
		fl = 3e-6 + 2 * d[0] * d[1] * d[2] * d[3] / (0.7 * hw->peak_flops[dt]);
		e[out->n] = fabs(p - t) / t;
		f[out->n] = fabs(fl - t) / t;
		sum += e[out->n];
		ssum += (p - t) / t;
		fsum += f[out->n];
		if (e[out->n] > out->worst)
			out->worst = e[out->n];
		out->n++;
	}
	if (out->n) {
		size_t n = out->n;
		out->mean = sum / (double)n;
		out->signed_mean = ssum / (double)n;
		out->flat_mean = fsum / (double)n;
		qsort(e, n, sizeof(*e), cmp_double);
		qsort(f, n, sizeof(*f), cmp_double);
		out->median = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
		out->flat_median = n % 2 ? f[n / 2] : (f[n / 2 - 1] + f[n / 2]) / 2;
	}
	free(e);
	free(f);
	return 0;
}

/* A GEMM kernel of the trace: shape, dtype, measured seconds. */
struct gpoint {
	double d[4];
	int dt;
	double t;
};

static int cmp_gpoint(const void *a, const void *b)
{
	const struct gpoint *x = a, *y = b;
	if (x->dt != y->dt)
		return x->dt < y->dt ? -1 : 1;
	for (int i = 0; i < 4; i++)
		if (x->d[i] != y->d[i])
			return x->d[i] < y->d[i] ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int cmp_gshape_time(const void *a, const void *b)
{
	const struct calib_gshape *x = a, *y = b;
	double tx = x->measured_s * (double)x->count, ty = y->measured_s * (double)y->count;
	return tx > ty ? -1 : tx < ty;
}

int calib_gemm_shapes(const struct graph *g, const struct hw_profile *hw, struct calib_gshape **out,
		      size_t *n, struct prism_err *err)
{
	struct gpoint *pt = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*pt));
	struct calib_gshape *sh = NULL;
	size_t np = 0, ns = 0;

	*out = NULL;
	*n = 0;
	if (!pt)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		double p;
		if (gemm_point(g, hw, u, pt[np].d, &pt[np].dt, &p))
			pt[np++].t = g->dur_ns[u] / 1e9;
	}
	qsort(pt, np, sizeof(*pt), cmp_gpoint);
	if (np && !(sh = prism_malloc(np * sizeof(*sh)))) {
		free(pt);
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	}
	for (size_t i = 0, j; i < np; i = j) {
		struct calib_gshape *s = &sh[ns++];
		for (j = i + 1;
		     j < np && pt[j].dt == pt[i].dt && !memcmp(pt[j].d, pt[i].d, sizeof(pt[i].d));
		     j++)
			;
		s->b = pt[i].d[0];
		s->m = pt[i].d[1];
		s->n = pt[i].d[2];
		s->k = pt[i].d[3];
		s->dtype = pt[i].dt;
		s->count = j - i;
		/* the run is sorted by time: its median */
		s->measured_s = (j - i) % 2
				    ? pt[i + (j - i) / 2].t
				    : (pt[i + (j - i) / 2 - 1].t + pt[i + (j - i) / 2].t) / 2;
		s->model_s = kperf_gemm_plan(hw, s->dtype, s->b, s->m, s->n, s->k, &s->plan);
	}
	free(pt);
	if (ns) /* sh is NULL without shapes */
		qsort(sh, ns, sizeof(*sh), cmp_gshape_time);
	*out = sh;
	*n = ns;
	return 0;
}

/* A kernel under an op with shapes, for calib_attn_shapes: the op and its
 * dims (string ids) key the group, the name counts the op's runs. */
struct arec {
	uint32_t op, dims, name, u;
	double t;
	int main; /* the op's attention kernel (cost_attn_shape) */
};

static int cmp_arec(const void *a, const void *b)
{
	const struct arec *x = a, *y = b;
	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	if (x->dims != y->dims)
		return x->dims < y->dims ? -1 : 1;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	return (x->u > y->u) - (x->u < y->u);
}

int calib_attn_shapes(const struct graph *g, struct calib_ashape **out, size_t *n,
		      struct prism_err *err)
{
	struct arec *r = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*r));
	struct calib_ashape *sh = NULL;
	size_t nr = 0, ns = 0;

	*out = NULL;
	*n = 0;
	if (!r)
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		double b, h, sq, skv, d;
		int pass;
		if (g->kind[u] != GN_KERNEL || !g->op_dims[u] || g->dur_ns[u] <= 0)
			continue;
		r[nr] = (struct arec){
		    g->op[u],		g->op_dims[u],
		    g->name[u],		u,
		    g->dur_ns[u] / 1e9, cost_attn_shape(g, u, &b, &h, &sq, &skv, &d, &pass)};
		nr++;
	}
	qsort(r, nr, sizeof(*r), cmp_arec);
	for (size_t i = 0, j; i < nr; i = j) {
		size_t runs = 0, mainu = SIZE_MAX;
		double total = 0;
		const char *op;
		for (j = i; j < nr && r[j].op == r[i].op && r[j].dims == r[i].dims; j++) {
			total += r[j].t;
			if (r[j].main && mainu == SIZE_MAX)
				mainu = j;
		}
		if (mainu == SIZE_MAX)
			continue;
		op = strtab_get(&g->st, r[i].op);
		if (strstr(op, "_efficient_attention"))
			continue; /* not FlashAttention-style */
		for (size_t k = i, l; k < j; k = l) {
			for (l = k; l < j && r[l].name == r[k].name; l++)
				;
			if (l - k > runs)
				runs = l - k;
		}
		{
			struct calib_ashape *s;
			uint32_t u = r[mainu].u;
			if (!sh && !(sh = prism_malloc(nr * sizeof(*sh)))) {
				free(r);
				return prism_err_set(err, PRISM_ENOMEM, "out of memory");
			}
			s = &sh[ns];
			(void)cost_attn_shape(g, u, &s->b, &s->heads, &s->sq, &s->skv, &s->d,
					      &s->pass);
			s->dtype = cost_dtype(g, u);
			if (s->dtype < 0)
				continue;
			s->fa2 = strstr(op, "_flash_attention") != NULL;
			s->measured_s = total / (double)runs;
			ns++;
		}
	}
	free(r);
	if (!ns) {
		free(sh);
		sh = NULL;
	}
	*out = sh;
	*n = ns;
	return 0;
}

/* A kernel's duration and whether a collective ran beside it, keyed by its
 * name and work. */
struct cont_rec {
	uint32_t name;
	double work;
	int over;
	double dur;
};

static int cmp_cont(const void *a, const void *b)
{
	const struct cont_rec *x = a, *y = b;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->work != y->work)
		return x->work < y->work ? -1 : 1;
	if (x->over != y->over)
		return x->over - y->over;
	return x->dur < y->dur ? -1 : x->dur > y->dur;
}

struct cont_iv {
	uint32_t rank;
	int64_t a, b;
};

static int cmp_iv(const void *a, const void *b)
{
	const struct cont_iv *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->a < y->a ? -1 : x->a > y->a;
}

static double median_of(const struct cont_rec *r, size_t n)
{
	return n % 2 ? r[n / 2].dur : (r[n / 2 - 1].dur + r[n / 2].dur) / 2;
}

int calib_contention(const struct graph *g, struct calib_contention *out)
{
	struct cont_iv *iv = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*iv));
	struct cont_rec *rec = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*rec));
	double *ratio = NULL;
	size_t niv = 0, nrec = 0, nr = 0;

	memset(out, 0, sizeof(*out));
	if (!iv || !rec) {
		free(iv);
		free(rec);
		return PRISM_ENOMEM;
	}
	for (uint32_t u = 0; u < g->n_nodes; u++)
		if ((g->kind[u] == GN_COLL || g->kind[u] == GN_P2P) && g->dur_ns[u] > 0) {
			iv[niv].rank = g->procs[g->proc[u]].rank;
			iv[niv].a = g->start_ns[u];
			iv[niv].b = g->start_ns[u] + g->dur_ns[u];
			niv++;
		}
	qsort(iv, niv, sizeof(*iv), cmp_iv);
	for (uint32_t u = 0; u < g->n_nodes; u++) {
		uint32_t rank = g->procs[g->proc[u]].rank;
		int64_t a = g->start_ns[u], b = a + g->dur_ns[u], covered = 0;
		size_t lo = 0, hi = niv;
		double fl = 0, by = 0, f;
		if (g->kind[u] != GN_KERNEL || !g->procs[g->proc[u]].gpu || g->dur_ns[u] <= 0)
			continue;
		/* The first interval of this rank that could reach a: the
		 * collectives of one rank rarely overlap each other, so those
		 * starting from a's predecessor on. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (iv[mid].rank < rank || (iv[mid].rank == rank && iv[mid].a < a))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0 && iv[lo - 1].rank == rank)
			lo--;
		for (size_t i = lo; i < niv && iv[i].rank == rank && iv[i].a < b; i++) {
			int64_t x = iv[i].a > a ? iv[i].a : a, y = iv[i].b < b ? iv[i].b : b;
			if (y > x)
				covered += y - x;
		}
		f = (double)covered / (double)g->dur_ns[u];
		if (f > 0.05 && f < 0.9)
			continue; /* partly overlapped: neither */
		rec[nrec].name = g->name[u];
		rec[nrec].work = cost_work(g, u, &fl, &by) ? fl + by : -1;
		rec[nrec].over = f >= 0.9;
		rec[nrec].dur = (double)g->dur_ns[u];
		nrec++;
	}
	qsort(rec, nrec, sizeof(*rec), cmp_cont);
	ratio = prism_malloc((nrec ? nrec : 1) * sizeof(*ratio));
	if (!ratio) {
		free(iv);
		free(rec);
		return PRISM_ENOMEM;
	}
	for (size_t i = 0; i < nrec;) {
		size_t j = i, k;
		while (j < nrec && rec[j].name == rec[i].name && rec[j].work == rec[i].work)
			j++;
		for (k = i; k < j && !rec[k].over; k++)
			;
		/* Enough of both, long enough to time (traces in whole
		 * microseconds), and one size: the clean ones within 10 %. */
		if (k - i >= CALIB_CONT_MIN && j - k >= CALIB_CONT_MIN &&
		    median_of(rec + i, k - i) >= CALIB_CONT_MIN_NS &&
		    rec[i + (k - i) / 4].dur >= 0.9 * median_of(rec + i, k - i) &&
		    rec[i + 3 * (k - i) / 4].dur <= 1.1 * median_of(rec + i, k - i)) {
			ratio[nr++] = median_of(rec + k, j - k) / median_of(rec + i, k - i) - 1;
			out->pairs += (k - i < j - k ? k - i : j - k);
		}
		i = j;
	}
	out->keys = nr;
	if (nr) {
		qsort(ratio, nr, sizeof(*ratio), cmp_double);
		out->compute = nr % 2 ? ratio[nr / 2] : (ratio[nr / 2 - 1] + ratio[nr / 2]) / 2;
		for (size_t i = 0; i < nr && i < CALIB_CONT_GROUPS; i++)
			out->group[i] = ratio[i];
	}
	free(ratio);
	free(iv);
	free(rec);
	return 0;
}
