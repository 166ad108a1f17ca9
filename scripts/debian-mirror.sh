#!/usr/bin/env bash
# Prints the Debian archive this machine's apt is configured with: the URI of its source for
# the release it runs (VERSION_CODENAME, e.g. bookworm), from /etc/apt/sources.list and
# /etc/apt/sources.list.d/ in one-line or deb822 form. The scripts that fetch PostgreSQL's
# sources use it, so they work behind whatever mirror the machine uses and name none
# themselves. Exits 1 when apt has no such source.
set -euo pipefail
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}")
files=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && files+=("$f")
done
[ ${#files[@]} -gt 0 ] || exit 1
awk -v codename="$codename" '
  # one-line form: deb [options] URI SUITE COMPONENTS...
  FILENAME ~ /\.list$/ && $1 == "deb" {
    i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
    if ($(i + 1) == codename) { print $i; found = 1; exit }
  }
  # deb822 form: stanzas of Types, URIs, Suites
  FILENAME ~ /\.sources$/ && /^Types:/ { deb = ($0 ~ /[ \t]deb([ \t]|$)/) }
  FILENAME ~ /\.sources$/ && /^URIs:/ { uri = $2 }
  FILENAME ~ /\.sources$/ && /^Suites:/ {
    for (i = 2; i <= NF; i++) if (deb && uri != "" && $i == codename) { print uri; found = 1; exit }
  }
  FILENAME ~ /\.sources$/ && /^[ \t]*$/ { deb = 0; uri = "" }
  END { exit found ? 0 : 1 }
' "${files[@]}" | sed 's:/*$::'
