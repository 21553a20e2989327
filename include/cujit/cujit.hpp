#pragma once
/// \file Everything cujit offers, in one include.

#include <cujit/allocator.hpp>
#include <cujit/array.hpp>
#include <cujit/device.hpp>
#include <cujit/dtype.hpp>
#include <cujit/error.hpp>
#include <cujit/log.hpp>
#include <cujit/program.hpp>
#include <cujit/raw_module.hpp>
