package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeAnswersOnLoopbackOnly: `torture serve` listens on 127.0.0.1 and
// serves the folder's index there; the same port on the machine's other
// addresses does not answer; an address other machines reach needs
// --public; bad flags and folders are one-line errors with exit code 2.
func TestServeAnswersOnLoopbackOnly(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, filepath.Join(dir, "run1"), brokenHistory)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() { code <- serve(ctx, []string{"--port", "0", dir}, pw, &stderr); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed nothing: %v (stderr %q)", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	m := regexp.MustCompile(`http://127\.0\.0\.1:(\d+)/`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("serve says %q, want an address on 127.0.0.1", line)
	}
	resp, err := http.Get(m[0])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `href="run1/`) {
		t.Errorf("index: status %d, body lacks the run:\n%s", resp.StatusCode, body)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	others := 0
	for _, a := range addrs {
		ip, _, err := net.ParseCIDR(a.String())
		if err != nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			continue
		}
		others++
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), m[1]), time.Second); err == nil {
			c.Close()
			t.Errorf("serve answers on %s too", ip)
		}
	}
	if others == 0 {
		t.Log("no address other than loopback to try")
	}
	cancel()
	select {
	case c := <-code:
		if c != exitValid {
			t.Errorf("serve ended with %d on Ctrl-C, want 0 (stderr %q)", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop when its context ended")
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "0.0.0.0", dir}, "not a loopback address"},
		{[]string{"--addr", "example.org", dir}, "want an IP address"},
		{[]string{"--port", "70000", dir}, "want 0 to 65535"},
		{[]string{filepath.Join(dir, "missing")}, "not a folder"},
		{[]string{dir, dir}, "at most one folder"},
	} {
		var out, errb bytes.Buffer
		if c := serve(context.Background(), tc.args, &out, &errb); c != exitUsage || !strings.Contains(errb.String(), tc.want) ||
			strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("serve %q: exit %d, stderr %q; want 2 and one line with %q", tc.args, c, errb.String(), tc.want)
		}
	}
}
