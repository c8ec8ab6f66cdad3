/*===- pbc/chip.h - Chip descriptions ------------------------------------===*\
|* A chip description is data: `key = value` lines from a plugin (see         *|
|* targets/NAME/chips/). Cost models and pipeline files read it by key; nothing  *|
|* in the core hard-codes a chip. Pipeline text may say ${key} to use a value.*|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_CHIP_H
#define PBC_CHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pbc/strbuf.h"

#define PBC_CHIP_MAX_KEYS 96

typedef struct PbcChip {
  int numKeys;
  char *keys[PBC_CHIP_MAX_KEYS];
  char *values[PBC_CHIP_MAX_KEYS];
} PbcChip;

/* Parses text; on error writes "LINE: message" into err and returns false. */
bool pbcChipParse(const char *text, PbcChip *chip, char *err, size_t errLen);
void pbcChipDestroy(PbcChip *chip);
/* Sets (or overrides) key; false if the description is full. */
bool pbcChipSet(PbcChip *chip, const char *key, const char *value);

/* Applies one `key=value` override (the drivers' --chip-set) to a key the
 * description already has, so a misspelt key is an error, not a silent new
 * one. On error writes the reason into err and returns false. */
bool pbcChipOverride(PbcChip *chip, const char *keyValue, char *err, size_t errLen);

/* Borrowed value of key, or NULL. */
const char *pbcChipGet(const PbcChip *chip, const char *key);
int64_t pbcChipGetInt(const PbcChip *chip, const char *key, int64_t dflt);
double pbcChipGetDouble(const PbcChip *chip, const char *key, double dflt);
const char *pbcChipName(const PbcChip *chip);

/* Prints all keys, aligned, for --target-info. */
void pbcChipPrint(const PbcChip *chip, PbcStrBuf *out);

/* Replaces every ${key} in text by the chip's value. Returns false and names
 * the missing key in err if one is unknown. */
bool pbcChipSubstitute(const PbcChip *chip, const char *text, PbcStrBuf *out,
                       char *err, size_t errLen);

#endif
