/*
 * show.h - printing one prediction (synth, whatif), as text or JSON.
 */
#ifndef PRISM_SHOW_H
#define PRISM_SHOW_H

#include <stdio.h>

#include "predict.h"

/* The layout in one line: "tp 1 pp 2 dp 8 vp 1, mbs 1 x 4 microbatches, 1f1b, ..." */
void show_layout(FILE *f, const struct synth_in *in);

/* The prediction: iteration time, bubble, tokens/s, MFU, memory verdict. */
void show_prediction(FILE *f, const struct synth_in *in, const struct predict_out *p);

/* The same as the members of a JSON object (no braces), for --json. */
void show_prediction_json(FILE *f, const struct synth_in *in, const struct predict_out *p);

#endif
