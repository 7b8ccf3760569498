/*
 * configs.h - where configuration files are found by name, and which ship.
 *
 * A bare name given for a hardware profile, a model or a sweep ("h100-dgx")
 * is looked up as DIR/KIND/NAME[.cfg] (KIND "hw", "models" or "sweeps") in
 * these folders, first first:
 *   1. $PRISM_CONFIG_DIR, when set (a folder holding hw/, models/, sweeps/);
 *   2. ./configs, in the working directory;
 *   3. the installed share/prism/ beside the binary (BINDIR/../share/prism
 *      as installed by `cmake --install`, found from /proc/self/exe, so an
 *      installed tree may be moved);
 *   4. the source tree's configs/ (a binary run from its build folder).
 * Nothing here prints; the command layer does.
 */
#ifndef PRISM_CONFIGS_H
#define PRISM_CONFIGS_H

#include <stddef.h>

#define CONFIGS_MAX_DIRS 4

struct configs_dirs {
	const char *dir[CONFIGS_MAX_DIRS]; /* existing or not; point into the
					    * environment, literals or installed */
	const char *why[CONFIGS_MAX_DIRS]; /* "PRISM_CONFIG_DIR", "./configs", ... */
	int n;
	char installed[4096]; /* BINDIR/../share/prism, or "" */
};

/* The folders above, in order, into *d (which owns nothing else). */
void configs_dirs_init(struct configs_dirs *d);

/* A configuration that ships: its name (the file name without .cfg) and
 * the file that defines it (the first folder that has the name wins). */
struct configs_entry {
	char name[128];
	char path[4352];
};

/* Every NAME.cfg of kind in the folders of d that is a regular file (a
 * FIFO would block whoever reads it), each name once (the first folder's),
 * sorted by name; *out malloc'd (free it).  Returns the count, or -1 when
 * out of memory. */
long configs_list(const struct configs_dirs *d, const char *kind, struct configs_entry **out);

/* The shipped name of kind closest to name (usage_closest) into buf, 0;
 * or -1 when none is close. */
int configs_suggest(const char *kind, const char *name, char *buf, size_t n);

#endif
