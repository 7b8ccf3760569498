/* comm.c - ring, hierarchical and tree collectives on a two-level topology:
 * NVLink domains (hw_domain) joined by a network. */
#include "comm.h"

#include <math.h>

int comm_per_domain(int n, int cap)
{
	int k = cap < n ? cap : n;
	if (k < 1)
		return 1;
	while (n % k)
		k--;
	return k;
}

const char *comm_algo_name(int algo)
{
	static const char *const n[COMM_NALGOS] = {"ring", "hierarchical", "tree", "nvls"};
	return algo >= 0 && algo < COMM_NALGOS ? n[algo] : "auto";
}

/*
 * NCCL's three protocols (src/graph/tuning.cc, ncclTopoTuneModel's default
 * tuner constants): a ring step on NVLink costs LL 0.6 us, LL128 1.9,
 * Simple 3.4; LL moves data at half the bus bandwidth (its flag words),
 * LL128 at 0.92 (120 of 128 bytes), Simple at all of it.  The profile's
 * NVLink step latency is Simple's; the others scale by NCCL's ratios, and
 * the fastest protocol wins, as NCCL's tuner picks it per size: LL's short
 * steps set small messages' floor.  A network step costs the profile's
 * latency whatever the protocol: NCCL's ratios there (2.7, 4.0, 14 us)
 * assume InfiniBand, and the only fitted multi-node rows (4 nodes of B200
 * over EFA) floor at 358-378 us from 256 KiB to 1 MiB, which LL's share of
 * a step cannot reach (docs/MODEL.md, "Protocols").
 */
#define COMM_NPROTO 3
static const double proto_lat_nvl[COMM_NPROTO] = {0.6 / 3.4, 1.9 / 3.4, 1};
static const double proto_inv_bw[COMM_NPROTO] = {1 / 0.5, 1 / 0.92, 1};

/* NVLS's latency: NCCL's tuning model puts an NVLink SHARP collective at
 * 25 us (hwLatencies[NVLINK][NVLS][Simple]; no base latency, no per-rank
 * term): flat in the group size, so it wins small messages only in large
 * domains. */
#define COMM_NVLS_LAT_S 25e-6

/* The fastest protocol's time for steps_nvl NVLink steps, steps_net
 * network steps and `bytes` at bus bandwidth bw. */
static double proto_time(const struct hw_profile *hw, double steps_nvl, double steps_net,
			 double bytes, double bw)
{
	double best = INFINITY, a = steps_nvl * hw->nvlink_lat_s, b = steps_net * hw->net_lat_s;
	double x = bytes / bw;
	for (int p = 0; p < COMM_NPROTO; p++) {
		double t = a * proto_lat_nvl[p] + b + x * proto_inv_bw[p];
		if (t < best)
			best = t;
	}
	return best;
}

/* Fraction of the buffer a rank sends in a ring of n, and the steps. */
static void ring_shape(int kind, int n, double *frac, int *steps)
{
	switch (kind) {
	case GC_ALL_REDUCE:
		*frac = 2.0 * (n - 1) / n;
		*steps = 2 * (n - 1);
		break;
	case GC_ALL_GATHER:
	case GC_REDUCE_SCATTER:
		*frac = (double)(n - 1) / n;
		*steps = n - 1;
		break;
	case GC_ALL_TO_ALL:
		*frac = (double)(n - 1) / n;
		*steps = 1;
		break;
	case GC_BROADCAST:
	case GC_REDUCE:
		*frac = 1.0; /* pipelined along the ring */
		*steps = n - 1;
		break;
	default: /* send/recv */
		*frac = 1.0;
		*steps = 1;
	}
}

int comm_time(const struct hw_profile *hw, int kind, double bytes, struct comm_group g, double eff,
	      int algo, struct comm_est *out)
{
	int domains, n = g.n, per = g.per_node, trays;
	double frac, b_nvl, b_net, best = INFINITY, base;
	int steps;

	/* per: the group's members in one NVLink domain (hw_domain), which may
	 * span several physical nodes (an NVL72 rack's 18 trays of 4 GPUs);
	 * n / per domains. */
	if (n < 1 || per < 1 || per > n || n % per != 0 || !(eff > 0 && eff <= COMM_MAX_EFF) ||
	    bytes < 0 || per > hw_domain(hw) || hw->gpus_per_node < 1)
		return PRISM_EARG;
	out->time_s = 0;
	out->algo = COMM_RING;
	out->wire_bytes = 0;
	if (n == 1 && kind != GC_SEND && kind != GC_RECV && kind != GC_SEND_RECV)
		return 0;
	domains = n / per;
	base = hw->coll_base_s;
	b_nvl = hw->nvlink_Bps * hw->nvl_eff * eff;
	/* A full mesh (xGMI) gives a GPU one link to each of its domain - 1
	 * peers: a group of per of them rides per - 1 links, a message to one
	 * peer (or a group with one member a domain) one link. */
	if (hw->mesh && hw_domain(hw) > 1) {
		int links = kind == GC_SEND || kind == GC_RECV || kind == GC_SEND_RECV || per < 2
				? 1
				: per - 1;
		b_nvl *= (double)links / (hw_domain(hw) - 1);
	}
	/* Across domains a ring leaves each domain through one NIC; rings run
	 * side by side on the NICs (rails) of the group's members in the
	 * domain: each member's share of its node's NICs (hw_net_Bps_per_gpu),
	 * per of them -- a whole node's NICs when the group fills the node,
	 * the NICs of ceil(per / gpus_per_node) nodes when the domain is
	 * larger, one GPU's share when the group has one member a node.  The
	 * node's other GPUs run their own groups' collectives at the same time
	 * (the other tensor-parallel ranks' data-parallel groups), so PXN
	 * borrows no idle NIC; nccl-tests across 2 nodes x 1 H100 given 4 NICs
	 * reach 41 GB/s of bus bandwidth, one NIC's worth
	 * (NVIDIA/nccl-tests#232, ../shared/kernels/collectives.csv). */
	trays = (per + hw->gpus_per_node - 1) / hw->gpus_per_node;
	b_net = hw->nics_per_node * hw->nic_Bps * (double)trays * hw->net_eff * eff;
	if (per < trays * hw->gpus_per_node)
		b_net *= (double)per / (trays * hw->gpus_per_node);
	if (kind == GC_SEND || kind == GC_RECV || kind == GC_SEND_RECV || n == 1) {
		/* One message to a peer: over NVLink inside a domain, else one
		 * NIC. */
		double bw = domains > 1 ? hw_net_Bps_per_gpu(hw) * hw->net_eff * eff : b_nvl;
		double lat = domains > 1 ? hw->net_lat_s : hw->nvlink_lat_s;
		out->time_s = base + lat + bytes / bw;
		out->wire_bytes = bytes;
		return 0;
	}
	ring_shape(kind, n, &frac, &steps);
	if (kind == GC_ALL_TO_ALL && domains > 1 && (algo == COMM_AUTO || algo == COMM_RING)) {
		/* Every rank sends bytes / n to each peer at once (NCCL's
		 * grouped send/recv): (per - 1) / n of the buffer over NVLink,
		 * (n - per) / n over the network through the rank's own NIC
		 * share, side by side.  Nothing is reduced, so no algorithm
		 * shrinks what crosses the network (a hierarchical form would
		 * send only 1 / per of it: 2-3x too fast against DeepEP's
		 * measured inter-node all-to-all).
		 *
		 * PXN (NCCL's default, NCCL_PXN_DISABLE 0, NCCL_P2P_PXN_LEVEL
		 * 2: src/graph/search.cc ncclTopoGetNetDev, paths.cc): a send
		 * to a peer on another node leaves through the NIC of the
		 * local GPU in the peer's position (its rail), relayed to that
		 * GPU over NVLink, so the messages to one remote NIC are
		 * aggregated.  The NICs carry what they did (each rail takes
		 * the node's traffic to its peers: (n - per) / n of a rank's
		 * buffer a NIC); NVLink carries, besides the local part, the
		 * (per - 1) / per of the cross-node part bound for another
		 * rail.  With one member a node there is no other GPU of the
		 * group to relay through. */
		double local = bytes * (per - 1) / n, cross = bytes * (n - per) / n;
		double relay = cross * (per - 1) / per;
		double b_gpu_net = hw_net_Bps_per_gpu(hw) * hw->net_eff * eff;
		double t_in = (local + relay) / b_nvl, t_out = cross / b_gpu_net;
		out->time_s = base + hw->net_lat_s + (per > 1 ? hw->nvlink_lat_s : 0) +
			      (t_in > t_out ? t_in : t_out);
		out->algo = COMM_RING;
		out->wire_bytes = local + cross;
		return 0;
	}
	for (int a = 0; a < COMM_NALGOS; a++) {
		double t, wire;
		if (algo != COMM_AUTO && a != algo)
			continue;
		if (a == COMM_NVLS) {
			/* NVLink SHARP: the switch reduces; each GPU sends its
			 * buffer and receives the sum, one pass each way (in one
			 * domain: NVL72's NVLink switch trays reduce too). */
			if (kind != GC_ALL_REDUCE || domains > 1 || hw->nvls_eff <= 0 || hw->mesh ||
			    n <= 2)
				continue; /* NCCL sets NVLS up for 3 GPUs or more
					   * (src/transport/nvls.cc, ncclNvlsInit) */
			wire = bytes;
			t = COMM_NVLS_LAT_S + bytes / (hw->nvlink_Bps * hw->nvls_eff * eff);
		} else if (a == COMM_RING || (domains == 1 && a != COMM_RING)) {
			/* Flat ring.  Across domains a step crosses the network
			 * only where the ring leaves a domain: domains - 1 steps a
			 * pass (two passes for an all-reduce), the rest NVLink
			 * steps, as NCCL's tuner counts them (src/graph/tuning.cc:
			 * (nsteps - nInterSteps) intraLat + nInterSteps interLat). */
			double bw = domains > 1 ? (b_net < b_nvl ? b_net : b_nvl) : b_nvl;
			int s_net = (kind == GC_ALL_REDUCE ? 2 : 1) * (domains - 1);
			if (domains == 1 && a != COMM_RING)
				continue; /* in one domain the others are the ring */
			if (s_net > steps)
				s_net = steps;
			wire = frac * bytes;
			t = proto_time(hw, steps - s_net, s_net, wire, bw);
		} else if (a == COMM_HIER) {
			/* All-reduce alone, as NCCL's trees (Tree, NVLSTree) run it:
			 * reduce-scatter in the domain, the all-reduce across
			 * domains on 1/per of the data (each GPU on its own NIC
			 * share), all-gather in the domain; NCCL pipelines the
			 * phases in chunks, so the slowest phase sets the pace.
			 * Across nodes an all-gather or reduce-scatter is a ring
			 * (PAT only at one GPU a node; NVLS and CollNet Direct need
			 * a CollNet plugin, busBw 0 without one), broadcast and
			 * reduce rings only (src/graph/tuning.cc,
			 * ncclTopoTuneModel).  A ring carries (n - 1) / n of the
			 * buffer through each node's NICs where this form would
			 * carry (domains - 1) / domains: 1.9x less across two
			 * nodes of 8. */
			double fin = (double)(per - 1) / per, fout, part = bytes / per, t_in, t_out;
			int s_out;
			double b_gpu_net = hw_net_Bps_per_gpu(hw) * hw->net_eff * eff;
			if (kind != GC_ALL_REDUCE)
				continue;
			ring_shape(kind, domains, &fout, &s_out);
			t_in = 2 * fin * bytes / b_nvl;
			t_out = fout * part / b_gpu_net;
			/* The slower phase's bytes at its bandwidth, both phases'
			 * steps, one protocol for all. */
			t = proto_time(hw, 2 * (per - 1), s_out,
				       t_in > t_out ? 2 * fin * bytes : fout * part,
				       t_in > t_out ? b_nvl : b_gpu_net);
			wire = fout * part;
		} else {
			/* Tree: ring bandwidth, latency logarithmic across
			 * domains. */
			double bw = b_net < b_nvl ? b_net : b_nvl;
			int depth = (int)ceil(log2((double)domains));
			int passes = kind == GC_ALL_REDUCE ? 2 : 1;
			if (kind != GC_ALL_REDUCE && kind != GC_BROADCAST && kind != GC_REDUCE)
				continue; /* NCCL's trees serve these only */
			wire = frac * bytes;
			t = proto_time(hw, passes * (per - 1), passes * depth, wire, bw);
		}
		if (t < best) {
			best = t;
			out->time_s = base + t;
			out->algo = a;
			out->wire_bytes = wire;
		}
	}
	return best < INFINITY ? 0 : PRISM_EARG;
}
