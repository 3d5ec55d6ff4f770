package cupdproc

import "testing"

func TestParseStatus(t *testing.T) {
	t.Parallel()
	status := "Name:\tcupd\nVmPeak:\t 2000000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nRssAnon:\t   61440 kB\nRssFile:\t   40960 kB\nThreads:\t9\n"
	m, err := parseStatus(status)
	if err != nil || m != (Memory{RSS: 100 << 20, Peak: 200 << 20, Anon: 60 << 20, File: 40 << 20}) {
		t.Errorf("parseStatus = %+v, %v; want RSS 100 MiB (60 anonymous, 40 of files), peak 200 MiB", m, err)
	}
	if _, err := parseStatus("Name:\tcupd\nVmRSS:\t1 kB\n"); err == nil {
		t.Error("parseStatus without VmHWM succeeded")
	}
	if _, err := parseStatus("VmHWM:\t1 MB\nVmRSS:\t1 kB\n"); err == nil {
		t.Error("parseStatus of a size not in kB succeeded")
	}
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{150 << 20: "150 MiB", 3 << 29: "1.50 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestReadMemory(t *testing.T) {
	t.Parallel()
	if _, err := ReadMemory(1 << 30); err == nil {
		t.Error("ReadMemory of a process that does not exist succeeded")
	}
}
