"""mhalab-notebook's launcher (docker/start-notebook.sh): JupyterLab, started only when its
*effective* configuration still demands the token.

    python docker/notebook_guard.py [JUPYTER OPTION...]

It does what `python -m jupyterlab` does — the server reads its options, its config files
(JUPYTER_CONFIG_DIR, ~/.jupyter, -c/--config, the environment's JUPYTER_TOKEN…) and the command
line — and then, before the server listens, looks at the values Jupyter will actually use, so no
spelling of an option can get past it (`--ServerApp.token ""`, `--IdentityProvider.token=`,
`--NotebookApp.token=`, a config file that sets them, …). It refuses to start (exit 2, one line
on stderr) when:

  - the login is not Jupyter's own token login (another identity provider, or tornado settings
    that replace it), or the token is shorter than 16 characters (empty turns the login off);
  - the XSRF check is off (disable_check_xsrf, or tornado's xsrf_cookies);
  - allow_unauthenticated_access is on (start-notebook.sh turns it off by default, through
    JUPYTER_SERVER_ALLOW_UNAUTHENTICATED_ACCESS=false: every endpoint must declare how it
    authenticates).

The check is on values, not on argv. Python code in a config file runs inside the server and can
do anything the server's user can; it is not a boundary the guard can draw.
"""

import sys

MIN_TOKEN = 16


def problems(app):
    """What makes the initialized ServerApp app reachable without the token; empty when nothing."""
    from jupyter_server.auth.identity import PasswordIdentityProvider

    found = []
    idp = app.identity_provider
    settings = app.web_app.settings
    if type(idp) is not PasswordIdentityProvider or settings.get("identity_provider") is not idp:
        found.append(f"the login is {type(settings.get('identity_provider')).__name__}, not Jupyter's token login")
    token = getattr(idp, "token", "") or ""
    if len(token) < MIN_TOKEN:
        what = "empty (no login at all)" if not token else f"{len(token)} characters"
        found.append(f"the token is {what}; it must have at least {MIN_TOKEN} "
                     "(set JUPYTER_TOKEN=$(openssl rand -hex 16) or leave it unset for a random one)")
    if app.disable_check_xsrf or settings.get("disable_check_xsrf") or not settings.get("xsrf_cookies"):
        found.append("the XSRF check is off (disable_check_xsrf / xsrf_cookies)")
    if app.allow_unauthenticated_access or settings.get("allow_unauthenticated_access"):
        found.append("allow_unauthenticated_access is on")
    return found


def main(argv):
    from jupyter_server.extension import application as ext
    from jupyterlab.labapp import LabApp

    ext._preparse_for_stopping_flags(LabApp, argv)  # --help, --version, --generate-config exit here
    app = LabApp.initialize_server(argv=argv)
    found = problems(app)
    if found:
        print("mhalab-notebook: refusing to start: " + "; ".join(found)
              + " — anyone reaching the port could run code", file=sys.stderr)
        return 2
    try:
        app.start()
    except ext.NoStart:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
