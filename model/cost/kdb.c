/* kdb.c - the kernel database: rows, lookup and interpolation (GSL).  Its
 * file (SQLite) is search/kdbstore.c's. */
#include "kdb.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_interp.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "cost.h"
#include "strtab.h"
#include "vec.h"

#define SAME_WORK 1e-9 /* relative difference under which two works are one */

struct row {
	uint32_t gpu, shape; /* string ids */
	int cls, dtype;	     /* dtype -1 for the bandwidth-bound classes */
	double work, time_s, n;
};

/* The rows of one GPU, class and dtype: rows[first .. first + n). */
struct curve {
	uint32_t gpu;
	int cls, dtype;
	size_t first, n;
	gsl_interp *it; /* NULL under two rows */
};

struct kdb {
	struct strtab st;
	VEC(struct row) rows;
	struct curve *curves;
	size_t n_curves;
	double *lx, *ly; /* log work and log time of each row */
};

struct kdb *kdb_new(void)
{
	struct kdb *db = prism_calloc(1, sizeof(*db));
	/* GSL's default handler aborts; prism checks return codes. */
	gsl_set_error_handler_off();
	if (db && strtab_init(&db->st)) {
		free(db);
		db = NULL;
	}
	return db;
}

static void drop_curves(struct kdb *db)
{
	for (size_t i = 0; i < db->n_curves; i++)
		if (db->curves[i].it)
			gsl_interp_free(db->curves[i].it);
	free(db->curves);
	free(db->lx);
	free(db->ly);
	db->curves = NULL;
	db->lx = db->ly = NULL;
	db->n_curves = 0;
}

void kdb_free(struct kdb *db)
{
	if (!db)
		return;
	drop_curves(db);
	free(db->rows.v);
	strtab_release(&db->st);
	free(db);
}

size_t kdb_rows(const struct kdb *db)
{
	return db->rows.n;
}

static int same_curve(const struct row *a, const struct row *b)
{
	return a->gpu == b->gpu && a->cls == b->cls && a->dtype == b->dtype;
}

static int same_work(double a, double b)
{
	return fabs(a - b) <= SAME_WORK * (a > b ? a : b);
}

/* Order of curves: by GPU, class, dtype. */
static int cmp_curve(uint32_t ga, int ca, int da, uint32_t gb, int cb, int db)
{
	if (ga != gb)
		return ga < gb ? -1 : 1;
	if (ca != cb)
		return ca < cb ? -1 : 1;
	return da < db ? -1 : da > db;
}

static int cmp_row(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	int o = cmp_curve(a->gpu, a->cls, a->dtype, b->gpu, b->cls, b->dtype);
	if (o)
		return o;
	if (a->work != b->work)
		return a->work < b->work ? -1 : 1;
	return a->time_s < b->time_s ? -1 : a->time_s > b->time_s;
}

/* Interpolation through n points; NULL under two (or out of memory). */
static gsl_interp *interp(const double *x, const double *y, size_t n)
{
	gsl_interp *it;
	if (n < 2)
		return NULL;
	it = gsl_interp_alloc(n >= 3 ? gsl_interp_steffen : gsl_interp_linear, n);
	if (it && gsl_interp_init(it, x, y, n)) {
		gsl_interp_free(it);
		it = NULL;
	}
	return it;
}

/* Sort the rows, merge rows of one key (the mean of their times weighed
 * by their counts), and build the curves.  0, or PRISM_ENOMEM. */
static int finish(struct kdb *db)
{
	struct row *r = db->rows.v;
	size_t n = 0, nc = 0;

	drop_curves(db);
	if (db->rows.n)
		qsort(r, db->rows.n, sizeof(*r), cmp_row);
	for (size_t i = 0; i < db->rows.n; i++) {
		if (n && same_curve(&r[n - 1], &r[i]) && same_work(r[n - 1].work, r[i].work)) {
			struct row *m = &r[n - 1];
			m->time_s = (m->time_s * m->n + r[i].time_s * r[i].n) / (m->n + r[i].n);
			m->n += r[i].n;
			if (!m->shape)
				m->shape = r[i].shape;
			continue;
		}
		r[n++] = r[i];
	}
	db->rows.n = n;
	for (size_t i = 0; i < n; i++)
		nc += i == 0 || !same_curve(&r[i - 1], &r[i]);
	db->curves = prism_calloc(nc ? nc : 1, sizeof(*db->curves));
	db->lx = prism_malloc((n ? n : 1) * sizeof(double));
	db->ly = prism_malloc((n ? n : 1) * sizeof(double));
	if (!db->curves || !db->lx || !db->ly)
		return PRISM_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		db->lx[i] = log(r[i].work);
		db->ly[i] = log(r[i].time_s);
		if (i == 0 || !same_curve(&r[i - 1], &r[i])) {
			struct curve *c = &db->curves[db->n_curves++];
			c->gpu = r[i].gpu;
			c->cls = r[i].cls;
			c->dtype = r[i].dtype;
			c->first = i;
		}
		db->curves[db->n_curves - 1].n++;
	}
	for (size_t i = 0; i < db->n_curves; i++) {
		struct curve *c = &db->curves[i];
		c->it = interp(db->lx + c->first, db->ly + c->first, c->n);
		if (c->n >= 2 && !c->it)
			return PRISM_ENOMEM;
	}
	return 0;
}

static int push(struct kdb *db, const char *gpu, const char *shape, int cls, int dtype, double work,
		double time_s, double n)
{
	struct row r;
	if (strtab_intern(&db->st, gpu, strlen(gpu), &r.gpu) ||
	    strtab_intern(&db->st, shape, strlen(shape), &r.shape))
		return PRISM_ENOMEM;
	r.cls = cls;
	r.dtype = cost_compute_bound(cls) ? dtype : -1;
	r.work = work;
	r.time_s = time_s;
	r.n = n;
	return VEC_PUSH(db->rows, r) ? PRISM_ENOMEM : 0;
}

int kdb_add_graph(struct kdb *db, const struct graph *g, const struct hw_profile *hw, size_t *added)
{
	uint8_t *cls = prism_malloc(g->n_nodes ? g->n_nodes : 1);
	VEC(struct row) s = {0};
	int rc = 0;

	*added = 0;
	if (!cls || cost_classify_all(g, cls)) {
		free(cls);
		return PRISM_ENOMEM;
	}
	/* One sample per task, then the median of each work. */
	for (uint32_t u = 0; u < g->n_nodes && !rc; u++) {
		struct row r = {0};
		double ideal;
		if (!calib_fitted_class(cls[u]) ||
		    !calib_point(g, hw, u, cls[u], &ideal, &r.work, &r.dtype))
			continue;
		r.cls = cls[u];
		r.time_s = g->dur_ns[u] / 1e9;
		r.shape = g->op_dims[u]; /* an id in g's table until pushed */
		rc = VEC_PUSH(s, r) ? PRISM_ENOMEM : 0;
	}
	if (!rc && s.n)
		qsort(s.v, s.n, sizeof(*s.v), cmp_row);
	for (size_t i = 0, j; i < s.n && !rc; i = j) {
		const struct row *a = &s.v[i];
		double med;
		for (j = i + 1; j < s.n && a->cls == s.v[j].cls && a->dtype == s.v[j].dtype &&
				same_work(a->work, s.v[j].work);
		     j++)
			;
		med = (j - i) % 2
			  ? s.v[i + (j - i) / 2].time_s
			  : (s.v[i + (j - i) / 2 - 1].time_s + s.v[i + (j - i) / 2].time_s) / 2;
		rc = push(db, hw->gpu, strtab_get(&g->st, a->shape), a->cls, a->dtype, a->work, med,
			  (double)(j - i));
		*added += j - i;
	}
	free(s.v);
	free(cls);
	return rc ? rc : finish(db);
}

int kdb_push(struct kdb *db, const char *gpu, const char *shape, int cls, int dtype, double work,
	     double time_s, double samples)
{
	return push(db, gpu, shape ? shape : "", cls, dtype, work, time_s, samples);
}

int kdb_finish(struct kdb *db)
{
	return finish(db);
}

int kdb_row(const struct kdb *db, size_t i, struct kdb_row *out)
{
	const struct row *r;
	if (i >= db->rows.n)
		return 0;
	r = &db->rows.v[i];
	out->gpu = strtab_get(&db->st, r->gpu);
	out->shape = strtab_get(&db->st, r->shape);
	out->cls = r->cls;
	out->dtype = r->dtype;
	out->work = r->work;
	out->time_s = r->time_s;
	out->samples = r->n;
	return 1;
}

static const struct curve *find_curve(const struct kdb *db, uint32_t gpu, int cls, int dtype)
{
	size_t lo = 0, hi = db->n_curves;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct curve *c = &db->curves[mid];
		int o = cmp_curve(c->gpu, c->cls, c->dtype, gpu, cls, dtype);
		if (o == 0)
			return c;
		if (o < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int kdb_gpu(const struct kdb *db, const char *gpu)
{
	uint32_t id = strtab_find(&db->st, gpu, strlen(gpu));
	return id == STRTAB_NONE ? -1 : (int)id;
}

int kdb_time(const struct kdb *db, int gpu, int cls, int dtype, double work, double *time_s)
{
	const struct curve *c;
	const struct row *r;
	size_t lo, hi;

	if (gpu < 0 || !(work > 0) ||
	    !(c = find_curve(db, (uint32_t)gpu, cls, cost_compute_bound(cls) ? dtype : -1)))
		return KDB_NONE;
	r = db->rows.v + c->first;
	lo = 0;
	hi = c->n;
	while (lo < hi) { /* the first row with work >= work */
		size_t mid = (lo + hi) / 2;
		if (r[mid].work < work)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The row at or just below work may match within SAME_WORK. */
	for (size_t i = lo > 0 ? lo - 1 : 0; i <= lo && i < c->n; i++)
		if (same_work(r[i].work, work)) {
			*time_s = r[i].time_s;
			return KDB_EXACT;
		}
	if (!c->it || lo == 0 || lo == c->n)
		return KDB_NONE;
	*time_s =
	    exp(gsl_interp_eval(c->it, db->lx + c->first, db->ly + c->first, log(work), NULL));
	return KDB_INTERPOLATED;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void kdb_loo(const struct kdb *db, const char *gpu, int cls, size_t *n, double *mean,
	     double *median)
{
	uint32_t id = strtab_find(&db->st, gpu, strlen(gpu));
	double *e = prism_malloc((db->rows.n ? db->rows.n : 1) * sizeof(double));
	double *x = prism_malloc((db->rows.n ? db->rows.n : 1) * sizeof(double));
	double *y = prism_malloc((db->rows.n ? db->rows.n : 1) * sizeof(double));
	double sum = 0;

	*n = 0;
	*mean = *median = 0;
	for (size_t k = 0; e && x && y && id != STRTAB_NONE && k < db->n_curves; k++) {
		const struct curve *c = &db->curves[k];
		if (c->gpu != id || c->cls != cls || c->n < 3)
			continue;
		for (size_t i = 1; i + 1 < c->n; i++) {
			size_t m = 0;
			gsl_interp *it;
			for (size_t j = 0; j < c->n; j++)
				if (j != i) {
					x[m] = db->lx[c->first + j];
					y[m++] = db->ly[c->first + j];
				}
			if (!(it = interp(x, y, m)))
				continue;
			{
				double t = db->rows.v[c->first + i].time_s;
				double p =
				    exp(gsl_interp_eval(it, x, y, db->lx[c->first + i], NULL));
				e[*n] = fabs(p - t) / t;
				sum += e[(*n)++];
			}
			gsl_interp_free(it);
		}
	}
	if (*n) {
		*mean = sum / (double)*n;
		qsort(e, *n, sizeof(*e), cmp_double);
		*median = *n % 2 ? e[*n / 2] : (e[*n / 2 - 1] + e[*n / 2]) / 2;
	}
	free(e);
	free(x);
	free(y);
}
