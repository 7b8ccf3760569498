/*
 * pipeline.h - a one-stage run split into pipeline stages, as a graph edit.
 *
 * Each rank of the base (one replica of a run without pipelining, its
 * layers found) becomes pp ranks, stage s holding the layers l with
 * floor(l pp / L) = s (L / pp each when pp divides L; otherwise the
 * stages differ by one layer).  A microbatch's forward and backward
 * (*units*) are cut by layer: a layer's tasks go to its stage; a unit's
 * other tasks go with the layer before them on their thread (the loss and
 * head forward to the last stage), those before every layer to the first
 * stage of the pass (the embedding forward to stage 0, the loss backward
 * to the last); GPU work goes with its launch call.  The step's tasks
 * outside the units (data loading, the optimizer outside layers, the
 * closing synchronise) run on every stage.  A gather issued ahead (a task
 * off the compute stream that a task of its unit on another stage waits
 * for: ZeRO-3's and FSDP's prefetch) goes, with its copy-in, host calls
 * and event record, to the stage of the layer it feeds; the gather issued
 * beside it at that stage's unit start loses its wait for the other
 * stage's layer (its record and stream wait go).  Every stage runs its units in
 * the schedule's order (GPipe: all forwards, then all backwards; 1F1B:
 * pp - s - 1 forwards first, then one forward one backward), and
 * activations and their gradients cross stages as send/recv pairs on four
 * new streams per stage, launched as prism synth does (the op's CPU time,
 * a launch, an event record and stream wait on the host); they rendezvous
 * like collectives.
 *
 * Edges inside a stage are the base's; edges between stages are dropped
 * (the transfers carry them); a stage-wide task waiting for another
 * stage's task (the optimizer for the last gradient all-reduce, the
 * closing synchronise for the last kernel) waits instead for the last task
 * of the same stream or thread in its own stage at or before it.  Events
 * are found again on each stage (what the recording stream had been given
 * by the record): one waited for in another unit of the same stage comes
 * from that stream's last task on the stage before the waiting unit in
 * the stage's order (ZeRO-3's and FSDP's first gather of a unit, after
 * the compute stream; a gather moved ahead, whose compute was on another
 * stage, alike); a wait outside the units whose task is on another
 * stage holds back the stage's own next task on its stream (ZeRO-1/2's
 * gathers of the updated weights, after the optimizer).  The
 * data-parallel collectives of stage s form group "PG.s<s>".  Before a
 * step's optimizer (its first optimizer kernel on the compute stream, on
 * each stage) each stage all-reduces the gradient statistics stats_n
 * times in one group across the stages ("r<rank>.gstats"), after a tied
 * embedding's gradient all-reduce between the first and last stages
 * ("r<rank>.emb", emb_ns > 0), each launched just
 * before that kernel's launch and waiting for what it waits for: every
 * stage's optimizer waits for every stage's backward, as prism synth's
 * (Megatron-LM's grad_stats_parallel_group spans the stages); with
 * stats_widen the trace's own such all-reduces are widened to that group
 * ("PG", one across the stages) and only the missing ones added.  The traced
 * times of the candidate pack each processor's tasks back to back from
 * its first task's (the simulator recomputes the waiting); step spans
 * follow the step thread.  The base is only read.
 */
#ifndef PRISM_PIPELINE_H
#define PRISM_PIPELINE_H

#include <stdint.h>

#include "graph.h"

struct pipeline_plan {
	int pp;		  /* stages (>= 2; the layers divide by it) */
	int schedule;	  /* LAYOUT_GPIPE or LAYOUT_1F1B */
	double act_bytes; /* activation bytes per microbatch and boundary */
	int64_t xfer_ns;  /* a send's and a recv's duration */
	int64_t cpu_op_ns, launch_ns, event_ns, gpu_lag_ns; /* added host tasks */
	/* The gradient statistics all-reduced across the stages before each
	 * step's optimizer (synth_grad_stats_groups' last group: 0 to 2, the
	 * clip norm's and fp16's found-inf flag's), each of stats_ns over
	 * stats_group ranks. */
	int stats_n;
	int64_t stats_ns, stats_group;
	/* stats_widen: the trace's own statistics' all-reduces (an optimizer
	 * kernel's all-reduce of at most 8 bytes) are widened to span the
	 * stages instead of being added to (Megatron-LM's one
	 * grad_stats_parallel_group): group stats_group, their traced time less
	 * stats_base_ns (the base group's modelled time) plus stats_ns; only
	 * those stats_n lacks per step are added.  0: every stats_n added (FSDP:
	 * the stage's own reduction, then the stages'). */
	int stats_widen;
	int64_t stats_base_ns;
	/* A tied word embedding's gradient all-reduced between the first and
	 * last stages before those (synth_embed_grad_reduce): emb_ns > 0,
	 * emb_bytes a rank. */
	int64_t emb_ns;
	double emb_bytes;
	/* Bytes an element of that gradient (synth_grad_bytes), which names
	 * its dtype (dtype_coll_name); 0: 4, the fp32 main gradients of
	 * Megatron-LM's default optimizer.  The transfers are labelled by
	 * the base's activations (edit_activation_type), the statistics'
	 * all-reduces "Float". */
	double emb_elem_bytes;
	/* The output side's all-gather (head[0]), gradient reduce-scatter
	 * (head[1]) and, with hybrid sharding, the shard's all-reduce over the
	 * replicas (head[2]) on the last stage under ZeRO-3 and FSDP (synth_head_colls):
	 * the one-stage trace's, of base_bytes, hold the final norm alone where
	 * the cut's last stage also holds a tied head's copy of the word
	 * embedding.  They are found by size and place: of base_bytes, on the
	 * last stage, the gather one whose event the output side's forward
	 * (compute-stream kernels outside the layers) waits for, the
	 * reduce-scatter one waiting (or its copy-in) for the output side's
	 * backward, the all-reduce the one right after it on its stream; a
	 * collective of equal size elsewhere keeps its own.  Each copy of one
	 * on the last stage becomes `bytes`, its
	 * duration less base_ns (the base's modelled time) plus ns, and the
	 * implementation's copies around it (FSDP's, FSDP2's) scale by the
	 * kernel model's ratio: the kernel before it on its stream by in_ratio,
	 * the one after (the gather's copy-out: the compute-stream kernel its
	 * event releases; the reduce-scatter's: the next on its stream, after
	 * the replicas' all-reduce where there is one) by
	 * out_ratio (0: none).  base_bytes 0: none. */
	struct pipeline_head {
		int64_t base_bytes, bytes, base_ns, ns;
		double in_ratio, out_ratio;
	} head[3];
};

struct pipeline_stats {
	uint64_t units;	     /* (microbatch, pass) units cut */
	uint64_t transfers;  /* send/recv kernels added */
	uint64_t replicated; /* tasks run on every stage */
};

/* The candidate with p->pp stages from g (one stage per rank, layers
 * found).  0, PRISM_EARG (no layers, fewer layers than stages, a schedule
 * other than GPipe or 1F1B), PRISM_EINTERNAL (a cycle), or
 * PRISM_ENOMEM / PRISM_ELIMIT. */
int pipeline_split(const struct graph *g, const struct pipeline_plan *p, struct graph **out,
		   struct pipeline_stats *st, struct prism_err *err);

#endif
