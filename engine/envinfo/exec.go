package envinfo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

var execLookPath = exec.LookPath

// DefaultServiceTimeout bounds ServiceVersion when ctx has no earlier
// deadline.
const DefaultServiceTimeout = 10 * time.Second

// maxOutput caps the output kept from a version command.
const maxOutput = 64 << 10

// ServiceVersion runs a version_command (e.g. nginx -V) with a timeout and
// returns its combined output trimmed. The timeout is ctx's deadline or
// DefaultServiceTimeout, whichever comes first. When the command exits
// with a non-zero status its output is still returned, with an error that
// quotes the status and the first line of output. The command runs in its
// own process group, which is killed on timeout.
func ServiceVersion(ctx context.Context, argv []string) (string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return "", errors.New("running version command: empty command")
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultServiceTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Stdin = nil
	var buf limitedBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	out := strings.TrimSpace(buf.String())
	if err != nil {
		if ctx.Err() != nil {
			return out, fmt.Errorf("running version command %q: %w", strings.Join(argv, " "), ctx.Err())
		}
		first, _, _ := strings.Cut(out, "\n")
		if first != "" {
			return out, fmt.Errorf("running version command %q: %w: %s", strings.Join(argv, " "), err, first)
		}
		return out, fmt.Errorf("running version command %q: %w", strings.Join(argv, " "), err)
	}
	return out, nil
}

// limitedBuffer keeps the first maxOutput bytes written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}

// dockerVersion asks the Docker engine for its version: through the docker
// CLI when installed, else through the API on the unix socket of
// DOCKER_HOST (default /var/run/docker.sock). It returns "" when no engine
// answers.
func dockerVersion(ctx context.Context) string {
	if p, err := execLookPath("docker"); err == nil {
		out, err := ServiceVersion(ctx, []string{p, "version", "--format", "{{.Server.Version}}"})
		if err == nil && out != "" && !strings.Contains(out, " ") {
			return out
		}
	}
	v, err := dockerAPIVersion(ctx)
	if err != nil {
		return ""
	}
	return v
}

func dockerAPIVersion(ctx context.Context) (string, error) {
	var v struct{ Version string }
	if err := dockerAPI(ctx, "/version", &v); err != nil {
		return "", err
	}
	if v.Version == "" {
		return "", errNoDocker
	}
	return v.Version, nil
}

// dockerAPI GETs path from the engine's API on the unix socket of
// DOCKER_HOST (default /var/run/docker.sock) and decodes the JSON into v.
func dockerAPI(ctx context.Context, path string, v any) error {
	sock := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		p, ok := strings.CutPrefix(h, "unix://")
		if !ok {
			return errNoDocker // TCP/SSH hosts: only the CLI is tried
		}
		sock = p
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://docker"+path, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("docker %s: %s", path, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}
