#!/usr/bin/env bash
# test/unit/run.sh NAME SOURCE... [-lLIB...] : build test/unit/NAME.c with
# the given sources of src/ twice -- optimised with warnings as errors, and
# with AddressSanitizer + UndefinedBehaviorSanitizer (clang) -- and run both.
# The suites test/suites/*-unit.sh call it; $OUT is where the binaries go.
#
# Needs: a C compiler (cc) and clang.
set -eu
name=$1
shift
OUT=${OUT:-$(mktemp -d)}

echo "building test/unit/$name.c (cc -O2 -Werror)"
${CC:-cc} -std=c99 -O2 -Wall -Wextra -Werror -Isrc -Itest/unit \
	-o "$OUT/$name" "test/unit/$name.c" "$@"
"$OUT/$name"

echo "building test/unit/$name.c (clang -fsanitize=address,undefined)"
clang -std=c99 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	-Isrc -Itest/unit -o "$OUT/${name}_san" "test/unit/$name.c" "$@"
"$OUT/${name}_san"
