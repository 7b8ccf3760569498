/*
 * test_topo.c - the NVLink domain as a property of the topology: profiles
 * that state one (node.nvlink_domain, node.fabric), groups placed inside
 * and outside it, and the collective times that follow, against numbers
 * worked by hand from the profiles and docs/MODEL.md's formulas.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analytic.h"
#include "comm.h"
#include "hw.h"
#include "llm.h"
#include "testutil.h"

#define MiB 1048576.0

static void load(const char *name, struct hw_profile *hw)
{
	char path[512];
	struct prism_err err;
	snprintf(path, sizeof(path), PRISM_SOURCE_DIR "/configs/hw/%s.cfg", name);
	prism_err_clear(&err);
	if (hw_load(path, hw, &err) != 0) {
		print_error("%s\n", err.msg);
		fail();
	}
}

/* The new profiles load with their sources' numbers; the domain defaults
 * to the node where a profile states none. */
static void test_new_profiles(void **state)
{
	static const char *const files[] = {"gb200-nvl72", "gb300-nvl72", "b300-hgx",
					    "mi300x",	   "mi325x",	  "mi355x"};
	struct hw_profile hw;
	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		load(files[i], &hw);
		assert_true(hw.peak_flops[HW_BF16] > hw.peak_flops[HW_FP32]);
		assert_true(hw_domain(&hw) % hw.gpus_per_node == 0);
	}
	load("gb200-nvl72", &hw);
	assert_int_equal(hw.gpus_per_node, 4); /* a compute tray */
	assert_int_equal(hw_domain(&hw), 72);  /* the rack */
	assert_rel_close(hw.nvlink_Bps, 900e9, 1e-12);
	assert_rel_close(hw_net_Bps_per_gpu(&hw), 50e9, 1e-12); /* a 400 Gb/s NIC a GPU */
	assert_rel_close(hw.peak_flops[HW_FP4], 10000e12, 1e-12);
	load("gb300-nvl72", &hw);
	assert_int_equal(hw_domain(&hw), 72);
	assert_rel_close(hw.peak_flops[HW_FP4], 15000e12, 1e-12);
	assert_rel_close(hw_net_Bps_per_gpu(&hw), 100e9, 1e-12); /* 800 Gb/s */
	load("mi300x", &hw);
	assert_int_equal(hw_domain(&hw), 8);
	assert_int_equal(hw.mesh, 1);
	assert_rel_close(hw.peak_flops[HW_BF16], 1307.4e12, 1e-12);
	assert_true(hw.peak_flops[HW_FP4] == 0);
	load("h100-dgx", &hw); /* states no domain: its node */
	assert_int_equal(hw.nvlink_domain, 8);
	assert_int_equal(hw_domain(&hw), 8);
	assert_int_equal(hw.mesh, 0);
}

static void expect_load_error(const char *text, const char *want_suffix)
{
	char path[] = "/tmp/prism-topo-XXXXXX", want[512];
	int fd = mkstemp(path);
	struct hw_profile hw;
	struct prism_err err;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	prism_err_clear(&err);
	assert_int_equal(hw_load(path, &hw, &err), PRISM_EFORMAT);
	snprintf(want, sizeof(want), "%s%s", path, want_suffix);
	assert_string_equal(err.msg, want);
	unlink(path);
}

/* node.nvlink_domain: whole nodes, node.gpus..1024; node.fabric: "switch"
 * or "mesh"; errors name the file, the line and the setting. */
static void test_domain_key(void **state)
{
	static const char head[] =
	    "name = \"x\";\n"
	    "gpu = {\n"
	    "  model = \"g\";\n"
	    "  peak_tflops = { fp32 = 90.0; tf32 = 1250.0; bf16 = 2500.0; fp16 = 2500.0; fp8 = 0.0; };\n"
	    "  hbm_bandwidth_GBps = 8000.0;\n"
	    "  hbm_capacity_GB = 186.0;\n"
	    "  nvlink_bandwidth_GBps = 900.0;\n"
	    "  memory_reserve_GB = 6.0;\n"
	    "};\n"
	    "node = {\n"
	    "  gpus = 4;\n"; /* line 11; the setting under test is line 12 */
	static const char tail[] = "  nics = 4;\n"
				   "  nic_bandwidth_Gbps = 400.0;\n"
				   "  nvlink_latency_us = 1.0;\n"
				   "  network_latency_us = 5.0;\n"
				   "};\n";
	static const struct {
		const char *line, *msg;
	} cases[] = {
	    {"  nvlink_domain = 2;\n",
	     ":12: 'node.nvlink_domain' must be a whole number in 4..1024, not 2"},
	    {"  nvlink_domain = 2048;\n",
	     ":12: 'node.nvlink_domain' must be a whole number in 4..1024, not 2048"},
	    {"  nvlink_domain = 72.5;\n",
	     ":12: 'node.nvlink_domain' must be a whole number in 4..1024, not 72.5"},
	    {"  nvlink_domain = 70;\n",
	     ":12: 'node.nvlink_domain' (70) must be a multiple of 'node.gpus' (4)"},
	    {"  nvlink_domain = \"rack\";\n", ":12: 'node.nvlink_domain' must be a number"},
	    {"  fabric = \"torus\";\n",
	     ":12: 'node.fabric' must be \"switch\" or \"mesh\", not 'torus'"},
	};
	char text[2048], path[] = "/tmp/prism-topo-XXXXXX";
	struct hw_profile hw;
	struct prism_err err;
	int fd;
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "%s%s%s", head, cases[i].line, tail);
		expect_load_error(text, cases[i].msg);
	}
	snprintf(text, sizeof(text), "%s  nvlink_domain = 72;\n  fabric = \"switch\";\n%s", head,
		 tail);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	prism_err_clear(&err);
	assert_int_equal(hw_load(path, &hw, &err), 0);
	assert_int_equal(hw.gpus_per_node, 4);
	assert_int_equal(hw_domain(&hw), 72);
	assert_int_equal(hw.mesh, 0);
	unlink(path);
}

/* Which tensor-parallel groups lie in one domain, each domain holding
 * whole groups: on 8-GPU nodes the divisors of 8 (as before); on an NVL72
 * of 4-GPU trays the divisors of 72 and any whole number of trays up to 72
 * (TP 16: 4 groups a rack, 2 trays spare). */
static void test_group_fits(void **state)
{
	struct hw_profile hw;
	(void)state;
	memset(&hw, 0, sizeof(hw));
	hw.gpus_per_node = 8; /* nvlink_domain 0: a profile built by hand */
	assert_int_equal(hw_domain(&hw), 8);
	assert_true(hw_group_fits_domain(&hw, 1) && hw_group_fits_domain(&hw, 2) &&
		    hw_group_fits_domain(&hw, 4) && hw_group_fits_domain(&hw, 8));
	assert_false(hw_group_fits_domain(&hw, 6) || hw_group_fits_domain(&hw, 16) ||
		     hw_group_fits_domain(&hw, 0));
	hw.gpus_per_node = 4;
	hw.nvlink_domain = 72;
	assert_true(hw_group_fits_domain(&hw, 16) && hw_group_fits_domain(&hw, 72) &&
		    hw_group_fits_domain(&hw, 6) && hw_group_fits_domain(&hw, 32) &&
		    hw_group_fits_domain(&hw, 8));
	assert_false(hw_group_fits_domain(&hw, 5) || hw_group_fits_domain(&hw, 144) ||
		     hw_group_fits_domain(&hw, 10));
}

/* A node of `gpus` GPUs in a domain of `domain`, NVLink 900 GB/s, a NIC of
 * 400 Gb/s (50 GB/s) a GPU, links at full bus bandwidth, no latency. */
static struct hw_profile test_rack(int gpus, int domain)
{
	struct hw_profile hw;
	memset(&hw, 0, sizeof(hw));
	hw.gpus_per_node = gpus;
	hw.nics_per_node = gpus;
	hw.nvlink_domain = domain;
	hw.nvlink_Bps = 900e9;
	hw.nic_Bps = 50e9;
	hw.nvl_eff = hw.net_eff = 1;
	return hw;
}

/*
 * The acceptance case: a TP = 16 all-reduce of S = 256 MiB (one layer's
 * b s h activations of Llama 3.1 405B at 8K tokens, bf16: 8192 x 16384 x 2
 * bytes).  With round numbers first (test_rack; docs/MODEL.md,
 * "Collectives"):
 *
 * - Inside an NVL72 domain (trays of 4, domain 72; group {16, 16}): one
 *   domain, so a ring over NVLink: 2 (15/16) S / 900 GB/s
 *   = 1.875 x 268,435,456 / 9e11 = 559.24 us.
 * - The same trays with no NVL72 (domain = tray of 4; group {16, 4}, four
 *   domains): hierarchical, reduce-scatter in the tray
 *   2 (3/4) S / 900 GB/s = 447.39 us, all-reduce across the 4 trays on S/4
 *   a GPU over its own 50 GB/s NIC: 2 (3/4) (S/4) / 50 GB/s = 2013.27 us,
 *   the slowest phase sets the pace: 2013.27 us (the flat ring: 1.875 S
 *   over the tray's 4 NICs, 200 GB/s, 2516.58 us; the tree the same
 *   bandwidth): 3.6 times the NVL72's.
 * - On 8-GPU HGX nodes (group {16, 8}, two nodes): hierarchical,
 *   max(2 (7/8) S / 900 GB/s = 521.89 us, 2 (1/2) (S/8) / 50 GB/s
 *   = 671.09 us) = 671.09 us.
 */
static void test_tp16_round(void **state)
{
	const double S = 256 * MiB;
	struct hw_profile nvl = test_rack(4, 72), tray = test_rack(4, 4), hgx = test_rack(8, 8);
	struct comm_est e;
	(void)state;
	assert_int_equal(
	    comm_time(&nvl, GC_ALL_REDUCE, S, (struct comm_group){16, 16}, 1.0, COMM_AUTO, &e), 0);
	assert_int_equal(e.algo, COMM_RING);
	assert_rel_close(e.time_s, 1.875 * S / 900e9, 1e-12);
	assert_rel_close(e.time_s, 559.24e-6, 1e-5);
	/* A group of 16 does not fit a domain of 4: refused, not priced. */
	assert_int_equal(
	    comm_time(&tray, GC_ALL_REDUCE, S, (struct comm_group){16, 16}, 1.0, COMM_AUTO, &e),
	    PRISM_EARG);
	assert_int_equal(
	    comm_time(&tray, GC_ALL_REDUCE, S, (struct comm_group){16, 4}, 1.0, COMM_AUTO, &e), 0);
	assert_int_equal(e.algo, COMM_HIER);
	assert_rel_close(e.time_s, 1.5 * (S / 4) / 50e9, 1e-12);
	assert_rel_close(e.time_s, 2013.27e-6, 1e-5);
	assert_int_equal(
	    comm_time(&tray, GC_ALL_REDUCE, S, (struct comm_group){16, 4}, 1.0, COMM_RING, &e), 0);
	assert_rel_close(e.time_s, 1.875 * S / 200e9, 1e-12);
	/* Placed across NVL72 racks by choice (4 of the group in each of 4
	 * domains), the group is priced as the trays were: the network. */
	assert_int_equal(
	    comm_time(&nvl, GC_ALL_REDUCE, S, (struct comm_group){16, 4}, 1.0, COMM_AUTO, &e), 0);
	assert_rel_close(e.time_s, 1.5 * (S / 4) / 50e9, 1e-12);
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_REDUCE, S, (struct comm_group){16, 8}, 1.0, COMM_AUTO, &e), 0);
	assert_int_equal(e.algo, COMM_HIER);
	assert_rel_close(e.time_s, (S / 8) / 50e9, 1e-12);
	assert_rel_close(e.time_s, 671.09e-6, 1e-5);
	/* A flat ring across two NVL72 racks with 16 of the group in each:
	 * the ring leaves a rack on the NICs of the 4 trays those 16 sit on,
	 * 4 x 4 x 50 GB/s = 800 GB/s, below NVLink's 900: 2 (31/32) S / 800 GB/s. */
	assert_int_equal(
	    comm_time(&nvl, GC_ALL_REDUCE, S, (struct comm_group){32, 16}, 1.0, COMM_RING, &e), 0);
	assert_rel_close(e.time_s, 2 * 31.0 / 32 * S / 800e9, 1e-12);
}

/*
 * A group with one member a node rides that member's NIC, not the node's
 * eight (the other seven GPUs run their own groups' collectives at the
 * same time).  HGX nodes of 8 GPUs and 8 NICs of 50 GB/s, NVLink 900 GB/s,
 * full efficiency, no latency; an all-gather of S = 1 GiB gathered:
 *  - {4, 1} (4 nodes, the members tp 8 apart): a ring on one NIC,
 *    (3/4) S / 50 GB/s = 16.106 ms (hierarchical is that ring);
 *  - {4, 2} (2 nodes): the ring on the members' 2 NICs, (3/4) S / 100 GB/s;
 *  - {32, 8}: the node's 8 NICs, ring (31/32) S / 400 GB/s = 2.601 ms,
 *    and that is the answer: NCCL runs an all-gather across nodes as a
 *    ring (src/graph/tuning.cc: PAT at one GPU a node only, NVLS and
 *    CollNet only with a CollNet plugin), not as the hierarchical form
 *    that would send (3/4)(S/8) / 50 GB/s = 2.013 ms;
 *  - {16, 8} (two nodes): ring (15/16) S / 400 GB/s = 2.517 ms, 1.875
 *    times the hierarchical (1/2)(S/8) / 50 GB/s = 1.342 ms; a
 *    reduce-scatter the same.
 */
static void test_nic_share(void **state)
{
	const double S = 1024 * MiB;
	struct hw_profile hgx = test_rack(8, 8);
	struct comm_est e;
	(void)state;
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_GATHER, S, (struct comm_group){4, 1}, 1.0, COMM_RING, &e), 0);
	assert_rel_close(e.time_s, 0.75 * S / 50e9, 1e-12);
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_GATHER, S, (struct comm_group){4, 1}, 1.0, COMM_AUTO, &e), 0);
	assert_rel_close(e.time_s, 0.75 * S / 50e9, 1e-12);
	assert_rel_close(e.time_s, 16.106e-3, 1e-4);
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_GATHER, S, (struct comm_group){4, 2}, 1.0, COMM_RING, &e), 0);
	assert_rel_close(e.time_s, 0.75 * S / 100e9, 1e-12);
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_GATHER, S, (struct comm_group){32, 8}, 1.0, COMM_RING, &e), 0);
	assert_rel_close(e.time_s, 31.0 / 32 * S / 400e9, 1e-12);
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_GATHER, S, (struct comm_group){32, 8}, 1.0, COMM_AUTO, &e), 0);
	assert_int_equal(e.algo, COMM_RING);
	assert_rel_close(e.time_s, 31.0 / 32 * S / 400e9, 1e-12);
	assert_rel_close(e.time_s, 2.601e-3, 1e-3);
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_GATHER, S, (struct comm_group){32, 8}, 1.0, COMM_HIER, &e),
	    PRISM_EARG);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(comm_time(&hgx, i ? GC_REDUCE_SCATTER : GC_ALL_GATHER, S,
					   (struct comm_group){16, 8}, 1.0, COMM_AUTO, &e),
				 0);
		assert_int_equal(e.algo, COMM_RING);
		assert_rel_close(e.time_s, 15.0 / 16 * S / 400e9, 1e-12);
		assert_rel_close(e.time_s, 2.517e-3, 1e-3);
	}
}

/*
 * A ring across nodes pays the network's step latency only where it leaves
 * a node (NCCL's tuner: nInterSteps = nodes - 1 a pass), NVLink's elsewhere.
 * HGX nodes of 8 (8 NICs of 50 GB/s: 400 GB/s a node), NVLink 900 GB/s, a
 * Simple NVLink step 3.4 us, a network step 10 us, no fixed cost; an
 * all-gather over {16, 8}: 15 steps, 1 across.
 *  - 1 GiB: Simple, 14 x 3.4 + 10 + (15/16) 1,073,741,824 / 400 GB/s
 *    = 47.6 + 10 + 2516.582 = 2574.182 us (LL128 2772.0);
 *  - 64 KiB: LL, 14 x 0.6 + 10 + 2 (15/16) 65,536 / 400 GB/s = 18.707 us
 *    (with every step at the network's latency it was 150.307 us);
 *  - an all-reduce over {16, 8} as a ring crosses twice: 30 steps, 2 across,
 *    64 KiB by LL 28 x 0.6 + 20 + 2 (30/16) 65,536 / 400 GB/s = 37.414 us.
 */
static void test_ring_steps(void **state)
{
	struct hw_profile hgx = test_rack(8, 8);
	struct comm_est e;
	(void)state;
	hgx.nvlink_lat_s = 3.4e-6;
	hgx.net_lat_s = 10e-6;
	assert_int_equal(comm_time(&hgx, GC_ALL_GATHER, 1024 * MiB, (struct comm_group){16, 8}, 1.0,
				   COMM_AUTO, &e),
			 0);
	assert_rel_close(e.time_s, 14 * 3.4e-6 + 10e-6 + 15.0 / 16 * 1024 * MiB / 400e9, 1e-12);
	assert_rel_close(e.time_s, 2574.182e-6, 1e-6);
	assert_int_equal(comm_time(&hgx, GC_ALL_GATHER, 64 * 1024, (struct comm_group){16, 8}, 1.0,
				   COMM_AUTO, &e),
			 0);
	assert_rel_close(e.time_s, 14 * 0.6e-6 + 10e-6 + 2 * 15.0 / 16 * 65536 / 400e9, 1e-12);
	assert_rel_close(e.time_s, 18.707e-6, 1e-4);
	assert_int_equal(comm_time(&hgx, GC_ALL_REDUCE, 64 * 1024, (struct comm_group){16, 8}, 1.0,
				   COMM_RING, &e),
			 0);
	assert_rel_close(e.time_s, 28 * 0.6e-6 + 20e-6 + 2 * 30.0 / 16 * 65536 / 400e9, 1e-12);
	assert_rel_close(e.time_s, 37.414e-6, 1e-4);
}

/*
 * PXN (NCCL's default for sends across nodes): an all-to-all's bytes bound
 * for another node leave through the NIC of the local GPU on the peer's
 * rail, relayed over NVLink.  HGX nodes of 8, 8 NICs of 50 GB/s, full
 * efficiency, no latency; an all-to-all of S = 1 GiB a rank over {16, 8}:
 * (7/16) S to the node's peers over NVLink, (8/16) S across, of which 7/8
 * first crosses NVLink to its rail's GPU:
 *  - NVLink 900 GB/s: the NIC decides, (8/16) S / 50 GB/s = 10.737 ms;
 *  - NVLink 50 GB/s: NVLink carries (7/16 + 7/16) S, 0.875 S / 50 GB/s =
 *    18.790 ms (without the relay it would carry 7/16 and the NIC decide);
 *  - {4, 1}, one member a node: no GPU of the group to relay through,
 *    (3/4) S / 50 GB/s = 16.106 ms whatever NVLink's speed.
 */
static void test_pxn(void **state)
{
	const double S = 1024 * MiB;
	struct hw_profile hgx = test_rack(8, 8);
	struct comm_est e;
	(void)state;
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_TO_ALL, S, (struct comm_group){16, 8}, 1.0, COMM_AUTO, &e), 0);
	assert_rel_close(e.time_s, 0.5 * S / 50e9, 1e-12);
	assert_rel_close(e.time_s, 10.737e-3, 1e-4);
	hgx.nvlink_Bps = 50e9;
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_TO_ALL, S, (struct comm_group){16, 8}, 1.0, COMM_AUTO, &e), 0);
	assert_rel_close(e.time_s, 0.875 * S / 50e9, 1e-12);
	assert_rel_close(e.time_s, 18.790e-3, 1e-4);
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_TO_ALL, S, (struct comm_group){4, 1}, 1.0, COMM_AUTO, &e), 0);
	assert_rel_close(e.time_s, 0.75 * S / 50e9, 1e-12);
	assert_rel_close(e.time_s, 16.106e-3, 1e-4);
}

/*
 * The same with the shipped profiles' numbers (configs/hw; change with a
 * refit, and this test with them).
 *
 * gb200-nvl72.cfg: NVLink 900 GB/s, nvlink_bus_eff 0.741, a Simple step
 * 5.000 us, a collective 17.254 us, NVLS 0.209.  {16, 16}: one domain; the
 * ring with LL128 (steps at 1.9/3.4 of Simple's, 0.92 of the bandwidth):
 *   17.254 + 30 x 5 x 1.9/3.4 + 1.875 x 268,435,456 / (0.92 x 0.741 x 9e11) us
 *   = 17.254 + 83.824 + 820.338 = 921.415 us
 * (Simple 921.965, LL 1553.1; NVLS 17.254 + 25 + S / (0.209 x 9e11) = 1469.3).
 * b200-dgx.cfg (HGX, 8 a node): NVLink 900 x 0.690, a step 5.000 us; 8 NICs
 * of 50 GB/s at 0.742, 49.999 us a step (whatever the protocol); NVLS 0.470
 * (one node only); a collective 33.734 us.  {16, 8}, hierarchical with
 * Simple:
 *   latency 2 x 7 x 5 + 2 x 49.999 = 170 us;
 *   in the node 2 (7/8) S / (0.690 x 9e11) = 756.46 us,
 *   across 2 (1/2) (S/8) / (0.742 x 5e10) = 904.43 us (the pace);
 *   33.734 + 170 + 904.43 = 1108.16 us
 * (LL128 1155.93; the tree 1899.5, the ring 1969.5).
 * Inside the NVL72's domain the group is 1.20 times faster, and the
 * NVLink term is all of its bandwidth cost.
 */
static void test_tp16_profiles(void **state)
{
	const double S = 256 * MiB;
	struct hw_profile nvl, hgx;
	struct comm_est e;
	double in_node, across, lat;
	(void)state;
	load("gb200-nvl72", &nvl);
	load("b200-dgx", &hgx);
	assert_int_equal(
	    comm_time(&nvl, GC_ALL_REDUCE, S, (struct comm_group){16, 16}, 1.0, COMM_AUTO, &e), 0);
	assert_int_equal(e.algo, COMM_RING);
	assert_rel_close(e.time_s,
			 nvl.coll_base_s + 30 * nvl.nvlink_lat_s * 1.9 / 3.4 +
			     1.875 * S / (0.92 * nvl.nvl_eff * nvl.nvlink_Bps),
			 1e-12);
	assert_rel_close(e.time_s, 921.415e-6, 1e-5);
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_REDUCE, S, (struct comm_group){16, 8}, 1.0, COMM_AUTO, &e), 0);
	assert_int_equal(e.algo, COMM_HIER);
	lat = 2 * 7 * hgx.nvlink_lat_s + 2 * hgx.net_lat_s;
	in_node = 1.75 * S / (hgx.nvl_eff * hgx.nvlink_Bps);
	across = (S / 8) / (hgx.net_eff * hw_net_Bps_per_gpu(&hgx));
	assert_true(in_node < across);
	assert_rel_close(e.time_s, hgx.coll_base_s + lat + across, 1e-12);
	assert_rel_close(e.time_s, 1108.16e-6, 1e-5);
	/* On the HGX profile a group of 16 cannot sit in one domain. */
	assert_int_equal(
	    comm_time(&hgx, GC_ALL_REDUCE, S, (struct comm_group){16, 16}, 1.0, COMM_AUTO, &e),
	    PRISM_EARG);
}

/*
 * A full mesh (AMD xGMI, node.fabric = "mesh"): 8 GPUs, a link of 64 GB/s
 * a peer per direction, 448 GB/s in all, at full bus bandwidth.  A ring
 * all-reduce over all 8 uses the 7 links: 2 (7/8) S / 448 GB/s; over 2
 * GPUs one link: 2 (1/2) S / 64 GB/s = S / 64 GB/s (a switch would give
 * S / 448 GB/s); over 4, 3 links: 1.5 S / 192 GB/s; a send to one peer,
 * one link.  ml-engineering's MI300X rows (collectives.csv): bus bandwidth
 * 47.7 GB/s over 2 GPUs and 312.9 over 8, 0.745 and 0.698 of these.
 */
static void test_mesh(void **state)
{
	const double S = 1024 * MiB;
	struct hw_profile hw = test_rack(8, 8);
	struct comm_est e;
	(void)state;
	hw.nvlink_Bps = 448e9;
	hw.mesh = 1;
	assert_int_equal(
	    comm_time(&hw, GC_ALL_REDUCE, S, (struct comm_group){8, 8}, 1.0, COMM_AUTO, &e), 0);
	assert_rel_close(e.time_s, 1.75 * S / 448e9, 1e-12);
	assert_int_equal(
	    comm_time(&hw, GC_ALL_REDUCE, S, (struct comm_group){2, 2}, 1.0, COMM_AUTO, &e), 0);
	assert_rel_close(e.time_s, S / 64e9, 1e-12);
	assert_int_equal(
	    comm_time(&hw, GC_ALL_REDUCE, S, (struct comm_group){4, 4}, 1.0, COMM_AUTO, &e), 0);
	assert_rel_close(e.time_s, 1.5 * S / 192e9, 1e-12);
	assert_int_equal(
	    comm_time(&hw, GC_SEND_RECV, S, (struct comm_group){2, 2}, 1.0, COMM_AUTO, &e), 0);
	assert_rel_close(e.time_s, S / 64e9, 1e-12);
	/* No NVLink SHARP on a mesh, whatever a profile says. */
	hw.nvls_eff = 0.9;
	assert_int_equal(
	    comm_time(&hw, GC_ALL_REDUCE, S, (struct comm_group){8, 8}, 1.0, COMM_AUTO, &e), 0);
	assert_int_equal(e.algo, COMM_RING);
	hw.mesh = 0; /* a switch: any pair at the full 448 */
	hw.nvls_eff = 0;
	assert_int_equal(
	    comm_time(&hw, GC_ALL_REDUCE, S, (struct comm_group){2, 2}, 1.0, COMM_AUTO, &e), 0);
	assert_rel_close(e.time_s, S / 448e9, 1e-12);
}

/* The analytic estimate places TP in the domain: TP 16 fits an NVL72 and
 * is refused on 8-GPU nodes with the message it always had. */
static void test_analytic_tp16(void **state)
{
	struct hw_profile nvl, hgx;
	struct analytic_in in;
	struct analytic_out out;
	struct prism_err err;
	(void)state;
	load("gb200-nvl72", &nvl);
	load("b200-dgx", &hgx);
	analytic_in_default(&in);
	in.m = (struct llm){
	    .layers = 32, .hidden = 4096, .heads = 32, .ffn = 16384, .seq = 2048, .vocab = 51200};
	in.global_batch = 8;
	in.lay.tp = 16;
	in.lay.dp = 4;
	in.hw = &nvl;
	prism_err_clear(&err);
	if (analytic_estimate(&in, &out, &err) != 0) {
		print_error("%s\n", err.msg);
		fail();
	}
	assert_true(out.t_iter > 0);
	/* Its tensor-parallel time: 4 all-reduces of b s h bf16 activations
	 * (1 x 2048 x 4096 x 2 B = 16 MiB) a layer, 32 layers, each the
	 * in-domain ring of comm_time: the forward's 2 whole, the backward's
	 * 2 (QKV's and FC1's input gradients) beside their weight gradients'
	 * GEMMs, which hide part of each (layer.c linear_bwd_g). */
	{
		struct comm_est e;
		assert_int_equal(comm_time(&nvl, GC_ALL_REDUCE, 16 * MiB,
					   (struct comm_group){16, 16}, 1.0, COMM_AUTO, &e),
				 0);
		assert_true(out.t_tp > 32 * 2 * e.time_s);
		assert_true(out.t_tp < 32 * 4 * e.time_s);
	}
	in.hw = &hgx;
	prism_err_clear(&err);
	assert_int_equal(analytic_estimate(&in, &out, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: tp 16 is beyond a node of 8 GPUs");
	in.hw = &nvl;
	in.lay.tp = 5;
	in.m.heads = 40;
	in.m.hidden = 40 * 128; /* refused for the domain before the shapes */
	prism_err_clear(&err);
	assert_int_equal(analytic_estimate(&in, &out, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: tp 5 groups do not tile an NVLink domain of 72 GPUs");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_new_profiles), cmocka_unit_test(test_domain_key),
	    cmocka_unit_test(test_group_fits),	 cmocka_unit_test(test_tp16_round),
	    cmocka_unit_test(test_nic_share),	 cmocka_unit_test(test_pxn),
	    cmocka_unit_test(test_ring_steps),	 cmocka_unit_test(test_tp16_profiles),
	    cmocka_unit_test(test_mesh),	 cmocka_unit_test(test_analytic_tp16),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
