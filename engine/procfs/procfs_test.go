package procfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// fakeRoot points Root at a synthetic /proc for the test: pid 10 with two
// children (11 listed by the kernel's children file, 12 found by its stat
// only) and a zombie-like 13 whose stat has no parent field.
func fakeRoot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, s string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("10/stat", "10 (nginx) S 1 10 10 0 -1 0\n")
	write("10/comm", "nginx\n")
	write("10/cmdline", "nginx: master process\x00-g\x00daemon off;\x00")
	write("10/cgroup", "12:pids:/docker/741ab68e3b0b\n0::/docker/741ab68e3b0b\n")
	write("10/statm", "3000 1234 200 10 0 400 0\n")
	write("10/status", "Name:\tnginx\nCapBnd:\t000001ffffffffff\nSeccomp:\t2\nSeccomp_filters:\t1\n")
	write("10/task/10/children", "11 \n")
	write("11/stat", "11 (nginx) S 10 10 10 0 -1 0\n")
	write("12/stat", "12 (my (odd) worker) S 10 10 10 0 -1 0\n")
	write("13/stat", "13 (z) Z\n")
	write("self/status", "Name:\tbenchflow\nSeccomp:\t0\n")
	write("self/cgroup", "0::/user.slice\n")
	os.MkdirAll(filepath.Join(dir, "self", "fd", "0"), 0o755)
	os.MkdirAll(filepath.Join(dir, "self", "fd", "1"), 0o755)
	os.MkdirAll(filepath.Join(dir, "self", "ns"), 0o755)
	os.Symlink("net:[4026531840]", filepath.Join(dir, "self", "ns", "net"))
	old := Root
	Root = dir
	t.Cleanup(func() { Root = old })
	return dir
}

func TestReadersOnAFakeTree(t *testing.T) {
	fakeRoot(t)
	if !Alive(10) || Alive(99) {
		t.Errorf("Alive(10) = %v, Alive(99) = %v; want true, false", Alive(10), Alive(99))
	}
	if got := Path(Self, "status"); got != filepath.Join(Root, "self", "status") {
		t.Errorf("Path(Self) = %q", got)
	}
	if c, err := Comm(10); err != nil || c != "nginx" {
		t.Errorf("Comm(10) = %q, %v", c, err)
	}
	if _, err := Comm(11); !os.IsNotExist(err) {
		t.Errorf("Comm of a pid without comm: %v, want not-exist", err)
	}
	if cg, err := Cgroup(10); err != nil || cg != "12:pids:/docker/741ab68e3b0b\n0::/docker/741ab68e3b0b\n" {
		t.Errorf("Cgroup(10) = %q, %v", cg, err)
	}
	if cg, err := Cgroup(Self); err != nil || cg != "0::/user.slice\n" {
		t.Errorf("Cgroup(Self) = %q, %v", cg, err)
	}
	if v, ok := StatusValue(10, "CapBnd"); !ok || v != "000001ffffffffff" {
		t.Errorf("StatusValue(10, CapBnd) = %q, %v", v, ok)
	}
	if v, ok := StatusValue(10, "Seccomp"); !ok || v != "2" {
		t.Errorf("StatusValue(10, Seccomp) = %q, %v (Seccomp_filters is another key)", v, ok)
	}
	if v, ok := StatusValue(Self, "Seccomp"); !ok || v != "0" {
		t.Errorf("StatusValue(Self, Seccomp) = %q, %v", v, ok)
	}
	if v, ok := StatusValue(Self, "CapBnd"); ok || v != "" {
		t.Errorf("StatusValue of a missing key = %q, %v", v, ok)
	}
	if v, ok := StatusValue(99, "Name"); ok || v != "" {
		t.Errorf("StatusValue of a gone pid = %q, %v", v, ok)
	}
	if got := Children(10); !slices.Equal(got, []int{11}) {
		t.Errorf("Children(10) from the children file = %v, want [11]", got)
	}
	os.Remove(filepath.Join(Root, "10", "task", "10", "children"))
	got := Children(10)
	slices.Sort(got)
	if !slices.Equal(got, []int{11, 12}) {
		t.Errorf("Children(10) from the stat files = %v, want [11 12]", got)
	}
	if got := Children(13); len(got) != 0 {
		t.Errorf("Children(13) = %v, want none", got)
	}
	if got, want := ResidentBytes(10), uint64(1234*os.Getpagesize()); got != want {
		t.Errorf("ResidentBytes(10) = %d, want %d", got, want)
	}
	if got := ResidentBytes(11); got != 0 {
		t.Errorf("ResidentBytes without statm = %d, want 0", got)
	}
	if n, err := OpenFiles(Self); err != nil || n != 2 {
		t.Errorf("OpenFiles(Self) = %d, %v; want 2", n, err)
	}
	if _, err := OpenFiles(99); err == nil {
		t.Errorf("OpenFiles of a gone pid: no error")
	}
	if ns, err := Namespace(Self, "net"); err != nil || ns != "net:[4026531840]" {
		t.Errorf("Namespace(Self, net) = %q, %v", ns, err)
	}
	if argv, err := Cmdline(10); err != nil || !slices.Equal(argv, []string{"nginx: master process", "-g", "daemon off;"}) {
		t.Errorf("Cmdline(10) = %q, %v", argv, err)
	}
}

// TestReadersOnThisProcess reads the real /proc for this process and a
// child it starts.
func TestReadersOnThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	me := os.Getpid()
	if !Alive(me) || !Alive(Self) {
		t.Fatalf("Alive(own pid) = %v, Alive(Self) = %v", Alive(me), Alive(Self))
	}
	s, _, err := ReadStat(me)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := Comm(me); err != nil || c != s.Comm() {
		t.Errorf("Comm = %q, %v; stat's name %q", c, err, s.Comm())
	}
	if _, err := Cgroup(Self); err != nil {
		t.Errorf("Cgroup(Self): %v", err)
	}
	if v, ok := StatusValue(Self, "Pid"); !ok || v != strconv.Itoa(me) {
		t.Errorf("StatusValue(Self, Pid) = %q, %v; want %d", v, ok, me)
	}
	if _, ok := StatusValue(Self, "CapBnd"); !ok {
		t.Errorf("no CapBnd in /proc/self/status")
	}
	if ResidentBytes(me) == 0 {
		t.Errorf("ResidentBytes(own pid) = 0")
	}
	if n, err := OpenFiles(Self); err != nil || n < 3 {
		t.Errorf("OpenFiles(Self) = %d, %v", n, err)
	}
	if ns, err := Namespace(me, "net"); err != nil || !strings.HasPrefix(ns, "net:[") {
		t.Errorf("Namespace(own pid, net) = %q, %v", ns, err)
	}
	// A shell and its child: the kernel lists a thread's children, and
	// this test's child may have been started by another of its threads.
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var kids []int
	for deadline := time.Now().Add(5 * time.Second); len(kids) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		kids = Children(cmd.Process.Pid)
	}
	if len(kids) != 1 {
		t.Fatalf("Children(sh) = %v, want its sleep", kids)
	}
	defer syscall.Kill(kids[0], syscall.SIGKILL)
	if c, _ := Comm(kids[0]); c != "sleep" {
		t.Errorf("the shell's child is %q, want sleep", c)
	}
}

func TestStatmResident(t *testing.T) {
	if p, err := StatmResident([]byte("3000 1234 200 10 0 400 0\n")); err != nil || p != 1234 {
		t.Errorf("StatmResident = %d, %v; want 1234", p, err)
	}
	if _, err := StatmResident([]byte("3000\n")); err != ErrShort {
		t.Errorf("one field: %v, want ErrShort", err)
	}
	if _, err := StatmResident([]byte("3000 x1\n")); err == nil {
		t.Errorf("a field that is not a number: no error")
	}
}
