/* A libFuzzer target over pbc's in-process front door: program text ->
 * parse guard and MLIR's parser -> input check -> S1 (bufferization), the
 * part of the compiler that sees untrusted text first. No crash
 * containment here (it is what the fuzzer looks past): a crash, a
 * sanitizer report or a leak is a finding.
 *
 *   tests/fuzz/libfuzzer.sh [SECONDS]     # clang-22, -fsanitize=fuzzer,address,undefined
 *
 * Built without libFuzzer (Bazel, //tests/fuzz:frontdoor_replay), main()
 * below replays the files given (the corpus) through the same function. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbc/session.h"
#include "pbc/target_select.h"

/* One session for every input: the cpu plugin (found through
 * $PBC_PLUGIN_PATH) and its default chip, for the pipelines' ${keys}. */
static PbcSession *session(void) {
  static PbcSession *s;
  static PbcPluginSet plugins;
  static PbcChip chip;
  if (!s) {
    const PbcLoadedPlugin *cpu = NULL;
    pbcPluginDiscover(NULL, 0, &plugins);
    if (!pbcSelectTarget(&plugins, "cpu", NULL, &cpu, &chip, stderr))
      return NULL;
    PbcSessionOptions o = {.plugin = cpu->table, .chip = &chip, .optLevel = 3};
    s = pbcSessionCreate(&o);
  }
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  PbcSession *s = session();
  if (!s)
    abort();
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = 0;
  MlirModule m = pbcSessionParseText(s, text, "fuzz-input");
  if (!mlirModuleIsNull(m)) {
    if (pbcSessionCheckInput(s, m))
      pbcSessionRunStages(s, m, 1, 1);
    mlirModuleDestroy(m);
  }
  free(text);
  return 0;
}

#ifndef PBC_LIBFUZZER
/* Replays each file named on the command line; exit 0 if none crashed. */
int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      perror(argv[i]);
      return 2;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = fread(buf, 1, (size_t)(n > 0 ? n : 0), f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
  }
  printf("replayed %d inputs\n", argc - 1);
  return 0;
}
#endif
