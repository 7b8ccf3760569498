/* base.c - the base of whatif and search, from the command line. */
#include "base.h"

#include <string.h>
#include <unistd.h>

#include "calib.h"
#include "cli.h"
#include "frame.h"
#include "synth.h"

int base_is_model(const char *arg)
{
	size_t n = strlen(arg);
	char path[1024];
	if (n > 4 && strcmp(arg + n - 4, ".cfg") == 0)
		return 1;
	/* a Hugging Face config.json or a Megatron-LM argument list */
	if (frame_sniff(arg) != FRAME_FILE_CFG)
		return 1;
	return !strchr(arg, '/') && cli_find_config("models", arg, path, sizeof(path), NULL) == 0 &&
	       strcmp(path, arg) != 0;
}

void base_release(struct base *b)
{
	graph_free(b->g);
	b->g = NULL;
}

/* A trace's base from its loaded graph b->g (annotated or plain). */
static int trace_base(struct base *b, char *const *paths, const struct base_opts *o,
		      struct synth_in *in, struct prism_err *err)
{
	struct hw_profile hw;
	char found[1024];
	int rc;

	if (b->g->meta) {
		/* An annotated run: its description gives the configuration;
		 * a profile it names by a relative file is the trace's
		 * folder's (prism synth --hw FILE). */
		const char *hw_name;
		char beside[1200];
		if ((rc = synth_meta_parse(strtab_get(&b->g->st, b->g->meta), in, err)))
			return rc;
		hw_name = o->base_hw ? o->base_hw : in->hw_id;
		if (!o->base_hw && in->hw_id[0] != '/' && strstr(in->hw_id, ".cfg")) {
			const char *slash = strrchr(paths[0], '/');
			/* A path cut short would name another file. */
			if ((size_t)snprintf(beside, sizeof(beside), "%.*s%s%s",
					     slash ? (int)(slash - paths[0]) : 1,
					     slash ? paths[0] : ".", "/",
					     in->hw_id) < sizeof(beside) &&
			    access(beside, R_OK) == 0)
				hw_name = beside;
		}
		if ((rc = cli_load_hw(hw_name, &hw, err)))
			return rc;
		in->hw = &hw;
		in->kdb = o->kdb;
		return predict_base_init(&b->pb, PB_ANNOTATED, b->g, in, &hw, 0, err);
	}
	/* A plain trace: the profile of its GPU, unless named; a trace that
	 * names no GPU ran on the candidate's hardware. */
	if (!o->base_hw && o->hw && b->g->n_ranks &&
	    !strtab_get(&b->g->st, b->g->ranks[0].device)[0]) {
		rc = cli_load_hw(o->hw, &hw, err);
	} else if (!o->base_hw) {
		if ((rc = cli_trace_hw_path(b->g, found, sizeof(found), NULL,
					    ": give one with --base-hw", err)))
			return rc;
		rc = cli_load_hw(found, &hw, err);
	} else {
		rc = cli_load_hw(o->base_hw, &hw, err);
	}
	if (rc)
		return rc;
	return predict_base_init(&b->pb, PB_TRACE, b->g, NULL, &hw, o->base_dp, err);
}

static const char *step_name(const struct base_opts *o)
{
	return o->step_name ? o->step_name : "--base-step-ms";
}

int base_load(struct base *b, char *const *paths, int n, const struct base_opts *o,
	      struct prism_err *err)
{
	struct hw_profile hw;
	struct synth_in in;
	double scale = 1, traced = 0;
	int rc;

	memset(b, 0, sizeof(*b));
	synth_in_default(&in);
	in.kdb = o->kdb;
	in.units = 1; /* candidates simulated, not kept, fold their units */
	if (n == 1 && base_is_model(paths[0])) {
		const char *hw_name = o->base_hw ? o->base_hw : o->hw;
		if (!hw_name)
			return prism_err_set(err, PRISM_EARG, "a model base needs --hw");
		if (o->base_step_s > 0)
			return prism_err_set(err, PRISM_EARG,
					     "%s: the base is a model, whose host is "
					     "synthesised; it applies to a trace",
					     step_name(o));
		if ((rc = cli_load_model(paths[0], &in.m, err)) ||
		    (rc = cli_load_hw(hw_name, &hw, err)))
			return rc;
		if (cli_find_config("models", paths[0], b->model_path, sizeof(b->model_path), NULL))
			b->model_path[0] = '\0';
		in.hw = &hw;
		return predict_base_init(&b->pb, PB_MODEL, NULL, &in, &hw, 0, err);
	}
	if ((rc = cli_load_graph((char **)paths, n, o->ranks, o->bo, &b->g, err)))
		return rc;
	/* The host as it ran without the profiler, before anything is fitted
	 * on it or replayed. */
	if (o->base_step_s > 0 &&
	    (rc = predict_match_step(b->g, o->base_step_s, &scale, &traced, err))) {
		prism_err_prefix(err, "%s %.3f", step_name(o), o->base_step_s * 1e3);
		return rc;
	}
	if ((rc = trace_base(b, paths, o, &in, err)))
		return rc;
	b->pb.host_scale = scale;
	b->pb.host_traced_s = traced; /* 0 unless scaled */
	return 0;
}
