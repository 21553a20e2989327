"""Shared fixtures: GPU tests skip with a reason where there is no device, CuPy or PyTorch;
every test gets its own cache directory."""

import importlib

import pytest

import cujit


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    # The process's cache was configured at `import cujit` (which starts its read-ahead), from
    # the environment of the whole run: each test configures its own directory, and the run's
    # configuration comes back after it.
    directory = tmp_path / "cache"
    monkeypatch.setenv("CUJIT_CACHE_DIR", str(directory))
    saved = cujit.cache_config()
    config = cujit.cache_config()
    config.directory = str(directory)
    config.database_path = str(directory / "kernels.db")
    cujit.configure_cache(config)
    yield
    cujit.configure_cache(saved)


def _library(name):
    if cujit.device_count() == 0:
        pytest.skip("no CUDA device or driver present")
    try:
        return importlib.import_module(name)
    except ImportError:
        pytest.skip(f"{name} is not installed")


@pytest.fixture
def cupy():
    return _library("cupy")


@pytest.fixture
def torch():
    module = _library("torch")
    if not module.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return module


@pytest.fixture
def gpu():
    if cujit.device_count() == 0:
        pytest.skip("no CUDA device or driver present")
