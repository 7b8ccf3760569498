/*
 * frame.h - the frameworks' own words for a model and a layout: a Hugging
 * Face config.json and a Megatron-LM argument list read into struct llm
 * and struct layout, and a layout written back as Megatron-LM arguments,
 * Megatron-Bridge (NeMo 2) recipe overrides or a torchtitan TOML fragment,
 * which read back (frame_import) to the same layout.
 *
 * The option names sit in one table keyed by the layout knob's id
 * (LAYOUT_KNOBS in layout.h), with the code of each knob whose options need
 * their own (its writer and readers): a knob a framework cannot express is named
 * in a comment line of the export, never dropped silently.  Where each
 * name comes from (Megatron-LM's megatron/training/arguments.py,
 * Megatron-Bridge's ConfigContainer, torchtitan's config/job_config.py,
 * transformers' configuration_*.py) is in docs/FORMATS.md.
 *
 * Nothing here prints: warnings (a config's fields that would change the
 * model but that prism does not model) come back as text for the caller.
 */
#ifndef PRISM_FRAME_H
#define PRISM_FRAME_H

#include <stdio.h>

#include "layout.h"
#include "llm.h"
#include "prism.h"

/* The largest file read (a config.json is a few kilobytes). */
#define FRAME_MAX_FILE (1 << 20)

enum frame_kind { FRAME_MEGATRON, FRAME_BRIDGE, FRAME_TORCHTITAN, FRAME_N };

/* "megatron", "bridge", "torchtitan"; and back (-1 if unknown). */
const char *frame_name(int fw);
int frame_parse(const char *s);

/* What a model file holds, by its first bytes: '{' a Hugging Face
 * config.json, "--" (or a launcher line holding " --") Megatron-LM
 * arguments, anything else a prism model file (libconfig). */
enum frame_file { FRAME_FILE_CFG, FRAME_FILE_HF, FRAME_FILE_MEGATRON };
int frame_sniff(const char *path);

/* The whole of path (at most FRAME_MAX_FILE bytes) into a new buffer with
 * KJSON_PADDING readable zero bytes after its end (*len the file's
 * length).  0, or PRISM_EIO / PRISM_EFORMAT / PRISM_ENOMEM naming the
 * file.  free() the buffer. */
int frame_read(const char *path, char **buf, size_t *len, struct prism_err *err);

/* What an import found beyond struct llm and struct layout. */
struct frame_extra {
	int mtp_layers;	 /* multi-token prediction layers (DeepSeek-V3's
			 * num_nextn_predict_layers, Megatron-LM's
			 * --mtp-num-layers), as read (also into llm.h mtp_layers) */
	int gbs;	 /* the global batch (sequences), 0 if not given */
	int gpus;	 /* the world size a launcher line gives (torchrun
			 * --nnodes x --nproc-per-node), 0 if not given */
	int instances;	 /* Megatron-LM's --num-distributed-optimizer-instances
			 * (0: one): the sharding group is dp x cp / it */
	char warn[1024]; /* "; "-separated warnings, "" if none */
};

/*
 * A Hugging Face config.json (buf[0..len), padded as frame_read leaves it;
 * path for messages) into *m: model_type llama, mistral, mixtral, qwen2,
 * qwen3, qwen3_moe, deepseek_v2, deepseek_v3, gpt_oss, gemma2, gemma3
 * (its text_config), gemma3_text or phi3 (docs/FORMATS.md gives each
 * field's mapping).  Fields that would change the model but are not
 * modelled are named in x->warn.  0, or PRISM_EFORMAT naming the file and
 * the field (an unknown model_type: the fields prism could not map).
 */
int frame_hf_parse(const char *path, const char *buf, size_t len, struct llm *m,
		   struct frame_extra *x, struct prism_err *err);

/*
 * A framework's text (fw: Megatron-LM arguments, Bridge overrides,
 * torchtitan TOML) into *m and *l: the model's fields the text gives
 * (Megatron-LM's --num-layers ...) over base's (NULL: none; torchtitan's
 * text names no shape, and its layers per virtual stage need base's
 * layers), the knobs it sets
 * (their bits in *given; l starts as layout_default), the global batch
 * and the world size in *x.  dp, microbatches and Megatron-LM's sharding
 * group are not set: they follow from the world size, the global batch and
 * the optimizer's instances (frame_resolve).  Options the
 * importer does not know are named in x->warn.  0, or PRISM_EFORMAT
 * naming path, the line and the option.
 */
int frame_import(int fw, const char *path, const char *text, size_t n, const struct llm *base,
		 struct llm *m, struct layout *l, layout_mask *given, struct frame_extra *x,
		 struct prism_err *err);

/* A model from path whatever it holds (frame_sniff): a prism model file
 * (llm_load), a config.json (frame_hf_parse) or Megatron-LM arguments
 * (frame_import's model: --num-layers, --hidden-size,
 * --num-attention-heads, --seq-length and --vocab-size required, the FFN
 * as arguments.py defaults it).  Warnings in x->warn.  0, or the error. */
int frame_load_model(const char *path, struct llm *m, struct frame_extra *x, struct prism_err *err);

/* dp from gpus (gpus / (tp pp cp), when gpus > 0), the sharding group from
 * the distributed optimizer's instances (dp cp / instances, when > 1) and
 * microbatches from the global batch (gbs / (mbs dp), when gbs > 0), with
 * their bits added to *given: what frame_import leaves in x, resolved.
 * 0, or PRISM_EARG where they do not divide. */
int frame_resolve(struct layout *l, layout_mask *given, int gpus, int gbs, int instances,
		  struct prism_err *err);

/* Write layout l of model m as framework fw's text: the knobs it
 * expresses, each with its option, and one comment line naming those it
 * cannot (with their values).  The first line is a comment naming the
 * GPUs: tp x pp x dp x cp.  0, or PRISM_ENOMEM (nothing written). */
int frame_export(FILE *f, int fw, const struct llm *m, const struct layout *l);

/* 1 when framework fw expresses knob k at its value in l and m
 * (frame_export writes it, where it applies, and frame_import reads it
 * back): Megatron-LM has no GPipe, torchtitan no ZeRO-1/2, ... */
int frame_expresses(int fw, int k, const struct llm *m, const struct layout *l);

#endif
