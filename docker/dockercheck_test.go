// Package docker holds no Go code: its tests check the classroom images' files (docker/) without
// a container engine, in every `make test`. They check what the images promise — every version
// pinned, the setup done by scripts/setup.sh (the script CI runs) as a non-root user, Jupyter
// only with a token, the CUDA image on the CUDA plugin — and load the JupyterHub configuration
// with a stand-in for JupyterHub. Building and running the images is `make docker-verify`.
package docker

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dockerfiles are the images' Dockerfiles, relative to this directory.
var dockerfiles = []string{"Dockerfile", "Dockerfile.cuda"}

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	line int    // 1-based line of its first line
	cmd  string // upper case: FROM, ARG, RUN, ...
	args string // the rest, comments and line continuations removed
}

// parseDockerfile splits a Dockerfile into instructions (no parser directives or heredocs:
// mhalab's Dockerfiles use neither).
func parseDockerfile(t *testing.T, name string) []instruction {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur *instruction
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") || (line == "" && cur == nil) {
			continue
		}
		cont := strings.HasSuffix(line, "\\")
		line = strings.TrimSpace(strings.TrimSuffix(line, "\\"))
		if cur == nil {
			cmd, args, _ := strings.Cut(line, " ")
			cur = &instruction{line: i + 1, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		} else if line != "" {
			cur.args += " " + line
		}
		if !cont {
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		t.Fatalf("%s: instruction at line %d ends with a line continuation", name, cur.line)
	}
	return out
}

// args returns the default value of every ARG (first one wins).
func argDefaults(ins []instruction) map[string]string {
	m := map[string]string{}
	for _, in := range ins {
		if in.cmd != "ARG" {
			continue
		}
		k, v, _ := strings.Cut(in.args, "=")
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return m
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var (
	digestRef  = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]*:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)
	goVersion  = regexp.MustCompile(`^1\.(\d+)\.\d+$`)
	moduleHash = regexp.MustCompile(`^h1:[A-Za-z0-9+/]{43}=$`)
)

// TestBaseImagesPinnedByDigest: each Dockerfile's base is an ARG BASE with a digest-pinned default
// and every FROM uses it.
func TestBaseImagesPinnedByDigest(t *testing.T) {
	for _, name := range dockerfiles {
		ins := parseDockerfile(t, name)
		base := argDefaults(ins)["BASE"]
		if !digestRef.MatchString(base) {
			t.Errorf("%s: ARG BASE=%q is not an image pinned by digest (name:tag@sha256:<64 hex>)", name, base)
		}
		froms := 0
		for _, in := range ins {
			if in.cmd != "FROM" {
				continue
			}
			froms++
			ref := strings.Fields(in.args)[0]
			if ref != "${BASE}" && !digestRef.MatchString(ref) {
				t.Errorf("%s:%d: FROM %s is neither ${BASE} nor pinned by digest", name, in.line, ref)
			}
		}
		if froms == 0 {
			t.Errorf("%s: no FROM", name)
		}
		if strings.Contains(strings.ToLower(base), ":latest") {
			t.Errorf("%s: base %s uses a latest tag", name, base)
		}
	}
}

// TestGoPinned: Go comes in by exact version and module hash, the same in both images, new
// enough for go.mod and scripts/pins.env.
func TestGoPinned(t *testing.T) {
	goMod := readFile(t, "../go.mod")
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(goMod)
	if m == nil {
		t.Fatal("../go.mod has no go directive")
	}
	modGo := m[1]
	var first map[string]string
	for _, name := range dockerfiles {
		ins := parseDockerfile(t, name)
		args := argDefaults(ins)
		v, sum := args["GO_VERSION"], args["GO_TOOLCHAIN_SUM"]
		if !goVersion.MatchString(v) {
			t.Errorf("%s: ARG GO_VERSION=%q is not an exact 1.N.P version", name, v)
		} else if !strings.HasPrefix(v, modGo+".") {
			t.Errorf("%s: GO_VERSION %s is not a release of go %s (go.mod)", name, v, modGo)
		}
		if !moduleHash.MatchString(sum) {
			t.Errorf("%s: ARG GO_TOOLCHAIN_SUM=%q is not a module hash (h1:<base64>)", name, sum)
		}
		if first == nil {
			first = args
		} else if args["GO_VERSION"] != first["GO_VERSION"] || args["GO_TOOLCHAIN_SUM"] != first["GO_TOOLCHAIN_SUM"] {
			t.Errorf("%s: Go pin %s %s differs from %s's %s %s", name, v, sum, dockerfiles[0], first["GO_VERSION"], first["GO_TOOLCHAIN_SUM"])
		}
		if !slices.ContainsFunc(ins, func(in instruction) bool {
			return in.cmd == "RUN" && strings.Contains(in.args, `install-go.sh "$GO_VERSION" "$GO_TOOLCHAIN_SUM"`)
		}) {
			t.Errorf("%s: no RUN of install-go.sh with $GO_VERSION and $GO_TOOLCHAIN_SUM", name)
		}
	}
	pins := readFile(t, "../scripts/pins.env")
	if m := regexp.MustCompile(`(?m)^GO_MIN_VERSION=(\S+)`).FindStringSubmatch(pins); m == nil {
		t.Error("../scripts/pins.env has no GO_MIN_VERSION")
	} else if v := first["GO_VERSION"]; !strings.HasPrefix(v+".", m[1]+".") {
		t.Errorf("GO_VERSION %s is not a %s release (scripts/pins.env GO_MIN_VERSION)", v, m[1])
	}
}

// TestSetupScriptAsNonRoot: the images install through scripts/setup.sh — the root steps with
// --only, then the whole setup after switching to the notebook user — and end as that user.
// Nothing the setup installs is installed a second way in a Dockerfile.
func TestSetupScriptAsNonRoot(t *testing.T) {
	for _, name := range dockerfiles {
		ins := parseDockerfile(t, name)
		args := argDefaults(ins)
		if uid := args["NB_UID"]; uid == "" || uid == "0" {
			t.Errorf("%s: ARG NB_UID=%q; the notebook user must not be root", name, uid)
		}
		user := ""
		fullSetupAsUser := false
		for _, in := range ins {
			switch in.cmd {
			case "USER":
				user = in.args
			case "RUN":
				if !strings.Contains(in.args, "scripts/setup.sh") {
					continue
				}
				full := regexp.MustCompile(`scripts/setup\.sh( \$\{SETUP_SKIP:\+--skip "\$SETUP_SKIP"\})? *(&&|$)`).MatchString(in.args)
				if full && user == "${NB_USER}" {
					fullSetupAsUser = true
				}
				if full && user == "" {
					t.Errorf("%s:%d: the whole setup runs as root", name, in.line)
				}
				if user == "" && !strings.Contains(in.args, "--only") {
					t.Errorf("%s:%d: setup as root must be limited with --only", name, in.line)
				}
			}
		}
		if !fullSetupAsUser {
			t.Errorf("%s: no RUN of scripts/setup.sh (all steps) as USER ${NB_USER}", name)
		}
		if user != "${NB_USER}" {
			t.Errorf("%s: the image ends as USER %q, want ${NB_USER}", name, user)
		}
		text := readFile(t, name)
		for _, word := range []string{"xla-cpu-pjrt", "xla_cpu_pjrt", "janpfeifer/gonb", "x/tools/cmd/goimports", "x/tools/gopls", "gonb --install", "torch==", "pip download"} {
			if strings.Contains(text, word) {
				t.Errorf("%s mentions %q: that is scripts/setup.sh's job (one copy of each step)", name, word)
			}
		}
	}
}

// TestNoUnpinnedDownloads: Dockerfiles and image scripts fetch only through clients that check
// pins: no URLs (but the local Jupyter address), no "latest", pip only with hashes, go install
// only at a version (or of this repository's own packages, ./…). Messages (die, echo) may name
// commands.
func TestNoUnpinnedDownloads(t *testing.T) {
	files := append([]string{}, dockerfiles...)
	scripts, _ := filepath.Glob("*.sh")
	files = append(files, scripts...)
	files = append(files, "with-build-ca")
	url := regexp.MustCompile(`[a-z]+://`)
	pipInstall := regexp.MustCompile(`pip"? install`)
	goInstall := regexp.MustCompile(`go install (\S+)`)
	for _, name := range files {
		for i, line := range strings.Split(readFile(t, name), "\n") {
			code := strings.TrimSpace(line)
			if strings.HasPrefix(code, "#") || code == "" {
				continue
			}
			where := name + ":" + itoa(i+1)
			message := strings.HasPrefix(code, "die ") || strings.HasPrefix(code, "echo ") || strings.HasPrefix(code, "info ")
			local := strings.ReplaceAll(strings.ReplaceAll(code, "http://127.0.0.1", ""), "http://localhost", "")
			if url.MatchString(local) {
				t.Errorf("%s: a URL outside a comment: %s", where, code)
			}
			if strings.Contains(code, ":latest") || strings.Contains(code, "@latest") {
				t.Errorf("%s: latest: %s", where, code)
			}
			if pipInstall.MatchString(code) && !message && !strings.Contains(code, "--require-hashes") && !strings.HasSuffix(code, "\\") {
				t.Errorf("%s: pip install without --require-hashes: %s", where, code)
			}
			if m := goInstall.FindStringSubmatch(code); m != nil && !strings.HasPrefix(m[1], "./") && !regexp.MustCompile(`@v\d`).MatchString(m[1]) {
				t.Errorf("%s: go install without an exact version: %s", where, code)
			}
		}
	}
	// Multi-line pip install in the CUDA plugin installer: the flag is on a continuation line.
	if s := readFile(t, "install-cuda-plugin.sh"); !strings.Contains(s, "--require-hashes") {
		t.Error("install-cuda-plugin.sh: pip install without --require-hashes")
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestCUDAImage: the CUDA image installs the pinned CUDA plugin and defaults to it.
func TestCUDAImage(t *testing.T) {
	req := readFile(t, "cuda-requirements.txt")
	joined := strings.ReplaceAll(req, "\\\n", " ")
	pinned := regexp.MustCompile(`^([A-Za-z0-9._-]+)==(\S+) +--hash=sha256:[0-9a-f]{64}$`)
	var names []string
	for _, line := range strings.Split(joined, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := pinned.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("cuda-requirements.txt: %q is not name==version --hash=sha256:<64 hex>", line)
			continue
		}
		names = append(names, m[1])
	}
	for _, want := range []string{"jax-cuda13-pjrt", "nvidia-cuda-runtime", "nvidia-cublas", "nvidia-cudnn-cu13", "nvidia-cuda-nvcc"} {
		if !slices.Contains(names, want) {
			t.Errorf("cuda-requirements.txt lacks %s", want)
		}
	}
	script := readFile(t, "install-cuda-plugin.sh")
	if !regexp.MustCompile(`(?m)^plugin_sha256=[0-9a-f]{64}$`).MatchString(script) {
		t.Error("install-cuda-plugin.sh: plugin_sha256 is not a sha256")
	}
	ins := parseDockerfile(t, "Dockerfile.cuda")
	var env string
	installs := false
	for _, in := range ins {
		if in.cmd == "ENV" {
			env += " " + in.args + " "
		}
		if in.cmd == "RUN" && strings.Contains(in.args, "install-cuda-plugin.sh") {
			installs = true
		}
	}
	for _, want := range []string{" GOMLX_BACKEND=xla:cuda ", " XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/lib/go-xla/nvidia "} {
		if !strings.Contains(env, want) {
			t.Errorf("Dockerfile.cuda: no ENV%s", want)
		}
	}
	if !installs {
		t.Error("Dockerfile.cuda: no RUN of install-cuda-plugin.sh")
	}
}

// TestCopiedFilesExist: every COPY source is in the repository.
func TestCopiedFilesExist(t *testing.T) {
	for _, name := range dockerfiles {
		for _, in := range parseDockerfile(t, name) {
			if in.cmd != "COPY" {
				continue
			}
			var srcs []string
			for _, f := range strings.Fields(in.args) {
				if !strings.HasPrefix(f, "--") {
					srcs = append(srcs, f)
				}
			}
			for _, src := range srcs[:len(srcs)-1] {
				if _, err := os.Stat(filepath.Join("..", src)); err != nil {
					t.Errorf("%s:%d: COPY source %s: %v", name, in.line, src, err)
				}
			}
		}
	}
}

// TestNotebookNeedsToken: the images start Jupyter through start-notebook.sh, which hands every
// option to docker/notebook_guard.py (installed in /usr/local/lib/mhalab-image) run by the Python
// scripts/jupyter_python.sh names, on 0.0.0.0:8888 in the repository, with unauthenticated
// endpoints off by default. The guard's refusals are tested live (TestNotebookGuardLive).
func TestNotebookNeedsToken(t *testing.T) {
	for _, name := range dockerfiles {
		ins := parseDockerfile(t, name)
		last := func(cmd string) string {
			s := ""
			for _, in := range ins {
				if in.cmd == cmd {
					s = in.args
				}
			}
			return s
		}
		if got := last("CMD"); got != `["mhalab-notebook"]` {
			t.Errorf("%s: CMD %s, want [\"mhalab-notebook\"]", name, got)
		}
		if got := last("ENTRYPOINT"); got != `["/usr/bin/tini", "--"]` {
			t.Errorf("%s: ENTRYPOINT %s, want tini", name, got)
		}
		for _, want := range []string{"docker/start-notebook.sh /usr/local/bin/mhalab-notebook",
			"docker/notebook_guard.py /usr/local/lib/mhalab-image/notebook_guard.py"} {
			if !slices.ContainsFunc(ins, func(in instruction) bool { return in.cmd == "COPY" && in.args == want }) {
				t.Errorf("%s: no COPY %s", name, want)
			}
		}
		if !slices.ContainsFunc(ins, func(in instruction) bool {
			return in.cmd == "RUN" && strings.Contains(in.args, "install -d -m 0700 -o root -g root /etc/mhalab")
		}) {
			t.Errorf("%s: /etc/mhalab (students file, TLS key) is not made root-only", name)
		}
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	// A stand-in for the Jupyter Python (named by MHALAB_JUPYTER_PYTHON through the repository's
	// scripts/jupyter_python.sh) that prints its arguments.
	fake := filepath.Join(dir, "python")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"python $*\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "jupyter_python.sh"), []byte(readFile(t, "../scripts/jupyter_python.sh")), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(env []string, args ...string) (string, int) {
		cmd := exec.Command("bash", append([]string{"start-notebook.sh"}, args...)...)
		cmd.Env = append([]string{"PATH=" + dir + ":/usr/bin:/bin", "MHALAB_DIR=" + dir, "MHALAB_JUPYTER_PYTHON=" + fake}, env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	guard, err := filepath.Abs("notebook_guard.py")
	if err != nil {
		t.Fatal(err)
	}
	out, code := run([]string{"JUPYTER_TOKEN=0123456789abcdef0123"}, "--NotebookApp.iopub_data_rate_limit=1e9")
	if code != 0 || !strings.Contains(out, "python "+guard+" --ip=0.0.0.0 --port=8888 --no-browser --ServerApp.root_dir="+dir+" --NotebookApp.iopub_data_rate_limit=1e9") {
		t.Errorf("start-notebook.sh: exit %d, output %q; want the guard with the options", code, out)
	}
	// The rule is on Jupyter's effective configuration, not on argv: the wrapper passes every
	// option on, and sets the default that refuses unauthenticated endpoints.
	fakeEnv := filepath.Join(dir, "python")
	if err := os.WriteFile(fakeEnv, []byte("#!/bin/sh\necho \"python $* unauth=$JUPYTER_SERVER_ALLOW_UNAUTHENTICATED_ACCESS\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code = run(nil, "--ServerApp.token", "")
	if code != 0 || !strings.Contains(out, "--ServerApp.token  unauth=false") {
		t.Errorf("start-notebook.sh --ServerApp.token \"\": exit %d, output %q; want it handed to the guard with unauth=false", code, out)
	}
}

// TestMakeBaseReadsAptSources: make-base.sh takes the Debian mirror from apt's sources (deb822
// and one-line formats), skipping the security archive, and fails when there is none.
func TestMakeBaseReadsAptSources(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, c := range []struct {
		name, file, text, want string
	}{
		{"deb822", "sources.list.d/debian.sources",
			"Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\n\n" +
				"Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n",
			"http://mirror.example/debian"},
		{"one-line", "sources.list",
			"# comment\ndeb http://security.example/debian-security bookworm-security main\ndeb [arch=amd64] http://mirror.example/debian bookworm main\n",
			"http://mirror.example/debian"},
		{"none", "sources.list", "deb http://mirror.example/ubuntu noble main\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			etc := t.TempDir()
			path := filepath.Join(etc, c.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", "make-base.sh", "--print-mirror")
			cmd.Env = append(os.Environ(), "MHALAB_APT_ETC="+etc)
			out, err := cmd.Output()
			got := strings.TrimSpace(string(out))
			if c.want == "" {
				if err == nil {
					t.Errorf("make-base.sh --print-mirror found %q in %q; want an error", got, c.text)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("make-base.sh --print-mirror = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestShellScriptsParse: bash -n on every script of docker/.
func TestShellScriptsParse(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	scripts, _ := filepath.Glob("*.sh")
	scripts = append(scripts, "with-build-ca")
	for _, s := range scripts {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
		if info, err := os.Stat(s); err == nil && info.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable", s)
		}
	}
}

// hubEnv prepares what jupyterhub_config.py checks for: a tools home with gonb and the GoNB
// kernel, and go and jupyterhub-singleuser on PATH (stand-ins).
func hubEnv(t *testing.T) (env []string, state string) {
	t.Helper()
	tools := t.TempDir()
	bin := t.TempDir()
	state = t.TempDir()
	for _, f := range []string{
		filepath.Join(tools, "go", "bin", "gonb"),
		filepath.Join(tools, ".local", "share", "jupyter", "kernels", "gonb", "kernel.json"),
		filepath.Join(bin, "go"),
		filepath.Join(bin, "jupyterhub-singleuser"),
	} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env = []string{
		"PATH=" + bin + ":/usr/bin:/bin",
		"HOME=" + state,
		"MHALAB_HUB_TOOLS=" + tools,
		"MHALAB_HUB_STATE=" + filepath.Join(state, "hub"),
		"LOAD_HUB_HOMES=" + filepath.Join(state, "hub", "homes"),
		"MHALAB_HUB_PORT=18000",
	}
	return env, state
}

func loadHubConfig(t *testing.T, python string, env []string, user string) (map[string]any, string, int) {
	t.Helper()
	args := []string{"testdata/load_hub_config.py", "jupyterhub_config.py"}
	if user != "" {
		args = append(args, user)
	}
	cmd := exec.Command(python, args...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		return nil, stderr.String(), code
	}
	var result map[string]any
	if err := json.Unmarshal(out, &result); err != nil {
		t.Fatalf("load_hub_config.py output: %v\n%s\n%s", err, out, stderr.String())
	}
	return result, stderr.String(), 0
}

// get walks a JSON object by keys.
func get(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// TestHubConfig loads jupyterhub_config.py with a stand-in for JupyterHub (python3 needed; no
// JupyterHub): the shared-password mode, the student's copy of the repository made by the
// pre-spawn hook, the offline Go environment, and the refusals.
func TestHubConfig(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	env, state := hubEnv(t)
	shared := append(env, "MHALAB_HUB_AUTH=shared-password", "MHALAB_HUB_USERS=ada,grace", "MHALAB_HUB_PASSWORD=correct-horse")
	result, stderr, code := loadHubConfig(t, python, shared, "ada")
	if code != 0 {
		t.Fatalf("loading the config: exit %d: %s", code, stderr)
	}
	cfg := result["config"].(map[string]any)
	for _, c := range []struct {
		keys []string
		want any
	}{
		{[]string{"JupyterHub", "authenticator_class"}, "jupyterhub.auth.DummyAuthenticator"},
		{[]string{"JupyterHub", "spawner_class"}, "jupyterhub.spawner.LocalProcessSpawner"},
		{[]string{"JupyterHub", "port"}, float64(18000)},
		{[]string{"JupyterHub", "hub_ip"}, "127.0.0.1"},
		{[]string{"Authenticator", "allowed_users"}, []any{"ada", "grace"}},
		{[]string{"Spawner", "pre_spawn_hook"}, "<function pre_spawn_hook>"},
		{[]string{"Spawner", "default_url"}, "/lab/tree/mhalab"},
		{[]string{"Spawner", "environment", "GOPROXY"}, "off"},
		{[]string{"Spawner", "environment", "GOFLAGS"}, "-mod=mod"},
		{[]string{"Spawner", "environment", "GOTOOLCHAIN"}, "local"},
		{[]string{"Spawner", "environment", "GOMLX_NO_AUTO_INSTALL"}, "1"},
	} {
		got := get(cfg, c.keys...)
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(c.want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("c.%s = %s, want %s", strings.Join(c.keys, "."), gotJSON, wantJSON)
		}
	}
	// SharedPasswordAuthenticator where the python3 running the stand-in has JupyterHub >= 5.3.
	if get(cfg, "DummyAuthenticator", "password") != "correct-horse" && get(cfg, "SharedPasswordAuthenticator", "user_password") != "correct-horse" {
		t.Errorf("the shared password is set on neither DummyAuthenticator nor SharedPasswordAuthenticator")
	}
	home := filepath.Join(state, "hub", "homes", "ada")
	for _, p := range []string{"mhalab/lessons", "mhalab/notebooks", "mhalab/go.mod", "mhalab/docker/jupyterhub_config.py"} {
		if _, err := os.Stat(filepath.Join(home, p)); err != nil {
			t.Errorf("the student's copy: %v", err)
		}
	}
	for _, p := range []string{"mhalab/.git", "mhalab/build"} {
		if _, err := os.Stat(filepath.Join(home, p)); err == nil {
			t.Errorf("the student's copy has %s", p)
		}
	}
	if got := get(result, "spawner_environment", "MHALAB_DIR"); got != filepath.Join(home, "mhalab") {
		t.Errorf("spawner MHALAB_DIR = %v, want %s", got, filepath.Join(home, "mhalab"))
	}

	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"no users", []string{"MHALAB_HUB_AUTH=shared-password", "MHALAB_HUB_PASSWORD=correct-horse"}, "MHALAB_HUB_USERS is empty"},
		{"short password", []string{"MHALAB_HUB_AUTH=shared-password", "MHALAB_HUB_USERS=ada", "MHALAB_HUB_PASSWORD=short"}, "at least 8 characters"},
		{"no password", []string{"MHALAB_HUB_AUTH=shared-password", "MHALAB_HUB_USERS=ada"}, "at least 8 characters"},
		{"unknown auth", []string{"MHALAB_HUB_AUTH=none", "MHALAB_HUB_USERS=ada"}, "use pam or shared-password"},
		{"no gonb", []string{"MHALAB_HUB_AUTH=shared-password", "MHALAB_HUB_USERS=ada", "MHALAB_HUB_PASSWORD=correct-horse", "MHALAB_HUB_TOOLS=" + t.TempDir()}, "gonb not found"},
	} {
		_, stderr, code := loadHubConfig(t, python, append(append([]string{}, env...), c.env...), "")
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", c.name, code, stderr, c.want)
		}
	}

	if !strings.Contains(stderr, "passwords travel in clear") {
		t.Errorf("no TLS certificate: no warning on stderr (%q)", stderr)
	}
	if os.Geteuid() != 0 {
		_, stderr, code := loadHubConfig(t, python, append(append([]string{}, shared...), "LOAD_HUB_REAL_EUID=1"), "")
		if code != 2 || !strings.Contains(stderr, "needs root") {
			t.Errorf("as non-root: exit %d, %q; want a refusal", code, stderr)
		}
	}
	tls := append(append([]string{}, shared...), "MHALAB_HUB_SSL_CERT="+filepath.Join(state, "none.crt"))
	if _, stderr, code := loadHubConfig(t, python, tls, ""); code != 2 || !strings.Contains(stderr, "needs both") {
		t.Errorf("a certificate without a key: exit %d, %q; want a refusal", code, stderr)
	}
	if info, err := os.Stat(filepath.Join(state, "hub")); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the hub's state directory: %v %v; want mode 0700", info.Mode(), err)
	}

	pam := append(append([]string{}, env...), "MHALAB_HUB_AUTH=pam", "MHALAB_HUB_USERS=ada")
	result, stderr, code = loadHubConfig(t, python, pam, "")
	if code != 0 {
		t.Fatalf("pam as root: exit %d: %s", code, stderr)
	}
	cfg = result["config"].(map[string]any)
	if got := get(cfg, "JupyterHub", "authenticator_class"); got != "jupyterhub.auth.PAMAuthenticator" {
		t.Errorf("pam: authenticator %v", got)
	}
	if got := get(cfg, "JupyterHub", "spawner_class"); got != "jupyterhub.spawner.LocalProcessSpawner" {
		t.Errorf("pam: spawner %v", got)
	}
}
