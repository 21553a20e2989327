#!/usr/bin/env bash
# Every CUJIT_* environment variable the sources read is documented in the tables of
# docs/environment.md, and every variable a table documents is still read somewhere.
#
#   scripts/check_env_docs.sh
#
# Read means: a C++ string literal that is exactly a variable name ("CUJIT_CACHE_DIR", as
# getenv and the env helpers take them) in the library, tools, benchmarks, samples or tests, or a
# shell expansion ($CUJIT_X, ${CUJIT_X...}) in scripts/, samples/ and tests/. Documented means: a
# row of a table in docs/environment.md that starts with | `CUJIT_X` |, or a row for a prefix,
# | `CUJIT_TEST_*` |.
# Exit status 1 when a variable is missing or stale, with the names on stderr.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

read_names=$(
  {
    grep -rhoE '"CUJIT_[A-Z0-9_]+"' support core codegen cache runtime analysis include tools bench samples tests \
      --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.cc' 2>/dev/null | tr -d '"'
    grep -rhoE '\$\{?CUJIT_[A-Z0-9_]+' scripts samples tests bench --include='*.sh' --exclude=check_env_docs.sh 2>/dev/null |
      sed -E 's/^\$\{?//'
  } | sort -u
)
table=docs/environment.md
documented=$(grep -oE '^\| `CUJIT_[A-Z0-9_]+\*?` \|' "$table" | sed -E 's/^\| `([^`]+)` \|$/\1/' | sort -u)
if [[ -z $read_names || -z $documented ]]; then
  echo "error: found no variables read ($(wc -w <<<"$read_names")) or documented ($(wc -w <<<"$documented"))" >&2
  exit 1
fi

failed=0
covered() {  # is $1 documented, by name or by a prefix row?
  local name=$1 doc
  for doc in $documented; do
    if [[ $doc == *'*' ]]; then
      [[ $name == "${doc%\*}"* ]] && return 0
    elif [[ $name == "$doc" ]]; then
      return 0
    fi
  done
  return 1
}
for name in $read_names; do
  if ! covered "$name"; then
    echo "error: $name is read by the sources but not documented in $table's tables" >&2
    grep -rlE "\"$name\"|\\\$\\{?$name" support core codegen cache runtime analysis include tools bench samples tests scripts 2>/dev/null |
      sed 's/^/  read in /' >&2
    failed=1
  fi
done
for doc in $documented; do
  [[ $doc == *'*' ]] && continue
  if ! grep -qxF "$doc" <<<"$read_names"; then
    echo "error: $table documents $doc, which no source reads any more" >&2
    failed=1
  fi
done
echo "$(wc -l <<<"$read_names") variables read, $(wc -l <<<"$documented") documented rows"
exit $failed
