/*
 * usage.h - one-line answers to a mistyped command line: an unknown option,
 * a missing value, an unknown name, each with a "did you mean" guess where
 * one is close, instead of the whole help text.
 */
#ifndef PRISM_USAGE_H
#define PRISM_USAGE_H

#include <getopt.h>
#include <stddef.h>

/* Of the n words in words, the one closest to w: edit distance (insert,
 * delete, substitute, swap two neighbours) at most max(1, strlen(w) / 3),
 * or w a prefix of it (at least 2 bytes), ties to the first.  Its index,
 * or -1 when none is close. */
int usage_closest(const char *w, const char *const *words, int n);

/*
 * After getopt_long returned '?' (main sets opterr = 0, so getopt itself
 * prints nothing): print on stderr one line naming what was wrong -- an
 * unknown option with the closest of longopts as "did you mean", or an
 * option missing its value -- and where the help is: "prism CMD: unknown
 * option '--tpp'; did you mean --tp? (prism CMD --help)".  Reads optind,
 * optopt and argv as getopt_long left them; shortopts is the string given
 * to it.  Returns the exit status for usage errors (2).
 */
int usage_bad_option(const char *cmd, const char *shortopts, const struct option *longopts,
		     char **argv);

#endif
