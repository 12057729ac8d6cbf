#!/usr/bin/env bash
# Checks that src/ is layered as README.md's layer table says ("## Layout": | `folder/` | owns |
# depends on |), from two sources:
#   - the CMake targets: a folder's libraries and programs link only loom libraries of its own
#     folder and of the folders below it (its row's, and theirs), and every folder its row names is
#     linked by one of them; src/CMakeLists.txt writes them to TARGETS_FILE as lines
#     "folder target linked...";
#   - the #include lines of src/: a file of folder F includes only F's own headers and those of
#     the folders F depends on, directly or through them.
# The table's rows go from the bottom layer up: a row names only rows above it, so no edge points up.
#   layer_check.sh SOURCE_DIR TARGETS_FILE
set -u
src=$1 targets=$2
status=0
fail() { echo "FAIL: $*"; status=1; }

# folder -> its dependencies (space-separated), in table order.
declare -A deps row
order=()
while IFS='|' read -r folder list; do
  order+=("$folder")
  row[$folder]=${#order[@]}
  deps[$folder]=$list
done < <(awk '
  /^## Layout/ { in_layout = 1; next }
  in_layout && /^## / { exit }
  in_layout && /^\| `[a-z_]+\/` \|/ {
    n = split($0, cell, "|")
    folder = cell[2]; gsub(/[ `\/]/, "", folder)
    list = cell[n - 1]; gsub(/`|\//, "", list); gsub(/,/, " ", list); gsub(/—|-/, "", list)
    gsub(/^ +| +$/, "", list); gsub(/ +/, " ", list)
    print folder "|" list
  }' "$src/README.md")
[ ${#order[@]} -ge 5 ] || { echo "FAIL: README.md has no layer table under ## Layout"; exit 1; }

# The table itself: known folders, rows that name only rows above them, every src/ layer present.
for f in "${order[@]}"; do
  [ -d "$src/src/$f" ] || fail "README.md's layer table names src/$f/, which does not exist"
  for d in ${deps[$f]}; do
    [ -n "${row[$d]:-}" ] || { fail "README.md: $f/ depends on $d/, which has no row"; continue; }
    [ "${row[$d]}" -lt "${row[$f]}" ] || fail "README.md: $f/ depends on $d/, a row below it (arrows point up the table only)"
  done
done
for dir in "$src"/src/*/; do
  f=$(basename "$dir")
  [ -f "$dir/CMakeLists.txt" ] || continue
  [ -n "${row[$f]:-}" ] || fail "src/$f/ is a layer (it has a CMakeLists.txt) but README.md's layer table has no row for it"
done

# Everything a folder may use: its dependencies and theirs.
declare -A below
for f in "${order[@]}"; do
  all=""
  for d in ${deps[$f]}; do all="$all $d ${below[$d]:-}"; done
  below[$f]=$(tr ' ' '\n' <<<"$all" | sed '/^$/d' | sort -u | tr '\n' ' ')
done

# CMake: the folders each folder's targets link, against its row.
declare -A folder_of linked
while read -r folder target rest; do folder_of[$target]=$folder; done <"$targets"
while read -r folder target rest; do
  for lib in $(grep -oE 'loom_[a-z_]+' <<<"$rest" | sort -u); do
    to=${folder_of[$lib]:-}
    [ -z "$to" ] && continue  # loom_options and the like: build settings, not layers
    [ "$to" = "$folder" ] && continue
    linked[$folder]="${linked[$folder]:-} $to"
    [[ " ${below[$folder]:-} " == *" $to "* ]] ||
      fail "CMake: $target (src/$folder/) links $lib of src/$to/, which README.md's table does not put below $folder/"
  done
done <"$targets"
for f in "${order[@]}"; do
  for d in ${deps[$f]}; do
    [[ " ${linked[$f]:-} " == *" $d "* ]] ||
      fail "README.md: $f/ depends on $d/, but no target of src/$f/ links a library of src/$d/ (remove it from the row, or link it)"
  done
done

# Includes.
edges=0
while IFS=: read -r file line text; do
  f=${file#"$src"/src/}; f=${f%%/*}
  to=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$text")
  [ "$to" = "$f" ] && continue
  [ -n "${row[$to]:-}" ] || continue  # a generated header of the build tree
  edges=$((edges + 1))
  [[ " ${below[$f]:-} " == *" $to "* ]] ||
    fail "${file#"$src"/}:$line includes \"$to/...\", but src/$f/ may use only: ${below[$f]:-nothing}"
done < <(grep -rnE '^#include "[a-z_]+/' "$src/src" --include='*.h' --include='*.cc' --include='*.cu' --include='*.in')
echo "${#order[@]} layers, $(wc -l <"$targets") targets, $edges includes across folders checked"
exit $status
