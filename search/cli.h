/*
 * cli.h - the `prism` command: subcommand entry points and shared helpers.
 *
 * Only this layer prints and chooses exit statuses: 0 success, 1 a failed
 * run, 2 bad input or usage (the file, byte/event and field are named in
 * the one-line message on stderr).
 */
#ifndef PRISM_CLI_H
#define PRISM_CLI_H

#include "graph.h"
#include "prism.h"

#define PRISM_VERSION "0.1.0"

#define EXIT_USAGE 2

int cmd_ingest(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

/* Print "prism: MSG" for err and return the exit status for its code. */
int cli_fail(const struct prism_err *err);

/*
 * Load the job given on the command line: one saved graph file, or one or
 * more trace files (several files = the ranks of one job).  ranks, if not
 * NULL, is a comma-separated list giving each trace file's rank.
 */
/* A non-negative number of microseconds (fractions allowed) into *ns;
 * 0, or PRISM_EARG naming the option. */
int cli_parse_us(const char *s, const char *opt, int64_t *ns, struct prism_err *err);

struct build_opts;

/* The options every command that builds a graph from traces takes; put
 * CLI_BUILD_LONGOPTS in its getopt_long table and hand each option to
 * cli_build_option() before its own. */
#define CLI_BUILD_LONGOPTS                                              \
	{"rank", required_argument, NULL, 'r'},                        \
	{"allow-dangling", no_argument, NULL, 'd'},                    \
	{"no-infer-events", no_argument, NULL, 'E'},                   \
	{"no-infer-sync", no_argument, NULL, 'S'},                     \
	{"no-infer-threads", no_argument, NULL, 'T'},                  \
	{"lag-cap", required_argument, NULL, 'L'}

/* 1 if c was a build option (applied to o, or *ranks set), 0 if not the
 * caller's to handle, negative with err filled for a bad value. */
int cli_build_option(int c, const char *arg, struct build_opts *o, const char **ranks,
		     struct prism_err *err);

int cli_load_graph(char **paths, int n, const char *ranks, const struct build_opts *o,
		   struct graph **out, struct prism_err *err);

#endif
