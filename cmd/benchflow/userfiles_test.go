package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// userFileKinds are what a path on the command line may be besides a
// regular file: make returns the path to give (made in dir as p, but
// /dev/zero itself), and the refusal names what it is, or the limit.
// /dev/zero is endless, a FIFO blocks whoever opens it to read until a
// writer comes, and the oversized file is sparse (its 20 GiB cost no
// disk).
var userFileKinds = []struct {
	kind string
	make func(t *testing.T, p string) string
	want string // the refusal after "FLAG PATH: "
}{
	{"dev-zero", func(t *testing.T, p string) string { return "/dev/zero" },
		`not a regular file \(a character device\)`},
	{"link-to-dev-zero", func(t *testing.T, p string) string {
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
		return "F"
	}, `not a regular file \(a character device\), by a symbolic link to /dev/zero`},
	{"fifo", func(t *testing.T, p string) string {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return "F"
	}, `not a regular file \(a FIFO\)`},
	{"folder", func(t *testing.T, p string) string {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return "F"
	}, `not a regular file \(a folder\)`},
	{"oversized", func(t *testing.T, p string) string {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(20 << 30); err != nil {
			t.Skipf("truncate: %v", err)
		}
		return "F"
	}, `20 GiB is over the (16 MiB|4 KiB) limit`},
	{"link-to-fifo", func(t *testing.T, p string) string {
		if err := syscall.Mkfifo(p+".fifo", 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		if err := os.Symlink(filepath.Base(p)+".fifo", p); err != nil {
			t.Fatal(err)
		}
		return "F"
	}, `not a regular file \(a FIFO\), by a symbolic link to \S+\.fifo`},
}

// TestCommandLineFilesRefused gives every flag of every command that
// names a file to read (and $BENCHFLOW_AGENT_TOKEN_FILE) /dev/zero, a
// FIFO, a folder, a 20 GiB file and a symbolic link to a FIFO, with the
// real binary: each exits non-zero, returns (the time limit only guards
// the test against a hang), and says "FLAG PATH: " and what the file is
// or the limit it is over.
func TestCommandLineFilesRefused(t *testing.T) {
	const target = "http://127.0.0.1:9/" // never reached: the file is refused first
	cases := []struct {
		flag string   // as the error names it
		args []string // "F" is the file under test
		env  string   // when set, the variable that names F instead of a flag
	}{
		{flag: "--cacert", args: []string{"load", "-n", "1", "-c", "1", "--cacert", "F", "https://127.0.0.1:9/"}},
		{flag: "--cacert", args: []string{"load", "--find-max", "--probe", "1s", "-c", "1", "--cacert", "F", "https://127.0.0.1:9/"}},
		{flag: "--body-file", args: []string{"load", "-n", "1", "-c", "1", "--body-file", "F", target}},
		{flag: "-s/--script", args: []string{"load", "-n", "1", "-c", "1", "-s", "F", target}},
		{flag: "--token-file", args: []string{"agent", "--token-file", "F", "--allow-target", target}},
		{flag: "$BENCHFLOW_AGENT_TOKEN_FILE", args: []string{"agent", "--allow-target", target}, env: "BENCHFLOW_AGENT_TOKEN_FILE"},
		{flag: "--tls-ca", args: []string{"agent", "--insecure", "--allow-target", target, "--tls-ca", "F", "--tls-cert", "ok.pem", "--tls-key", "ok.pem"}},
		{flag: "--tls-cert", args: []string{"agent", "--insecure", "--allow-target", target, "--tls-ca", "ok.pem", "--tls-cert", "F", "--tls-key", "ok.pem"}},
		{flag: "--tls-key", args: []string{"agent", "--insecure", "--allow-target", target, "--tls-ca", "ok.pem", "--tls-cert", "ok.pem", "--tls-key", "F"}},
		{flag: "--update", args: []string{"report", "--update", "F"}},
		{flag: "--var-file", args: []string{"validate", "--var-file", "F", "p.hcl"}},
		{flag: "--var-file", args: []string{"plan", "--var-file", "F", "p.hcl"}},
		{flag: "kubeconfig", args: []string{"gc", "--provider", "k8s", "--kubeconfig", "F"}},
	}
	for _, c := range cases {
		for _, k := range userFileKinds {
			t.Run(strings.Join(c.args[:1], "")+" "+c.flag+"/"+k.kind, func(t *testing.T) {
				dir := t.TempDir()
				path := k.make(t, filepath.Join(dir, "F"))
				args := make([]string, len(c.args))
				for i, a := range c.args {
					if a == "F" {
						a = path
					}
					args[i] = a
				}
				if err := os.WriteFile(filepath.Join(dir, "ok.pem"), []byte("not PEM, never parsed\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "p.hcl"), []byte("pipeline \"p\" {}\nvariable \"v\" {\n  default = 1\n}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if c.env != "" {
					t.Setenv(c.env, path)
				}
				_, stderr, code := robustRun(t, dir, 60*time.Second, args...)
				if code == 0 {
					t.Fatalf("benchflow %v: exit 0 with a %s\n%s", args, k.kind, stderr)
				}
				want := regexp.MustCompile(regexp.QuoteMeta(c.flag+" "+path+": ") + k.want)
				if !want.MatchString(stderr) {
					t.Errorf("benchflow %v: the error does not say %q:\n%s", args, want, stderr)
				}
			})
		}
	}
}
