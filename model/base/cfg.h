/*
 * cfg.h - reading libconfig files with errors that name the file, the line
 * and the setting at fault ("configs/hw/x.cfg:12: 'gpu.hbm_capacity_GB'
 * must be positive, not -1").  Shared by every loader (hardware, models,
 * sweeps).
 */
#ifndef PRISM_CFG_H
#define PRISM_CFG_H

#include <libconfig.h>

#include "prism.h"

/* The largest configuration file read (prism's are a few KB). */
#define CFG_MAX_BYTES (1u << 20)

/* config_init and the file's text parsed: 0, or PRISM_EIO (unreadable,
 * not a regular file) / PRISM_EFORMAT (syntax, with its line; more than
 * CFG_MAX_BYTES; a NUL byte; an @include line, which would read any file
 * it names) / PRISM_ENOMEM (cfg_parse); on error cf is destroyed. */
int cfg_read(config_t *cf, const char *path, struct prism_err *err);

/* config_init and text parsed into cf (path names it in messages): 0 (cf
 * to config_destroy), or PRISM_EFORMAT (syntax, with its line) or
 * PRISM_ENOMEM (an allocation inside libconfig failed: never a crash, nor
 * a setting dropped), cf then destroyed.  Every parse of prism's goes
 * through here: libconfig's allocations are prism's only inside it
 * (cfg.c). */
int cfg_parse(config_t *cf, const char *text, const char *path, struct prism_err *err);

/* The full name of setting `path` in group g (or the root) for messages. */
void cfg_full_name(config_setting_t *g, const char *path, char *buf, size_t n);

/* A number at path in group g (NULL: the root) in lo..hi, a whole number
 * when whole, times scale, into *out.  Missing, not a number, out of range
 * (NaN and the infinities are) or a fraction where a whole number is
 * wanted are PRISM_EFORMAT naming the file, the line, the setting and the
 * range: "x.cfg:7: 'node.gpus' must be a whole number in 1..1024, not 0". */
int cfg_range(const char *file, const config_t *cf, config_setting_t *g, const char *path,
	      double lo, double hi, int whole, double scale, double *out, struct prism_err *err);

/* As cfg_range for an optional whole number in min..max: *out = def when
 * absent. */
int cfg_int_opt(const char *file, const config_t *cf, config_setting_t *g, const char *path,
		int def, int min, int max, int *out, struct prism_err *err);

/* A string at path (required) into out[0..n). */
int cfg_text(const char *file, const config_t *cf, config_setting_t *g, const char *path, char *out,
	     size_t n, struct prism_err *err);

#endif
