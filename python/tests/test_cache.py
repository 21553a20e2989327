"""The kernel cache from Python, as in C++: configuration, counters, a recorded manifest, and a
deployment database that serves what was precompiled without compiling again."""

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import cujit


@pytest.fixture
def restore_cache():
    previous = cujit.cache_config()
    yield
    cujit.configure_cache(previous)


def test_configuration_and_counters_round_trip(tmp_path, restore_cache):
    config = cujit.CacheConfig()
    config.directory = str(tmp_path / "cache")
    config.record_path = str(tmp_path / "kernels.jsonl")
    config.max_size = 1 << 26
    cujit.configure_cache(config)
    assert cujit.cache_config().directory == config.directory
    cujit.reset_cache_stats()
    k = cujit.ElementwiseKernel("T x", "T y", "y = x * 3", "cache_triple")
    first = k.specialize(np.empty(64, np.float32), target="sm_90")
    again = k.specialize(np.empty(64, np.float32), target="sm_90")
    stats = cujit.cache_stats()
    assert stats.misses == 1 and stats.memory_hits >= 1
    assert (first.origin, again.origin) == ("compiled", "memory")
    entries = [json.loads(line) for line in open(config.record_path)]
    assert [e["name"] for e in entries] == ["cache_triple"]
    assert os.path.exists(os.path.join(config.directory, "kernels.db"))


def test_a_deployment_database_serves_without_compiling(tmp_path, restore_cache):
    tool = shutil.which("cujit-cache") or os.environ.get("CUJIT_TEST_TOOL")
    if tool is None:
        pytest.skip("the cujit-cache tool is not on PATH (CUJIT_TEST_TOOL names it)")
    record = cujit.CacheConfig()
    record.writable = False
    record.record_path = str(tmp_path / "kernels.jsonl")
    cujit.configure_cache(record)
    k = cujit.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "cache_sum")
    recorded = k.specialize(np.empty((128, 64), np.float32), target="sm_90", axis=1)
    db = str(tmp_path / "app.db")
    subprocess.run([tool, "precompile", record.record_path, "--arch", "sm_90", "-o", db],
                   check=True, capture_output=True)
    deployed = cujit.CacheConfig()
    deployed.writable = False
    cujit.configure_cache(deployed)
    cujit.add_deployment_database(db)
    cujit.reset_cache_stats()
    served = k.specialize(np.empty((128, 64), np.float32), target="sm_90", axis=1)
    assert served.origin == "deployment" and served.request_key == recorded.request_key
    assert cujit.cache_stats().deployment_hits == 1
    with pytest.raises(cujit.CacheError):
        cujit.add_deployment_database(str(tmp_path / "missing.db"))
