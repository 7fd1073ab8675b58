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

// specialFile makes name in dir a special file of the given kind: a FIFO
// (reading it blocks until a writer comes), a character device like
// /dev/zero (endless), or a sparse regular file of 20 GB (its size is
// real, its blocks are not). It skips the test when the kind cannot be
// made here (mknod needs privileges).
func specialFile(t *testing.T, dir, name, kind string) {
	t.Helper()
	p := filepath.Join(dir, name)
	switch kind {
	case "fifo":
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	case "zero":
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o644, 1<<8|5); err != nil {
			t.Skipf("mknod (a character device needs privileges): %v", err)
		}
	case "sparse":
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(20 << 30); err != nil {
			t.Skipf("truncate: %v", err)
		}
		f.Close()
	}
}

// TestSpecialFilesRefused uses a FIFO, a character device and a 20 GB
// sparse file as every file a pipeline reads — the pipeline file itself,
// load(), file(), templatefile(), a file block's source, body_file,
// script, cacert and --var-file — and as benchflow load's --body-file and
// --script. Each is refused with a located error, promptly (a FIFO must
// not block, a device must not be read without end).
func TestSpecialFilesRefused(t *testing.T) {
	const head = "pipeline \"p\" {}\n"
	const svc = "service \"s\" {\n  command = [\"true\"]\n%s}\n"
	cases := []struct {
		name, file, src string
		args            []string
		want            string // a located error: FILE:LINE,COL
	}{
		{name: "pipeline file", file: "sp", args: []string{"validate", "sp"}},
		{name: "star pipeline file", file: "sp.star", args: []string{"validate", "sp.star"}},
		{name: "load()", file: "sp.star", src: "load(\"sp.star\", \"x\")\npipeline(\"p\")\n", args: []string{"validate", "p.star"}, want: `p\.star:1,`},
		{name: "file()", file: "sp", src: head + "locals {\n  x = file(\"sp\")\n}\n", want: `p\.hcl:3,`},
		{name: "templatefile()", file: "sp", src: head + "locals {\n  x = templatefile(\"sp\", {})\n}\n", want: `p\.hcl:3,`},
		{name: "source", file: "sp", src: head + strings.Replace(svc, "%s", "  file \"f\" {\n    source = \"sp\"\n  }\n", 1), want: `p\.hcl:4,`},
		{name: "body_file", file: "sp", src: head + "step \"load\" \"l\" {\n  target = \"http://127.0.0.1:9/\"\n  requests = 1\n  body_file = \"sp\"\n}\n", want: `p\.hcl:5,`},
		{name: "script", file: "sp.star", src: head + "step \"load\" \"l\" {\n  target = \"http://127.0.0.1:9/\"\n  requests = 1\n  script = \"sp.star\"\n}\n", want: `p\.hcl:5,`},
		{name: "cacert", file: "sp", src: head + "step \"load\" \"l\" {\n  target = \"https://127.0.0.1:9/\"\n  requests = 1\n  cacert = \"sp\"\n}\n", want: `p\.hcl:5,`},
		{name: "--var-file", file: "sp", src: head + "variable \"v\" {\n  default = 1\n}\n", args: []string{"validate", "--var-file", "sp", "p.hcl"}},
		{name: "load --body-file", file: "sp", args: []string{"load", "-n", "1", "-c", "1", "--body-file", "sp", "http://127.0.0.1:9/"}},
		{name: "load --script", file: "sp.star", args: []string{"load", "-n", "1", "-c", "1", "-s", "sp.star", "http://127.0.0.1:9/"}},
	}
	refusal := regexp.MustCompile(`not a regular file \((a FIFO|a character device)\)|is over the 16 MiB limit`)
	for _, c := range cases {
		for _, kind := range []string{"fifo", "zero", "sparse"} {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				dir := t.TempDir()
				specialFile(t, dir, c.file, kind)
				args := c.args
				if args == nil {
					args = []string{"validate", "p.hcl"}
				}
				if c.src != "" {
					if err := os.WriteFile(filepath.Join(dir, args[len(args)-1]), []byte(c.src), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				_, stderr, code := robustRun(t, dir, 30*time.Second, args...)
				if code == 0 {
					t.Fatalf("benchflow %v: exit 0 with a %s as %s\n%s", args, kind, c.name, stderr)
				}
				if !refusal.MatchString(stderr) {
					t.Errorf("benchflow %v: the error does not say what is wrong with %s:\n%s", args, c.file, stderr)
				}
				if c.want != "" && !regexp.MustCompile(`(?m)^`+c.want+`\d+: `).MatchString(stderr) {
					t.Errorf("benchflow %v: no located error %s…:\n%s", args, c.want, stderr)
				}
			})
		}
	}
}
