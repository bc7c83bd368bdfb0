/* ReadFileBytes, ReadTextFile: a whole file, for the test programs that load PTX and images.
 * Plain C, shared by tests/e2e (common.h) and tests/remote. */
#ifndef PVGPU_TESTS_E2E_READ_FILE_H_
#define PVGPU_TESTS_E2E_READ_FILE_H_

#include <stdio.h>
#include <stdlib.h>

/* A whole file, NUL-terminated (so text can be used as a string), its size in *size when
 * size is not NULL. Exits with a message when the file cannot be read: a test cannot go on
 * without it. */
__attribute__((unused)) static char* ReadFileBytes(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* bytes = (char*)malloc((size_t)n + 1);
  if (n < 0 || bytes == NULL || fread(bytes, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  bytes[n] = '\0';
  fclose(f);
  if (size != NULL) *size = (size_t)n;
  return bytes;
}

__attribute__((unused)) static char* ReadTextFile(const char* path) {
  return ReadFileBytes(path, NULL);
}

#endif /* PVGPU_TESTS_E2E_READ_FILE_H_ */
