/* usage.c - "did you mean" for mistyped options and names. */
#include "usage.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

#define WORD_MAX 64

/* Optimal-string-alignment distance between a and b (each < WORD_MAX
 * bytes): insertions, deletions, substitutions and swaps of neighbours. */
static int distance(const char *a, const char *b)
{
	int d[WORD_MAX + 1][WORD_MAX + 1];
	int na = (int)strlen(a), nb = (int)strlen(b);

	for (int i = 0; i <= na; i++)
		d[i][0] = i;
	for (int j = 0; j <= nb; j++)
		d[0][j] = j;
	for (int i = 1; i <= na; i++)
		for (int j = 1; j <= nb; j++) {
			int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]), v = sub;
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[na][nb];
}

int usage_closest(const char *w, const char *const *words, int n)
{
	size_t len = strlen(w);
	int best = -1, best_d = 0, limit = len / 3 > 1 ? (int)(len / 3) : 1;

	if (len == 0 || len >= WORD_MAX)
		return -1;
	for (int i = 0; i < n; i++) {
		int d;
		if (!words[i] || strlen(words[i]) >= WORD_MAX || strcmp(words[i], w) == 0)
			continue;
		/* A prefix counts as one edit: "--exh" for "--exhaustive". */
		d = len >= 2 && strncmp(words[i], w, len) == 0 ? 1 : distance(w, words[i]);
		if (d <= limit && (best < 0 || d < best_d)) {
			best = i;
			best_d = d;
		}
	}
	return best;
}

int usage_bad_option(const char *cmd, const char *shortopts, const struct option *longopts,
		     char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : NULL;
	const char *names[128];
	char word[WORD_MAX];
	const char *s;
	int n = 0, k;

	for (; longopts[n].name && n < 128; n++)
		names[n] = longopts[n].name;
	/* A known option without its value: getopt_long leaves its letter (or
	 * its long option's value) in optopt. */
	if (optopt && (s = strchr(shortopts, optopt)) && s[1] == ':') {
		fprintf(stderr, "prism %s: -%c needs a value (prism %s --help)\n", cmd, optopt,
			cmd);
		return EXIT_USAGE;
	}
	for (int i = 0; optopt && i < n; i++)
		if (longopts[i].val == optopt && longopts[i].has_arg == required_argument && arg &&
		    strncmp(arg, "--", 2) == 0) {
			fprintf(stderr, "prism %s: %s needs a value (prism %s --help)\n", cmd, arg,
				cmd);
			return EXIT_USAGE;
		}
	if (optopt) {
		fprintf(stderr, "prism %s: unknown option '-%c' (prism %s --help)\n", cmd, optopt,
			cmd);
		return EXIT_USAGE;
	}
	/* An unknown (or ambiguous) long option: argv[optind - 1]. */
	if (!arg || strncmp(arg, "--", 2) != 0) {
		fprintf(stderr, "prism %s: bad option (prism %s --help)\n", cmd, cmd);
		return EXIT_USAGE;
	}
	snprintf(word, sizeof(word), "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
	k = usage_closest(word, names, n);
	if (k >= 0)
		fprintf(stderr,
			"prism %s: unknown option '--%s'; did you mean --%s? (prism %s --help)\n",
			cmd, word, names[k], cmd);
	else
		fprintf(stderr, "prism %s: unknown option '--%s' (prism %s --help)\n", cmd, word,
			cmd);
	return EXIT_USAGE;
}
