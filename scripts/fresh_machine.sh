#!/usr/bin/env bash
# Proves the README's two commands on a fresh machine: installs a minimal Debian 12 (bookworm) into a
# temporary folder with debootstrap, copies the repository in (git archive of a commit: no build
# folders, no .venv, nothing uncommitted), and runs `make run`, then `make test`, inside it with
# chroot as root. Reports each command's exit code and wall time; exits non-zero if either failed.
# Needs root on a Debian host (it installs debootstrap if missing). Takes about an hour on 2 cores.
#
#   scripts/fresh_machine.sh              # the commit HEAD
#   KILN_FRESH_REF=my-branch scripts/fresh_machine.sh
#   KILN_FRESH_KEEP=1 ...                 # keep the root folder afterwards (for a look inside)
#   KILN_FRESH_DIR=/var/tmp/x ...         # where the root folder goes (default: a new mktemp -d)
#
# The fresh system is Debian's minbase variant: less than any real installation has (no make, no
# Python, no CA certificates). The one thing installed before the README's commands is `make`,
# which running them presupposes (as cloning presupposes git).
#
# Packages come from the host's Debian mirror (its /etc/apt/sources.list or sources.list.d/*.sources),
# with the suites a Debian 12 installation has: bookworm, bookworm-updates, bookworm-security.
#
# The pinned PyTorch wheel: on machines where pip serves torch==2.13.0 from a local file (pip's
# configuration names a find-links folder or a file:// index; see `pip config list`), that
# configuration is copied into the chroot (/etc/pip.conf, /etc/xdg/pip/, ~/.config/pip/pip.conf and
# the PIP_* environment variables) and each local folder it names is bind-mounted read-only at the
# same path, so pip inside finds the same files. Elsewhere pip inside uses PyPI, as a fresh machine
# would.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
ref=${KILN_FRESH_REF:-HEAD}
keep=${KILN_FRESH_KEEP:-0}
suite=bookworm

if [[ $(id -u) -ne 0 ]]; then
  echo "fresh_machine: needs root (debootstrap, mount, chroot)" >&2
  exit 2
fi
commit=$(git -C "$repo" rev-parse --verify "$ref^{commit}")

log() { echo "fresh_machine: $*"; }

if ! command -v debootstrap >/dev/null; then
  log "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; }
fi

# The host's mirror for a suite pattern: deb822 .sources files first, then one-line sources.list.
mirror_for() {
  local pattern=$1 fallback=$2 uri
  uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v pat="$pattern" '
    /^URIs:/ { uris = $2 } /^Suites:/ { if ($0 ~ pat) { print uris; exit } } /^$/ { uris = "" }')
  if [[ -z $uri ]]; then
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
          awk -v pat="$pattern" '$1 == "deb" && $0 ~ pat { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }')
  fi
  echo "${uri:-$fallback}"
}
mirror=$(mirror_for "[ \t]$suite([ \t]|$)" http://deb.debian.org/debian)
security=$(mirror_for "$suite-security" http://deb.debian.org/debian-security)

root=${KILN_FRESH_DIR:-$(mktemp -d -t kiln-fresh.XXXXXX)}
mkdir -p "$root"
chmod 755 "$root"  # mktemp makes it 0700: the system's / must be readable by its users (apt's _apt)
mounts=()  # mount points inside $root, in the order mounted

cleanup() {
  local status=$? i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount -R "${mounts[i]}" 2>/dev/null || umount -R -l "${mounts[i]}" 2>/dev/null || true
  done
  if [[ $keep == 1 ]]; then
    log "kept $root"
  elif grep -qF -e " $root/" -e " $root " /proc/mounts; then
    # Never delete through a mount that is still there (it could be the host's /dev or wheels).
    log "something is still mounted under $root; not deleting it" >&2
  else
    rm -rf --one-file-system "$root"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bind() {  # bind SOURCE [ro]: mounts SOURCE at the same path inside $root
  local src=$1 dst=$root$1
  if [[ -d $src ]]; then mkdir -p "$dst"; else mkdir -p "$(dirname "$dst")"; touch "$dst"; fi
  mount --rbind "$src" "$dst"
  mounts+=("$dst")
  mount --make-rslave "$dst"
  if [[ ${2:-} == ro ]]; then mount -o remount,bind,ro "$dst"; fi
}

seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }
fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

log "Debian $suite from $mirror into $root"
t0=$(seconds)
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
  { tail -20 "$root.debootstrap.log" >&2; exit 1; }
rm -f "$root.debootstrap.log"
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
t_debootstrap=$(elapsed "$t0" "$(seconds)")
log "debootstrap: $(fmt_time "$t_debootstrap")"

mkdir -p "$root/proc" && mount -t proc proc "$root/proc" && mounts+=("$root/proc")
bind /sys
bind /dev
mkdir -p "$root/tmp" && chmod 1777 "$root/tmp"

# pip's configuration and the local folders it serves wheels from (see the header).
pip_env=()
while IFS='=' read -r name value; do
  if [[ $name == PIP_* ]]; then pip_env+=("$name=$value"); fi
done < <(env)
for f in /etc/pip.conf /etc/xdg/pip/pip.conf /etc/xdg/pip/constraints.txt; do
  if [[ -f $f ]]; then mkdir -p "$root$(dirname "$f")"; cp "$f" "$root$f"; fi
done
for f in "$HOME/.config/pip/pip.conf" "$HOME/.pip/pip.conf"; do
  if [[ -f $f ]]; then dst=$root/root/${f#"$HOME"/}; mkdir -p "$(dirname "$dst")"; cp "$f" "$dst"; fi
done
pip_dirs=$(cat /etc/pip.conf /etc/xdg/pip/*.conf "$HOME/.config/pip/pip.conf" "$HOME/.pip/pip.conf" 2>/dev/null |
           sed -n 's/^[a-z-]*\(find-links\|index-url\)[ \t]*=//p'; printf '%s\n' "${pip_env[@]}" | sed 's/^[^=]*=//')
declare -A bound=()
for token in $pip_dirs; do
  path=${token#file://}
  if [[ $path != /* || ! -d $path ]]; then continue; fi
  if [[ $(basename "$path") == simple ]]; then path=$(dirname "$path"); fi  # an index's pages link to ../files
  if [[ -n ${bound[$path]:-} ]]; then continue; fi
  bound[$path]=1
  bind "$path" ro
  log "pip's local folder $path bind-mounted (read-only)"
done

# The host's own certificate authorities (on networks whose egress inspects TLS, the proxy's): a fresh
# machine on the same network has them too. When the README's set-up installs ca-certificates, they
# join the bundle pip reads (PyPI packages such as expecttest come over that egress).
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  log "the host's local CA certificates copied to /usr/local/share/ca-certificates"
fi

mkdir -p "$root/root/kiln"
git -C "$repo" archive --format=tar "$commit" | tar -x -C "$root/root/kiln"
log "repository at $commit copied to /root/kiln"

in_chroot() {  # a clean root login environment, as on a fresh machine
  chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${pip_env[@]}" \
    /bin/bash -c "$1" </dev/null
}

t0=$(seconds)
in_chroot 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq --no-install-recommends make >/dev/null'
t_make=$(elapsed "$t0" "$(seconds)")
log "apt-get install make: $(fmt_time "$t_make")"

declare -A status=() took=()
for cmd in "make run" "make test"; do
  log "== $cmd =="
  t0=$(seconds)
  set +e
  in_chroot "cd /root/kiln && $cmd"
  status[$cmd]=$?
  set -e
  took[$cmd]=$(elapsed "$t0" "$(seconds)")
  log "$cmd: exit ${status[$cmd]}, $(fmt_time "${took[$cmd]}")"
done

echo
echo "fresh Debian $suite (debootstrap minbase, $(nproc) cores), kiln $commit"
printf '  %-24s %s\n' "debootstrap" "$(fmt_time "$t_debootstrap")"
printf '  %-24s %s\n' "apt-get install make" "$(fmt_time "$t_make")"
result=0
for cmd in "make run" "make test"; do
  printf '  %-24s exit %d, %s\n' "$cmd" "${status[$cmd]}" "$(fmt_time "${took[$cmd]}")"
  if [[ ${status[$cmd]} -ne 0 ]]; then result=1; fi
done
exit $result
