package procfs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	line := "4242 (my (odd) proc) S 1 4240 4200 0 -1 4194560 104 0 0 0 7 3 1 2 20 0 5 0 98765 1000 55\n"
	s, err := Split([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if s.Comm() != "my (odd) proc" || s.State() != 'S' {
		t.Fatalf("comm %q state %q", s.Comm(), s.State())
	}
	for n, want := range map[int]uint64{1: 4242, 4: 1, 5: 4240, 14: 7, 15: 3, 19: 0, 20: 5, 22: 98765, 24: 55} {
		if got, err := s.Uint(n); err != nil || got != want {
			t.Errorf("field %d = %d, %v; want %d", n, got, err, want)
		}
	}
	if s.Has(25) || s.Field(25) != nil {
		t.Errorf("field 25 present in a 24-field line")
	}
	if _, err := s.Uint(25); err != ErrShort {
		t.Errorf("missing field: err %v, want ErrShort", err)
	}
	if _, err := s.Int(7); err != nil {
		t.Errorf("tty field: %v", err)
	}
	if v, err := s.Int(8); err != nil || v != -1 {
		t.Errorf("signed field 8 = %d, %v", v, err)
	}
	for _, bad := range []string{"", "12 no name", "12 )x( S"} {
		if _, err := Split([]byte(bad)); err != ErrNoName {
			t.Errorf("Split(%q): err %v, want ErrNoName", bad, err)
		}
	}
	if s, _ := Split([]byte("1 (x)")); s.Fields() != 0 || s.State() != 0 {
		t.Errorf("a line without fields: %d fields, state %q", s.Fields(), s.State())
	}
}

func TestRootAndPIDs(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"1", "42", "self", "net"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "42", "stat"), []byte("42 (nginx) R 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0\n"), 0o644)
	old := Root
	Root = dir
	t.Cleanup(func() { Root = old })
	pids, err := PIDs("")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pids)
	if !slices.Equal(pids, []int{1, 42}) {
		t.Errorf("PIDs = %v, want [1 42]", pids)
	}
	s, _, err := ReadStat(42)
	if err != nil || s.Comm() != "nginx" {
		t.Fatalf("ReadStat(42) = %q, %v", s.Comm(), err)
	}
	if st, _ := s.Uint(22); st != 77 {
		t.Errorf("start time %d, want 77", st)
	}
	if _, _, err := ReadStat(1); !os.IsNotExist(err) {
		t.Errorf("ReadStat of a pid without stat: %v, want not-exist", err)
	}
}

func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		argv []string
		max  int
		want string
	}{
		{nil, 80, ""},
		{[]string{"/usr/local/bin/benchflow", "load", "-c", "4", "http://127.0.0.1:18701/"}, 80, "benchflow load -c 4 http://127.0.0.1:18701/"},
		{[]string{"fuse-overlayfs", "-o", "lowerdir=/var/lib/docker/l/A,upperdir=/var/lib/docker/fuse-overlayfs/0c1d2e3f4a5b/diff", "/var/lib/docker/fuse-overlayfs/4b0bc85fe2f5/merged"}, 80,
			"fuse-overlayfs -o lowerdir=/va…c1d2e3f4a5b/diff /var/lib/doc…bc85fe2f5/merged"},
		{[]string{"sh", "-c", "echo a\nb"}, 80, "sh -c echo a b"},
		{[]string{"docker-proxy", "-proto", "tcp", "-host-ip", "127.0.0.1", "-host-port", "18090", "-container-ip", "172.17.0.3", "-container-port", "80"}, 60,
			"docker-proxy -proto tcp -host-ip 127.0.0.1 -host-port 18090…"},
	} {
		if got := CommandLine(c.argv, c.max); got != c.want {
			t.Errorf("CommandLine(%q, %d) = %q, want %q", c.argv, c.max, got, c.want)
		}
	}
}
