// LinkInput: its kinds' names, reading one from a file, and the checks of its bytes.
#include "core/link_input.hpp"

#include "core/checked_file.hpp"

#include <cujit/error.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

namespace cujit {
namespace detail {
namespace {

std::uint64_t little_endian(std::string_view bytes, std::size_t offset, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) {
    v |= std::uint64_t(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  }
  return v;
}

// Why `bytes` are not a cubin: a 64-bit little-endian ELF for EM_CUDA (190) whose program and
// section header tables lie inside the bytes. Empty when they are.
std::string not_a_cubin(std::string_view bytes) {
  constexpr std::size_t kElf64HeaderSize = 64;
  if (bytes.size() < kElf64HeaderSize || bytes.substr(0, 4) !=
                                             "\x7f"
                                             "ELF") {
    return "no ELF header";
  }
  if (bytes[4] != 2 || bytes[5] != 1) return "not a 64-bit little-endian ELF";
  if (little_endian(bytes, 18, 2) != 190) return "an ELF file for another machine than CUDA";
  auto table_fits = [&](std::size_t offset_at, std::size_t entry_size_at, std::size_t count_at) {
    const std::uint64_t offset = little_endian(bytes, offset_at, 8);
    const std::uint64_t entry = little_endian(bytes, entry_size_at, 2);
    const std::uint64_t count = little_endian(bytes, count_at, 2);
    return offset <= bytes.size() && entry * count <= bytes.size() - offset;
  };
  if (!table_fits(32, 54, 56) || !table_fits(40, 58, 60)) return "ELF header tables out of bounds";
  return {};
}

// Why `bytes` are not a fatbin: the header (magic 0xBA55ED50, header size, size of what
// follows) must describe no more than the bytes hold.
std::string not_a_fatbin(std::string_view bytes) {
  if (bytes.size() < 16 || little_endian(bytes, 0, 4) != 0xBA55ED50u) return "no fatbin header";
  const std::uint64_t header = little_endian(bytes, 6, 2);
  const std::uint64_t body = little_endian(bytes, 8, 8);
  if (header < 16 || header > bytes.size() || body > bytes.size() - header) {
    return "a fatbin header describing more bytes than there are";
  }
  return {};
}

std::string not_ptx(std::string_view bytes) {
  if (!bytes.empty() && bytes.back() == '\0') bytes.remove_suffix(1);
  if (bytes.find('\0') != std::string_view::npos) return "NUL bytes in PTX text";
  if (bytes.find(".version") == std::string_view::npos ||
      bytes.find(".target") == std::string_view::npos) {
    return "no .version and .target directives";
  }
  return {};
}

std::string not_lto_ir(std::string_view bytes) {
  if (bytes.size() < 16 || little_endian(bytes, 0, 4) != 0x7F4E43EDu) return "no LTO-IR header";
  return {};
}

}  // namespace

void check_link_input(const LinkInput& input, const std::string& who) {
  const std::string name = "link input '" + input.name + "'";
  std::string problem;
  switch (input.kind) {
    case LinkInput::Kind::LtoIr:
      problem = not_lto_ir(input.bytes);
      break;
    case LinkInput::Kind::Cubin:
      problem = not_a_cubin(input.bytes);
      break;
    case LinkInput::Kind::Fatbin:
      problem = not_a_fatbin(input.bytes);
      break;
    case LinkInput::Kind::Ptx:
      problem = not_ptx(input.bytes);
      break;
    default:
      throw ArgumentError(who + ": " + name + ": kind " +
                          std::to_string(static_cast<int>(input.kind)) +
                          " is not a LinkInput::Kind (expected LtoIr, Cubin, Fatbin or Ptx)");
  }
  if (input.bytes.empty()) throw ArgumentError(who + ": " + name + " is empty");
  if (!problem.empty()) {
    throw ArgumentError(who + ": " + name + " is not " + to_string(input.kind) + " code (" +
                        problem + ", in " + std::to_string(input.bytes.size()) + " bytes)");
  }
}

}  // namespace detail

const char* to_string(LinkInput::Kind kind) noexcept {
  switch (kind) {
    case LinkInput::Kind::LtoIr:
      return "ltoir";
    case LinkInput::Kind::Cubin:
      return "cubin";
    case LinkInput::Kind::Fatbin:
      return "fatbin";
    case LinkInput::Kind::Ptx:
      return "ptx";
  }
  return "unknown";
}

namespace {

LinkInput::Kind kind_of(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  const std::string extension = dot == std::string::npos ? "" : path.substr(dot + 1);
  for (auto kind : {LinkInput::Kind::LtoIr, LinkInput::Kind::Cubin, LinkInput::Kind::Fatbin,
                    LinkInput::Kind::Ptx}) {
    if (extension == to_string(kind)) return kind;
  }
  throw ArgumentError("cujit: link input " + path +
                      ": expected a .ltoir, .cubin, .fatbin or .ptx file");
}

// The bytes of the regular file `path`, at most kMaxLinkInputBytes. Opened without blocking
// (a FIFO would wait for a writer) and checked on the descriptor before anything is read.
std::string read_regular_file(const std::string& path) {
  auto fail = [&](const std::string& why) {
    throw ArgumentError("cujit: link input " + path + " cannot be read: " + why);
  };
  struct stat st {};
  const detail::FileDescriptor fd = detail::open_and_stat(path, true, st);
  if (!fd.valid()) fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail("not a regular file");
  auto bytes = detail::read_bounded(fd.get(), detail::kMaxLinkInputBytes);
  if (!bytes) {
    fail(errno == EFBIG ? "larger than " + std::to_string(detail::kMaxLinkInputBytes) + " bytes"
                        : std::string(std::strerror(errno)));
  }
  return std::move(*bytes);
}

}  // namespace

LinkInput LinkInput::from_file(const std::string& path) {
  LinkInput input;
  input.kind = kind_of(path);
  input.name = path.substr(path.rfind('/') + 1);
  input.bytes = read_regular_file(path);
  detail::check_link_input(input, "cujit: LinkInput::from_file(" + path + ")");
  return input;
}

}  // namespace cujit
