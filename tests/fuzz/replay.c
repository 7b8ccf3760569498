/*
 * replay.c - run a libFuzzer target's LLVMFuzzerTestOneInput on files, so
 * that its corpus and its findings are regression inputs in every build
 * (ctest runs each target over tests/fuzz/corpus/TARGET and tests/data),
 * with or without clang and libFuzzer.  Arguments are files or folders
 * (their files, not recursively, in name order); a crash, a sanitizer
 * report or an abort() of the target fails the run.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f) {
		perror(path);
		return 1;
	}
	for (;;) {
		size_t got;
		if (n == cap) {
			uint8_t *nb;
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap);
			if (!nb) {
				fclose(f);
				free(buf);
				fprintf(stderr, "%s: out of memory\n", path);
				return 1;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	/* An exact-size copy, so that ASan sees any read past the input. */
	{
		uint8_t *exact = malloc(n ? n : 1);
		if (!exact) {
			free(buf);
			return 1;
		}
		memcpy(exact, buf, n);
		free(buf);
		LLVMFuzzerTestOneInput(exact, n);
		free(exact);
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, int *count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (!d) {
		perror(dir);
		return 1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*nn));
			if (!nn) {
				rc = 1;
				break;
			}
			names = nn;
		}
		if (!(names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2))) {
			rc = 1;
			break;
		}
		sprintf(names[n++], "%s/%s", dir, e->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		struct stat sb;
		if (!rc && stat(names[i], &sb) == 0 && S_ISREG(sb.st_mode)) {
			rc = run_file(names[i]);
			(*count)++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int count = 0;

	for (int i = 1; i < argc; i++) {
		struct stat sb;
		int rc;
		if (stat(argv[i], &sb) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (S_ISDIR(sb.st_mode)) {
			rc = run_dir(argv[i], &count);
		} else {
			rc = run_file(argv[i]);
			count++;
		}
		if (rc)
			return rc;
	}
	printf("%d inputs replayed\n", count);
	return 0;
}
