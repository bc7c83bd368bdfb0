/* ReadTextFile: a whole file as a NUL-terminated string, for the test programs that load PTX.
 * Plain C, shared by tests/e2e (common.h) and tests/remote. */
#ifndef PVGPU_TESTS_E2E_READ_FILE_H_
#define PVGPU_TESTS_E2E_READ_FILE_H_

#include <stdio.h>
#include <stdlib.h>

/* Exits with a message when the file cannot be read: a test cannot go on without it. */
__attribute__((unused)) static char* ReadTextFile(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = (char*)malloc((size_t)size + 1);
  if (size < 0 || text == NULL || fread(text, 1, (size_t)size, f) != (size_t)size) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  text[size] = '\0';
  fclose(f);
  return text;
}

#endif /* PVGPU_TESTS_E2E_READ_FILE_H_ */
