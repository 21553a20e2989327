"""What needs no GPU: construction, CuPy's parameters, errors and their classes, offline
specialisation, host arrays refused."""

import builtins

import numpy as np
import pytest

import cujit


def squared_diff():
    return cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")


def test_errors_derive_from_cupys_builtins():
    assert issubclass(cujit.TypeError, builtins.TypeError)
    assert issubclass(cujit.TypeError, cujit.Error)
    assert issubclass(cujit.SignatureError, ValueError)
    assert issubclass(cujit.ShapeError, ValueError)
    assert issubclass(cujit.ArgumentError, builtins.TypeError)
    assert issubclass(cujit.ArgumentError, ValueError)
    assert issubclass(cujit.CompilerUnavailableError, cujit.CompileError)
    assert "TypeError" not in cujit.__all__  # `from cujit import *` keeps the builtin


def test_a_malformed_signature_is_a_value_error_with_a_caret():
    with pytest.raises(ValueError) as caught:
        cujit.ElementwiseKernel("T x y", "T z", "z = x", "sig")
    assert isinstance(caught.value, cujit.SignatureError)
    assert str(caught.value).startswith(
        "cujit: kernel 'sig': in_params: expected ',' after parameter 'x', found 'y'")
    assert "\n  T x y\n      ^" in str(caught.value)


def test_cupys_constructor_parameters_are_accepted():
    k = cujit.ElementwiseKernel("T x", "T y", "y = x", name="copy", reduce_dims=False,
                                preamble="#define TWO 2", no_return=False, return_tuple=True,
                                loop_prep="", after_loop="", options=("-use_fast_math",),
                                backend="nvrtc", jitify=False)
    assert k.name == "copy" and k.nin == 1 and k.nout == 1
    r = cujit.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", name="total",
                              reduce_type="T", reduce_dims=True, preamble="", options=())
    assert r.name == "total"
    with pytest.raises(TypeError, match="unexpected keyword argument 'block'"):
        cujit.ElementwiseKernel("T x", "T y", "y = x", block=128)


def test_a_bad_name_or_option_is_refused_at_construction():
    with pytest.raises(cujit.ArgumentError, match="not a C identifier|identifier"):
        cujit.ElementwiseKernel("T x", "T y", "y = x", "not a name")
    with pytest.raises(cujit.ArgumentError):
        cujit.ElementwiseKernel("T x", "T y", "y = x", "k", options=("no-dash",))


def test_offline_specialisation_without_a_gpu():
    k = squared_diff()
    s = k.specialize(np.empty((256, 64), np.float32), np.empty(64, np.float32), target="sm_90")
    assert s.kernel == "squared_diff" and s.target == "sm_90"
    assert s.origin == "compiled" and s.binary_size > 0 and len(s.request_key) == 64
    again = k.specialize(np.empty((256, 64), np.float32), np.empty(64, np.float32),
                         target="sm_90")
    assert again.origin == "memory" and again.request_key == s.request_key
    # A scalar argument: its type, not its value, is part of the kernel.
    axpb = cujit.ElementwiseKernel("T x, T a", "T y", "y = a * x", "axpb")
    one = axpb.specialize(np.empty(8, np.float64), 2.0, target="sm_80")
    two = axpb.specialize(np.empty(8, np.float64), 3.0, target="sm_80")
    assert one.request_key == two.request_key


def test_offline_reduction_over_axes():
    r = cujit.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    rows = r.specialize(np.empty((4096, 512), np.float32), target="sm_90", axis=1)
    cols = r.specialize(np.empty((4096, 512), np.float32), target="sm_90", axis=(0,))
    assert rows.request_key != cols.request_key
    with pytest.raises(cujit.ShapeError, match="axis 2 is out of range"):
        r.specialize(np.empty((4, 4), np.float32), target="sm_90", axis=2)


def test_dtype_mismatch_is_a_type_error_naming_the_argument():
    with pytest.raises(TypeError) as caught:
        squared_diff().specialize(np.empty(4, np.float32), np.empty(4, np.float64),
                                  target="sm_90")
    assert isinstance(caught.value, cujit.TypeError)
    assert str(caught.value) == (
        "cujit: kernel 'squared_diff': input 'y': expected float32 (T is bound to it by 'x'), "
        "got float64 (cujit does not cast arrays)")


def test_a_snippet_error_points_at_the_users_line_and_column():
    bad = cujit.ElementwiseKernel("T x", "T z", "z = x;\nz = x +* 1", "typo")
    with pytest.raises(cujit.CompileError) as caught:
        bad.specialize(np.empty(4, np.float32), target="sm_90")
    e = caught.value
    assert (e.line, e.column) == (2, 8)
    assert str(e).startswith("cujit: kernel 'typo': ")
    assert "operation line 2, column 8\n  z = x +* 1\n         ^" in str(e)


def test_host_arrays_are_refused_like_cupy_refuses_them():
    with pytest.raises(TypeError, match="host array \\(numpy.ndarray\\)"):
        squared_diff()(np.ones(4, np.float32), np.ones(4, np.float32))
    with pytest.raises(TypeError, match="unsupported type 'str'"):
        squared_diff()("x", "y")


def test_python_scalars_type_as_numpy_types_them():
    from cujit import _arrays

    assert _arrays.scalar(True, "k") == ("bool", True)
    assert _arrays.scalar(3, "k") == ("int64", 3)
    assert _arrays.scalar(1 << 63, "k") == ("uint64", 1 << 63)
    assert _arrays.scalar(2.5, "k") == ("float64", 2.5)
    assert _arrays.scalar(1j, "k") == ("complex128", 1j)
    assert _arrays.scalar(np.float32(1.5), "k") == ("float32", 1.5)
    assert _arrays.scalar(np.ones(3), "k") is None
    with pytest.raises(OverflowError):
        _arrays.scalar(1 << 64, "k")


def test_big_endian_interface_data_is_refused():
    class BigEndian:
        __cuda_array_interface__ = {"shape": (4,), "typestr": ">f4", "data": (1 << 20, False),
                                    "version": 3}

    from cujit import _arrays

    with pytest.raises(TypeError, match="byte order"):
        _arrays.describe(BigEndian(), "k")
