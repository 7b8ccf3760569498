/*
 * comm.h - collective communication times over a node/network topology.
 *
 * The topology has two levels: NVLink domains (hw_domain(): the GPUs of
 * one NVSwitch or xGMI fabric, a node of 8, or 72 in a GB200/GB300 NVL72
 * rack) and the network between them.  "In the node" below means in one
 * domain; "across nodes", across domains.
 *
 * The model is NCCL's in shape: a collective is a fixed cost, a number of
 * steps each paying a link latency, plus the bytes each rank moves over
 * the slowest link it uses, at that link's bandwidth times the bus
 * efficiency the profile states for it (nvl_eff in the node, net_eff
 * across nodes, nvls_eff for NVLink SHARP; fitted on measured collectives
 * by prism collectives --fit), times the caller's eff (1: as the profile
 * says; a trace's own NCCL kernels calibrate it).  docs/MODEL.md gives
 * every formula.
 *
 * A mesh domain (hw->mesh: AMD's xGMI, a link to each peer) gives a group
 * of g of its D GPUs (g - 1) / (D - 1) of a GPU's NVLink bandwidth, and a
 * message to one peer one link, 1 / (D - 1).
 *
 * Algorithms: ring (flat, across nodes the rings ride one NIC each, rail
 * optimised); hierarchical (reduce-scatter in the node, the collective
 * across nodes on 1/g of the data, all-gather in the node, the phases
 * pipelined in chunks as NCCL's trees are: the slowest phase's bandwidth
 * term); tree (ring bandwidth, logarithmic latency across nodes); NVLS
 * (all-reduce in a node through NVSwitch SHARP: each GPU sends its buffer
 * and receives the sum once, after NCCL's flat 25 us; 3 GPUs or more).
 * Each NVLink step runs in NCCL's fastest protocol for the size (LL,
 * LL128, Simple: latency and bandwidth by NCCL's ratios); an all-to-all in
 * one domain is grouped send/recv, one step.  comm_time() picks the
 * fastest, as NCCL's tuner does, unless told one.
 */
#ifndef PRISM_COMM_H
#define PRISM_COMM_H

#include "graph.h"
#include "hw.h"

enum comm_algo { COMM_AUTO = -1, COMM_RING, COMM_HIER, COMM_TREE, COMM_NVLS, COMM_NALGOS };

struct comm_group {
	int n;	      /* ranks in the group */
	int per_node; /* of them, in one NVLink domain (1..hw_domain(hw)), which
		       * is one node unless the profile states a larger
		       * nvlink_domain; n/per_node domains */
};

struct comm_est {
	double time_s;
	int algo;	   /* the algorithm used */
	double wire_bytes; /* bytes each rank sends over the slowest link */
};

/*
 * Time of one collective of `kind` (enum graph_coll_kind) on `bytes` per
 * rank (all-reduce/broadcast/reduce: the buffer; all-gather: the gathered
 * output; reduce-scatter: the input; all-to-all: what a rank sends in all;
 * send/recv: the message) over group g on hw, the profile's bus
 * efficiencies scaled by eff in (0, COMM_MAX_EFF] (1: as the profile says).
 * algo: COMM_AUTO or one algorithm.  0, or PRISM_EARG.
 */
#define COMM_MAX_EFF 4.0
int comm_time(const struct hw_profile *hw, int kind, double bytes, struct comm_group g, double eff,
	      int algo, struct comm_est *out);

const char *comm_algo_name(int algo);

/* The members of a group of n that share an NVLink domain when cap of
 * them fit in one: the largest divisor of n no greater than cap (at least
 * 1), for comm_group.per_node. */
int comm_per_domain(int n, int cap);

#endif
