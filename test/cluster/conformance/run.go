package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/test/harness"
)

// Options say how to run e2e.test against a cluster.
type Options struct {
	E2ETest    string // e2e.test (make e2e-bin)
	Ginkgo     string // ginkgo CLI (make e2e-bin); needed when Procs > 1
	Procs      int    // parallel ginkgo processes; 0 or 1 runs e2e.test alone, in series
	Kubeconfig string // the cluster's admin kubeconfig
	Kubectl    string // kubectl, which some specs run (kubectl exec)
	ReportDir  string // where e2e.test writes junit_01.xml
	Timeout    time.Duration
	Skips      []Skip // skip.txt
	Focus      string // the specs to run; "" is Focus
	Results    string // the results file in Run's dir; "" is results.txt
}

func (o Options) focus() string {
	if o.Focus == "" {
		return Focus
	}
	return o.Focus
}

func (o Options) results() string {
	if o.Results == "" {
		return "results.txt"
	}
	return o.Results
}

// e2eArgs are e2e.test's own flags.
func (o Options) e2eArgs() []string {
	return []string{
		"--kubeconfig=" + o.Kubeconfig,
		"--kubectl-path=" + o.Kubectl,
		"--provider=local",
		"--report-dir=" + o.ReportDir,
		"--e2e-output-dir=" + o.ReportDir,
	}
}

// ginkgoArgs are the suite's selection and output flags, in the ginkgo
// CLI's spelling (e2e.test alone wants them prefixed with "ginkgo.").
func (o Options) ginkgoArgs() []string {
	return []string{
		"--focus=" + o.focus(),
		"--skip=" + SkipRegexp(o.Skips),
		"--timeout=" + o.Timeout.String(),
		"--poll-progress-after=5m",
		"--no-color",
		"-v",
	}
}

// absolute makes the paths e2e.test gets absolute: it runs in ReportDir.
// Kubectl may stay a bare name, looked up in PATH.
func (o Options) absolute() (Options, error) {
	for _, p := range []*string{&o.E2ETest, &o.Ginkgo, &o.Kubeconfig, &o.ReportDir} {
		if *p == "" || filepath.IsAbs(*p) {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return o, err
		}
		*p = abs
	}
	return o, nil
}

// Command is the command line that runs the specs: e2e.test alone, or the
// ginkgo CLI running it in Procs parallel processes (specs marked [Serial]
// then run last, alone).
func (o Options) Command() []string {
	if o.Procs <= 1 {
		cmd := []string{o.E2ETest}
		for _, a := range o.ginkgoArgs() {
			cmd = append(cmd, "--ginkgo."+strings.TrimLeft(a, "-"))
		}
		return append(cmd, o.e2eArgs()...)
	}
	cmd := append([]string{o.Ginkgo, "--procs=" + strconv.Itoa(o.Procs)}, o.ginkgoArgs()...)
	cmd = append(cmd, o.E2ETest, "--")
	return append(cmd, o.e2eArgs()...)
}

// Run runs the node conformance specs and fails t unless the outcome is
// the one results.txt (in dir) lists; ctx ending stops the run. With BERTH_CONFORMANCE_UPDATE=1 it
// rewrites results.txt from the run instead, and still fails t for every
// spec that failed (then review the diff).
func Run(ctx context.Context, t *testing.T, dir string, o Options) {
	t.Helper()
	if err := os.MkdirAll(o.ReportDir, 0o755); err != nil {
		t.Fatal(err)
	}
	o, err := o.absolute()
	if err != nil {
		t.Fatal(err)
	}
	cmdline := o.Command()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout+5*time.Minute)
	defer cancel()
	// ginkgo and e2e.test are in a process group of their own, which a
	// Ctrl-C of the test does not reach: SIGINT or SIGTERM ends the run
	// (the group), and the test then tears the cluster down.
	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	cmd := exec.CommandContext(ctx, cmdline[0], cmdline[1:]...)
	cmd.Dir = o.ReportDir
	// ginkgo runs e2e.test in processes of its own: a cancelled run ends
	// the whole group the test started, not ginkgo alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	logPath := filepath.Join(o.ReportDir, "e2e.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	t.Logf("conformance: %s (log: %s)", strings.Join(cmdline, " "), logPath)
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("conformance: e2e.test ran %s: %v", time.Since(start).Round(time.Second), runErr)
	rep, err := readReport(o.ReportDir, o.focus(), o.Skips)
	if err != nil {
		t.Fatalf("%v (e2e.test: %v; log: %s)", err, runErr, logPath)
	}
	if runErr != nil {
		harness.Summarize("%s: e2e.test ran %s: %v", t.Name(), time.Since(start).Round(time.Second), runErr)
	}
	for _, f := range rep.SuiteFailure {
		harness.Summarize("%s: suite node failed: %s", t.Name(), firstLine(f))
		t.Errorf("suite node failed: %s", f)
	}
	problems, err := checkResults(filepath.Join(dir, o.results()), rep.Results)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		harness.Summarize("%s: %s", t.Name(), p)
		t.Error(p)
	}
}

func readReport(reportDir, focus string, skips []Skip) (Report, error) {
	f, err := os.Open(filepath.Join(reportDir, "junit_01.xml"))
	if err != nil {
		return Report{}, err
	}
	defer f.Close()
	return ParseJUnit(f, regexp.MustCompile(focus), skips)
}

// checkResults compares a run with results.txt, or rewrites the file
// (BERTH_CONFORMANCE_UPDATE=1), and returns what must fail the test.
func checkResults(path string, got []Result) ([]string, error) {
	if os.Getenv("BERTH_CONFORMANCE_UPDATE") != "1" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		want, err := ParseResults(f)
		if err != nil {
			return nil, err
		}
		return Compare(want, got), nil
	}
	var b bytes.Buffer
	if err := WriteResults(&b, ResultsHeader, got); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return nil, err
	}
	var problems []string
	for _, r := range got {
		if r.Status == Failed {
			problems = append(problems, fmt.Sprintf("%q failed: %s (results.txt takes no failed spec: fix it, or list it in skip.txt with its reason)",
				r.Spec, firstLine(r.Reason)))
		}
	}
	return problems, nil
}

// ResultsHeader opens results.txt.
const ResultsHeader = `The [NodeConformance] specs of e2e.test v1.37.2 against a cluster on berth serve, offline:
  passed  | spec                  ran and passed
  skipped | spec | reason         not run: "skip.txt: ..." is skip.txt's reason,
                                  "e2e.test: ..." is the reason the spec gave itself
Written by BERTH_CONFORMANCE_UPDATE=1 from a run; the test fails when a run differs.`

// HostPrograms are the programs where make puts them: agnhost in kubeBin
// (make e2e-bin), the others in depsDir (make conformance-deps); curl and
// bash are the host's.
func HostPrograms(kubeBin, depsDir string) Programs {
	return Programs{
		Busybox:    fileOr(filepath.Join(depsDir, "busybox")),
		Agnhost:    filepath.Join(kubeBin, "agnhost"),
		Pause:      filepath.Join(depsDir, "pause"),
		NoNewPrivs: filepath.Join(depsDir, "nonewprivs"),
		Curl:       "/usr/bin/curl",
		Netcat:     filepath.Join(depsDir, "nc"),
		Bash:       "/usr/bin/bash",
	}
}

func fileOr(path string) string {
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}

// DryRun asks e2e.test which specs the options select, without a cluster
// (--ginkgo.dry-run): the selected ones come back passed, the ones
// skip.txt skips skipped with its reason.
func DryRun(o Options) ([]Result, error) {
	o, err := o.absolute()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.ReportDir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"--ginkgo.dry-run", "--ginkgo.no-color", "--ginkgo.focus=" + o.focus(),
		"--ginkgo.skip=" + SkipRegexp(o.Skips), "--report-dir=" + o.ReportDir}
	cmd := exec.Command(o.E2ETest, args...)
	cmd.Dir = o.ReportDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s --ginkgo.dry-run: %w\n%s", o.E2ETest, err, out)
	}
	rep, err := readReport(o.ReportDir, o.focus(), o.Skips)
	if err != nil {
		return nil, err
	}
	return rep.Results, nil
}
