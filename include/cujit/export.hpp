#pragma once
/// \file CUJIT_EXPORT, the one mark of cujit's exported surface. libcujit.so is built with
/// hidden visibility: only the declarations of include/cujit/ carrying this mark (the public
/// classes, with their type information, and free functions) are in its dynamic symbol table.
/// Everything else, cujit's internals and the libraries it links statically, stays private to
/// the library, so that it cannot clash with a host application's own copies.

#if defined(__GNUC__) || defined(__clang__)
#define CUJIT_EXPORT __attribute__((visibility("default")))
/// The opposite mark, for the definition of a public class's private nested type (its `Impl`),
/// which would otherwise be exported with the class.
#define CUJIT_HIDDEN __attribute__((visibility("hidden")))
#else
#define CUJIT_EXPORT
#define CUJIT_HIDDEN
#endif
