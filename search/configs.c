/* configs.c - configuration folders, and the names that ship in them. */
#include "configs.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "usage.h"
#include "vec.h"

void configs_dirs_init(struct configs_dirs *d)
{
	const char *env = getenv("PRISM_CONFIG_DIR");
	char exe[4096];
	ssize_t n;

	d->n = 0;
	d->installed[0] = '\0';
	if (env && env[0]) {
		d->why[d->n] = "PRISM_CONFIG_DIR";
		d->dir[d->n++] = env;
	}
	d->why[d->n] = "the working directory";
	d->dir[d->n++] = "configs";
	/* BINDIR/prism -> BINDIR/PRISM_REL_DATADIR: where cmake --install put
	 * the configurations, wherever the tree was installed or moved. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;
		exe[n] = '\0';
		if ((slash = strrchr(exe, '/'))) {
			char dir[sizeof(exe) + sizeof(PRISM_REL_DATADIR) + 1];
			*slash = '\0';
			snprintf(dir, sizeof(dir), "%s/%s", exe, PRISM_REL_DATADIR);
			/* BINDIR/../share/prism as PREFIX/share/prism, where it exists. */
			if (!realpath(dir, d->installed) &&
			    snprintf(d->installed, sizeof(d->installed), "%s", dir) >=
				(int)sizeof(d->installed))
				d->installed[0] = '\0';
			if (d->installed[0]) {
				d->why[d->n] = "installed";
				d->dir[d->n++] = d->installed;
			}
		}
	}
	d->why[d->n] = "the source tree";
	d->dir[d->n++] = PRISM_SOURCE_DIR "/configs";
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct configs_entry *)a)->name,
		      ((const struct configs_entry *)b)->name);
}

long configs_list(const struct configs_dirs *d, const char *kind, struct configs_entry **out)
{
	VEC(struct configs_entry) v = {0};

	*out = NULL;
	for (int i = 0; i < d->n; i++) {
		char dir[4200];
		DIR *dh;
		struct dirent *e;
		snprintf(dir, sizeof(dir), "%s/%s", d->dir[i], kind);
		if (!(dh = opendir(dir)))
			continue;
		while ((e = readdir(dh))) {
			size_t len = strlen(e->d_name);
			struct configs_entry c;
			struct stat sb;
			int seen = 0;
			if (e->d_name[0] == '.' || len <= 4 || len - 4 >= sizeof(c.name) ||
			    strcmp(e->d_name + len - 4, ".cfg") != 0)
				continue;
			snprintf(c.name, sizeof(c.name), "%.*s", (int)(len - 4), e->d_name);
			for (size_t k = 0; k < v.n && !seen; k++)
				seen = strcmp(v.v[k].name, c.name) == 0;
			if (seen)
				continue; /* an earlier folder's wins */
			if (snprintf(c.path, sizeof(c.path), "%s/%s", dir, e->d_name) >=
			    (int)sizeof(c.path))
				continue; /* a path too long to open by name */
			if (stat(c.path, &sb) != 0 || !S_ISREG(sb.st_mode))
				continue; /* a FIFO would block whoever reads it */
			if (VEC_PUSH(v, c)) {
				closedir(dh);
				VEC_FREE(v);
				return -1;
			}
		}
		closedir(dh);
	}
	if (v.n)
		qsort(v.v, v.n, sizeof(*v.v), cmp_entry);
	*out = v.v;
	return (long)v.n;
}

int configs_suggest(const char *kind, const char *name, char *buf, size_t n)
{
	struct configs_dirs d;
	struct configs_entry *e;
	const char **names;
	long ne;
	int k = -1;

	configs_dirs_init(&d);
	if ((ne = configs_list(&d, kind, &e)) <= 0)
		return -1;
	if ((names = prism_malloc((size_t)ne * sizeof(*names)))) {
		for (long i = 0; i < ne; i++)
			names[i] = e[i].name;
		k = usage_closest(name, names, (int)ne);
		if (k >= 0)
			snprintf(buf, n, "%s", e[k].name);
		free(names);
	}
	free(e);
	return k >= 0 ? 0 : -1;
}
