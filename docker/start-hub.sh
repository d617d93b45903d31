#!/usr/bin/env bash
# mhalab-hub — JupyterHub for a class, in the mhalab image (config: docker/jupyterhub_config.py).
# Each student gets a notebook server with the GoNB kernel and a copy of the repository
# (notebooks/, lessons/; not the lessons' reference solutions) in their home.
#
# The hub runs as root (docker run --user root …): every student has a Linux account of their own
# (a uid of their own, a private 0700 home under $MHALAB_HUB_HOME_BASE, default /home/students:
# mount a volume there to keep the students' work), and their server runs as that account. Two
# ways to log in:
#   pam              $MHALAB_HUB_STUDENTS (default /etc/mhalab/students): "name:password" lines
#                    (# for comments); missing accounts are created, passwords are (re)set. The hub
#                    reads the file once, here, into the accounts; it refuses to start when a
#                    student could read it (create it with umask 077; /etc/mhalab is root-only).
#   shared-password  $MHALAB_HUB_USERS (comma-separated names) and $MHALAB_HUB_PASSWORD; the
#                    accounts are created without a password (locked).
# pam when the students file exists, shared-password otherwise ($MHALAB_HUB_AUTH chooses).
# The hub's state — database, cookie secret, proxy pid — is in $MHALAB_HUB_STATE (default
# /srv/mhalab-hub), root's alone (0700). HTTPS: a certificate and its key in
# $MHALAB_HUB_SSL_CERT and $MHALAB_HUB_SSL_KEY (default /etc/mhalab/hub.crt and /etc/mhalab/hub.key,
# used when they exist); without them the hub warns that passwords travel in clear. The hub
# listens on ${MHALAB_HUB_PORT:-8000}. Extra arguments go to jupyterhub.
set -euo pipefail
die() { printf 'mhalab-hub: %s\n' "$*" >&2; exit 2; }
config="${MHALAB_DIR:?MHALAB_DIR is not set}/docker/jupyterhub_config.py"
[[ -f "$config" ]] || die "$config not found"
[[ "$(id -u)" == 0 ]] || die "run the hub as root (docker run --user root …): each student's server runs under the student's own account"
umask 077

students="${MHALAB_HUB_STUDENTS:-/etc/mhalab/students}"
auth="${MHALAB_HUB_AUTH:-}"
if [[ -z "$auth" ]]; then
	if [[ -e "$students" ]]; then auth=pam
	elif [[ -n "${MHALAB_HUB_USERS:-}" ]]; then auth=shared-password
	else die "no students file $students (lines name:password; e.g. -v \$PWD/students:/etc/mhalab/students:ro), nor MHALAB_HUB_USERS and MHALAB_HUB_PASSWORD"
	fi
fi
tools_user="$(stat -c %U "$MHALAB_DIR")"
home_base="${MHALAB_HUB_HOME_BASE:-/home/students}"
names=()

# account NAME: checks the name, creates the account (home 0700 under $home_base) if missing.
account() {
	local name="$1" uid
	[[ "$name" =~ ^[a-z_][a-z0-9_-]{0,30}$ ]] || die "'$name' is not a valid account name (lowercase letters, digits, _ and -)"
	if id "$name" >/dev/null 2>&1; then
		uid="$(id -u "$name")"
		((uid >= 1000)) && [[ "$name" != "$tools_user" ]] || die "'$name' is a system account or the image's own user; choose another name"
	else
		mkdir -p "$home_base"
		chmod 0755 "$home_base"
		useradd --create-home --base-dir "$home_base" --shell /bin/bash -K HOME_MODE=0700 "$name"
		echo "mhalab-hub: created account $name"
	fi
	names+=("$name")
}

# private FILE WHAT: refuses to start when one of the students can read FILE.
private() {
	local name
	for name in "${names[@]}"; do
		if runuser -u "$name" -- test -r "$1" 2>/dev/null; then
			die "$2 $1 is readable by student $name: create it with umask 077 (chmod 600) and keep it out of the students' reach (the image's /etc/mhalab is root-only)"
		fi
	done
}

case "$auth" in
pam)
	[[ -r "$students" ]] || die "no students file $students (lines name:password); mount one, e.g. -v \$PWD/students:/etc/mhalab/students:ro"
	# Read once, here; the passwords go to chpasswd on its standard input, nowhere else.
	declare -A password_of=()
	while IFS= read -r line || [[ -n "$line" ]]; do
		[[ -z "${line// /}" || "$line" == \#* ]] && continue
		name="${line%%:*}"
		[[ "$line" == *:* && -n "${line#*:}" ]] || die "$students: line for '$name' has no password (name:password)"
		account "$name"
		password_of[$name]="${line#*:}"
	done <"$students"
	((${#names[@]} > 0)) || die "$students lists no students"
	private "$students" "the students file"
	for name in "${names[@]}"; do
		printf '%s:%s\n' "$name" "${password_of[$name]}" | chpasswd
	done
	unset password_of line
	;;
shared-password)
	IFS=, read -r -a listed <<<"${MHALAB_HUB_USERS:-}"
	for name in "${listed[@]}"; do
		name="${name// /}"
		[[ -n "$name" ]] && account "$name"
	done
	((${#names[@]} > 0)) || die "set MHALAB_HUB_USERS (comma-separated names) and MHALAB_HUB_PASSWORD, or mount a students file at $students"
	;;
*) die "MHALAB_HUB_AUTH=$auth: use pam or shared-password" ;;
esac

# HTTPS: both files or neither; the key must be the hub's alone.
cert="${MHALAB_HUB_SSL_CERT:-/etc/mhalab/hub.crt}"
key="${MHALAB_HUB_SSL_KEY:-/etc/mhalab/hub.key}"
if [[ -e "$cert" || -e "$key" || -n "${MHALAB_HUB_SSL_CERT:-}${MHALAB_HUB_SSL_KEY:-}" ]]; then
	[[ -r "$cert" && -r "$key" ]] || die "HTTPS needs both a certificate ($cert) and its key ($key)"
	private "$key" "the TLS key"
	export MHALAB_HUB_SSL_CERT="$cert" MHALAB_HUB_SSL_KEY="$key"
else
	unset MHALAB_HUB_SSL_CERT MHALAB_HUB_SSL_KEY
fi

# The hub's state: root's alone.
state="${MHALAB_HUB_STATE:-/srv/mhalab-hub}"
mkdir -p "$state"
chown -R root:root "$state"
chmod -R go-rwx "$state"

MHALAB_HUB_USERS="$(IFS=,; echo "${names[*]}")"
export MHALAB_HUB_USERS MHALAB_HUB_AUTH="$auth" MHALAB_HUB_TOOLS="${MHALAB_HUB_TOOLS:-$tools_user}" MHALAB_HUB_STATE="$state"
echo "mhalab-hub: $MHALAB_HUB_AUTH logins for $MHALAB_HUB_USERS on port ${MHALAB_HUB_PORT:-8000} (${MHALAB_HUB_SSL_CERT:+HTTPS, }state in $MHALAB_HUB_STATE)"
cd /
exec jupyterhub -f "$config" "$@"
