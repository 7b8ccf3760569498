/*
 * cbench.h - measured collectives (CSV) against the communication model
 * (comm.h): reading them, predicting them, fitting the profiles' bus
 * efficiencies and latencies on them.
 *
 * Files read: ../shared/kernels/collectives.csv and
 * collectives_xla_table.csv (their README gives the columns; the two share
 * a schema).  A row becomes a measurement of one collective kind (all-
 * reduce, all-gather, reduce-scatter, all-to-all, send/recv) over n ranks,
 * per_node to a node, on a GPU with a profile, of `bytes` as comm_time()
 * takes them (the all-reduce's buffer, the all-gather's output, the
 * reduce-scatter's input: nccl-tests' and XLA's sizes alike), and its
 * time: as printed, or from the bus bandwidth through nccl-tests' factors
 * (2(n-1)/n for all-reduce, (n-1)/n for the gathers and scatters, 1 for
 * send/recv), or XLA's derived time.  An algorithm the row forces (Ring,
 * NVLS) is kept; per_node counts the group's members in one NVLink domain
 * (XLA's GB200/GB300 NVL72 rows, which state no node, lie in one).  Rows
 * the model cannot place (no profile for the GPU: MI300X, gfx950, SM90/
 * SM100 without a SKU; MoE dispatch
 * and combine, copy-engine and RDMA tests, collective-permute; no size or
 * time; a count out of range: nodes or ranks over LAYOUT_MAX_GPUS, GPUs a
 * node over HW_MAX_NODE_GPUS, bytes over KBENCH_MAX_BYTES, or not whole)
 * are counted with the reason.
 */
#ifndef PRISM_CBENCH_H
#define PRISM_CBENCH_H

#include <stddef.h>

#include "hw.h"
#include "kbench.h"
#include "prism.h"

struct cbench_row {
	int kind;	  /* enum graph_coll_kind */
	int n, per_node;  /* the group */
	int algo;	  /* COMM_AUTO, or the algorithm the row forced */
	char gpu[48];	  /* as the file names it */
	char profile[32]; /* configs/hw/ name */
	char source[200]; /* repo@commit:path, or the file */
	double bytes;	  /* comm_time's size */
	double time_s;	  /* measured */
	int net_known;	  /* 0: across nodes over a network the file does not
			    * state (evaluated, fits nothing) */
};

/* The largest per-step latencies a fit may give, us (cbench.c). */
#define CBENCH_MAX_NVL_LAT_US 5.0
#define CBENCH_MAX_NET_LAT_US 50.0

struct cbench {
	struct cbench_row *rows;
	size_t n, cap;
	struct kbench_skips skips; /* kbench.h */
};

/* Read collectives CSVs (a file, or every collectives*.csv of a directory)
 * into cb.  0, or PRISM_EIO / PRISM_EFORMAT naming the file and line, or
 * PRISM_ENOMEM. */
int cbench_read(struct cbench *cb, const char *path, struct prism_err *err);
void cbench_release(struct cbench *cb);

/* The model's time of row r on hw (comm_time, eff 1, the row's algorithm). */
double cbench_predict(const struct hw_profile *hw, const struct cbench_row *r);

/*
 * Fit hw's collective parameters on rows[idx[0..n)] (all of hw's GPU):
 * the NVLink ring's bus efficiency (nvl_eff) and per-step latency (Simple's;
 * comm.h), NVLink SHARP's (nvls_eff, when nvls: Hopper and Blackwell
 * NVSwitch, where NCCL enables it by default), and where
 * a row crosses nodes the network's (net_eff, its per-step latency), and
 * the fixed cost per collective, from the same start whatever hw holds
 * (bus efficiencies 0.8, 1 us a step in the node, 5 across, 1 us a
 * collective, NVLS 0.6).  Minimises the mean absolute log error,
 * each source weighed alike (a bulk table counts as much as one sweep);
 * GSL's Nelder-Mead simplex, restarted once.  Returns the rows used (0,
 * hw untouched, when out of memory).
 */
size_t cbench_fit(struct hw_profile *hw, const struct cbench_row *rows, const size_t *idx, size_t n,
		  int nvls);

#endif
