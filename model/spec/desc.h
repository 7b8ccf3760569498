/*
 * desc.h - the run description: what a trace's run was, in one string
 * ("prism::model#name=gpt;layers=24;...;tp=2;pp=4;..."), written as a
 * range's name into the traces prism synth writes and by the collection
 * hook (scripts/collect_trace.py), read back by whatif and search so that
 * a trace can be rebuilt or edited as the run it is.
 *
 * Fields are KEY=VALUE separated by ';': the model's shape (name, layers,
 * hidden, heads, kv_heads, ffn, activation, seq, vocab, untied, rope, and
 * with experts: experts, top_k, shared_experts, expert_ffn, first_dense,
 * capacity_factor, router), the hardware profile (hw), and every knob of
 * layout.h under its id (part: the layers of each stage, where uneven).
 * The knobs of the first descriptions keep their places there; a knob
 * added later is written after them, only where it is not its default, so
 * that what older descriptions said reads the same.  Unknown keys are
 * skipped (a newer writer's), so a description is read by any prism.
 */
#ifndef PRISM_DESC_H
#define PRISM_DESC_H

#include <stddef.h>

#include "layout.h"
#include "llm.h"
#include "prism.h"

#define DESC_PREFIX "prism::model#"

/* The description of model m laid out as l (its partition resolved: part[]
 * as placed, or part[0] = 0 for even stages) on hardware hw_id ("?" when
 * NULL or ""), into buf of n bytes (cut at n). */
void desc_write(const struct llm *m, const struct layout *l, const char *hw_id, char *buf,
		size_t n);

/* Read a description into m, l and hw_id (n bytes; the profile named);
 * fields it does not hold are left alone.  0, or PRISM_EFORMAT naming the
 * field: "model description: field 'pp' must be in 1..256, not 0", a
 * count that is not a whole number, an unknown name, a partition that is
 * not a list. */
int desc_parse(const char *s, struct llm *m, struct layout *l, char *hw_id, size_t n,
	       struct prism_err *err);

#endif
