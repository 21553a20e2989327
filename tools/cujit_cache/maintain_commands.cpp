#include "tools/cujit_cache/maintain_commands.hpp"

#include "cache/database_admin.hpp"
#include "cache/database_transfer.hpp"
#include "cache/units.hpp"
#include "tools/cujit_cache/tool_util.hpp"

#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <iostream>
#include <map>

namespace cujit::tool {

using detail::DatabaseAdmin;
using detail::DatabaseTransfer;
using detail::SqliteStore;

namespace {

// Copies every intact entry of `from`, with its request keys and signatures, into `to` and
// reports it; `verb`: "exported" or "imported".
int copy(const Options& o, SqliteStore& from, SqliteStore& to, const char* verb) {
  std::uint64_t copied = 0;
  std::uint64_t present = 0;
  std::uint64_t kept = 0;
  DatabaseTransfer source(from);
  DatabaseTransfer destination(to);
  const std::map<std::string, std::string> signatures = source.signatures();
  const std::uint64_t damaged = source.for_each_record(
      [&](const detail::CacheRecord& r, const std::vector<std::string>& keys) {
        const auto outcome = destination.import_record(r, keys, signatures);
        (outcome.inserted ? copied : present) += 1;
        kept += outcome.kept_requests;
      });
  if (o.json) {
    print_json({{"from", from.name()},
                {"to", to.name()},
                {"copied", copied},
                {"already_present", present},
                {"damaged_skipped", damaged},
                {"requests_kept", kept}});
  } else {
    std::cout << fmt::format("{} {} from {} to {} ({} already present)\n", verb,
                             count(copied, "entry", "entries"), from.name(), to.name(), present);
    if (damaged > 0) {
      std::cout << fmt::format("skipped {} of {} (run cujit-cache verify on it)\n",
                               count(damaged, "damaged entry", "damaged entries"), from.name());
    }
    if (kept > 0) {
      std::cout << fmt::format("kept {} of {} that {} maps to other entries\n",
                               count(kept, "request mapping", "request mappings"), to.name(),
                               from.name());
    }
  }
  return damaged > 0 ? 1 : 0;
}

}  // namespace

int prune(const Options& o, const std::string& max_size, const std::string& older_than,
          const std::vector<std::string>& archs, bool stale) {
  detail::PruneOptions p;
  p.stale = stale;
  if (!max_size.empty()) {
    p.max_size = detail::parse_byte_size(max_size);
    if (!p.max_size)
      throw ArgumentError("cujit-cache: --max-size '" + max_size + "' is not a size");
  }
  if (!older_than.empty()) {
    p.older_than_ms = detail::parse_duration_ms(older_than);
    if (!p.older_than_ms) {
      throw ArgumentError("cujit-cache: --older-than '" + older_than +
                          "' is not a duration (like 90m, 12h, 30d)");
    }
  }
  for (const auto& list : archs) {
    for (const auto& name : split_list(list)) p.targets.push_back(Target::parse(name).name());
  }
  if (!p.max_size && !p.older_than_ms && p.targets.empty() && !p.stale) {
    throw ArgumentError("cujit-cache: prune needs --max-size, --older-than, --arch or --stale");
  }
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  DatabaseAdmin admin(*store);
  std::uint64_t removed = admin.prune(p);
  if (o.json) {
    print_json({{"path", db_path(o)}, {"removed", removed}, {"entries", admin.list().size()}});
  } else {
    std::cout << fmt::format("{}: removed {}, {} left\n", db_path(o),
                             count(removed, "entry", "entries"), admin.list().size());
  }
  return 0;
}

int export_to(const Options& o, const std::string& out) {
  auto from = SqliteStore::open_existing(db_path(o), store_options(o));
  check_output(o, out);
  auto to = SqliteStore::open_writable(out, store_options(o));
  int rc = copy(o, *from, *to, "exported");
  DatabaseTransfer(*to).finalize_for_deployment();  // an exported database is usually shipped
  return rc;
}

int import_from(const Options& o, const std::string& in) {
  auto from = SqliteStore::open_existing(in, store_options(o));
  std::string path = db_path(o);
  auto to = ::access(path.c_str(), F_OK) == 0 ? SqliteStore::open_existing(path, store_options(o))
                                              : SqliteStore::open_writable(path, store_options(o));
  return copy(o, *from, *to, "imported");
}

// `yes` (--yes): confirmed. On a terminal, clear asks for it; scripts (stdin not a terminal)
// clear as before.
int clear(const Options& o, bool yes) {
  if (!yes && ::isatty(STDIN_FILENO) != 0) {
    throw ArgumentError("cujit-cache: clear removes every entry of " + db_path(o) +
                        "; pass --yes to confirm");
  }
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  std::uint64_t removed = DatabaseAdmin(*store).clear();
  if (o.json) {
    print_json({{"path", db_path(o)}, {"removed", removed}});
  } else {
    std::cout << fmt::format("{}: removed {}\n", db_path(o), count(removed, "entry", "entries"));
  }
  return 0;
}

}  // namespace cujit::tool
