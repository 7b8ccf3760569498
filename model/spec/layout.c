/* layout.c - the layout's names, defaults and derived degrees. */
#include "layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw.h"

void layout_default(struct layout *l)
{
	memset(l, 0, sizeof(*l));
	l->tp = l->pp = l->dp = l->vp = 1;
	l->mbs = 1;
	l->microbatches = 1;
	l->schedule = LAYOUT_1F1B;
	l->flash = 1;
	l->dtype = HW_BF16;
	l->prefetch = 1;
	l->overlap_grad = 1;
	l->pp_overlap = 1;
	l->ep = l->etp = l->cp = 1;
	l->imbalance = 1;
}

static const char *const recompute_names[] = {"none", "selective", "full"};
static const char *const schedule_names[] = {"gpipe", "1f1b", "interleaved"};

const char *layout_recompute_name(int r)
{
	return r >= 0 && r <= LAYOUT_RECOMPUTE_FULL ? recompute_names[r] : "?";
}

int layout_recompute_parse(const char *s)
{
	for (int i = 0; i <= LAYOUT_RECOMPUTE_FULL; i++)
		if (strcmp(s, recompute_names[i]) == 0)
			return i;
	return -1;
}

const char *layout_schedule_name(int s)
{
	return s >= 0 && s <= LAYOUT_INTERLEAVED ? schedule_names[s] : "?";
}

int layout_schedule_parse(const char *s)
{
	for (int i = 0; i <= LAYOUT_INTERLEAVED; i++)
		if (strcmp(s, schedule_names[i]) == 0)
			return i;
	return -1;
}

int layout_partition_parse(const char *s, struct layout *l, struct prism_err *err)
{
	const char *q = s;
	int n = 0;

	memset(l->part, 0, sizeof(l->part));
	l->partition = LAYOUT_PART_GIVEN;
	if (strcmp(s, "even") == 0)
		return 0;
	if (strcmp(s, "balanced") == 0) {
		l->partition = LAYOUT_PART_BALANCED;
		return 0;
	}
	if (strcmp(s, "embed-loss") == 0) {
		l->partition = LAYOUT_PART_EMBED_LOSS;
		return 0;
	}
	while (*q) {
		char *end;
		long v;
		errno = 0;
		v = strtol(q, &end, 10);
		if (end == q || errno || v < 1 || v > 65535 || (*end && *end != ',') ||
		    n >= LAYOUT_MAX_STAGES)
			return prism_err_set(
			    err, PRISM_EARG,
			    "partition '%s': expected even, balanced, embed-loss or "
			    "layers per stage (N0,N1,...: each 1..65535, at most %d)",
			    s, LAYOUT_MAX_STAGES);
		l->part[n++] = (uint16_t)v;
		q = *end ? end + 1 : end;
	}
	if (n < 2)
		return prism_err_set(err, PRISM_EARG,
				     "partition '%s': a list needs a number for each of 2 or more "
				     "stages",
				     s);
	return 0;
}

void layout_partition_name(const struct layout *l, char *buf, size_t n)
{
	size_t k = 0;
	if (l->partition == LAYOUT_PART_BALANCED || l->partition == LAYOUT_PART_EMBED_LOSS) {
		snprintf(buf, n, "%s",
			 l->partition == LAYOUT_PART_BALANCED ? "balanced" : "embed-loss");
		return;
	}
	snprintf(buf, n, "even");
	if (l->part[0] == 0)
		return;
	buf[0] = '\0';
	for (int s = 0; s < LAYOUT_MAX_STAGES && l->part[s] && k + 8 < n; s++)
		k += (size_t)snprintf(buf + k, n - k, "%s%d", s ? "," : "", l->part[s]);
}

int layout_cp(const struct layout *l)
{
	return l->cp > 1 ? l->cp : 1;
}

int layout_dpc(const struct layout *l)
{
	return l->dp * layout_cp(l);
}

int layout_ep(const struct layout *l)
{
	return l->ep > 1 ? l->ep : 1;
}

int layout_etp(const struct layout *l)
{
	return l->etp > 1 ? l->etp : 1;
}

int layout_edp(const struct layout *l)
{
	int n = l->tp * l->dp * layout_cp(l) / (layout_ep(l) * layout_etp(l));
	return n > 1 ? n : 1;
}

int layout_shard_group(const struct layout *l)
{
	return l->shard > 0 && l->shard < layout_dpc(l) ? l->shard : layout_dpc(l);
}

int layout_stage_layers(const struct llm *m, const struct layout *l, int s)
{
	if (l->pp > 1 && l->part[0] > 0)
		return l->part[s];
	return m->layers / (l->pp > 0 ? l->pp : 1);
}

int layout_chunk_layers(const struct llm *m, const struct layout *l, int s, int c)
{
	int v = l->vp > 0 ? l->vp : 1;
	(void)c;
	return layout_stage_layers(m, l, s) / v;
}

int layout_chunk_first(const struct llm *m, const struct layout *l, int s, int c)
{
	int first = 0;
	/* Chunks in model order: chunk c of stage s is model chunk c pp + s. */
	for (int k = 0; k < c * l->pp + s; k++)
		first += layout_chunk_layers(m, l, k % l->pp, k / l->pp);
	return first;
}

int layout_chunk_moe(const struct llm *m, const struct layout *l, int s, int c)
{
	int first, n, k = 0;
	if (llm_moe_layers(m) == 0)
		return 0;
	first = layout_chunk_first(m, l, s, c);
	n = layout_chunk_layers(m, l, s, c);
	for (int i = first; i < first + n; i++)
		k += llm_is_moe_layer(m, i);
	return k;
}
