/*
 * cli.h - the `prism` command: subcommand entry points and shared helpers.
 *
 * Only this layer prints and chooses exit statuses: 0 success, 1 a failed
 * run, 2 bad input or usage (the file, byte/event and field are named in
 * the one-line message on stderr).
 */
#ifndef PRISM_CLI_H
#define PRISM_CLI_H

#include <stdint.h>

#include "graph.h"
#include "prism.h"

#define PRISM_VERSION "0.1.0"

#define EXIT_USAGE 2

int cmd_ingest(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_collectives(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_whatif(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_list(int argc, char **argv);

/* Print "prism: MSG" for err and return the exit status for its code. */
int cli_fail(const struct prism_err *err);

/* A whole number in min..max for option --opt into *out; 0, or PRISM_EARG
 * naming the option and the range. */
int cli_count(const char *arg, const char *opt, int min, int max, int *out, struct prism_err *err);

/* A number in min..max for option --opt into *out; 0, or PRISM_EARG
 * naming the option and the range. */
int cli_number(const char *arg, const char *opt, double min, double max, double *out,
	       struct prism_err *err);

/* A non-negative number of microseconds (fractions allowed) into *ns;
 * 0, or PRISM_EARG naming the option. */
int cli_parse_us(const char *s, const char *opt, int64_t *ns, struct prism_err *err);

struct build_opts;

/* The options every command that builds a graph from traces takes; put
 * CLI_BUILD_LONGOPTS in its getopt_long table and hand each option to
 * cli_build_option() before its own. */
#define CLI_BUILD_LONGOPTS                                                                         \
	{"rank", required_argument, NULL, 'r'}, {"allow-dangling", no_argument, NULL, 'd'},        \
	    {"no-infer-events", no_argument, NULL, 'E'},                                           \
	    {"no-infer-sync", no_argument, NULL, 'S'},                                             \
	    {"no-infer-threads", no_argument, NULL, 'T'},                                          \
	    {"no-infer-share", no_argument, NULL, 'G'},                                            \
	    {"no-infer-layers", no_argument, NULL, 'Y'},                                           \
	{                                                                                          \
		"lag-cap", required_argument, NULL, 'L'                                            \
	}

/* 1 if c was a build option (applied to o, or *ranks set), 0 if not the
 * caller's to handle, negative with err filled for a bad value. */
int cli_build_option(int c, const char *arg, struct build_opts *o, const char **ranks,
		     struct prism_err *err);

/*
 * Load the job given on the command line: one saved graph file, or one or
 * more trace files (several files = the ranks of one job).  ranks, if not
 * NULL, is a comma-separated list giving each trace file's rank.
 */
int cli_load_graph(char **paths, int n, const char *ranks, const struct build_opts *o,
		   struct graph **out, struct prism_err *err);

/*
 * A configuration file named on the command line: a path, or a bare name
 * looked up as DIR/KIND/NAME[.cfg] for DIR in $PRISM_CONFIG_DIR, ./configs,
 * the installed share/prism/ and the source tree's configs/ (configs.h;
 * kind "hw", "models", "sweeps").  0 with out set, or -1.
 */
int cli_find_config(const char *kind, const char *name, char *out, size_t n);

/* The file of the hardware profile for the GPU a loaded trace names
 * (calib_profile_for) in path.  An error where the trace names no GPU or
 * no profile fits it, after "src: " where src is not NULL and ending with
 * hint (": give one with --hw") where that is not NULL. */
struct graph;
int cli_trace_hw_path(const struct graph *g, char *path, size_t n, const char *src,
		      const char *hint, struct prism_err *err);

/* Load a hardware profile or a model named as above; errors name the file
 * or say where it was looked for. */
struct hw_profile;
struct llm;
int cli_load_hw(const char *name, struct hw_profile *hw, struct prism_err *err);
int cli_load_model(const char *name, struct llm *m, struct prism_err *err);

/* A kernel database (kdb.h) from path into *out (kdb_free it). */
struct kdb;
int cli_load_kdb(const char *path, struct kdb **out, struct prism_err *err);

/*
 * The layout and shape options of synth and whatif.  Each given option is
 * applied to *in and its bit set in *given (CLI_SET_*), so a command can
 * tell an override from a default.
 */
struct synth_in;
enum {
	CLI_OPT_TP = 1000,
	CLI_OPT_PP,
	CLI_OPT_DP,
	CLI_OPT_VP,
	CLI_OPT_MBS,
	CLI_OPT_MICRO,
	CLI_OPT_SCHED,
	CLI_OPT_RECOMP,
	CLI_OPT_SP,
	CLI_OPT_ZERO,
	CLI_OPT_DTYPE,
	CLI_OPT_LAYERS,
	CLI_OPT_HIDDEN,
	CLI_OPT_HEADS,
	CLI_OPT_FFN,
	CLI_OPT_SEQ,
	CLI_OPT_STEPS,
	CLI_OPT_NOFLASH,
	CLI_OPT_GBS,
	CLI_OPT_FP8ATTN,
	CLI_OPT_PARTITION,
	CLI_OPT_SHARD,
	CLI_OPT_PREFETCH,
	CLI_OPT_BUCKET,
	CLI_OPT_NO_OVERLAP_GRAD,
	CLI_OPT_OVERLAP_PARAM,
	CLI_OPT_TP_OVERLAP,
	CLI_OPT_NO_PP_OVERLAP,
	CLI_OPT_EP,
	CLI_OPT_ETP,
	CLI_OPT_IMBALANCE,
	CLI_OPT_CP,
	CLI_OPT_CP_ALLGATHER,
	CLI_OPT_NOPT
};
/* A bit of a uint64_t for each option given. */
_Static_assert(CLI_OPT_NOPT - CLI_OPT_TP <= 64, "layout options beyond the given mask");
#define CLI_SET(opt) (UINT64_C(1) << ((opt)-CLI_OPT_TP))
#define CLI_LAYOUT_LONGOPTS                                                                        \
	{"tp", required_argument, NULL, CLI_OPT_TP}, {"pp", required_argument, NULL, CLI_OPT_PP},  \
	    {"dp", required_argument, NULL, CLI_OPT_DP},                                           \
	    {"vp", required_argument, NULL, CLI_OPT_VP},                                           \
	    {"mbs", required_argument, NULL, CLI_OPT_MBS},                                         \
	    {"microbatches", required_argument, NULL, CLI_OPT_MICRO},                              \
	    {"schedule", required_argument, NULL, CLI_OPT_SCHED},                                  \
	    {"recompute", required_argument, NULL, CLI_OPT_RECOMP},                                \
	    {"sp", no_argument, NULL, CLI_OPT_SP},                                                 \
	    {"zero", required_argument, NULL, CLI_OPT_ZERO},                                       \
	    {"dtype", required_argument, NULL, CLI_OPT_DTYPE},                                     \
	    {"layers", required_argument, NULL, CLI_OPT_LAYERS},                                   \
	    {"hidden", required_argument, NULL, CLI_OPT_HIDDEN},                                   \
	    {"heads", required_argument, NULL, CLI_OPT_HEADS},                                     \
	    {"ffn", required_argument, NULL, CLI_OPT_FFN},                                         \
	    {"seq", required_argument, NULL, CLI_OPT_SEQ},                                         \
	    {"steps", required_argument, NULL, CLI_OPT_STEPS},                                     \
	    {"no-flash", no_argument, NULL, CLI_OPT_NOFLASH},                                      \
	    {"gbs", required_argument, NULL, CLI_OPT_GBS},                                         \
	    {"fp8-attention", no_argument, NULL, CLI_OPT_FP8ATTN},                                 \
	    {"partition", required_argument, NULL, CLI_OPT_PARTITION},                             \
	    {"shard", required_argument, NULL, CLI_OPT_SHARD},                                     \
	    {"prefetch", required_argument, NULL, CLI_OPT_PREFETCH},                               \
	    {"bucket-mb", required_argument, NULL, CLI_OPT_BUCKET},                                \
	    {"no-overlap-grad", no_argument, NULL, CLI_OPT_NO_OVERLAP_GRAD},                       \
	    {"overlap-param", no_argument, NULL, CLI_OPT_OVERLAP_PARAM},                           \
	    {"tp-overlap", no_argument, NULL, CLI_OPT_TP_OVERLAP},                                 \
	    {"no-pp-overlap", no_argument, NULL, CLI_OPT_NO_PP_OVERLAP},                           \
	    {"ep", required_argument, NULL, CLI_OPT_EP},                                           \
	    {"etp", required_argument, NULL, CLI_OPT_ETP},                                         \
	    {"cp", required_argument, NULL, CLI_OPT_CP},                                           \
	    {"cp-allgather", no_argument, NULL, CLI_OPT_CP_ALLGATHER},                             \
	{                                                                                          \
		"moe-imbalance", required_argument, NULL, CLI_OPT_IMBALANCE                        \
	}

/* The help text of those options. */
extern const char cli_layout_help[];

/* 1 if c was a layout option (applied), 0 if not, negative with err set. */
int cli_layout_option(int c, const char *arg, struct synth_in *in, uint64_t *given,
		      struct prism_err *err);

/* TRACE.json -> TRACE.rankR.json when ranks > 1 (else the path);
 * TRACE.json.gz -> TRACE.rankR.json.gz. */
void cli_rank_path(const char *path, int rank, int ranks, char *out, size_t n);

/* Write a synthesised graph as Kineto traces, one per rank (cli_rank_path),
 * none of them over one of the n_in input files in (cli_not_input). */
struct synth_out;
int cli_write_trace(const struct graph *g, const struct synth_out *so, const char *path,
		    char *const *in, int n_in, struct prism_err *err);

/* 0 when writing the file out (given with option opt) would overwrite none
 * of the n input files in (the same file: device and inode); else
 * PRISM_EARG naming both.  Call it before the work, so a refused run has
 * written nothing. */
int cli_not_input(const char *out, const char *opt, char *const *in, int n, struct prism_err *err);

/* Apply to *dst every option set in `given` from *src. */
int cli_layout_apply(const struct synth_in *src, uint64_t given, struct synth_in *dst,
		     struct prism_err *err);

#endif
