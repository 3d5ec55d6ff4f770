// Package cupdproc runs a real cupd binary as a subprocess on 127.0.0.1, for
// the load and attack drivers (internal/cmd/cupsoak, internal/cmd/cupattack):
// it builds cupd, starts it, waits until it serves, reads its memory from
// /proc, and stops it.
package cupdproc

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Build builds cupd into dir with the go command, with the race detector
// when race is set, and returns the binary's path. It must run inside the
// module; the go command's output goes to out.
func Build(ctx context.Context, dir string, race bool, out io.Writer) (string, error) {
	bin := filepath.Join(dir, "cupd")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "github.com/cup-dev/cup/cmd/cupd")...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w (run from inside the module, or pass -cupd)", strings.Join(args, " "), err)
	}
	return bin, nil
}

// Process is a cupd subprocess. Its methods may be called from any
// goroutine.
type Process struct {
	// URL is where cupd serves: http://127.0.0.1:PORT.
	URL string
	// LogPath is the file holding cupd's standard error and output.
	LogPath string

	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{}
	waitErr error // set when done is closed
}

// Start runs bin with args (the command "serve" and its flags; the caller
// passes --address 127.0.0.1:0 or another loopback address), its output
// appended to logPath, and waits until it prints its address and answers
// /readyz with 200. cupd gets the caller's environment without any CUPD_
// variable, so that args are all its configuration.
func Start(ctx context.Context, bin, logPath string, args ...string) (*Process, error) {
	p := &Process{LogPath: logPath, done: make(chan struct{})}
	var err error
	if p.log, err = os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, err
	}
	// Not exec.CommandContext: cupd is stopped with SIGTERM and its exit
	// checked, and killed only when it does not stop.
	p.cmd = exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CUPD_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, "GORACE=halt_on_error=0")
	p.cmd.Stderr = p.log
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		_ = p.log.Close()
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		_ = p.log.Close()
		return nil, err
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.done) }()

	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if i := strings.LastIndex(line, " at http://"); i >= 0 && len(urls) == 0 && strings.HasPrefix(line, "cupd is serving") {
				urls <- strings.TrimPrefix(line[i:], " at ")
			}
			_, _ = fmt.Fprintf(p.log, "stdout: %s\n", line)
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	wait := time.NewTimer(time.Minute)
	defer wait.Stop()
	select {
	case p.URL = <-urls:
	case <-p.done:
		return nil, fmt.Errorf("cupd exited before serving (%v); its log: %s", p.waitErr, p.Tail(20))
	case <-wait.C:
		p.Kill()
		return nil, fmt.Errorf("cupd printed no address within a minute; its log: %s", p.Tail(20))
	case <-ctx.Done():
		p.Kill()
		return nil, context.Cause(ctx)
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(time.Minute); ; {
		res, err := hc.Get(p.URL + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return p, nil
			}
			err = fmt.Errorf("%s: %s", res.Status, strings.TrimSpace(string(body)))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.Kill()
			return nil, fmt.Errorf("cupd not ready: /readyz: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Pid is cupd's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when cupd has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether cupd has exited and, if so, how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Kill stops cupd at once, if it still runs, and waits for it.
func (p *Process) Kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	_ = p.log.Close()
}

// Stop asks cupd to stop with SIGTERM and waits up to grace for it, and
// returns what went wrong: not stopping, a non-zero exit, a data race
// report, a panic.
func (p *Process) Stop(grace time.Duration) []string {
	var failures []string
	t0 := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.waitErr != nil {
			failures = append(failures, fmt.Sprintf("cupd exited with %v after SIGTERM (want status 0)", p.waitErr))
		}
	case <-time.After(grace):
		failures = append(failures, fmt.Sprintf("cupd did not stop within %v of SIGTERM; killed it", grace))
		p.Kill()
	}
	_ = p.log.Sync()
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return append(failures, err.Error())
	}
	log := string(b)
	if n := strings.Count(log, "WARNING: DATA RACE"); n > 0 {
		failures = append(failures, fmt.Sprintf("the race detector reported %d data races; see %s", n, p.LogPath))
	}
	for _, s := range []string{"panic: ", "fatal error: "} {
		if i := strings.Index(log, s); i >= 0 {
			failures = append(failures, fmt.Sprintf("cupd's log has %q: %.300s", s, log[i:]))
		}
	}
	if len(failures) == 0 {
		return nil
	}
	return append(failures, fmt.Sprintf("(stopping took %v)", time.Since(t0).Round(time.Millisecond)))
}

// Tail returns the last n lines of cupd's log.
func (p *Process) Tail(n int) string {
	b, _ := os.ReadFile(p.LogPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// LogSummary counts the lines of cupd's log (in --log-format json) by level
// and message, and quotes the first of each kind of warning and error.
func (p *Process) LogSummary() []string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return []string{err.Error()}
	}
	type kind struct{ level, msg string }
	counts := map[kind]int{}
	first := map[kind]string{}
	other := 0
	for line := range strings.Lines(string(b)) {
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Level == "" {
			other++
			continue
		}
		k := kind{rec.Level, rec.Msg}
		if counts[k] == 0 {
			first[k] = strings.TrimSpace(line)
		}
		counts[k]++
	}
	keys := make([]kind, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b kind) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a.level, b.level), cmp.Compare(a.msg, b.msg))
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %q ×%d", k.level, k.msg, counts[k]))
	}
	notes := []string{fmt.Sprintf("cupd's log (%s): %s; %d other lines", p.LogPath, strings.Join(parts, ", "), other)}
	for _, k := range keys {
		if k.level == "WARN" || k.level == "ERROR" {
			notes = append(notes, fmt.Sprintf("first %s %q: %.600s", k.level, k.msg, first[k]))
		}
	}
	return notes
}

// Memory is a process's resident memory as /proc/<pid>/status has it.
type Memory struct {
	RSS  int64 // VmRSS: resident now, in bytes
	Peak int64 // VmHWM: the most ever resident, in bytes
	// Anon and File split RSS (RssAnon, RssFile): the heap and stacks,
	// and the pages of mapped files (the binary, mapped pack files); 0
	// when the kernel does not say.
	Anon, File int64
}

// ReadMemory reads the memory of process pid from /proc (Linux only).
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	return parseStatus(string(b))
}

func parseStatus(status string) (Memory, error) {
	var m Memory
	var found int
	for line := range strings.Lines(status) {
		for name, v := range map[string]*int64{"VmRSS:": &m.RSS, "VmHWM:": &m.Peak, "RssAnon:": &m.Anon, "RssFile:": &m.File} {
			rest, ok := strings.CutPrefix(line, name)
			if !ok {
				continue
			}
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return m, fmt.Errorf("/proc status line %q: want <n> kB", strings.TrimSpace(line))
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return m, err
			}
			*v = n << 10
			if v == &m.RSS || v == &m.Peak {
				found++
			}
		}
	}
	if found != 2 {
		return m, fmt.Errorf("/proc status without VmRSS and VmHWM")
	}
	return m, nil
}

// FormatBytes formats n bytes as MiB or GiB.
func FormatBytes(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

// FreeAddress returns a loopback address nobody listens on now.
func FreeAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
