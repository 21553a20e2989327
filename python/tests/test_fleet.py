"""The fleet tier from Python, without a GPU: a real redis-server on a unix socket, a signing key
from `cujit-cache keygen`, and offline specialize() publishing and loading through
cujit.CacheConfig's remote settings (docs/fleet.md)."""

import os
import shutil
import subprocess
import time

import numpy as np
import pytest

import cujit


@pytest.fixture
def fleet(tmp_path):
    server = shutil.which(os.environ.get("CUJIT_REDIS_SERVER", "redis-server"))
    tool = shutil.which("cujit-cache") or os.environ.get("CUJIT_TEST_TOOL")
    if server is None or tool is None:
        if os.environ.get("CUJIT_TEST_REQUIRE_REDIS") == "1" and server is None:
            pytest.fail("redis-server is required (CUJIT_TEST_REQUIRE_REDIS=1)")
        pytest.skip("needs redis-server and the cujit-cache tool (CUJIT_TEST_TOOL)")
    socket = tmp_path / "redis.sock"
    process = subprocess.Popen([server, "--port", "0", "--unixsocket", str(socket),
                                "--save", "", "--appendonly", "no"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(500):
        if socket.exists():
            break
        time.sleep(0.01)
    subprocess.run([tool, "keygen", str(tmp_path / "fleet")], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([tool, "keygen", str(tmp_path / "other")], check=True,
                   stdout=subprocess.DEVNULL)
    saved = cujit.cache_config()
    yield tmp_path, f"unix://{socket}"
    cujit.configure_cache(saved)
    process.terminate()
    process.wait()


def _config(directory, url, signing=None, trusted=None):
    config = cujit.CacheConfig()
    config.directory, config.remote_url = str(directory), url
    if signing:
        config.signing_key_path = str(signing)
    if trusted:
        config.trusted_keys_path = str(trusted)
    return config


def test_a_kernel_published_by_one_machine_loads_on_another(fleet):
    tmp, url = fleet
    kernel = cujit.ElementwiseKernel("T x", "T y", "y = 2 * x", "fleet_twice")
    like = np.zeros(1000, np.float32)
    # The builder compiles, signs and publishes.
    cujit.configure_cache(_config(tmp / "builder", url, tmp / "fleet.key", tmp / "fleet.pub"))
    assert kernel.specialize(like, like, target="sm_90").origin == "compiled"
    # Another machine (an empty local cache) trusting the builder's key loads it.
    cujit.configure_cache(_config(tmp / "reader", url, trusted=tmp / "fleet.pub"))
    cujit.reset_cache_stats()
    assert kernel.specialize(like, like, target="sm_90").origin == "remote"
    assert cujit.cache_stats().remote_hits == 1


def test_entries_signed_by_an_untrusted_key_are_refused(fleet):
    tmp, url = fleet
    kernel = cujit.ElementwiseKernel("T x", "T y", "y = 3 * x", "fleet_thrice")
    like = np.zeros(1000, np.float32)
    cujit.configure_cache(_config(tmp / "builder", url, tmp / "fleet.key", tmp / "fleet.pub"))
    kernel.specialize(like, like, target="sm_90")
    cujit.configure_cache(_config(tmp / "stranger", url, trusted=tmp / "other.pub"))
    cujit.reset_cache_stats()
    assert kernel.specialize(like, like, target="sm_90").origin == "compiled"
    stats = cujit.cache_stats()
    assert stats.remote_hits == 0 and stats.remote_refused == 1
