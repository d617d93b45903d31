package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// How the bench finds the Pythons of scripts/setup.sh's venvs and runs its Python scripts.

// userCacheDir is $XDG_CACHE_HOME, else ~/.cache ("" without a home), as scripts/setup.sh has it.
func userCacheDir() string {
	if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
		return c
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache")
	}
	return ""
}

// venvPython returns bin/python of the venv $env names, else of the setup's venv
// <cache>/mhalab/name, whichever exists first ("" if neither does).
func venvPython(env, name string) string {
	var candidates []string
	if v := os.Getenv(env); v != "" {
		candidates = append(candidates, filepath.Join(v, "bin", "python"))
	}
	if cache := userCacheDir(); cache != "" {
		candidates = append(candidates, filepath.Join(cache, "mhalab", name, "bin", "python"))
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return ""
}

// runScript runs script with python, req as JSON on its stdin, and decodes the JSON it prints
// into ans; env (NAME=value) is added to this process's environment. The error names what
// failed: the run (with its duration and the last lines of its stderr) or the answer.
func runScript(python, script string, req, ans any, env ...string) error {
	in, err := json.Marshal(req)
	if err != nil {
		return err
	}
	cmd := exec.Command(python, script)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s failed after %s: %w: %s", python, script, time.Since(start).Round(time.Second), err, lastLines(errOut.String(), 3))
	}
	if err := json.Unmarshal(out.Bytes(), ans); err != nil {
		return fmt.Errorf("unreadable answer from %s: %v", script, err)
	}
	return nil
}
