// The kernel cache's configuration and counters (include/cujit/cache.hpp), as in C++.
#include "bindings.hpp"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace cujit::python {
namespace {

void bind_config(nb::module_& m) {
  nb::class_<CacheConfig>(m, "CacheConfig",
                          "How the kernel cache stores kernels (cujit::CacheConfig's fields).")
      .def(nb::init<>())
      .def_static("from_environment", &CacheConfig::from_environment)
      .def_rw("writable", &CacheConfig::writable)
      .def_rw("directory", &CacheConfig::directory)
      .def_rw("database_path", &CacheConfig::database_path)
      .def_rw("deployment_databases", &CacheConfig::deployment_databases)
      .def_rw("record_path", &CacheConfig::record_path)
      .def_rw("max_size", &CacheConfig::max_size)
      .def_rw("allow_foreign_owner", &CacheConfig::allow_foreign_owner)
      .def_rw("busy_timeout_ms", &CacheConfig::busy_timeout_ms)
      .def_rw("preload_records", &CacheConfig::preload_records)
      .def_rw("lease_timeout_ms", &CacheConfig::lease_timeout_ms)
      .def_rw("remote_url", &CacheConfig::remote_url)
      .def_rw("remote_connect_timeout_ms", &CacheConfig::remote_connect_timeout_ms)
      .def_rw("remote_timeout_ms", &CacheConfig::remote_timeout_ms)
      .def_rw("remote_backoff_ms", &CacheConfig::remote_backoff_ms)
      .def_rw("remote_lease_ms", &CacheConfig::remote_lease_ms)
      .def_rw("signing_key_path", &CacheConfig::signing_key_path)
      .def_rw("trusted_keys_path", &CacheConfig::trusted_keys_path)
      .def_rw("trust_any_writer", &CacheConfig::trust_any_writer)
      .def_rw("require_signed_deployments", &CacheConfig::require_signed_deployments);
}

void bind_stats(nb::module_& m) {
  nb::class_<CacheStats>(m, "CacheStats", "Counters of the kernel cache (cujit::CacheStats).")
      .def_ro("memory_hits", &CacheStats::memory_hits)
      .def_ro("disk_hits", &CacheStats::disk_hits)
      .def_ro("deployment_hits", &CacheStats::deployment_hits)
      .def_ro("arch_specific_hits", &CacheStats::arch_specific_hits)
      .def_ro("compatible_cubin_hits", &CacheStats::compatible_cubin_hits)
      .def_ro("ptx_hits", &CacheStats::ptx_hits)
      .def_ro("deployment_refused", &CacheStats::deployment_refused)
      .def_ro("misses", &CacheStats::misses)
      .def_ro("nvrtc_compilations", &CacheStats::nvrtc_compilations)
      .def_ro("warnings", &CacheStats::warnings)
      .def_ro("remote_hits", &CacheStats::remote_hits)
      .def_ro("remote_misses", &CacheStats::remote_misses)
      .def_ro("remote_refused", &CacheStats::remote_refused)
      .def_ro("remote_published", &CacheStats::remote_published)
      .def_ro("remote_errors", &CacheStats::remote_errors)
      .def_ro("remote_lookup_us", &CacheStats::remote_lookup_us)
      .def_ro("remote_lease_waits", &CacheStats::remote_lease_waits)
      .def_ro("remote_lease_served", &CacheStats::remote_lease_served);
}

}  // namespace

void bind_cache(nb::module_& m) {
  bind_config(m);
  bind_stats(m);
  m.def("configure_cache", &configure_cache, nb::call_guard<nb::gil_scoped_release>());
  m.def("cache_config", &cache_config);
  m.def("disable_cache", &disable_cache);
  m.def("add_deployment_database", &add_deployment_database,
        nb::call_guard<nb::gil_scoped_release>());
  m.def("prefetch_cache", &prefetch_cache);
  m.def("default_cache_directory", &default_cache_directory);
  m.def("cache_stats", &cache_stats);
  m.def("reset_cache_stats", &reset_cache_stats);
}

}  // namespace cujit::python
