/*
 * kineto.h - PyTorch profiler (Kineto) Chrome-trace files into flat event
 * arrays, one struct kineto_trace per file (= per rank).
 *
 * The file is streamed: a small splitter finds whole events in the
 * `traceEvents` array and hands chunks of them to the JSON adapter
 * (kjson.h), so memory stays proportional to the events kept, not to the
 * text.  All three format generations are read (see docs/FORMATS.md):
 * 2021 `Operator/Runtime/Kernel`, 2022 `async_cpu_to_gpu`, 2023+ `ac2g`,
 * `cuda_driver`, `cuda_sync`.
 *
 * Kept: complete ('X') events of the categories the graph needs, in file
 * order, times in integer nanoseconds on the job clock (baseTimeNanoseconds
 * applied).  Everything else is counted by kind, never silently dropped.
 *
 * Ownership: kineto_read() fills a caller-embedded struct; release it with
 * kineto_release().  Names are ids in a caller-owned string table shared by
 * all ranks of a job, so equal names compare equal across ranks.
 */
#ifndef PRISM_KINETO_H
#define PRISM_KINETO_H

#include <stddef.h>
#include <stdint.h>

#include "prism.h"
#include "strtab.h"
#include "vec.h"

enum kt_kind {
	KT_CPU_OP,    /* cpu_op / Operator */
	KT_USER_ANN,  /* user_annotation (ProfilerStep#N, nccl:*, ...) */
	KT_PY_FUNC,   /* python_function */
	KT_RUNTIME,   /* cuda_runtime / Runtime / cuda_driver */
	KT_KERNEL,    /* kernel / Kernel */
	KT_MEMCPY,    /* gpu_memcpy / Memcpy */
	KT_MEMSET,    /* gpu_memset / Memset */
	KT_CUDA_SYNC, /* cuda_sync (CUPTI synchronisation records) */
	KT_GPU_ANN,   /* gpu_user_annotation */
	KT_NKINDS
};

enum kt_sync_kind {
	KT_SYNC_NONE,
	KT_SYNC_STREAM_WAIT_EVENT,
	KT_SYNC_EVENT,
	KT_SYNC_STREAM,
	KT_SYNC_CONTEXT,
	KT_SYNC_OTHER
};

#define KT_NO_ID INT64_MIN /* an absent correlation / id / stream */

struct kt_event {
	int64_t ts_ns; /* start on the job clock */
	int64_t dur_ns;
	int64_t corr;	 /* args.correlation, or KT_NO_ID */
	int64_t ext;	 /* args."External id", or KT_NO_ID */
	int64_t a;	 /* GPU: stream; sync: waiting stream; op: Sequence number */
	int64_t b;	 /* memcpy/memset: bytes; sync: wait_on_stream; op: Fwd thread id */
	int64_t c;	 /* sync: wait_on_cuda_event_record_corr_id */
	uint32_t name;	 /* string-table id */
	uint32_t thread; /* index into kineto_trace.threads */
	uint32_t index;	 /* ordinal in traceEvents (for messages) */
	uint32_t comm;	 /* index into kineto_trace.comms, or UINT32_MAX */
	uint32_t dims;	 /* ops: string id of the raw "Input Dims", 0 if none */
	uint32_t types;	 /* ops: string id of the raw "Input type", 0 if none */
	uint8_t kind;	 /* enum kt_kind */
	uint8_t sync;	 /* enum kt_sync_kind (cuda_sync events) */
};

/* A host thread or a GPU stream as the trace names it. */
struct kt_thread {
	int64_t pid, tid; /* GPU: device and stream */
	uint8_t gpu;
};

/* Communication metadata from args (record_param_comms, NCCL kernels,
 * c10d / nccl:* ops with Input Dims). */
struct kt_comm {
	uint32_t coll;	  /* "Collective name", or 0 */
	uint32_t dtype;	  /* "dtype", or the first "Input type" */
	uint32_t pg_name; /* "Process Group Name" / "Process Group ID" */
	uint32_t pg_desc;
	uint32_t pg_ranks; /* raw text, e.g. "[0, 1]" */
	int64_t in_nelems; /* -1 if unknown */
	int64_t out_nelems;
	int64_t group_size;
	int64_t dims_nelems; /* product of the first "Input Dims" entry, -1 */
};

/* A process group from distributedInfo.pg_config. */
struct kt_pg {
	uint32_t name, desc, ranks; /* ranks: raw text, e.g. "[0, 1]" */
	int64_t size;
};

enum kt_count {
	KT_N_EVENTS,  /* all entries of traceEvents */
	KT_N_X,	      /* complete events */
	KT_N_KEPT,    /* complete events kept (kinds above) */
	KT_N_OTHER_X, /* complete events of other categories (Trace, overhead, ...) */
	KT_N_INSTANT, /* 'i'/'I' */
	KT_N_FLOW_S,
	KT_N_FLOW_F,
	KT_N_META,     /* 'M' */
	KT_N_OTHER_PH, /* any other phase (B/E/C/...) */
	KT_NCOUNTS
};

struct kineto_trace {
	const char *path; /* borrowed from the caller */
	int has_rank, has_world, has_base;
	int64_t rank, world_size;
	int64_t base_ns;
	uint32_t backend;     /* distributedInfo.backend */
	uint32_t device_name; /* deviceProperties[0].name */
	int64_t device_mem;
	int64_t window_start_ns; /* the profiler's window span, if present */
	int64_t window_end_ns;	 /* (INT64_MIN when absent) */
	uint64_t json_bytes;	 /* uncompressed size */
	VEC(struct kt_event) events;
	VEC(struct kt_thread) threads;
	VEC(struct kt_comm) comms;
	VEC(struct kt_pg) pgs; /* distributedInfo.pg_config */
	uint64_t counts[KT_NCOUNTS];
	uint64_t kind_counts[KT_NKINDS];
};

/* What one trace may hold, so that memory follows the work and not the
 * text: one event's JSON (with its whitespace), a top-level value other
 * than traceEvents (or its key), and a name (an event's, a pid or tid
 * string, a process group's).  The largest seen in real traces: events of
 * 2.8 KB, names of 1.8 KB, top-level values of 2.9 KB.  Whitespace between
 * events or keys is skipped as it streams, whatever its amount. */
#define KINETO_MAX_EVENT (16u << 20)
#define KINETO_MAX_TOP	 (64u << 20)
#define KINETO_MAX_NAME	 (1u << 16)
/* The most ranks a trace may state (a group's size, world_size, pg_size;
 * a rank is below it): as many GPUs as a layout may have
 * (LAYOUT_MAX_GPUS). */
#define KINETO_MAX_RANKS (1 << 24)

/*
 * Read the trace at path.  st interns names (shared by all ranks).  On
 * failure returns a negative code and err holds one line naming the file,
 * the event index or byte offset, and the field.  The trace is left
 * releasable either way.
 */
int kineto_read(const char *path, struct strtab *st, struct kineto_trace *tr,
		struct prism_err *err);

/* The same from a buffer in memory (data must outlive the call); name
 * stands for the file in messages. */
int kineto_read_mem(const void *data, size_t len, const char *name, struct strtab *st,
		    struct kineto_trace *tr, struct prism_err *err);

void kineto_release(struct kineto_trace *tr);

/*
 * A prism timeline of several ranks in one file (timeline.h): a world
 * size, no rank, and every pid offset by (rank + 1) x TIMELINE_RANK_PID.
 * kineto_split moves its events into one trace per rank (out[0..*n),
 * malloc'd, each with its rank and the pids without the offset; release
 * each and free out); tr is left empty.  *n = 0 when tr is no such file
 * (left as it was; also when its pids name more ranks than it has
 * threads).  0, or PRISM_ENOMEM.
 */
#define TIMELINE_RANK_PID 10000000
int kineto_split(struct kineto_trace *tr, struct kineto_trace **out, size_t *n);

const char *kineto_kind_name(int kind);

#endif
