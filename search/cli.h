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
#include "synth.h"

#define PRISM_VERSION "0.1.0"

/* The version with the commit it was built from: "0.1.0 (git
 * 6e15fdaa8c1b)", "-dirty" after the hash where the checkout held
 * uncommitted changes, or "0.1.0 (no git: built outside a git checkout)".
 * What `prism --version` prints and a sweep records (sweep.h). */
const char *cli_version(void);

#define EXIT_USAGE 2

int cmd_ingest(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_collectives(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_describe(int argc, char **argv);
int cmd_whatif(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_list(int argc, char **argv);

/* Print "prism: MSG" for err and return the exit status for its code. */
int cli_fail(const struct prism_err *err);

/* The rows a measurement reader left out, as JSON members:
 * "rows_placed":N,"left_out":N,"left_out_why":{"why":N,...} (kernels
 * --json, collectives --json). */
struct kbench_skips;
void cli_put_skips_json(FILE *f, size_t placed, const struct kbench_skips *s);

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
 * kind "hw", "models", "sweeps"), then as NAME in the working directory.
 * Names are probed with stat, never opened: the first regular file wins
 * (folders and paths too long for out are passed over).  0 with out set
 * (n bytes); 1 when nothing is found; or PRISM_EARG with err set (err may
 * be NULL) when the file found is a FIFO, a device or a socket (opening it
 * could block for ever), or a path given does not fit in out.
 */
int cli_find_config(const char *kind, const char *name, char *out, size_t n, struct prism_err *err);

/* cli_find_config, with what is not found an error: "NAME: no such file,
 * nor configs/KIND/NAME.cfg; did you mean ...? (prism list KIND)"
 * (PRISM_EIO).  0, or the error's code. */
int cli_config_path(const char *kind, const char *name, char *path, size_t n,
		    struct prism_err *err);

/* 0 unless path names a FIFO, a device or a socket (prism_special_file),
 * which opening by name could block on: then PRISM_EARG "PATH: not a
 * regular file (a FIFO)". */
int cli_not_special(const char *path, struct prism_err *err);

/* PRISM_EARG for a path given for what (an option such as "-o", a kind of
 * file) longer than max bytes, the most prism's buffers hold: "-o
 * PATH...: too long a path (N bytes; at most MAX)".  Returns the code. */
int cli_path_long(const char *what, const char *path, size_t max, struct prism_err *err);

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
 * The layout and shape options of synth and whatif: one for each knob of
 * layout.h that has an option (--tp, --zero, --no-flash, ...), with its
 * range and help from the knob list, and --gbs (the global batch in
 * sequences: microbatches = gbs / (mbs x dp)) and --steps.  Each given
 * option is kept in a cli_layout, so a command can tell an override from a
 * default, and applied to the run once its base is known.
 */
struct cli_layout {
	struct synth_in in; /* the values given (the others: synth_in_default's) */
	layout_mask given;  /* the knobs given */
	int gbs;	    /* --gbs, 0 when not given */
	int steps;	    /* --steps, 0 when not given */
};

/* getopt_long's value of knob k's option, and of --gbs and --steps. */
#define CLI_OPT_KNOB  1000
#define CLI_OPT_GBS   (CLI_OPT_KNOB + LK_N)
#define CLI_OPT_STEPS (CLI_OPT_GBS + 1)
/* --megatron-args FILE: the layout (and the model's shape) of a Megatron-LM
 * argument list (frame.h), as if each were given as its option. */
#define CLI_OPT_MEGATRON (CLI_OPT_STEPS + 1)
/* Options cli_longopts adds at most. */
#define CLI_LAYOUT_NOPTS (LK_N + 3)

struct option;
/* own (ended by a zeroed entry) then the layout options, ended by a zeroed
 * entry, into out, which holds cap entries (cap >= own's + CLI_LAYOUT_NOPTS
 * + 1). */
void cli_longopts(const struct option *own, struct option *out, size_t cap);

void cli_layout_init(struct cli_layout *o);

/* 1 if c was a layout option (kept in o), 0 if not, negative with err
 * set (the option, its value and what it expected). */
int cli_layout_option(int c, const char *arg, struct cli_layout *o, struct prism_err *err);

/* Apply to *dst every option o holds: 0, or PRISM_EARG (--gbs not a
 * multiple of mbs x dp). */
int cli_layout_apply(const struct cli_layout *o, struct synth_in *dst, struct prism_err *err);

/* text to f wrapped at 80 columns, the first line starting at column at
 * (where the cursor is), the others indented to col; ends with a newline. */
void cli_wrap(FILE *f, const char *text, int at, int col);

/* The help of those options, to f. */
void cli_layout_help(FILE *f);

/*
 * What the getopt loops of the commands share: the build options
 * (CLI_BUILD_LONGOPTS) and the layout options where the command takes
 * them, --help, a mistyped option, and the operand every command wants
 * after its options.  A command sets one up with cli_parse_init and calls
 * cli_next_option until it returns below 0:
 *
 *	cli_parse_init(&p, "replay", help, "r:h", longopts, &bo, &ranks,
 *		       "no trace given");
 *	while ((c = cli_next_option(&p, argc, argv, &err)) >= 0)
 *		switch (c) { ...the command's own options... }
 *	if (c == CLI_PARSE_EXIT)
 *		return p.status;
 */
struct cli_parse {
	const char *cmd;	       /* "replay", for messages */
	const char *help;	       /* --help's text (the layout options' after it) */
	const char *help_more;	       /* help's second part (C99 caps one literal at
					* 4,095 characters); NULL: none */
	const char *shortopts;	       /* getopt_long's */
	const struct option *longopts; /* getopt_long's, the shared ones included */
	struct build_opts *bo;	       /* the build options into bo and *ranks; NULL: none */
	const char **ranks;
	struct cli_layout *lay; /* the layout options kept in lay; NULL: none */
	const char *none;	/* said when no operand follows the options ("no trace
				 * given"), with the help; NULL: none is needed */
	int status;		/* after CLI_PARSE_EXIT: the command's exit status */
};

#define CLI_PARSE_EXIT (-2)

/* p for command cmd, as its fields say (lay and help_more NULL: set them
 * after); getopt starts over (optind = 1). */
void cli_parse_init(struct cli_parse *p, const char *cmd, const char *help, const char *shortopts,
		    const struct option *longopts, struct build_opts *bo, const char **ranks,
		    const char *none);

/* The next of the command's own options (getopt_long's value; optarg
 * set); -1 after the last option; or CLI_PARSE_EXIT with p->status set:
 * 0 after printing the help for --help, EXIT_USAGE after saying what was
 * wrong on stderr (usage_bad_option, or no operand: "prism CMD: NONE" and
 * the help), cli_fail's status for a bad value of a shared option. */
int cli_next_option(struct cli_parse *p, int argc, char **argv, struct prism_err *err);

/* 1, after saying so on stderr, when an output given with option opt is
 * "-" and other (an option such as "--json", or NULL) writes standard
 * output too: "prism: --timeline - and --json would share standard output:
 * give --timeline FILE"; else 0.  An opt ending in '=' (an optional value:
 * "--csv-all=") is written joined to its value: "--csv-all=- ...: give
 * --csv-all=FILE". */
int cli_stdout_shared(const char *path, const char *opt, const char *other);

/* 1 when an output path is "-": standard output (prism_wfile_open). */
int cli_is_stdout(const char *path);

/* '-' where a file is read (a model, a sweep, a hardware profile, a
 * trace): standard input, copied once into a new temporary file (removed
 * at exit) whose path is returned, so that readers which look at a file
 * twice (by its content, then parse it) need not know.  NULL with err set
 * when standard input is a terminal or cannot be copied.  Every '-' of a
 * command reads the same copy. */
const char *cli_stdin_file(struct prism_err *err);

/* Standard output has taken a file (-o -): what the command prints from
 * here on goes to stderr, so the file's bytes stay apart. */
void cli_stdout_taken(void);

/* The longest path prism builds from one given (a rank's file from -o). */
#define CLI_PATH_MAX 1024

/* TRACE.json -> TRACE.rankR.json when ranks > 1 (else the path);
 * TRACE.json.gz -> TRACE.rankR.json.gz, into out (n bytes).  0, or
 * PRISM_EARG naming option opt when it does not fit (a path cut short
 * would name another file). */
int cli_rank_path(const char *path, const char *opt, int rank, int ranks, char *out, size_t n,
		  struct prism_err *err);

/* Write a synthesised graph as Kineto traces, one per rank (cli_rank_path
 * of path, given with option opt), none of them over one of the n_in input
 * files in (cli_not_input).  Several ranks' files are written as a set:
 * each into a new hidden file beside it first, all renamed at the end, so
 * that a run that fails or is killed midway leaves the previous set as it
 * was (a kill may leave hidden ".NAME.partPID.K" files behind). */
struct synth_out;
int cli_write_trace(const struct graph *g, const struct synth_out *so, const char *path,
		    const char *opt, char *const *in, int n_in, struct prism_err *err);

/* 0 when writing the file out (given with option opt) would overwrite none
 * of the n input files in (the same file: device and inode); else
 * PRISM_EARG naming both.  Call it before the work, so a refused run has
 * written nothing. */
int cli_not_input(const char *out, const char *opt, char *const *in, int n, struct prism_err *err);

#endif
