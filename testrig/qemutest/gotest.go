package qemutest

import (
	"regexp"
	"strings"
	"time"
)

// Status is how a guest test ended.
type Status string

// The ways a guest test can end. Unfinished means the output stopped before its result
// line: the test binary crashed, or the guest was killed.
const (
	Pass       Status = "PASS"
	Fail       Status = "FAIL"
	Skip       Status = "SKIP"
	Unfinished Status = "UNFINISHED"
)

// TestResult is one guest test (or subtest), read from `go test -v` output.
type TestResult struct {
	Name    string        // full name, subtests joined with '/'
	Status  Status        // Pass, Fail, Skip or Unfinished
	Elapsed time.Duration // from the result line
	Output  string        // the lines the test logged, as printed (indentation kept)
}

// Parent returns the name of the test that r is a subtest of, or "" for a top-level test.
func (r TestResult) Parent() string {
	if i := strings.LastIndexByte(r.Name, '/'); i >= 0 {
		return r.Name[:i]
	}
	return ""
}

var (
	// "=== RUN   TestX/sub", also PAUSE, CONT and NAME (the test whose output follows).
	headerLine = regexp.MustCompile(`^=== (RUN|PAUSE|CONT|NAME) +(\S+)\s*$`)
	// "    --- PASS: TestX/sub (0.01s)"
	resultLine = regexp.MustCompile(`^(\s*)--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)\s*$`)
)

// ParseGoTest reads the output of a test binary run with -test.v and returns every test in
// the order each first appeared. Output lines belong to the test named by the last header
// (=== RUN/CONT/NAME) or result line; lines outside any test are returned as rest. A test
// with a header but no result line is Unfinished.
func ParseGoTest(out string) (tests []TestResult, rest string) {
	idx := make(map[string]int)
	lookup := func(name string) *TestResult {
		i, ok := idx[name]
		if !ok {
			i = len(tests)
			idx[name] = i
			tests = append(tests, TestResult{Name: name, Status: Unfinished})
		}
		return &tests[i]
	}
	var (
		cur    string
		output = make(map[string]*strings.Builder)
		other  strings.Builder
	)
	for _, line := range strings.Split(strings.ReplaceAll(out, "\r", ""), "\n") {
		if m := headerLine.FindStringSubmatch(line); m != nil {
			lookup(m[2])
			cur = m[2]
			continue
		}
		if m := resultLine.FindStringSubmatch(line); m != nil {
			r := lookup(m[3])
			r.Status = Status(m[2])
			if secs, err := time.ParseDuration(m[4] + "s"); err == nil {
				r.Elapsed = secs
			}
			cur = m[3]
			if m[1] == "" && !strings.Contains(m[3], "/") {
				cur = "" // a top-level test is over; what follows is the binary's summary
			}
			continue
		}
		if cur == "" {
			if line != "" {
				other.WriteString(line + "\n")
			}
			continue
		}
		b := output[cur]
		if b == nil {
			b = new(strings.Builder)
			output[cur] = b
		}
		b.WriteString(line + "\n")
	}
	for i := range tests {
		if b := output[tests[i].Name]; b != nil {
			tests[i].Output = b.String()
		}
	}
	return tests, other.String()
}
