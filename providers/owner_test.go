package providers

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestOwnerState(t *testing.T) {
	me := SelfOwner()
	if me.PID != os.Getpid() || me.Start == 0 || me.Host == "" {
		t.Fatalf("SelfOwner() = %+v: want this pid, its start time and the hostname", me)
	}
	back, ok := OwnerFromLabels(me.Labels())
	if !ok || back != (Owner{Host: labelSafe(me.Host), PID: me.PID, Start: me.Start, Boot: me.Boot}) {
		t.Fatalf("OwnerFromLabels(Labels()) = %+v, %v; want %+v", back, ok, me)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := back
	dead.PID = cmd.Process.Pid
	reused := back
	reused.Start++
	other := back
	other.Host = "another-host"
	oldBoot := back
	oldBoot.Boot = "0123456789abcdef0123456789abcdef"
	legacy := back // written before start times were recorded
	legacy.Start = 0
	for _, c := range []struct {
		name string
		o    Owner
		want OwnerState
	}{
		{"this process", back, OwnerAlive},
		{"a finished process", dead, OwnerGone},
		{"a reused pid", reused, OwnerGone},
		{"another host", other, OwnerElsewhere},
		{"an earlier boot", oldBoot, OwnerGone},
		{"no start time", legacy, OwnerAlive},
	} {
		if got := c.o.State(); got != c.want {
			t.Errorf("%s: State() = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestGCDecision(t *testing.T) {
	live := SelfOwner().Labels()
	live[LabelRun] = "20261201T000000Z-live"
	remote := map[string]string{LabelHost: "another-host", LabelPID: "1", LabelRun: "r2"}
	if ok, why := GCDecision(live, ""); ok || !strings.Contains(why, "still running") {
		t.Errorf("a live run's object: remove=%v (%q); want kept as still running", ok, why)
	}
	if ok, why := GCDecision(remote, ""); ok || !strings.Contains(why, "--run r2") {
		t.Errorf("another host's object: remove=%v (%q); want kept, naming --run", ok, why)
	}
	if ok, _ := GCDecision(map[string]string{LabelRun: "old"}, ""); !ok {
		t.Error("an object without owner labels is kept; want removed (a leftover of an older version)")
	}
	if ok, _ := GCDecision(live, "20261201T000000Z-live"); !ok {
		t.Error("naming the run explicitly keeps its object; want removed")
	}
}

func TestLabelSafe(t *testing.T) {
	for in, want := range map[string]string{
		"node-1.example.com":    "node-1.example.com",
		"weird host!":           "weird_host",
		strings.Repeat("a", 70): strings.Repeat("a", 63),
	} {
		if got := labelSafe(in); got != want {
			t.Errorf("labelSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
