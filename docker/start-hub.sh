#!/usr/bin/env bash
# mhalab-hub — JupyterHub for a class, in the mhalab image (config: docker/jupyterhub_config.py).
# Each student gets a notebook server with the GoNB kernel and a copy of the repository
# (notebooks/, lessons/; not the lessons' reference solutions) in their home.
#
# As root (docker run --user root …): PAM logins, one Linux account per student. The students
# are read from $MHALAB_HUB_STUDENTS (default /etc/mhalab/students): "name:password" lines (# for
# comments); missing accounts are created with private (0700) homes under
# $MHALAB_HUB_HOME_BASE (default /home/students: mount a volume there to keep the students' work),
# passwords are (re)set.
# As any other user: one shared password for all, $MHALAB_HUB_USERS and $MHALAB_HUB_PASSWORD.
# The hub listens on ${MHALAB_HUB_PORT:-8000}; its state is in $MHALAB_HUB_STATE (default
# /srv/mhalab-hub as root, ~/mhalab-hub otherwise). Extra arguments go to jupyterhub.
set -euo pipefail
die() { printf 'mhalab-hub: %s\n' "$*" >&2; exit 2; }
config="${MHALAB_DIR:?MHALAB_DIR is not set}/docker/jupyterhub_config.py"
[[ -f "$config" ]] || die "$config not found"

if [[ "$(id -u)" == 0 ]]; then
	students="${MHALAB_HUB_STUDENTS:-/etc/mhalab/students}"
	[[ -r "$students" ]] || die "no students file $students (lines name:password); mount one, e.g. -v \$PWD/students:/etc/mhalab/students:ro"
	tools_user="$(stat -c %U "$MHALAB_DIR")"
	home_base="${MHALAB_HUB_HOME_BASE:-/home/students}"
	names=()
	while IFS= read -r line || [[ -n "$line" ]]; do
		[[ -z "${line// /}" || "$line" == \#* ]] && continue
		name="${line%%:*}"
		password="${line#*:}"
		[[ "$line" == *:* && -n "$password" ]] || die "$students: line for '$name' has no password (name:password)"
		[[ "$name" =~ ^[a-z_][a-z0-9_-]{0,30}$ ]] || die "$students: '$name' is not a valid account name (lowercase letters, digits, _ and -)"
		if id "$name" >/dev/null 2>&1; then
			uid="$(id -u "$name")"
			((uid >= 1000)) && [[ "$name" != "$tools_user" ]] || die "$students: '$name' is a system account or the image's own user; choose another name"
		else
			mkdir -p "$home_base"
			useradd --create-home --base-dir "$home_base" --shell /bin/bash -K HOME_MODE=0700 "$name"
			echo "mhalab-hub: created account $name"
		fi
		printf '%s:%s\n' "$name" "$password" | chpasswd
		names+=("$name")
	done <"$students"
	((${#names[@]} > 0)) || die "$students lists no students"
	MHALAB_HUB_USERS="$(IFS=,; echo "${names[*]}")"
	export MHALAB_HUB_USERS MHALAB_HUB_AUTH=pam MHALAB_HUB_TOOLS="$tools_user"
	export MHALAB_HUB_STATE="${MHALAB_HUB_STATE:-/srv/mhalab-hub}"
else
	export MHALAB_HUB_AUTH=shared-password
	export MHALAB_HUB_STATE="${MHALAB_HUB_STATE:-$HOME/mhalab-hub}"
	[[ -n "${MHALAB_HUB_USERS:-}" ]] || die "set MHALAB_HUB_USERS (comma-separated names) and MHALAB_HUB_PASSWORD, or run as root with a students file"
fi
echo "mhalab-hub: $MHALAB_HUB_AUTH logins for $MHALAB_HUB_USERS on port ${MHALAB_HUB_PORT:-8000} (state in $MHALAB_HUB_STATE)"
cd /
exec jupyterhub -f "$config" "$@"
