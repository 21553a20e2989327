#include "runtime/kernel_loader.hpp"

#include <cujit/error.hpp>

#include "codegen/snippet_analysis.hpp"
#include "runtime/context.hpp"

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>

namespace cujit::detail {

LoadedKernel load_kernel(std::shared_ptr<const CompiledProgram> program, const std::string& symbol,
                         int device) {
  LoadedKernel kernel;
  kernel.module = load_module(std::move(program), device);
  kernel.function = find_function(*kernel.module, symbol);
  if (kernel.function == nullptr) {
    throw ArgumentError("cujit: compiled code has no kernel '" + symbol + "'");
  }
  kernel.device = device;
  kernel.sm_count = device_properties(device).sm_count;
  return kernel;
}

void trace_specialize(const char* what, const std::string& kernel,
                      std::chrono::steady_clock::time_point t0,
                      std::chrono::steady_clock::time_point t1,
                      std::chrono::steady_clock::time_point t2) {
  static const bool trace = std::getenv("CUJIT_TRACE_SPECIALIZE") != nullptr;
  if (!trace) return;
  auto ms = [](std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  std::fprintf(
      stderr, "cujit: specialised %s'%s': target %.3f ms, cache/compile %.3f ms, load %.3f ms\n",
      what, kernel.c_str(), ms(t0, t1), ms(t1, t2), ms(t2, std::chrono::steady_clock::now()));
}

void rethrow_snippet_error(const CompileError& error, const std::string& kernel,
                           const std::vector<std::pair<std::string, std::string>>& snippets) {
  // NVRTC writes "label(line): error: message" for code under a #line directive.
  static const std::regex pattern(R"(([A-Za-z_]+)\((\d+)\): (error|catastrophic error): (.*))");
  std::vector<std::string> lines;
  {
    std::istringstream log(error.log());
    std::string line;
    while (std::getline(log, line)) lines.push_back(line);
  }
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::smatch m;
    if (!std::regex_search(lines[n], m, pattern)) continue;
    for (const auto& [label, text] : snippets) {
      if (label != m[1].str()) continue;
      const int snippet_line = std::stoi(m[2].str());
      // NVRTC echoes the line indented by two spaces and puts a caret under the column.
      int column = 0;
      if (n + 2 < lines.size()) {
        const std::size_t caret = lines[n + 2].find('^');
        if (caret != std::string::npos && caret >= 2 &&
            lines[n + 2].find_first_not_of(' ') == caret) {
          column = static_cast<int>(caret - 2 + 1);
        }
      }
      std::string message = "cujit: kernel '" + kernel + "': " + m[4].str() + "\n" +
                            format_snippet_location(label, text, snippet_line, column) +
                            "\n\nNVRTC log:\n" + error.log();
      throw CompileError(message, error.log(), error.options(), error.source(), snippet_line,
                         column);
    }
  }
  throw CompileError("cujit: kernel '" + kernel + "': " + error.what(), error.log(),
                     error.options(), error.source());
}

}  // namespace cujit::detail
