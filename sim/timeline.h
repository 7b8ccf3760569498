/*
 * timeline.h - a simulated run as Chrome-trace JSON (opens in Perfetto).
 *
 * The layout is the input's: host threads keep their pid/tid, streams their
 * device/stream ids (with several ranks, pids are offset by
 * (rank + 1) x TIMELINE_RANK_PID and named "rank R ...", and the file's
 * distributedInfo has a world size and no rank: prism ingest gives each
 * rank its own again, kineto.h).  Events are
 * written in the Kineto vocabulary (cpu_op, cuda_runtime, kernel,
 * gpu_memcpy, gpu_memset, ProfilerStep#N annotations with the simulated
 * iteration spans), so `prism ingest` reads a timeline back: a blocking
 * call is one cuda_runtime event spanning its call and its wait.
 *
 * For Perfetto: one process_name record per process; every slice nested
 * in its parent (CPU work and prism:: ranges are cut where a step begins
 * or ends inside them); an arrow (an "ac2g" flow, as Kineto writes them)
 * from each launching call to the GPU task it launched; the critical path
 * (metrics.h) as a "critical path" process of its own, one slice per task
 * from where the one before it ended, and "critical_path":1 in the args of
 * those tasks' own slices.  prism ingest passes the path's slices and the
 * arrows by.
 */
#ifndef PRISM_TIMELINE_H
#define PRISM_TIMELINE_H

#include "kineto.h"
#include "sim.h"

struct timeline_opts {
	int rank; /* index into graph.ranks to write alone (the file is then that
		    * rank's trace, with its own pids), or -1 for every rank */
	const struct graph_wait *waits; /* written as cuda_sync events */
	uint32_t n_waits;
};

/*
 * Write the run in s to path; o may be NULL (every rank, no waits).
 * Collectives carry their metadata (name, message size, group, process
 * group), nodes' layer/phase/microbatch annotations become prism:: ranges
 * on their host threads, and the graph's meta string a zero-length
 * annotation, so that `prism ingest` finds all of it again.  0, or
 * PRISM_EIO with err naming the file.
 */
int timeline_write(const struct sim *s, const char *path, const struct timeline_opts *o,
		   struct prism_err *err);

#endif
