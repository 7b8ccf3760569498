/*
 * timeline.h - a simulated run as Chrome-trace JSON (opens in Perfetto).
 *
 * The layout is the input's: host threads keep their pid/tid, streams their
 * device/stream ids (with several ranks, pids are offset by
 * (rank index + 1) x 10,000,000 and named "rank R ...").  Events are
 * written in the Kineto vocabulary (cpu_op, cuda_runtime, kernel,
 * gpu_memcpy, gpu_memset, ProfilerStep#N annotations with the simulated
 * iteration spans), so `prism ingest` reads a timeline back: a blocking
 * call is one cuda_runtime event spanning its call and its wait.
 */
#ifndef PRISM_TIMELINE_H
#define PRISM_TIMELINE_H

#include "sim.h"

/* Write the run in s to path.  0, or PRISM_EIO with err naming the file. */
int timeline_write(const struct sim *s, const char *path, struct prism_err *err);

#endif
