#pragma once
/// \file Everything cujit offers, in one include: arrays, devices and streams, dtypes and the
/// 16-bit float types, pinned host buffers, ElementwiseKernel, ReductionKernel, ScanKernel,
/// SelectKernel, array expressions and fused functions, RawModule, launch
/// configurations, specialisation without a GPU, the kernel cache's API, errors and the version.
/// (tests/api/one_include_test.cpp keeps this list complete.)

#include <cujit/allocator.hpp>
#include <cujit/array.hpp>
#include <cujit/cache.hpp>
#include <cujit/device.hpp>
#include <cujit/dtype.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/error.hpp>
#include <cujit/export.hpp>
#include <cujit/expression.hpp>
#include <cujit/fuse.hpp>
#include <cujit/half.hpp>
#include <cujit/host_buffer.hpp>
#include <cujit/kernel_args.hpp>
#include <cujit/launch_config.hpp>
#include <cujit/log.hpp>
#include <cujit/program.hpp>
#include <cujit/raw_module.hpp>
#include <cujit/reduction.hpp>
#include <cujit/scan.hpp>
#include <cujit/select.hpp>
#include <cujit/shape.hpp>
#include <cujit/specialize.hpp>
#include <cujit/version.hpp>
