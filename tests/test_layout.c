/* test_layout.c - the knob list (layout.h) and the run description (desc.h). */
#include <limits.h>
#include <string.h>

#include "desc.h"
#include "hw.h"
#include "layout.h"
#include "fixtures.h"
#include "testutil.h"

/* Every row is whole: an id that names its field, a range holding its
 * default, an option with help, the first sweeps' digits (vp shares the
 * schedule's) and the first descriptions' places taken once each. */
static void test_rows(void **state)
{
	int digit[64] = {0}, desc[1000] = {0};
	(void)state;
	for (int k = 0; k < LK_N; k++) {
		const struct layout_knob *K = &layout_knobs[k];
		assert_int_equal(layout_knob_find(K->id), k);
		assert_true(K->lo <= K->hi);
		if (K->home == LK_L) {
			assert_true(K->def >= K->lo && K->def <= K->hi);
			assert_true(K->off + sizeof(int) <= sizeof(struct layout));
		} else {
			assert_true(K->off + sizeof(int) <= sizeof(struct llm));
		}
		assert_non_null(K->help);
		if (K->opt)
			assert_int_equal(layout_knob_by_opt(K->opt), k);
		assert_true(K->kind != LK_NAME || (K->parse && K->name));
		/* The first sweeps' digits once each (a knob added later
		 * varies slowest, digit 0). */
		if ((K->flags & LK_SWEEP) && K->digit && k != LK_vp) {
			assert_true(K->digit < 64);
			assert_int_equal(digit[K->digit]++, 0);
		}
		if (K->desc > 0)
			assert_int_equal(desc[K->desc]++, 0);
	}
	assert_int_equal(layout_knob_find("nonesuch"), -1);
}

/* layout_default is every row's default, and a valid layout's ranges. */
/* --heads on a model: one whose every head has its own keys and values
 * (stored as kv_heads 0, llm_kv_settle) keeps that; a grouped one keeps
 * its groups.  Both as their model files load them, and back from their
 * descriptions (which write the heads out: kv_heads=16, not 0). */
static void test_set_heads(void **state)
{
	struct llm m, back;
	struct layout l, lb;
	struct prism_err err;
	char s[2048], hw[64];
	(void)state;
	prism_err_clear(&err);
	layout_default(&l);
	/* GPT-3 1.3B: 16 heads, no kv_heads in its file */
	assert_int_equal(llm_load(PRISM_SOURCE_DIR "/configs/models/gpt3-1.3b.cfg", &m, &err), 0);
	assert_int_equal(m.heads, 16);
	assert_int_equal(m.kv_heads, 0);
	assert_int_equal(llm_kv_heads(&m), 16);
	layout_set(&m, &l, LK_heads, 32);
	assert_int_equal(m.heads, 32);
	assert_int_equal(m.kv_heads, 0);
	assert_int_equal(llm_kv_heads(&m), 32);
	assert_true(llm_qkv_width(&m) == 3.0 * m.hidden); /* q, k, v each h wide */
	desc_write(&m, &l, "h100-dgx", s, sizeof(s));
	assert_non_null(strstr(s, ";heads=32;kv_heads=32;"));
	memset(&back, 0, sizeof(back));
	layout_default(&lb);
	assert_int_equal(desc_parse(s, &back, &lb, hw, sizeof(hw), &err), 0);
	assert_memory_equal(&back, &m, sizeof(m));
	/* Llama 3 8B: 32 heads in 8 groups */
	assert_int_equal(llm_load(PRISM_SOURCE_DIR "/configs/models/llama3-8b.cfg", &m, &err), 0);
	assert_int_equal(m.kv_heads, 8);
	layout_set(&m, &l, LK_heads, 64);
	assert_int_equal(m.heads, 64);
	assert_int_equal(llm_kv_heads(&m), 8);
	desc_write(&m, &l, "h100-dgx", s, sizeof(s));
	assert_non_null(strstr(s, ";heads=64;kv_heads=8;"));
	memset(&back, 0, sizeof(back));
	assert_int_equal(desc_parse(s, &back, &lb, hw, sizeof(hw), &err), 0);
	assert_memory_equal(&back, &m, sizeof(m));
	/* A description of kv_heads equal to heads, or 0 (as in-code models
	 * wrote it), reads as the one form. */
	memset(&back, 0, sizeof(back));
	assert_int_equal(
	    desc_parse("prism::model#heads=8;kv_heads=8", &back, &lb, hw, sizeof(hw), &err), 0);
	assert_int_equal(back.kv_heads, 0);
	assert_int_equal(
	    desc_parse("prism::model#heads=8;kv_heads=0", &back, &lb, hw, sizeof(hw), &err), 0);
	assert_int_equal(back.kv_heads, 0);
	assert_int_equal(llm_kv_heads(&back), 8);
}

static void test_default(void **state)
{
	struct layout l;
	struct llm m = fixture_small_gpt();
	struct prism_err err;
	(void)state;
	layout_default(&l);
	assert_int_equal(l.tp, 1);
	assert_int_equal(l.schedule, LAYOUT_1F1B);
	assert_int_equal(l.dtype, HW_BF16);
	assert_int_equal(l.flash, 1);
	assert_int_equal(l.prefetch, 1);
	assert_int_equal(l.overlap_grad, 1);
	assert_int_equal(l.pp_overlap, 1);
	assert_int_equal(l.zero, 0);
	assert_true(l.imbalance == 1);
	prism_err_clear(&err);
	assert_int_equal(layout_check_ranges(&m, &l, &err), 0);
	l.zero = 4;
	assert_int_equal(layout_check_ranges(&m, &l, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: zero 4 is not in 0..3");
	l.zero = 0;
	prism_err_clear(&err);
	l.ep = 0; /* reads as 1 */
	assert_int_equal(layout_check_ranges(&m, &l, &err), 0);
	assert_true(layout_get(&m, &l, LK_ep, 1) == 1);
	assert_true(layout_get(&m, &l, LK_ep, 0) == 0);
	m.layers = 0;
	prism_err_clear(&err);
	assert_int_equal(layout_check_ranges(&m, &l, &err), PRISM_EARG);
	assert_string_equal(err.msg, "model: layers 0 is not in 1..65536");
}

/* The key of a candidate: the first sweeps' format, written out by hand
 * (stored sweeps resume on these), groups only where changed. */
/* A knob's value as text, cut to every buffer size as snprintf cuts it:
 * layout_format and layout_format_shown write numbers and names without
 * snprintf's format parsing, and must write what it wrote. */
static void test_format_cut(void **state)
{
	static const int ints[] = {0,	 1,	    9,	10,  99,      100,
				   4096, 123456789, -1, -42, INT_MAX, INT_MIN};
	struct layout l;
	struct llm m = {.layers = 24, .hidden = 2048, .heads = 16, .ffn = 8192, .seq = 2048};
	char buf[24], ref[24];
	(void)state;
	layout_default(&l);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		for (size_t n = 1; n <= sizeof(buf); n++) {
			l.microbatches = ints[i];
			snprintf(ref, n, "%d", ints[i]);
			memset(buf, 'x', sizeof(buf));
			layout_format(&m, &l, LK_microbatches, 0, buf, n);
			assert_string_equal(buf, ref);
			memset(buf, 'x', sizeof(buf));
			layout_format_shown(&m, &l, LK_microbatches, buf, n);
			assert_string_equal(buf, ref);
		}
	layout_default(&l);
	for (int s = LAYOUT_GPIPE; s <= LAYOUT_DUALPIPEV; s++)
		for (size_t n = 1; n <= sizeof(buf); n++) {
			l.schedule = s;
			snprintf(ref, n, "%s", layout_schedule_name(s));
			memset(buf, 'x', sizeof(buf));
			layout_format(&m, &l, LK_schedule, 0, buf, n);
			assert_string_equal(buf, ref);
			memset(buf, 'x', sizeof(buf));
			layout_format_shown(&m, &l, LK_schedule, buf, n);
			assert_string_equal(buf, ref);
		}
}

static void test_key(void **state)
{
	struct layout l;
	struct llm m = {.layers = 24,
			.hidden = 2048,
			.heads = 16,
			.ffn = 8192,
			.seq = 2048,
			.vocab = 51200,
			.name = ""};
	char key[320];
	(void)state;
	layout_default(&l);
	l.tp = 2, l.pp = 4, l.dp = 8, l.microbatches = 16, l.sp = 1;
	l.recompute = LAYOUT_RECOMPUTE_SELECTIVE;
	layout_key(&m, &l, key, sizeof(key));
	assert_string_equal(key, "tp=2;pp=4;dp=8;vp=1;mbs=1;mb=16;sched=1f1b;rc=selective;zero=0;"
				 "sp=1;layers=24;hidden=2048");
	l.flash = 0;
	l.bucket_mb = 25;
	l.cp = 2;
	layout_key(&m, &l, key, sizeof(key));
	assert_string_equal(key, "tp=2;pp=4;dp=8;vp=1;mbs=1;mb=16;sched=1f1b;rc=selective;zero=0;"
				 "sp=1;layers=24;hidden=2048;dtype=bf16;fp8attn=0;flash=0;"
				 "part=even;shard=0;prefetch=1;bucket=25;ovg=1;ovp=0;tpo=0;ppo=1;"
				 "cp=2");
	/* ep 0 reads as 1: no expert group. */
	l.ep = 0;
	l.partition = LAYOUT_PART_BALANCED;
	layout_key(&m, &l, key, sizeof(key));
	assert_non_null(strstr(key, ";part=balanced;"));
	assert_null(strstr(key, "ep="));
	/* A buffer too short: the key cut to what fits and terminated, as
	 * snprintf cuts (each size from 1 to the key's own). */
	for (size_t n = 1; n <= strlen(key) + 1; n++) {
		char cut[sizeof(key)];
		memset(cut, 'x', sizeof(cut));
		layout_key(&m, &l, cut, n);
		assert_int_equal(strlen(cut), n - 1);
		assert_memory_equal(cut, key, n - 1);
		if (n < sizeof(cut))
			assert_int_equal(cut[n], 'x'); /* nothing written past n */
	}
}

/* layout_diff names the knobs that differ; a graph edit changes layers,
 * dp and microbatches. */
static void test_diff(void **state)
{
	struct layout a, b;
	struct llm m = {.layers = 8,
			.hidden = 1024,
			.heads = 16,
			.ffn = 4096,
			.seq = 1024,
			.vocab = 32000,
			.name = ""};
	struct llm n = m;
	(void)state;
	layout_default(&a);
	b = a;
	assert_true(layout_diff(&m, &a, &m, &b) == 0);
	b.dp = 4;
	b.zero = 1;
	n.layers = 16;
	assert_true(layout_diff(&m, &a, &n, &b) ==
		    (LK_BIT(LK_dp) | LK_BIT(LK_zero) | LK_BIT(LK_layers)));
	/* ... and the power cap: a kernel re-timing, as another GPU is; and
	 * the allocator's expandable segments: memory alone. */
	assert_true(layout_editable() ==
		    (LK_BIT(LK_dp) | LK_BIT(LK_microbatches) | LK_BIT(LK_layers) |
		     LK_BIT(LK_power_w) | LK_BIT(LK_expandable_segments)));
	/* The partition as placed: part[] too. */
	b = a;
	b.pp = a.pp = 2;
	b.part[0] = 3, b.part[1] = 5;
	assert_true(layout_diff(&m, &a, &m, &b) == LK_BIT(LK_partition));
	/* ep 0 and 1 are one degree. */
	b = a;
	b.ep = 0;
	assert_true(layout_diff(&m, &a, &m, &b) == 0);
}

/* Stage s's units as synth/step.c's stage_step runs them (layout_warmup
 * forwards, then a forward and a backward each, then the backwards), as
 * "F<mb>.<chunk>" / "B<mb>.<chunk>" words. */
static void unit_order(const struct layout *l, int s, char *out, size_t n)
{
	int total = l->microbatches * layout_stage_chunks(l), warm = layout_warmup(l, s);
	int kf = 0, kb = 0;
	size_t at = 0;
	out[0] = 0;
	for (int i = 0; i < 2 * total; i++) {
		int fwd = i < warm ? 1 : kf == total ? 0 : (i - warm) % 2 == 0, mb, ch;
		layout_unit_of(l->pp, layout_stage_chunks(l), fwd ? kf++ : kb++, fwd, &mb, &ch);
		at += (size_t)snprintf(out + at, n - at, "%s%c%d.%d", at ? " " : "",
				       fwd ? 'F' : 'B', mb, ch);
	}
}

/*
 * The unit order of GPipe, 1F1B and the interleaved 1F1B (layout_warmup,
 * layout_unit_of), worked by hand from Megatron-LM's schedules.py
 * (forward_backward_pipelining_with_interleaving: num_warmup_microbatches
 * = (pp - rank - 1) x 2 + (vp - 1) x pp, all of them when microbatches =
 * pp; get_model_chunk_id: groups of pp microbatches a chunk, the
 * backwards' chunks from the last) and forward_backward_pipelining_without_
 * interleaving (pp - rank - 1 warm-up forwards).
 */
static void test_unit_order(void **state)
{
	struct layout l;
	char got[512];
	(void)state;
	layout_default(&l);
	l.schedule = LAYOUT_INTERLEAVED;
	l.pp = 2;
	l.vp = 2;
	l.microbatches = 4;
	assert_int_equal(layout_warmup(&l, 0), 4);
	assert_int_equal(layout_warmup(&l, 1), 2);
	unit_order(&l, 0, got, sizeof(got));
	assert_string_equal(got, "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 "
				 "B2.1 B3.1 B2.0 B3.0");
	unit_order(&l, 1, got, sizeof(got));
	assert_string_equal(got, "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 "
				 "F3.1 B3.1 B2.0 B3.0");
	l.microbatches = 2; /* = pp: every forward first */
	assert_int_equal(layout_warmup(&l, 1), 4);
	unit_order(&l, 1, got, sizeof(got));
	assert_string_equal(got, "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");

	l.schedule = LAYOUT_1F1B;
	l.vp = 1;
	l.pp = 4;
	l.microbatches = 6;
	assert_int_equal(layout_warmup(&l, 0), 3);
	assert_int_equal(layout_warmup(&l, 3), 0);
	unit_order(&l, 1, got, sizeof(got));
	assert_string_equal(got, "F0.0 F1.0 F2.0 B0.0 F3.0 B1.0 F4.0 B2.0 F5.0 B3.0 B4.0 B5.0");
	l.microbatches = 2; /* fewer than the warm-up */
	assert_int_equal(layout_warmup(&l, 0), 2);
	/* The 1F1B all-to-all overlap: one more warm-up forward. */
	l.moe_a2a_overlap = 1;
	assert_int_equal(layout_warmup(&l, 2), 2);
	assert_int_equal(layout_warmup(&l, 0), 2);
	l.pp = 1;
	l.microbatches = 3;
	assert_int_equal(layout_warmup(&l, 0), 1);
	l.moe_a2a_overlap = 0;
	l.schedule = LAYOUT_GPIPE;
	l.pp = 2;
	unit_order(&l, 0, got, sizeof(got));
	assert_string_equal(got, "F0.0 F1.0 F2.0 B0.0 B1.0 B2.0");
}

/* Values from text: names, numbers in range, the errors naming what. */
/*
 * The zero-bubble orders (layout_zb_next) on p 4, m 8, each stage's 24
 * passes, against an independent event simulation's (the one that
 * checked the closed forms of test_synth's test_zb_bubble): zb-1p is
 * PyTorch's ZB1P (stage s: p - s - 1 warm-up F, then F B, and W after
 * each B from the (s+1)-th on); zb-2p the paper's ZB-H2 (2(p - s) - 1
 * warm-up F, then B F, a W before the F once 7 are held, B W once the F
 * are done).  Each kind's microbatches come in order.
 */
static void test_zb_order(void **state)
{
	static const char *const want[2][4] = {
	    {"FFFFBWFBWFBWFBWFBWBWBWBW", "FFFBFBWFBWFBWFBWFBWBWBWW", "FFBFBFBWFBWFBWFBWFBWBWWW",
	     "FBFBFBFBWFBWFBWFBWFBWWWW"},
	    {"FFFFFFFBWFBWBWBWBWBWBWBW", "FFFFFBFBFBWFBWBWBWBWBWWW", "FFFBFBFBFBFBWFBWBWBWWWWW",
	     "FBFBFBFBFBFBFBWFBWWWWWWW"}};
	struct layout l;
	(void)state;
	layout_default(&l);
	l.pp = 4;
	l.microbatches = 8;
	for (int z = 0; z < 2; z++)
		for (int s = 0; s < 4; s++) {
			struct layout_zb it;
			char got[32];
			int n = 0, mb, pass, next[3] = {0, 0, 0};
			int ch;
			l.schedule = z ? LAYOUT_ZB2P : LAYOUT_ZB1P;
			memset(&it, 0, sizeof(it));
			while ((pass = layout_zb_next(&l, s, &it, &mb, &ch)) >= 0 && n < 31) {
				got[n++] = "FBW"[pass];
				assert_int_equal(ch, 0);
				assert_int_equal(mb, next[pass]++);
			}
			got[n] = 0;
			assert_string_equal(got, want[z][s]);
		}
	assert_true(layout_zb(LAYOUT_ZB1P) && layout_zb(LAYOUT_ZB2P) && !layout_zb(LAYOUT_1F1B));
}

/*
 * ZB-V's order (layout_zb_next, pass and chunk) against PyTorch's
 * ScheduleZBVZeroBubble._calculate_single_rank_operations transcribed as
 * it is written (lists of actions built with max(m, 2p - 1) microbatches,
 * those past m dropped), on p 4 m 8, p 2 m 2 (drops) and p 3 m 4; each
 * (pass, chunk)'s microbatches in order.  And the V's placement: stage s
 * holds model chunks s and 2p - 1 - s, the head on stage 0.
 */
static void test_zbv_order(void **state)
{
	static const struct {
		int p, m;
		const char *want[4];
	} t[] = {
	    {4,
	     8,
	     {"F0F0F0F0F0F0F0F1B1W1F1B1W1F1B1W1F1B1W1F0B0W0F1B1W1B0W0F1B1W1B0W0F1B1W1B0W0F1B1W1B0W0"
	      "B0W0B0W0B0W0",
	      "F0F0F0F0F0F1F0F1B1W1F1B1W1F1B1W1F0B0W0F1B1W1F0B0W0F1B1W1B0W0F1B1W1B0W0F1B1W1B0B1B0W0"
	      "B0W0B0W0W1W0",
	      "F0F0F0F1F0F1F0F1B1W1F1B1W1F0B0W0F1B1W1F0B0W0F1B1W1F0B0W0F1B1W1B0W0F1B1W1B0B1B0B1B0W0"
	      "B0W0W1W1W0W0",
	      "F0F1F0F1F0F1F0F1B1W1F0B0W0F1B1W1F0B0W0F1B1W1F0B0W0F1B1W1F0B0W0F1B1W1B0B1B0B1B0B1B0W0"
	      "W1W1W1W0W0W0"}},
	    {2, 2, {"F0F0F1B1W1F1B1W1B0W0B0W0", "F0F1F0F1B1W1B0W0B1W1B0W0"}},
	    {3,
	     4,
	     {"F0F0F0F0F1B1W1F1B1W1F1B1W1B0W0F1B1W1B0W0B0W0B0W0",
	      "F0F0F0F1F0F1B1W1F1B1W1B0W0F1B1W1B0W0B1W1B0B0W0W0",
	      "F0F1F0F1F0F1B1W1F0B0W0F1B1W1B0W0B1W1B0B1B0W0W1W0"}}};
	struct layout l;
	int s, c;
	(void)state;
	layout_default(&l);
	l.schedule = LAYOUT_ZBV;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		for (int r = 0; r < t[i].p; r++) {
			struct layout_zb it;
			char got[128];
			int n = 0, mb, ch, pass, next[2][3] = {{0}};
			l.pp = t[i].p;
			l.microbatches = t[i].m;
			memset(&it, 0, sizeof(it));
			while ((pass = layout_zb_next(&l, r, &it, &mb, &ch)) >= 0 && n < 126) {
				got[n++] = "FBW"[pass];
				got[n++] = (char)('0' + ch);
				assert_int_equal(mb, next[ch][pass]++);
			}
			got[n] = 0;
			assert_string_equal(got, t[i].want[r]);
		}
	l.pp = 4;
	assert_int_equal(layout_stage_chunks(&l), 2);
	assert_int_equal(layout_chunk_model(&l, 1, 0), 1);
	assert_int_equal(layout_chunk_model(&l, 1, 1), 6);
	assert_int_equal(layout_chunk_model(&l, 3, 1), 4);
	layout_chunk_place(&l, 7, &s, &c);
	assert_true(s == 0 && c == 1);
	layout_chunk_place(&l, 4, &s, &c);
	assert_true(s == 3 && c == 1);
	assert_int_equal(layout_head_stage(&l), 0);
	/* Interleaved: chunk c of stage s is model chunk c p + s. */
	l.schedule = LAYOUT_INTERLEAVED;
	l.vp = 2;
	assert_int_equal(layout_chunk_model(&l, 1, 1), 5);
	layout_chunk_place(&l, 6, &s, &c);
	assert_true(s == 2 && c == 1);
	assert_int_equal(layout_head_stage(&l), 3);
	assert_true(layout_zb(LAYOUT_ZBV));
}

/*
 * DualPipeV's order (layout_zb_next: F, B, W and X, the whole backward
 * as one pass, with the chunk) against PyTorch's
 * ScheduleDualPipeV._calculate_single_rank_operations transcribed as it
 * is written, with its weight queue (a script, not this code's phase
 * tables), on p 4 m 8, p 2 m 4 and p 3 m 7 (odd m, rank 2's unpaired
 * first F0 X1); each (pass, chunk)'s microbatches in order, a whole
 * backward counting as its B and W.  Its V is ZB-V's.
 */
/* layout_step_passes against the passes layout_zb_next gives, counted on
 * every stage, for every zero-bubble schedule, p 2..8 and m 2p..6p; and
 * the other schedules' forward and backward per microbatch and chunk. */
static void test_step_passes(void **state)
{
	struct layout l;
	(void)state;
	for (int sch = LAYOUT_GPIPE; sch <= LAYOUT_DUALPIPEV; sch++)
		for (int p = 2; p <= 8; p++)
			for (int m = 2 * p; m <= 6 * p; m += sch == LAYOUT_INTERLEAVED ? p : 1) {
				int64_t n = 0;
				int mb, ch;
				layout_default(&l);
				l.schedule = sch;
				l.pp = p;
				l.vp = sch == LAYOUT_INTERLEAVED ? 2 : 1;
				l.microbatches = m;
				if (!layout_zb(sch)) {
					assert_int_equal(layout_step_passes(&l), 2 * p * l.vp * m);
					continue;
				}
				for (int s = 0; s < p; s++) {
					struct layout_zb it;
					memset(&it, 0, sizeof(it));
					while (layout_zb_next(&l, s, &it, &mb, &ch) >= 0)
						n++;
				}
				assert_int_equal(layout_step_passes(&l), n);
			}
}

static void test_dpv_order(void **state)
{
	static const struct {
		int p, m;
		const char *want[4];
	} t[] = {
	    {4,
	     8,
	     {"F0F0F0F0F0F0F0F1B1W1F1B1W1F1B1W1F1F0X1F1X0X1F1X0X1F1X0X1F1X0X1B0W0B0W0B0W0B0W0",
	      "F0F0F0F0F0F1F0F1B1W1F1B1W1F1F0X1F1X0F0X1F1X0X1F1X0X1F1X0X1X0B1B0W1B0W0B0W0W0",
	      "F0F0F0F1F0F1F0F1B1W1F1F0X1F1X0F0X1F1X0F0X1F1X0X1F1X0X1X0X1B0B1B0W0B0W1W0W0",
	      "F0F1F0F1F0F1F0F1F0X1F1X0F0X1F1X0F0X1F1X0F0X1F1X0X1X0X1X0B1B0B1B0W1W0W1W0"}},
	    {2,
	     4,
	     {"F0F0F0F1B1W1F1F0X1F1X0X1F1X0X1B0W0B0W0", "F0F1F0F1F0X1F1X0F0X1F1X0X1X0B1B0W1W0"}},
	    {3,
	     7,
	     {"F0F0F0F0F0F1B1W1F1B1W1F1F0X1F1X0F0X1F1X0X1F1X0X1F1X0X1B0W0B0W0B0W0",
	      "F0F0F0F1F0F1B1W1F1F0X1F1X0F0X1F1X0F0X1F1X0X1F1X0X1X0B1B0W1B0W0W0",
	      "F0F1F0F1F0F1F0X1F1X0F0X1F1X0F0X1F1X0F0X1F1X0X1X0X1B0B1B0W0W1W0"}}};
	struct layout l;
	(void)state;
	layout_default(&l);
	l.schedule = LAYOUT_DUALPIPEV;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		for (int r = 0; r < t[i].p; r++) {
			struct layout_zb it;
			char got[160];
			int n = 0, mb, ch, pass, next[2][3] = {{0}};
			l.pp = t[i].p;
			l.microbatches = t[i].m;
			memset(&it, 0, sizeof(it));
			while ((pass = layout_zb_next(&l, r, &it, &mb, &ch)) >= 0 && n < 158) {
				got[n++] = "FBWX"[pass];
				got[n++] = (char)('0' + ch);
				if (pass == LAYOUT_PASS_BW) {
					assert_int_equal(mb, next[ch][LAYOUT_PASS_B]++);
					assert_int_equal(mb, next[ch][LAYOUT_PASS_W]++);
				} else {
					assert_int_equal(mb, next[ch][pass]++);
				}
			}
			got[n] = 0;
			assert_string_equal(got, t[i].want[r]);
			for (int c = 0; c < 2; c++)
				for (int k = 0; k < 3; k++)
					assert_int_equal(next[c][k], t[i].m);
		}
	l.pp = 4;
	assert_int_equal(layout_stage_chunks(&l), 2);
	assert_int_equal(layout_chunk_model(&l, 1, 1), 6);
	assert_int_equal(layout_head_stage(&l), 0);
	assert_true(layout_zb(LAYOUT_DUALPIPEV) && layout_v(LAYOUT_DUALPIPEV));
	assert_false(layout_v(LAYOUT_ZB2P));
}

static void test_parse(void **state)
{
	struct layout l;
	struct prism_err err;
	double v;
	(void)state;
	layout_default(&l);
	prism_err_clear(&err);
	assert_int_equal(layout_parse(LK_schedule, "interleaved", "--schedule", &v, &l, &err), 0);
	assert_true(v == LAYOUT_INTERLEAVED);
	assert_int_equal(layout_parse(LK_schedule, "zb", "--schedule", &v, &l, &err), PRISM_EARG);
	assert_string_equal(
	    err.msg, "--schedule 'zb': expected gpipe, 1f1b, interleaved, zb-1p, zb-2p, zb-v or "
		     "dualpipev");
	prism_err_clear(&err);
	/* The zero-bubble schedules, and the paper's handcrafted names. */
	assert_int_equal(layout_parse(LK_schedule, "zb-1p", "--schedule", &v, &l, &err), 0);
	assert_true(v == LAYOUT_ZB1P);
	assert_int_equal(layout_parse(LK_schedule, "dualpipev", "--schedule", &v, &l, &err), 0);
	assert_true(v == LAYOUT_DUALPIPEV);
	assert_string_equal(layout_schedule_name(LAYOUT_DUALPIPEV), "dualpipev");
	assert_int_equal(layout_parse(LK_schedule, "zb-h2", "--schedule", &v, &l, &err), 0);
	assert_true(v == LAYOUT_ZB2P);
	assert_string_equal(layout_schedule_name(LAYOUT_ZB2P), "zb-2p");
	prism_err_clear(&err);
	assert_int_equal(layout_parse(LK_dtype, "int8", "--dtype", &v, &l, &err), PRISM_EARG);
	assert_string_equal(err.msg, "--dtype 'int8': expected fp32, tf32, bf16, fp16, fp8 or fp4");
	prism_err_clear(&err);
	assert_int_equal(layout_parse(LK_tp, "2048", "--tp", &v, &l, &err), PRISM_EARG);
	assert_string_equal(err.msg, "--tp '2048': expected a whole number in 1..1024");
	prism_err_clear(&err);
	assert_int_equal(layout_parse(LK_imbalance, "nan", "--moe-imbalance", &v, &l, &err),
			 PRISM_EARG);
	assert_string_equal(err.msg, "--moe-imbalance 'nan': expected a number in 1..1024");
	assert_int_equal(layout_parse(LK_partition, "3,5", "--partition", &v, &l, &err), 0);
	assert_int_equal(l.part[0], 3);
	assert_int_equal(l.part[1], 5);
	assert_int_equal(l.partition, LAYOUT_PART_GIVEN);
	assert_int_equal(layout_parse(LK_dp_impl, "fsdp2", "--dp-impl", &v, &l, &err), 0);
	assert_true(v == LAYOUT_DP_FSDP2);
	prism_err_clear(&err);
	assert_int_equal(layout_parse(LK_dp_impl, "zero", "--dp-impl", &v, &l, &err), PRISM_EARG);
	assert_string_equal(err.msg,
			    "--dp-impl 'zero': expected megatron, deepspeed, fsdp or fsdp2");
	/* Recompute modules: Megatron's names, space-, comma- or
	 * plus-separated, in any order, written comma-separated in the bits'
	 * order; every set back to itself. */
	assert_int_equal(layout_parse(LK_recompute_modules, "mlp core_attn", "--recompute-modules",
				      &v, &l, &err),
			 0);
	assert_true(v == (LAYOUT_RC_CORE_ATTN | LAYOUT_RC_MLP));
	assert_string_equal(layout_rc_modules_name((int)v), "core_attn,mlp");
	assert_int_equal(layout_rc_modules_parse("moe_act,layernorm+shared_experts"),
			 LAYOUT_RC_MOE_ACT | LAYOUT_RC_LAYERNORM | LAYOUT_RC_SHARED);
	assert_string_equal(layout_rc_modules_name(LAYOUT_RC_ALL),
			    "core_attn,mlp,layernorm,mla_up_proj,moe,moe_act,shared_experts");
	assert_string_equal(layout_rc_modules_name(0), "core_attn");
	assert_string_equal(layout_rc_modules_name(LAYOUT_RC_ALL + 1), "?");
	for (int set = 1; set <= LAYOUT_RC_ALL; set++)
		assert_int_equal(layout_rc_modules_parse(layout_rc_modules_name(set)), set);
	assert_int_equal(layout_rc_modules_parse(""), -1);
	assert_int_equal(layout_rc_modules_parse(" , "), -1);
	assert_int_equal(layout_rc_modules_parse("core_attn,mlpx"), -1);
	prism_err_clear(&err);
	assert_int_equal(
	    layout_parse(LK_recompute_modules, "attn", "--recompute-modules", &v, &l, &err),
	    PRISM_EARG);
	assert_string_equal(err.msg, "--recompute-modules 'attn': expected names among core_attn, "
				     "mlp, layernorm, mla_up_proj, moe, moe_act or shared_experts");
	/* 0 (a layout nobody set) reads as Megatron's default, core_attn;
	 * the modules mean something under selective recomputation alone. */
	l.recompute = LAYOUT_RECOMPUTE_SELECTIVE;
	l.recompute_modules = 0;
	assert_true(layout_rc(&l, LAYOUT_RC_CORE_ATTN) && !layout_rc(&l, LAYOUT_RC_MLP));
	l.recompute_modules = LAYOUT_RC_MLP;
	assert_true(!layout_rc(&l, LAYOUT_RC_CORE_ATTN) && layout_rc(&l, LAYOUT_RC_MLP));
	l.recompute = LAYOUT_RECOMPUTE_FULL;
	assert_false(layout_rc(&l, LAYOUT_RC_MLP));
}

/* What each sharding implementation runs: FSDP has no ZeRO-1, DeepSpeed no
 * ZeRO-2/3 with pipeline parallelism; the others pass. */
static void test_dp_impl(void **state)
{
	struct llm m = fixture_small_gpt();
	struct hw_profile hw;
	struct layout l;
	struct prism_err err;
	(void)state;
	memset(&hw, 0, sizeof(hw));
	hw.gpus_per_node = 8;
	for (int d = 0; d < HW_NDTYPES; d++)
		hw.peak_flops[d] = 1e15;
	layout_default(&l);
	l.dp = 4;
	l.pp = 2;
	l.zero = 1;
	for (int i = LAYOUT_DP_MEGATRON; i <= LAYOUT_DP_FSDP2; i++) {
		l.dp_impl = i;
		prism_err_clear(&err);
		assert_int_equal(layout_check(&m, &l, &hw, &err),
				 i == LAYOUT_DP_FSDP || i == LAYOUT_DP_FSDP2 ? PRISM_EARG : 0);
	}
	assert_string_equal(err.msg, "layout: dp_impl fsdp2 has no ZeRO-1 (FSDP shards the "
				     "gradients with the optimizer state: zero 2 or 3)");
	l.zero = 3;
	for (int i = LAYOUT_DP_MEGATRON; i <= LAYOUT_DP_FSDP2; i++) {
		l.dp_impl = i;
		prism_err_clear(&err);
		assert_int_equal(layout_check(&m, &l, &hw, &err),
				 i == LAYOUT_DP_DEEPSPEED ? PRISM_EARG : 0);
	}
	l.dp_impl = LAYOUT_DP_DEEPSPEED;
	l.pp = 1;
	assert_int_equal(layout_check(&m, &l, &hw, &err), 0);
}

/* pp_scatter_gather means something with tp and pp above 1 without sp:
 * refused with sp (each rank sends its 1 / tp already), ignored with tp
 * or pp 1 (as pp_overlap with pp 1). */
static void test_pp_scatter_gather_check(void **state)
{
	struct llm m = fixture_small_gpt();
	struct hw_profile hw;
	struct layout l;
	struct prism_err err;
	(void)state;
	memset(&hw, 0, sizeof(hw));
	hw.gpus_per_node = 8;
	for (int d = 0; d < HW_NDTYPES; d++)
		hw.peak_flops[d] = 1e15;
	layout_default(&l);
	assert_int_equal(l.pp_scatter_gather, 0);
	l.tp = 2;
	l.pp = 2;
	l.pp_scatter_gather = 1;
	prism_err_clear(&err);
	assert_int_equal(layout_check(&m, &l, &hw, &err), 0);
	l.sp = 1;
	assert_int_equal(layout_check(&m, &l, &hw, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: pp_scatter_gather is for tp without sequence "
				     "parallelism (with sp each tensor-parallel rank already sends "
				     "its 1/tp of a pipeline transfer)");
	l.pp = 1;
	prism_err_clear(&err);
	assert_int_equal(layout_check(&m, &l, &hw, &err), 0);
}

/* A description written and read back is the same run; the first
 * descriptions' text is kept to the byte (test_synth has the dense one),
 * and a knob at its default adds nothing. */
static void test_desc(void **state)
{
	/* Static: its padding is zero, as memset leaves mb's. */
	static const struct llm m = {.layers = 4,
				     .hidden = 512,
				     .heads = 8,
				     .ffn = 2048,
				     .seq = 256,
				     .vocab = 1000,
				     .name = "moe",
				     .gated = 1,
				     .untied = 1,
				     .rope = 1,
				     .experts = 8,
				     .top_k = 2,
				     .shared_experts = 1,
				     .first_dense = 1,
				     .capacity_factor = 1.25,
				     .router = LLM_ROUTER_SIGMOID};
	struct layout l, back;
	struct llm mb;
	char s[2048], hw[64];
	struct prism_err err;
	(void)state;
	layout_default(&l);
	l.tp = 2, l.sp = 1, l.ep = 4, l.dp = 4, l.cp = 2, l.cp_comm = LAYOUT_CP_ALLGATHER,
	l.imbalance = 1.5;
	desc_write(&m, &l, "h100-dgx", s, sizeof(s));
	assert_string_equal(
	    s,
	    "prism::model#name=moe;layers=4;hidden=512;heads=8;kv_heads=8;ffn=2048;"
	    "activation=swiglu;seq=256;vocab=1000;tp=2;pp=1;dp=4;vp=1;mbs=1;microbatches=1;"
	    "schedule=1f1b;recompute=0;sp=1;zero=0;flash=1;dtype=bf16;fp8_attention=0;"
	    "hw=h100-dgx;untied=1;rope=1;shard=0;prefetch=1;bucket_mb=0;overlap_grad=1;"
	    "overlap_param=0;tp_overlap=0;pp_overlap=1;cp=2;cp_comm=all_gather;experts=8;top_k=2;"
	    "shared_experts=1;expert_ffn=0;first_dense=1;capacity_factor=1.25;router=sigmoid;"
	    "ep=4;etp=1;imbalance=1.5");
	memset(&mb, 0, sizeof(mb));
	layout_default(&back);
	prism_err_clear(&err);
	assert_int_equal(desc_parse(s, &mb, &back, hw, sizeof(hw), &err), 0);
	assert_string_equal(hw, "h100-dgx");
	assert_memory_equal(&mb, &m, sizeof(m));
	assert_true(layout_diff(&m, &l, &mb, &back) == 0);
	/* The flag cp_comm replaced, in descriptions written before it. */
	layout_default(&back);
	assert_int_equal(
	    desc_parse("prism::model#tp=2;cp=2;cp_allgather=1", &mb, &back, hw, sizeof(hw), &err),
	    0);
	assert_int_equal(back.cp_comm, LAYOUT_CP_ALLGATHER);
	assert_int_equal(
	    desc_parse("prism::model#tp=2;cp=2;cp_comm=a2a+p2p", &mb, &back, hw, sizeof(hw), &err),
	    0);
	assert_int_equal(back.cp_comm, LAYOUT_CP_A2A_P2P);
	/* Unknown keys are a newer writer's: skipped. */
	assert_int_equal(
	    desc_parse("prism::model#tp=2;zb_schedule=1", &mb, &back, hw, sizeof(hw), &err), 0);
	assert_int_equal(back.tp, 2);
	prism_err_clear(&err);
	assert_int_equal(desc_parse("prism::model#schedule=zb", &mb, &back, hw, sizeof(hw), &err),
			 PRISM_EFORMAT);
	assert_string_equal(err.msg, "model description: unknown schedule 'zb'");
}

/* Megatron-Core's partitions worked by hand (transformer_block.py
 * get_num_layers_to_build, transformer_config.py's checks,
 * pipeline_parallel_layer_layout.py): place, then read chunk by chunk. */
static int place(int layers, int pp, int vp, const char *part, struct layout *out,
		 struct prism_err *err)
{
	struct llm m = {.layers = layers};
	struct layout l;
	int rc;
	layout_default(&l);
	l.pp = pp, l.vp = vp, l.schedule = vp > 1 ? LAYOUT_INTERLEAVED : LAYOUT_1F1B;
	prism_err_clear(err);
	if ((rc = layout_partition_parse(part, &l, err)))
		return rc;
	return layout_partition_place(&m, &l, out, err);
}

static void test_megatron_partition(void **state)
{
	struct llm m = {.layers = 126};
	struct layout r;
	struct prism_err err;
	char name[128];
	(void)state;

	/* Llama 3.1 405B, 126 layers, pp 8 vp 4, embedding and loss in the
	 * split: 128 slots, 16 a stage, 4 a chunk; the first model chunk
	 * (stage 0, chunk 0) and the last (stage 7, chunk 3) hold 3. */
	assert_int_equal(place(126, 8, 4, "embed-loss", &r, &err), 0);
	assert_int_equal(r.part_chunks, 32);
	for (int s = 0; s < 8; s++)
		for (int c = 0; c < 4; c++)
			assert_int_equal(layout_chunk_layers(&m, &r, s, c),
					 (s == 0 && c == 0) || (s == 7 && c == 3) ? 3 : 4);
	assert_int_equal(layout_stage_layers(&m, &r, 0), 15);
	assert_int_equal(layout_stage_layers(&m, &r, 3), 16);
	assert_int_equal(layout_stage_layers(&m, &r, 7), 15);
	/* Model chunk 8 (stage 0's second): after chunk 0's 3 and 7 x 4. */
	assert_int_equal(layout_chunk_first(&m, &r, 0, 1), 31);
	assert_int_equal(layout_chunk_first(&m, &r, 7, 3), 123);
	layout_partition_name(&r, name, sizeof(name));
	assert_string_equal(name, "embed-loss");
	layout_part_text(&r, name, sizeof(name));
	assert_string_equal(name, "Et*3|(t*4|)*30t*3L");

	/* Without interleaving, stages: 30 layers on pp 4: 32 / 4 = 8. */
	assert_int_equal(place(30, 4, 1, "embed-loss", &r, &err), 0);
	assert_int_equal(r.part_chunks, 0);
	assert_int_equal(r.part[0], 7), assert_int_equal(r.part[1], 8);
	assert_int_equal(r.part[2], 8), assert_int_equal(r.part[3], 7);
	/* The embedding alone: 63 + 1 on pp 8 vp 2, 4 a chunk, chunk 0 3. */
	m.layers = 63;
	assert_int_equal(place(63, 8, 2, "embed", &r, &err), 0);
	assert_int_equal(layout_chunk_layers(&m, &r, 0, 0), 3);
	assert_int_equal(layout_chunk_layers(&m, &r, 7, 1), 4);
	assert_int_equal(layout_stage_layers(&m, &r, 0), 7);
	/* An embedding-only first stage (Megatron builds no layer there):
	 * 2 layers + 2 slots on pp 4. */
	m.layers = 2;
	assert_int_equal(place(2, 4, 1, "embed-loss", &r, &err), 0);
	assert_int_equal(layout_stage_layers(&m, &r, 0), 0);
	assert_int_equal(layout_stage_layers(&m, &r, 1), 1);
	assert_int_equal(layout_stage_layers(&m, &r, 3), 0);
	/* Refused where Megatron refuses: DeepSeek-V3's 61 + 2 on pp 8; 64
	 * slots on pp 4 are 16 a stage, not divisible by vp 3. */
	assert_int_equal(place(61, 8, 2, "embed-loss", &r, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: partition embed-loss needs layers 61 + 2 divisible "
				     "by pp 8");
	assert_int_equal(place(62, 4, 3, "embed-loss", &r, &err), PRISM_EARG);
	assert_string_equal(err.msg,
			    "layout: partition: 16 layer slots a stage, not divisible by vp 3");

	/* decoder_first/last_pipeline_num_layers: 62 layers, pp 4 vp 2,
	 * first 14, last 16: 32 left on 2 stages, 16 each, 8 a chunk. */
	m.layers = 62;
	assert_int_equal(place(62, 4, 2, "first=14,last=16", &r, &err), 0);
	assert_int_equal(layout_stage_layers(&m, &r, 0), 14);
	assert_int_equal(layout_stage_layers(&m, &r, 1), 16);
	assert_int_equal(layout_chunk_layers(&m, &r, 0, 1), 7);
	assert_int_equal(layout_chunk_layers(&m, &r, 3, 0), 8);
	/* Model chunk 4 (stage 0's second) after 7 + 8 + 8 + 8. */
	assert_int_equal(layout_chunk_first(&m, &r, 0, 1), 31);
	layout_partition_name(&r, name, sizeof(name));
	assert_string_equal(name, "first=14,last=16");
	/* The first alone: 30 layers, pp 4, 3 first, 27 on 3 stages. */
	m.layers = 30;
	assert_int_equal(place(30, 4, 1, "first=3", &r, &err), 0);
	assert_int_equal(r.part[0], 3), assert_int_equal(r.part[1], 9);
	assert_int_equal(r.part[3], 9);
	assert_int_equal(place(30, 4, 2, "first=3", &r, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: partition first=3: the layers of the first stage "
				     "must be divisible by the virtual stages (vp 2)");
	assert_int_equal(place(30, 4, 1, "first=4", &r, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: partition first=4: the 26 layers left are not "
				     "divisible by the 3 stages left");
	assert_int_equal(place(30, 2, 1, "first=10,last=10", &r, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: partition first=10,last=10: 10 layers left for 0 "
				     "middle stages (the model has 30 layers, pp 2)");
	assert_int_equal(place(30, 4, 1, "first=0", &r, &err), PRISM_EARG);
	assert_int_equal(place(30, 4, 1, "first=3,first=3", &r, &err), PRISM_EARG);

	/* A layout string: Megatron's DeepSeek-V3 example for pp 16 vp 2
	 * without its MTP layer: Et*3, then 29 chunks of 2, an empty chunk
	 * and the loss. */
	m.layers = 61;
	assert_int_equal(place(61, 16, 2, "Et*3|(tt|)*29,|L", &r, &err), 0);
	assert_int_equal(r.part_chunks, 32);
	assert_int_equal(layout_chunk_layers(&m, &r, 0, 0), 3);
	assert_int_equal(layout_chunk_layers(&m, &r, 13, 1), 2); /* chunk 29 */
	assert_int_equal(layout_chunk_layers(&m, &r, 14, 1), 0); /* chunk 30 */
	assert_int_equal(layout_chunk_layers(&m, &r, 15, 1), 0); /* the loss */
	assert_int_equal(layout_stage_layers(&m, &r, 0), 5);
	assert_int_equal(layout_stage_layers(&m, &r, 15), 2);
	assert_int_equal(layout_chunk_first(&m, &r, 0, 1), 33); /* 3 + 15 x 2 */
	layout_partition_name(&r, name, sizeof(name));
	assert_string_equal(name, "Et*3|(t*2|)*29|L");
	/* Its name reads back as the same placement. */
	{
		struct layout back;
		assert_int_equal(place(61, 16, 2, name, &back, &err), 0);
		assert_int_equal(back.part_chunks, 32);
		assert_memory_equal(back.part, r.part, sizeof(r.part));
	}
	/* The layout's chunks are pp x vp, its layers the model's, E first
	 * and L last; no nested groups (Megatron's regular expressions). */
	assert_int_equal(place(61, 16, 4, "Et*3|(tt|)*29,|L", &r, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: partition: the layout's 32 model chunks make 2 "
				     "virtual stages a GPU, vp is 4 (give --vp 2 and the "
				     "interleaved schedule)");
	assert_int_equal(place(61, 5, 1, "Et*3|(tt|)*29,|L", &r, &err), PRISM_EARG);
	assert_int_equal(place(60, 16, 2, "Et*3|(tt|)*29,|L", &r, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: partition: the layout places 61 transformer layers, "
				     "the model has 60");
	assert_int_equal(place(4, 2, 1, "tE|ttL", &r, &err), PRISM_EARG);
	assert_int_equal(place(4, 2, 1, "Ett|tt", &r, &err), PRISM_EARG);
	assert_int_equal(place(4, 2, 1, "((t|)*2)*2EL", &r, &err), PRISM_EARG);
	assert_int_equal(place(4, 2, 1, "Ett|tx", &r, &err), PRISM_EARG);
	/* MTP layers: after the decoder's, in the last chunk (Megatron's
	 * default placement; its standalone one, DeepSeek-V3's own
	 * "Et*3|(tt|)*29,m|L", is refused), as many as the model has. */
	assert_int_equal(place(4, 2, 1, "Et|tmL", &r, &err), PRISM_EARG);
	assert_string_equal(err.msg, "layout: partition: the layout places 1 MTP layers (m), the "
				     "model has 0 (mtp_layers)");
	assert_int_equal(place(4, 2, 1, "Et|mtL", &r, &err), PRISM_EARG);
	assert_int_equal(place(61, 16, 2, "Et*3|(tt|)*29,m|L", &r, &err), PRISM_EARG);
	assert_string_equal(err.msg, "partition 'Et*3|(tt|)*29,m|L': MTP layers (m) on a stage "
				     "before the last (Megatron's mtp_standalone) are not "
				     "modelled: put them in the last chunk, before L");
	{
		struct llm mm = {.layers = 61, .mtp_layers = 1};
		struct layout l;
		layout_default(&l);
		l.pp = 16, l.vp = 2, l.schedule = LAYOUT_INTERLEAVED;
		assert_int_equal(layout_partition_parse("Et*3|(tt|)*29,|mL", &l, &err), 0);
		assert_int_equal(l.part_mtp, 1);
		assert_int_equal(layout_partition_place(&mm, &l, &r, &err), 0);
		layout_partition_name(&r, name, sizeof(name));
		assert_string_equal(name, "Et*3|(t*2|)*29|mL");
	}
	assert_int_equal(place(4, 2, 1, "E(t*2|)*1t*2L", &r, &err), 0);
	assert_int_equal(r.part[0], 2), assert_int_equal(r.part[1], 2);
}

/* layout_chunk_first without a placement: each model chunk before it
 * holds layers / pp / v, wherever the schedule puts it.  GPT-3's 96
 * layers: pp 4 vp 3 interleaved, 8 a chunk, stage 2's chunk 1 is model
 * chunk 1 x 4 + 2 = 6 (48 layers before it); ZB-V on pp 4, 12 a chunk,
 * stage 1's second chunk is model chunk 2 x 4 - 1 - 1 = 6 (72); pp 1 vp
 * 1: 0.  And the same with a balanced partition's part (stage 0 and 3
 * with 20, stages 1 and 2 with 28: chunks of part[s] / v): stage 2's
 * chunk 1 after the four chunks of round 0 (20 + 28 + 28 + 20) / 2 and
 * stage 0 and 1's of round 1 (10 + 14): 72. */
static void test_chunk_first_even(void **state)
{
	struct llm m;
	struct layout l;
	(void)state;
	memset(&m, 0, sizeof(m));
	m.layers = 96;
	layout_default(&l);
	l.pp = 4;
	l.vp = 3;
	l.schedule = LAYOUT_INTERLEAVED;
	assert_int_equal(layout_chunk_first(&m, &l, 2, 1), 48);
	assert_int_equal(layout_chunk_first(&m, &l, 0, 0), 0);
	assert_int_equal(layout_chunk_first(&m, &l, 3, 2), 88);
	l.schedule = LAYOUT_ZBV;
	assert_int_equal(layout_chunk_first(&m, &l, 1, 1), 72);
	assert_int_equal(layout_chunk_first(&m, &l, 3, 1), 48);
	assert_int_equal(layout_chunk_first(&m, &l, 3, 0), 36);
	l.pp = 1;
	l.schedule = LAYOUT_1F1B;
	assert_int_equal(layout_chunk_first(&m, &l, 0, 0), 0);
	l.pp = 4;
	l.vp = 2;
	l.schedule = LAYOUT_INTERLEAVED;
	l.part[0] = 20, l.part[1] = 28, l.part[2] = 28, l.part[3] = 20;
	assert_int_equal(layout_chunk_first(&m, &l, 2, 1), 72);
	assert_int_equal(layout_chunk_first(&m, &l, 3, 0), 38);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows),
	    cmocka_unit_test(test_chunk_first_even),
	    cmocka_unit_test(test_set_heads),
	    cmocka_unit_test(test_default),
	    cmocka_unit_test(test_key),
	    cmocka_unit_test(test_format_cut),
	    cmocka_unit_test(test_diff),
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_zb_order),
	    cmocka_unit_test(test_zbv_order),
	    cmocka_unit_test(test_dpv_order),
	    cmocka_unit_test(test_step_passes),
	    cmocka_unit_test(test_desc),
	    cmocka_unit_test(test_dp_impl),
	    cmocka_unit_test(test_pp_scatter_gather_check),
	    cmocka_unit_test(test_megatron_partition),
	    cmocka_unit_test(test_unit_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
