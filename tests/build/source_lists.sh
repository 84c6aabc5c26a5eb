#!/usr/bin/env bash
# Checks that the CMake build (lib/CMakeLists.txt, tools/CMakeLists.txt) and the Automake
# build (Makefile.am) compile the same .cpp files, each into the same library or program.
#
#   tests/build/source_lists.sh [project-root]
#
# The project root defaults to this script's ../.. (so it works from any directory, from
# CTest, and from `make check`, which also sets $srcdir). Paths are compared relative to
# the root; a generated source (${PROJECT_BINARY_DIR}/lib/core/version.cpp in CMake,
# nodist_..._SOURCES in Makefile.am) counts as its .in template when only that exists.
# Exit 0 and "source lists agree (N files)" when they match, 1 with the differences if not.
set -euo pipefail
export LC_ALL=C

me=source_lists.sh
root=${1:-}
if [[ -z $root ]]; then
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  if [[ ! -f $root/lib/CMakeLists.txt && -n ${srcdir:-} && -f $srcdir/lib/CMakeLists.txt ]]; then
    root=$(cd "$srcdir" && pwd)
  fi
fi
for f in lib/CMakeLists.txt tools/CMakeLists.txt Makefile.am; do
  if [[ ! -f $root/$f ]]; then
    echo "$me: $root/$f not found (pass the project root as the first argument)" >&2
    exit 1
  fi
done

# CMake: "<target> <path as written>" for every .cpp/.cpp.in in the sources of
# phew_add_module/phew_add_tool (after SOURCES, up to the next keyword or ')'),
# add_library/add_executable and target_sources. $1 is the folder the file lives in.
cmake_sources() {
  awk -v dir="$1" '
    function emit(tok,   n, parts, i) {
      n = split(tok, parts, ";")
      for (i = 1; i <= n; i++)
        if (parts[i] ~ /\.cpp(\.in)?$/) print target, dir, parts[i]
    }
    {
      line = $0
      # Drop comments: a # outside a quoted string runs to the end of the line.
      out = ""; inq = 0
      for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (c == "\"") inq = !inq
        if (c == "#" && !inq) break
        out = out c
      }
      gsub(/"/, " ", out)
      gsub(/\(/, " ( ", out)
      gsub(/\)/, " ) ", out)
      n = split(out, tok, /[ \t\r]+/)
      for (i = 1; i <= n; i++) {
        t = tok[i]
        if (t == "") continue
        if (t == "(") {
          if (depth == 0) { cmd = tolower(prev); argi = 0; section = ""; target = "" }
          depth++
        } else if (t == ")") {
          if (depth > 0) depth--
          if (depth == 0) cmd = ""
        } else if (depth > 0 && cmd != "") {
          argi++
          if (argi == 1) {
            target = t
            if (cmd == "phew_add_module") target = "phew_" t
            gsub(/[^A-Za-z0-9]/, "_", target)
          } else if (cmd == "phew_add_module" || cmd == "phew_add_tool") {
            if (t ~ /^[A-Z][A-Z0-9_]*$/) section = t
            else if (section == "SOURCES") emit(t)
          } else if (cmd == "add_library" || cmd == "add_executable" || cmd == "target_sources") {
            emit(t)
          }
        }
        prev = t
      }
    }' "$root/$1/CMakeLists.txt"
}

# Makefile.am: "<target> . <path as written>" for every .cpp/.cpp.in in a *_SOURCES
# variable (also nodist_/dist_), with variables defined in Makefile.am expanded.
automake_sources() {
  awk '
    function expand(s, depth,   out, name, ref, start, len) {
      out = ""
      while (match(s, /\$[({][A-Za-z0-9_]+[)}]/)) {
        start = RSTART; len = RLENGTH  # the recursive call below resets RSTART/RLENGTH
        ref = substr(s, start, len)
        name = substr(ref, 3, len - 3)
        out = out substr(s, 1, start - 1)
        if ((name in val) && depth < 20) out = out " " expand(val[name], depth + 1) " "
        else out = out ref
        s = substr(s, start + len)
      }
      return out s
    }
    {
      line = $0
      while (line ~ /\\$/ && (getline nextline) > 0) line = substr(line, 1, length(line) - 1) " " nextline
      if (line ~ /^\t/) next                       # recipe lines
      sub(/(^|[ \t])#.*/, "", line)                  # comments
      if (!match(line, /^[ \t]*[A-Za-z0-9_]+[ \t]*(\+=|:=|=)/)) next
      lhs = substr(line, 1, RLENGTH); rhs = substr(line, RLENGTH + 1)
      append = (lhs ~ /\+=$/)
      sub(/[ \t]*(\+=|:=|=)$/, "", lhs); sub(/^[ \t]*/, "", lhs)
      if (append && (lhs in val)) val[lhs] = val[lhs] " " rhs
      else { if (!(lhs in val)) names[++nnames] = lhs; val[lhs] = rhs }
    }
    END {
      for (k = 1; k <= nnames; k++) {
        v = names[k]
        if (v !~ /_SOURCES$/ || v ~ /^EXTRA_/) continue
        target = v
        sub(/_SOURCES$/, "", target); sub(/^(nodist|dist)_/, "", target)
        if (target ~ /^lib.*_(a|la)$/) { sub(/^lib/, "", target); sub(/_l?a$/, "", target) }
        n = split(expand(val[v], 0), tok, /[ \t\r]+/)
        for (i = 1; i <= n; i++) if (tok[i] ~ /\.cpp(\.in)?$/) print target, ".", tok[i]
      }
    }' "$root/Makefile.am"
}

# "<target> <dir> <path as written>" -> "<path relative to the root> <target>".
normalise() {
  local target dir p
  while read -r target dir p; do
    case $p in
      '${PROJECT_BINARY_DIR}/'* | '${CMAKE_BINARY_DIR}/'* | '${PROJECT_SOURCE_DIR}/'* | '${CMAKE_SOURCE_DIR}/'*)
        p=${p#*\}/} ;;
      '${CMAKE_CURRENT_BINARY_DIR}/'* | '${CMAKE_CURRENT_SOURCE_DIR}/'*)
        p=$dir/${p#*\}/} ;;
      '$(srcdir)/'* | '$(top_srcdir)/'* | '$(builddir)/'* | '$(top_builddir)/'*)
        p=${p#*)/} ;;
      '$'*) ;;  # unknown variable: kept as written, so it shows up as a difference
      /*) ;;
      *) p=$dir/$p ;;
    esac
    # Tidy ./ and x/../ so that equal paths compare equal.
    p=$(printf '%s\n' "$p" | sed -e 's#/\./#/#g' -e 's#^\./##' -e ':a' -e 's#[^/][^/]*/\.\./##' -e 'ta')
    if [[ ! -e $root/$p && -e $root/$p.in ]]; then p=$p.in; fi
    printf '%s %s\n' "$p" "$target"
  done
}

cmake_pairs=$( { cmake_sources lib; cmake_sources tools; } | normalise | sort -u)
# Only lib/ and tools/ sources are built by CMake's lib/ and tools/; tests may add their own.
am_pairs=$(automake_sources | normalise | awk '$1 ~ /^(lib|tools)\//' | sort -u)

cmake_files=$(printf '%s\n' "$cmake_pairs" | awk 'NF { print $1 }' | sort -u)
am_files=$(printf '%s\n' "$am_pairs" | awk 'NF { print $1 }' | sort -u)
only_cmake=$(comm -23 <(printf '%s\n' "$cmake_files") <(printf '%s\n' "$am_files") | awk NF)
only_am=$(comm -13 <(printf '%s\n' "$cmake_files") <(printf '%s\n' "$am_files") | awk NF)

if [[ -n $only_cmake || -n $only_am ]]; then
  echo "$me: lib/CMakeLists.txt + tools/CMakeLists.txt and Makefile.am list different sources; add or remove them so both builds compile the same files:"
  [[ -z $only_cmake ]] || printf '  only in CMake:       %s\n' $only_cmake
  [[ -z $only_am ]] || printf '  only in Makefile.am: %s\n' $only_am
  exit 1
fi

if [[ -z $cmake_files ]]; then
  echo "$me: found no sources in lib/CMakeLists.txt or tools/CMakeLists.txt; has their format changed?"
  exit 1
fi

# Same files: check each goes into the same target (phew_add_module(core) = libphew_core.a,
# phew_add_tool(cic-project) = program cic-project).
if [[ $cmake_pairs != "$am_pairs" ]]; then
  echo "$me: CMake and Makefile.am build the same sources into different targets; move them so each module gets the same files:"
  diff <(printf '%s\n' "$cmake_pairs") <(printf '%s\n' "$am_pairs") |
    awk '/^</ { print "  CMake:       " $2 " in " $3 } /^>/ { print "  Makefile.am: " $2 " in " $3 }'
  exit 1
fi

echo "source lists agree ($(printf '%s\n' "$cmake_files" | wc -l | tr -d ' ') files)"
