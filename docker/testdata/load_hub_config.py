"""Loads docker/jupyterhub_config.py without JupyterHub and prints what it configured, as JSON.

    python3 docker/testdata/load_hub_config.py CONFIG [USERNAME]

JupyterHub's get_config() is replaced by an object that records every attribute set on it; the
config's pre_spawn_hook is then called for USERNAME with a stand-in spawner (its copy of the
repository is made for real). Exit status 2 with the config's message when it refuses to load.
Used by dockercheck_test.go (TestHubConfig*).

The hub runs as root with an account per student; the stand-in pretends both: os.geteuid() says
0, chown is a no-op unless really root, and a name with no account gets one whose home is
$LOAD_HUB_HOMES/<name> (uid 4242). LOAD_HUB_REAL_EUID=1 keeps the real euid (the refusal test).
"""

import json
import logging
import os
import pwd
import sys


class Section:
    def __init__(self):
        object.__setattr__(self, "values", {})

    def __getattr__(self, name):
        return self.values.setdefault(name, Section())

    def __setattr__(self, name, value):
        self.values[name] = value

    def dump(self):
        out = {}
        for k, v in self.values.items():
            if isinstance(v, Section):
                out[k] = v.dump()
            elif callable(v):
                out[k] = "<function %s>" % v.__name__
            elif isinstance(v, set):
                out[k] = sorted(v)
            else:
                out[k] = v
        return out


class User:
    def __init__(self, name):
        self.name = name


class Spawner:
    def __init__(self, name):
        self.user = User(name)
        self.environment = {}
        self.log = logging.getLogger("spawner")


def pretend_root():
    really_root = os.geteuid() == 0
    if os.environ.get("LOAD_HUB_REAL_EUID") != "1":
        os.geteuid = lambda: 0
    if not really_root:
        os.chown = os.lchown = lambda *a, **k: None
    real_getpwnam = pwd.getpwnam
    homes = os.environ.get("LOAD_HUB_HOMES", "")

    def getpwnam(name):
        try:
            return real_getpwnam(name)
        except KeyError:
            if not homes:
                raise
            return pwd.struct_passwd((name, "x", 4242, 4242, "", os.path.join(homes, name), "/bin/bash"))

    pwd.getpwnam = getpwnam


def main():
    pretend_root()
    path = sys.argv[1]
    config = Section()
    scope = {"get_config": lambda: config, "__file__": path, "__name__": "jupyterhub_config"}
    with open(path) as f:
        code = compile(f.read(), path, "exec")
    try:
        exec(code, scope)
    except SystemExit as e:
        print(e.code, file=sys.stderr)
        sys.exit(2)
    result = {"config": config.dump()}
    if len(sys.argv) > 2:
        spawner = Spawner(sys.argv[2])
        hook = config.values["Spawner"].values["pre_spawn_hook"]
        hook(spawner)
        hook(spawner)  # a second login keeps the student's copy
        result["spawner_environment"] = spawner.environment
    print(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
