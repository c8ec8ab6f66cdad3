/* Chip descriptions: `key = value` text, parsed once, read by key. */
#include "pbc/chip.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *trimDup(const char *b, const char *e) {
  while (b < e && isspace((unsigned char)*b))
    ++b;
  while (e > b && isspace((unsigned char)e[-1]))
    --e;
  char *s = malloc((size_t)(e - b) + 1);
  memcpy(s, b, (size_t)(e - b));
  s[e - b] = 0;
  return s;
}

static int findKey(const PbcChip *chip, const char *key) {
  for (int i = 0; i < chip->numKeys; ++i)
    if (strcmp(chip->keys[i], key) == 0)
      return i;
  return -1;
}

bool pbcChipParse(const char *text, PbcChip *chip, char *err, size_t errLen) {
  memset(chip, 0, sizeof(*chip));
  int lineNo = 0;
  for (const char *p = text; *p;) {
    const char *eol = strchr(p, '\n');
    if (!eol)
      eol = p + strlen(p);
    ++lineNo;
    const char *hash = memchr(p, '#', (size_t)(eol - p));
    const char *end = hash ? hash : eol;
    const char *eq = memchr(p, '=', (size_t)(end - p));
    char *probe = trimDup(p, end);
    bool blank = probe[0] == 0;
    free(probe);
    if (!blank) {
      if (!eq) {
        snprintf(err, errLen, "%d: expected 'key = value'", lineNo);
        pbcChipDestroy(chip);
        return false;
      }
      char *key = trimDup(p, eq), *value = trimDup(eq + 1, end);
      int i = findKey(chip, key);
      if (i >= 0) {
        free(chip->values[i]);
        chip->values[i] = value;
        free(key);
      } else if (chip->numKeys == PBC_CHIP_MAX_KEYS) {
        snprintf(err, errLen, "%d: too many keys", lineNo);
        free(key);
        free(value);
        pbcChipDestroy(chip);
        return false;
      } else {
        chip->keys[chip->numKeys] = key;
        chip->values[chip->numKeys++] = value;
      }
    }
    p = *eol ? eol + 1 : eol;
  }
  if (!pbcChipGet(chip, "name")) {
    snprintf(err, errLen, "%d: missing required key 'name'", lineNo);
    pbcChipDestroy(chip);
    return false;
  }
  return true;
}

bool pbcChipSet(PbcChip *chip, const char *key, const char *value) {
  int i = findKey(chip, key);
  if (i < 0) {
    if (chip->numKeys == PBC_CHIP_MAX_KEYS)
      return false;
    i = chip->numKeys++;
    chip->keys[i] = strdup(key);
  } else {
    free(chip->values[i]);
  }
  chip->values[i] = strdup(value);
  return true;
}

bool pbcChipOverride(PbcChip *chip, const char *keyValue, char *err, size_t errLen) {
  const char *eq = strchr(keyValue, '=');
  char key[128];
  size_t n = eq ? (size_t)(eq - keyValue) : 0;
  if (!eq || n == 0 || n >= sizeof(key) || !eq[1]) {
    snprintf(err, errLen, "expected KEY=VALUE, got '%s'", keyValue);
    return false;
  }
  memcpy(key, keyValue, n);
  key[n] = 0;
  if (findKey(chip, key) < 0 || strcmp(key, "name") == 0) {
    snprintf(err, errLen, "chip '%s' has no key '%s' to override (see --target-info)",
             pbcChipName(chip), key);
    return false;
  }
  /* A number stays a number: the cost models read these with strtoll, and
   * `cores=abc` would silently become 0. */
  const char *old = pbcChipGet(chip, key);
  char *end;
  strtod(old, &end);
  bool wasNumber = *old && !*end;
  strtod(eq + 1, &end);
  if (wasNumber && *end) {
    snprintf(err, errLen, "key '%s' takes a number (it is %s on chip '%s'), got '%s'", key, old,
             pbcChipName(chip), eq + 1);
    return false;
  }
  return pbcChipSet(chip, key, eq + 1);
}

void pbcChipDestroy(PbcChip *chip) {
  for (int i = 0; i < chip->numKeys; ++i) {
    free(chip->keys[i]);
    free(chip->values[i]);
  }
  chip->numKeys = 0;
}

const char *pbcChipGet(const PbcChip *chip, const char *key) {
  int i = findKey(chip, key);
  return i < 0 ? NULL : chip->values[i];
}

int64_t pbcChipGetInt(const PbcChip *chip, const char *key, int64_t dflt) {
  const char *v = pbcChipGet(chip, key);
  return v && *v ? strtoll(v, NULL, 0) : dflt;
}

double pbcChipGetDouble(const PbcChip *chip, const char *key, double dflt) {
  const char *v = pbcChipGet(chip, key);
  return v && *v ? strtod(v, NULL) : dflt;
}

const char *pbcChipName(const PbcChip *chip) {
  const char *n = pbcChipGet(chip, "name");
  return n ? n : "?";
}

void pbcChipPrint(const PbcChip *chip, PbcStrBuf *out) {
  size_t w = 0;
  for (int i = 0; i < chip->numKeys; ++i)
    if (strlen(chip->keys[i]) > w)
      w = strlen(chip->keys[i]);
  for (int i = 0; i < chip->numKeys; ++i)
    pbcStrBufPrintf(out, "  %-*s = %s\n", (int)w, chip->keys[i],
                    chip->values[i]);
}

bool pbcChipSubstitute(const PbcChip *chip, const char *text, PbcStrBuf *out,
                       char *err, size_t errLen) {
  for (const char *p = text; *p;) {
    const char *d = strstr(p, "${");
    if (!d) {
      pbcStrBufPuts(out, p);
      break;
    }
    pbcStrBufAppend(out, p, (size_t)(d - p));
    const char *close = strchr(d, '}');
    if (!close) {
      snprintf(err, errLen, "unterminated '${'");
      return false;
    }
    char key[128];
    size_t n = (size_t)(close - d - 2);
    if (n >= sizeof(key))
      n = sizeof(key) - 1;
    memcpy(key, d + 2, n);
    key[n] = 0;
    const char *v = pbcChipGet(chip, key);
    if (!v) {
      snprintf(err, errLen, "chip '%s' has no key '%s'", pbcChipName(chip),
               key);
      return false;
    }
    pbcStrBufPuts(out, v);
    p = close + 1;
  }
  return true;
}
