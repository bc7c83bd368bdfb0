// pvgpu-ptx-check FILE...: loads PTX files and prints the JIT error/info logs. A quick way to
// find out whether the engine accepts the PTX a program ships.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "ptx/ptx.h"

int main(int argc, char** argv) {
  int failures = 0;
  for (int i = 1; i < argc; ++i) {
    std::ifstream f(argv[i]);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string err, info;
    auto p = pvgpu::ptx::LoadProgram(ss.str(), &err, &info);
    if (!p.ok()) {
      std::printf("%s: FAILED: %s\n", argv[i], p.status().message().c_str());
      ++failures;
      continue;
    }
    std::printf("%s: ok: %s", argv[i], info.c_str());
  }
  return failures ? 1 : 0;
}
