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
int cli_load_graph(char **paths, int n, const char *ranks, const struct build_opts *o,
		   struct graph **out, struct prism_err *err);

#endif
