package lessonrun

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mhalab/mhalab/lessons"
)

// gsSchema is Gradescope's results.json as its specification describes it
// (https://gradescope-autograders.readthedocs.io/en/latest/specs/#output-format): the keys it
// knows, their JSON types, and the values of the enumerations. "required" lists what the
// grader promises to write (the spec makes most keys optional, but a score is required at the
// top or on every test).
type fieldSpec struct {
	kind     string   // "number", "integer", "string", "array", "object"
	enum     []string // allowed values of a string
	required bool
}

var visibilities = []string{"hidden", "after_due_date", "after_published", "visible"}

var gsTopSchema = map[string]fieldSpec{
	"score":              {kind: "number", required: true},
	"execution_time":     {kind: "integer", required: true},
	"output":             {kind: "string", required: true},
	"output_format":      {kind: "string", enum: []string{"text", "html", "simple_format", "md", "ansi"}},
	"test_output_format": {kind: "string", enum: []string{"text", "html", "simple_format", "md", "ansi"}},
	"test_name_format":   {kind: "string", enum: []string{"text", "html"}},
	"visibility":         {kind: "string", enum: visibilities, required: true},
	"stdout_visibility":  {kind: "string", enum: visibilities, required: true},
	"extra_data":         {kind: "object"},
	"tests":              {kind: "array", required: true},
	"leaderboard":        {kind: "array"},
}

var gsTestSchema = map[string]fieldSpec{
	"score":         {kind: "number", required: true},
	"max_score":     {kind: "number", required: true},
	"status":        {kind: "string", enum: []string{"passed", "failed"}},
	"name":          {kind: "string", required: true},
	"name_format":   {kind: "string", enum: []string{"text", "html"}},
	"number":        {kind: "string", required: true},
	"output":        {kind: "string", required: true},
	"output_format": {kind: "string", enum: []string{"text", "html", "simple_format", "md", "ansi"}},
	"tags":          {kind: "array"},
	"visibility":    {kind: "string", enum: visibilities, required: true},
	"extra_data":    {kind: "object"},
}

// validateObject returns what in obj disagrees with schema.
func validateObject(where string, obj map[string]any, schema map[string]fieldSpec) []string {
	var problems []string
	for key, spec := range schema {
		if _, ok := obj[key]; !ok && spec.required {
			problems = append(problems, fmt.Sprintf("%s: no %q", where, key))
		}
	}
	for key, v := range obj {
		spec, ok := schema[key]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %q is not in Gradescope's specification", where, key))
			continue
		}
		okType := false
		switch spec.kind {
		case "number":
			_, okType = v.(float64)
		case "integer":
			f, isNum := v.(float64)
			okType = isNum && f == math.Trunc(f)
		case "string":
			s, isStr := v.(string)
			okType = isStr && (spec.enum == nil || slices.Contains(spec.enum, s))
		case "array":
			_, okType = v.([]any)
		case "object":
			_, okType = v.(map[string]any)
		}
		if !okType {
			problems = append(problems, fmt.Sprintf("%s: %q is %#v, want a %s %v", where, key, v, spec.kind, spec.enum))
		}
	}
	return problems
}

var testNumber = regexp.MustCompile(`^\d+(\.\d+)?$`)

// validateResults decodes data as results.json and returns every disagreement with the spec
// and with the grader's own promises (scores within [0, max], the top score is their sum).
func validateResults(data []byte) (map[string]any, []string) {
	var top map[string]any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&top); err != nil {
		return nil, []string{"not a JSON object: " + err.Error()}
	}
	problems := validateObject("results.json", top, gsTopSchema)
	tests, _ := top["tests"].([]any)
	sum := 0.0
	numbers := map[string]bool{}
	for i, raw := range tests {
		t, ok := raw.(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("tests[%d] is not an object", i))
			continue
		}
		where := fmt.Sprintf("tests[%d]", i)
		problems = append(problems, validateObject(where, t, gsTestSchema)...)
		score, _ := t["score"].(float64)
		max, _ := t["max_score"].(float64)
		if score < 0 || score > max+1e-9 {
			problems = append(problems, fmt.Sprintf("%s: score %g outside [0, %g]", where, score, max))
		}
		sum += score
		n, _ := t["number"].(string)
		if !testNumber.MatchString(n) || numbers[n] {
			problems = append(problems, fmt.Sprintf("%s: number %q is not N or N.M, or is repeated", where, n))
		}
		numbers[n] = true
		if tags, ok := t["tags"].([]any); ok {
			for _, tag := range tags {
				if _, ok := tag.(string); !ok {
					problems = append(problems, fmt.Sprintf("%s: tag %#v is not a string", where, tag))
				}
			}
		}
	}
	if score, _ := top["score"].(float64); math.Abs(score-sum) > 1e-3 {
		problems = append(problems, fmt.Sprintf("score %g is not the sum of the tests' scores %g", score, sum))
	}
	return top, problems
}

// fakeGrade is a student with one exercise of each kind: passed, failed 1 of 3 checks, does not
// compile, missing, crashed after one check.
func fakeGrade() *studentGrade {
	ex5, _ := lessons.Lookup(5)
	ex7, _ := lessons.Lookup(7)
	checks := func(pass ...bool) []*checkResult {
		var out []*checkResult
		for i, p := range pass {
			c := &checkResult{name: fmt.Sprintf("check %d", i+1), passed: p}
			if !p {
				c.lines = []string{"expected shape [2 3 4], got [2 3 5]", "  first difference at [0 0 1]: got 0.5, want 0.25"}
			}
			out = append(out, c)
		}
		return out
	}
	return &studentGrade{
		name: "ada",
		results: []*result{
			{exercise: ex1, status: "pass", checks: checks(true, true, true)},
			{exercise: ex2, status: "fail", reason: "1/3 checks pass; first failing: check 2", checks: checks(true, false, false)},
			{exercise: ex3, status: "does not compile", reason: "03_heads/heads.go:7:1: syntax error", build: []string{"03_heads/heads.go:7:1: syntax error: unexpected }"}},
			{exercise: ex5, status: "missing", reason: "missing 05_sdpa/sdpa.go"},
			{exercise: ex7, status: "crashed", reason: "panic: index out of range", checks: checks(true, false), output: []string{"panic: index out of range", "goroutine 7 [running]:"}},
		},
		notes: []string{"03_heads/heads_test.go was missing: graded with the original"},
	}
}

func TestGradescopeResults(t *testing.T) {
	for _, c := range []struct {
		scoring string
		score   float64
		tests   int
	}{
		{ScoringExercise, 1, 5 + 3 + 3 + 2},             // one test per exercise + each check that ran
		{ScoringChecks, 4.0 / 3, 3 + 3 + 1 + 1 + 1 + 2}, // checks of 01 and 02; one test for each of 03, 05, 07 + 07's checks
	} {
		t.Run(c.scoring, func(t *testing.T) {
			data, err := json.Marshal(gradescopeResults(fakeGrade(), c.scoring, 61400*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			top, problems := validateResults(data)
			for _, p := range problems {
				t.Error(p)
			}
			if top == nil {
				return
			}
			if got := top["score"].(float64); math.Abs(got-c.score) > 1e-3 {
				t.Errorf("score %g, want %g", got, c.score)
			}
			if top["execution_time"].(float64) != 61 {
				t.Errorf("execution_time %v, want 61", top["execution_time"])
			}
			tests := top["tests"].([]any)
			if len(tests) != c.tests {
				t.Errorf("%d tests, want %d", len(tests), c.tests)
			}
			byNumber := map[string]map[string]any{}
			max := 0.0
			for _, raw := range tests {
				tt := raw.(map[string]any)
				byNumber[tt["number"].(string)] = tt
				max += tt["max_score"].(float64)
			}
			if math.Abs(max-5) > 1e-9 {
				t.Errorf("the max scores add up to %g, want 5 (one point per exercise)", max)
			}
			// Failed checks carry the message and the hint; exercises that did not run say why.
			for number, want := range map[string][]string{
				"2.2": {"expected shape [2 3 4], got [2 3 5]", "first difference at [0 0 1]", "lessons/02_xavier/hint.md"},
				"3":   {"does not compile", "03_heads/heads.go:7:1: syntax error: unexpected }"},
				"5":   {"missing 05_sdpa/sdpa.go"},
				"7":   {"crashed: panic: index out of range", "goroutine 7"},
				"7.2": {"expected shape"},
			} {
				tt := byNumber[number]
				if tt == nil {
					t.Errorf("no test %s", number)
					continue
				}
				for _, w := range want {
					if !strings.Contains(tt["output"].(string), w) {
						t.Errorf("test %s output lacks %q:\n%s", number, w, tt["output"])
					}
				}
				if tt["score"].(float64) != 0 || tt["status"] != "failed" {
					t.Errorf("test %s: score %v status %v, want 0 failed", number, tt["score"], tt["status"])
				}
			}
			if tt := byNumber["7.1"]; tt == nil || tt["max_score"].(float64) != 0 || tt["status"] != "passed" {
				t.Errorf("a check that passed before a crash must be worth 0 (the exercise did not finish): %v", tt)
			}
			if !strings.Contains(top["output"].(string), "heads_test.go was missing") || !strings.Contains(top["output"].(string), "1/5 exercises pass") {
				t.Errorf("top output:\n%s", top["output"])
			}
			if !isGradescopeReport(data) {
				t.Errorf("the results carry no marker of the grader")
			}
		})
	}
}

// TestGradescopeValidator: the validator rejects what Gradescope would not read.
func TestGradescopeValidator(t *testing.T) {
	for _, bad := range []string{
		`[]`,
		`{"score": 1, "execution_time": 1.5, "output": "", "visibility": "visible", "stdout_visibility": "hidden", "tests": []}`,
		`{"score": "1", "execution_time": 1, "output": "", "visibility": "visible", "stdout_visibility": "hidden", "tests": []}`,
		`{"score": 1, "execution_time": 1, "output": "", "visibility": "public", "stdout_visibility": "hidden", "tests": []}`,
		`{"score": 1, "execution_time": 1, "output": "", "visibility": "visible", "stdout_visibility": "hidden", "tests": [{"name": "a", "number": 1, "score": 1, "max_score": 1, "output": "", "visibility": "visible"}]}`,
		`{"score": 2, "execution_time": 1, "output": "", "visibility": "visible", "stdout_visibility": "hidden", "tests": [{"name": "a", "number": "1", "score": 1, "max_score": 1, "output": "", "visibility": "visible"}]}`,
		`{"score": 1, "execution_time": 1, "output": "", "visibility": "visible", "stdout_visibility": "hidden", "tests": [{"name": "a", "number": "1", "score": 1, "max_score": 1, "output": "", "visibility": "visible", "tags": [1]}]}`,
		`{"score": 1, "execution_time": 1, "visibility": "visible", "stdout_visibility": "hidden", "tests": [], "points": 3}`,
	} {
		if _, problems := validateResults([]byte(bad)); len(problems) == 0 {
			t.Errorf("the validator accepts %s", bad)
		}
	}
}
