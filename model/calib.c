/* calib.c - least-squares kernel efficiency per class (GSL). */
#include "calib.h"

#include <gsl/gsl_fit.h>
#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "kperf.h"

const char *calib_profile_for(const char *name, double mem)
{
	if (strstr(name, "V100"))
		return "v100-dgx1.cfg";
	if (strstr(name, "A100"))
		return mem > 50e9 || strstr(name, "80GB") ? "a100-80gb-dgx.cfg"
							  : "a100-40gb-dgx.cfg";
	if (strstr(name, "H800"))
		return "h800-hgx.cfg";
	if (strstr(name, "H200"))
		return "h200-dgx.cfg";
	if (strstr(name, "H100"))
		return "h100-dgx.cfg";
	if (strstr(name, "B200"))
		return "b200-dgx.cfg";
	return NULL;
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

void calib_fit(const struct graph *g, const struct hw_profile *hw,
	       struct calib_class out[KC_NCLASSES])
{
	double *x = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*x));
	double *y = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*y));
	double *err = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*err));
	uint8_t *cls = prism_malloc(g->n_nodes ? g->n_nodes : 1);

	memset(out, 0, KC_NCLASSES * sizeof(*out));
	if (!x || !y || !err || !cls || cost_classify_all(g, cls))
		goto done;
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
}

void calib_comm_fit(const struct graph *g, const struct hw_profile *hw,
		    struct calib_comm out[GC_NKINDS])
{
	double *e = prism_malloc((g->n_colls ? g->n_colls : 1) * sizeof(*e));

	memset(out, 0, GC_NKINDS * sizeof(*out));
	if (!e)
		return;
	for (int k = 0; k < GC_NKINDS; k++) {
		size_t n = 0;
		for (uint32_t c = 0; c < g->n_colls; c++) {
			const struct graph_coll *gc = &g->colls[c];
			struct comm_group grp;
			struct comm_est full;
			double t = g->dur_ns[gc->node] / 1e9, lat;
			if (gc->kind != k || gc->bytes <= 0 || gc->group_size < 2 || t <= 0)
				continue;
			grp.n = (int)gc->group_size;
			grp.per_node = grp.n <= hw->gpus_per_node ? grp.n : hw->gpus_per_node;
			if (grp.n % grp.per_node)
				continue;
			/* t = latency + bandwidth term / e: the latency is the
			 * model's time of an empty message; the rest scales 1/e. */
			if (comm_time(hw, k, 0, grp, 1.0, COMM_AUTO, &full))
				continue;
			lat = full.time_s;
			if (comm_time(hw, k, (double)gc->bytes, grp, 1.0, COMM_AUTO, &full) ||
			    t <= lat)
				continue;
			e[n++] = (full.time_s - lat) / (t - lat);
		}
		out[k].n = n;
		if (n == 0)
			continue;
		qsort(e, n, sizeof(*e), cmp_double);
		out[k].median_eff = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
		out[k].best_eff = e[n - 1];
	}
	free(e);
}

void calib_kernel_model(const struct graph *g, const struct hw_profile *hw,
			struct calib_kmodel *out)
{
	double *e = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*e));
	double *f = prism_malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*f));
	double sum = 0, fsum = 0, ssum = 0;

	memset(out, 0, sizeof(*out));
	for (uint32_t u = 0; e && f && u < g->n_nodes; u++) {
		double d[4], t, p, fl;
		int dt;
		if (g->dur_ns[u] <= 0 || !cost_gemm_dims(g, u, d))
			continue;
		dt = cost_dtype(g, u);
		if (dt == HW_FP32 && hw->peak_flops[HW_TF32] > 0 &&
		    strstr(strtab_get(&g->st, g->name[u]), "tensorop"))
			dt = HW_TF32;
		if (dt < 0 || !(p = kperf_gemm_s(hw, dt, d[0], d[1], d[2], d[3])))
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
}
