#!/bin/sh
# Doxygen's INPUT_FILTER (docs/Doxyfile). The public headers open with `/// \file <summary>`,
# which Doxygen reads as a file named after the summary's first word: name the header itself
# in front of the summary, on the same line, so that line numbers in warnings stay right.
name=$(basename "$1")
sed "/^\/\/\/ \\\\file $name/!s|^/// \\\\file \\(.\\)|/// \\\\file $name \\1|" "$1"
