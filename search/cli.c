/* cli.c - helpers shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "kineto.h"

int cli_fail(const struct prism_err *err)
{
	fprintf(stderr, "prism: %s\n", err->msg[0] ? err->msg : prism_status_msg(err->code));
	return err->code == PRISM_EFORMAT || err->code == PRISM_EVERSION ||
			       err->code == PRISM_EARG || err->code == PRISM_EIO
		       ? EXIT_USAGE
		       : 1;
}

int cli_parse_us(const char *s, const char *opt, int64_t *ns, struct prism_err *err)
{
	char *end;
	double v;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || v < 0 || v > 9e12)
		return prism_err_set(err, PRISM_EARG,
				     "%s '%s': expected a number of microseconds >= 0", opt, s);
	*ns = (int64_t)(v * 1000.0 + 0.5);
	return 0;
}

int cli_build_option(int c, const char *arg, struct build_opts *o, const char **ranks,
		     struct prism_err *err)
{
	switch (c) {
	case 'r':
		*ranks = arg;
		return 1;
	case 'd':
		o->allow_dangling = 1;
		return 1;
	case 'E':
		o->infer_events = 0;
		return 1;
	case 'S':
		o->infer_sync = 0;
		return 1;
	case 'T':
		o->infer_threads = 0;
		return 1;
	case 'L':
		return cli_parse_us(arg, "--lag-cap", &o->lag_cap_ns, err) ? PRISM_EARG : 1;
	}
	return 0;
}

static int parse_ranks(const char *s, int n, struct kineto_trace *tr, struct prism_err *err)
{
	const char *p = s;
	for (int i = 0; i < n; i++) {
		char *end;
		long long r;
		errno = 0;
		r = strtoll(p, &end, 10);
		if (end == p || errno || r < 0 || (*end != ',' && *end != '\0'))
			return prism_err_set(err, PRISM_EARG,
					     "--rank '%s': expected %d comma-separated ranks, one "
					     "per trace file",
					     s, n);
		tr[i].has_rank = 1;
		tr[i].rank = r;
		p = *end ? end + 1 : end;
		if (i + 1 < n && *end == '\0')
			return prism_err_set(err, PRISM_EARG, "--rank '%s': %d ranks for %d files", s,
					     i + 1, n);
	}
	if (*p)
		return prism_err_set(err, PRISM_EARG, "--rank '%s': more ranks than the %d files", s,
				     n);
	return 0;
}

int cli_load_graph(char **paths, int n, const char *ranks, const struct build_opts *o,
		   struct graph **out, struct prism_err *err)
{
	struct kineto_trace *tr;
	struct strtab st;
	int rc = 0, nread = 0;

	*out = NULL;
	if (n == 1 && graph_file_is(paths[0]))
		return graph_load(paths[0], out, err);
	for (int i = 0; i < n; i++)
		if (graph_file_is(paths[i]))
			return prism_err_set(err, PRISM_EARG,
					     "%s: a saved graph cannot be mixed with other inputs",
					     paths[i]);
	tr = calloc((size_t)n, sizeof(*tr));
	if (!tr || strtab_init(&st)) {
		free(tr);
		return prism_err_set(err, PRISM_ENOMEM, "out of memory");
	}
	for (; nread < n && rc == 0; nread++)
		rc = kineto_read(paths[nread], &st, &tr[nread], err);
	if (rc == 0 && ranks)
		rc = parse_ranks(ranks, n, tr, err);
	if (rc == 0)
		rc = build_graph(tr, (size_t)n, &st, o, out, err);
	for (int i = 0; i < nread; i++)
		kineto_release(&tr[i]);
	free(tr);
	strtab_release(&st);
	return rc;
}
