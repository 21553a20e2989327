// Builds against an installed cujit and compiles a kernel to a cubin (no GPU needed).
#include <cujit/cujit.hpp>

#include <iostream>

int main() {
  cujit::SourceProgram program;
  program.source = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }";
  cujit::CompiledProgram compiled = cujit::compile(program, cujit::Target::parse("sm_80"));
  std::cout << "consumer compiled " << compiled.binary.size() << " bytes for "
            << compiled.target.name() << "\n";
  return compiled.binary.empty() ? 1 : 0;
}
