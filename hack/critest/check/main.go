// Command check reads the JUnit report of a critest run (ginkgo's
// -ginkgo.junit-report) and the list of expected failures, and fails when
// a test failed that the list does not name. It also names the listed
// tests that passed, so that the list only shrinks, and ends with a count
// of passed, failed and skipped specs.
//
//	go run ./hack/critest/check -junit REPORT.xml -expected hack/critest/expected-failures.txt
//
// The list has one regular expression a line, matched against the spec's
// full name as the report gives it ("[It] [sig-node] ... [Conformance]"),
// then " # " and why it fails. Blank lines and lines starting with # are
// ignored.
package main

import (
	"bufio"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
)

type report struct {
	Suites []suite `xml:"testsuite"`
}

type suite struct {
	Cases []testCase `xml:"testcase"`
}

type testCase struct {
	Name    string   `xml:"name,attr"`
	Status  string   `xml:"status,attr"`
	Failure *message `xml:"failure"`
	Error   *message `xml:"error"`
	Skipped *message `xml:"skipped"`
}

type message struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// expectation is one line of the list.
type expectation struct {
	re     *regexp.Regexp
	reason string
	line   int
	hit    bool
}

func main() {
	junit := flag.String("junit", "", "ginkgo's JUnit report")
	expected := flag.String("expected", "hack/critest/expected-failures.txt", "the list of expected failures")
	flag.Parse()
	ok, err := run(*junit, *expected)
	if err != nil {
		slog.Error("critest check", "err", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func run(junitPath, expectedPath string) (bool, error) {
	if junitPath == "" {
		return false, errors.New("-junit is required")
	}
	exps, err := readExpected(expectedPath)
	if err != nil {
		return false, err
	}
	b, err := os.ReadFile(junitPath)
	if err != nil {
		return false, fmt.Errorf("read report: %w", err)
	}
	var r report
	if err := xml.Unmarshal(b, &r); err != nil {
		return false, fmt.Errorf("parse report %s: %w", junitPath, err)
	}

	var passed, skipped int
	var unexpected, expectedFails, fixed []string
	total := 0
	for _, s := range r.Suites {
		for _, c := range s.Cases {
			total++
			exp := match(exps, c.Name)
			o := outcome(c)
			// Suite set-up and tear-down nodes ([SynchronizedBeforeSuite],
			// one per process) are no specs: counted only when they fail.
			if !strings.HasPrefix(c.Name, "[It]") && o != "failed" {
				continue
			}
			switch o {
			case "passed":
				passed++
				if exp != nil {
					fixed = append(fixed, fmt.Sprintf("%s (line %d: %s)", c.Name, exp.line, exp.reason))
				}
			case "skipped":
				skipped++
			default:
				if exp != nil {
					expectedFails = append(expectedFails, fmt.Sprintf("%s  # %s", c.Name, exp.reason))
				} else {
					unexpected = append(unexpected, c.Name+"\n      "+firstLine(c))
				}
			}
		}
	}
	if total == 0 {
		return false, fmt.Errorf("%s has no test cases", junitPath)
	}

	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		sort.Strings(items)
		fmt.Printf("%s (%d):\n", title, len(items))
		for _, it := range items {
			fmt.Printf("  %s\n", it)
		}
	}
	list("expected failures", expectedFails)
	list("FAILED, not in "+expectedPath, unexpected)
	list("PASSED but listed as expected failures (remove them from "+expectedPath+")", fixed)
	var unused []string
	for _, e := range exps {
		if !e.hit {
			unused = append(unused, fmt.Sprintf("line %d: %s", e.line, e.re))
		}
	}
	list("listed, matching no test that ran", unused)
	failed := len(unexpected) + len(expectedFails)
	fmt.Printf("critest: %d expected failures, %d unexpected failures, %d listed tests passing\n", len(expectedFails), len(unexpected), len(fixed))
	fmt.Printf("critest: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	return len(unexpected) == 0, nil
}

// outcome is "passed", "skipped" or "failed" (failed, panicked, timed
// out, interrupted: anything else).
func outcome(c testCase) string {
	switch {
	case c.Failure != nil || c.Error != nil:
		return "failed"
	case c.Status == "passed":
		return "passed"
	case c.Skipped != nil || c.Status == "skipped" || c.Status == "pending":
		return "skipped"
	case c.Status == "":
		// JUnit reports from elsewhere have no status: no element, passed.
		return "passed"
	}
	return "failed"
}

// firstLine is the first line of a failure's message, for the listing.
func firstLine(c testCase) string {
	m := c.Failure
	if m == nil {
		m = c.Error
	}
	if m == nil {
		return c.Status
	}
	s := strings.TrimSpace(m.Message)
	if s == "" {
		s = strings.TrimSpace(m.Text)
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func match(exps []*expectation, name string) *expectation {
	for _, e := range exps {
		if e.re.MatchString(name) {
			e.hit = true
			return e
		}
	}
	return nil
}

func readExpected(path string) ([]*expectation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("expected failures: %w", err)
	}
	defer f.Close()
	var exps []*expectation
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pat, reason, ok := strings.Cut(line, " # ")
		if !ok || strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: no reason (PATTERN # REASON)", path, n)
		}
		re, err := regexp.Compile(strings.TrimSpace(pat))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		exps = append(exps, &expectation{re: re, reason: strings.TrimSpace(reason), line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return exps, nil
}
