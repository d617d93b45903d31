// Package z2jh checks deploy/z2jh/values.yaml, the values mhalab gives the Zero to JupyterHub Helm
// chart, without a cluster:
//
//   - every key and its type against the chart's values schema (chart-schema.yaml, derived from
//     the chart's values.schema.yaml for the pinned version by derive-schema.py), and the
//     KubeSpawner settings inside hub.config and profileList against kubespawner-traits.yaml;
//   - the single-user server against the image docker/Dockerfile builds (user id, home, command,
//     the volume's mount point, the seeding init container);
//   - the strings KubeSpawner formats ({username}, {user_server}, …);
//   - the Kubernetes objects in k8s/ against the Kubernetes API schemas, with kubernetes-validate
//     (install-validator.sh; skipped when it is missing, except under CI=true, which installs it).
//
// TestValidatorCatchesMistakes shows that each check fails on a broken copy of the values.
package z2jh

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mhalab/mhalab/internal/testenv"
	"gopkg.in/yaml.v3"
)

// schema is the part of JSON Schema (draft 7) that the chart's values schema uses for the keys
// mhalab sets.
type schema struct {
	Type                 typeList           `yaml:"type"`
	Enum                 []any              `yaml:"enum"`
	Minimum              *float64           `yaml:"minimum"`
	Items                *schema            `yaml:"items"`
	Properties           map[string]*schema `yaml:"properties"`
	PatternProperties    map[string]*schema `yaml:"patternProperties"`
	AdditionalProperties *additional        `yaml:"additionalProperties"`
}

// typeList is JSON Schema's "type": one name or a list of names.
type typeList []string

func (t *typeList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*t = typeList{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*t = list
	return nil
}

// additional is "additionalProperties": true, false or a schema.
type additional struct {
	allowed bool
	schema  *schema
}

func (a *additional) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&a.allowed)
	}
	a.allowed = true
	a.schema = new(schema)
	return n.Decode(a.schema)
}

type chartSchema struct {
	Chart        string  `yaml:"chart"`
	ChartVersion string  `yaml:"chartVersion"`
	Source       string  `yaml:"source"`
	Schema       *schema `yaml:"schema"`
}

type traitFile struct {
	KubeSpawner string                         `yaml:"kubespawner"`
	JupyterHub  string                         `yaml:"jupyterhub"`
	ProfileKeys []string                       `yaml:"profileKeys"`
	Traits      map[string][]string            `yaml:"traits"`
	Config      map[string]map[string][]string `yaml:"config"`
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func loadValues(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	readYAML(t, "values.yaml", &v)
	return v
}

func loadChart(t *testing.T) chartSchema {
	t.Helper()
	var c chartSchema
	readYAML(t, "chart-schema.yaml", &c)
	if c.Schema == nil || c.ChartVersion == "" {
		t.Fatal("chart-schema.yaml: no schema or chartVersion")
	}
	return c
}

func loadTraits(t *testing.T) traitFile {
	t.Helper()
	var tr traitFile
	readYAML(t, "kubespawner-traits.yaml", &tr)
	return tr
}

// kind names a decoded YAML value the way JSON Schema names types.
func kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case int, int64, uint64:
		return "integer"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

var byteSpec = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?[KMGT]$`)

// hasType reports whether v is of one of the types; "number" takes integers too, and "bytes" is
// JupyterHub's ByteSpecification (an integer, or a number with a suffix K, M, G or T).
func hasType(v any, types []string) bool {
	k := kind(v)
	for _, t := range types {
		switch {
		case t == k, t == "number" && k == "integer":
			return true
		case t == "bytes":
			if s, ok := v.(string); ok && byteSpec.MatchString(s) || k == "integer" {
				return true
			}
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validate checks v against s and returns one line per problem, each naming the key's path.
func validate(path string, v any, s *schema) []string {
	var errs []string
	if len(s.Type) > 0 && !hasType(v, s.Type) {
		return []string{fmt.Sprintf("%s: is %s %v, the chart wants %s", path, kind(v), v, strings.Join(s.Type, " or "))}
	}
	if s.Enum != nil {
		found := false
		for _, e := range s.Enum {
			if fmt.Sprint(e) == fmt.Sprint(v) && kind(e) == kind(v) {
				found = true
			}
		}
		if !found {
			return []string{fmt.Sprintf("%s: %v is not one of %v", path, v, s.Enum)}
		}
	}
	if s.Minimum != nil {
		if f, ok := number(v); ok && f < *s.Minimum {
			errs = append(errs, fmt.Sprintf("%s: %v is below the minimum %v", path, v, *s.Minimum))
		}
	}
	if list, ok := v.([]any); ok && s.Items != nil {
		for i, item := range list {
			errs = append(errs, validate(fmt.Sprintf("%s[%d]", path, i), item, s.Items)...)
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return errs
	}
	for _, key := range sortedKeys(obj) {
		sub := path + "." + key
		if path == "" {
			sub = key
		}
		if ps, ok := s.Properties[key]; ok {
			errs = append(errs, validate(sub, obj[key], ps)...)
			continue
		}
		matched := false
		for _, pattern := range sortedKeys(s.PatternProperties) {
			if regexp.MustCompile(pattern).MatchString(key) {
				errs = append(errs, validate(sub, obj[key], s.PatternProperties[pattern])...)
				matched = true
				break
			}
		}
		switch {
		case matched:
		case s.AdditionalProperties != nil && s.AdditionalProperties.schema != nil:
			errs = append(errs, validate(sub, obj[key], s.AdditionalProperties.schema)...)
		case s.AdditionalProperties != nil && s.AdditionalProperties.allowed:
		default:
			errs = append(errs, fmt.Sprintf("%s: no such key in the chart's schema (known here: %s; a new key needs derive-schema.py)",
				sub, strings.Join(sortedKeys(s.Properties), ", ")))
		}
	}
	return errs
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// get follows a dotted path ("singleuser.image.name") through decoded YAML.
func get(v any, path string) any {
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[key]
	}
	return v
}

// checkTraits checks hub.config and profileList against KubeSpawner's and JupyterHub's settings.
func checkTraits(values map[string]any, tr traitFile) []string {
	var errs []string
	config, _ := get(values, "hub.config").(map[string]any)
	for _, class := range sortedKeys(config) {
		known, ok := tr.Config[class]
		if !ok {
			errs = append(errs, fmt.Sprintf("hub.config.%s: class not in kubespawner-traits.yaml (add its traits there from its source)", class))
			continue
		}
		traits, _ := config[class].(map[string]any)
		for _, name := range sortedKeys(traits) {
			types, ok := known[name]
			switch {
			case !ok:
				errs = append(errs, fmt.Sprintf("hub.config.%s.%s: no such setting (known: %s)", class, name, strings.Join(sortedKeys(known), ", ")))
			case !hasType(traits[name], types):
				errs = append(errs, fmt.Sprintf("hub.config.%s.%s: is %s %v, wants %s", class, name, kind(traits[name]), traits[name], strings.Join(types, " or ")))
			}
		}
	}
	profiles, _ := get(values, "singleuser.profileList").([]any)
	defaults := 0
	for i, p := range profiles {
		path := fmt.Sprintf("singleuser.profileList[%d]", i)
		profile, ok := p.(map[string]any)
		if !ok {
			errs = append(errs, path+": not a mapping")
			continue
		}
		for _, key := range sortedKeys(profile) {
			if !contains(tr.ProfileKeys, key) {
				errs = append(errs, fmt.Sprintf("%s.%s: not a key of a KubeSpawner %s profile (%s)", path, key, tr.KubeSpawner, strings.Join(tr.ProfileKeys, ", ")))
			}
		}
		if name, _ := profile["display_name"].(string); name == "" {
			errs = append(errs, path+".display_name: missing")
		}
		if profile["default"] == true {
			defaults++
		}
		override, _ := profile["kubespawner_override"].(map[string]any)
		for _, name := range sortedKeys(override) {
			types, ok := tr.Traits[name]
			switch {
			case !ok:
				errs = append(errs, fmt.Sprintf("%s.kubespawner_override.%s: not a KubeSpawner %s setting in kubespawner-traits.yaml", path, name, tr.KubeSpawner))
			case !hasType(override[name], types):
				errs = append(errs, fmt.Sprintf("%s.kubespawner_override.%s: is %s %v, wants %s", path, name, kind(override[name]), override[name], strings.Join(types, " or ")))
			}
		}
	}
	if len(profiles) > 0 && defaults != 1 {
		errs = append(errs, fmt.Sprintf("singleuser.profileList: %d profiles say default: true, want exactly 1", defaults))
	}
	return errs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func report(t *testing.T, what string, errs []string) {
	t.Helper()
	for _, e := range errs {
		t.Errorf("%s: %s", what, e)
	}
}

func TestValuesMatchChartSchema(t *testing.T) {
	chart := loadChart(t)
	report(t, fmt.Sprintf("values.yaml (chart %s %s)", chart.Chart, chart.ChartVersion), validate("", loadValues(t), chart.Schema))
}

func TestKubeSpawnerSettings(t *testing.T) {
	report(t, "values.yaml", checkTraits(loadValues(t), loadTraits(t)))
}

// TestValidatorCatchesMistakes breaks a copy of the values in one place at a time; each check must
// then report that place.
func TestValidatorCatchesMistakes(t *testing.T) {
	chart, traits := loadChart(t), loadTraits(t)
	cases := []struct {
		name, path string
		edit       func(v map[string]any)
		want       string
	}{
		{"misspelled key", "singleuser", func(v map[string]any) {
			su := v["singleuser"].(map[string]any)
			su["memroy"] = su["memory"]
		}, "singleuser.memroy: no such key"},
		{"misspelled nested key", "cull", func(v map[string]any) {
			get(v, "cull").(map[string]any)["timout"] = 3600
		}, "cull.timout: no such key"},
		{"CPU limit as a string", "cpu", func(v map[string]any) {
			get(v, "singleuser.cpu").(map[string]any)["limit"] = "2"
		}, "singleuser.cpu.limit: is string 2, the chart wants number or null"},
		{"boolean as a string", "cull", func(v map[string]any) {
			get(v, "cull").(map[string]any)["enabled"] = "true"
		}, "cull.enabled: is string true, the chart wants boolean"},
		{"bad enum", "storage", func(v map[string]any) {
			get(v, "singleuser.storage").(map[string]any)["type"] = "dynamics"
		}, "singleuser.storage.type: dynamics is not one of"},
		{"lower-case config class", "hub", func(v map[string]any) {
			get(v, "hub.config").(map[string]any)["kubeSpawner"] = map[string]any{}
		}, "hub.config.kubeSpawner: no such key"},
		{"unknown override", "profile", func(v map[string]any) {
			p := get(v, "singleuser.profileList").([]any)[1].(map[string]any)
			p["kubespawner_override"].(map[string]any)["extra_resource_limit"] = map[string]any{"nvidia.com/gpu": "1"}
		}, "kubespawner_override.extra_resource_limit: not a KubeSpawner"},
		{"Kubernetes memory unit", "profile", func(v map[string]any) {
			p := get(v, "singleuser.profileList").([]any)[1].(map[string]any)
			p["kubespawner_override"].(map[string]any)["mem_limit"] = "8Gi"
		}, "kubespawner_override.mem_limit: is string 8Gi, wants bytes"},
		{"unknown profile key", "profile", func(v map[string]any) {
			get(v, "singleuser.profileList").([]any)[0].(map[string]any)["kubespawner_overrides"] = map[string]any{}
		}, "profileList[0].kubespawner_overrides: not a key"},
		{"unknown hub.config trait", "config", func(v map[string]any) {
			get(v, "hub.config.Authenticator").(map[string]any)["allowall"] = false
		}, "hub.config.Authenticator.allowall: no such setting"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := loadValues(t)
			c.edit(v)
			errs := append(validate("", v, chart.Schema), checkTraits(v, traits)...)
			for _, e := range errs {
				if strings.Contains(e, c.want) {
					return
				}
			}
			t.Errorf("a broken copy of values.yaml passed: want an error containing %q, got %q", c.want, errs)
		})
	}
}

// TestYAMLForHelm: Helm reads values with a YAML 1.1 parser, for which yes/no/on/off are booleans,
// and a null in a values file deletes the chart's default. Neither may hide in values.yaml.
func TestYAMLForHelm(t *testing.T) {
	data, err := os.ReadFile("values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if errs := helmPitfalls(&doc); len(errs) > 0 {
		report(t, "values.yaml", errs)
	}
	// The check can fail.
	var bad yaml.Node
	if err := yaml.Unmarshal([]byte("a: yes\nb:\nc: ~\n"), &bad); err != nil {
		t.Fatal(err)
	}
	if got := helmPitfalls(&bad); len(got) != 3 {
		t.Errorf("helmPitfalls found %d of 3 pitfalls in a bad file: %q", len(got), got)
	}
}

func helmPitfalls(n *yaml.Node) []string {
	var errs []string
	yaml11 := map[string]bool{"yes": true, "no": true, "on": true, "off": true, "y": true, "n": true}
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && n.Style == 0 {
			switch {
			case n.Tag == "!!null":
				errs = append(errs, fmt.Sprintf("line %d: a null value deletes the chart's default under Helm; set a value", n.Line))
			case n.Tag == "!!str" && yaml11[strings.ToLower(n.Value)]:
				errs = append(errs, fmt.Sprintf("line %d: %q is a boolean for Helm's YAML 1.1 parser; quote it or write true/false", n.Line, n.Value))
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return errs
}

// dockerfile reads the ARG defaults and the last WORKDIR of docker/Dockerfile.
func dockerfile(t *testing.T) (args map[string]string, workdir string, text string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docker", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	args = map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := regexp.MustCompile(`^ARG ([A-Z_]+)=(\S*)`).FindStringSubmatch(line); m != nil {
			args[m[1]] = m[2]
		}
		if strings.HasPrefix(line, "WORKDIR ") {
			workdir = strings.TrimSpace(strings.TrimPrefix(line, "WORKDIR "))
		}
	}
	workdir = os.Expand(workdir, func(k string) string { return args[k] })
	return args, workdir, string(data)
}

// TestMatchesImage: the single-user server starts the way KubeSpawner starts it, on the image
// docker/Dockerfile builds.
func TestMatchesImage(t *testing.T) {
	v := loadValues(t)
	args, workdir, text := dockerfile(t)
	home := "/home/" + args["NB_USER"]
	uid, err := strconv.Atoi(args["NB_UID"])
	if err != nil {
		t.Fatalf("docker/Dockerfile: ARG NB_UID=%q is not a number", args["NB_UID"])
	}
	if got := get(v, "singleuser.uid"); got != uid {
		t.Errorf("singleuser.uid is %v, the image's user %s has uid %d (docker/Dockerfile ARG NB_UID)", got, args["NB_USER"], uid)
	}
	// KubeSpawner runs singleuser.cmd as the container's args (the image's ENTRYPOINT stays); the
	// image must have it on PATH: docker/Dockerfile links the Jupyter venv's jupyterhub-singleuser
	// (PyPI's JupyterHub, scripts/jupyter-requirements.txt) into /usr/local/bin.
	if got := get(v, "singleuser.cmd"); got != "jupyterhub-singleuser" {
		t.Errorf("singleuser.cmd is %v, want jupyterhub-singleuser", got)
	}
	if !regexp.MustCompile(`ln -sf [^\n]*/usr/local/bin/\$tool`).MatchString(text) || !strings.Contains(text, "jupyterhub-singleuser; do") {
		t.Errorf("docker/Dockerfile no longer links jupyterhub-singleuser into /usr/local/bin: singleuser.cmd has nothing to run")
	}
	// JupyterHub supports a hub and single-user servers of the same major version only: the
	// image's JupyterHub (its Jupyter requirements, pinned) against the chart's hub
	// (kubespawner-traits.yaml's jupyterhub, the version of the chart's hub image).
	hubVersion := loadTraits(t).JupyterHub
	req, err := os.ReadFile(filepath.Join("..", "..", "scripts", "jupyter-requirements.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^jupyterhub==([0-9]+)\.([0-9.]+) `).FindSubmatch(req)
	switch {
	case hubVersion == "":
		t.Errorf("kubespawner-traits.yaml names no jupyterhub version (the chart's hub)")
	case m == nil:
		t.Errorf("scripts/jupyter-requirements.txt pins no jupyterhub: the image has no jupyterhub-singleuser")
	case string(m[1]) != strings.SplitN(hubVersion, ".", 2)[0]:
		t.Errorf("the image's JupyterHub is %s.%s, the chart's hub %s: the major versions must match", m[1], m[2], hubVersion)
	}
	// The student's volume holds their copy of the repository, where the image keeps it and where
	// the server starts (the image's WORKDIR: KubeSpawner sets no working directory).
	mount, _ := get(v, "singleuser.storage.homeMountPath").(string)
	if mount != workdir {
		t.Errorf("singleuser.storage.homeMountPath is %q, the image's repository and WORKDIR is %q", mount, workdir)
	}
	if got := get(v, "singleuser.extraEnv.HOME"); got != home {
		t.Errorf("singleuser.extraEnv.HOME is %v, the image's user's home is %s", got, home)
	}
	if got := get(v, "singleuser.extraEnv.MHALAB_DIR"); got != workdir {
		t.Errorf("singleuser.extraEnv.MHALAB_DIR is %v, want %s", got, workdir)
	}
	name, _ := get(v, "singleuser.image.name").(string)
	tag, _ := get(v, "singleuser.image.tag").(string)
	if name == "" || tag == "" || tag == "latest" {
		t.Errorf("singleuser.image is %q:%q: name it and pin a tag (not latest)", name, tag)
	}
	// The seeding init container: same image, same user, the student's volume.
	inits, _ := get(v, "singleuser.initContainers").([]any)
	if len(inits) != 1 {
		t.Fatalf("singleuser.initContainers: want the one seeding container, got %d", len(inits))
	}
	seed, _ := inits[0].(map[string]any)
	if img := seed["image"]; img != name+":"+tag {
		t.Errorf("singleuser.initContainers[0].image is %v, want the student image %s:%s", img, name, tag)
	}
	if got := get(seed, "securityContext.runAsUser"); got != uid {
		t.Errorf("singleuser.initContainers[0] runs as %v, want uid %d", got, uid)
	}
	mounts, _ := seed["volumeMounts"].([]any)
	volume := get(v, "singleuser.storage.dynamic.volumeNameTemplate")
	if len(mounts) != 1 || get(mounts[0], "name") != volume {
		t.Errorf("singleuser.initContainers[0].volumeMounts is %v, want the student's volume %v", mounts, volume)
	}
	cmd, _ := seed["command"].([]any)
	script := fmt.Sprint(cmd[len(cmd)-1])
	if !strings.Contains(script, workdir+"/. ") || !strings.Contains(script, "-n") {
		t.Errorf("the seeding command %q must copy %s/. without overwriting (cp -n)", script, workdir)
	}
	// singleuser-check.sh (run where a container engine is) seeds the same way.
	check, err := os.ReadFile("singleuser-check.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(check, []byte(script)) {
		t.Errorf("singleuser-check.sh does not run the seeding command of values.yaml: %q", script)
	}
	if limit := fmt.Sprint(get(v, "singleuser.memory.limit")); !bytes.Contains(check, []byte("--memory "+strings.ToLower(limit))) {
		t.Errorf("singleuser-check.sh does not run the server under the memory limit of values.yaml (--memory %s)", strings.ToLower(limit))
	}
	// The GPU profile: the CUDA image and one GPU.
	var gpu map[string]any
	for _, p := range get(v, "singleuser.profileList").([]any) {
		if get(p, "slug") == "gpu" {
			gpu, _ = get(p, "kubespawner_override").(map[string]any)
		}
	}
	if gpu == nil {
		t.Fatal("singleuser.profileList: no profile with slug gpu")
	}
	if img, _ := gpu["image"].(string); img != name+":cuda" {
		t.Errorf("the GPU profile's image is %q, want %s:cuda", img, name)
	}
	if got := get(gpu, "extra_resource_limits"); fmt.Sprint(got) != "map[nvidia.com/gpu:1]" {
		t.Errorf("the GPU profile's extra_resource_limits is %v, want nvidia.com/gpu: \"1\"", got)
	}
}

// TestKubeSpawnerTemplates: KubeSpawner formats the strings of these settings with Python's
// str.format, so any brace other than a known {placeholder} fails the student's start, and it
// strips a trailing '-'.
func TestKubeSpawnerTemplates(t *testing.T) {
	v := loadValues(t)
	for _, path := range []string{"singleuser.initContainers", "singleuser.extraEnv", "singleuser.storage.dynamic.volumeNameTemplate"} {
		report(t, "values.yaml", templateErrors(path, get(v, path)))
	}
	if got := templateErrors("x", []any{"ok-{username}", "${HOME}", "a-"}); len(got) != 2 {
		t.Errorf("templateErrors found %d of 2 problems: %q", len(got), got)
	}
}

var placeholders = map[string]bool{
	"userid": true, "unescaped_username": true, "unescaped_servername": true, "hubnamespace": true,
	"username": true, "servername": true, "user_server": true, "safe_username": true,
	"safe_servername": true, "safe_user_server": true, "escaped_username": true,
	"escaped_servername": true, "escaped_user_server": true, "pod_name": true, "pvc_name": true,
	"namespace": true,
}

func templateErrors(path string, v any) []string {
	var errs []string
	switch x := v.(type) {
	case string:
		rest := regexp.MustCompile(`\{([a-z_]+)\}`).ReplaceAllStringFunc(x, func(m string) string {
			if !placeholders[m[1:len(m)-1]] {
				errs = append(errs, fmt.Sprintf("%s: %s is not a KubeSpawner placeholder", path, m))
			}
			return ""
		})
		if strings.ContainsAny(rest, "{}") {
			errs = append(errs, fmt.Sprintf("%s: %q has braces KubeSpawner's str.format would fail on", path, x))
		}
		if strings.HasSuffix(x, "-") {
			errs = append(errs, fmt.Sprintf("%s: %q ends with '-', which KubeSpawner strips", path, x))
		}
	case []any:
		for i, item := range x {
			errs = append(errs, templateErrors(fmt.Sprintf("%s[%d]", path, i), item)...)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			errs = append(errs, templateErrors(path+"."+k, x[k])...)
		}
	}
	return errs
}

func bytesOf(v any) float64 {
	units := map[byte]float64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
	switch x := v.(type) {
	case int:
		return float64(x)
	case string:
		if byteSpec.MatchString(x) {
			f, _ := strconv.ParseFloat(x[:len(x)-1], 64)
			return f * units[x[len(x)-1]]
		}
	}
	return math.NaN()
}

// TestClassPolicy: the settings a class relies on are there and consistent.
func TestClassPolicy(t *testing.T) {
	v := loadValues(t)
	if get(v, "hub.config.Authenticator.allow_all") != false {
		t.Errorf("hub.config.Authenticator.allow_all must be false: the chart's default dummy authenticator lets anyone in")
	}
	g, _ := number(get(v, "singleuser.cpu.guarantee"))
	l, _ := number(get(v, "singleuser.cpu.limit"))
	if !(g > 0 && g <= l) {
		t.Errorf("singleuser.cpu: guarantee %v and limit %v: want 0 < guarantee <= limit", g, l)
	}
	mg, ml := bytesOf(get(v, "singleuser.memory.guarantee")), bytesOf(get(v, "singleuser.memory.limit"))
	if !(mg > 0 && mg <= ml) {
		t.Errorf("singleuser.memory: guarantee %v and limit %v: want 0 < guarantee <= limit (JupyterHub units K, M, G, T)",
			get(v, "singleuser.memory.guarantee"), get(v, "singleuser.memory.limit"))
	}
	if get(v, "cull.enabled") != true || get(v, "cull.timeout") == nil {
		t.Errorf("cull: idle culling must be on with a timeout")
	}
	if get(v, "singleuser.storage.type") != "dynamic" || get(v, "singleuser.storage.capacity") == nil {
		t.Errorf("singleuser.storage: want a dynamic volume per student with a capacity")
	}
	if get(v, "prePuller.hook.enabled") != true || get(v, "prePuller.continuous.enabled") != true {
		t.Errorf("prePuller: the hook and continuous pullers must be on (the images are several GB)")
	}
}

// validatorPython is the venv install-validator.sh makes.
func validatorPython() string {
	if p := os.Getenv("MHALAB_K8S_VALIDATE_VENV"); p != "" {
		return filepath.Join(p, "bin", "python")
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "mhalab", "k8s-validate-venv", "bin", "python")
}

// TestKubernetesObjects validates k8s/*.yaml against the Kubernetes API schemas (kubernetes-validate,
// strict: unknown fields fail). Without the validator it skips; under CI=true it installs it first.
func TestKubernetesObjects(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Kubernetes objects in k8s/ (%v)", err)
	}
	py := validatorPython()
	if _, err := os.Stat(py); err != nil {
		if !testenv.InCI() {
			t.Skipf("kubernetes-validate is not installed (%s): run deploy/z2jh/install-validator.sh", py)
		}
		out, err := exec.Command("./install-validator.sh").CombinedOutput()
		if err != nil {
			t.Fatalf("install-validator.sh failed (CI needs the validator): %v\n%s", err, out)
		}
	}
	// The check can fail: a misspelled field of the same object.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: x}\nspec: {hardd: {pods: \"1\"}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, "-m", "kubernetes_validate", "--strict", bad).CombinedOutput(); err == nil {
		t.Errorf("kubernetes-validate accepted a ResourceQuota with the field hardd:\n%s", out)
	}
	// The chart 4.4.0 needs Kubernetes >= 1.28; 1.37 is the validator's newest.
	for _, version := range []string{"1.28.0", "1.37.0"} {
		args := append([]string{"-m", "kubernetes_validate", "--strict", "--kubernetes-version", version}, files...)
		out, err := exec.Command(py, args...).CombinedOutput()
		if err != nil {
			t.Errorf("kubernetes-validate (Kubernetes %s) rejects k8s/: %v\n%s", version, err, out)
		} else {
			t.Logf("kubernetes-validate, Kubernetes %s: %s", version, strings.TrimSpace(string(out)))
		}
	}
}
