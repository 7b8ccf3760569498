/*
 * store.h - the results database (SQLite, WAL).
 *
 * Schema version STORE_VERSION in PRAGMA user_version.  Tables:
 *   sweep(id, name, config, hw, model, version, started, finished, base,
 *     tokens, price_per_gpu_hour, mode, batch, inputs)
 *     one row per distinct sweep file text; rerunning the same file
 *     resumes it, unless its inputs (sweep.h's inputs, in column inputs,
 *     added where missing whatever the version) have changed or were not
 *     recorded: that is an error naming them; mode and batch: how
 *     candidates were screened (prism search's mode and --batch, on which
 *     the screened rows depend; NULL in databases before version 6);
 *   candidate(sweep, key, gpus, tp, pp, dp, vp, mbs, microbatches,
 *     schedule, recompute, zero, sp, layers, hidden, status, reason,
 *     analytic_s, iter_s, bubble, tokens_per_s, mfu, gpu_hours, mem_gb,
 *     fits, exposed_compute_s, exposed_comm_s, overlap_s, idle_s, bound_s,
 *     dtype, fp8_attention, flash, method, partition, shard, prefetch,
 *     bucket_mb, overlap_grad, overlap_param, tp_overlap, pp_overlap,
 *     mem_stage, mem_weights_gb, mem_grads_gb, mem_optimizer_gb,
 *     mem_buffers_gb, mem_activations_gb, mem_transient_gb,
 *     mem_fragmentation_gb, mem_verdict, mem_margin_gb, ep, etp, cp, and
 *     each knob added since), primary key (sweep, key).
 *     bound_s: synth_lower_bound, a proven lower bound of iter_s of a
 *     synthesised candidate; method: how a simulated candidate was made
 *     (predict_method_name: synthesised, graph edit, rebuilt, replay).
 *     The mem_* breakdown is of the stage needing the most, for every
 *     candidate with a valid layout (oom ones too), with its verdict
 *     (mem_verdict_name: fits, at-risk, oom) and margin: columns added to
 *     a database that lacks them, as a knob's are (NULL before).
 * Versions 1 (no bound_s, no base), 2 (no tokens, no price), 3 (no dtype,
 * fp8_attention, flash), 4 (no method), 5 (no mode, batch), 6 (no
 * placement, sharding, overlap or memory breakdown) and 7 (no ep, etp,
 * cp: expert and context parallelism; older rows read as 1) are upgraded
 * in place
 * on opening; so is the version 3 of the branch that first added mode and
 * batch (version 2 with mode and batch).  docs/RESULTS.md: every column's
 * unit.
 * Every batch is one transaction: a killed run loses at most the batch in
 * flight, and WAL keeps the file consistent; store_finish leaves WAL mode,
 * so that a finished database is read from a folder prism cannot write.
 */
#ifndef PRISM_STORE_H
#define PRISM_STORE_H

#include <sqlite3.h>

#include "sweep.h"

#define STORE_VERSION 8

/* Open (creating) the database at path, a file name (never a URI; "" and
 * ":memory:" are refused: the results would vanish) to write into it.
 * Before anything is written the file must be a regular file or absent,
 * hold nothing but prism's tables and their automatic indexes, and pass
 * PRAGMA integrity_check (dbfile.h).  0, or PRISM_EARG / PRISM_EFORMAT /
 * PRISM_EIO / PRISM_EVERSION with err naming the file. */
int store_open(const char *path, sqlite3 **db, struct prism_err *err);

/* Open the database at path to read it (prism report): a regular file
 * holding prism's tables and their automatic indexes alone, passing PRAGMA
 * quick_check; of any version, read as it is (in WAL mode from a folder
 * prism cannot write too, where no log lies beside it).  0, or
 * PRISM_EFORMAT ("not a prism results database", "the database is
 * damaged") / PRISM_EIO / PRISM_EARG with err naming the file. */
int store_open_read(const char *path, sqlite3 **db, struct prism_err *err);

/* Whether sweep id's rows in db (opened from path) are ones prism could
 * have written: at most SWEEP_MAX_CANDIDATES of them, and every number
 * store_put writes NULL or within its range (the knobs' as layout.h's
 * lo..hi; times at most PRISM_TIME_MAX ns, a simulated time at least 1 ns;
 * fractions 0..1; docs/RESULTS.md).  0, or PRISM_EFORMAT naming the
 * candidate's key and the column. */
int store_rows_check(sqlite3 *db, const char *path, long long id, struct prism_err *err);

/* How a sweep's candidates are screened: what its stored rows depend on. */
struct store_run {
	const char *mode;  /* "screen", "optimise" or "exhaustive" */
	int batch;	   /* candidates per batch */
	char was_mode[16]; /* store_sweep: the resumed sweep's, "" if unknown */
	int was_batch;	   /* and its batch, 0 if unknown */
};

/* The id of the sweep with s's text (inserted if new, with run's mode and
 * batch); *resumed = 1 when it was there already, and run->was_mode and
 * was_batch say how it ran. */
int store_sweep(sqlite3 *db, const struct sweep *s, struct store_run *run, long long *id,
		int *resumed, struct prism_err *err);

/* Record run's mode and batch for sweep id (one resumed from a database
 * that did not say). */
int store_sweep_run(sqlite3 *db, long long id, const struct store_run *run, struct prism_err *err);

/* The keys already stored for sweep id, sorted (strcmp) for bsearch; free
 * with store_keys_free. */
int store_keys(sqlite3 *db, long long id, char ***keys, size_t *n, struct prism_err *err);
void store_keys_free(char **keys, size_t n);

/* Write candidates c[0..n) (status not pending) in one transaction.
 * keep: NULL, or where the prepared INSERT is kept between calls (NULL at
 * first; prepared by the first call; store_put_end releases it, before
 * db is closed). */
int store_put(sqlite3 *db, long long id, const struct cand *c, size_t n, sqlite3_stmt **keep,
	      struct prism_err *err);
void store_put_end(sqlite3_stmt *keep);

/* store_put in parts, for several batches in one transaction (a writer
 * behind its queue, writer.h): store_begin opens the transaction,
 * store_rows inserts c[0..n) into it (keep as store_put's), store_end
 * commits it when rc is 0 and rolls it back otherwise.  Each returns 0 or
 * PRISM_EIO (err set); store_end returns rc when it is not 0. */
int store_begin(sqlite3 *db, struct prism_err *err);
int store_rows(sqlite3 *db, long long id, const struct cand *c, size_t n, sqlite3_stmt **keep,
	       struct prism_err *err);
int store_end(sqlite3 *db, int rc, struct prism_err *err);

/* Best simulated time per GPU count and setting so far: gpus[i] on profile
 * hw[i] (its index in s->hw, by id) at sequence length seq[i], best[i];
 * returns n. */
int store_best(sqlite3 *db, long long id, const struct sweep *s, int *gpus, int *hw, int *seq,
	       double *best, int max);

int store_finish(sqlite3 *db, long long id, struct prism_err *err);

#endif
