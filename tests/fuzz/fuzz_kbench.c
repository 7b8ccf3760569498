/*
 * fuzz_kbench.c - libFuzzer target: any bytes as a kernel measurement CSV,
 * read as `prism kernels` reads one (kbench_read), and every row it keeps
 * predicted with the kernel model on its GPU's shipped profile (and the
 * flat model); the GEMM rows of the first row's GPU family, up to 16,
 * fitted as --fit does.  A crash, a leak, a sanitizer report (a division
 * by zero, an overflow) or an abort() is a finding.  Built by scripts/fuzz
 * (clang); replayed over tests/fuzz/corpus/kbench, tests/data/kernels and
 * tests/data/gpu/kernels.csv by ctest in every build (replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw.h"
#include "kbench.h"

#ifndef PRISM_SOURCE_DIR
#define PRISM_SOURCE_DIR "."
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PROF 16
#define MAX_FIT	 16

/* The shipped profile named name (configs/hw/NAME.cfg), loaded once; NULL
 * if it does not load. */
static const struct hw_profile *profile(const char *name)
{
	static struct {
		char name[32];
		struct hw_profile hw;
		int ok;
	} p[MAX_PROF];
	static int n;
	struct prism_err err;
	char path[256];

	for (int i = 0; i < n; i++)
		if (!strcmp(p[i].name, name))
			return p[i].ok ? &p[i].hw : NULL;
	if (n == MAX_PROF)
		return NULL;
	snprintf(p[n].name, sizeof(p[n].name), "%s", name);
	snprintf(path, sizeof(path), "%s/configs/hw/%s.cfg", PRISM_SOURCE_DIR, name);
	prism_err_clear(&err);
	p[n].ok = hw_load(path, &p[n].hw, &err) == 0;
	return p[n++].ok ? &p[n - 1].hw : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prism_err err;
	struct kbench kb;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/prism-fuzz-kbench-%ld.csv", (long)getpid());
	f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	memset(&kb, 0, sizeof(kb));
	prism_err_clear(&err);
	if (kbench_read(&kb, path, &err) == 0) {
		struct hw_profile fit[MAX_FIT];
		struct hw_profile *hws[MAX_FIT];
		size_t idx[MAX_FIT], nfit = 0;
		const char *family = NULL;
		for (size_t i = 0; i < kb.n; i++) {
			const struct kbench_row *r = &kb.rows[i];
			const struct hw_profile *hw = profile(r->profile);
			if (!hw)
				continue;
			(void)kbench_predict(hw, r, 0);
			(void)kbench_predict(hw, r, 1);
			(void)kbench_class_name(r->cls);
			if (r->cls != KB_GEMM || nfit == MAX_FIT || r->dtype != kb.rows[0].dtype ||
			    (family && strcmp(family, kbench_family(r->profile))))
				continue;
			family = kbench_family(r->profile);
			fit[nfit] = *hw;
			hws[nfit] = &fit[nfit];
			idx[nfit++] = i;
		}
		if (nfit)
			(void)kbench_fit(hws, kb.rows, idx, nfit, KB_GEMM, kb.rows[0].dtype);
	}
	kbench_release(&kb);
	unlink(path);
	return 0;
}
