#!/usr/bin/env bash
# Installs Debian packages by name, each with a minimum version that is checked,
# never an exact revision: Debian's security archive keeps only the newest build
# of a package, so a pinned revision breaks every fresh machine the day an update
# lands. Go modules, whose proxy keeps every version, stay pinned exactly.
#
#   hack/apt-install.sh PACKAGE MIN_VERSION [PACKAGE MIN_VERSION ...]
#
# A package installed at or above its floor is left alone; a missing or older one
# is installed from the archive (as root), and the floor is checked again after.
# Prints one line per package: its name and the version in use.
set -euo pipefail

if (( $# == 0 || $# % 2 )); then
  echo "usage: $0 PACKAGE MIN_VERSION [PACKAGE MIN_VERSION ...]" >&2
  exit 2
fi

installed() { # the installed version of $1, or nothing
  dpkg-query -W -f='${db:Status-Abbrev} ${Version}\n' "$1" 2>/dev/null | awk '$1 == "ii" { print $2 }'
}

meets() { # meets <version> <floor>
  [[ -n $1 ]] && dpkg --compare-versions "$1" ge "$2"
}

declare -A floor
missing=()
while (( $# )); do
  floor[$1]=$2
  meets "$(installed "$1")" "$2" || missing+=("$1")
  shift 2
done

if (( ${#missing[@]} )); then
  if [[ $(id -u) != 0 ]]; then
    for p in "${missing[@]}"; do
      echo "$p: ${floor[$p]} or newer is needed, $(installed "$p" || true) is installed" >&2
    done
    echo "install as root: apt-get update && apt-get install --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "==> apt-get install ${missing[*]}"
  # The package lists may name builds the archive no longer serves.
  log=$(mktemp); trap 'rm -f "$log"' EXIT
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "apt-get install ${missing[*]} failed (output above)" >&2
    exit 1
  fi
fi

status=0
for p in "${!floor[@]}"; do
  v=$(installed "$p")
  if meets "$v" "${floor[$p]}"; then
    echo "$p $v (minimum ${floor[$p]})"
  else
    echo "$p: Debian's archive serves ${v:-nothing}, older than the minimum ${floor[$p]} (internal/versions/versions.env); use a newer Debian release or install $p ${floor[$p]}+ by hand" >&2
    status=1
  fi
done
exit $status
